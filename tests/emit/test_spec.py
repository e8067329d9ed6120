"""The kernel spec: the typed records the transpiler hands the runtime, and their one literal."""

from __future__ import annotations

import ast
import dis
import re
import subprocess
import sys

import pytest

from gpu_native import Kernel1D, gpu_kernel
from gpu_native.errors import GpuNativeError
from gpu_native.launchexpr import Compare, Const, LaunchIndex, tree_text
from gpu_native.nodes import replace
from gpu_native.rewrite import rewrite_module, transpile_module
from gpu_native.runtime.kernel import Kernel
from gpu_native.spec import (
    SCHEMA,
    IndexFits,
    KernelSpec,
    LaunchAssert,
    Param,
    Site,
    Trait,
)
from tests.helpers import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

CHECKS = """
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, f32, block_dim,
                        block_idx, grid_dim, thread_idx)

@gpu_kernel(Kernel1D)
def narrow(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 64, "launch with 64 threads"
    assert grid_dim.x > 0 or not block_dim.x < 64
    x = block_idx.x * 64 + thread_idx.x
    if x < len(a) and x < len(out):
        out[x] = a[x] * 2.0
"""


def _all_specs():
    for path in EXAMPLES:
        yield from transpile_module(path.read_text(), f"examples/{path.name}",
                                    path.stem).kernels
    yield from transpile_module(CHECKS, "checks.py", "checks").kernels


def _plain(value) -> bool:
    if type(value) is tuple:
        return all(_plain(v) for v in value)
    return value is None or type(value) in (str, int, bool, bytes)


class TestLiteral:
    @pytest.mark.slow
    def test_every_spec_reads_back_as_itself(self):
        for spec in _all_specs():
            literal = spec.to_literal()
            assert KernelSpec.from_literal(literal) == spec
            # What the rewritten module holds is the literal's repr: it reads back the same.
            assert ast.literal_eval(repr(literal)) == literal

    def test_the_literal_is_plain_data_folded_into_one_constant(self):
        spec = next(iter(_all_specs()))
        literal = spec.to_literal()
        assert _plain(literal)
        code = compile(f"f(_spec={literal!r})", "m.py", "eval")
        ops = list(dis.get_instructions(code))
        # Nothing runs at import: no BUILD_* of its parts.  (Python 3.13 loads the keyword names
        # of the call as a constant of their own, ("_spec",).)
        assert not [i.opname for i in ops if i.opname.startswith("BUILD_")]
        assert [i.argval for i in ops if i.opname == "LOAD_CONST" and i.argval == literal] == \
            [literal]

    @pytest.mark.slow
    def test_the_records_are_typed(self):
        spec = next(s for s in _all_specs() if s.name == "narrow")
        (variant,) = spec.variants
        assert all(isinstance(p, Param) for p in spec.params)
        assert spec.params[1].is_array and spec.params[1].mutable
        assert all(isinstance(s, Site) for s in variant.sites)
        assert {type(c) for c in variant.launch_checks} == {LaunchAssert, IndexFits}
        assert isinstance(variant.traits, Trait)
        fits = [c for c in variant.launch_checks if isinstance(c, IndexFits)]
        assert {(c.limit, c.type, c.line) for c in fits} == {(2**31 - 1, "i32", 9)}
        # The sum's check implies its product term's, which is not recorded apart.
        assert [tree_text(c.tree) for c in fits] == ["block_idx.x * 64 + thread_idx.x"]
        first, second = (c for c in variant.launch_checks if isinstance(c, LaunchAssert))
        assert variant.sites[first.site].kind == "assert"
        assert variant.sites[first.site].message == "launch with 64 threads"
        assert tree_text(first.tree) == "block_dim.x == 64"
        assert tree_text(second.tree) == "grid_dim.x > 0 or not block_dim.x < 64"
        # Typed nodes in the record, the compact tagged tuples in the literal.
        assert first.tree == Compare("==", LaunchIndex("block_dim", 0), Const(64))
        (literal,) = spec.to_literal()[11]
        assert ("assert", ("==", ("sp", "block_dim", 0), ("c", 64)), first.site) in literal[6]
        assert ("assert", ("or", ((">", ("sp", "grid_dim", 0), ("c", 0)),
                                  ("not", ("<", ("sp", "block_dim", 0), ("c", 64))))),
                second.site) in literal[6]

    @pytest.mark.slow
    def test_sites_in_another_modules_device_function_name_its_file(self, tmp_path):
        (tmp_path / "spec_helpers.py").write_text(
            "from gpu_native import gpu_device, CUDASlice, f32, i64\n\n\n"
            "@gpu_device\n"
            "def pick(a: CUDASlice[f32], i: i64) -> f32:\n"
            "    return a[i + 1]\n")
        source = ("from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, "
                  "FlatLayout1D, f32\n"
                  "from spec_helpers import pick\n\n\n"
                  "@gpu_kernel(Kernel1D)\n"
                  "def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):\n"
                  "    i = FlatLayout1D.uid()\n"
                  "    out[i] = pick(a, i) + a[i + 2]\n")
        path = str(tmp_path / "spec_kern.py")
        (spec,) = transpile_module(source, path, "spec_kern").kernels
        helpers = str(tmp_path / "spec_helpers.py")
        assert spec.files == (helpers,) and spec.source_files == (path, helpers)
        (variant,) = spec.variants
        where = {(spec.file_at(s.file), s.line) for s in variant.sites}
        assert where == {(helpers, 6), (path, 8)}
        assert KernelSpec.from_literal(spec.to_literal()) == spec
        # Kernels whose code is all in their own file carry no table.
        assert all(not s.files and all(site.file == 0 for v in s.variants for site in v.sites)
                   for s in _all_specs())

    def test_trait_names_round_trip(self):
        every = Trait.from_names(tuple(t.name.lower() for t in Trait))
        assert Trait.from_names(every.names()) == every
        assert Trait.from_names(()) == Trait(0) and Trait(0).names() == ()


