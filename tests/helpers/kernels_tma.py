"""Kernels of tensor copies (tma_load / tma_wait) for tests/language/test_tma.py: a ring of
STAGES slices that thread 0 fills from a 2-D array while every thread copies the slice it
waited for out to another array, block b taking rows b * ROWS_PER_BLOCK onwards."""

from typing import TypeVar

from gpu_native import (
    CUDASlice2D,
    CUDASliceMut2D,
    Kernel1D,
    bf16,
    block_dim,
    block_idx,
    f16,
    gpu_kernel,
    grid_dim,
    shared_array,
    sync_threads,
    thread_idx,
    tma_load,
    tma_wait,
)

T = TypeVar("T", f16, bf16)

R = 16            # rows of a slice
C = 128           # columns of a slice: two 64-column boxes a copy
STAGES = 3
THREADS = 128
TILES = 5         # slices per block: the ring wraps, stage 0 and 1 are refilled


@gpu_kernel(Kernel1D)
def ring_copy(a: CUDASlice2D[T], out: CUDASliceMut2D[T]):
    assert block_dim.x == THREADS
    assert a.shape[0] == grid_dim.x * (TILES * R) and out.shape[0] == a.shape[0]
    assert a.shape[1] == C and out.shape[1] == C
    tile = shared_array(T, (STAGES, R, C), swizzle=128)  # type: ignore[misc]  # a TypeVar
    tid = thread_idx.x
    base = block_idx.x * (TILES * R)
    if tid == 0:
        for s in range(STAGES):
            tma_load(tile, (s,), a, (base + s * R, 0))
    for t in range(TILES):
        st = t % STAGES
        tma_wait(tile, (st,))
        for i in range(tid, R * C, THREADS):
            out[base + t * R + i // C, i % C] = tile[st, i // C, i % C]
        sync_threads()
        nxt = t + STAGES
        if tid == 0 and nxt < TILES:
            tma_load(tile, (st,), a, (base + nxt * R, 0))


@gpu_kernel(Kernel1D)
def one_slice(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], row: int, col: int):
    """A 2-D destination (no stage index): the 64 x 64 tile of ``a`` at (row, col)."""
    assert block_dim.x == THREADS and grid_dim.x == 1
    assert out.shape[0] == 64 and out.shape[1] == 64
    tile = shared_array(f16, (64, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 0:
        tma_load(tile, (), a, (row, col))
    tma_wait(tile, ())
    for i in range(tid, 64 * 64, THREADS):
        out[i // 64, i % 64] = tile[i // 64, i % 64]
