// gpu_native 0.1.0: kernel block_scan_kernel of prefix_scan (generated; do not edit)
#define GN_KERNEL_ID 0x23c439211d768510ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_block_scan_kernel(
    const int* __restrict__ x,
    gn_i64 __gn_x_n0,
    int* __restrict__ out,
    gn_i64 __gn_out_n0,
    int* __restrict__ block_sums,
    gn_i64 __gn_block_sums_n0,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) int temp[256];
    int tid{};
    long long gid{};
    int value{};
    int offset{};
    int addend{};
#line 30 "prefix_scan.py"  // prefix_scan.py:30  assert block_dim.x == BLOCK, "launch block_scan_kernel with BLOCK threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 32 "prefix_scan.py"  // prefix_scan.py:32  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 33 "prefix_scan.py"  // prefix_scan.py:33  gid: UniqueId = FlatLayout1D.uid()
    gid = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 34 "prefix_scan.py"  // prefix_scan.py:34  value = 0
    value = 0;
#line 35 "prefix_scan.py"  // prefix_scan.py:35  if gid < len(x):
    if ((gid < __gn_x_n0)) {
#line 36 "prefix_scan.py"  // prefix_scan.py:36  value = x[gid]
        value = x[gid];
    }
#line 37 "prefix_scan.py"  // prefix_scan.py:37  temp[tid] = value
    temp[tid] = value;
#line 38 "prefix_scan.py"  // prefix_scan.py:38  sync_threads()
    __syncthreads();
#line 39 "prefix_scan.py"  // prefix_scan.py:39  offset = 1
    offset = 1;
#line 40 "prefix_scan.py"  // prefix_scan.py:40  while offset < BLOCK:
    while ((offset < 256)) {
#line 41 "prefix_scan.py"  // prefix_scan.py:41  addend = 0
        addend = 0;
#line 42 "prefix_scan.py"  // prefix_scan.py:42  if tid >= offset:
        if ((tid >= offset)) {
#line 43 "prefix_scan.py"  // prefix_scan.py:43  addend = temp[tid - offset]
            addend = temp[gn_chk(__gn_err, ((int)((unsigned int)(tid) - (unsigned int)(offset))), 256, 1u)];
        }
#line 44 "prefix_scan.py"  // prefix_scan.py:44  sync_threads()
        __syncthreads();
#line 45 "prefix_scan.py"  // prefix_scan.py:45  temp[tid] += addend
        temp[tid] = ((int)((unsigned int)(temp[tid]) + (unsigned int)(addend)));
#line 46 "prefix_scan.py"  // prefix_scan.py:46  sync_threads()
        __syncthreads();
#line 47 "prefix_scan.py"  // prefix_scan.py:47  offset *= 2
        offset = ((int)((unsigned int)(offset) * (unsigned int)(2)));
    }
#line 48 "prefix_scan.py"  // prefix_scan.py:48  if gid < len(out):
    if ((gid < __gn_out_n0)) {
#line 49 "prefix_scan.py"  // prefix_scan.py:49  out[gid] = temp[tid]
        out[gid] = temp[tid];
    }
