"""The registry of the kernel language (gpu_native/lang/registry.py) is the one list of names:
the checker, the CUDA emitter, the simulator, the host stubs and the reference table in
docs/language.md all follow it."""

from __future__ import annotations

import inspect
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.check.checker import FunctionChecker
from gpu_native.emit.cnames import c_identifier
from gpu_native.lang import entry as entry_module
from gpu_native.lang import intrinsics, layouts, reference, types
from gpu_native.lang import params as params_module
from gpu_native.lang import registry as R
from gpu_native.lang.entry import spelling
from gpu_native.lang.types import SCALARS
from gpu_native.simulator import ops
from tests.helpers import ROOT
from tests.simulator.support import build, launch, poisoned

LANGUAGE_MD = ROOT / "docs" / "language.md"
CALLABLE_FORMS = ("call", "statement", "allocation", "context", "generator")


class TestReferenceTable:
    def test_the_table_in_docs_language_md_is_current(self):
        text = LANGUAGE_MD.read_text(encoding="utf-8")
        assert reference.rewrite(text) == text, (
            "docs/language.md's language reference is stale: run "
            "python -m gpu_native.lang.reference --write docs/language.md")

    def test_every_entry_is_a_row_of_the_table(self):
        rows = reference.markdown().splitlines()
        for entry in R.ENTRIES:
            doc = entry.doc.replace("|", "\\|")
            if entry.arch:  # the GPUs that have it
                doc += f" (sm_{entry.arch} and newer GPUs)"
            assert any(entry.name in row and f"| {doc} |" in row
                       and row.endswith(f"| {entry.since} |") for row in rows), entry.name

    def test_no_entry_is_dated_after_the_package_version(self):
        # "since 0.3.0" in the reference of a package that is 0.1.0 tells a reader of a release
        # that does not exist: an entry is dated at most the version it ships in.
        def version(text: str) -> tuple[int, ...]:
            return tuple(int(part) for part in text.split("."))

        newer = [(e.name, e.since) for e in R.ENTRIES if version(e.since) > version(gn.__version__)]
        assert not newer, f"dated after {gn.__version__}: {newer}"

    def test_check_reports_a_stale_table_and_write_fixes_it(self, tmp_path, capsys):
        stale = tmp_path / "language.md"
        stale.write_text(f"intro\n{reference.BEGIN}\n| old | table |\n{reference.END}\nrest\n")
        assert reference.main(["--check", str(stale)]) == 1
        assert "stale" in capsys.readouterr().err
        assert reference.main(["--write", str(stale)]) == 0
        assert reference.main(["--check", str(stale)]) == 0
        text = stale.read_text()
        assert text.startswith("intro\n") and text.endswith("\nrest\n")
        assert "`math.sqrt(x) → float`" in text

    def test_a_file_without_markers_is_refused(self, tmp_path):
        plain = tmp_path / "plain.md"
        plain.write_text("no markers here\n")
        with pytest.raises(ValueError, match="markers"):
            reference.main(["--write", str(plain)])


def test_the_registry_imports_nothing_of_the_transpiler_simulator_or_runtime():
    import ast

    for module in (R, entry_module, reference):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module in ("types", "nodes", "entry", "registry"), (module, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                    node.module]
                assert not any(n.startswith("gpu_native") for n in names), names


class TestHostSide:
    def test_gpu_native_exports_every_registered_name(self):
        for name in R.GPU_NATIVE:
            assert hasattr(gn, name), name
            assert name in gn.__all__, name

    def test_every_kernel_name_of_the_lang_modules_is_registered(self):
        # The launch dimensions are host values; everything else the lang modules export means
        # something in a kernel, so the checker must know it.
        host_only = {f"{kind}Dim{n}D" for kind in ("Grid", "Block") for n in (1, 2, 3)}
        host_only |= {"SCALARS", "ScalarInfo", "scalar_info"}
        for module in (intrinsics, layouts, params_module, types):
            for name in module.__all__:
                assert name in R.GPU_NATIVE or name in host_only, f"{module.__name__}.{name}"

    @pytest.mark.parametrize("name", [e.name for e in R.GPU_NATIVE.values()
                                      if e.form in CALLABLE_FORMS])
    def test_host_stub_follows_its_entry(self, name):
        entry = R.GPU_NATIVE[name]
        stub = getattr(gn, name)
        params = tuple(inspect.signature(stub).parameters.values())
        # A variadic parameter is declared "*name" (load_vec4's indices).
        assert tuple("*" * (p.kind is p.VAR_POSITIONAL) + p.name for p in params) == \
            entry.param_names
        for p, declared in zip(params, entry.params):
            if declared.default is None:
                assert p.default is inspect.Parameter.empty, p.name
            else:
                assert p.default == eval(declared.default, vars(gn)), p.name
        assert stub.__doc__.startswith(entry.doc[0].upper() + entry.doc[1:])
        with pytest.raises(RuntimeError, match=rf"{name}\(\) can only be used inside"):
            stub(*(0 for _ in range(entry.required)))
            # unsafe() is a context manager: it refuses on entry
            with stub():
                pass

    def test_constants_and_enums_are_the_registry_s(self):
        assert gn.FULL_MASK == R.GPU_NATIVE["FULL_MASK"].value == 0xFFFFFFFF
        assert gn.MemoryOrder is R.MemoryOrder


