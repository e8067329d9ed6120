"""Golden tests of ``expand``: what it prints for the seed example and every example kernel is
pinned, in the forms a person reads: the module laid out for reading (``*.expanded.py``), the
CUDA C++ with the Python line beside each ``#line`` (``*.cu``), and the proofs (``*.proofs.txt``,
for a few examples).  Regenerate after an intended change with
``GN_UPDATE_GOLDEN=1 pytest tests/emit/test_expand_golden.py``, and review the diff.

The exact form (``--exact``, the module the import hook compiles) is not pinned here: it holds
every kernel's whole CUDA source and encoded IR.  Tests below check that the readable form is the
same code, that ``--exact`` prints what the hook compiles (and
tests/importhook/test_importhook.py imports it), and that it keeps every line in place.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from gpu_native.cli import main
from gpu_native.expand import Expansion, annotate_cuda
from gpu_native.rewrite import rewrite_module
from tests.helpers import ROOT

GOLDEN = Path(__file__).resolve().parent / "golden"
# The examples that define kernels (a driver script such as dask_map_blocks.py has none).
SOURCES = sorted(p.name for p in (ROOT / "examples").glob("*.py")
                 if not p.name.startswith("_") and "@gpu_kernel" in p.read_text())
PROOFS = ["heat_stencil.py", "histogram.py", "prefix_scan.py", "sgemm.py"]
# GN_, not GPU_NATIVE_: the tests start without the GPU_NATIVE_* settings (tests/conftest.py).
UPDATE = os.environ.get("GN_UPDATE_GOLDEN") == "1"
TAG = re.compile(r"^(.*?)\s+# L(\d+)$")


def _expansion(name: str) -> Expansion:
    relative = f"examples/{name}"
    return Expansion.of((ROOT / relative).read_text(), relative, name[:-3])


def _exact(name: str) -> str:
    relative = f"examples/{name}"
    return rewrite_module((ROOT / relative).read_text(), relative, name[:-3]).source


def _check_golden(text: str, golden: Path) -> None:
    if UPDATE or not golden.exists():
        golden.write_text(text)
        if not UPDATE:
            pytest.fail(f"created {golden}; review it and run again")
    assert text == golden.read_text(), f"{golden.name} differs: rerun with " \
        "GN_UPDATE_GOLDEN=1 if the change is intended"


@pytest.mark.parametrize("name", SOURCES)
def test_expand_matches_golden(name):
    expansion = _expansion(name)
    _check_golden(expansion.readable(), GOLDEN / (name[:-3] + ".expanded.py"))
    _check_golden(expansion.cuda(), GOLDEN / (name[:-3] + ".cu"))


@pytest.mark.parametrize("name", PROOFS)
def test_proofs_match_golden(name):
    _check_golden(_expansion(name).proofs(), GOLDEN / (name[:-3] + ".proofs.txt"))


def test_the_goldens_stay_small():
    """The readable forms leave out the CUDA text and the IR: all goldens together stay small."""
    total = sum(p.stat().st_size for p in GOLDEN.iterdir())
    assert total < 150_000, total


class _WithoutSpec(ast.NodeTransformer):
    def visit_keyword(self, node: ast.keyword) -> ast.keyword:
        if node.arg == "_spec":
            node.value = ast.Constant(...)
        return node


def _tree(text: str) -> str:
    return ast.dump(_WithoutSpec().visit(ast.parse(text)))


@pytest.mark.parametrize("name", SOURCES)
def test_the_readable_form_is_the_imported_code(name):
    """Apart from the spec literal, the readable module is the module the hook compiles: the
    same statements and expressions, only laid out (and commented) differently."""
    readable, exact = _expansion(name).readable(), _exact(name)
    assert "_spec=..." in readable
    assert _tree(readable) == _tree(exact)


@pytest.mark.parametrize("name", SOURCES)
def test_every_generated_line_is_tagged_with_its_line_in_the_imported_module(name):
    readable, exact = _expansion(name).readable(), _exact(name).splitlines()
    source = (ROOT / "examples" / name).read_text().splitlines()
    tagged = 0
    for line in readable.splitlines():
        match = TAG.match(line)
        if match is None:
            # Not generated: the user's own line, or a comment of the summary or the launcher.
            assert line in source or line.lstrip().startswith("#") or not line.strip(), line
            continue
        code, number = match.group(1), int(match.group(2))
        # Every name and number on the line is on that line of the imported module.
        for word in re.findall(r"\w+", code):
            assert word in exact[number - 1], (line, exact[number - 1][:200])
        tagged += 1
    assert tagged


@pytest.mark.parametrize("name", SOURCES)
def test_generated_lines_are_at_most_100_characters(name):
    source = set((ROOT / "examples" / name).read_text().splitlines())
    for form in (_expansion(name).readable(), _expansion(name).proofs()):
        for line in form.splitlines():
            if line not in source:
                assert len(line) <= 100, line


@pytest.mark.parametrize("name", SOURCES)
def test_exact_keeps_every_line_in_place(name):
    source = (ROOT / "examples" / name).read_text()
    host = _exact(name)
    original, rewritten = source.splitlines(), host.splitlines()
    assert len(original) == len(rewritten)
    kernel_lines = set()
    for number, line in enumerate(rewritten, 1):
        if line.lstrip().startswith("@gpu_kernel(") and "_spec=" in line:
            kernel_lines.add(number)
    assert kernel_lines, "no kernel was rewritten"
    # Every line outside the kernels is byte-for-byte the user's.
    changed = {n for n, (a, b) in enumerate(zip(original, rewritten), 1) if a != b}
    for n in changed:
        start = max(k for k in kernel_lines if k <= n)
        assert start <= n


def test_seed_example_expands_to_a_readable_launcher():
    expansion = _expansion("vector_add.py")
    host, cuda = expansion.readable(), expansion.cuda()
    assert re.search(r"^@gpu_kernel\(Kernel1D, _spec=\.\.\.\) +# L23$", host, re.M)
    assert re.search(r"^def add_kernel\(_gn_context\): +# L24$", host, re.M)
    assert re.search(r"^    _gn_fast = _gn_context.fast_path\(\) +# L25$", host, re.M)
    assert re.search(r"^    return lambda a, b, c: \( +# L26$", host, re.M)
    assert "if a.__class__ is _gn_DA and a.launch_sig is _gn_sig_a" in host
    assert "#   Kernel1D add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32])" \
        in host
    assert "#   variant gn_add_kernel (kernel id 0x5c95d8d2c54a13bb)" in host
    assert "#     traits: uid_only, uid_vector4" in host
    assert "#     error sites: 3 bounds checks" in host
    assert "'gpu_native.KernelSpec'" not in host and "__global__" not in host
    assert 'extern "C" __global__ void gn_add_kernel(' in cuda
    assert "const float* __restrict__ a" in cuda
    assert '#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]\n' in cuda


def test_sgemm_expands_to_lines_of_at_most_120_characters(capsys):
    assert main(["expand", str(ROOT / "examples" / "sgemm.py"), "--module", "sgemm"]) == 0
    out = capsys.readouterr().out
    assert "def sgemm_kernel(_gn_context):" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_expand_cli_prints_each_form(capsys):
    path = ROOT / "examples" / "saxpy.py"
    assert main(["expand", str(path), "--module", "saxpy", "--exact"]) == 0
    assert capsys.readouterr().out == rewrite_module(path.read_text(), str(path), "saxpy").source
    expansion = Expansion.of(path.read_text(), str(path), "saxpy")
    assert main(["expand", str(path), "--module", "saxpy"]) == 0
    assert capsys.readouterr().out == expansion.readable()
    assert main(["expand", str(path), "--module", "saxpy", "--kernel", "saxpy_kernel"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# gpu_native: kernel saxpy_kernel") and "def saxpy(" not in out
    assert main(["expand", str(path), "--cuda", "--kernel", "saxpy_kernel"]) == 0
    assert "gn_saxpy_kernel" in capsys.readouterr().out
    assert main(["expand", str(path), "--proofs"]) == 0
    assert capsys.readouterr().out.startswith("kernel saxpy_kernel (")
    assert main(["expand", str(path), "--cuda", "--kernel", "nope"]) == 2
    assert "no kernel named 'nope'" in capsys.readouterr().err


def test_the_cuda_annotation_only_adds_comments():
    for name in SOURCES:
        expansion = _expansion(name)
        for spec in expansion.module.kernels:
            for variant in spec.variants:
                annotated = annotate_cuda(variant.cuda, expansion._sources())
                plain = re.sub(r'^(#line \d+ "[^"]*")  // .*$', r"\1", annotated, flags=re.M)
                assert plain == variant.cuda
                directives = re.findall(r"^#line .*$", annotated, re.M)
                assert directives and all("  // " in d for d in directives)


def test_the_annotated_cuda_still_compiles():
    """A comment after ``#line`` is a comment: NVRTC compiles the annotated text as it is."""
    pytest.importorskip("cuda.bindings.nvrtc")
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request

    expansion = _expansion("vector_add.py")
    (variant,) = expansion.module.kernels[0].variants
    image = compile_request(BuildRequest(expansion.cuda(), variant.symbol, "sm_90"))
    assert image.kind == "cubin"


