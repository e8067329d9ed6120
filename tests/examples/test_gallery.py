"""The examples gallery (examples/gallery): every kernel matches its NumPy float64 reference on the
simulator (everywhere) and on the GPU (``gpu``-marked, bigger sizes), from fresh random inputs
into poisoned outputs; every ``with unsafe():`` is explained and still needed; docs/gallery.md
agrees with the code."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import re
import secrets
import subprocess
import sys

import pytest

from tests.helpers import EXAMPLES, ROOT

GALLERY = EXAMPLES / "gallery"
DOC = ROOT / "docs" / "gallery.md"

# Keyword arguments of run(): small on the simulator, big enough on the GPU to span many blocks
# (and for the single-block kernels, many block-stride steps).
SIM_SIZES = {
    "argmax": {"n": 123_457},
    "bitonic_sort": {"rows": 6},
    "bitonic_sort_global": {"n": 1 << 12},
    "blelloch_scan": {"n": 20_000},
    "blur_rgb": {"h": 37, "w": 50},
    "convolution_separable": {"h": 45, "w": 150},
    "dft_complex": {"n": 700},
    "fft_radix2": {"n": 1024},
    "gaussian_elimination": {"n": 40},
    "grid_sync_standardize": {"n": 30_011},
    "histogram64": {"n": 200_000},
    "histogram_privatized": {"n": 200_001},
    "horner_half2": {"n": 20_001},
    "jacobi_3d": {"nz": 12, "ny": 14, "nx": 21, "iterations": 5},
    "last_block_reduce": {"n": 50_001},
    "monte_carlo_pi": {"threads": 5000},
    "nbody_tiled": {"n": 300},
    "nbody_vec3": {"n": 300},
    "odd_even_sort": {"count": 8},
    "particle_to_grid": {"n": 20_000},
    "particles_struct": {"n": 1000},
    "radix_sort": {"n": 3000},
    "red_black_gauss_seidel": {"ny": 40, "nx": 53, "sweeps": 4},
    "reduce_warp_partials": {"n": 100_003},
    "scan_conflict_free": {"n": 20_000},
    "sgemm_register_tiled": {"m": 100, "k": 70, "n": 90},
    "sgemm_vectorized": {"m": 200, "k": 52, "n": 136},
    "single_block_normalize": {"n": 5_003},
    "softmax_warp": {"rows": 37, "cols": 200},
    "spmv_csr_scalar": {"rows": 700, "cols": 500, "max_per_row": 40},
    "spmv_csr_vector": {"rows": 300, "cols": 500, "max_per_row": 70},
    "stencil_2d_halo": {"h": 50, "w": 75},
    "stream_compaction": {"n": 30_001},
    "transpose_diagonal": {"rows": 100, "cols": 70},
    "transpose_padded": {"rows": 100, "cols": 70},
}
GPU_SIZES = {
    "argmax": {"n": 10_000_019},
    "bitonic_sort": {"rows": 2000},
    "bitonic_sort_global": {"n": 1 << 22},
    "blelloch_scan": {"n": 65_536},
    "blur_rgb": {"h": 720, "w": 1283},
    "convolution_separable": {"h": 1001, "w": 1517},
    "dft_complex": {"n": 16_384},
    "fft_radix2": {"n": 1 << 16},
    "gaussian_elimination": {"n": 300},
    "grid_sync_standardize": {"n": 10_000_019},
    "histogram64": {"n": 40_000_000},
    "histogram_privatized": {"n": 30_000_001},
    "horner_half2": {"n": 4_000_037},
    "jacobi_3d": {"nz": 61, "ny": 67, "nx": 130, "iterations": 20},
    "last_block_reduce": {"n": 10_000_019},
    "monte_carlo_pi": {"threads": 200_003},
    "nbody_tiled": {"n": 2000},
    "nbody_vec3": {"n": 2000},
    "odd_even_sort": {"count": 5000},
    "particle_to_grid": {"n": 2_000_003, "cells": (64, 48, 80)},
    "particles_struct": {"n": 1_000_003, "steps": 20},
    "radix_sort": {"n": 1_000_003},
    "red_black_gauss_seidel": {"ny": 501, "nx": 703, "sweeps": 20},
    "reduce_warp_partials": {"n": 16_777_259},
    "scan_conflict_free": {"n": 65_536},
    "sgemm_register_tiled": {"m": 1000, "k": 700, "n": 900},
    "sgemm_vectorized": {"m": 1030, "k": 1028, "n": 1036},
    "single_block_normalize": {"n": 1_000_003},
    "softmax_warp": {"rows": 1001, "cols": 3000},
    "spmv_csr_scalar": {"rows": 100_003, "cols": 50_000, "max_per_row": 100},
    "spmv_csr_vector": {"rows": 100_003, "cols": 50_000, "max_per_row": 300},
    "stencil_2d_halo": {"h": 1001, "w": 1517},
    "stream_compaction": {"n": 10_000_019},
    "transpose_diagonal": {"rows": 3001, "cols": 1703},
    "transpose_padded": {"rows": 3001, "cols": 1703},
}
NAMES = sorted(SIM_SIZES)


def _gallery_modules() -> list[str]:
    return sorted(p.stem for p in GALLERY.glob("*.py") if not p.name.startswith("_"))


@functools.cache
def _refusals():
    """tools/gallery_refusals.py, imported from its file (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location("gallery_refusals",
                                                  ROOT / "tools" / "gallery_refusals.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", autouse=True)
def _gallery_on_path():
    sys.path.insert(0, str(GALLERY))
    yield
    sys.path.remove(str(GALLERY))


@pytest.fixture
def seed():
    """A fresh seed per test (``GALLERY_SEED`` pins it, to reproduce a failure)."""
    return int(os.environ.get("GALLERY_SEED") or secrets.randbits(32))


# ---- every kernel against NumPy -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_gallery_kernel_matches_numpy(backend, name, seed):
    from _gallery import compare

    module = importlib.import_module(name)
    kwargs = GPU_SIZES[name] if backend == "cuda" else SIM_SIZES[name]
    out, ref = module.run(**kwargs, seed=seed)
    compare(out, ref, *module.TOLERANCE, what=f"{name} (GALLERY_SEED={seed})")


def test_every_gallery_module_is_tested():
    assert _gallery_modules() == NAMES == sorted(GPU_SIZES)
    assert len(NAMES) >= 20


@pytest.mark.parametrize("name", NAMES)
def test_gallery_module_declares_what_it_promises(name):
    """A docstring naming the source, ``run``, ``main``, and a TOLERANCE with its reason in a
    comment right above it."""
    source = (GALLERY / f"{name}.py").read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    assert "Source algorithm:" in doc and "What it exercises:" in doc, name
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"run", "main"} <= functions, name
    lines = source.splitlines()
    (line,) = [i for i, text in enumerate(lines) if text.startswith("TOLERANCE = (")]
    assert lines[line - 1].startswith("# "), f"{name}: say why above TOLERANCE"
    kind = ast.literal_eval(lines[line].split("=", 1)[1].strip())[0]
    assert kind in ("exact", "abs", "rel", "norm"), name