class TestConsumers:
    def test_every_handler_named_by_an_entry_exists(self):
        for entry in R.ENTRIES:
            if entry.check:
                assert callable(getattr(FunctionChecker, entry.check, None)), entry.name

    @pytest.mark.parametrize("name", sorted(R.MATH_OPS))
    def test_every_math_operation_has_a_cuda_spelling_and_a_simulator_function(self, name):
        entry = R.MATH_OPS[name]
        # The bit operations list the operand types they take; bitcast takes any (not bool_).
        operands = entry.value or (("f32", "f64") if entry.name != "bitcast" else (
            "f32", "u16", "bf16", "i64"))
        for ty in operands:
            assert isinstance(spelling(entry.cuda, SCALARS[ty]), str)
            assert callable(ops.math_function(name, SCALARS[ty]))

    def test_every_cuda_spelling_is_reserved_from_kernel_variables(self):
        for name in R.emitted_names():
            assert c_identifier(name) != name, name

    def test_a_spelling_depends_on_the_operand_type(self):
        abs_ = R.BUILTINS["abs"].cuda
        assert spelling(abs_, SCALARS["i16"]) == "gn_iabs<{T}>"
        assert spelling(abs_, SCALARS["bf16"]) == "__habs"
        assert spelling(abs_, SCALARS["f64"]) == "fabs"
        with pytest.raises(KeyError):
            spelling(R.MATH["sqrt"].cuda, SCALARS["f16"])


# ---- every math function, on the simulator, against Python -------------------------------------

FLOATS = [0.0, -0.0, 0.3, -0.4, 0.7, 1.0, 1.5, -1.7, 2.5, 10.0, -33.25, 1e-300, 700.0,
          math.inf, -math.inf, math.nan]
INTS = [0, 1, -1, 3, -7, 60, -1074, 1023, 2000, -2000]

# Reference values where Python's math module has no function of that name.
_PYTHON = {
    "rsqrt": lambda x: math.copysign(math.inf, x) if x == 0 else 1.0 / math.sqrt(x),
    "fma": lambda x, y, z: float(Fraction(x) * Fraction(y) + Fraction(z)),
}


def _reference(name: str):
    # math.cbrt and math.exp2 are Python 3.11's; NumPy's call the same C library functions.
    return _PYTHON.get(name) or getattr(math, name, None) or getattr(np, name)


def _operands(entry: R.Entry, n: int):
    """Every combination of the sample values, cut to ``n`` rows (one column per parameter)."""
    columns = [INTS if p.type == "int" else FLOATS for p in entry.params]
    rows = np.stack(np.meshgrid(*[np.arange(len(c)) for c in columns], indexing="ij"),
                    -1).reshape(-1, len(columns))[:n]
    return [np.array([c[k] for k in rows[:, j]], np.int32 if p.type == "int" else np.float64)
            for j, (c, p) in enumerate(zip(columns, entry.params))]


@pytest.mark.parametrize("name", [e.name for e in R.MATH.values() if e.form == "call"])
def test_math_function_on_the_simulator_matches_python(tmp_path, name):
    entry = R.MATH[name]
    params = ", ".join(f"{p.name}_: CUDASlice[{'i32' if p.type == 'int' else 'f64'}]"
                       for p in entry.params)
    call = f"math.{name}({', '.join(p.name + '_[i]' for p in entry.params)})"
    value = f"f64({call})" if entry.result == "bool" else call
    kernels = build(tmp_path, f"""
        @gpu_kernel(Kernel1D)
        def k({params}, out: CUDASliceMut[f64]):
            i = FlatLayout1D.uid()
            if i < len(out):
                out[i] = {value}
        """)
    args = _operands(entry, 512)
    out = poisoned(len(args[0]), np.float64)
    errors = launch(kernels["k"], (len(out) + 127) // 128, 128, *args, out)
    assert errors.fails == []
    fn = _reference(name)
    for row, got in enumerate(out):
        operands = [a[row].item() for a in args]
        try:
            expected = float(fn(*operands))
        except (ValueError, OverflowError):
            continue  # Python raises where C returns NaN or infinity
        if math.isnan(expected):
            assert math.isnan(got), (name, operands, got)
        else:
            assert got == pytest.approx(expected, rel=1e-14, abs=1e-300), (name, operands)
