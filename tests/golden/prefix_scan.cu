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
#line 30 "prefix_scan.py"
    // assert checked by the launcher (it depends only on the launch shape)
#line 32 "prefix_scan.py"
    tid = ((int)threadIdx.x);
#line 33 "prefix_scan.py"
    gid = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 34 "prefix_scan.py"
    value = 0;
#line 35 "prefix_scan.py"
    if ((gid < __gn_x_n0)) {
#line 36 "prefix_scan.py"
        value = x[gid];
    }
#line 37 "prefix_scan.py"
    temp[tid] = value;
#line 38 "prefix_scan.py"
    __syncthreads();
#line 39 "prefix_scan.py"
    offset = 1;
#line 40 "prefix_scan.py"
    while ((offset < 256)) {
#line 41 "prefix_scan.py"
        addend = 0;
#line 42 "prefix_scan.py"
        if ((tid >= offset)) {
#line 43 "prefix_scan.py"
            addend = temp[gn_chk(__gn_err, ((int)((unsigned int)(tid) - (unsigned int)(offset))), 256, 1u)];
        }
#line 44 "prefix_scan.py"
        __syncthreads();
#line 45 "prefix_scan.py"
        temp[tid] = ((int)((unsigned int)(temp[tid]) + (unsigned int)(addend)));
#line 46 "prefix_scan.py"
        __syncthreads();
#line 47 "prefix_scan.py"
        offset = ((int)((unsigned int)(offset) * (unsigned int)(2)));
    }
#line 48 "prefix_scan.py"
    if ((gid < __gn_out_n0)) {
#line 49 "prefix_scan.py"
        out[gid] = temp[tid];
    }
#line 50 "prefix_scan.py"
    if ((tid == 255)) {
#line 51 "prefix_scan.py"
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
#line 30 "prefix_scan.py"
    // assert checked by the launcher (it depends only on the launch shape)
#line 32 "prefix_scan.py"
    tid = ((int)threadIdx.x);
#line 33 "prefix_scan.py"
    gid = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
#line 34 "prefix_scan.py"
    value = 0;
#line 35 "prefix_scan.py"
    if ((gid < ((int)__gn_x_n0))) {
#line 36 "prefix_scan.py"
        value = x[gid];
    }
#line 37 "prefix_scan.py"
    temp[tid] = value;
#line 38 "prefix_scan.py"
    __syncthreads();
#line 39 "prefix_scan.py"
    offset = 1;
#line 40 "prefix_scan.py"
    while ((offset < 256)) {
#line 41 "prefix_scan.py"
        addend = 0;
#line 42 "prefix_scan.py"
        if ((tid >= offset)) {
#line 43 "prefix_scan.py"
            addend = temp[gn_chk32(__gn_err, ((int)((unsigned int)(tid) - (unsigned int)(offset))), 256, 1u)];
        }
#line 44 "prefix_scan.py"
        __syncthreads();
#line 45 "prefix_scan.py"
        temp[tid] = ((int)((unsigned int)(temp[tid]) + (unsigned int)(addend)));
#line 46 "prefix_scan.py"
        __syncthreads();
#line 47 "prefix_scan.py"
        offset = ((int)((unsigned int)(offset) * (unsigned int)(2)));
    }
#line 48 "prefix_scan.py"
    if ((gid < ((int)__gn_out_n0))) {
#line 49 "prefix_scan.py"
        out[gid] = temp[tid];
    }
#line 50 "prefix_scan.py"
    if ((tid == 255)) {
#line 51 "prefix_scan.py"
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
#line 55 "prefix_scan.py"
    // grid tail: this thread's uid lies past every array it indexes
    if ((((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_out_n0)) return;
#line 56 "prefix_scan.py"
    gid = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 57 "prefix_scan.py"
    block = ((int)blockIdx.x);
#line 58 "prefix_scan.py"
    if (((block > 0) && (gid < __gn_out_n0))) {
#line 59 "prefix_scan.py"
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
#line 55 "prefix_scan.py"
    // grid tail: this thread's uid lies past every array it indexes
    if ((((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_out_n0))) return;
#line 56 "prefix_scan.py"
    gid = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
#line 57 "prefix_scan.py"
    block = ((int)blockIdx.x);
#line 58 "prefix_scan.py"
    if (((block > 0) && (gid < ((int)__gn_out_n0)))) {
#line 59 "prefix_scan.py"
        out[gid] = ((int)((unsigned int)(out[gid]) + (unsigned int)(scanned_sums[gn_chk32(__gn_err, ((int)(block - 1)), ((int)__gn_scanned_sums_n0), 0u)])));
    }
}

