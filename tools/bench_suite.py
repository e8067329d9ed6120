"""The performance suite: gpu_native against its peers, side by side, in one run.

For each kernel the suite runs, on the same inputs and the same GPU: gpu_native's kernel from
``examples/`` (bounds checks on, launched exactly as the example does), the same kernel with
``bounds_check=False``, the same algorithm hand-written in CUDA C++ with the same launch
configuration (CuPy ``RawKernel``, NVRTC with the same options), Numba-CUDA (in its own process),
Triton where it applies, and the library call a user would otherwise make (PyTorch / cuBLAS).
Every variant's output is checked before it is timed; times are medians of CUDA-event timings
after a warm-up; inputs are several times larger than the 60 MB L2 and random.  The run ends
with the launch-overhead table (tools/bench_launch.py) and, unless ``--quick`` or ``--only``, the
time to first result in fresh processes (tools/bench_startup.py), and, where nvdisasm or
cuobjdump is installed, the SASS instruction mix of the GEMMs run (tools/sass_mix.py).

    python tools/bench_suite.py --out DIR [--quick] [--numba-pythonpath PATH] [--docs]
    python tools/bench_suite.py --out DIR --only sgemm_tiled    # one benchmark (or several, a,b)
    python tools/bench_suite.py --out DIR --only sgemm_vectorized
    python tools/bench_suite.py --out DIR --only hgemm_tc,bgemm_tc,hgemm_wgmma,bgemm_wgmma,gemm_bias_gelu,gemm_bias_gelu_wgmma,sgemm_tf32
    python tools/bench_suite.py --out DIR --only horner_half2     # vec2h against scalar f16
    python tools/bench_suite.py --out DIR --chart-from OLD/bench.json  # redraw a run's chart

writes ``DIR/bench.json``, ``DIR/bench.md`` (the table) and ``DIR/bench.png`` (the chart); with
``--docs`` also ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "examples" / "gallery"))
sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))
sys.path.insert(0, str(ROOT / "tools"))

from _bench_half2 import Half2Benches  # noqa: E402
from _bench_hgemm import TensorCoreBenches  # noqa: E402

import gpu_native as gn  # noqa: E402


@dataclass
class Row:
    bench: str
    variant: str
    ms: float | None
    value: float | None  # TB/s or TFLOP/s
    unit: str
    ok: bool | None
    note: str = ""


WARM_SECONDS = 0.2


def timed(fn, iters: int = 20, warmup: int = 3, reps: int = 5) -> float:
    """Median milliseconds per call of ``fn``, from CUDA events on the legacy default stream
    (which every library here launches on, so the events bracket their kernels too).  Each sample
    times ``reps`` calls back to back, so host-side launch costs overlap with device work instead
    of showing up as idle time between the events; and one more call goes ahead of each
    sample's start event, so the device is busy while the host launches the sample's first call
    (else that call's host-side cost, 5 to 40 us by library, fell inside the sample, and a
    slower launcher read as a slower kernel)."""
    for _ in range(warmup):
        fn()
    gn.synchronize()
    # Then at least WARM_SECONDS of back-to-back calls: a variant timed right after a run-time
    # compilation (seconds of an idle GPU) otherwise meets clocks still ramping up (seen: a
    # bf16 GEMM's first variant 13% slower than the same code timed next).
    start = time.perf_counter()
    while time.perf_counter() - start < WARM_SECONDS:
        for _ in range(reps):
            fn()
        gn.synchronize()
    times = []
    for _ in range(iters):
        start, end = gn.Event(), gn.Event()
        fn()
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    gn.synchronize()
    return statistics.median(times)


def unchecked_source(module_name: str) -> str:
    """The source of ``examples/<module_name>.py`` (``module_name`` may name a subfolder:
    ``"gallery/sgemm_register_tiled"``) with every kernel declared ``bounds_check=False``."""
    source = (ROOT / "examples" / f"{module_name}.py").read_text()
    for kind in ("Kernel1D", "Kernel2D", "Kernel3D"):
        source = source.replace(f"@gpu_kernel({kind}", f"@gpu_kernel({kind}, bounds_check=False")
    return source


def unchecked(module_name: str):
    """The example module with every kernel declared ``bounds_check=False`` (same source
    otherwise, see :func:`unchecked_source`), imported from a temporary directory."""
    source = unchecked_source(module_name)
    directory = Path(tempfile.gettempdir()) / "gpu_native_bench"
    directory.mkdir(exist_ok=True)
    name = f"{Path(module_name).name}_unchecked"
    (directory / f"{name}.py").write_text(source)
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    importlib.invalidate_caches()
    return importlib.import_module(name)


# The register-tiled SGEMM of examples/gallery/sgemm_register_tiled.py, hand-written: a block of
# TX x TY threads computes a BM x BN tile of C; per BK-deep step it stages A[BM][BK] and B[BK][BN]
# in shared memory (each thread loads BM * BK / THREADS elements of each, at flat index
# tid + load * THREADS split with / and %, zero outside the matrices), then each thread
# accumulates its TM x TN outputs in registers from TM values of A and TN values of B per k.
# The tile sizes are prepended by sgemm_tiled_cuda() from the gallery module's constants.
SGEMM_TILED_BODY = r"""
constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;