#line 50 "prefix_scan.py"  // prefix_scan.py:50  if tid == BLOCK - 1:
    if ((tid == 255)) {
#line 51 "prefix_scan.py"  // prefix_scan.py:51  block_sums[block_idx.x] = temp[tid]
        block_sums[gn_chk(__gn_err, (gn_i64)((int)blockIdx.x), __gn_block_sums_n0, 2u)] = temp[tid];
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_block_scan_kernel_i32(
    const int* __restrict__ x,
    gn_i64 __gn_x_n0,
    int* __restrict__ out,
    gn_i64 __gn_out_n0,
    int* __restrict__ block_sums,
    gn_i64 __gn_block_sums_n0,
    gn_error_record* __restrict__ __gn_err)
{
    __shared__ __align__(16) int temp[256];
    int tid{};
    int gid{};
    int value{};
    int offset{};
    int addend{};
#line 30 "prefix_scan.py"  // prefix_scan.py:30  assert block_dim.x == BLOCK, "launch block_scan_kernel with BLOCK threads per block"
    // assert checked by the launcher (it depends only on the launch shape)
#line 32 "prefix_scan.py"  // prefix_scan.py:32  tid = thread_idx.x
    tid = ((int)threadIdx.x);
#line 33 "prefix_scan.py"  // prefix_scan.py:33  gid: UniqueId = FlatLayout1D.uid()
    gid = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
#line 34 "prefix_scan.py"  // prefix_scan.py:34  value = 0
    value = 0;
#line 35 "prefix_scan.py"  // prefix_scan.py:35  if gid < len(x):
    if ((gid < ((int)__gn_x_n0))) {
#line 36 "prefix_scan.py"  // prefix_scan.py:36  value = x[gid]
        value = x[gid];
    }
#line 37 "prefix_scan.py"  // prefix_scan.py:37  temp[tid] = value
    temp[tid] = value;
#line 38 "prefix_scan.py"  // prefix_scan.py:38  sync_threads()
    __syncthreads();
#line 39 "prefix_scan.py"  // prefix_scan.py:39  offset = 1
    offset = 1;
#line 40 "prefix_scan.py"  // prefix_scan.py:40  while offset < BLOCK:
    while ((offset < 256)) {
#line 41 "prefix_scan.py"  // prefix_scan.py:41  addend = 0
        addend = 0;
#line 42 "prefix_scan.py"  // prefix_scan.py:42  if tid >= offset:
        if ((tid >= offset)) {
#line 43 "prefix_scan.py"  // prefix_scan.py:43  addend = temp[tid - offset]
            addend = temp[gn_chk32(__gn_err, ((int)((unsigned int)(tid) - (unsigned int)(offset))), 256, 1u)];
        }
#line 44 "prefix_scan.py"  // prefix_scan.py:44  sync_threads()
        __syncthreads();
#line 45 "prefix_scan.py"  // prefix_scan.py:45  temp[tid] += addend
        temp[tid] = ((int)((unsigned int)(temp[tid]) + (unsigned int)(addend)));
#line 46 "prefix_scan.py"  // prefix_scan.py:46  sync_threads()
        __syncthreads();
#line 47 "prefix_scan.py"  // prefix_scan.py:47  offset *= 2
        offset = ((int)((unsigned int)(offset) * (unsigned int)(2)));
    }
#line 48 "prefix_scan.py"  // prefix_scan.py:48  if gid < len(out):
    if ((gid < ((int)__gn_out_n0))) {
#line 49 "prefix_scan.py"  // prefix_scan.py:49  out[gid] = temp[tid]
        out[gid] = temp[tid];
    }
#line 50 "prefix_scan.py"  // prefix_scan.py:50  if tid == BLOCK - 1:
    if ((tid == 255)) {
#line 51 "prefix_scan.py"  // prefix_scan.py:51  block_sums[block_idx.x] = temp[tid]
        block_sums[gn_chk32(__gn_err, ((int)blockIdx.x), ((int)__gn_block_sums_n0), 2u)] = temp[tid];
    }
}

// gpu_native 0.1.0: kernel add_offsets_kernel of prefix_scan (generated; do not edit)
#define GN_KERNEL_ID 0x796f7e652fffc607ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_add_offsets_kernel(
    int* __restrict__ out,
    gn_i64 __gn_out_n0,
    const int* __restrict__ scanned_sums,
    gn_i64 __gn_scanned_sums_n0,
    gn_error_record* __restrict__ __gn_err)
{
    long long gid{};
    int block{};
#line 55 "prefix_scan.py"  // prefix_scan.py:55  def add_offsets_kernel(out: CUDASliceMut[i32], scanned_sums: CUDASlice[i32]):
    // grid tail: this thread's uid lies past every array it indexes
    if ((((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_out_n0)) return;
#line 56 "prefix_scan.py"  // prefix_scan.py:56  gid: UniqueId = FlatLayout1D.uid()
    gid = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 57 "prefix_scan.py"  // prefix_scan.py:57  block = block_idx.x
    block = ((int)blockIdx.x);
#line 58 "prefix_scan.py"  // prefix_scan.py:58  if block > 0 and gid < len(out):
    if (((block > 0) && (gid < __gn_out_n0))) {
#line 59 "prefix_scan.py"  // prefix_scan.py:59  out[gid] += scanned_sums[block - 1]
        out[gid] = ((int)((unsigned int)(out[gid]) + (unsigned int)(scanned_sums[gn_chk(__gn_err, (gn_i64)((int)(block - 1)), __gn_scanned_sums_n0, 0u)])));
    }
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_add_offsets_kernel_i32(
    int* __restrict__ out,
    gn_i64 __gn_out_n0,
    const int* __restrict__ scanned_sums,
    gn_i64 __gn_scanned_sums_n0,
    gn_error_record* __restrict__ __gn_err)
{
    int gid{};
    int block{};
#line 55 "prefix_scan.py"  // prefix_scan.py:55  def add_offsets_kernel(out: CUDASliceMut[i32], scanned_sums: CUDASlice[i32]):
    // grid tail: this thread's uid lies past every array it indexes
    if ((((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_out_n0))) return;
#line 56 "prefix_scan.py"  // prefix_scan.py:56  gid: UniqueId = FlatLayout1D.uid()
    gid = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
#line 57 "prefix_scan.py"  // prefix_scan.py:57  block = block_idx.x
    block = ((int)blockIdx.x);
#line 58 "prefix_scan.py"  // prefix_scan.py:58  if block > 0 and gid < len(out):
    if (((block > 0) && (gid < ((int)__gn_out_n0)))) {
#line 59 "prefix_scan.py"  // prefix_scan.py:59  out[gid] += scanned_sums[block - 1]
        out[gid] = ((int)((unsigned int)(out[gid]) + (unsigned int)(scanned_sums[gn_chk32(__gn_err, ((int)(block - 1)), ((int)__gn_scanned_sums_n0), 0u)])));
    }
}