def test_a_source_line_ending_in_a_backslash_keeps_the_statement_after_it():
    """A ``//`` comment ending in ``\\`` splices the next line into it: the annotation drops
    the backslash, and the annotated text compiles to the same image as the plain one."""
    source = (
        "from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32\n"
        "@gpu_kernel(Kernel1D)\n"
        "def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):\n"
        "    i = FlatLayout1D.uid()\n"
        "    x = a[i] + \\\n"
        "        1.0\n"
        "    y = x * 2.0  # a comment \\\n"
        "    c[i] = y\n")
    expansion = Expansion.of(source, "bsl.py", "bsl")
    (variant,) = expansion.module.kernels[0].variants
    annotated = annotate_cuda(variant.cuda, expansion._sources())
    assert "// bsl.py:5  x = a[i] +\n" in annotated
    assert "// bsl.py:7  y = x * 2.0  # a comment\n" in annotated
    assert not [line for line in annotated.splitlines() if line.rstrip().endswith("\\")]
    pytest.importorskip("cuda.bindings.nvrtc")
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request

    images = [compile_request(BuildRequest(text, variant.symbol, "sm_90")).image
              for text in (variant.cuda, annotated)]
    assert annotated != variant.cuda and images[0] == images[1]


def test_device_functions_of_other_modules_show_their_own_lines(tmp_path, capsys):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(
        "from gpu_native import gpu_device, f32\n\n\n"
        "@gpu_device\n"
        "def twice(x: f32) -> f32:\n"
        "    return x + x  # the helper's line\n")
    (pkg / "kern.py").write_text(
        "from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32\n"
        "from pkg.helpers import twice\n\n\n"
        "@gpu_kernel(Kernel1D)\n"
        "def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):\n"
        "    i = FlatLayout1D.uid()\n"
        "    out[i] = twice(a[i])\n")
    assert main(["expand", str(pkg / "kern.py"), "--module", "pkg.kern", "--cuda"]) == 0
    out = capsys.readouterr().out
    assert '#line 8 "pkg/kern.py"  // pkg/kern.py:8  out[i] = twice(a[i])' in out
    assert '#line 6 "pkg/helpers.py"  // pkg/helpers.py:6  return x + x  # the helper\'s line' \
        in out


