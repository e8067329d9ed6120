// gpu_native 0.1.0: kernel softmax_kernel of softmax (generated; do not edit)
#define GN_KERNEL_ID 0x23e0d2e2f56b4347ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_softmax_kernel(
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    gn_i64 __gn_x_n1,
    float* __restrict__ y,
    gn_i64 __gn_y_n0,
    gn_i64 __gn_y_n1,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float scratch[256];
    int row{};
    int tid{};
    long long cols{};
    float m{};
    long long j{};
    int s{};
    float total{};
#line 29 "softmax.py"  // softmax.py:29  assert block_dim.x == THREADS, "launch softmax_kernel with THREADS threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 31 "softmax.py"  // softmax.py:31  row = block_idx.x
    row = ((int)blockIdx.x);
#line 32 "softmax.py"  // softmax.py:32  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 33 "softmax.py"  // softmax.py:33  cols = x.shape[1]
    cols = __gn_x_n1;
#line 35 "softmax.py"  // softmax.py:35  m = f32(-math.inf)
    m = __int_as_float(0xff800000);
#line 36 "softmax.py"  // softmax.py:36  for j in range(tid, cols, THREADS):
    {
        const long long __gn_stop0 = cols;
        for (long long __gn_i0 = ((long long)(tid)); __gn_i0 < __gn_stop0; __gn_i0 += 256LL) {
            j = (long long)__gn_i0;
#line 37 "softmax.py"  // softmax.py:37  m = max(m, x[row, j])
            m = gn_max<float>(m, x[gn_chk(__gn_err, (gn_i64)row, __gn_x_n0, 1u) * __gn_x_n1 + j]);
        }
    }
#line 38 "softmax.py"  // softmax.py:38  scratch[tid] = m
    scratch[tid] = m;
#line 39 "softmax.py"  // softmax.py:39  sync_threads()
    __syncthreads();
#line 40 "softmax.py"  // softmax.py:40  s = THREADS // 2
    s = 128;
#line 41 "softmax.py"  // softmax.py:41  while s > 0:
    while ((s > 0)) {
#line 42 "softmax.py"  // softmax.py:42  if tid < s:
        if ((tid < s)) {
#line 43 "softmax.py"  // softmax.py:43  scratch[tid] = max(scratch[tid], scratch[tid + s])
            scratch[tid] = gn_max<float>(scratch[tid], scratch[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 2u)]);
        }
#line 44 "softmax.py"  // softmax.py:44  sync_threads()
        __syncthreads();
#line 45 "softmax.py"  // softmax.py:45  s //= 2
        s = gn_floordiv<int>(s, 2);
    }
#line 46 "softmax.py"  // softmax.py:46  m = scratch[0]
    m = scratch[0LL];
#line 47 "softmax.py"  // softmax.py:47  sync_threads()
    __syncthreads();
#line 49 "softmax.py"  // softmax.py:49  total = f32(0.0)
    total = 0.0f;
#line 50 "softmax.py"  // softmax.py:50  for j in range(tid, cols, THREADS):
    {
        const long long __gn_stop1 = cols;
        for (long long __gn_i1 = ((long long)(tid)); __gn_i1 < __gn_stop1; __gn_i1 += 256LL) {
            j = (long long)__gn_i1;
#line 51 "softmax.py"  // softmax.py:51  total += math.exp(x[row, j] - m)
            total = (total + expf((x[gn_chk(__gn_err, (gn_i64)row, __gn_x_n0, 3u) * __gn_x_n1 + j] - m)));
        }
    }
#line 52 "softmax.py"  // softmax.py:52  scratch[tid] = total
    scratch[tid] = total;
#line 53 "softmax.py"  // softmax.py:53  sync_threads()
    __syncthreads();
#line 54 "softmax.py"  // softmax.py:54  s = THREADS // 2
    s = 128;
#line 55 "softmax.py"  // softmax.py:55  while s > 0:
    while ((s > 0)) {
#line 56 "softmax.py"  // softmax.py:56  if tid < s:
        if ((tid < s)) {
#line 57 "softmax.py"  // softmax.py:57  scratch[tid] += scratch[tid + s]
            scratch[tid] = (scratch[tid] + scratch[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 4u)]);
        }
#line 58 "softmax.py"  // softmax.py:58  sync_threads()
        __syncthreads();
#line 59 "softmax.py"  // softmax.py:59  s //= 2
        s = gn_floordiv<int>(s, 2);
    }
#line 60 "softmax.py"  // softmax.py:60  total = scratch[0]
    total = scratch[0LL];
