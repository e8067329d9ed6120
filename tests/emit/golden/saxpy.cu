// gpu_native 0.1.0: kernel saxpy_kernel of saxpy (generated; do not edit)
#define GN_KERNEL_ID 0x363cd11b8e83e2f1ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_saxpy_kernel(
    float alpha,
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    const float* __restrict__ y,
    gn_i64 __gn_y_n0,
    float* __restrict__ out,
    gn_i64 __gn_out_n0,
    gn_error_record* __restrict__ __gn_err)
{
    long long i{};
#line 21 "saxpy.py"  // saxpy.py:21  for i in FlatLayout1D.grid_stride(len(out)):
    {
        const gn_i64 __gn_stop0 = __gn_out_n0;
        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {
            i = __gn_i0;
#line 22 "saxpy.py"  // saxpy.py:22  out[i] = alpha * x[i] + y[i]
            out[i] = ((alpha * x[gn_chk(__gn_err, i, __gn_x_n0, 0u)]) + y[gn_chk(__gn_err, i, __gn_y_n0, 1u)]);
        }
    }
}

// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).
extern "C" __global__ void gn_saxpy_kernel_uids(
    float alpha,
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    const float* __restrict__ y,
    gn_i64 __gn_y_n0,
    float* __restrict__ out,
    gn_i64 __gn_out_n0,
    gn_error_record* __restrict__ __gn_err,
    gn_i64 __gn_total,
    unsigned int __gn_block)
{
    long long i{};
    for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {
#line 21 "saxpy.py"  // saxpy.py:21  for i in FlatLayout1D.grid_stride(len(out)):
        {
            const gn_i64 __gn_stop0 = __gn_out_n0;
            for (gn_i64 __gn_i0 = __gn_uid; __gn_i0 < __gn_stop0; __gn_i0 += __gn_total) {
                i = __gn_i0;
#line 22 "saxpy.py"  // saxpy.py:22  out[i] = alpha * x[i] + y[i]
                out[i] = ((alpha * x[gn_chk_at(__gn_err, i, __gn_x_n0, 0u, __gn_uid, __gn_block)]) + y[gn_chk_at(__gn_err, i, __gn_y_n0, 1u, __gn_uid, __gn_block)]);
            }
        }
    }
}

