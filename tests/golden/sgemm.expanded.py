"""Tiled SGEMM: C = A @ B with 32x32 tiles staged through shared memory."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim2D,
    Kernel2D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

TILE = 32


@gpu_kernel(Kernel2D, _spec={'schema': 1, 'version': '0.1.0', 'module': 'sgemm', 'name': 'sgemm_kernel', 'file': 'examples/sgemm.py', 'line': 25, 'ndim': 2, 'params': (('a', 'f32', 2, False), ('b', 'f32', 2, False), ('c', 'f32', 2, True)), 'typevars': (), 'options': {'bounds_check': True, 'fastmath': False, 'max_registers': None}, 'variants': ({'types': (), 'symbol': 'gn_sgemm_kernel', 'id': 16831335736118108393, 'cuda': '// gpu_native 0.1.0: kernel sgemm_kernel of sgemm (generated; do not edit)\n#define GN_KERNEL_ID 0xe994eaacfea860e9ull\ntypedef unsigned long long gn_u64;\ntypedef long long gn_i64;\n\nstruct gn_error_record {\n    unsigned int state;\n    unsigned int site;\n    gn_u64 kernel;\n    gn_i64 index;\n    gn_i64 length;\n    unsigned int block[3];\n    unsigned int thread[3];\n    unsigned int count;\n    unsigned int reserved;\n};\n\n/* Record the first error of a launch into the host-mapped record, then end this thread.  No\n   trap: the CUDA context stays usable and the host raises at the next synchronisation. */\n__device__ __noinline__ void gn_fail(gn_error_record* rec, unsigned int site,\n                                            gn_i64 index, gn_i64 length) {\n    atomicAdd_system(&rec->count, 1u);\n    if (atomicCAS_system(&rec->state, 0u, 1u) == 0u) {\n        rec->site = site;\n        rec->kernel = GN_KERNEL_ID;\n        rec->index = index;\n        rec->length = length;\n        rec->block[0] = blockIdx.x; rec->block[1] = blockIdx.y; rec->block[2] = blockIdx.z;\n        rec->thread[0] = threadIdx.x; rec->thread[1] = threadIdx.y; rec->thread[2] = threadIdx.z;\n        __threadfence_system();\n        atomicExch_system(&rec->state, 2u);\n    }\n    asm volatile("exit;");\n}\n\n/* Bounds check: one unsigned comparison covers negative indices too. */\n__device__ __forceinline__ gn_i64 gn_chk(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                                unsigned int site) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail(rec, site, i, n);\n    return i;\n}\n\n__device__ __forceinline__ void gn_assert(gn_error_record* rec, bool ok, unsigned int site) {\n    if (__builtin_expect(!ok, 0)) gn_fail(rec, site, 0, 0);\n}\n\n/* Python floor division and modulo for integers (wrapping, INT_MIN // -1 == INT_MIN). */\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv(T a, T b) {\n    if ((T)-1 > (T)0) return a / b;\n    if (b == (T)-1) return (T)(0 - (gn_u64)a);\n    T q = a / b;\n    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n    return q;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod(T a, T b) {\n    if ((T)-1 > (T)0) return a % b;\n    if (b == (T)-1) return 0;\n    T r = a % b;\n    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n    return r;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_mod(a, b);\n}\n\n/* Python float modulo and floor division (the result of % has the divisor\'s sign). */\n__device__ __forceinline__ float gn_fmod_py(float a, float b) {\n    float m = fmodf(a, b);\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; }\n    else m = copysignf(0.0f, b);\n    return m;\n}\n__device__ __forceinline__ double gn_fmod_py(double a, double b) {\n    double m = fmod(a, b);\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }\n    else m = copysign(0.0, b);\n    return m;\n}\n__device__ __forceinline__ float gn_ffloordiv_py(float a, float b) {\n    float m = fmodf(a, b);\n    float d = (a - m) / b;\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) d -= 1.0f; }\n    if (d != 0.0f) { float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return f; }\n    return copysignf(0.0f, a / b);\n}\n__device__ __forceinline__ double gn_ffloordiv_py(double a, double b) {\n    double m = fmod(a, b);\n    double d = (a - m) / b;\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) d -= 1.0; }\n    if (d != 0.0) { double f = floor(d); if (d - f > 0.5) f += 1.0; return f; }\n    return copysign(0.0, a / b);\n}\n\n/* Shifts by a count outside 0..bits-1 give 0 (left) or the sign fill (right), as if the value\n   were shifted one bit at a time. */\ntemplate <typename T> __device__ __forceinline__ T gn_shl(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (T)0;\n    return (T)((gn_u64)a << n);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_shr(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (a < (T)0) ? (T)-1 : (T)0;\n    return a >> n;\n}\n\n/* Integer power with a constant non-negative exponent (wrapping). */\ntemplate <typename T> __device__ __forceinline__ T gn_ipow(T base, int e) {\n    gn_u64 result = 1, b = (gn_u64)base;\n    while (e > 0) { if (e & 1) result *= b; b *= b; e >>= 1; }\n    return (T)result;\n}\n\ntemplate <typename T> __device__ __forceinline__ T gn_sq(T a) { return a * a; }\n\n/* Python\'s min/max: min(a, b) is b only when b < a (so NaN handling follows the argument order). */\ntemplate <typename T> __device__ __forceinline__ T gn_min(T a, T b) { return (b < a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_max(T a, T b) { return (b > a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_iabs(T a) {\n    return (a < (T)0) ? (T)(0 - (gn_u64)a) : a;\n}\n\n/* Float to integer: truncate toward zero, saturate at the type\'s range, NaN gives 0. */\ntemplate <typename T> __device__ __forceinline__ T gn_f2i(double x, double lo, double hi) {\n    if (x != x) return (T)0;\n    if (x <= lo) return (T)lo;\n    if (x >= hi) return (T)hi;\n    return (T)trunc(x);\n}\n__device__ __forceinline__ gn_i64 gn_f2i64(double x) {\n    if (x != x) return 0;\n    if (x <= -9223372036854775808.0) return (gn_i64)0x8000000000000000ull;\n    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffll;\n    return (gn_i64)x;\n}\n__device__ __forceinline__ gn_u64 gn_f2u64(double x) {\n    if (x != x || x <= 0.0) return 0;\n    if (x >= 18446744073709551616.0) return 0xffffffffffffffffull;\n    return (gn_u64)x;\n}\n\n__device__ __forceinline__ int gn_lane_id() {\n    unsigned int lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n    return (int)lane;\n}\n__device__ __forceinline__ unsigned int gn_dynamic_smem_bytes() {\n    unsigned int bytes;\n    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));\n    return bytes;\n}\n\n/* Atomic min/max on floats through compare-and-swap (no native instruction). */\n__device__ __forceinline__ float gn_atomic_min(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v < __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ float gn_atomic_max(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v > __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ double gn_atomic_min(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v < __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ double gn_atomic_max(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v > __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ float gn_atomic_cas(float* p, float expected, float desired) {\n    return __int_as_float(atomicCAS((int*)p, __float_as_int(expected), __float_as_int(desired)));\n}\n__device__ __forceinline__ double gn_atomic_cas(double* p, double expected, double desired) {\n    return __longlong_as_double(atomicCAS((gn_u64*)p, (gn_u64)__double_as_longlong(expected),\n                                          (gn_u64)__double_as_longlong(desired)));\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_cas(T* p, T expected, T desired) {\n    return atomicCAS(p, expected, desired);\n}\n__device__ __forceinline__ gn_i64 gn_atomic_cas(gn_i64* p, gn_i64 expected, gn_i64 desired) {\n    return (gn_i64)atomicCAS((gn_u64*)p, (gn_u64)expected, (gn_u64)desired);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_load(T* p) {\n    return *(volatile T*)p;\n}\ntemplate <typename T> __device__ __forceinline__ void gn_atomic_store(T* p, T v) {\n    *(volatile T*)p = v;\n}\nextern "C" __global__ void gn_sgemm_kernel(\n    const float* __restrict__ a,\n    gn_i64 __gn_a_n0,\n    gn_i64 __gn_a_n1,\n    const float* __restrict__ b,\n    gn_i64 __gn_b_n0,\n    gn_i64 __gn_b_n1,\n    float* __restrict__ c,\n    gn_i64 __gn_c_n0,\n    gn_i64 __gn_c_n1,\n    gn_error_record* __restrict__ __gn_err)\n{\n    __shared__ __align__(16) float tile_a[1024];\n    __shared__ __align__(16) float tile_b[1024];\n    int tx{};\n    int ty{};\n    int row{};\n    int col{};\n    long long n{};\n    float acc{};\n    long long t{};\n    int k{};\n#line 27 "sgemm.py"\n    gn_assert(__gn_err, ((((int)blockDim.x) == 32) && (((int)blockDim.y) == 32)), 0u);\n#line 30 "sgemm.py"\n    tx = ((int)threadIdx.x);\n#line 31 "sgemm.py"\n    ty = ((int)threadIdx.y);\n#line 32 "sgemm.py"\n    row = ((int)((unsigned int)(((int)((unsigned int)(((int)blockIdx.y)) * (unsigned int)(32)))) + (unsigned int)(ty)));\n#line 33 "sgemm.py"\n    col = ((int)((unsigned int)(((int)((unsigned int)(((int)blockIdx.x)) * (unsigned int)(32)))) + (unsigned int)(tx)));\n#line 34 "sgemm.py"\n    n = __gn_a_n1;\n#line 35 "sgemm.py"\n    acc = 0.0f;\n#line 36 "sgemm.py"\n    {\n        const long long __gn_stop0 = n;\n        for (long long __gn_i0 = 0LL; __gn_i0 < __gn_stop0; __gn_i0 += 32LL) {\n            t = (long long)__gn_i0;\n#line 37 "sgemm.py"\n            if (((((long long)(row)) < __gn_a_n0) && (((long long)((unsigned long long)(t) + (unsigned long long)(((long long)(tx))))) < n))) {\n#line 38 "sgemm.py"\n                tile_a[ty * 32 + tx] = a[(gn_i64)row * __gn_a_n1 + ((long long)((unsigned long long)(t) + (unsigned long long)(((long long)(tx)))))];\n            } else {\n#line 40 "sgemm.py"\n                tile_a[ty * 32 + tx] = 0.0f;\n            }\n#line 41 "sgemm.py"\n            if (((((long long)((unsigned long long)(t) + (unsigned long long)(((long long)(ty))))) < __gn_b_n0) && (((long long)(col)) < __gn_b_n1))) {\n#line 42 "sgemm.py"\n                tile_b[ty * 32 + tx] = b[((long long)((unsigned long long)(t) + (unsigned long long)(((long long)(ty))))) * __gn_b_n1 + (gn_i64)col];\n            } else {\n#line 44 "sgemm.py"\n                tile_b[ty * 32 + tx] = 0.0f;\n            }\n#line 45 "sgemm.py"\n            __syncthreads();\n#line 46 "sgemm.py"\n            {\n                const int __gn_stop1 = 32;\n                for (int __gn_i1 = 0; __gn_i1 < __gn_stop1; ++__gn_i1) {\n                    k = (int)__gn_i1;\n#line 47 "sgemm.py"\n                    acc = (acc + (tile_a[ty * 32 + k] * tile_b[k * 32 + tx]));\n                }\n            }\n#line 48 "sgemm.py"\n            __syncthreads();\n        }\n    }\n#line 49 "sgemm.py"\n    if (((((long long)(row)) < __gn_c_n0) && (((long long)(col)) < __gn_c_n1))) {\n#line 50 "sgemm.py"\n        c[(gn_i64)row * __gn_c_n1 + (gn_i64)col] = acc;\n    }\n}\n\n', 'sites': (('assert', 27, 4, 89, '', 0, 1, 'launch with TILE x TILE threads'),), 'traits': ('uses_barriers', 'uses_shared')},)})
def sgemm_kernel(__gn):
    DA, (sig_a, sig_b, sig_c), pack, buf, args, launch, config, ok, failed, slow = __gn.fast_path()
    return lambda a, b, c: (((err := launch(*config, (pack(buf, 0, a._gn_ptr, a._gn_n0, a._gn_n1, b._gn_ptr, b._gn_n0, b._gn_n1, c._gn_ptr, c._gn_n0, c._gn_n1), args)[1], 0)[0]) is ok or failed(err)) and None) if a.__class__ is DA and a._gn_rsig is sig_a and b.__class__ is DA and b._gn_rsig is sig_b and c.__class__ is DA and c._gn_wsig is sig_c and c._gn_base is not a._gn_base and c._gn_base is not b._gn_base else slow(a, b, c)
























def sgemm(a, b, c):
    m, n = c.shape
    grid = GridDim2D((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    sgemm_kernel.launch(grid, BlockDim2D(TILE, TILE), 0, DEFAULT_STREAM)(a, b, c)


def run(m: int = 256, k: int = 192, n: int = 160, seed=None):
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal((m, k), dtype=np.float32)
    b_host = rng.standard_normal((k, n), dtype=np.float32)
    c = gn.empty((m, n), gn.f32)
    c.fill(np.nan)
    sgemm(gn.to_device(a_host), gn.to_device(b_host), c)
    return c.to_host(), a_host.astype(np.float64) @ b_host.astype(np.float64)


def main():
    out, ref = run()
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"sgemm on {gn.backend()}: {out.shape}, relative error {rel:.2e}")
    assert rel < 1e-5


if __name__ == "__main__":
    main()
