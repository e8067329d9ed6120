// gpu_native 0.1.0: kernel transpose_kernel of transpose (generated; do not edit)
#define GN_KERNEL_ID 0x24f25f25cdf98d35ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_transpose_kernel(
    const float* __restrict__ src,
    gn_i64 __gn_src_n0,
    gn_i64 __gn_src_n1,
    float* __restrict__ dst,
    gn_i64 __gn_dst_n0,
    gn_i64 __gn_dst_n1,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float tile[1056];
    int tx{};
    int ty{};
    int x{};
    int y{};
    int out_x{};
    int out_y{};
#line 27 "transpose.py"  // transpose.py:27  assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    // assert checked by the launcher (it depends only on the launch shape)
#line 29 "transpose.py"  // transpose.py:29  tx = thread_idx.x
    tx = ((int)threadIdx.x);
#line 30 "transpose.py"  // transpose.py:30  ty = thread_idx.y
    ty = ((int)threadIdx.y);
#line 31 "transpose.py"  // transpose.py:31  x = block_idx.x * TILE + tx
    x = ((int)(((int)(((int)blockIdx.x) * 32)) + tx));
#line 32 "transpose.py"  // transpose.py:32  y = block_idx.y * TILE + ty
    y = ((int)(((int)(((int)blockIdx.y) * 32)) + ty));
#line 33 "transpose.py"  // transpose.py:33  if y < src.shape[0] and x < src.shape[1]:
    if (((((long long)(y)) < __gn_src_n0) && (((long long)(x)) < __gn_src_n1))) {
#line 34 "transpose.py"  // transpose.py:34  tile[ty, tx] = src[y, x]
        tile[ty * 33 + tx] = src[(gn_i64)y * __gn_src_n1 + (gn_i64)x];
    }
#line 35 "transpose.py"  // transpose.py:35  sync_threads()
    __syncthreads();
#line 36 "transpose.py"  // transpose.py:36  out_x = block_idx.y * TILE + tx
    out_x = ((int)(((int)(((int)blockIdx.y) * 32)) + tx));
#line 37 "transpose.py"  // transpose.py:37  out_y = block_idx.x * TILE + ty
    out_y = ((int)(((int)(((int)blockIdx.x) * 32)) + ty));
#line 38 "transpose.py"  // transpose.py:38  if out_y < dst.shape[0] and out_x < dst.shape[1]:
    if (((((long long)(out_y)) < __gn_dst_n0) && (((long long)(out_x)) < __gn_dst_n1))) {
#line 39 "transpose.py"  // transpose.py:39  dst[out_y, out_x] = tile[tx, ty]
        dst[(gn_i64)out_y * __gn_dst_n1 + (gn_i64)out_x] = tile[tx * 33 + ty];
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_transpose_kernel_i32(
    const float* __restrict__ src,
    gn_i64 __gn_src_n0,
    gn_i64 __gn_src_n1,
    float* __restrict__ dst,
    gn_i64 __gn_dst_n0,
    gn_i64 __gn_dst_n1,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) float tile[1056];
    int tx{};
    int ty{};
    int x{};
    int y{};
    int out_x{};
    int out_y{};
#line 27 "transpose.py"  // transpose.py:27  assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    // assert checked by the launcher (it depends only on the launch shape)
#line 29 "transpose.py"  // transpose.py:29  tx = thread_idx.x
    tx = ((int)threadIdx.x);
#line 30 "transpose.py"  // transpose.py:30  ty = thread_idx.y
    ty = ((int)threadIdx.y);
#line 31 "transpose.py"  // transpose.py:31  x = block_idx.x * TILE + tx
    x = ((int)(((int)(((int)blockIdx.x) * 32)) + tx));
#line 32 "transpose.py"  // transpose.py:32  y = block_idx.y * TILE + ty
    y = ((int)(((int)(((int)blockIdx.y) * 32)) + ty));
#line 33 "transpose.py"  // transpose.py:33  if y < src.shape[0] and x < src.shape[1]:
    if (((y < ((int)__gn_src_n0)) && (x < ((int)__gn_src_n1)))) {
#line 34 "transpose.py"  // transpose.py:34  tile[ty, tx] = src[y, x]
        tile[ty * 33 + tx] = src[y * ((int)__gn_src_n1) + x];
    }
#line 35 "transpose.py"  // transpose.py:35  sync_threads()
    __syncthreads();
#line 36 "transpose.py"  // transpose.py:36  out_x = block_idx.y * TILE + tx
    out_x = ((int)(((int)(((int)blockIdx.y) * 32)) + tx));
#line 37 "transpose.py"  // transpose.py:37  out_y = block_idx.x * TILE + ty
    out_y = ((int)(((int)(((int)blockIdx.x) * 32)) + ty));
#line 38 "transpose.py"  // transpose.py:38  if out_y < dst.shape[0] and out_x < dst.shape[1]:
    if (((out_y < ((int)__gn_dst_n0)) && (out_x < ((int)__gn_dst_n1)))) {
#line 39 "transpose.py"  // transpose.py:39  dst[out_y, out_x] = tile[tx, ty]
        dst[out_y * ((int)__gn_dst_n1) + out_x] = tile[tx * 33 + ty];
    }
}

