"""A gpu_native kernel in every rank of a ``torch.distributed`` job, then an all-reduce.

    torchrun --nproc_per_node=NUM_GPUS examples/distributed_torchrun.py    # NCCL, one GPU per rank
    torchrun --standalone --nproc_per_node=2 examples/distributed_torchrun.py   # no GPU: gloo

Each rank owns a shard of byte-valued samples (made from its rank, so every rank can rebuild the
whole data set to check the answer).  It histograms its shard with ``histogram_kernel``, and one
all-reduce sums the per-rank histograms into the histogram of the whole data set, which every
rank compares with NumPy's.

* **On GPUs** (NCCL): rank ``r`` drives GPU ``LOCAL_RANK``; ``torch.cuda.set_device`` and
  ``gn.Device(...).set_current()`` select it for torch and for gpu_native.  The rank's torch CUDA
  tensors go straight into the kernel through ``__cuda_array_interface__`` (no copy), the kernel
  runs on torch's current stream, and NCCL reduces the very tensor the kernel wrote.
* **Without a GPU** (gloo, gpu_native's CPU simulator): torch CPU tensors are not device memory,
  so they cannot be passed to kernels.  ``local_histogram`` copies the samples into a gpu_native
  array and the histogram back into the torch tensor, explicitly, and says so in its output.
"""

import os

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
    gpu_kernel,
    i32,
    u8,
)

BINS = 256
THREADS = 256


