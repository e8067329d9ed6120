// gpu_native 0.1.0: kernel histogram_kernel of distributed_torchrun (generated; do not edit)
#define GN_KERNEL_ID 0x740e8111062ba79eull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_histogram_kernel(
    const unsigned char* __restrict__ samples,
    gn_i64 __gn_samples_n0,
    int* __restrict__ hist,
    gn_i64 __gn_hist_n0,
    gn_error_record* __restrict__ __gn_err)
{
    long long i{};
#line 44 "distributed_torchrun.py"  // distributed_torchrun.py:44  for i in FlatLayout1D.grid_stride(len(samples)):
    {
        const gn_i64 __gn_stop0 = __gn_samples_n0;
        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {
            i = __gn_i0;
#line 45 "distributed_torchrun.py"  // distributed_torchrun.py:45  hist.atomic_ref(samples[i]).fetch_add(1)
            atomicAdd(&hist[gn_chk(__gn_err, (gn_i64)samples[i], __gn_hist_n0, 0u)], 1);
        }
    }
}

// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).
extern "C" __global__ void gn_histogram_kernel_uids(
    const unsigned char* __restrict__ samples,
    gn_i64 __gn_samples_n0,
    int* __restrict__ hist,
    gn_i64 __gn_hist_n0,
    gn_error_record* __restrict__ __gn_err,
    gn_i64 __gn_total,
    unsigned int __gn_block)
{
    long long i{};
    for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {
#line 44 "distributed_torchrun.py"  // distributed_torchrun.py:44  for i in FlatLayout1D.grid_stride(len(samples)):
        {
            const gn_i64 __gn_stop0 = __gn_samples_n0;
            for (gn_i64 __gn_i0 = __gn_uid; __gn_i0 < __gn_stop0; __gn_i0 += __gn_total) {
                i = __gn_i0;
#line 45 "distributed_torchrun.py"  // distributed_torchrun.py:45  hist.atomic_ref(samples[i]).fetch_add(1)
                atomicAdd(&hist[gn_chk_at(__gn_err, (gn_i64)samples[i], __gn_hist_n0, 0u, __gn_uid, __gn_block)], 1);
            }
        }
    }
}

