"""N-body accelerations: every body against every other, softened gravity, one thread per body."""

import math

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    UniqueId,
    f32,
    gpu_kernel,
)


@gpu_kernel(Kernel1D, _spec={'schema': 1, 'version': '0.1.0', 'module': 'nbody', 'name': 'accelerations_kernel', 'file': 'examples/nbody.py', 'line': 22, 'ndim': 1, 'params': (('bodies', 'f32', 2, False), ('acc', 'f32', 2, True), ('softening', 'f32', 0, False)), 'typevars': (), 'options': {'bounds_check': True, 'fastmath': False, 'max_registers': None}, 'variants': ({'types': (), 'symbol': 'gn_accelerations_kernel', 'id': 515605831783657050, 'cuda': '// gpu_native 0.1.0: kernel accelerations_kernel of nbody (generated; do not edit)\n#define GN_KERNEL_ID 0x0727ccc5af95ae5aull\ntypedef unsigned long long gn_u64;\ntypedef long long gn_i64;\n\nstruct gn_error_record {\n    unsigned int state;\n    unsigned int site;\n    gn_u64 kernel;\n    gn_i64 index;\n    gn_i64 length;\n    unsigned int block[3];\n    unsigned int thread[3];\n    unsigned int count;\n    unsigned int reserved;\n};\n\n/* Record the first error of a launch into the host-mapped record, then end this thread.  No\n   trap: the CUDA context stays usable and the host raises at the next synchronisation. */\n__device__ __noinline__ void gn_fail(gn_error_record* rec, unsigned int site,\n                                            gn_i64 index, gn_i64 length) {\n    atomicAdd_system(&rec->count, 1u);\n    if (atomicCAS_system(&rec->state, 0u, 1u) == 0u) {\n        rec->site = site;\n        rec->kernel = GN_KERNEL_ID;\n        rec->index = index;\n        rec->length = length;\n        rec->block[0] = blockIdx.x; rec->block[1] = blockIdx.y; rec->block[2] = blockIdx.z;\n        rec->thread[0] = threadIdx.x; rec->thread[1] = threadIdx.y; rec->thread[2] = threadIdx.z;\n        __threadfence_system();\n        atomicExch_system(&rec->state, 2u);\n    }\n    asm volatile("exit;");\n}\n\n/* Bounds check: one unsigned comparison covers negative indices too. */\n__device__ __forceinline__ gn_i64 gn_chk(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                                unsigned int site) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail(rec, site, i, n);\n    return i;\n}\n\n__device__ __forceinline__ void gn_assert(gn_error_record* rec, bool ok, unsigned int site) {\n    if (__builtin_expect(!ok, 0)) gn_fail(rec, site, 0, 0);\n}\n\n/* Python floor division and modulo for integers (wrapping, INT_MIN // -1 == INT_MIN). */\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv(T a, T b) {\n    if ((T)-1 > (T)0) return a / b;\n    if (b == (T)-1) return (T)(0 - (gn_u64)a);\n    T q = a / b;\n    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n    return q;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod(T a, T b) {\n    if ((T)-1 > (T)0) return a % b;\n    if (b == (T)-1) return 0;\n    T r = a % b;\n    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n    return r;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_mod(a, b);\n}\n\n/* Python float modulo and floor division (the result of % has the divisor\'s sign). */\n__device__ __forceinline__ float gn_fmod_py(float a, float b) {\n    float m = fmodf(a, b);\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; }\n    else m = copysignf(0.0f, b);\n    return m;\n}\n__device__ __forceinline__ double gn_fmod_py(double a, double b) {\n    double m = fmod(a, b);\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }\n    else m = copysign(0.0, b);\n    return m;\n}\n__device__ __forceinline__ float gn_ffloordiv_py(float a, float b) {\n    float m = fmodf(a, b);\n    float d = (a - m) / b;\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) d -= 1.0f; }\n    if (d != 0.0f) { float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return f; }\n    return copysignf(0.0f, a / b);\n}\n__device__ __forceinline__ double gn_ffloordiv_py(double a, double b) {\n    double m = fmod(a, b);\n    double d = (a - m) / b;\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) d -= 1.0; }\n    if (d != 0.0) { double f = floor(d); if (d - f > 0.5) f += 1.0; return f; }\n    return copysign(0.0, a / b);\n}\n\n/* Shifts by a count outside 0..bits-1 give 0 (left) or the sign fill (right), as if the value\n   were shifted one bit at a time. */\ntemplate <typename T> __device__ __forceinline__ T gn_shl(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (T)0;\n    return (T)((gn_u64)a << n);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_shr(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (a < (T)0) ? (T)-1 : (T)0;\n    return a >> n;\n}\n\n/* Integer power with a constant non-negative exponent (wrapping). */\ntemplate <typename T> __device__ __forceinline__ T gn_ipow(T base, int e) {\n    gn_u64 result = 1, b = (gn_u64)base;\n    while (e > 0) { if (e & 1) result *= b; b *= b; e >>= 1; }\n    return (T)result;\n}\n\ntemplate <typename T> __device__ __forceinline__ T gn_sq(T a) { return a * a; }\n\n/* Python\'s min/max: min(a, b) is b only when b < a (so NaN handling follows the argument order). */\ntemplate <typename T> __device__ __forceinline__ T gn_min(T a, T b) { return (b < a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_max(T a, T b) { return (b > a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_iabs(T a) {\n    return (a < (T)0) ? (T)(0 - (gn_u64)a) : a;\n}\n\n/* Float to integer: truncate toward zero, saturate at the type\'s range, NaN gives 0. */\ntemplate <typename T> __device__ __forceinline__ T gn_f2i(double x, double lo, double hi) {\n    if (x != x) return (T)0;\n    if (x <= lo) return (T)lo;\n    if (x >= hi) return (T)hi;\n    return (T)trunc(x);\n}\n__device__ __forceinline__ gn_i64 gn_f2i64(double x) {\n    if (x != x) return 0;\n    if (x <= -9223372036854775808.0) return (gn_i64)0x8000000000000000ull;\n    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffll;\n    return (gn_i64)x;\n}\n__device__ __forceinline__ gn_u64 gn_f2u64(double x) {\n    if (x != x || x <= 0.0) return 0;\n    if (x >= 18446744073709551616.0) return 0xffffffffffffffffull;\n    return (gn_u64)x;\n}\n\n__device__ __forceinline__ int gn_lane_id() {\n    unsigned int lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n    return (int)lane;\n}\n__device__ __forceinline__ unsigned int gn_dynamic_smem_bytes() {\n    unsigned int bytes;\n    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));\n    return bytes;\n}\n\n/* Atomic min/max on floats through compare-and-swap (no native instruction). */\n__device__ __forceinline__ float gn_atomic_min(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v < __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ float gn_atomic_max(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v > __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ double gn_atomic_min(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v < __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ double gn_atomic_max(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v > __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ float gn_atomic_cas(float* p, float expected, float desired) {\n    return __int_as_float(atomicCAS((int*)p, __float_as_int(expected), __float_as_int(desired)));\n}\n__device__ __forceinline__ double gn_atomic_cas(double* p, double expected, double desired) {\n    return __longlong_as_double(atomicCAS((gn_u64*)p, (gn_u64)__double_as_longlong(expected),\n                                          (gn_u64)__double_as_longlong(desired)));\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_cas(T* p, T expected, T desired) {\n    return atomicCAS(p, expected, desired);\n}\n__device__ __forceinline__ gn_i64 gn_atomic_cas(gn_i64* p, gn_i64 expected, gn_i64 desired) {\n    return (gn_i64)atomicCAS((gn_u64*)p, (gn_u64)expected, (gn_u64)desired);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_load(T* p) {\n    return *(volatile T*)p;\n}\ntemplate <typename T> __device__ __forceinline__ void gn_atomic_store(T* p, T v) {\n    *(volatile T*)p = v;\n}\nextern "C" __global__ void gn_accelerations_kernel(\n    const float* __restrict__ bodies,\n    gn_i64 __gn_bodies_n0,\n    gn_i64 __gn_bodies_n1,\n    float* __restrict__ acc,\n    gn_i64 __gn_acc_n0,\n    gn_i64 __gn_acc_n1,\n    float softening,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long i{};\n    float xi{};\n    float yi{};\n    float zi{};\n    float ax{};\n    float ay{};\n    float az{};\n    float eps2{};\n    long long j{};\n    float dx{};\n    float dy{};\n    float dz{};\n    float inv{};\n    float s{};\n#line 23 "nbody.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_bodies_n0 && ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_acc_n0) return;\n#line 24 "nbody.py"\n    i = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);\n#line 25 "nbody.py"\n    xi = bodies[gn_chk(__gn_err, i, __gn_bodies_n0, 0u) * __gn_bodies_n1 + gn_chk(__gn_err, 0LL, __gn_bodies_n1, 1u)];\n#line 26 "nbody.py"\n    yi = bodies[gn_chk(__gn_err, i, __gn_bodies_n0, 2u) * __gn_bodies_n1 + gn_chk(__gn_err, 1LL, __gn_bodies_n1, 3u)];\n#line 27 "nbody.py"\n    zi = bodies[gn_chk(__gn_err, i, __gn_bodies_n0, 4u) * __gn_bodies_n1 + gn_chk(__gn_err, 2LL, __gn_bodies_n1, 5u)];\n#line 28 "nbody.py"\n    ax = 0.0f;\n#line 29 "nbody.py"\n    ay = 0.0f;\n#line 30 "nbody.py"\n    az = 0.0f;\n#line 31 "nbody.py"\n    eps2 = (softening * softening);\n#line 32 "nbody.py"\n    {\n        const long long __gn_stop0 = __gn_bodies_n0;\n        for (long long __gn_i0 = 0LL; __gn_i0 < __gn_stop0; ++__gn_i0) {\n            j = (long long)__gn_i0;\n#line 33 "nbody.py"\n            dx = (bodies[j * __gn_bodies_n1 + gn_chk(__gn_err, 0LL, __gn_bodies_n1, 6u)] - xi);\n#line 34 "nbody.py"\n            dy = (bodies[j * __gn_bodies_n1 + gn_chk(__gn_err, 1LL, __gn_bodies_n1, 7u)] - yi);\n#line 35 "nbody.py"\n            dz = (bodies[j * __gn_bodies_n1 + gn_chk(__gn_err, 2LL, __gn_bodies_n1, 8u)] - zi);\n#line 36 "nbody.py"\n            inv = (1.0f / sqrtf(((((dx * dx) + (dy * dy)) + (dz * dz)) + eps2)));\n#line 37 "nbody.py"\n            s = (((bodies[j * __gn_bodies_n1 + gn_chk(__gn_err, 3LL, __gn_bodies_n1, 9u)] * inv) * inv) * inv);\n#line 38 "nbody.py"\n            ax = (ax + (dx * s));\n#line 39 "nbody.py"\n            ay = (ay + (dy * s));\n#line 40 "nbody.py"\n            az = (az + (dz * s));\n        }\n    }\n#line 41 "nbody.py"\n    acc[gn_chk(__gn_err, i, __gn_acc_n0, 10u) * __gn_acc_n1 + gn_chk(__gn_err, 0LL, __gn_acc_n1, 11u)] = ax;\n#line 42 "nbody.py"\n    acc[gn_chk(__gn_err, i, __gn_acc_n0, 12u) * __gn_acc_n1 + gn_chk(__gn_err, 1LL, __gn_acc_n1, 13u)] = ay;\n#line 43 "nbody.py"\n    acc[gn_chk(__gn_err, i, __gn_acc_n0, 14u) * __gn_acc_n1 + gn_chk(__gn_err, 2LL, __gn_acc_n1, 15u)] = az;\n}\n\n', 'sites': (('index', 25, 9, 21, 'bodies', 0, 2, ''), ('index', 25, 9, 21, 'bodies', 1, 2, ''), ('index', 26, 9, 21, 'bodies', 0, 2, ''), ('index', 26, 9, 21, 'bodies', 1, 2, ''), ('index', 27, 9, 21, 'bodies', 0, 2, ''), ('index', 27, 9, 21, 'bodies', 1, 2, ''), ('index', 33, 13, 25, 'bodies', 1, 2, ''), ('index', 34, 13, 25, 'bodies', 1, 2, ''), ('index', 35, 13, 25, 'bodies', 1, 2, ''), ('index', 37, 12, 24, 'bodies', 1, 2, ''), ('index', 41, 4, 13, 'acc', 0, 2, ''), ('index', 41, 4, 13, 'acc', 1, 2, ''), ('index', 42, 4, 13, 'acc', 0, 2, ''), ('index', 42, 4, 13, 'acc', 1, 2, ''), ('index', 43, 4, 13, 'acc', 0, 2, ''), ('index', 43, 4, 13, 'acc', 1, 2, '')), 'traits': ('uid_only',)},)})
def accelerations_kernel(__gn):
    DA, (sig_bodies, sig_acc), pack, buf, args, launch, config, ok, failed, slow = __gn.fast_path()
    return lambda bodies, acc, softening: (((err := launch(*config, (pack(buf, 0, bodies._gn_ptr, bodies._gn_n0, bodies._gn_n1, acc._gn_ptr, acc._gn_n0, acc._gn_n1, softening), args)[1], 0)[0]) is ok or failed(err)) and None) if bodies.__class__ is DA and bodies._gn_rsig is sig_bodies and acc.__class__ is DA and acc._gn_wsig is sig_acc and softening.__class__ is float and acc._gn_base is not bodies._gn_base else slow(bodies, acc, softening)




















def accelerations(bodies, acc, softening: float = 0.01):
    n = bodies.shape[0]
    accelerations_kernel.launch(GridDim1D((n + 127) // 128), BlockDim1D(128), 0,
                                DEFAULT_STREAM)(bodies, acc, softening)


def reference(bodies: np.ndarray, softening: float = 0.01) -> np.ndarray:
    b = bodies.astype(np.float64)
    d = b[None, :, :3] - b[:, None, :3]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + softening * softening)
    return (d * (b[None, :, 3] * inv**3)[:, :, None]).sum(axis=1)


def run(n: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    bodies = np.concatenate([rng.standard_normal((n, 3)), rng.random((n, 1))], axis=1)
    bodies = bodies.astype(np.float32)
    acc = gn.empty((n, 3), gn.f32)
    acc.fill(np.nan)
    accelerations(gn.to_device(bodies), acc)
    return acc.to_host(), reference(bodies)


def main():
    out, ref = run()
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"nbody on {gn.backend()}: {len(out)} bodies, relative error {rel:.2e}")
    assert rel < 1e-4


if __name__ == "__main__":
    main()
