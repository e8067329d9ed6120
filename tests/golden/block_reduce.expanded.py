"""Sum reduction: a shared-memory tree inside each block, then warp shuffles, then one partial
sum per block (written by a single thread).  The host adds the partial sums."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    shfl_down,
    sync_threads,
    thread_idx,
)

THREADS = 256


@gpu_kernel(Kernel1D, _spec={'schema': 1, 'version': '0.1.0', 'module': 'block_reduce', 'name': 'block_sum_kernel', 'file': 'examples/block_reduce.py', 'line': 28, 'ndim': 1, 'params': (('x', 'f32', 1, False), ('partial', 'f32', 1, True)), 'typevars': (), 'options': {'bounds_check': True, 'fastmath': False, 'max_registers': None}, 'variants': ({'types': (), 'symbol': 'gn_block_sum_kernel', 'id': 1339768005275929698, 'cuda': '// gpu_native 0.1.0: kernel block_sum_kernel of block_reduce (generated; do not edit)\n#define GN_KERNEL_ID 0x1297cfe703e7cc62ull\ntypedef unsigned long long gn_u64;\ntypedef long long gn_i64;\n\nstruct gn_error_record {\n    unsigned int state;\n    unsigned int site;\n    gn_u64 kernel;\n    gn_i64 index;\n    gn_i64 length;\n    unsigned int block[3];\n    unsigned int thread[3];\n    unsigned int count;\n    unsigned int reserved;\n};\n\n/* Record the first error of a launch into the host-mapped record, then end this thread.  No\n   trap: the CUDA context stays usable and the host raises at the next synchronisation. */\n__device__ __noinline__ void gn_fail(gn_error_record* rec, unsigned int site,\n                                            gn_i64 index, gn_i64 length) {\n    atomicAdd_system(&rec->count, 1u);\n    if (atomicCAS_system(&rec->state, 0u, 1u) == 0u) {\n        rec->site = site;\n        rec->kernel = GN_KERNEL_ID;\n        rec->index = index;\n        rec->length = length;\n        rec->block[0] = blockIdx.x; rec->block[1] = blockIdx.y; rec->block[2] = blockIdx.z;\n        rec->thread[0] = threadIdx.x; rec->thread[1] = threadIdx.y; rec->thread[2] = threadIdx.z;\n        __threadfence_system();\n        atomicExch_system(&rec->state, 2u);\n    }\n    asm volatile("exit;");\n}\n\n/* Bounds check: one unsigned comparison covers negative indices too. */\n__device__ __forceinline__ gn_i64 gn_chk(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                                unsigned int site) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail(rec, site, i, n);\n    return i;\n}\n\n__device__ __forceinline__ void gn_assert(gn_error_record* rec, bool ok, unsigned int site) {\n    if (__builtin_expect(!ok, 0)) gn_fail(rec, site, 0, 0);\n}\n\n/* Python floor division and modulo for integers (wrapping, INT_MIN // -1 == INT_MIN). */\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv(T a, T b) {\n    if ((T)-1 > (T)0) return a / b;\n    if (b == (T)-1) return (T)(0 - (gn_u64)a);\n    T q = a / b;\n    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n    return q;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod(T a, T b) {\n    if ((T)-1 > (T)0) return a % b;\n    if (b == (T)-1) return 0;\n    T r = a % b;\n    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n    return r;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_mod(a, b);\n}\n\n/* Python float modulo and floor division (the result of % has the divisor\'s sign). */\n__device__ __forceinline__ float gn_fmod_py(float a, float b) {\n    float m = fmodf(a, b);\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; }\n    else m = copysignf(0.0f, b);\n    return m;\n}\n__device__ __forceinline__ double gn_fmod_py(double a, double b) {\n    double m = fmod(a, b);\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }\n    else m = copysign(0.0, b);\n    return m;\n}\n__device__ __forceinline__ float gn_ffloordiv_py(float a, float b) {\n    float m = fmodf(a, b);\n    float d = (a - m) / b;\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) d -= 1.0f; }\n    if (d != 0.0f) { float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return f; }\n    return copysignf(0.0f, a / b);\n}\n__device__ __forceinline__ double gn_ffloordiv_py(double a, double b) {\n    double m = fmod(a, b);\n    double d = (a - m) / b;\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) d -= 1.0; }\n    if (d != 0.0) { double f = floor(d); if (d - f > 0.5) f += 1.0; return f; }\n    return copysign(0.0, a / b);\n}\n\n/* Shifts by a count outside 0..bits-1 give 0 (left) or the sign fill (right), as if the value\n   were shifted one bit at a time. */\ntemplate <typename T> __device__ __forceinline__ T gn_shl(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (T)0;\n    return (T)((gn_u64)a << n);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_shr(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (a < (T)0) ? (T)-1 : (T)0;\n    return a >> n;\n}\n\n/* Integer power with a constant non-negative exponent (wrapping). */\ntemplate <typename T> __device__ __forceinline__ T gn_ipow(T base, int e) {\n    gn_u64 result = 1, b = (gn_u64)base;\n    while (e > 0) { if (e & 1) result *= b; b *= b; e >>= 1; }\n    return (T)result;\n}\n\ntemplate <typename T> __device__ __forceinline__ T gn_sq(T a) { return a * a; }\n\n/* Python\'s min/max: min(a, b) is b only when b < a (so NaN handling follows the argument order). */\ntemplate <typename T> __device__ __forceinline__ T gn_min(T a, T b) { return (b < a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_max(T a, T b) { return (b > a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_iabs(T a) {\n    return (a < (T)0) ? (T)(0 - (gn_u64)a) : a;\n}\n\n/* Float to integer: truncate toward zero, saturate at the type\'s range, NaN gives 0. */\ntemplate <typename T> __device__ __forceinline__ T gn_f2i(double x, double lo, double hi) {\n    if (x != x) return (T)0;\n    if (x <= lo) return (T)lo;\n    if (x >= hi) return (T)hi;\n    return (T)trunc(x);\n}\n__device__ __forceinline__ gn_i64 gn_f2i64(double x) {\n    if (x != x) return 0;\n    if (x <= -9223372036854775808.0) return (gn_i64)0x8000000000000000ull;\n    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffll;\n    return (gn_i64)x;\n}\n__device__ __forceinline__ gn_u64 gn_f2u64(double x) {\n    if (x != x || x <= 0.0) return 0;\n    if (x >= 18446744073709551616.0) return 0xffffffffffffffffull;\n    return (gn_u64)x;\n}\n\n__device__ __forceinline__ int gn_lane_id() {\n    unsigned int lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n    return (int)lane;\n}\n__device__ __forceinline__ unsigned int gn_dynamic_smem_bytes() {\n    unsigned int bytes;\n    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));\n    return bytes;\n}\n\n/* Atomic min/max on floats through compare-and-swap (no native instruction). */\n__device__ __forceinline__ float gn_atomic_min(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v < __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ float gn_atomic_max(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v > __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ double gn_atomic_min(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v < __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ double gn_atomic_max(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v > __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ float gn_atomic_cas(float* p, float expected, float desired) {\n    return __int_as_float(atomicCAS((int*)p, __float_as_int(expected), __float_as_int(desired)));\n}\n__device__ __forceinline__ double gn_atomic_cas(double* p, double expected, double desired) {\n    return __longlong_as_double(atomicCAS((gn_u64*)p, (gn_u64)__double_as_longlong(expected),\n                                          (gn_u64)__double_as_longlong(desired)));\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_cas(T* p, T expected, T desired) {\n    return atomicCAS(p, expected, desired);\n}\n__device__ __forceinline__ gn_i64 gn_atomic_cas(gn_i64* p, gn_i64 expected, gn_i64 desired) {\n    return (gn_i64)atomicCAS((gn_u64*)p, (gn_u64)expected, (gn_u64)desired);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_load(T* p) {\n    return *(volatile T*)p;\n}\ntemplate <typename T> __device__ __forceinline__ void gn_atomic_store(T* p, T v) {\n    *(volatile T*)p = v;\n}\nextern "C" __global__ void gn_block_sum_kernel(\n    const float* __restrict__ x,\n    gn_i64 __gn_x_n0,\n    float* __restrict__ partial,\n    gn_i64 __gn_partial_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    __shared__ __align__(16) float cache[256];\n    int tid{};\n    float total{};\n    long long i{};\n    int s{};\n    float v{};\n    int offset{};\n#line 30 "block_reduce.py"\n    gn_assert(__gn_err, (((int)blockDim.x) == 256), 0u);\n#line 32 "block_reduce.py"\n    tid = ((int)threadIdx.x);\n#line 33 "block_reduce.py"\n    total = 0.0f;\n#line 34 "block_reduce.py"\n    {\n        const gn_i64 __gn_stop0 = __gn_x_n0;\n        for (gn_i64 __gn_i0 = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {\n            i = __gn_i0;\n#line 35 "block_reduce.py"\n            total = (total + x[i]);\n        }\n    }\n#line 36 "block_reduce.py"\n    cache[tid] = total;\n#line 37 "block_reduce.py"\n    __syncthreads();\n#line 38 "block_reduce.py"\n    s = 128;\n#line 39 "block_reduce.py"\n    while ((s > 32)) {\n#line 40 "block_reduce.py"\n        if ((tid < s)) {\n#line 41 "block_reduce.py"\n            cache[tid] = (cache[tid] + cache[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 1u)]);\n        }\n#line 42 "block_reduce.py"\n        __syncthreads();\n#line 43 "block_reduce.py"\n        s = gn_floordiv<int>(s, 2);\n    }\n#line 44 "block_reduce.py"\n    if ((tid < 32)) {\n#line 45 "block_reduce.py"\n        v = (cache[tid] + cache[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(32))), 256, 2u)]);\n#line 46 "block_reduce.py"\n        offset = 16;\n#line 47 "block_reduce.py"\n        while ((offset > 0)) {\n#line 48 "block_reduce.py"\n            v = (v + __shfl_down_sync(4294967295u, v, offset, 32));\n#line 49 "block_reduce.py"\n            offset = gn_floordiv<int>(offset, 2);\n        }\n#line 50 "block_reduce.py"\n        if ((tid == 0)) {\n#line 51 "block_reduce.py"\n            partial[gn_chk(__gn_err, (gn_i64)((int)blockIdx.x), __gn_partial_n0, 3u)] = v;\n        }\n    }\n}\n\n', 'sites': (('assert', 30, 4, 91, '', 0, 1, 'launch block_sum_kernel with THREADS threads per block'), ('index', 41, 26, 40, 'cache', 0, 1, ''), ('index', 45, 25, 40, 'cache', 0, 1, ''), ('index', 51, 12, 32, 'partial', 0, 1, '')), 'traits': ('uses_barriers', 'uses_shared', 'uses_warp')},)})
def block_sum_kernel(__gn):
    DA, (sig_x, sig_partial), pack, buf, args, launch, config, ok, failed, slow = __gn.fast_path()
    return lambda x, partial: (((err := launch(*config, (pack(buf, 0, x._gn_ptr, x._gn_n0, partial._gn_ptr, partial._gn_n0), args)[1], 0)[0]) is ok or failed(err)) and None) if x.__class__ is DA and x._gn_rsig is sig_x and partial.__class__ is DA and partial._gn_wsig is sig_partial and partial._gn_base is not x._gn_base else slow(x, partial)






















def device_sum(x, blocks: int = 264) -> float:
    partial = gn.empty(blocks, gn.f32)
    block_sum_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, partial)
    return float(partial.to_host().astype(np.float64).sum())


def run(n: int = 1 << 20, seed=None):
    rng = np.random.default_rng(seed)
    x_host = rng.standard_normal(n, dtype=np.float32)
    return device_sum(gn.to_device(x_host), blocks=64), float(x_host.astype(np.float64).sum())


def main():
    total, ref = run()
    print(f"block_reduce on {gn.backend()}: sum = {total:.4f}, reference = {ref:.4f}")
    assert abs(total - ref) <= 1e-3 * (1 + abs(ref))


if __name__ == "__main__":
    main()
