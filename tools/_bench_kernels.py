"""Kernels the benchmarks in tools/ launch (imported, so the import hook rewrites them)."""

from gpu_native import CUDASlice, CUDASliceMut, FlatLayout1D, Kernel1D, f32, gpu_kernel, i32


@gpu_kernel(Kernel1D)
def tiny(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    if i < n:
        c[i] = a[i] + b[i]
