"""Kernels that read four elements at a time with ``load_vec4``, for
tests/language/test_vector_loads.py and the NVRTC compile test (tests/compiler/test_nvrtc_all.py)."""

from gpu_native import (
    BlockLayout1D,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    FlatLayout1D,
    Kernel1D,
    block_dim,
    f32,
    gpu_kernel,
    grid_dim,
    i32,
    load_vec4,
    shared_array,
    sync_threads,
)


@gpu_kernel(Kernel1D)
def sum_of_fours(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    """out[i] = a[4i] + a[4i + 1] + a[4i + 2] + a[4i + 3]."""
    i = FlatLayout1D.uid()
    if i < len(out):
        v = load_vec4(a, 4 * i)
        out[i] = v.x + v.y + v.z + v.w


@gpu_kernel(Kernel1D)
def row_fours(a: CUDASlice2D[i32], row: i32, out: CUDASliceMut[i32]):
    """out[4q .. 4q + 3] = a[row, 4q .. 4q + 3] reversed: aligned only where the rows of a are
    a multiple of 4 elements long (or row is 0)."""
    q = FlatLayout1D.uid()
    if q < len(out) // 4:
        v = load_vec4(a, row, 4 * q)
        out[4 * q] = v.w
        out[4 * q + 1] = v.z
        out[4 * q + 2] = v.y
        out[4 * q + 3] = v.x


@gpu_kernel(Kernel1D)
def shared_fours(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    """A (2, 128) shared tile of a; thread t < 32 sums elements 8 (t % 16) + 4 .. + 7 of row
    t // 16: proven in bounds and aligned (rows of 128, a start 8 * k + 4)."""
    assert block_dim.x == 64 and grid_dim.x == 1, "one block of 64 threads"
    tile = shared_array(f32, (2, 128))
    t = BlockLayout1D.uid()
    for r in range(2):
        for q in range(2):
            tile[r, t + 64 * q] = a[r * 128 + t + 64 * q]
    sync_threads()
    if t < 32:
        v = load_vec4(tile, t // 16, (t % 16) * 8 + 4)
        out[t] = v.x + v.y + v.z + v.w
