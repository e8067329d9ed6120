// gpu_native 0.1.0: kernel block_sum_kernel of block_reduce (generated; do not edit)
#define GN_KERNEL_ID 0x1297cfe703e7cc62ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_block_sum_kernel(
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    float* __restrict__ partial,
    gn_i64 __gn_partial_n0,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float cache[256];
    int tid{};
    float total{};
    long long i{};
    int s{};
    float v{};
    int offset{};
#line 30 "block_reduce.py"  // block_reduce.py:30  assert block_dim.x == THREADS, "launch block_sum_kernel with THREADS threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 32 "block_reduce.py"  // block_reduce.py:32  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 33 "block_reduce.py"  // block_reduce.py:33  total = f32(0.0)
    total = 0.0f;
#line 34 "block_reduce.py"  // block_reduce.py:34  for i in FlatLayout1D.grid_stride(len(x)):
    {
        const gn_i64 __gn_stop0 = __gn_x_n0;
        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {
            i = __gn_i0;
#line 35 "block_reduce.py"  // block_reduce.py:35  total += x[i]
            total = (total + x[i]);
        }
    }
#line 36 "block_reduce.py"  // block_reduce.py:36  cache[tid] = total
    cache[tid] = total;
#line 37 "block_reduce.py"  // block_reduce.py:37  sync_threads()
    __syncthreads();
#line 38 "block_reduce.py"  // block_reduce.py:38  s = THREADS // 2
    s = 128;
#line 39 "block_reduce.py"  // block_reduce.py:39  while s > 32:
    while ((s > 32)) {
#line 40 "block_reduce.py"  // block_reduce.py:40  if tid < s:
        if ((tid < s)) {
#line 41 "block_reduce.py"  // block_reduce.py:41  cache[tid] += cache[tid + s]
            cache[tid] = (cache[tid] + cache[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 1u)]);
        }
#line 42 "block_reduce.py"  // block_reduce.py:42  sync_threads()
        __syncthreads();
#line 43 "block_reduce.py"  // block_reduce.py:43  s //= 2
        s = gn_floordiv<int>(s, 2);
    }
#line 44 "block_reduce.py"  // block_reduce.py:44  if tid < 32:
    if ((tid < 32)) {
#line 45 "block_reduce.py"  // block_reduce.py:45  v = cache[tid] + cache[tid + 32]
        v = (cache[tid] + cache[((int)(tid + 32))]);
#line 46 "block_reduce.py"  // block_reduce.py:46  offset = 16
        offset = 16;
#line 47 "block_reduce.py"  // block_reduce.py:47  while offset > 0:
        while ((offset > 0)) {
#line 48 "block_reduce.py"  // block_reduce.py:48  v += shfl_down(v, offset)
            v = (v + __shfl_down_sync(4294967295u, v, offset, 32));
#line 49 "block_reduce.py"  // block_reduce.py:49  offset //= 2
            offset = gn_floordiv<int>(offset, 2);
        }
#line 50 "block_reduce.py"  // block_reduce.py:50  if tid == 0:
        if ((tid == 0)) {
#line 51 "block_reduce.py"  // block_reduce.py:51  partial[block_idx.x] = v
            partial[gn_chk(__gn_err, (gn_i64)((int)blockIdx.x), __gn_partial_n0, 2u)] = v;
        }
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_block_sum_kernel_i32(
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    float* __restrict__ partial,
    gn_i64 __gn_partial_n0,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float cache[256];
    int tid{};
    float total{};
    long long i{};
    int s{};
    float v{};
    int offset{};
#line 30 "block_reduce.py"  // block_reduce.py:30  assert block_dim.x == THREADS, "launch block_sum_kernel with THREADS threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 32 "block_reduce.py"  // block_reduce.py:32  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 33 "block_reduce.py"  // block_reduce.py:33  total = f32(0.0)
    total = 0.0f;
#line 34 "block_reduce.py"  // block_reduce.py:34  for i in FlatLayout1D.grid_stride(len(x)):
    {
        const gn_i64 __gn_stop0 = __gn_x_n0;
        for (gn_i64 __gn_i0 = ((gn_i64)((int)(blockIdx.x * blockDim.x + threadIdx.x))); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {
            i = __gn_i0;
#line 35 "block_reduce.py"  // block_reduce.py:35  total += x[i]
            total = (total + x[i]);
        }
    }
#line 36 "block_reduce.py"  // block_reduce.py:36  cache[tid] = total
    cache[tid] = total;
#line 37 "block_reduce.py"  // block_reduce.py:37  sync_threads()
    __syncthreads();
#line 38 "block_reduce.py"  // block_reduce.py:38  s = THREADS // 2
    s = 128;
#line 39 "block_reduce.py"  // block_reduce.py:39  while s > 32:
    while ((s > 32)) {
#line 40 "block_reduce.py"  // block_reduce.py:40  if tid < s:
        if ((tid < s)) {
#line 41 "block_reduce.py"  // block_reduce.py:41  cache[tid] += cache[tid + s]
            cache[tid] = (cache[tid] + cache[gn_chk32(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 1u)]);
        }
#line 42 "block_reduce.py"  // block_reduce.py:42  sync_threads()
        __syncthreads();
#line 43 "block_reduce.py"  // block_reduce.py:43  s //= 2
        s = gn_floordiv<int>(s, 2);
    }
#line 44 "block_reduce.py"  // block_reduce.py:44  if tid < 32:
    if ((tid < 32)) {
#line 45 "block_reduce.py"  // block_reduce.py:45  v = cache[tid] + cache[tid + 32]
        v = (cache[tid] + cache[((int)(tid + 32))]);
#line 46 "block_reduce.py"  // block_reduce.py:46  offset = 16
        offset = 16;
#line 47 "block_reduce.py"  // block_reduce.py:47  while offset > 0:
        while ((offset > 0)) {
#line 48 "block_reduce.py"  // block_reduce.py:48  v += shfl_down(v, offset)
            v = (v + __shfl_down_sync(4294967295u, v, offset, 32));
#line 49 "block_reduce.py"  // block_reduce.py:49  offset //= 2
            offset = gn_floordiv<int>(offset, 2);
        }
#line 50 "block_reduce.py"  // block_reduce.py:50  if tid == 0:
        if ((tid == 0)) {
#line 51 "block_reduce.py"  // block_reduce.py:51  partial[block_idx.x] = v
            partial[gn_chk32(__gn_err, ((int)blockIdx.x), ((int)__gn_partial_n0), 2u)] = v;
        }
    }
}

