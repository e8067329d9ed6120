"""Row softmax: one block per row; block-wide max and sum through shared memory."""

import math

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

THREADS = 256


@gpu_kernel(Kernel1D, _spec={'schema': 1, 'version': '0.1.0', 'module': 'softmax', 'name': 'softmax_kernel', 'file': 'examples/softmax.py', 'line': 27, 'ndim': 1, 'params': (('x', 'f32', 2, False), ('y', 'f32', 2, True)), 'typevars': (), 'options': {'bounds_check': True, 'fastmath': False, 'max_registers': None}, 'variants': ({'types': (), 'symbol': 'gn_softmax_kernel', 'id': 2585298058332554055, 'cuda': '// gpu_native 0.1.0: kernel softmax_kernel of softmax (generated; do not edit)\n#define GN_KERNEL_ID 0x23e0d2e2f56b4347ull\ntypedef unsigned long long gn_u64;\ntypedef long long gn_i64;\n\nstruct gn_error_record {\n    unsigned int state;\n    unsigned int site;\n    gn_u64 kernel;\n    gn_i64 index;\n    gn_i64 length;\n    unsigned int block[3];\n    unsigned int thread[3];\n    unsigned int count;\n    unsigned int reserved;\n};\n\n/* Record the first error of a launch into the host-mapped record.  No trap: the CUDA context\n   stays usable and the host raises at the next synchronisation. */\n__device__ __noinline__ void gn_record(gn_error_record* rec, unsigned int site, gn_i64 index,\n                                       gn_i64 length, uint3 block, uint3 thread) {\n    atomicAdd_system(&rec->count, 1u);\n    if (atomicCAS_system(&rec->state, 0u, 1u) == 0u) {\n        rec->site = site;\n        rec->kernel = GN_KERNEL_ID;\n        rec->index = index;\n        rec->length = length;\n        rec->block[0] = block.x; rec->block[1] = block.y; rec->block[2] = block.z;\n        rec->thread[0] = thread.x; rec->thread[1] = thread.y; rec->thread[2] = thread.z;\n        __threadfence_system();\n        atomicExch_system(&rec->state, 2u);\n    }\n}\n\n/* Report an error and end this thread. */\n__device__ __forceinline__ void gn_fail(gn_error_record* rec, unsigned int site, gn_i64 index,\n                                        gn_i64 length) {\n    gn_record(rec, site, index, length, blockIdx, threadIdx);\n    asm volatile("exit;");\n}\n\n/* The same for a kernel that runs its logical grid on fewer threads: report the logical block and\n   thread of `uid`, as the user launched it. */\n__device__ __forceinline__ void gn_fail_at(gn_error_record* rec, unsigned int site, gn_i64 index,\n                                           gn_i64 length, gn_i64 uid, unsigned int bdim) {\n    gn_record(rec, site, index, length, make_uint3((unsigned int)(uid / bdim), 0u, 0u),\n              make_uint3((unsigned int)(uid % bdim), 0u, 0u));\n    asm volatile("exit;");\n}\n\n/* Bounds check: one unsigned comparison covers negative indices too. */\n__device__ __forceinline__ gn_i64 gn_chk(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                         unsigned int site) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail(rec, site, i, n);\n    return i;\n}\n__device__ __forceinline__ gn_i64 gn_chk_at(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                            unsigned int site, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail_at(rec, site, i, n, uid, bdim);\n    return i;\n}\n\n__device__ __forceinline__ void gn_assert(gn_error_record* rec, bool ok, unsigned int site) {\n    if (__builtin_expect(!ok, 0)) gn_fail(rec, site, 0, 0);\n}\n__device__ __forceinline__ void gn_assert_at(gn_error_record* rec, bool ok, unsigned int site,\n                                             gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(!ok, 0)) gn_fail_at(rec, site, 0, 0, uid, bdim);\n}\n\n/* Python floor division and modulo for integers (wrapping, INT_MIN // -1 == INT_MIN). */\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv(T a, T b) {\n    if ((T)-1 > (T)0) return a / b;\n    if (b == (T)-1) return (T)(0 - (gn_u64)a);\n    T q = a / b;\n    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n    return q;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod(T a, T b) {\n    if ((T)-1 > (T)0) return a % b;\n    if (b == (T)-1) return 0;\n    T r = a % b;\n    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n    return r;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_mod(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk_at(\n        gn_error_record* rec, T a, T b, unsigned int site, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(b == 0, 0)) gn_fail_at(rec, site, (gn_i64)a, 0, uid, bdim);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk_at(\n        gn_error_record* rec, T a, T b, unsigned int site, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(b == 0, 0)) gn_fail_at(rec, site, (gn_i64)a, 0, uid, bdim);\n    return gn_mod(a, b);\n}\n\n/* Python float modulo and floor division (the result of % has the divisor\'s sign). */\n__device__ __forceinline__ float gn_fmod_py(float a, float b) {\n    float m = fmodf(a, b);\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; }\n    else m = copysignf(0.0f, b);\n    return m;\n}\n__device__ __forceinline__ double gn_fmod_py(double a, double b) {\n    double m = fmod(a, b);\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }\n    else m = copysign(0.0, b);\n    return m;\n}\n__device__ __forceinline__ float gn_ffloordiv_py(float a, float b) {\n    float m = fmodf(a, b);\n    float d = (a - m) / b;\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) d -= 1.0f; }\n    if (d != 0.0f) { float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return f; }\n    return copysignf(0.0f, a / b);\n}\n__device__ __forceinline__ double gn_ffloordiv_py(double a, double b) {\n    double m = fmod(a, b);\n    double d = (a - m) / b;\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) d -= 1.0; }\n    if (d != 0.0) { double f = floor(d); if (d - f > 0.5) f += 1.0; return f; }\n    return copysign(0.0, a / b);\n}\n\n/* Shifts by a count outside 0..bits-1 give 0 (left) or the sign fill (right), as if the value\n   were shifted one bit at a time. */\ntemplate <typename T> __device__ __forceinline__ T gn_shl(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (T)0;\n    return (T)((gn_u64)a << n);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_shr(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (a < (T)0) ? (T)-1 : (T)0;\n    return a >> n;\n}\n\n/* Integer power with a constant non-negative exponent (wrapping). */\ntemplate <typename T> __device__ __forceinline__ T gn_ipow(T base, int e) {\n    gn_u64 result = 1, b = (gn_u64)base;\n    while (e > 0) { if (e & 1) result *= b; b *= b; e >>= 1; }\n    return (T)result;\n}\n\ntemplate <typename T> __device__ __forceinline__ T gn_sq(T a) { return a * a; }\n\n/* Python\'s min/max: min(a, b) is b only when b < a (so NaN handling follows the argument order). */\ntemplate <typename T> __device__ __forceinline__ T gn_min(T a, T b) { return (b < a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_max(T a, T b) { return (b > a) ? b : a; }\n/* abs with wraparound: abs(INT_MIN) is INT_MIN.  Written in PTX so that the optimiser cannot\n   assume the result is non-negative (it would then drop the floor-division correction). */\ntemplate <typename T> __device__ __forceinline__ T gn_iabs(T a) {\n    return (a < (T)0) ? (T)(0 - (gn_u64)a) : a;\n}\ntemplate <> __device__ __forceinline__ int gn_iabs<int>(int a) {\n    int r; asm("abs.s32 %0, %1;" : "=r"(r) : "r"(a)); return r;\n}\ntemplate <> __device__ __forceinline__ long long gn_iabs<long long>(long long a) {\n    long long r; asm("abs.s64 %0, %1;" : "=l"(r) : "l"(a)); return r;\n}\n\n/* Float to integer: truncate toward zero, saturate at the type\'s range, NaN gives 0. */\ntemplate <typename T> __device__ __forceinline__ T gn_f2i(double x, double lo, double hi) {\n    if (x != x) return (T)0;\n    if (x <= lo) return (T)lo;\n    if (x >= hi) return (T)hi;\n    return (T)trunc(x);\n}\n__device__ __forceinline__ gn_i64 gn_f2i64(double x) {\n    if (x != x) return 0;\n    if (x <= -9223372036854775808.0) return (gn_i64)0x8000000000000000ull;\n    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffll;\n    return (gn_i64)x;\n}\n__device__ __forceinline__ gn_u64 gn_f2u64(double x) {\n    if (x != x || x <= 0.0) return 0;\n    if (x >= 18446744073709551616.0) return 0xffffffffffffffffull;\n    return (gn_u64)x;\n}\n\n__device__ __forceinline__ int gn_lane_id() {\n    unsigned int lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n    return (int)lane;\n}\n__device__ __forceinline__ unsigned int gn_dynamic_smem_bytes() {\n    unsigned int bytes;\n    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));\n    return bytes;\n}\n\n/* Atomic min/max on floats through compare-and-swap (no native instruction). */\n__device__ __forceinline__ float gn_atomic_min(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v < __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ float gn_atomic_max(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v > __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ double gn_atomic_min(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v < __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ double gn_atomic_max(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v > __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ float gn_atomic_cas(float* p, float expected, float desired) {\n    return __int_as_float(atomicCAS((int*)p, __float_as_int(expected), __float_as_int(desired)));\n}\n__device__ __forceinline__ double gn_atomic_cas(double* p, double expected, double desired) {\n    return __longlong_as_double(atomicCAS((gn_u64*)p, (gn_u64)__double_as_longlong(expected),\n                                          (gn_u64)__double_as_longlong(desired)));\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_cas(T* p, T expected, T desired) {\n    return atomicCAS(p, expected, desired);\n}\n__device__ __forceinline__ gn_i64 gn_atomic_cas(gn_i64* p, gn_i64 expected, gn_i64 desired) {\n    return (gn_i64)atomicCAS((gn_u64*)p, (gn_u64)expected, (gn_u64)desired);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_load(T* p) {\n    return *(volatile T*)p;\n}\ntemplate <typename T> __device__ __forceinline__ void gn_atomic_store(T* p, T v) {\n    *(volatile T*)p = v;\n}\nextern "C" __global__ void gn_softmax_kernel(\n    const float* __restrict__ x,\n    gn_i64 __gn_x_n0,\n    gn_i64 __gn_x_n1,\n    float* __restrict__ y,\n    gn_i64 __gn_y_n0,\n    gn_i64 __gn_y_n1,\n    gn_error_record* __restrict__ __gn_err)\n{\n    __shared__ __align__(16) float scratch[256];\n    int row{};\n    int tid{};\n    long long cols{};\n    float m{};\n    long long j{};\n    int s{};\n    float total{};\n#line 29 "softmax.py"\n    gn_assert(__gn_err, (((int)blockDim.x) == 256), 0u);\n#line 31 "softmax.py"\n    row = ((int)blockIdx.x);\n#line 32 "softmax.py"\n    tid = ((int)threadIdx.x);\n#line 33 "softmax.py"\n    cols = __gn_x_n1;\n#line 35 "softmax.py"\n    m = __int_as_float(0xff800000);\n#line 36 "softmax.py"\n    {\n        const long long __gn_stop0 = cols;\n        for (long long __gn_i0 = ((long long)(tid)); __gn_i0 < __gn_stop0; __gn_i0 = (__gn_i0 > __gn_stop0 - 256LL) ? __gn_stop0 : (long long)(__gn_i0 + 256LL)) {\n            j = (long long)__gn_i0;\n#line 37 "softmax.py"\n            m = gn_max<float>(m, x[gn_chk(__gn_err, (gn_i64)row, __gn_x_n0, 1u) * __gn_x_n1 + j]);\n        }\n    }\n#line 38 "softmax.py"\n    scratch[tid] = m;\n#line 39 "softmax.py"\n    __syncthreads();\n#line 40 "softmax.py"\n    s = 128;\n#line 41 "softmax.py"\n    while ((s > 0)) {\n#line 42 "softmax.py"\n        if ((tid < s)) {\n#line 43 "softmax.py"\n            scratch[tid] = gn_max<float>(scratch[tid], scratch[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 2u)]);\n        }\n#line 44 "softmax.py"\n        __syncthreads();\n#line 45 "softmax.py"\n        s = gn_floordiv<int>(s, 2);\n    }\n#line 46 "softmax.py"\n    m = scratch[0LL];\n#line 47 "softmax.py"\n    __syncthreads();\n#line 49 "softmax.py"\n    total = 0.0f;\n#line 50 "softmax.py"\n    {\n        const long long __gn_stop1 = cols;\n        for (long long __gn_i1 = ((long long)(tid)); __gn_i1 < __gn_stop1; __gn_i1 = (__gn_i1 > __gn_stop1 - 256LL) ? __gn_stop1 : (long long)(__gn_i1 + 256LL)) {\n            j = (long long)__gn_i1;\n#line 51 "softmax.py"\n            total = (total + expf((x[gn_chk(__gn_err, (gn_i64)row, __gn_x_n0, 3u) * __gn_x_n1 + j] - m)));\n        }\n    }\n#line 52 "softmax.py"\n    scratch[tid] = total;\n#line 53 "softmax.py"\n    __syncthreads();\n#line 54 "softmax.py"\n    s = 128;\n#line 55 "softmax.py"\n    while ((s > 0)) {\n#line 56 "softmax.py"\n        if ((tid < s)) {\n#line 57 "softmax.py"\n            scratch[tid] = (scratch[tid] + scratch[gn_chk(__gn_err, ((int)((unsigned int)(tid) + (unsigned int)(s))), 256, 4u)]);\n        }\n#line 58 "softmax.py"\n        __syncthreads();\n#line 59 "softmax.py"\n        s = gn_floordiv<int>(s, 2);\n    }\n#line 60 "softmax.py"\n    total = scratch[0LL];\n#line 61 "softmax.py"\n    {\n        const long long __gn_stop2 = cols;\n        for (long long __gn_i2 = ((long long)(tid)); __gn_i2 < __gn_stop2; __gn_i2 = (__gn_i2 > __gn_stop2 - 256LL) ? __gn_stop2 : (long long)(__gn_i2 + 256LL)) {\n            j = (long long)__gn_i2;\n#line 62 "softmax.py"\n            y[gn_chk(__gn_err, (gn_i64)row, __gn_y_n0, 6u) * __gn_y_n1 + gn_chk(__gn_err, j, __gn_y_n1, 7u)] = (expf((x[gn_chk(__gn_err, (gn_i64)row, __gn_x_n0, 5u) * __gn_x_n1 + j] - m)) / total);\n        }\n    }\n}\n\n', 'sites': (('assert', 29, 4, 89, '', 0, 1, 'launch softmax_kernel with THREADS threads per block'), ('index', 37, 19, 28, 'x', 0, 2, ''), ('index', 43, 45, 61, 'scratch', 0, 1, ''), ('index', 51, 26, 35, 'x', 0, 2, ''), ('index', 57, 28, 44, 'scratch', 0, 1, ''), ('index', 62, 29, 38, 'x', 0, 2, ''), ('index', 62, 8, 17, 'y', 0, 2, ''), ('index', 62, 8, 17, 'y', 1, 2, '')), 'traits': ('uses_barriers', 'uses_shared')},)})
def softmax_kernel(__gn):
    DA, (sig_x, sig_y), pack, buf, args, launch, (fn, gx, gy, gz, bx, by, bz, smem, stream), ok, failed, slow = __gn.fast_path()
    return lambda x, y: (((err := launch(fn, gx, gy, gz, bx, by, bz, smem, stream, (pack(buf, 0, x._gn_ptr, x._gn_n0, x._gn_n1, y._gn_ptr, y._gn_n0, y._gn_n1), args)[1], 0)[0]) is ok or failed(err)) and None) if x.__class__ is DA and x._gn_rsig is sig_x and y.__class__ is DA and y._gn_wsig is sig_y and y._gn_base is not x._gn_base else slow(x, y)


































def softmax(x, y):
    softmax_kernel.launch(GridDim1D(x.shape[0]), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, y)


def run(rows: int = 64, cols: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    y = gn.empty((rows, cols), gn.f32)
    y.fill(np.nan)
    softmax(gn.to_device(x), y)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return y.to_host(), e / e.sum(axis=1, keepdims=True)


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"softmax on {gn.backend()}: {out.shape}, max |error| {err:.2e}")
    assert err < 1e-6


if __name__ == "__main__":
    main()