def test_nvrtc_names_the_device_functions_own_file(tmp_path):
    """The CUDA of a kernel calling another module's device function compiles, and a compile
    error in the device function's code is reported at its own file and line."""
    pytest.importorskip("cuda.bindings.nvrtc")
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request
    from gpu_native.errors import CompileError

    (tmp_path / "helpers2.py").write_text(
        "from gpu_native import gpu_device, f32\n\n\n"
        "@gpu_device\n"
        "def twice(x: f32) -> f32:\n"
        "    return x + x\n")
    source = ("from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, "
              "FlatLayout1D, f32\n"
              "from helpers2 import twice\n\n\n"
              "@gpu_kernel(Kernel1D)\n"
              "def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):\n"
              "    i = FlatLayout1D.uid()\n"
              "    out[i] = twice(a[i])\n")
    (variant,) = rewrite_module(source, str(tmp_path / "kern2.py"), "kern2").kernels[0].variants
    assert compile_request(BuildRequest(variant.cuda, variant.symbol, "sm_90")).kind == "cubin"
    directive = '#line 6 "helpers2.py"\n'
    assert variant.cuda.count(directive) == 1
    broken = variant.cuda.replace(directive, directive + "    gn_no_such_name;\n")
    with pytest.raises(CompileError) as info:
        compile_request(BuildRequest(broken, variant.symbol, "sm_90"))
    assert "helpers2.py(6): error" in info.value.log, info.value.log
