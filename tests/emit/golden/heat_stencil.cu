// gpu_native 0.1.0: kernel heat_step of heat_stencil (generated; do not edit)
#define GN_KERNEL_ID 0xdcd4fc537acef57dull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_heat_step(
    const float* __restrict__ src,
    gn_i64 __gn_src_n0,
    gn_i64 __gn_src_n1,
    float* __restrict__ dst,
    gn_i64 __gn_dst_n0,
    gn_i64 __gn_dst_n1,
    float alpha,
    gn_error_record* __restrict__ __gn_err)
{
    long long x{};
    long long y{};
    long long h{};
    long long w{};
    float center{};
    float around{};
#line 20 "heat_stencil.py"  // heat_stencil.py:20  def heat_step(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32], alpha: f32):
    // grid tail: this thread's uid lies past every array it indexes
    if (((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_src_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_src_n1)) & ((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_dst_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_dst_n1))) return;
#line 21 "heat_stencil.py"  // heat_stencil.py:21  x, y = FlatLayout2D.uid()
    x = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
    y = ((gn_i64)blockIdx.y * blockDim.y + threadIdx.y);
#line 22 "heat_stencil.py"  // heat_stencil.py:22  h = src.shape[0]
    h = __gn_src_n0;
#line 23 "heat_stencil.py"  // heat_stencil.py:23  w = src.shape[1]
    w = __gn_src_n1;
#line 24 "heat_stencil.py"  // heat_stencil.py:24  if x == 0 or y == 0 or x == w - 1 or y == h - 1:
    if (((x == 0LL) || (y == 0LL) || (x == ((long long)((unsigned long long)(w) - (unsigned long long)(1LL)))) || (y == ((long long)((unsigned long long)(h) - (unsigned long long)(1LL)))))) {
#line 25 "heat_stencil.py"  // heat_stencil.py:25  dst[y, x] = src[y, x]
        dst[gn_at2(__gn_err, y, __gn_dst_n0, 2u, x, __gn_dst_n1, 3u)] = src[gn_at2(__gn_err, y, __gn_src_n0, 0u, x, __gn_src_n1, 1u)];
    } else {
#line 27 "heat_stencil.py"  // heat_stencil.py:27  center = src[y, x]
        center = src[gn_at2(__gn_err, y, __gn_src_n0, 4u, x, __gn_src_n1, 5u)];
#line 28 "heat_stencil.py"  // heat_stencil.py:28  around = src[y - 1, x] + src[y + 1, x] + src[y, x - 1] + src[y, x + 1]
        around = (((src[((long long)(y - 1LL)) * __gn_src_n1 + x] + src[((long long)(y + 1LL)) * __gn_src_n1 + x]) + src[y * __gn_src_n1 + ((long long)(x - 1LL))]) + src[y * __gn_src_n1 + ((long long)(x + 1LL))]);
#line 29 "heat_stencil.py"  // heat_stencil.py:29  dst[y, x] = center + alpha * (around - 4.0 * center)
        dst[gn_at2(__gn_err, y, __gn_dst_n0, 6u, x, __gn_dst_n1, 7u)] = (center + (alpha * (around - (4.0f * center))));
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_heat_step_i32(
    const float* __restrict__ src,
    gn_i64 __gn_src_n0,
    gn_i64 __gn_src_n1,
    float* __restrict__ dst,
    gn_i64 __gn_dst_n0,
    gn_i64 __gn_dst_n1,
    float alpha,
    gn_error_record* __restrict__ __gn_err)
{
    int x{};
    int y{};
    int h{};
    int w{};
    float center{};
    float around{};
#line 20 "heat_stencil.py"  // heat_stencil.py:20  def heat_step(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32], alpha: f32):
    // grid tail: this thread's uid lies past every array it indexes
    if (((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_src_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_src_n1))) & ((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_dst_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_dst_n1)))) return;
#line 21 "heat_stencil.py"  // heat_stencil.py:21  x, y = FlatLayout2D.uid()
    x = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
    y = ((int)(blockIdx.y * blockDim.y + threadIdx.y));
#line 22 "heat_stencil.py"  // heat_stencil.py:22  h = src.shape[0]
    h = ((int)__gn_src_n0);
#line 23 "heat_stencil.py"  // heat_stencil.py:23  w = src.shape[1]
    w = ((int)__gn_src_n1);
#line 24 "heat_stencil.py"  // heat_stencil.py:24  if x == 0 or y == 0 or x == w - 1 or y == h - 1:
    if (((x == 0) || (y == 0) || (x == (w - 1)) || (y == (h - 1)))) {
#line 25 "heat_stencil.py"  // heat_stencil.py:25  dst[y, x] = src[y, x]
        dst[gn_at2_32(__gn_err, y, ((int)__gn_dst_n0), 2u, x, ((int)__gn_dst_n1), 3u)] = src[gn_at2_32(__gn_err, y, ((int)__gn_src_n0), 0u, x, ((int)__gn_src_n1), 1u)];
    } else {
#line 27 "heat_stencil.py"  // heat_stencil.py:27  center = src[y, x]
        center = src[gn_at2_32(__gn_err, y, ((int)__gn_src_n0), 4u, x, ((int)__gn_src_n1), 5u)];
#line 28 "heat_stencil.py"  // heat_stencil.py:28  around = src[y - 1, x] + src[y + 1, x] + src[y, x - 1] + src[y, x + 1]
        around = (((src[(y - 1) * ((int)__gn_src_n1) + x] + src[(y + 1) * ((int)__gn_src_n1) + x]) + src[y * ((int)__gn_src_n1) + (x - 1)]) + src[y * ((int)__gn_src_n1) + (x + 1)]);
#line 29 "heat_stencil.py"  // heat_stencil.py:29  dst[y, x] = center + alpha * (around - 4.0 * center)
        dst[gn_at2_32(__gn_err, y, ((int)__gn_dst_n0), 6u, x, ((int)__gn_dst_n1), 7u)] = (center + (alpha * (around - (4.0f * center))));
    }
}