def test_compare_catches_an_unwritten_element_and_a_wrong_one():
    """The poison-and-compare helper fails where it must (a check that cannot fail is none)."""
    import numpy as np
    from _gallery import SENTINEL_INT, compare

    ref = np.arange(4, dtype=np.float64)
    with pytest.raises(AssertionError, match="never written"):
        compare(np.array([0, 1, np.nan, 3], np.float32), ref, "abs", 1e-3)
    with pytest.raises(AssertionError, match="1 of 4 elements differ; first at \\(3,\\)"):
        compare(np.array([0, 1, 2, SENTINEL_INT], np.uint32), ref, "exact", 0)
    with pytest.raises(AssertionError, match="relative error"):
        compare(ref * 1.01, ref, "norm", 1e-3)
    compare((np.float32(ref), ref.astype(np.int64)), (ref, ref), "exact", 0)


@pytest.mark.slow
def test_gallery_scripts_run(tmp_path):
    """``python examples/gallery/<name>.py`` runs with no import hook (the __main__ path) and
    finds its helpers beside it; spmv_csr_vector also imports a sibling kernel module."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    for name in ("spmv_csr_vector", "bitonic_sort"):
        done = subprocess.run([sys.executable, str(GALLERY / f"{name}.py")], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{name} on "), done.stdout


# ---- the unsafe blocks ----------------------------------------------------------------------


def _unsafe_comment_problems(name: str) -> list[str]:
    """Every ``with unsafe():`` must follow a ``# unsafe: ...`` comment that says why the checker
    refuses the write and why it is safe anyway."""
    lines = (GALLERY / f"{name}.py").read_text().splitlines()
    problems = []
    for block in _refusals().unsafe_blocks("\n".join(lines)):
        comment = []
        n = block.line - 2
        while n >= 0 and lines[n].lstrip().startswith("#"):
            comment.insert(0, lines[n].strip().lstrip("#").strip())
            if comment[0].startswith("unsafe:"):
                break
            n -= 1
        text = " ".join(comment)
        if not text.startswith("unsafe:") or not re.search(
                r"race-free because|race-free by construction|a real race", text):
            problems.append(f"{name}.py:{block.line}: {text[:60]!r}")
    return problems


def test_every_unsafe_block_says_why():
    problems = [p for name in NAMES for p in _unsafe_comment_problems(name)]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_every_unsafe_block_is_still_needed():
    """Each block wraps at least one access the checker refuses without it.  When the unique-write
    prover learns a rule that accepts a block's accesses, this fails: take the block away, and
    update its row of docs/gallery.md (``python3 tools/gallery_refusals.py --unsafe-only``
    shows what the checker says now)."""
    tool = _refusals()
    needless = []
    for path in tool.gallery_files():
        found = tool.verdicts(path)
        for block in tool.unsafe_blocks(path.read_text()):
            inside = [v for v in found if block.holds(v.line)]
            if not any(not v.accepted for v in inside):
                needless.append(f"{path.name}:{block.line} ({len(inside)} accesses, all accepted)")
    assert not needless, "no longer needed: " + ", ".join(needless)


def test_refusals_tool_reports_each_store(tmp_path, capsys):
    """The tool lists one line per store: accepted with its rule, or refused with the checker's
    message, and tags the accesses the file wraps in ``with unsafe():``; a block it does not
    need is counted as such."""
    path = tmp_path / "two_stores.py"
    path.write_text(
        "from gpu_native import CUDASliceMut, FlatLayout1D, Kernel1D, f32, gpu_kernel, unsafe\n"
        "\n"
        "\n"
        "@gpu_kernel(Kernel1D)\n"
        "def k(a: CUDASliceMut[f32], b: CUDASliceMut[f32], c: CUDASliceMut[f32]):\n"
        "    i = FlatLayout1D.uid()\n"
        "    with unsafe():\n"
        "        a[i] = 1.0\n"
        "    with unsafe():\n"
        "        b[i // 2] = (2.0 +\n"
        "                     a[i])\n"
        "    c.atomic_ref(0).fetch_add(1.0)\n")
    tool = _refusals()
    assert tool.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}:8  accepted: unique index (global)  [unsafe]"
    assert lines[1].startswith(f"{path}:10  refused: store into 'b' through an index that is "
                               "not provably unique")
    assert lines[1].endswith("  [unsafe]")
    assert lines[2] == f"{path}:12  accepted: atomic add"
    assert lines[3] == ("# 2 unsafe blocks wrap 2 accesses: 1 refused, 1 accepted; "
                        "1 blocks no longer needed")


def test_refusals_tool_reports_a_refused_read(tmp_path):
    path = tmp_path / "neighbour.py"
    path.write_text(
        "from gpu_native import CUDASliceMut, FlatLayout1D, Kernel1D, f32, gpu_kernel, unsafe\n"
        "\n"
        "\n"
        "@gpu_kernel(Kernel1D)\n"
        "def k(u: CUDASliceMut[f32]):\n"
        "    i = FlatLayout1D.uid()\n"
        "    if i > 0 and i < len(u) - 1:\n"
        "        with unsafe():\n"
        "            s = u[i - 1] + u[i + 1]\n"
        "        u[i] = s\n")
    found = _refusals().verdicts(path)
    assert [(v.line, v.kind, v.accepted, v.in_unsafe) for v in found] == [
        (9, "read", False, True), (10, "store", True, False)]
    assert found[0].text.startswith("'u' is read here at another index than it is written at")


# ---- docs/gallery.md ------------------------------------------------------------------------


def _doc_rows() -> dict[str, list[str]]:
    """The table's rows, by the gallery file each links to: its cells."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| \[`?(\w+)`?\]\(\.\./examples/gallery/(\w+)\.py\) \|", line)
        if m:
            rows[m.group(2)] = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return rows


