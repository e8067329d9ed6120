// gpu_native 0.1.0: kernel add_kernel of vector_add (generated; do not edit)
#define GN_KERNEL_ID 0x5c95d8d2c54a13bbull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_add_kernel(
    const float* __restrict__ a,
    gn_i64 __gn_a_n0,
    const float* __restrict__ b,
    gn_i64 __gn_b_n0,
    float* __restrict__ c,
    gn_i64 __gn_c_n0,
    gn_error_record* __restrict__ __gn_err)
{
    long long idx{};
#line 24 "vector_add.py"  // vector_add.py:24  def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    // grid tail: this thread's uid lies past every array it indexes
    if ((((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_a_n0) & (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_b_n0) & (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_c_n0)) return;
#line 25 "vector_add.py"  // vector_add.py:25  idx: UniqueId = FlatLayout1D.uid()
    idx = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]
    c[gn_chk(__gn_err, idx, __gn_c_n0, 2u)] = (a[gn_chk(__gn_err, idx, __gn_a_n0, 0u)] + b[gn_chk(__gn_err, idx, __gn_b_n0, 1u)]);
}

// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).
extern "C" __global__ void gn_add_kernel_uids(
    const float* __restrict__ a,
    gn_i64 __gn_a_n0,
    const float* __restrict__ b,
    gn_i64 __gn_b_n0,
    float* __restrict__ c,
    gn_i64 __gn_c_n0,
    gn_error_record* __restrict__ __gn_err,
    gn_i64 __gn_total,
    unsigned int __gn_block)
{
    long long idx{};
    // Every uid-indexed array is read and written 16 bytes (4 uids) at a time where the pointers are aligned and the 4 uids lie inside every array.
    gn_i64 __gn_n = __gn_total; __gn_n = __gn_b_n0 < __gn_n ? __gn_b_n0 : __gn_n; __gn_n = __gn_a_n0 < __gn_n ? __gn_a_n0 : __gn_n; __gn_n = __gn_c_n0 < __gn_n ? __gn_c_n0 : __gn_n;
    const bool __gn_aligned = (((gn_u64)b | (gn_u64)a | (gn_u64)c) & 15) == 0;
    const gn_i64 __gn_chunks = (__gn_total + 3) / 4;
    for (gn_i64 __gn_chunk = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_chunk < __gn_chunks; __gn_chunk += (gn_i64)gridDim.x * blockDim.x) {
        const gn_i64 __gn_base = __gn_chunk * 4;
        if (__gn_aligned && __gn_base + 4 <= __gn_n) {
            float4 __gnv_b = *reinterpret_cast<const float4*>(b + __gn_base);
            float4 __gnv_a = *reinterpret_cast<const float4*>(a + __gn_base);
            float4 __gnv_c;
#line 24 "vector_add.py"  // vector_add.py:24  def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
#line 25 "vector_add.py"  // vector_add.py:25  idx: UniqueId = FlatLayout1D.uid()
            idx = (__gn_base + 0);
#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]
            __gnv_c.x = (__gnv_a.x + __gnv_b.x);
#line 24 "vector_add.py"  // vector_add.py:24  def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
#line 25 "vector_add.py"  // vector_add.py:25  idx: UniqueId = FlatLayout1D.uid()
            idx = (__gn_base + 1);
#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]
            __gnv_c.y = (__gnv_a.y + __gnv_b.y);
#line 24 "vector_add.py"  // vector_add.py:24  def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
#line 25 "vector_add.py"  // vector_add.py:25  idx: UniqueId = FlatLayout1D.uid()
            idx = (__gn_base + 2);
#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]
            __gnv_c.z = (__gnv_a.z + __gnv_b.z);
#line 24 "vector_add.py"  // vector_add.py:24  def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
#line 25 "vector_add.py"  // vector_add.py:25  idx: UniqueId = FlatLayout1D.uid()
            idx = (__gn_base + 3);
#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]
            __gnv_c.w = (__gnv_a.w + __gnv_b.w);
            *reinterpret_cast<float4*>(c + __gn_base) = __gnv_c;
        } else {
            for (gn_i64 __gn_uid = __gn_base; __gn_uid < __gn_base + 4 && __gn_uid < __gn_total; ++__gn_uid) {
#line 24 "vector_add.py"  // vector_add.py:24  def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
                // grid tail: this thread's uid lies past every array it indexes
                if ((__gn_uid >= __gn_a_n0) & (__gn_uid >= __gn_b_n0) & (__gn_uid >= __gn_c_n0)) goto __gn_next;
#line 25 "vector_add.py"  // vector_add.py:25  idx: UniqueId = FlatLayout1D.uid()
                idx = __gn_uid;
#line 26 "vector_add.py"  // vector_add.py:26  c[idx] = a[idx] + b[idx]
                c[gn_chk_at(__gn_err, idx, __gn_c_n0, 2u, __gn_uid, __gn_block)] = (a[gn_chk_at(__gn_err, idx, __gn_a_n0, 0u, __gn_uid, __gn_block)] + b[gn_chk_at(__gn_err, idx, __gn_b_n0, 1u, __gn_uid, __gn_block)]);
                __gn_next:;
            }
        }
    }
}

