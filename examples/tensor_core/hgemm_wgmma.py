"""Half-precision GEMM on Hopper's warpgroup tensor cores: C = A @ B (f16 or bf16 inputs and
output, f32 accumulation), with ``warpgroup_mma`` (PTX ``wgmma``), for sm_90 GPUs (H100, H200).
examples/tensor_core/hgemm_tensor_core.py is the same product with the ``mma.sync`` of every GPU
since sm_80.

Algorithm: a block of 256 threads, two warpgroups of 128, computes a 128 x 256 tile of C
(Triton's best 4096^3 configuration on an H200); warpgroup w the rows 64w .. 64w + 63, with one
m64n256k16 accumulator (128 f32 registers a thread).  K is walked in 64-deep slices through a
4-stage ring of shared slices of A (128 x 64) and B (64 x 256), which the GPU's tensor memory
accelerator fills two slices ahead: thread 0 issues ``tma_load`` of each slice (one copy of A,
one of B: whole slices, no per-thread copies), and every thread ``tma_wait``s for a stage before
reading it.  Per slice kt: wait for its stage, barrier, then thread 0 refills the stage of
slice kt - 2 (whose products every warpgroup retired in the previous step, before this
barrier) with slice kt + 2, ``warpgroup_arrive()``, four ``warpgroup_mma`` (16-deep steps),
``warpgroup_commit()``, ``warpgroup_wait(1)`` (the previous slice's products are done, this
one's may still run).  One barrier a slice.  With 16-byte ``cp_async`` copies from every
thread instead (this example until 0.3.0), the 4096^3 GEMM ran at 0.82x of Triton's tutorial
kernel on an H100; the copies were the whole gap (docs/benchmarks.md).

Block order: a 3-D grid (GROUP, N / 256, M / 128 / GROUP) whose x axis, the fastest-varying in
launch order, walks GROUP block rows down one column of tiles before the next column (Triton's
grouped order): the blocks on the GPU at one time share B's tiles in L2.  The block's row
``block_idx.z * grid_dim.x + block_idx.x`` is proven below M's tile count from the shape assert
``a.shape[0] == grid_dim.z * grid_dim.x * BM``.  Launched in row-major block order instead, the
same algorithm by hand was 2.4-2.9% slower on an H100 (docs/benchmarks.md).

Epilogue: after ``warpgroup_wait(0)`` and a barrier no MMA reads the ring, and
``warpgroup_store`` passes each warpgroup's 64 x 256 tile through stage w of ``tile_b`` (its
``staging`` region: the same shape, swizzled, so the fragment's pairs land without bank
conflicts) and out in 16-byte row chunks, a warp writing whole rows.  Stored straight from the
fragment, a warp's 4-byte pairs fill half of each 32-byte sector; staged, the 4096^3 GEMM was 4%
faster on an H200 (docs/benchmarks.md).

Shared layout: both tiles are ``shared_array(T, shape, swizzle=128)``, indexed logically here (no
XOR in this file); the language stores them in the 128-byte swizzle the wgmma descriptors name
(in 64-column blocks, each 8-row group 1024 bytes), in the dynamic shared memory: the launch
passes ``SHARED_BYTES`` (192 KiB of tiles, plus 1 KiB to align them; more than the 48 KiB of
static shared memory, so the launcher opts the kernel in).  The tensor copies write the same
swizzle, so a slice arrives in the layout ``warpgroup_mma`` reads.  A is read K-major (its rows
are 64 K elements) and B N-major (its rows are 256 N elements), which is how both arrive from
row-major ``a`` and ``b``: no transpose anywhere.

Sizes: M a multiple of 128, N of 256, K of 64 (the wrapper raises ValueError otherwise), and
the arrays' rows a multiple of 16 bytes (the launcher checks that for the tensor copies); every
global access is proven in bounds from the shape asserts, and the shared ones too; every write
is proven race-free, the tensor copies' too (thread 0 alone issues them), and
``warpgroup_store``'s (a 64 x 256 tile from each warpgroup's own origin, and its staging
region, stage ``wg``, after the barrier that orders it behind the ring's copies): no ``unsafe``
anywhere.  The same algorithm in CUDA C++ is tools/tma_probe.py's ``sync4`` kernel (its
``sync4flat`` the same in row-major block order).

Output type: ``c`` is in the input type here; ``warpgroup_store`` also writes f32 (annotate ``c:
CUDASliceMut2D[f32]`` and drop the staging arguments, which are for 16-bit outputs:
tests/examples/test_hgemm_wgmma.py runs it so).

Tolerance: one rounding of each f32 result to the output type (half an ulp: 2^-11 relative in
f16, 2^-8 in bf16) over the f32 accumulation's few ulps times sqrt(K) (the simulator rounds
each 16-deep product once to f32).
"""

from typing import TypeVar

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim3D,
    Kernel3D,
    bf16,
    block_dim,
    block_idx,
    f16,
    f32,
    gpu_kernel,
    grid_dim,
    local_array,
    shared_array,
    sync_threads,
    thread_idx,
    tma_load,
    tma_wait,
    warpgroup_arrive,
    warpgroup_commit,
    warpgroup_mma,
    warpgroup_store,
    warpgroup_wait,
)

T = TypeVar("T", f16, bf16)   # the input element type