#line 61 "softmax.py"  // softmax.py:61  for j in range(tid, cols, THREADS):
    {
        const long long __gn_stop2 = cols;
        for (long long __gn_i2 = ((long long)(tid)); __gn_i2 < __gn_stop2; __gn_i2 += 256LL) {
            j = (long long)__gn_i2;
#line 62 "softmax.py"  // softmax.py:62  y[row, j] = math.exp(x[row, j] - m) / total
            y[gn_at2(__gn_err, (gn_i64)row, __gn_y_n0, 6u, j, __gn_y_n1, 7u)] = gn_fdiv(expf((x[gn_chk(__gn_err, (gn_i64)row, __gn_x_n0, 5u) * __gn_x_n1 + j] - m)), total);
        }
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_softmax_kernel_i32(
    const float* __restrict__ x,
    gn_i64 __gn_x_n0,
    gn_i64 __gn_x_n1,
    float* __restrict__ y,
    gn_i64 __gn_y_n0,
    gn_i64 __gn_y_n1,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float scratch[256];
    int row{};
    int tid{};
    int cols{};
    float m{};
    int j{};
    int s{};
    float total{};
#line 29 "softmax.py"  // softmax.py:29  assert block_dim.x == THREADS, "launch softmax_kernel with THREADS threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 31 "softmax.py"  // softmax.py:31  row = block_idx.x
    row = ((int)blockIdx.x);
#line 32 "softmax.py"  // softmax.py:32  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 33 "softmax.py"  // softmax.py:33  cols = x.shape[1]
    cols = ((int)__gn_x_n1);
#line 35 "softmax.py"  // softmax.py:35  m = f32(-math.inf)
    m = __int_as_float(0xff800000);
#line 36 "softmax.py"  // softmax.py:36  for j in range(tid, cols, THREADS):
    {
        const int __gn_stop0 = cols;
        for (int __gn_i0 = tid; __gn_i0 < __gn_stop0; __gn_i0 += 256) {
            j = (int)__gn_i0;
#line 37 "softmax.py"  // softmax.py:37  m = max(m, x[row, j])
            m = gn_max<float>(m, x[gn_chk32(__gn_err, row, ((int)__gn_x_n0), 1u) * ((int)__gn_x_n1) + j]);
        }
    }
#line 38 "softmax.py"  // softmax.py:38  scratch[tid] = m
    scratch[tid] = m;
#line 39 "softmax.py"  // softmax.py:39  sync_threads()
    __syncthreads();
#line 40 "softmax.py"  // softmax.py:40  s = THREADS // 2
    s = 128;
#line 41 "softmax.py"  // softmax.py:41  while s > 0:
    while ((s > 0)) {
#line 42 "softmax.py"  // softmax.py:42  if tid < s:
        if ((tid < s)) {
#line 43 "softmax.py"  // softmax.py:43  scratch[tid] = max(scratch[tid], scratch[tid + s])
            scratch[tid] = gn_max<float>(scratch[tid], scratch[gn_chk32(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 2u)]);
        }
#line 44 "softmax.py"  // softmax.py:44  sync_threads()
        __syncthreads();
#line 45 "softmax.py"  // softmax.py:45  s //= 2
        s = gn_floordiv<int>(s, 2);
    }
#line 46 "softmax.py"  // softmax.py:46  m = scratch[0]
    m = scratch[0];
#line 47 "softmax.py"  // softmax.py:47  sync_threads()
    __syncthreads();
#line 49 "softmax.py"  // softmax.py:49  total = f32(0.0)
    total = 0.0f;
#line 50 "softmax.py"  // softmax.py:50  for j in range(tid, cols, THREADS):
    {
        const int __gn_stop1 = cols;
        for (int __gn_i1 = tid; __gn_i1 < __gn_stop1; __gn_i1 += 256) {
            j = (int)__gn_i1;
#line 51 "softmax.py"  // softmax.py:51  total += math.exp(x[row, j] - m)
            total = (total + expf((x[gn_chk32(__gn_err, row, ((int)__gn_x_n0), 3u) * ((int)__gn_x_n1) + j] - m)));
        }
    }
#line 52 "softmax.py"  // softmax.py:52  scratch[tid] = total
    scratch[tid] = total;
#line 53 "softmax.py"  // softmax.py:53  sync_threads()
    __syncthreads();
#line 54 "softmax.py"  // softmax.py:54  s = THREADS // 2
    s = 128;
#line 55 "softmax.py"  // softmax.py:55  while s > 0:
    while ((s > 0)) {
#line 56 "softmax.py"  // softmax.py:56  if tid < s:
        if ((tid < s)) {
#line 57 "softmax.py"  // softmax.py:57  scratch[tid] += scratch[tid + s]
            scratch[tid] = (scratch[tid] + scratch[gn_chk32(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 4u)]);
        }
#line 58 "softmax.py"  // softmax.py:58  sync_threads()
        __syncthreads();
#line 59 "softmax.py"  // softmax.py:59  s //= 2
        s = gn_floordiv<int>(s, 2);
    }
#line 60 "softmax.py"  // softmax.py:60  total = scratch[0]
    total = scratch[0];
#line 61 "softmax.py"  // softmax.py:61  for j in range(tid, cols, THREADS):
    {
        const int __gn_stop2 = cols;
        for (int __gn_i2 = tid; __gn_i2 < __gn_stop2; __gn_i2 += 256) {
            j = (int)__gn_i2;
#line 62 "softmax.py"  // softmax.py:62  y[row, j] = math.exp(x[row, j] - m) / total
            y[gn_at2_32(__gn_err, row, ((int)__gn_y_n0), 6u, j, ((int)__gn_y_n1), 7u)] = gn_fdiv(expf((x[gn_chk32(__gn_err, row, ((int)__gn_x_n0), 5u) * ((int)__gn_x_n1) + j] - m)), total);
        }
    }
}

