"""``unroll(range(...))`` becomes ``#pragma unroll`` (``#pragma unroll N`` with a factor) on the
loop it marks, and nothing else gains one: a plain ``range`` loop, constant or not, is left to
the device compiler.  The gallery's register-tiled SGEMM unrolls its inner product as the
hand-written CUDA of the same algorithm does (its PTX has the same count of FMAs)."""

from __future__ import annotations

import re
import sys

import pytest
from cuda.bindings import nvrtc as N

from gpu_native.cache import BuildRequest
from gpu_native.compiler import nvrtc as G
from gpu_native.rewrite import transpile_module
from tests.helpers import ROOT

SOURCE = """
from gpu_native import CUDASliceMut, FlatLayout1D, Kernel1D, f32, i32, gpu_kernel, unroll
N = 8


@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    s = f32(0.0)
    for a in unroll(range(N)):
        s += 1.0
    for b in unroll(range(n), 4):
        s += 2.0
    for c in range(N):
        s += 3.0
    for d in range(n):
        s += 4.0
    if i < len(out):
        out[i] = s
"""


def _pragma_before_each_loop(cuda: str) -> list[str | None]:
    """For each `range` loop of the source, in order, the pragma line just above it (or None)."""
    lines = [line.strip() for line in cuda.splitlines()]
    return [lines[n - 1] if lines[n - 1].startswith("#pragma") else None
            for n, line in enumerate(lines) if re.match(r"for \(\w+ __gn_i\d+ =", line)]


def test_the_pragma_marks_only_the_hinted_loops():
    (kernel,) = transpile_module(SOURCE, "/tmp/unroll.py", "unroll_pragma").kernels
    for variant in kernel.variants:
        # Each entry point (direct, and one thread per several uids) has the four loops.
        entries = variant.cuda.count('extern "C" __global__')
        assert entries >= 1
        assert _pragma_before_each_loop(variant.cuda) == entries * [
            "#pragma unroll", "#pragma unroll 4", None, None], variant.symbol


def _compile(source: str, symbol: str, options: list[str]) -> bytes:
    program = G.create_program(source.encode(), f"{symbol}.cu".encode())
    try:
        encoded = [o.encode() for o in options]
        err, = N.nvrtcCompileProgram(program, len(encoded), encoded)
        assert err == N.nvrtcResult.NVRTC_SUCCESS, G._program_log(program)
        return G._image(program, "ptx")
    finally:
        N.nvrtcDestroyProgram(program)


@pytest.mark.slow
def test_the_gallery_sgemm_unrolls_its_inner_product_as_the_hand_written_cuda():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from bench_suite import SGEMM_VECTORIZED_CUDA
    finally:
        sys.path.remove(str(ROOT / "tools"))
    path = ROOT / "examples" / "gallery" / "sgemm_vectorized.py"
    (kernel,) = transpile_module(path.read_text(), str(path), path.stem).kernels
    variant = kernel.variants[0]
    options = G.nvrtc_options(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                           arch="sm_90", max_registers=128), "compute_90")
    ours = _compile(variant.cuda, variant.symbol, options).decode(errors="replace")
    hand = _compile(SGEMM_VECTORIZED_CUDA, "hand", ["--gpu-architecture=compute_90",
                                                    "-std=c++17"]).decode(errors="replace")
    entries = ours.split(".entry ")[1:]  # the 64-bit and the 32-bit index entry points
    assert len(entries) == 2
    want = (hand.count("fma.rn.f32"), hand.count("ld.shared.v4"))
    assert want == (512, 32)  # 8 steps of 8 x 8 products, 4 vector loads each
    for entry in entries:
        assert (entry.count("fma.rn.f32"), entry.count("ld.shared.v4")) == want, \
            re.match(r"\w+", entry)

