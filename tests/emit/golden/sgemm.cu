// gpu_native 0.1.0: kernel sgemm_kernel of sgemm (generated; do not edit)
#define GN_KERNEL_ID 0xe994eaacfea860e9ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_sgemm_kernel(
    const float* __restrict__ a,
    gn_i64 __gn_a_n0,
    gn_i64 __gn_a_n1,
    const float* __restrict__ b,
    gn_i64 __gn_b_n0,
    gn_i64 __gn_b_n1,
    float* __restrict__ c,
    gn_i64 __gn_c_n0,
    gn_i64 __gn_c_n1,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float tile_a[1024];
    __shared__ __align__(16) float tile_b[1024];
    int tx{};
    int ty{};
    int row{};
    int col{};
    long long n{};
    float acc{};
    long long t{};
    int k{};
#line 27 "sgemm.py"  // sgemm.py:27  assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    // assert checked by the launcher (it depends only on the launch shape)
#line 30 "sgemm.py"  // sgemm.py:30  tx = thread_idx.x
    tx = ((int)threadIdx.x);
#line 31 "sgemm.py"  // sgemm.py:31  ty = thread_idx.y
    ty = ((int)threadIdx.y);
#line 32 "sgemm.py"  // sgemm.py:32  row = block_idx.y * TILE + ty
    row = ((int)(((int)(((int)blockIdx.y) * 32)) + ty));
#line 33 "sgemm.py"  // sgemm.py:33  col = block_idx.x * TILE + tx
    col = ((int)(((int)(((int)blockIdx.x) * 32)) + tx));
#line 34 "sgemm.py"  // sgemm.py:34  n = a.shape[1]
    n = __gn_a_n1;
#line 35 "sgemm.py"  // sgemm.py:35  acc = f32(0.0)
    acc = 0.0f;
#line 36 "sgemm.py"  // sgemm.py:36  for t in range(0, n, TILE):
    {
        const long long __gn_stop0 = n;
        for (long long __gn_i0 = 0LL; __gn_i0 < __gn_stop0; __gn_i0 += 32LL) {
            t = (long long)__gn_i0;
#line 37 "sgemm.py"  // sgemm.py:37  if row < a.shape[0] and t + tx < n:
            if (((((long long)(row)) < __gn_a_n0) && (((long long)((unsigned long long)(t) + (unsigned long long)(((long long)(tx))))) < n))) {
#line 38 "sgemm.py"  // sgemm.py:38  tile_a[ty, tx] = a[row, t + tx]
                tile_a[ty * 32 + tx] = a[(gn_i64)row * __gn_a_n1 + ((long long)(t + ((long long)(tx))))];
            } else {
#line 40 "sgemm.py"  // sgemm.py:40  tile_a[ty, tx] = 0.0
                tile_a[ty * 32 + tx] = 0.0f;
            }
#line 41 "sgemm.py"  // sgemm.py:41  if t + ty < b.shape[0] and col < b.shape[1]:
            if (((((long long)((unsigned long long)(t) + (unsigned long long)(((long long)(ty))))) < __gn_b_n0) && (((long long)(col)) < __gn_b_n1))) {
#line 42 "sgemm.py"  // sgemm.py:42  tile_b[ty, tx] = b[t + ty, col]
                tile_b[ty * 32 + tx] = b[((long long)(t + ((long long)(ty)))) * __gn_b_n1 + (gn_i64)col];
            } else {
#line 44 "sgemm.py"  // sgemm.py:44  tile_b[ty, tx] = 0.0
                tile_b[ty * 32 + tx] = 0.0f;
            }
#line 45 "sgemm.py"  // sgemm.py:45  sync_threads()
            __syncthreads();
#line 46 "sgemm.py"  // sgemm.py:46  for k in range(TILE):
            {
                const int __gn_stop1 = 32;
                for (int __gn_i1 = 0; __gn_i1 < __gn_stop1; ++__gn_i1) {
                    k = (int)__gn_i1;
#line 47 "sgemm.py"  // sgemm.py:47  acc += tile_a[ty, k] * tile_b[k, tx]
                    acc = (acc + (tile_a[ty * 32 + k] * tile_b[k * 32 + tx]));
                }
            }
#line 48 "sgemm.py"  // sgemm.py:48  sync_threads()
            __syncthreads();
        }
    }