class TestStaleOrForeign:
    def _literal(self):
        return next(iter(_all_specs())).to_literal()

    def test_a_literal_of_the_old_dict_layout_says_to_import_again(self):
        old = {"schema": 2, "version": "0.1.0", "name": "k", "variants": ()}
        with pytest.raises(GpuNativeError, match=r"kernel k of module m was rewritten by "
                           r"gpu_native 0\.1\.0 \(kernel spec schema 2\).*__pycache__"):
            Kernel(old, _factory("k", "m"))

    def test_a_literal_of_another_schema_says_to_import_again(self):
        literal = self._literal()
        newer = (literal[0], SCHEMA + 1, "9.9", *literal[3:])
        with pytest.raises(GpuNativeError, match=r"gpu_native 9\.9 .*schema "
                           f"{SCHEMA + 1}" r"\).*delete the module's __pycache__"):
            KernelSpec.from_literal(newer, "kernel k")

    def test_a_literal_of_the_schema_before_file_tables_says_to_import_again(self):
        # Schema 3 had twelve fields: its length must not make it "not a spec".
        literal = self._literal()
        old = (literal[0], 3, "0.1.0", *literal[3:12])
        with pytest.raises(GpuNativeError, match=r"kernel spec schema 3\).*__pycache__"):
            KernelSpec.from_literal(old, "kernel k")

    @pytest.mark.parametrize("literal", [None, "spec", (), ("other", 3), {"variants": ()}])
    def test_anything_else_is_not_a_spec(self, literal):
        with pytest.raises(GpuNativeError, match="not a gpu_native kernel spec"):
            KernelSpec.from_literal(literal, "kernel k")

    @pytest.mark.parametrize("damage", ["site", "site file", "files", "trait", "check", "tree",
                                        "tree leaf", "param", "ir", "options"])
    def test_a_malformed_literal_is_a_clear_error(self, damage):
        lit = list(self._literal())
        variant = list(lit[11][0])
        if damage == "site":
            variant[4] = (("index", "12", 0, 1, "a", 0, 1, "", 0),)
        elif damage == "site file":  # no second file in the table
            variant[4] = (("index", 12, 0, 1, "a", 0, 1, "", 1),)
        elif damage == "files":
            lit[12] = ("other.py", 7)
        elif damage == "trait":
            variant[5] = ("uid_only", "no_such_trait")
        elif damage == "check":
            variant[6] = (("fits", ("c", 1), 10),)
        elif damage == "tree":
            variant[6] = (("assert", ("==", ("sp", "block_dim"), ("c", 1)), 0),)
        elif damage == "tree leaf":  # an argument's value, in a check of the launch alone
            variant[6] = (("assert", ("==", ("param", 0), ("c", 1)), 0),)
        elif damage == "param":
            lit[8] = (("a", "f32", 1),)
        elif damage == "ir":
            variant[7] = "not bytes"
        else:
            lit[10] = (True, "no", None)
        lit[11] = (tuple(variant),)
        with pytest.raises(GpuNativeError, match=r"malformed kernel spec.*__pycache__"):
            KernelSpec.from_literal(tuple(lit), "kernel k")

    def test_the_decorator_reports_a_stale_spec(self):
        def k(_gn_context):
            pass

        with pytest.raises(GpuNativeError, match=rf"kernel .*k of module {re.escape(__name__)} was "
                           r"rewritten by another gpu_native \(kernel spec schema 1\)"):
            gpu_kernel(Kernel1D, _spec={"schema": 1})(k)


def _factory(name: str, module: str):
    def factory(_gn_context):
        pass

    factory.__qualname__ = name
    factory.__module__ = module
    return factory


def test_a_kernel_reads_its_typed_spec():
    source = (ROOT / "examples" / "vector_add.py").read_text()
    result = rewrite_module(source, "examples/vector_add.py", "vector_add")
    (spec,) = result.kernels
    kernel = Kernel(spec.to_literal(), _factory("add_kernel", "vector_add"))
    assert kernel.spec == spec and kernel.params == spec.params
    (variant,) = kernel.variants.values()
    assert variant.spec is kernel.spec.variants[0]
    assert Trait.UID_ONLY in variant.traits
    # A KernelSpec is taken as it is (tests, tools).
    other = replace(spec, name="renamed")
    assert Kernel(other, _factory("renamed", "vector_add")).__name__ == "renamed"


def test_the_spec_module_imports_nothing_of_the_transpiler():
    code = ("import sys, gpu_native.spec, gpu_native.runtime.kernel, gpu_native.cache.lookup; "
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['gpu_native', "
            "'frontend'], ['gpu_native', 'check'], ['gpu_native', 'emit'], ['gpu_native', "
            "'rewrite']) or m == 'libcst'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout
