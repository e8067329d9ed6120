"""``gpu-native expand``'s forms on kernels made to show each thing they report: the spec
summary (generic kernels, launch checks), the proofs (every rule a write can be accepted by),
and the command line's choices.  The examples' output is pinned by tests/emit/test_expand_golden.py.
"""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from gpu_native.cli import main
from gpu_native.expand import Expansion

SOURCE = textwrap.dedent('''\
    from typing import TypeVar

    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, BlockLayout1D, UniqueId, shared_array, sync_threads,
                            thread_idx, block_idx, block_dim, unsafe, f32, f64, i32)

    T = TypeVar("T", f32, f64)


    @gpu_device
    def put(out: CUDASliceMut[f32], i: UniqueId, v: f32):
        out[i] = v


    @gpu_kernel(Kernel1D)
    def rules(x: CUDASlice[f32], out: CUDASliceMut[f32], hits: CUDASliceMut[i32],
              perm: CUDASlice[i32], copy: CUDASliceMut[f32]):
        assert block_dim.x == 64, "launch with 64 threads"
        tile = shared_array(f32, 64)
        t = BlockLayout1D.uid()
        i = FlatLayout1D.uid()
        tile[t] = x[i]
        sync_threads()
        if thread_idx.x == 0:
            out[block_idx.x] = tile[0]
            if block_idx.x == 0:
                out[0] = tile[1]
        hits.atomic_ref(perm[i]).fetch_add(1)
        with unsafe():
            out[perm[i]] = x[i]
        put(copy, i, x[i] + 1.0)


    @gpu_kernel(Kernel1D)
    def scale(x: CUDASlice[T], out: CUDASliceMut[T], k: T):
        i = FlatLayout1D.uid()
        out[i] = x[i] * k


    @gpu_kernel(Kernel1D, bounds_check=False)
    def unchecked(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = x[i + 1]
    ''')


@pytest.fixture(scope="module")
def expansion() -> Expansion:
    return Expansion.of(SOURCE, "forms.py", "forms")


class TestProofs:
    def test_each_write_says_how_it_was_accepted(self, expansion):
        text = expansion.proofs("rules")
        assert "kernel rules (forms.py:15)" in text
        lines = text.splitlines()

        def rule_of(code: str) -> str:
            index = next(n for n, line in enumerate(lines) if line.strip().endswith(code))
            return lines[index + 1].strip()

        assert rule_of("tile[t] = x[i]").startswith("block-unique index:")
        # Unique with the condition around it: one thread of each block, a row each.
        assert rule_of("out[block_idx.x] = tile[0]").startswith("unique index:")
        assert rule_of("out[0] = tile[1]") == (
            "one thread: the conditions around it leave one thread of the grid")
        assert rule_of("hits.atomic_ref(perm[i]).fetch_add(1)") == "atomic add"
        assert rule_of("out[perm[i]] = x[i]").startswith("inside `with unsafe():`")
        # The device function's store, on its own line, accepted through its UniqueId parameter.
        assert rule_of("L12  out[i] = v (in put)").startswith("unique index:")

    def test_remaining_bounds_checks_name_line_array_and_axis(self, expansion):
        text = expansion.proofs("rules")
        assert "  bounds checks left: " in text
        lines = text.splitlines()
        checks = lines[lines.index("  bounds checks left: 7 (6 more proven in range, not "
                                   "checked)") + 1:lines.index("  asserts: 1")]
        # In line order, the device function's among them; tile[1] is proven.
        assert checks == ["    L12  out[i]  (out)", "    L22  x[i]  (x)",
                          "    L25  out[block_idx.x]  (out)", "    L27  out[0]  (out)",
                          "    L28  hits.atomic_ref(perm[i]).fetch_add(1)  (hits)",
                          "    L28  perm[i]  (perm)", "    L30  out[perm[i]]  (out)"]
        assert "  asserts: 1\n    L18  assert block_dim.x == 64, \"launch with 64 threads\"\n" \
               "        checked by the launcher, once per launch shape" in text

    def test_a_kernel_without_bounds_checks_says_so(self, expansion):
        text = expansion.proofs("unchecked")
        assert "  bounds checks: off (bounds_check=False): no index is checked" in text
        assert "bounds checks left" not in text

    def test_specialisations_with_the_same_proofs_are_shown_once(self, expansion):
        text = expansion.proofs("scale")
        assert text.count("kernel scale") == 1
        assert "kernel scale[T=f32] (forms.py:34) (every specialisation)" in text
        assert "  writes: 1\n    L37  out[i] = x[i] * k\n" in text