BM = 128                  # block tile of C
BN = 256
BK = 64                   # depth of one shared slice: one 128-byte swizzled row of A
STAGES = 4                # slices in flight
THREADS = 256             # two warpgroups, each 64 rows of the tile
GROUP = 8                 # block rows walked together (Triton's GROUP_SIZE_M)
SHARED_BYTES = STAGES * (BM + BN) * BK * 2 + 1024   # the launch's dynamic shared memory


@gpu_kernel(Kernel3D)
def hgemm_wgmma_kernel(a: CUDASlice2D[T], b: CUDASlice2D[T], c: CUDASliceMut2D[T]):
    assert block_dim.x == THREADS and block_dim.y == 1 and block_dim.z == 1, "THREADS threads"
    assert a.shape[0] == grid_dim.z * grid_dim.x * BM and c.shape[0] == a.shape[0], "M tiles"
    assert b.shape[1] == grid_dim.y * BN and c.shape[1] == b.shape[1], "N is grid_dim.y * BN"
    assert b.shape[0] == a.shape[1], "a's columns are b's rows"
    assert a.shape[1] % BK == 0, "K is a multiple of BK"
    tile_a = shared_array(T, (STAGES, BM, BK), swizzle=128)  # type: ignore[misc]  # a TypeVar
    tile_b = shared_array(T, (STAGES, BK, BN), swizzle=128)  # type: ignore[misc]  # a TypeVar
    acc = local_array(f32, (BN // 2,))
    tid = thread_idx.x
    wg = tid // 128
    # Grouped block order: block_idx.x (the fastest-varying in launch order) walks grid_dim.x
    # block rows down one column of tiles, so the blocks resident together share B's tiles.
    block_row = (block_idx.z * grid_dim.x + block_idx.x) * BM
    block_col = block_idx.y * BN
    ktiles = a.shape[1] // BK
    for i in range(BN // 2):
        acc[i] = 0.0
    # Prologue: thread 0 starts the copies of the first STAGES - 2 slices.
    if tid == 0:
        for s in range(STAGES - 2):
            if s < ktiles:
                tma_load(tile_a, (s,), a, (block_row, s * BK))
                tma_load(tile_b, (s,), b, (s * BK, block_col))
    for kt in range(ktiles):
        st = kt % STAGES
        tma_wait(tile_a, (st,))
        tma_wait(tile_b, (st,))
        sync_threads()
        # Slice kt - 2's stage: every warpgroup retired its products before the barrier above.
        nxt = kt + (STAGES - 2)
        if tid == 0 and nxt < ktiles:
            sn = nxt % STAGES
            tma_load(tile_a, (sn,), a, (block_row, nxt * BK))
            tma_load(tile_b, (sn,), b, (nxt * BK, block_col))
        warpgroup_arrive()
        for kk in range(BK // 16):
            warpgroup_mma(acc, tile_a, (st, wg * 64, kk * 16), tile_b, (st, kk * 16, 0), BN)
        warpgroup_commit()
        warpgroup_wait(1)
    warpgroup_wait(0)
    # Past this barrier no warpgroup_mma reads the ring: stage wg of tile_b (64 x 256, the
    # shape of a warpgroup's tile) stages warpgroup wg's output on its way to coalesced stores.
    sync_threads()
    # Proven: each warpgroup's 64 x 256 tile, the rows 64 * wg of the block's 128 x 256 tile,
    # and its staging region, stage wg.
    warpgroup_store(c, (block_row + wg * 64, block_col), acc, tile_b, (wg, 0, 0))


def _check_shapes(a, b, c) -> None:
    m, k = a.shape
    if b.shape[0] != k or c.shape != (m, b.shape[1]):
        raise ValueError(f"shapes do not multiply: a {a.shape}, b {b.shape}, c {c.shape}")
    if m % BM or c.shape[1] % BN or k % BK:
        raise ValueError(f"hgemm_wgmma needs M a multiple of {BM}, N of {BN}, K of {BK}; got "
                         f"M={m}, N={c.shape[1]}, K={k}")


def hgemm_wgmma(a, b, c, stream=DEFAULT_STREAM):
    """``c[...] = a @ b`` on Hopper tensor cores (a, b and c all f16 or all bf16)."""
    _check_shapes(a, b, c)
    rows = c.shape[0] // BM
    group = next(g for g in (GROUP, 4, 2, 1) if rows % g == 0)
    grid = GridDim3D(group, c.shape[1] // BN, rows // group)
    hgemm_wgmma_kernel.launch(grid, BlockDim1D(THREADS), SHARED_BYTES, stream)(a, b, c)


def run(m: int = 128, k: int = 128, n: int = 256, dtype=f16, seed=None):
    """``a @ b`` for random inputs on the current backend, and its float64 reference."""
    rng = np.random.default_rng(seed)
    host = np.float16 if dtype is f16 else np.float32
    a = rng.standard_normal((m, k)).astype(host)
    b = rng.standard_normal((k, n)).astype(host)
    da, db = gn.to_device(a, dtype=dtype), gn.to_device(b, dtype=dtype)
    c = gn.empty((m, n), dtype)
    hgemm_wgmma(da, db, c)
    # The reference multiplies the inputs as the kernel sees them (bf16-rounded).
    a64 = da.to_host().astype(np.float64)
    b64 = db.to_host().astype(np.float64)
    return c.to_host().astype(np.float64), a64 @ b64


if __name__ == "__main__":
    result, reference = run()
    err = np.linalg.norm(result - reference) / np.linalg.norm(reference)
    print(f"hgemm_wgmma on {gn.backend()}: relative error {err:.2e}")
