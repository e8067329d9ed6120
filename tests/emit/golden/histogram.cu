// gpu_native 0.1.0: kernel histogram_kernel of histogram (generated; do not edit)
#define GN_KERNEL_ID 0x66c3dafe60a69107ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_histogram_kernel(
    const unsigned char* __restrict__ data,
    gn_i64 __gn_data_n0,
    unsigned int* __restrict__ hist,
    gn_i64 __gn_hist_n0,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) unsigned int local[256];
    int tid{};
    long long i{};
#line 29 "histogram.py"  // histogram.py:29  assert block_dim.x == BINS, "launch histogram_kernel with BINS threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 31 "histogram.py"  // histogram.py:31  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 32 "histogram.py"  // histogram.py:32  local[tid] = 0
    local[tid] = 0u;
#line 33 "histogram.py"  // histogram.py:33  sync_threads()
    __syncthreads();
#line 34 "histogram.py"  // histogram.py:34  for i in FlatLayout1D.grid_stride(len(data)):
    {
        const gn_i64 __gn_stop0 = __gn_data_n0;
        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {
            i = __gn_i0;
#line 35 "histogram.py"  // histogram.py:35  local.atomic_ref(data[i]).fetch_add(1)
            atomicAdd(&local[data[i]], 1u);
        }
    }
#line 36 "histogram.py"  // histogram.py:36  sync_threads()
    __syncthreads();
#line 37 "histogram.py"  // histogram.py:37  hist.atomic_ref(tid).fetch_add(local[tid])
    atomicAdd(&hist[gn_chk(__gn_err, (gn_i64)tid, __gn_hist_n0, 1u)], local[tid]);
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_histogram_kernel_i32(
    const unsigned char* __restrict__ data,
    gn_i64 __gn_data_n0,
    unsigned int* __restrict__ hist,
    gn_i64 __gn_hist_n0,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) unsigned int local[256];
    int tid{};
    long long i{};
#line 29 "histogram.py"  // histogram.py:29  assert block_dim.x == BINS, "launch histogram_kernel with BINS threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 31 "histogram.py"  // histogram.py:31  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 32 "histogram.py"  // histogram.py:32  local[tid] = 0
    local[tid] = 0u;
#line 33 "histogram.py"  // histogram.py:33  sync_threads()
    __syncthreads();
#line 34 "histogram.py"  // histogram.py:34  for i in FlatLayout1D.grid_stride(len(data)):
    {
        const gn_i64 __gn_stop0 = __gn_data_n0;
        for (gn_i64 __gn_i0 = ((gn_i64)((int)(blockIdx.x * blockDim.x + threadIdx.x))); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {
            i = __gn_i0;
#line 35 "histogram.py"  // histogram.py:35  local.atomic_ref(data[i]).fetch_add(1)
            atomicAdd(&local[((int)(data[i]))], 1u);
        }
    }
#line 36 "histogram.py"  // histogram.py:36  sync_threads()
    __syncthreads();
#line 37 "histogram.py"  // histogram.py:37  hist.atomic_ref(tid).fetch_add(local[tid])
    atomicAdd(&hist[gn_chk32(__gn_err, tid, ((int)__gn_hist_n0), 1u)], local[tid]);
}