extern "C" __global__ void sgemm_register_tiled(const float* __restrict__ A,
        const float* __restrict__ B, float* __restrict__ C, int M, int K, int N) {
    __shared__ float tile_a[BM][BK];
    __shared__ float tile_b[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * TX + tx;
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
    float acc[TM][TN];
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float reg_a[TM], reg_b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int load = 0; load < BM * BK / THREADS; ++load) {
            const int flat = tid + load * THREADS;
            const int r = flat / BK, k = flat % BK;
            tile_a[r][k] = (block_row + r < M && k0 + k < K)
                ? A[(long long)(block_row + r) * K + k0 + k] : 0.0f;
        }
        for (int load = 0; load < BK * BN / THREADS; ++load) {
            const int flat = tid + load * THREADS;
            const int k = flat / BN, col = flat % BN;
            tile_b[k][col] = (k0 + k < K && block_col + col < N)
                ? B[(long long)(k0 + k) * N + block_col + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            for (int i = 0; i < TM; ++i) reg_a[i] = tile_a[ty * TM + i][k];
            for (int j = 0; j < TN; ++j) reg_b[j] = tile_b[k][tx * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += reg_a[i] * reg_b[j];
        }
        __syncthreads();
    }
    const int row0 = block_row + ty * TM, col0 = block_col + tx * TN;
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            if (row0 + i < M && col0 + j < N) C[(long long)(row0 + i) * N + col0 + j] = acc[i][j];
}
"""


def sgemm_tiled_cuda(bm: int, bn: int, bk: int, tm: int, tn: int) -> str:
    """The hand-written CUDA C++ of the register-tiled SGEMM (kernel ``sgemm_register_tiled``)
    for these tile sizes: a ``bm x bn`` tile of C per block, ``bk``-deep shared slices, a
    ``tm x tn`` register tile per thread, launched with ``(bn // tn, bm // tm)`` threads."""
    return (f"constexpr int BM = {bm}, BN = {bn}, BK = {bk}, TM = {tm}, TN = {tn};\n"
            + SGEMM_TILED_BODY)


# The vectorised SGEMM of examples/gallery/sgemm_vectorized.py, hand-written: 256 threads compute
# a 128 x 128 tile of C, 8 x 8 outputs each (four 4 x 4 quadrants 64 rows and columns apart).  Per
# 8-deep step each thread loads one float4 of A and one of B into registers (zero outside the
# matrices), multiplies the previous step's slices from one half of the double-buffered shared
# tiles (A transposed), then stores its float4s into the other half; one barrier per step.
SGEMM_VECTORIZED_CUDA = r"""
constexpr int BM = 128, BN = 128, BK = 8, THREADS = 256, TX = 16, HALF = 64;

extern "C" __global__ void __launch_bounds__(THREADS, 2) sgemm_vectorized(
        const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
        int M, int K, int N) {
    __shared__ __align__(16) float tile_a[2][BK][BM];
    __shared__ float4 tile_b[2][BK][BN / 4];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
    const int a_row = tid / 2, a_k = (tid % 2) * 4, b_k = tid / 32, b_c4 = tid % 32;
    float acc[8][8];
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    float reg_a[8], reg_b[8];
    const int steps = (K + BK - 1) / BK;
    for (int step = 0; step <= steps; ++step) {
        const int buf = step % 2, k0 = step * BK;
        float4 va = make_float4(0.f, 0.f, 0.f, 0.f), vb = va;
        if (step < steps) {
            if (block_row + a_row < M && k0 + a_k < K)
                va = *reinterpret_cast<const float4*>(&A[(long long)(block_row + a_row) * K + k0 + a_k]);
            if (k0 + b_k < K && block_col + b_c4 * 4 < N)
                vb = *reinterpret_cast<const float4*>(&B[(long long)(k0 + b_k) * N + block_col + b_c4 * 4]);
        }
        if (step > 0) {
            const int prev = 1 - buf;
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                const float4 a_lo = *reinterpret_cast<const float4*>(&tile_a[prev][k][ty * 4]);
                const float4 a_hi = *reinterpret_cast<const float4*>(&tile_a[prev][k][ty * 4 + HALF]);
                const float4 b_lo = tile_b[prev][k][tx], b_hi = tile_b[prev][k][tx + TX];
                reg_a[0] = a_lo.x; reg_a[1] = a_lo.y; reg_a[2] = a_lo.z; reg_a[3] = a_lo.w;
                reg_a[4] = a_hi.x; reg_a[5] = a_hi.y; reg_a[6] = a_hi.z; reg_a[7] = a_hi.w;
                reg_b[0] = b_lo.x; reg_b[1] = b_lo.y; reg_b[2] = b_lo.z; reg_b[3] = b_lo.w;
                reg_b[4] = b_hi.x; reg_b[5] = b_hi.y; reg_b[6] = b_hi.z; reg_b[7] = b_hi.w;
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] += reg_a[i] * reg_b[j];
            }
        }
        if (step < steps) {
            tile_a[buf][a_k][a_row] = va.x;
            tile_a[buf][a_k + 1][a_row] = va.y;
            tile_a[buf][a_k + 2][a_row] = va.z;
            tile_a[buf][a_k + 3][a_row] = va.w;
            tile_b[buf][b_k][b_c4] = vb;
        }
        __syncthreads();
    }
    for (int hi = 0; hi < 2; ++hi)
        for (int i = 0; i < 4; ++i) {
            const int row = block_row + ty * 4 + hi * HALF + i;
            for (int hj = 0; hj < 2; ++hj)
                for (int j = 0; j < 4; ++j) {
                    const int col = block_col + tx * 4 + hj * HALF + j;
                    if (row < M && col < N) C[(long long)row * N + col] = acc[hi * 4 + i][hj * 4 + j];
                }
        }
}
"""


class Suite(TensorCoreBenches, Half2Benches):
    def __init__(self, quick: bool):
        import cupy as cp
        import torch

        self.cp = cp
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.quick = quick
        self.rows: list[Row] = []
        self.gen = torch.Generator(device="cuda").manual_seed(1234)
        try:
            import triton  # noqa: F401

            self.triton = True
        except Exception:
            self.triton = False

    # For the benchmarks defined in other modules (tools/_bench_hgemm.py).
    timed = staticmethod(timed)
    unchecked = staticmethod(unchecked)

    def add(self, bench, variant, ms, work, unit, ok, note=""):
        value = None if ms is None else work / (ms * 1e-3) / 1e12
        self.rows.append(Row(bench, variant, ms, value, unit, ok, note))
        shown = "-" if ms is None else f"{ms:9.3f} ms  {value:7.2f} {unit}"
        print(f"  {bench:14s} {variant:40s} {shown}  {'ok' if ok else ok}  {note}", flush=True)

    def randn(self, *shape):
        return self.torch.randn(*shape, device="cuda", generator=self.gen, dtype=self.torch.float32)

    def raw(self, source: str, name: str):
        return self.cp.RawKernel(source, name, options=("--std=c++17", "-lineinfo"))

    # ---- vector add ---------------------------------------------------------------------------

    def vector_add(self):
        import vector_add as ex

        torch, cp = self.torch, self.cp
        n = 1 << (24 if self.quick else 28)
        work = 3 * 4 * n
        a, b = self.randn(n), self.randn(n)
        ref = a + b
        c = torch.full_like(a, float("nan"))

        def check():
            ok = bool(torch.equal(c, ref))
            c.fill_(float("nan"))
            return ok

        bench = "vector_add"
        ga, gb, gc = gn.to_device(a), gn.to_device(b), gn.to_device(c)  # zero-copy views
        ms = timed(lambda: ex.add(ga, gb, gc))
        self.add(bench, "gpu_native (seed: 128 threads, 1 uid/thread)", ms, work, "TB/s", check())
        from gpu_native.runtime import kernel as K

        K.UID_REMAP = False
        K.forget_launchers()
        ms = timed(lambda: ex.add(ga, gb, gc))
        self.add(bench, "gpu_native, uid remapping off", ms, work, "TB/s", check())
        K.UID_REMAP = True
        K.forget_launchers()
        un = unchecked("vector_add")
        ms = timed(lambda: un.add(ga, gb, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TB/s", check())
        k = self.raw(r"""extern "C" __global__ void add(const float* __restrict__ a,
            const float* __restrict__ b, float* __restrict__ c, long long n) {
            long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) c[i] = a[i] + b[i]; }""", "add")
        ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
        grid = (n + 127) // 128
        ms = timed(lambda: k((grid,), (128,), (ca, cb, cc, np.int64(n))))
        self.add(bench, "CUDA C++, same launch (128 threads)", ms, work, "TB/s", check())
        k4 = self.raw(r"""extern "C" __global__ void add4(const float4* __restrict__ a,
            const float4* __restrict__ b, float4* __restrict__ c, long long n4) {
            for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
                 i += (long long)gridDim.x * blockDim.x) {
                float4 x = a[i], y = b[i];
                c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); } }""", "add4")
        blocks = 132 * 8
        ms = timed(lambda: k4((blocks,), (256,), (ca, cb, cc, np.int64(n // 4))))
        self.add(bench, "CUDA C++, float4 grid-stride", ms, work, "TB/s", check())
        ms = timed(lambda: torch.add(a, b, out=c))
        self.add(bench, "torch.add", ms, work, "TB/s", check())
        d = torch.empty_like(a)
        ms = timed(lambda: d.copy_(a))
        self.add(bench, "device-to-device copy (floor)", ms, 2 * 4 * n, "TB/s", True)
        if self.triton:
            self.triton_add(a, b, c, check, work)

    def triton_add(self, a, b, c, check, work):
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs,
                                                                                  mask=mask),
                     mask=mask)

        n = a.numel()
        ms = timed(lambda: add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024))
        self.add("vector_add", "Triton (BLOCK=1024)", ms, work, "TB/s", check())

    # ---- block reduction ------------------------------------------------------------------------

    def index64(self, bench: str, run, work, unit: str, check, iters=None) -> None:
        """The same launch through the kernel's main, 64-bit index entry point (what
        GPU_NATIVE_INDEX32=0 runs): how much the 32-bit index entry point gains."""
        from gpu_native.runtime import kernel as K

        K.INDEX32 = False
        K.forget_launchers()
        try:
            ms = timed(run) if iters is None else timed(run, iters=iters, reps=2)
        finally:
            K.INDEX32 = True
            K.forget_launchers()
        self.add(bench, "gpu_native, 64-bit indices (GPU_NATIVE_INDEX32=0)", ms, work, unit,
                 check())

    def block_reduce(self):
        import block_reduce as ex

        torch, cp = self.torch, self.cp
        n = 1 << (24 if self.quick else 28)
        work = 4 * n
        x = self.randn(n)
        exact = float(x.double().sum())
        scale = float(x.abs().double().sum())
        blocks = 132 * 8
        partial = torch.empty(blocks, device="cuda")

        def ok_sum(value):
            return abs(value - exact) <= 1e-5 * scale

        bench = "block_reduce"
        gx, gpart = gn.to_device(x), gn.to_device(partial)
        launch = ex.block_sum_kernel.launch(gn.GridDim1D(blocks), gn.BlockDim1D(ex.THREADS))
        ms = timed(lambda: launch(gx, gpart))
        self.add(bench, "gpu_native (examples/block_reduce)", ms, work, "TB/s",
                 ok_sum(float(partial.double().sum())))
        grid1, block1 = gn.GridDim1D(blocks), gn.BlockDim1D(ex.THREADS)
        self.index64(bench, lambda: ex.block_sum_kernel.launch(grid1, block1)(gx, gpart), work,
                     "TB/s", lambda: ok_sum(float(partial.double().sum())))
        un = unchecked("block_reduce")
        launch_un = un.block_sum_kernel.launch(gn.GridDim1D(blocks), gn.BlockDim1D(un.THREADS))
        ms = timed(lambda: launch_un(gx, gpart))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TB/s",
                 ok_sum(float(partial.double().sum())))
        k = self.raw(r"""extern "C" __global__ void block_sum(const float* __restrict__ x,
            long long n, float* __restrict__ partial) {
            __shared__ float cache[256];
            int tid = threadIdx.x;
            float total = 0.0f;
            for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n;
                 i += (long long)gridDim.x * blockDim.x) total += x[i];
            cache[tid] = total;
            __syncthreads();
            for (int s = 128; s > 32; s /= 2) {
                if (tid < s) cache[tid] += cache[tid + s];
                __syncthreads();
            }
            if (tid < 32) {
                float v = cache[tid] + cache[tid + 32];
                for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
                if (tid == 0) partial[blockIdx.x] = v;
            } }""", "block_sum")
        cx, cpart = cp.asarray(x), cp.asarray(partial)
        ms = timed(lambda: k((blocks,), (256,), (cx, np.int64(n), cpart)))
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TB/s",
                 ok_sum(float(partial.double().sum())))
        ms = timed(lambda: torch.sum(x))
        self.add(bench, "torch.sum", ms, work, "TB/s", ok_sum(float(torch.sum(x))))
        if self.triton:
            import triton
            import triton.language as tl

            @triton.jit
            def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))

            acc = torch.zeros(1, device="cuda")

            def triton_sum():
                acc.zero_()
                sum_kernel[(triton.cdiv(n, 4096),)](x, acc, n, BLOCK=4096)

            ms = timed(triton_sum)
            self.add(bench, "Triton (tl.sum per block + atomic)", ms, work, "TB/s",
                     ok_sum(float(acc)))

    # ---- SGEMM --------------------------------------------------------------------------------

    def sgemm_problem(self):
        """Square SGEMM inputs (4096, or 1024 with ``--quick``), the NaN-filled output ``c`` and
        ``check()``: ``c`` within 1e-4 relative Frobenius error of the float64 product (then
        refilled with NaN)."""
        torch = self.torch
        m = 1024 if self.quick else 4096
        a, b = self.randn(m, m), self.randn(m, m)
        ref = (a.double() @ b.double())
        c = torch.full((m, m), float("nan"), device="cuda")

        def check():
            rel = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
            c.fill_(float("nan"))
            return rel < 1e-4

        return m, a, b, c, check

    def sgemm(self):
        import sgemm as ex

        torch, cp = self.torch, self.cp
        m, a, b, c, check = self.sgemm_problem()
        work = 2.0 * m * m * m
        bench = "sgemm"
        ga, gb, gc = gn.to_device(a), gn.to_device(b), gn.to_device(c)
        ms = timed(lambda: ex.sgemm(ga, gb, gc), iters=10, reps=2)
        self.add(bench, "gpu_native (examples/sgemm, 32x32 tiles)", ms, work, "TFLOP/s", check())
        self.index64(bench, lambda: ex.sgemm(ga, gb, gc), work, "TFLOP/s", check, iters=10)
        un = unchecked("sgemm")
        ms = timed(lambda: un.sgemm(ga, gb, gc), iters=10, reps=2)
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", check())
        k = self.raw(r"""extern "C" __global__ void sgemm(const float* __restrict__ A,
            const float* __restrict__ B, float* __restrict__ C, int M, int K, int N) {
            __shared__ float ta[32][32];
            __shared__ float tb[32][32];
            int tx = threadIdx.x, ty = threadIdx.y;
            int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
            float acc = 0.0f;
            for (int t = 0; t < K; t += 32) {
                ta[ty][tx] = (row < M && t + tx < K) ? A[(long long)row * K + t + tx] : 0.0f;
                tb[ty][tx] = (t + ty < K && col < N) ? B[(long long)(t + ty) * N + col] : 0.0f;
                __syncthreads();
                for (int k = 0; k < 32; ++k) acc += ta[ty][k] * tb[k][tx];
                __syncthreads();
            }
            if (row < M && col < N) C[(long long)row * N + col] = acc; }""", "sgemm")
        ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
        grid = ((m + 31) // 32, (m + 31) // 32)
        ms = timed(lambda: k(grid, (32, 32), (ca, cb, cc, np.int32(m), np.int32(m),
                                              np.int32(m))), iters=10, reps=2)
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TFLOP/s", check())
        ms = timed(lambda: torch.matmul(a, b, out=c), iters=10, reps=2)
        self.add(bench, "torch.matmul (cuBLAS, fp32, no TF32)", ms, work, "TFLOP/s", check())

    def sgemm_tiled(self):
        import sgemm
        import sgemm_register_tiled as ex

        torch, cp = self.torch, self.cp
        m, a, b, c, check = self.sgemm_problem()
        work = 2.0 * m * m * m

        def measure(fn):
            # One launch checked before timing, and the timed launches' output after; each check
            # refills c with NaN, so no variant is credited with an earlier one's output.
            fn()
            first = check()
            ms = timed(fn, iters=10, reps=2)
            last = check()
            return ms, first and last

        bench = "sgemm_tiled"
        ga, gb, gc = gn.to_device(a), gn.to_device(b), gn.to_device(c)
        ms, ok = measure(lambda: ex.sgemm_register_tiled(ga, gb, gc))
        self.add(bench, f"gpu_native (gallery/sgemm_register_tiled, {ex.BM}x{ex.BN} tiles, "
                 f"{ex.TM}x{ex.TN} per thread)", ms, work, "TFLOP/s", ok)
        un = unchecked("gallery/sgemm_register_tiled")
        ms, ok = measure(lambda: un.sgemm_register_tiled(ga, gb, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", ok)
        k = self.raw(sgemm_tiled_cuda(ex.BM, ex.BN, ex.BK, ex.TM, ex.TN), "sgemm_register_tiled")
        ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
        grid = ((m + ex.BN - 1) // ex.BN, (m + ex.BM - 1) // ex.BM)
        args = (ca, cb, cc, np.int32(m), np.int32(m), np.int32(m))
        ms, ok = measure(lambda: k(grid, (ex.TX, ex.TY), args))
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TFLOP/s", ok)
        ms, ok = measure(lambda: torch.matmul(a, b, out=c))
        self.add(bench, "torch.matmul (cuBLAS, fp32, no TF32)", ms, work, "TFLOP/s", ok)
        ms, ok = measure(lambda: sgemm.sgemm(ga, gb, gc))
        self.add(bench, "gpu_native, examples/sgemm (32x32 tiles, 1 output/thread)", ms, work,
                 "TFLOP/s", ok)

    def sgemm_vectorized(self):
        import sgemm_vectorized as ex

        torch, cp = self.torch, self.cp
        m, a, b, c, check = self.sgemm_problem()
        work = 2.0 * m * m * m

        def measure(fn):
            # As in sgemm_tiled: one checked launch, then the timed launches' output checked.
            fn()
            first = check()
            ms = timed(fn, iters=10, reps=2)
            last = check()
            return ms, first and last

        bench = "sgemm_vectorized"
        ga, gb, gc = gn.to_device(a), gn.to_device(b), gn.to_device(c)
        ms, ok = measure(lambda: ex.sgemm_vectorized(ga, gb, gc))
        self.add(bench, f"gpu_native (gallery/sgemm_vectorized, {ex.BM}x{ex.BN} tiles, 8x8 per "
                 "thread, load_vec4)", ms, work, "TFLOP/s", ok)
        un = unchecked("gallery/sgemm_vectorized")
        ms, ok = measure(lambda: un.sgemm_vectorized(ga, gb, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", ok)
        k = self.raw(SGEMM_VECTORIZED_CUDA, "sgemm_vectorized")
        ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
        grid = ((m + ex.BN - 1) // ex.BN, (m + ex.BM - 1) // ex.BM)
        args = (ca, cb, cc, np.int32(m), np.int32(m), np.int32(m))
        ms, ok = measure(lambda: k(grid, (ex.THREADS, 1), args))
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TFLOP/s", ok)
        ms, ok = measure(lambda: torch.matmul(a, b, out=c))
        self.add(bench, "torch.matmul (cuBLAS, fp32, no TF32)", ms, work, "TFLOP/s", ok)

    # ---- transpose ----------------------------------------------------------------------------

    def transpose_problem(self):
        """``(s, work, src, dst, check)``: an ``s x s`` matrix, the bytes a transpose moves, and
        ``check()``, whether ``dst`` holds ``src`` transposed (it refills ``dst`` with NaN)."""
        torch = self.torch
        s = 4096 if self.quick else 16384
        src = self.randn(s, s)
        ref = src.t().contiguous()
        dst = torch.full((s, s), float("nan"), device="cuda")

        def check():
            ok = bool(torch.equal(dst, ref))
            dst.fill_(float("nan"))
            return ok

        return s, 2 * 4 * s * s, src, dst, check

    def with_and_without_checks(self, bench: str, example: str, src, dst, work, check) -> None:
        """The rows of ``examples/<example>.py``'s ``transpose(src, dst)``, as written and with
        ``bounds_check=False`` (``example`` as :func:`unchecked_source` takes it)."""
        module = importlib.import_module(Path(example).name)
        ms = timed(lambda: module.transpose(src, dst))
        label = example if "/" in example else f"examples/{example}"
        self.add(bench, f"gpu_native ({label})", ms, work, "TB/s", check())
        un = unchecked(example)
        ms = timed(lambda: un.transpose(src, dst))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TB/s", check())

    def transpose(self):
        import transpose as ex

        cp = self.cp
        s, work, src, dst, check = self.transpose_problem()
        bench = "transpose"
        gsrc, gdst = gn.to_device(src), gn.to_device(dst)
        self.with_and_without_checks(bench, "transpose", gsrc, gdst, work, check)
        self.index64(bench, lambda: ex.transpose(gsrc, gdst), work, "TB/s", check)
        k = self.raw(r"""extern "C" __global__ void transpose(const float* __restrict__ src,
            float* __restrict__ dst, int rows, int cols) {
            __shared__ float tile[32][33];
            int tx = threadIdx.x, ty = threadIdx.y;
            int x = blockIdx.x * 32 + tx, y = blockIdx.y * 32 + ty;
            if (y < rows && x < cols) tile[ty][tx] = src[(long long)y * cols + x];
            __syncthreads();
            int ox = blockIdx.y * 32 + tx, oy = blockIdx.x * 32 + ty;
            if (oy < cols && ox < rows) dst[(long long)oy * rows + ox] = tile[tx][ty]; }""",
                     "transpose")
        cs, cd = cp.asarray(src), cp.asarray(dst)
        ms = timed(lambda: k((s // 32, s // 32), (32, 32), (cs, cd, np.int32(s), np.int32(s))))
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TB/s", check())
        ms = timed(lambda: dst.copy_(src.t()))
        self.add(bench, "torch: dst.copy_(src.t())", ms, work, "TB/s", check())

    def transpose_diagonal(self):
        """The gallery's transposeDiagonal (tiles taken along the grid's diagonals, 32 x 8
        threads per 32 x 32 tile) beside the gallery's row-order transpose of the same tile and
        launch (transpose_padded) and the same diagonal algorithm hand-written in CUDA C++."""
        import transpose_padded as rows

        cp = self.cp
        s, work, src, dst, check = self.transpose_problem()
        bench = "transpose_diagonal"
        gsrc, gdst = gn.to_device(src), gn.to_device(dst)
        self.with_and_without_checks(bench, "gallery/transpose_diagonal", gsrc, gdst, work, check)
        ms = timed(lambda: rows.transpose(gsrc, gdst))
        self.add(bench, "gpu_native, row order (gallery/transpose_padded)", ms, work, "TB/s",
                 check())
        k = self.raw(r"""extern "C" __global__ void transpose_diagonal(
            const float* __restrict__ src, float* __restrict__ dst, int rows, int cols) {
            __shared__ float tile[32][33];
            int tx = threadIdx.x, ty = threadIdx.y;
            int bid = blockIdx.x + gridDim.x * blockIdx.y;
            int tile_row = bid % gridDim.y;
            int tile_col = (bid / gridDim.y + tile_row) % gridDim.x;
            int x = tile_col * 32 + tx, y = tile_row * 32 + ty;
            for (int j = 0; j < 32; j += 8)
                if (y + j < rows && x < cols) tile[ty + j][tx] = src[(long long)(y + j) * cols + x];
            __syncthreads();
            int ox = tile_row * 32 + tx, oy = tile_col * 32 + ty;
            for (int j = 0; j < 32; j += 8)
                if (oy + j < cols && ox < rows) dst[(long long)(oy + j) * rows + ox] = tile[tx][ty + j];
        }""", "transpose_diagonal")
        cs, cd = cp.asarray(src), cp.asarray(dst)
        ms = timed(lambda: k((s // 32, s // 32), (32, 8), (cs, cd, np.int32(s), np.int32(s))))
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TB/s", check())
        ms = timed(lambda: dst.copy_(src.t()))
        self.add(bench, "torch: dst.copy_(src.t())", ms, work, "TB/s", check())

    # ---- 2-D stencil --------------------------------------------------------------------------

    def stencil(self):
        import heat_stencil as ex

        torch, cp = self.torch, self.cp
        s = 4096 if self.quick else 16384
        work = 2 * 4 * s * s
        u = self.randn(s, s)
        alpha = 0.2
        ref = u.clone()
        around = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
        ref[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha * (around - 4.0 * u[1:-1, 1:-1])
        out = torch.full((s, s), float("nan"), device="cuda")

        def check():
            ok = bool(torch.allclose(out, ref, atol=1e-5))
            out.fill_(float("nan"))
            return ok

        bench = "stencil"
        grid, block = gn.GridDim2D(s // 16, s // 16), gn.BlockDim2D(16, 16)
        gu, gout = gn.to_device(u), gn.to_device(out)
        launch = ex.heat_step.launch(grid, block)
        ms = timed(lambda: launch(gu, gout, alpha))
        self.add(bench, "gpu_native (examples/heat_stencil)", ms, work, "TB/s", check())
        self.index64(bench, lambda: ex.heat_step.launch(grid, block)(gu, gout, alpha), work,
                     "TB/s", check)
        un = unchecked("heat_stencil")
        launch_un = un.heat_step.launch(grid, block)
        ms = timed(lambda: launch_un(gu, gout, alpha))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TB/s", check())
        k = self.raw(r"""extern "C" __global__ void heat(const float* __restrict__ src,
            float* __restrict__ dst, float alpha, int h, int w) {
            int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
            if (y >= h || x >= w) return;
            long long i = (long long)y * w + x;
            if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { dst[i] = src[i]; return; }
            float c = src[i];
            float around = src[i - w] + src[i + w] + src[i - 1] + src[i + 1];
            dst[i] = c + alpha * (around - 4.0f * c); }""", "heat")
        cu, co = cp.asarray(u), cp.asarray(out)
        ms = timed(lambda: k((s // 16, s // 16), (16, 16), (cu, co, np.float32(alpha), np.int32(s),
                                                            np.int32(s))))
        self.add(bench, "CUDA C++, same algorithm and launch", ms, work, "TB/s", check())

        def torch_step():
            out[0, :], out[-1, :], out[:, 0], out[:, -1] = u[0, :], u[-1, :], u[:, 0], u[:, -1]
            c = u[1:-1, 1:-1]
            out[1:-1, 1:-1] = c + alpha * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2]
                                           + u[1:-1, 2:] - 4.0 * c)

        ms = timed(torch_step)
        self.add(bench, "torch (slicing arithmetic)", ms, work, "TB/s", check())

    # ---- Numba, in its own process ------------------------------------------------------------

    def numba(self, pythonpath: str | None):
        works = {"vector_add": (3 * 4 * (1 << (24 if self.quick else 28)), "TB/s"),
                 "block_reduce": (4 * (1 << (24 if self.quick else 28)), "TB/s"),
                 "sgemm": (2.0 * (1024 if self.quick else 4096) ** 3, "TFLOP/s"),
                 "transpose": (2 * 4 * (4096 if self.quick else 16384) ** 2, "TB/s"),
                 "stencil": (2 * 4 * (4096 if self.quick else 16384) ** 2, "TB/s")}
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
        cmd = [sys.executable, str(ROOT / "tools" / "bench_numba.py"), "--json", path]
        if self.quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError):
            data = {"error": (proc.stderr or proc.stdout)[-500:]}
        if "error" in data:
            print(f"  numba: {data['error']}")
            for bench, (work, unit) in works.items():
                self.add(bench, "Numba-CUDA", None, work, unit, None, "not measured")
            return
        for bench, result in data["results"].items():
            work, unit = works[bench]
            self.add(bench, f"Numba-CUDA {data['numba']}", result["ms"], work, unit,
                     result["ok"])


BENCHES = ("vector_add", "block_reduce", "sgemm", "sgemm_tiled", "sgemm_vectorized", "transpose",
           "transpose_diagonal", "stencil", "hgemm_tc", "bgemm_tc", "hgemm_wgmma", "bgemm_wgmma", "gemm_bias_gelu",
           "gemm_bias_gelu_wgmma", "sgemm_tf32", "horner_half2")
"""The benchmarks, in run order: each is a method of :class:`Suite`."""


def ratios(rows: list[Row]) -> dict[str, dict[str, float]]:
    """gpu_native's speed relative to each peer (>1: gpu_native is faster)."""
    out: dict[str, dict[str, float]] = {}
    by_bench: dict[str, list[Row]] = {}
    for r in rows:
        by_bench.setdefault(r.bench, []).append(r)
    for bench, rs in by_bench.items():
        ours = next((r for r in rs if r.variant.startswith("gpu_native (")), None)
        unchecked_row = next((r for r in rs if "bounds_check=False" in r.variant), None)
        if ours is None or ours.ms is None:
            continue
        entry = {}
        for r in rs:
            if r is ours or r.ms is None or "floor" in r.variant:
                continue
            entry[r.variant] = r.ms / ours.ms
        if unchecked_row is not None and unchecked_row.ms:
            entry["bounds-check overhead"] = ours.ms / unchecked_row.ms - 1.0
        out[bench] = entry
    return out


def markdown(rows: list[Row], meta: dict, extra: dict) -> str:
    lines = ["# Benchmarks\n", f"Device: {meta['device']} — {meta['date']} — "
             f"`{meta['command']}`\n", "Each value is a median of CUDA-event timings in one run; "
             "ratios are gpu_native's speed relative to the peer (above 1.00: gpu_native is "
             "faster).\n"]
    by_bench: dict[str, list[Row]] = {}
    for r in rows:
        by_bench.setdefault(r.bench, []).append(r)
    rel = ratios(rows)
    for bench, rs in by_bench.items():
        lines.append(f"\n## {bench}\n")
        lines.append("| variant | time (ms) | throughput | correct | gpu_native vs this |")
        lines.append("|---|---:|---:|:---:|---:|")
        for r in rs:
            t = "-" if r.ms is None else f"{r.ms:.3f}"
            v = "-" if r.value is None else f"{r.value:.2f} {r.unit}"
            ratio = rel.get(bench, {}).get(r.variant)
            rtext = "" if ratio is None else f"{ratio:.2f}x"
            ok = "-" if r.ok is None else ("yes" if r.ok else "**NO**")
            lines.append(f"| {r.variant} | {t} | {v} | {ok} | {rtext} |")
        overhead = rel.get(bench, {}).get("bounds-check overhead")
        if overhead is not None:
            lines.append(f"\nBounds-check overhead: {overhead * 100:+.1f}%")
    for title, table in extra.items():
        lines.append(f"\n## {title}\n")
        lines.append(table)
    return "\n".join(lines) + "\n"


CHART_COLUMNS = 5


def chart(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_bench: dict[str, list[Row]] = {}
    for r in rows:
        if r.value is not None and "floor" not in r.variant:
            by_bench.setdefault(r.bench, []).append(r)
    # At most CHART_COLUMNS panels a row: with every benchmark in one row the chart is too wide
    # to read where a page shows it.
    columns = min(CHART_COLUMNS, len(by_bench))
    grid_rows = -(-len(by_bench) // columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(4.2 * columns, 5 * grid_rows),
                             squeeze=False)
    for ax in axes.flat[len(by_bench):]:
        ax.set_visible(False)
    for ax, (bench, rs) in zip(axes.flat, by_bench.items()):
        names = ["\n".join(textwrap.wrap(r.variant, 30)) for r in rs]
        colors = ["#2a7ab0" if r.variant.startswith("gpu_native") else "#999999" for r in rs]
        ax.barh(range(len(rs)), [r.value for r in rs], color=colors)
        ax.set_yticks(range(len(rs)), names, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(bench)
        ax.set_xlabel(rs[0].unit)
    fig.suptitle("gpu_native (blue) and its peers, one run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def startup_table(numba_pythonpath: str | None) -> tuple[str, dict]:
    """Run tools/bench_startup.py (it needs fresh processes) and format its figures."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    cmd = [sys.executable, str(ROOT / "tools" / "bench_startup.py"), "--repeat", "3", "--json",
           path]
    if numba_pythonpath:
        cmd += ["--numba-pythonpath", numba_pythonpath]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return f"not measured: {proc.stderr[-400:]}", {}
    lines = ["| process | wall (s) | above interpreter start | above `import numpy` | "
             "first result, above interpreter start |",
             "|---|---:|---:|---:|---:|"]
    for r in data["rows"]:
        lines.append(f"| {r['process']} | {r['wall_s']:.3f} | {r['above_interpreter_s']:.3f} | "
                     f"{r['above_numpy_s']:.3f} | {r['first_result_above_interpreter_s']:.3f} |")
    for name, note in data.get("notes", {}).items():
        lines.append(f"\n{name}: {note}")
    for line in proc.stdout.splitlines():
        if line.startswith(("warm process", "floor process", "cold process", "cold above",
                            "with no process", "bytecode:")):
            lines.append("\n" + line)
    return "\n".join(lines), data


def sass_table(names: list[str], arch: str) -> str | None:
    """The SASS instruction mix of the GEMM benchmarks among ``names`` beside their hand-written
    CUDA (tools/sass_mix.py), or why it was not made; ``None`` when none of them ran."""
    sys.path.insert(0, str(ROOT))           # tools/sass_mix.py is imported as tools.sass_mix
    from tools import sass_mix

    wanted = [n for n in names if n in sass_mix.PAIRS]
    if not wanted:
        return None
    try:
        tool = sass_mix.find_disassembler()
    except sass_mix.DisassemblerNotFound as exc:
        return f"Not made: {exc}."
    try:
        tables = sass_mix.report(wanted, arch, tool, markdown=True)
    except Exception as exc:  # the timings are measured already: report, do not lose them
        return f"Not made: {exc!r}."
    return (f"`python3 -m tools.sass_mix --markdown --arch {arch}`: static instruction counts "
            "of each kernel, whole kernel / one iteration of its main loop.\n\n" + tables)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--numba-pythonpath", help="prepended to PYTHONPATH for the Numba process")
    parser.add_argument("--only", help="comma-separated benchmarks to run, of: "
                        + ", ".join(BENCHES))
    parser.add_argument("--docs", action="store_true", help="also write docs/benchmarks.md")
    parser.add_argument("--chart-from", metavar="BENCH_JSON",
                        help="run nothing: draw the chart of a saved run's bench.json into --out")
    args = parser.parse_args(argv)
    if args.chart_from:
        saved = json.loads(Path(args.chart_from).read_text())
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        chart([Row(**row) for row in saved["rows"]], out / "bench.png")
        return 0
    names = list(BENCHES)
    if args.only:
        wanted = args.only.split(",")
        unknown = [n for n in wanted if n not in BENCHES]
        if unknown:
            parser.error(f"--only: unknown benchmark(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(BENCHES)}")
        names = [n for n in names if n in wanted]
    startup = None
    if not args.quick and not args.only:
        # First, while this process has not started the driver: tools/bench_startup.py measures
        # some rows with no process holding the GPU.
        print("startup:", flush=True)
        startup = startup_table(args.numba_pythonpath)
    if gn.backend() != "cuda":
        print("bench_suite needs a CUDA GPU", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suite = Suite(args.quick)
    for name in names:
        print(f"{name}:", flush=True)
        getattr(suite, name)()
    if not args.only:
        print("numba:", flush=True)
        suite.numba(args.numba_pythonpath)
    extra = {}
    import bench_launch

    launch = bench_launch.measure(bursts=200)
    extra["Launch overhead (host time per launch)"] = bench_launch.table(launch)
    sass = sass_table(names, gn.Device(0).arch)
    if sass is not None:
        extra["SASS instruction mix"] = sass
    if startup is not None:
        extra["Time to first result (fresh processes, tools/bench_startup.py)"] = startup[0]
    meta = {"device": gn.Device(0).name, "date": datetime.date.today().isoformat(),
            "command": "python tools/bench_suite.py" + (" --quick" if args.quick else "")}
    (out / "bench.json").write_text(json.dumps({"meta": meta, "rows": [asdict(r) for r in
                                                                        suite.rows],
                                                "ratios": ratios(suite.rows),
                                                "launch": launch,
                                                "startup": startup[1] if startup else None},
                                               indent=2))
    md = markdown(suite.rows, meta, extra)
    (out / "bench.md").write_text(md)
    try:
        chart(suite.rows, out / "bench.png")
    except Exception as exc:  # pragma: no cover - matplotlib missing
        print(f"no chart: {exc!r}")
    if args.docs:
        (ROOT / "docs" / "benchmarks.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
