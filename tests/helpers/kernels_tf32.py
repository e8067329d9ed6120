"""Kernels that multiply f32 fragments as tf32 with ``mma_sync`` (``mma.m16n8k8``), for
tests/language/test_tf32_mma.py and the NVRTC compile test (tests/compiler/test_nvrtc_all.py).

One warp per block computes a 16 x 8 tile of ``c = a @ b``, loading its fragments element by
element in the documented layout (lane 4g + t: A rows g, g + 8 at columns k + t, k + t + 4; B
column g at rows k + t, k + t + 4) and walking K in steps of 8."""

from gpu_native import (
    CUDASlice2D,
    CUDASliceMut2D,
    Kernel2D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    grid_dim,
    lane_id,
    local_array,
    mma_sync,
    store_matrix,
)


@gpu_kernel(Kernel2D)
def tf32_tiles(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    """c = a @ b with a (16 * grid_dim.y) x K, b K x (8 * grid_dim.x), K a multiple of 8."""
    assert block_dim.x == 32 and block_dim.y == 1, "one warp per 16 x 8 tile"
    assert a.shape[0] == grid_dim.y * 16 and c.shape[0] == a.shape[0], "M is 16 per block"
    assert b.shape[1] == grid_dim.x * 8 and c.shape[1] == b.shape[1], "N is 8 per block"
    assert b.shape[0] == a.shape[1] and a.shape[1] % 8 == 0, "K is b's rows, a multiple of 8"
    lane = lane_id()
    g = lane // 4
    t = lane % 4
    row = block_idx.y * 16
    col = block_idx.x * 8
    frag_a = local_array(f32, (4,))
    frag_b = local_array(f32, (2,))
    acc = local_array(f32, (4,))
    for e in range(4):
        acc[e] = 0.0
    for k in range(0, a.shape[1], 8):
        frag_a[0] = a[row + g, k + t]
        frag_a[1] = a[row + g + 8, k + t]
        frag_a[2] = a[row + g, k + t + 4]
        frag_a[3] = a[row + g + 8, k + t + 4]
        frag_b[0] = b[k + t, col + g]
        frag_b[1] = b[k + t + 4, col + g]
        mma_sync(acc, (), frag_a, (), frag_b, ())
    # Proven unique, no unsafe block: the origin comes from block_idx alone (the same in every
    #   lane), the warp writes the 128 elements of its 16 x 8 tile, and blocks step by 16 rows
    #   and 8 columns.
    store_matrix(c, (row, col), acc, ())