@gpu_kernel(Kernel1D, _spec={'schema': 1, 'version': '0.1.0', 'module': 'distributed_torchrun', 'name': 'histogram_kernel', 'file': 'examples/distributed_torchrun.py', 'line': 42, 'ndim': 1, 'params': (('samples', 'u8', 1, False), ('hist', 'i32', 1, True)), 'typevars': (), 'options': {'bounds_check': True, 'fastmath': False, 'max_registers': None}, 'variants': ({'types': (), 'symbol': 'gn_histogram_kernel', 'id': 8362763468191541150, 'cuda': '// gpu_native 0.1.0: kernel histogram_kernel of distributed_torchrun (generated; do not edit)\n#define GN_KERNEL_ID 0x740e8111062ba79eull\ntypedef unsigned long long gn_u64;\ntypedef long long gn_i64;\n\nstruct gn_error_record {\n    unsigned int state;\n    unsigned int site;\n    gn_u64 kernel;\n    gn_i64 index;\n    gn_i64 length;\n    unsigned int block[3];\n    unsigned int thread[3];\n    unsigned int count;\n    unsigned int reserved;\n};\n\n/* Record the first error of a launch into the host-mapped record.  No trap: the CUDA context\n   stays usable and the host raises at the next synchronisation. */\n__device__ __noinline__ void gn_record(gn_error_record* rec, unsigned int site, gn_i64 index,\n                                       gn_i64 length, uint3 block, uint3 thread) {\n    atomicAdd_system(&rec->count, 1u);\n    if (atomicCAS_system(&rec->state, 0u, 1u) == 0u) {\n        rec->site = site;\n        rec->kernel = GN_KERNEL_ID;\n        rec->index = index;\n        rec->length = length;\n        rec->block[0] = block.x; rec->block[1] = block.y; rec->block[2] = block.z;\n        rec->thread[0] = thread.x; rec->thread[1] = thread.y; rec->thread[2] = thread.z;\n        __threadfence_system();\n        atomicExch_system(&rec->state, 2u);\n    }\n}\n\n/* Report an error and end this thread. */\n__device__ __forceinline__ void gn_fail(gn_error_record* rec, unsigned int site, gn_i64 index,\n                                        gn_i64 length) {\n    gn_record(rec, site, index, length, blockIdx, threadIdx);\n    asm volatile("exit;");\n}\n\n/* The same for a kernel that runs its logical grid on fewer threads: report the logical block and\n   thread of `uid`, as the user launched it. */\n__device__ __forceinline__ void gn_fail_at(gn_error_record* rec, unsigned int site, gn_i64 index,\n                                           gn_i64 length, gn_i64 uid, unsigned int bdim) {\n    gn_record(rec, site, index, length, make_uint3((unsigned int)(uid / bdim), 0u, 0u),\n              make_uint3((unsigned int)(uid % bdim), 0u, 0u));\n    asm volatile("exit;");\n}\n\n/* Bounds check: one unsigned comparison covers negative indices too. */\n__device__ __forceinline__ gn_i64 gn_chk(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                         unsigned int site) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail(rec, site, i, n);\n    return i;\n}\n__device__ __forceinline__ gn_i64 gn_chk_at(gn_error_record* rec, gn_i64 i, gn_i64 n,\n                                            unsigned int site, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail_at(rec, site, i, n, uid, bdim);\n    return i;\n}\n\n/* Both indices of a 2-D access under one branch (the offset is returned); a failure reports the\n   first axis out of range, as two separate checks would. */\n__device__ __forceinline__ gn_i64 gn_at2(gn_error_record* rec, gn_i64 i, gn_i64 n0,\n                                         unsigned int s0, gn_i64 j, gn_i64 n1, unsigned int s1) {\n    if (__builtin_expect(((gn_u64)i >= (gn_u64)n0) | ((gn_u64)j >= (gn_u64)n1), 0)) {\n        if ((gn_u64)i >= (gn_u64)n0) gn_fail(rec, s0, i, n0);\n        gn_fail(rec, s1, j, n1);\n    }\n    return i * n1 + j;\n}\n__device__ __forceinline__ gn_i64 gn_at2_at(gn_error_record* rec, gn_i64 i, gn_i64 n0,\n                                            unsigned int s0, gn_i64 j, gn_i64 n1,\n                                            unsigned int s1, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(((gn_u64)i >= (gn_u64)n0) | ((gn_u64)j >= (gn_u64)n1), 0)) {\n        if ((gn_u64)i >= (gn_u64)n0) gn_fail_at(rec, s0, i, n0, uid, bdim);\n        gn_fail_at(rec, s1, j, n1, uid, bdim);\n    }\n    return i * n1 + j;\n}\n\n__device__ __forceinline__ void gn_assert(gn_error_record* rec, bool ok, unsigned int site) {\n    if (__builtin_expect(!ok, 0)) gn_fail(rec, site, 0, 0);\n}\n__device__ __forceinline__ void gn_assert_at(gn_error_record* rec, bool ok, unsigned int site,\n                                             gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(!ok, 0)) gn_fail_at(rec, site, 0, 0, uid, bdim);\n}\n\n/* Python floor division and modulo for integers (wrapping, INT_MIN // -1 == INT_MIN). */\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv(T a, T b) {\n    if ((T)-1 > (T)0) return a / b;\n    if (b == (T)-1) return (T)(0 - (gn_u64)a);\n    T q = a / b;\n    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n    return q;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod(T a, T b) {\n    if ((T)-1 > (T)0) return a % b;\n    if (b == (T)-1) return 0;\n    T r = a % b;\n    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n    return r;\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk(\n        gn_error_record* rec, T a, T b, unsigned int site) {\n    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);\n    return gn_mod(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_floordiv_chk_at(\n        gn_error_record* rec, T a, T b, unsigned int site, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(b == 0, 0)) gn_fail_at(rec, site, (gn_i64)a, 0, uid, bdim);\n    return gn_floordiv(a, b);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_mod_chk_at(\n        gn_error_record* rec, T a, T b, unsigned int site, gn_i64 uid, unsigned int bdim) {\n    if (__builtin_expect(b == 0, 0)) gn_fail_at(rec, site, (gn_i64)a, 0, uid, bdim);\n    return gn_mod(a, b);\n}\n\n/* Python float modulo and floor division (the result of % has the divisor\'s sign). */\n__device__ __forceinline__ float gn_fmod_py(float a, float b) {\n    float m = fmodf(a, b);\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; }\n    else m = copysignf(0.0f, b);\n    return m;\n}\n__device__ __forceinline__ double gn_fmod_py(double a, double b) {\n    double m = fmod(a, b);\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }\n    else m = copysign(0.0, b);\n    return m;\n}\n__device__ __forceinline__ float gn_ffloordiv_py(float a, float b) {\n    float m = fmodf(a, b);\n    float d = (a - m) / b;\n    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) d -= 1.0f; }\n    if (d != 0.0f) { float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return f; }\n    return copysignf(0.0f, a / b);\n}\n__device__ __forceinline__ double gn_ffloordiv_py(double a, double b) {\n    double m = fmod(a, b);\n    double d = (a - m) / b;\n    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) d -= 1.0; }\n    if (d != 0.0) { double f = floor(d); if (d - f > 0.5) f += 1.0; return f; }\n    return copysign(0.0, a / b);\n}\n\n/* Shifts by a count outside 0..bits-1 give 0 (left) or the sign fill (right), as if the value\n   were shifted one bit at a time. */\ntemplate <typename T> __device__ __forceinline__ T gn_shl(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (T)0;\n    return (T)((gn_u64)a << n);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_shr(T a, gn_i64 n) {\n    const int bits = sizeof(T) * 8;\n    if (n < 0 || n >= bits) return (a < (T)0) ? (T)-1 : (T)0;\n    return a >> n;\n}\n\n/* Integer power with a constant non-negative exponent (wrapping). */\ntemplate <typename T> __device__ __forceinline__ T gn_ipow(T base, int e) {\n    gn_u64 result = 1, b = (gn_u64)base;\n    while (e > 0) { if (e & 1) result *= b; b *= b; e >>= 1; }\n    return (T)result;\n}\n\ntemplate <typename T> __device__ __forceinline__ T gn_sq(T a) { return a * a; }\n\n/* Python\'s min/max: min(a, b) is b only when b < a (so NaN handling follows the argument order). */\ntemplate <typename T> __device__ __forceinline__ T gn_min(T a, T b) { return (b < a) ? b : a; }\ntemplate <typename T> __device__ __forceinline__ T gn_max(T a, T b) { return (b > a) ? b : a; }\n/* 32-bit (and narrower) integers select in PTX: NVRTC 13.0 fuses min(min(-a, b), c) into one\n   sm_90 VIMNMX3 and drops the negation (tests/test_nvrtc_bugs.py).  A setp/selp pair is not\n   recognised as a min, so the operands reach the hardware as written. */\n#define GN_SELECT_MINMAX(T, R, CMP, NAME)                                                   \\\n    template <> __device__ __forceinline__ T NAME<T>(T a, T b) {                             \\\n        R r; asm("{ .reg .pred p; setp." CMP " p, %2, %1; selp.b32 %0, %2, %1, p; }"        \\\n                 : "=r"(r) : "r"((R)a), "r"((R)b));                                          \\\n        return (T)r; }\nGN_SELECT_MINMAX(int, int, "lt.s32", gn_min)\nGN_SELECT_MINMAX(int, int, "gt.s32", gn_max)\nGN_SELECT_MINMAX(unsigned int, unsigned int, "lt.u32", gn_min)\nGN_SELECT_MINMAX(unsigned int, unsigned int, "gt.u32", gn_max)\nGN_SELECT_MINMAX(short, int, "lt.s32", gn_min)\nGN_SELECT_MINMAX(short, int, "gt.s32", gn_max)\nGN_SELECT_MINMAX(unsigned short, unsigned int, "lt.u32", gn_min)\nGN_SELECT_MINMAX(unsigned short, unsigned int, "gt.u32", gn_max)\nGN_SELECT_MINMAX(signed char, int, "lt.s32", gn_min)\nGN_SELECT_MINMAX(signed char, int, "gt.s32", gn_max)\nGN_SELECT_MINMAX(unsigned char, unsigned int, "lt.u32", gn_min)\nGN_SELECT_MINMAX(unsigned char, unsigned int, "gt.u32", gn_max)\n#undef GN_SELECT_MINMAX\n/* Floats compare on their bit patterns.  As a float select the optimiser may turn min/max into\n   fmin/fmax, which do not keep the argument order for -0.0/+0.0 (fuzz seed 1403), and ptxas\n   (NVRTC 13.0, sm_90) takes fabs(x), x*x and exp2(x) to be >= 0 although they may be NaN: it\n   folds max(-5.0, fabs(x)) to fabs(x) and min(exp2(x), -3.0) to -3.0 (fuzz seeds 443, 9984,\n   10215, 14661).  Integer operations on the bits carry none of those assumptions.\n   gn_ieee_lt(b, a) is IEEE b < a: false when either is NaN or both are zeros. */\n__device__ __forceinline__ bool gn_ieee_lt(float b, float a) {\n    const unsigned int ua = (unsigned int)__float_as_int(a), ub = (unsigned int)__float_as_int(b);\n    const unsigned int ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;\n    const bool unordered = (ma > 0x7f800000u) | (mb > 0x7f800000u) | ((ma | mb) == 0u);\n    /* Negative values: flip the magnitude bits so that signed integer order is float order. */\n    const int ka = (int)(ua ^ ((unsigned int)((int)ua >> 31) >> 1));\n    const int kb = (int)(ub ^ ((unsigned int)((int)ub >> 31) >> 1));\n    return !unordered & (kb < ka);\n}\n__device__ __forceinline__ bool gn_ieee_lt(double b, double a) {\n    const gn_u64 ua = (gn_u64)__double_as_longlong(a), ub = (gn_u64)__double_as_longlong(b);\n    const gn_u64 ma = ua & 0x7fffffffffffffffull, mb = ub & 0x7fffffffffffffffull;\n    const bool unordered = (ma > 0x7ff0000000000000ull) | (mb > 0x7ff0000000000000ull) |\n                           ((ma | mb) == 0ull);\n    const gn_i64 ka = (gn_i64)(ua ^ ((gn_u64)((gn_i64)ua >> 63) >> 1));\n    const gn_i64 kb = (gn_i64)(ub ^ ((gn_u64)((gn_i64)ub >> 63) >> 1));\n    return !unordered & (kb < ka);\n}\ntemplate <> __device__ __forceinline__ float gn_min<float>(float a, float b) {\n    return gn_ieee_lt(b, a) ? b : a; }\ntemplate <> __device__ __forceinline__ float gn_max<float>(float a, float b) {\n    return gn_ieee_lt(a, b) ? b : a; }\ntemplate <> __device__ __forceinline__ double gn_min<double>(double a, double b) {\n    return gn_ieee_lt(b, a) ? b : a; }\ntemplate <> __device__ __forceinline__ double gn_max<double>(double a, double b) {\n    return gn_ieee_lt(a, b) ? b : a; }\n/* abs with wraparound: abs(INT_MIN) is INT_MIN.  Spelled as a PTX negate-and-select: both the\n   C++ optimiser and ptxas (NVRTC 13.0) treat an abs, even PTX abs.s32, as non-negative, and then\n   fold min(0, abs(x)) to 0 or drop a floor-division correction (fuzz seeds 530, 3080, 3404). */\ntemplate <typename T> __device__ __forceinline__ T gn_iabs(T a) {\n    return (a < (T)0) ? (T)(0 - (gn_u64)a) : a;\n}\ntemplate <> __device__ __forceinline__ int gn_iabs<int>(int a) {\n    int r;\n    asm("{ .reg .pred p; .reg .s32 n; setp.lt.s32 p, %1, 0; neg.s32 n, %1; selp.b32 %0, n, %1, p; }"\n        : "=r"(r) : "r"(a));\n    return r;\n}\ntemplate <> __device__ __forceinline__ long long gn_iabs<long long>(long long a) {\n    long long r;\n    asm("{ .reg .pred p; .reg .s64 n; setp.lt.s64 p, %1, 0; neg.s64 n, %1; selp.b64 %0, n, %1, p; }"\n        : "=l"(r) : "l"(a));\n    return r;\n}\n\n/* Float to integer: truncate toward zero, saturate at the type\'s range, NaN gives 0. */\ntemplate <typename T> __device__ __forceinline__ T gn_f2i(double x, double lo, double hi) {\n    if (x != x) return (T)0;\n    if (x <= lo) return (T)lo;\n    if (x >= hi) return (T)hi;\n    return (T)trunc(x);\n}\n__device__ __forceinline__ gn_i64 gn_f2i64(double x) {\n    if (x != x) return 0;\n    if (x <= -9223372036854775808.0) return (gn_i64)0x8000000000000000ull;\n    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffll;\n    return (gn_i64)x;\n}\n__device__ __forceinline__ gn_u64 gn_f2u64(double x) {\n    if (x != x || x <= 0.0) return 0;\n    if (x >= 18446744073709551616.0) return 0xffffffffffffffffull;\n    return (gn_u64)x;\n}\n\n__device__ __forceinline__ int gn_lane_id() {\n    unsigned int lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n    return (int)lane;\n}\n__device__ __forceinline__ unsigned int gn_dynamic_smem_bytes() {\n    unsigned int bytes;\n    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));\n    return bytes;\n}\n\n/* Atomic min/max on floats through compare-and-swap (no native instruction). */\n__device__ __forceinline__ float gn_atomic_min(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v < __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ float gn_atomic_max(float* p, float v) {\n    int* ip = (int*)p; int old = *ip, assumed;\n    do { assumed = old; if (!(v > __int_as_float(assumed))) break;\n         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);\n    return __int_as_float(old);\n}\n__device__ __forceinline__ double gn_atomic_min(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v < __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ double gn_atomic_max(double* p, double v) {\n    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;\n    do { assumed = old; if (!(v > __longlong_as_double(assumed))) break;\n         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);\n    return __longlong_as_double(old);\n}\n__device__ __forceinline__ float gn_atomic_cas(float* p, float expected, float desired) {\n    return __int_as_float(atomicCAS((int*)p, __float_as_int(expected), __float_as_int(desired)));\n}\n__device__ __forceinline__ double gn_atomic_cas(double* p, double expected, double desired) {\n    return __longlong_as_double(atomicCAS((gn_u64*)p, (gn_u64)__double_as_longlong(expected),\n                                          (gn_u64)__double_as_longlong(desired)));\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_cas(T* p, T expected, T desired) {\n    return atomicCAS(p, expected, desired);\n}\n__device__ __forceinline__ gn_i64 gn_atomic_cas(gn_i64* p, gn_i64 expected, gn_i64 desired) {\n    return (gn_i64)atomicCAS((gn_u64*)p, (gn_u64)expected, (gn_u64)desired);\n}\ntemplate <typename T> __device__ __forceinline__ T gn_atomic_load(T* p) {\n    return *(volatile T*)p;\n}\ntemplate <typename T> __device__ __forceinline__ void gn_atomic_store(T* p, T v) {\n    *(volatile T*)p = v;\n}\nextern "C" __global__ void gn_histogram_kernel(\n    const unsigned char* __restrict__ samples,\n    gn_i64 __gn_samples_n0,\n    int* __restrict__ hist,\n    gn_i64 __gn_hist_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long i{};\n#line 44 "distributed_torchrun.py"\n    {\n        const gn_i64 __gn_stop0 = __gn_samples_n0;\n        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {\n            i = __gn_i0;\n#line 45 "distributed_torchrun.py"\n            atomicAdd(&hist[gn_chk(__gn_err, (gn_i64)samples[i], __gn_hist_n0, 0u)], 1);\n        }\n    }\n}\n\n// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).\nextern "C" __global__ void gn_histogram_kernel_uids(\n    const unsigned char* __restrict__ samples,\n    gn_i64 __gn_samples_n0,\n    int* __restrict__ hist,\n    gn_i64 __gn_hist_n0,\n    gn_error_record* __restrict__ __gn_err,\n    gn_i64 __gn_total,\n    unsigned int __gn_block)\n{\n    long long i{};\n    for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {\n#line 44 "distributed_torchrun.py"\n        {\n            const gn_i64 __gn_stop0 = __gn_samples_n0;\n            for (gn_i64 __gn_i0 = __gn_uid; __gn_i0 < __gn_stop0; __gn_i0 += __gn_total) {\n                i = __gn_i0;\n#line 45 "distributed_torchrun.py"\n                atomicAdd(&hist[gn_chk_at(__gn_err, (gn_i64)samples[i], __gn_hist_n0, 0u, __gn_uid, __gn_block)], 1);\n            }\n        }\n    }\n}\n\n', 'sites': (('index', 45, 8, 48, 'hist', 0, 1, ''),), 'traits': ('uid_only',), 'launch_checks': ()},)})
def histogram_kernel(__gn):
    DA, (sig_samples, sig_hist), pack, buf, args, launch, (fn, gx, gy, gz, bx, by, bz, smem, stream), ok, failed, slow = __gn.fast_path()
    return lambda samples, hist: (((err := launch(fn, gx, gy, gz, bx, by, bz, smem, stream, (pack(buf, 0, samples._gn_ptr, samples._gn_n0, hist._gn_ptr, hist._gn_n0), args)[1], 0)[0]) is ok or failed(err)) and None) if samples.__class__ is DA and samples._gn_rsig is sig_samples and hist.__class__ is DA and hist._gn_wsig is sig_hist and hist._gn_base is not samples._gn_base else slow(samples, hist)