def test_gallery_doc_has_a_row_per_kernel_with_its_unsafe_count():
    """docs/gallery.md's counts and reasons are checked against the code, so that the table
    cannot go stale: a row per gallery module, its unsafe count equal to the number of
    ``with unsafe():`` blocks in the file, and one numbered reason per block."""
    tool = _refusals()
    rows = _doc_rows()
    assert sorted(rows) == NAMES
    stale = []
    for name, cells in rows.items():
        count = len(tool.unsafe_blocks((GALLERY / f"{name}.py").read_text()))
        written, reasons = cells[3], cells[4]
        numbered = re.findall(r"(?:^|<br>)(\d+)\. ", reasons)
        if written != str(count) or numbered != [str(i + 1) for i in range(count)]:
            stale.append(f"{name}: the code has {count} unsafe blocks, the table says "
                         f"{written} with {len(numbered)} reasons")
        if count == 0 and reasons != "—":
            stale.append(f"{name}: no unsafe block, but reasons {reasons[:40]!r}")
    assert not stale, "\n".join(stale)


def test_gallery_doc_rule_counts_match_its_table():
    """The rules table counts, for each rule, the unsafe blocks whose reason names it (0 for a
    rule no block needs any more)."""
    needed: dict[str, int] = {}
    for cells in _doc_rows().values():
        for entry in cells[4].split("<br>"):
            rules = set(re.findall(r"\bR(\d+)\b", entry))
            rules |= {"data-dependent"} if "data-dependent" in entry else set()
            assert entry == "—" or rules, f"no rule named in {entry!r}"
            for rule in rules:
                needed[rule] = needed.get(rule, 0) + 1
    listed = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| (?:R(\d+) |— (data-dependent)).*\| (\d+) \|$", line)
        if m:
            listed[m.group(1) or m.group(2)] = int(m.group(3))
    assert {rule: count for rule, count in listed.items() if count} == needed


def test_readme_links_the_gallery_doc():
    assert "](docs/gallery.md)" in (ROOT / "README.md").read_text()