class TestSummary:
    def test_a_generic_kernel_lists_each_specialisation(self, expansion):
        text = expansion.readable("scale")
        assert "#   Kernel1D scale(x: CUDASlice[T], out: CUDASliceMut[T], k: T)" in text
        assert "#   TypeVars: T" in text
        assert "#   variant [T=f32] gn_scale_f32 (kernel id 0x" in text
        assert "#   variant [T=f64] gn_scale_f64 (kernel id 0x" in text
        # The fast path cannot tell a TypeVar's scalar: the launcher takes the checked path.
        assert re.search(r"^        if False +# L37$", text, re.M)

    def test_launch_checks_and_sites_are_summarised(self, expansion):
        text = expansion.readable("rules")
        assert "#     launch check: assert block_dim.x == 64 (line 18), once per launch shape" \
            in text
        assert "#     error sites: 1 assert, 7 bounds checks (`expand --proofs` lists them)" \
            in text
        assert "#     traits: index32, uses_barriers, uses_shared" in text

    def test_only_the_kernel_asked_for(self, expansion):
        text = expansion.readable("unchecked")
        assert "def unchecked(_gn_context):" in text
        assert "def rules(" not in text and "def put(" not in text
        assert "options: bounds_check=False" in text


SHAPES = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32


    @gpu_kernel(Kernel1D)
    def two(o: CUDASliceMut[f32]): o[FlatLayout1D.uid()] = 1.0


    @gpu_kernel(Kernel1D)
    def three(o: CUDASliceMut[f32]):
        o[FlatLayout1D.uid()] = 2.0


    def make():
        @gpu_kernel(Kernel1D)
        def nested(o: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()

            o[i] = 3.0
        return nested
    ''')


def test_short_and_nested_kernels_read_as_the_imported_code():
    """Kernels of two and three lines get their launcher on fewer lines of the imported module,
    and a nested kernel is indented: the readable form is still the same code, and each tag
    names the line that holds it."""
    from gpu_native.rewrite import rewrite_module

    readable = Expansion.of(SHAPES, "shapes.py", "shapes").readable()
    exact = rewrite_module(SHAPES, "shapes.py", "shapes").source

    class WithoutSpec(ast.NodeTransformer):
        def visit_keyword(self, node):
            if node.arg == "_spec":
                node.value = ast.Constant(...)
            return node

    assert ast.dump(WithoutSpec().visit(ast.parse(readable))) == \
        ast.dump(WithoutSpec().visit(ast.parse(exact)))
    tags = {}
    for line in readable.splitlines():
        match = re.match(r"^(.*?)\s+# L(\d+)$", line)
        if match:
            tags.setdefault(int(match.group(2)), []).append(match.group(1).strip())
    lines = exact.splitlines()
    assert sorted(tags) == [4, 5, 8, 9, 10, 14, 15, 16, 17]
    assert tags[5][0] == "def two(_gn_context):" and "return lambda o: (" in tags[5]
    assert lines[4].startswith("def two(_gn_context): _gn_fast = ")
    assert tags[10][0] == "_gn_fast = _gn_context.fast_path()" and "return lambda o: (" in tags[10]
    assert "    def nested(_gn_context):  # L15" in readable
    assert "    # gpu_native: kernel nested, lines 14-18 of shapes.py, became the launcher factory" \
        in readable
    for number, codes in tags.items():
        for code in codes:
            for word in re.findall(r"\w+", code):
                assert word in lines[number - 1], (code, number)


class TestCommandLine:
    def test_exact_and_kernel_do_not_go_together(self, tmp_path):
        path = tmp_path / "forms.py"
        path.write_text(SOURCE)
        with pytest.raises(SystemExit, match="--exact prints the whole module"):
            main(["expand", str(path), "--exact", "--kernel", "scale"])

    def test_the_forms_exclude_each_other(self, tmp_path, capsys):
        path = tmp_path / "forms.py"
        path.write_text(SOURCE)
        with pytest.raises(SystemExit):
            main(["expand", str(path), "--cuda", "--proofs"])
        assert "not allowed with argument" in capsys.readouterr().err

    def test_proofs_of_one_kernel(self, tmp_path, capsys):
        path = tmp_path / "forms.py"
        path.write_text(SOURCE)
        assert main(["expand", str(path), "--proofs", "--kernel", "unchecked"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("kernel unchecked (") and "kernel rules" not in out


def test_a_kernel_defined_in_a_function_is_named_in_the_note(tmp_path, capsys):
    # Transpiled by its decorator when the function runs, from what it captures: the note
    # said "no kernels found" of a file that plainly has one.
    factory = tmp_path / "factory.py"
    factory.write_text(textwrap.dedent("""\
        from gpu_native import *

        def make(s):
            @gpu_kernel(Kernel1D)
            def scaled(out: CUDASliceMut[f64]):
                out[FlatLayout1D.uid()] = s
            return scaled
        """))
    assert main(["expand", str(factory)]) == 0
    out, err = capsys.readouterr()
    assert out == factory.read_text()
    assert err == (f"gpu-native: note: scaled (line 4) in {factory} is a kernel defined inside "
                   "a function, transpiled by the decorator when the function runs, from the "
                   "values it captures; expand shows kernels defined at module level\n")


def test_a_file_without_kernels_is_printed_with_a_note(tmp_path, capsys):
    # A kernel whose decorator is another module's alias of gpu_kernel is not found by a
    # transpiler that does not run the module: expand printed the file as if nothing were
    # there to check, where the import refuses it.
    (tmp_path / "mydec.py").write_text("import gpu_native as gn\n\nkern = gn.gpu_kernel\n")
    aliased = tmp_path / "aliased.py"
    aliased.write_text(textwrap.dedent("""\
        from gpu_native import Kernel1D, CUDASliceMut, FlatLayout1D, f32
        from mydec import kern


        @kern(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            a[FlatLayout1D.uid()] = 1.0
        """))
    for args in ([], ["--proofs"]):
        assert main(["expand", str(aliased), *args]) == 0
        out, err = capsys.readouterr()
        assert out == (aliased.read_text() if not args else "")
        assert err == (f"gpu-native: note: no kernels found in {aliased}; the transpiler finds a "
                       "kernel by its @gpu_kernel decorator, imported from gpu_native into this "
                       "module\n")
    # A module of device functions only is checked, and needs no note.
    devices = tmp_path / "devices.py"
    devices.write_text("from gpu_native import gpu_device, f32\n\n\n@gpu_device\n"
                       "def sq(x: f32) -> f32:\n    return x * x\n")
    assert main(["expand", str(devices)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("args, message", [
    (["expand", "--prelude", "forms.py"], "gpu-native expand: --prelude prints the header "
     "every kernel includes, the same for every module, and takes no FILE"),
    (["expand", "--prelude", "--kernel", "scale"], "takes no --kernel"),
    (["expand", "forms.py", "--module", ""], "gpu-native expand: --module '' is not a module "
     "name"),
    (["expand", "forms.py", "--module", "1.2..x"], "--module '1.2..x' is not a module name"),
])
def test_arguments_that_would_be_ignored_are_refused(args, message, tmp_path, monkeypatch):
    # --prelude printed the header whatever FILE was given; --module took any text.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "forms.py").write_text(SOURCE)
    with pytest.raises(SystemExit, match=re.escape(message)):
        main(args)


def test_messages_name_the_command_as_it_was_run(tmp_path):
    with pytest.raises(SystemExit, match=r"^python -m gpu_native expand: give a FILE"):
        main(["expand"], prog="python -m gpu_native")


def test_an_empty_kernel_name_is_an_unknown_kernel(tmp_path, capsys):
    # --kernel '' printed nothing and exited 0 (an empty name read as no filter).
    path = tmp_path / "one.py"
    path.write_text(SOURCE)
    assert main(["expand", str(path), "--kernel", ""]) == 2
    assert "no kernel named '' in" in capsys.readouterr().err