#line 49 "sgemm.py"  // sgemm.py:49  if row < c.shape[0] and col < c.shape[1]:
    if (((((long long)(row)) < __gn_c_n0) && (((long long)(col)) < __gn_c_n1))) {
#line 50 "sgemm.py"  // sgemm.py:50  c[row, col] = acc
        c[(gn_i64)row * __gn_c_n1 + (gn_i64)col] = acc;
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_sgemm_kernel_i32(
    const float* __restrict__ a,
    gn_i64 __gn_a_n0,
    gn_i64 __gn_a_n1,
    const float* __restrict__ b,
    gn_i64 __gn_b_n0,
    gn_i64 __gn_b_n1,
    float* __restrict__ c,
    gn_i64 __gn_c_n0,
    gn_i64 __gn_c_n1,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float tile_a[1024];
    __shared__ __align__(16) float tile_b[1024];
    int tx{};
    int ty{};
    int row{};
    int col{};
    int n{};
    float acc{};
    int t{};
    int k{};
#line 27 "sgemm.py"  // sgemm.py:27  assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    // assert checked by the launcher (it depends only on the launch shape)
#line 30 "sgemm.py"  // sgemm.py:30  tx = thread_idx.x
    tx = ((int)threadIdx.x);
#line 31 "sgemm.py"  // sgemm.py:31  ty = thread_idx.y
    ty = ((int)threadIdx.y);
#line 32 "sgemm.py"  // sgemm.py:32  row = block_idx.y * TILE + ty
    row = ((int)(((int)(((int)blockIdx.y) * 32)) + ty));
#line 33 "sgemm.py"  // sgemm.py:33  col = block_idx.x * TILE + tx
    col = ((int)(((int)(((int)blockIdx.x) * 32)) + tx));
#line 34 "sgemm.py"  // sgemm.py:34  n = a.shape[1]
    n = ((int)__gn_a_n1);
#line 35 "sgemm.py"  // sgemm.py:35  acc = f32(0.0)
    acc = 0.0f;
#line 36 "sgemm.py"  // sgemm.py:36  for t in range(0, n, TILE):
    {
        const int __gn_stop0 = n;
        for (int __gn_i0 = 0; __gn_i0 < __gn_stop0; __gn_i0 += 32) {
            t = (int)__gn_i0;
#line 37 "sgemm.py"  // sgemm.py:37  if row < a.shape[0] and t + tx < n:
            if (((row < ((int)__gn_a_n0)) && ((t + tx) < n))) {
#line 38 "sgemm.py"  // sgemm.py:38  tile_a[ty, tx] = a[row, t + tx]
                tile_a[ty * 32 + tx] = a[row * ((int)__gn_a_n1) + (t + tx)];
            } else {
#line 40 "sgemm.py"  // sgemm.py:40  tile_a[ty, tx] = 0.0
                tile_a[ty * 32 + tx] = 0.0f;
            }
#line 41 "sgemm.py"  // sgemm.py:41  if t + ty < b.shape[0] and col < b.shape[1]:
            if ((((t + ty) < ((int)__gn_b_n0)) && (col < ((int)__gn_b_n1)))) {
#line 42 "sgemm.py"  // sgemm.py:42  tile_b[ty, tx] = b[t + ty, col]
                tile_b[ty * 32 + tx] = b[(t + ty) * ((int)__gn_b_n1) + col];
            } else {
#line 44 "sgemm.py"  // sgemm.py:44  tile_b[ty, tx] = 0.0
                tile_b[ty * 32 + tx] = 0.0f;
            }
#line 45 "sgemm.py"  // sgemm.py:45  sync_threads()
            __syncthreads();
#line 46 "sgemm.py"  // sgemm.py:46  for k in range(TILE):
            {
                const int __gn_stop1 = 32;
                for (int __gn_i1 = 0; __gn_i1 < __gn_stop1; ++__gn_i1) {
                    k = (int)__gn_i1;
#line 47 "sgemm.py"  // sgemm.py:47  acc += tile_a[ty, k] * tile_b[k, tx]
                    acc = (acc + (tile_a[ty * 32 + k] * tile_b[k * 32 + tx]));
                }
            }
#line 48 "sgemm.py"  // sgemm.py:48  sync_threads()
            __syncthreads();
        }
    }
#line 49 "sgemm.py"  // sgemm.py:49  if row < c.shape[0] and col < c.shape[1]:
    if (((row < ((int)__gn_c_n0)) && (col < ((int)__gn_c_n1)))) {
#line 50 "sgemm.py"  // sgemm.py:50  c[row, col] = acc
        c[row * ((int)__gn_c_n1) + col] = acc;
    }
}

