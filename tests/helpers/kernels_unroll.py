"""Kernels with ``unroll(range(...))`` loops, for tests/language/test_unroll.py and the NVRTC
compile test (tests/compiler/test_nvrtc_all.py)."""

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    Kernel1D,
    f32,
    gpu_kernel,
    i32,
    local_array,
    unroll,
)

TAPS = 8


@gpu_kernel(Kernel1D)
def unrolled_sums(a: CUDASlice[f32], n: i32, out: CUDASliceMut[f32]):
    """out[i] = 2 * (a[i] + ... + a[i + TAPS - 1]) + (a[i] + a[i + 2] + ...) over the first
    ``n`` taps, through a register array filled by a fully unrolled loop."""
    i = FlatLayout1D.uid()
    if i < len(out):
        taps = local_array(f32, (TAPS,))
        for k in unroll(range(TAPS)):
            taps[k] = a[i + k]
        s = f32(0.0)
        for k in unroll(range(TAPS - 1, -1, -1)):
            s += 2.0 * taps[k]
        for k in unroll(range(0, n, 2), 4):
            s += taps[k]
        out[i] = s
