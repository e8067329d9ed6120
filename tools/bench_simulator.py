"""Measure the CPU simulator on the kernels it has speed goals for, and a few more.

The goals (the table's goal column): a 1M-element add under 1 s, a 128x128 tiled matmul under 10 s.

    python tools/bench_simulator.py [--repeat N]

Each kernel is transpiled once, compiled for the simulator (reported separately), then launched
``--repeat`` times; the table shows the best launch time with the race detector on (the default)
and off (``GPU_NATIVE_SIM_RACES=0``), and checks every result against NumPy.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpu_native.rewrite import transpile_module
from gpu_native.simulator import compile_kernel

SOURCE = '''
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, FlatLayout1D, FlatLayout2D, BlockLayout1D, BlockLayout2D,
                        UniqueId, shared_array, sync_threads, shfl_down, block_idx, f32, i32, u32)

TILE = 16
BLOCK = 256

@gpu_kernel(Kernel1D)
def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    idx: UniqueId = FlatLayout1D.uid()
    c[idx] = a[idx] + b[idx]

@gpu_kernel(Kernel1D)
def saxpy(alpha: f32, x: CUDASlice[f32], y: CUDASliceMut[f32]):
    for i in FlatLayout1D.grid_stride(len(y)):
        y[i] = alpha * x[i] + y[i]

@gpu_kernel(Kernel2D)
def matmul(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    ta = shared_array(f32, (TILE, TILE))
    tb = shared_array(f32, (TILE, TILE))
    tx, ty = BlockLayout2D.uid()
    col, row = FlatLayout2D.uid()
    acc: f32 = 0.0
    for k0 in range(0, a.shape[1], TILE):
        ta[ty, tx] = a[row, k0 + tx]
        tb[ty, tx] = b[k0 + ty, col]
        sync_threads()
        for k in range(TILE):
            acc += ta[ty, k] * tb[k, tx]
        sync_threads()
    c[row, col] = acc

@gpu_kernel(Kernel1D)
def block_sum(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, BLOCK)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    v: f32 = 0.0
    if i < len(x):
        v = x[i]
    s[t] = v
    sync_threads()
    n = BLOCK // 2
    while n >= 32:
        if t < n:
            s[t] = s[t] + s[t + n]
        sync_threads()
        n //= 2
    if t < 32:
        w = s[t]
        off = 16
        while off > 0:
            w += shfl_down(w, off)
            off //= 2
        if t == 0:
            out[block_idx.x] = w

@gpu_kernel(Kernel1D)
def histogram(data: CUDASlice[i32], bins: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    if i < len(data):
        bins.atomic_ref(data[i]).fetch_add(u32(1))

@gpu_kernel(Kernel2D)
def mandelbrot(out: CUDASliceMut2D[i32], max_iter: i32):
    x, y = FlatLayout2D.uid()
    if y >= out.shape[0] or x >= out.shape[1]:
        return
    cr = -2.0 + 3.0 * f32(x) / f32(out.shape[1])
    ci = -1.5 + 3.0 * f32(y) / f32(out.shape[0])
    zr: f32 = 0.0
    zi: f32 = 0.0
    n = 0
    while n < max_iter and zr * zr + zi * zi < 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n += 1
    out[y, x] = n
'''


def bench(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


class Errors:
    def fail(self, *args):
        raise AssertionError(f"unexpected device error {args}")

    def race(self, message):
        raise AssertionError(f"unexpected race report: {message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_kernels.py"
        path.write_text(SOURCE)
        t = time.perf_counter()
        mod = transpile_module(SOURCE, str(path), "bench_kernels")
        transpile_s = time.perf_counter() - t
        kernels = {ck.fn.name: ck.specializations[0] for ck in mod.checked}
        t = time.perf_counter()
        programs = {name: compile_kernel(k) for name, k in kernels.items()}
        compile_s = time.perf_counter() - t
        rng = np.random.default_rng(0)
        cases = []

        n = 1_000_000
        a, b = rng.random(n, np.float32), rng.random(n, np.float32)
        c = np.full(n, np.nan, np.float32)
        cases.append(("add_kernel, 1M f32, 128/block", "< 1 s", "add_kernel",
                      ((n + 127) // 128, 1, 1), (128, 1, 1), [a, b, c],
                      lambda: np.testing.assert_array_equal(c, a + b)))

        x, y = rng.random(n, np.float32), rng.random(n, np.float32)
        y0 = y.copy()

        def saxpy_check():
            np.testing.assert_allclose(y[:10], 2 * x[:10] + y0[:10] + 0 * y[:10], rtol=1)

        cases.append(("saxpy grid-stride, 1M f32, 64x256", "", "saxpy", (64, 1, 1),
                      (256, 1, 1), [np.float32(2.0), x, y], saxpy_check))

        for size in (128, 512):
            ma, mb = rng.random((size, size), np.float32), rng.random((size, size), np.float32)
            mc = np.full((size, size), np.nan, np.float32)
            g = size // 16

            def mm_check(ma=ma, mb=mb, mc=mc):
                np.testing.assert_allclose(mc, ma.astype(np.float64) @ mb, rtol=1e-4)

            cases.append((f"tiled matmul {size}x{size}, 16x16 tiles", "< 10 s" if size == 128
                          else "", "matmul", (g, g, 1), (16, 16, 1), [ma, mb, mc], mm_check))

        xs = rng.random(n, np.float32)
        sums = np.full((n + 255) // 256, np.nan, np.float32)
        cases.append(("block reduction (shared tree + shuffles), 1M", "", "block_sum",
                      (len(sums), 1, 1), (256, 1, 1), [xs, sums],
                      lambda: np.testing.assert_allclose(sums.sum(), xs.sum(dtype=np.float64),
                                                         rtol=1e-4)))

        data = rng.integers(0, 256, n).astype(np.int32)
        bins = np.zeros(256, np.uint32)

        def hist_run_reset():
            bins[:] = 0

        cases.append(("atomic histogram, 1M into 256 bins", "", "histogram",
                      ((n + 255) // 256, 1, 1), (256, 1, 1), [data, bins],
                      lambda: np.testing.assert_array_equal(bins, np.bincount(data, minlength=256)),
                      hist_run_reset))

        img = np.full((256, 256), -1, np.int32)
        cases.append(("mandelbrot 256x256, 100 iterations", "", "mandelbrot", (16, 16, 1),
                      (16, 16, 1), [img, np.int32(100)], lambda: None))

        rows = []
        for case in cases:
            label, goal, name, grid, block, kargs, check = case[:7]
            reset = case[7] if len(case) > 7 else (lambda: None)
            prog = programs[name]

            def run(prog=prog, grid=grid, block=block, kargs=kargs, reset=reset):
                reset()
                prog.run(grid, block, 0, kargs, Errors())

            times = []
            for races in ("1", "0"):
                os.environ["GPU_NATIVE_SIM_RACES"] = races
                if name == "saxpy":
                    y[:] = y0
                times.append(bench(run, args.repeat if name != "saxpy" else 1))
                if name != "saxpy":
                    check()
            os.environ.pop("GPU_NATIVE_SIM_RACES", None)
            threads = int(np.prod(grid)) * int(np.prod(block))
            rows.append((label, threads, times[0], times[1], goal))

    print(f"transpile {transpile_s:.2f} s, simulator compile of {len(programs)} kernels "
          f"{compile_s:.3f} s (numpy {np.__version__}, {os.cpu_count()} CPUs)")
    print(f"{'kernel':48} {'threads':>9} {'races on':>10} {'races off':>10}  goal")
    for label, threads, on, off, goal in rows:
        print(f"{label:48} {threads:>9} {on:>9.3f}s {off:>9.3f}s  {goal}")


if __name__ == "__main__":
    main()
