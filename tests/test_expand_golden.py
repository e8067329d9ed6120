"""Golden tests of ``expand``: the rewritten module and the CUDA C++ of the seed example and every
example kernel are pinned.  Regenerate after an intended change with
``GPU_NATIVE_UPDATE_GOLDEN=1 pytest tests/test_expand_golden.py``, and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_native.rewrite import rewrite_module

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SOURCES = sorted(p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
UPDATE = os.environ.get("GPU_NATIVE_UPDATE_GOLDEN") == "1"


def _expand(name: str) -> tuple[str, str]:
    relative = f"examples/{name}"
    source = (ROOT / relative).read_text()
    result = rewrite_module(source, relative, name[:-3])
    cuda = "".join(v.cuda for k in result.kernels for v in k.variants)
    return result.source, cuda


@pytest.mark.parametrize("name", SOURCES)
def test_expand_matches_golden(name):
    host, cuda = _expand(name)
    for text, suffix in ((host, ".expanded.py"), (cuda, ".cu")):
        golden = GOLDEN / (name[:-3] + suffix)
        if UPDATE or not golden.exists():
            golden.write_text(text)
            if not UPDATE:
                pytest.fail(f"created {golden}; review it and run again")
        assert text == golden.read_text(), f"{golden.name} differs: rerun with " \
            "GPU_NATIVE_UPDATE_GOLDEN=1 if the change is intended"


@pytest.mark.parametrize("name", SOURCES)
def test_expand_keeps_every_line_in_place(name):
    source = (ROOT / "examples" / name).read_text()
    host, _ = _expand(name)
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
    host, cuda = _expand("vector_add.py")
    assert "def add_kernel(_gn_context):" in host
    assert "return lambda a, b, c: " in host
    assert "a.__class__ is _gn_DA and a.launch_sig is _gn_sig_a" in host
    assert 'extern "C" __global__ void gn_add_kernel(' in cuda
    assert "const float* __restrict__ a" in cuda
    assert '#line 26 "vector_add.py"' in cuda  # c[idx] = a[idx] + b[idx]


def test_expand_cli_prints_the_same_module(capsys):
    from gpu_native.cli import main

    path = ROOT / "examples" / "saxpy.py"
    assert main(["expand", str(path), "--module", "saxpy"]) == 0
    out = capsys.readouterr().out
    assert out == rewrite_module(path.read_text(), str(path), "saxpy").source
    assert main(["expand", str(path), "--cuda", "--kernel", "saxpy_kernel"]) == 0
    assert "gn_saxpy_kernel" in capsys.readouterr().out
    assert main(["expand", str(path), "--cuda", "--kernel", "nope"]) == 2