def shard(rank: int, n: int, seed: int = 2026) -> np.ndarray:
    """Rank ``rank``'s samples: uniform bytes, plus a spike at ``rank`` so every rank shows."""
    data = np.random.default_rng([seed, rank]).integers(0, BINS, n, dtype=np.uint8)
    data[: n // 8] = rank % BINS
    return data


def launch_histogram(samples, hist, stream=DEFAULT_STREAM) -> None:
    """Add the histogram of ``samples`` (u8) into ``hist`` (i32, ``BINS`` bins): any device arrays,
    gpu_native's or another library's."""
    blocks = max(1, min(1024, (len(samples) + THREADS - 1) // THREADS))
    histogram_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, stream)(samples, hist)


def local_histogram(samples, hist) -> str:
    """Histogram a rank's torch tensor ``samples`` into its torch tensor ``hist``.

    CUDA tensors are passed to the kernel as they are; CPU tensors are copied into gpu_native
    arrays and the result copied back.  Returns which of the two happened.
    """
    import torch

    if samples.is_cuda:
        launch_histogram(samples, hist, torch.cuda.current_stream())
        return "zero-copy"
    d_samples = gn.to_device(samples.numpy())   # copy in: CPU tensors are not device memory
    d_hist = gn.to_device(hist.numpy())
    launch_histogram(d_samples, d_hist)
    hist.copy_(torch.from_numpy(d_hist.to_host()))  # copy out
    return "copied through host memory"


def main(n: int = 1_000_000) -> None:
    import torch
    import torch.distributed as dist

    on_gpu = torch.cuda.is_available()
    if not on_gpu:
        os.environ.setdefault("GPU_NATIVE_BACKEND", "sim")  # before gpu_native picks a backend
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if on_gpu:
        torch.cuda.set_device(local_rank)
        gn.Device(local_rank).set_current()
    dist.init_process_group("nccl" if on_gpu else "gloo")
    try:
        device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")
        samples = torch.from_numpy(shard(rank, n)).to(device)
        hist = torch.zeros(BINS, dtype=torch.int32, device=device)
        how = local_histogram(samples, hist)
        local = hist.cpu().numpy().copy()
        dist.all_reduce(hist, op=dist.ReduceOp.SUM)
        total = hist.cpu().numpy()
        expected = sum(np.bincount(shard(r, n), minlength=BINS) for r in range(world))
        assert np.array_equal(local, np.bincount(shard(rank, n), minlength=BINS)), \
            f"rank {rank}: the local histogram is wrong"
        assert np.array_equal(total, expected), f"rank {rank}: the all-reduced histogram is wrong"
        where = (f"GPU {local_rank} ({torch.cuda.get_device_name(local_rank)})" if on_gpu
                 else "CPU")
        print(f"rank {rank}/{world}: {n} samples on {where}, gpu_native backend "
              f"{gn.backend()}, tensors {how}; all-reduced ({dist.get_backend()}) histogram of "
              f"{int(total.sum())} samples matches NumPy", flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="samples per rank")
    main(parser.parse_args().samples)
