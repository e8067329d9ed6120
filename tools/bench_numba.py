"""The Numba-CUDA peer of ``bench_suite.py``: the same algorithms, launch configurations and sizes.

Numba-CUDA needs numpy < 2.3, so the suite runs this file in its own process with an older NumPy
on ``PYTHONPATH`` and reads the JSON it writes:

    python tools/bench_numba.py --json out.json [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    try:
        from numba import cuda, float32
    except Exception as exc:  # pragma: no cover - depends on the machine
        with open(args.json, "w") as f:
            json.dump({"error": f"numba-cuda unavailable: {exc!r}"}, f)
        return 0

    quick = args.quick
    results: dict[str, dict] = {}

    def timed(fn, iters=20, warmup=3):
        for _ in range(warmup):
            fn()
        cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = cuda.event(), cuda.event()
            fn()   # the device busy while the host launches the timed call (bench_suite.timed)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end))
        return statistics.median(times)

    rng = np.random.default_rng(1)

    # ---- vector add: 128 threads a block, one element per thread (the seed's launch)
    @cuda.jit
    def add(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = a[i] + b[i]

    n = 1 << (24 if quick else 28)
    a = cuda.to_device(rng.standard_normal(n, dtype=np.float32))
    b = cuda.to_device(rng.standard_normal(n, dtype=np.float32))
    c = cuda.device_array(n, np.float32)
    blocks = (n + 127) // 128
    ms = timed(lambda: add[blocks, 128](a, b, c))
    ok = bool(np.array_equal(c.copy_to_host(), a.copy_to_host() + b.copy_to_host()))
    results["vector_add"] = {"ms": ms, "ok": ok}

    # ---- block reduction: grid-stride, shared tree down to 64, warp shuffles, a partial per block
    threads, red_blocks = 256, 132 * 8

    @cuda.jit
    def block_sum(x, partial):
        cache = cuda.shared.array(256, float32)
        tid = cuda.threadIdx.x
        total = float32(0.0)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < x.size:
            total += x[i]
            i += stride
        cache[tid] = total
        cuda.syncthreads()
        s = 128
        while s > 32:
            if tid < s:
                cache[tid] += cache[tid + s]
            cuda.syncthreads()
            s //= 2
        if tid < 32:
            v = cache[tid] + cache[tid + 32]
            offset = 16
            while offset > 0:
                v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                offset //= 2
            if tid == 0:
                partial[cuda.blockIdx.x] = v

    partial = cuda.device_array(red_blocks, np.float32)
    ms = timed(lambda: block_sum[red_blocks, threads](a, partial))
    host = a.copy_to_host().astype(np.float64)
    total = float(partial.copy_to_host().astype(np.float64).sum())
    results["block_reduce"] = {"ms": ms,
                               "ok": bool(abs(total - host.sum()) <= 1e-5 * np.abs(host).sum())}

    # ---- SGEMM with 32x32 shared-memory tiles
    tile = 32

    @cuda.jit
    def sgemm(A, B, C):
        sa = cuda.shared.array((32, 32), float32)
        sb = cuda.shared.array((32, 32), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * 32 + ty
        col = cuda.blockIdx.x * 32 + tx
        k_dim = A.shape[1]
        acc = float32(0.0)
        for t in range(0, k_dim, 32):
            sa[ty, tx] = A[row, t + tx] if (row < A.shape[0] and t + tx < k_dim) else 0.0
            sb[ty, tx] = B[t + ty, col] if (t + ty < B.shape[0] and col < B.shape[1]) else 0.0
            cuda.syncthreads()
            for k in range(32):
                acc += sa[ty, k] * sb[k, tx]
            cuda.syncthreads()
        if row < C.shape[0] and col < C.shape[1]:
            C[row, col] = acc

    m = 1024 if quick else 4096
    A = cuda.to_device(rng.standard_normal((m, m), dtype=np.float32))
    B = cuda.to_device(rng.standard_normal((m, m), dtype=np.float32))
    C = cuda.device_array((m, m), np.float32)
    grid = (math.ceil(m / tile), math.ceil(m / tile))
    ms = timed(lambda: sgemm[grid, (tile, tile)](A, B, C), iters=10)
    ref = A.copy_to_host().astype(np.float64) @ B.copy_to_host().astype(np.float64)
    rel = np.linalg.norm(C.copy_to_host() - ref) / np.linalg.norm(ref)
    results["sgemm"] = {"ms": ms, "ok": bool(rel < 1e-4)}

    # ---- transpose through a padded 32x33 tile
    @cuda.jit
    def transpose(src, dst):
        t = cuda.shared.array((32, 33), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        x = cuda.blockIdx.x * 32 + tx
        y = cuda.blockIdx.y * 32 + ty
        if y < src.shape[0] and x < src.shape[1]:
            t[ty, tx] = src[y, x]
        cuda.syncthreads()
        ox = cuda.blockIdx.y * 32 + tx
        oy = cuda.blockIdx.x * 32 + ty
        if oy < dst.shape[0] and ox < dst.shape[1]:
            dst[oy, ox] = t[tx, ty]

    s = 4096 if quick else 16384
    S = cuda.to_device(rng.standard_normal((s, s), dtype=np.float32))
    D = cuda.device_array((s, s), np.float32)
    grid = (s // 32, s // 32)
    ms = timed(lambda: transpose[grid, (32, 32)](S, D))
    results["transpose"] = {"ms": ms, "ok": bool(np.array_equal(D.copy_to_host(),
                                                                 S.copy_to_host().T))}

    # ---- 5-point heat stencil, 16x16 blocks
    @cuda.jit
    def heat(src, dst, alpha):
        x, y = cuda.grid(2)
        h, w = src.shape
        if y >= h or x >= w:
            return
        if x == 0 or y == 0 or x == w - 1 or y == h - 1:
            dst[y, x] = src[y, x]
        else:
            c = src[y, x]
            around = src[y - 1, x] + src[y + 1, x] + src[y, x - 1] + src[y, x + 1]
            dst[y, x] = c + alpha * (around - float32(4.0) * c)

    alpha = np.float32(0.2)
    grid = (s // 16, s // 16)
    ms = timed(lambda: heat[grid, (16, 16)](S, D, alpha))
    u = S.copy_to_host()
    ref = u.copy()
    around = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
    ref[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha * (around - np.float32(4.0) * u[1:-1, 1:-1])
    results["stencil"] = {"ms": ms, "ok": bool(np.allclose(D.copy_to_host(), ref, atol=1e-5))}

    with open(args.json, "w") as f:
        json.dump({"results": results, "numba": __import__("numba").__version__}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
