// gpu_native 0.1.0: kernel smoothstep_kernel of dask_kernels (generated; do not edit)
#define GN_KERNEL_ID 0xd207e482b78468bfull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_smoothstep_kernel(
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    float* __restrict__ out,
    gn_i64 __gn_out_n0,
    float lo,
    float hi,
    gn_error_record* __restrict__ __gn_err)
{
    long long i{};
    float t{};
#line 15 "dask_kernels.py"  // dask_kernels.py:15  def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
    // grid tail: this thread's uid lies past every array it indexes
    if ((((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_x_n0) & (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_out_n0)) return;
#line 16 "dask_kernels.py"  // dask_kernels.py:16  i: UniqueId = FlatLayout1D.uid()
    i = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 17 "dask_kernels.py"  // dask_kernels.py:17  t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
    t = gn_min<float>(gn_max<float>(gn_fdiv((x[gn_chk(__gn_err, i, __gn_x_n0, 0u)] - lo), (hi - lo)), 0.0f), 1.0f);
#line 18 "dask_kernels.py"  // dask_kernels.py:18  out[i] = t * t * (3.0 - 2.0 * t)
    out[gn_chk(__gn_err, i, __gn_out_n0, 1u)] = ((t * t) * (3.0f - (2.0f * t)));
}

// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).
extern "C" __global__ void gn_smoothstep_kernel_uids(
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    float* __restrict__ out,
    gn_i64 __gn_out_n0,
    float lo,
    float hi,
    gn_error_record* __restrict__ __gn_err,
    gn_i64 __gn_total,
    unsigned int __gn_block)
{
    long long i{};
    float t{};
    // Every uid-indexed array is read and written 16 bytes (4 uids) at a time where the pointers are aligned and the 4 uids lie inside every array.
    gn_i64 __gn_n = __gn_total; __gn_n = __gn_x_n0 < __gn_n ? __gn_x_n0 : __gn_n; __gn_n = __gn_out_n0 < __gn_n ? __gn_out_n0 : __gn_n;
    const bool __gn_aligned = (((gn_u64)x | (gn_u64)out) & 15) == 0;
    const gn_i64 __gn_chunks = (__gn_total + 3) / 4;
    for (gn_i64 __gn_chunk = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_chunk < __gn_chunks; __gn_chunk += (gn_i64)gridDim.x * blockDim.x) {
        const gn_i64 __gn_base = __gn_chunk * 4;
        if (__gn_aligned && __gn_base + 4 <= __gn_n) {
            float4 __gnv_x = *reinterpret_cast<const float4*>(x + __gn_base);
            float4 __gnv_out;
#line 15 "dask_kernels.py"  // dask_kernels.py:15  def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
#line 16 "dask_kernels.py"  // dask_kernels.py:16  i: UniqueId = FlatLayout1D.uid()
            i = (__gn_base + 0);
#line 17 "dask_kernels.py"  // dask_kernels.py:17  t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
            t = gn_min<float>(gn_max<float>(gn_fdiv((__gnv_x.x - lo), (hi - lo)), 0.0f), 1.0f);
#line 18 "dask_kernels.py"  // dask_kernels.py:18  out[i] = t * t * (3.0 - 2.0 * t)
            __gnv_out.x = ((t * t) * (3.0f - (2.0f * t)));
#line 15 "dask_kernels.py"  // dask_kernels.py:15  def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
#line 16 "dask_kernels.py"  // dask_kernels.py:16  i: UniqueId = FlatLayout1D.uid()
            i = (__gn_base + 1);
#line 17 "dask_kernels.py"  // dask_kernels.py:17  t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
            t = gn_min<float>(gn_max<float>(gn_fdiv((__gnv_x.y - lo), (hi - lo)), 0.0f), 1.0f);
#line 18 "dask_kernels.py"  // dask_kernels.py:18  out[i] = t * t * (3.0 - 2.0 * t)
            __gnv_out.y = ((t * t) * (3.0f - (2.0f * t)));
#line 15 "dask_kernels.py"  // dask_kernels.py:15  def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
#line 16 "dask_kernels.py"  // dask_kernels.py:16  i: UniqueId = FlatLayout1D.uid()
            i = (__gn_base + 2);
#line 17 "dask_kernels.py"  // dask_kernels.py:17  t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
            t = gn_min<float>(gn_max<float>(gn_fdiv((__gnv_x.z - lo), (hi - lo)), 0.0f), 1.0f);
#line 18 "dask_kernels.py"  // dask_kernels.py:18  out[i] = t * t * (3.0 - 2.0 * t)
            __gnv_out.z = ((t * t) * (3.0f - (2.0f * t)));
#line 15 "dask_kernels.py"  // dask_kernels.py:15  def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
#line 16 "dask_kernels.py"  // dask_kernels.py:16  i: UniqueId = FlatLayout1D.uid()
            i = (__gn_base + 3);
#line 17 "dask_kernels.py"  // dask_kernels.py:17  t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
            t = gn_min<float>(gn_max<float>(gn_fdiv((__gnv_x.w - lo), (hi - lo)), 0.0f), 1.0f);
#line 18 "dask_kernels.py"  // dask_kernels.py:18  out[i] = t * t * (3.0 - 2.0 * t)
            __gnv_out.w = ((t * t) * (3.0f - (2.0f * t)));
            *reinterpret_cast<float4*>(out + __gn_base) = __gnv_out;
        } else {
            for (gn_i64 __gn_uid = __gn_base; __gn_uid < __gn_base + 4 && __gn_uid < __gn_total; ++__gn_uid) {
#line 15 "dask_kernels.py"  // dask_kernels.py:15  def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
                // grid tail: this thread's uid lies past every array it indexes
                if ((__gn_uid >= __gn_x_n0) & (__gn_uid >= __gn_out_n0)) goto __gn_next;
#line 16 "dask_kernels.py"  // dask_kernels.py:16  i: UniqueId = FlatLayout1D.uid()
                i = __gn_uid;
#line 17 "dask_kernels.py"  // dask_kernels.py:17  t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
                t = gn_min<float>(gn_max<float>(gn_fdiv((x[gn_chk_at(__gn_err, i, __gn_x_n0, 0u, __gn_uid, __gn_block)] - lo), (hi - lo)), 0.0f), 1.0f);
#line 18 "dask_kernels.py"  // dask_kernels.py:18  out[i] = t * t * (3.0 - 2.0 * t)
                out[gn_chk_at(__gn_err, i, __gn_out_n0, 1u, __gn_uid, __gn_block)] = ((t * t) * (3.0f - (2.0f * t)));
                __gn_next:;
            }
        }
    }
}

