/* gpu_native/prelude.cuh: the helpers every generated kernel translation unit includes.

   They give the kernel language its defined semantics where C++ leaves them undefined or differs
   from Python: wrapping signed arithmetic, Python's floor division and modulo, clamped shifts,
   saturating float-to-int conversion, NaN-propagating min/max in Python's argument order, and the
   device error record (its layout is gpu_native/abi.py's ERROR_RECORD_FORMAT).  Several helpers
   are spelled in PTX to keep a device compiler from miscompiling them; each names the fuzz seed
   that found the bug, and tests/emit/test_nvrtc_bugs.py pins it.

   The including translation unit defines GN_KERNEL_ID (the kernel's id in the error record)
   first.  NVRTC is given this file as an in-memory header under its include name (see
   gpu_native/compiler/nvrtc.py), and its SHA-256 enters every cache key
   (gpu_native/cache/keys.py): editing it recompiles every kernel.  The CPU simulator
   (gpu_native/simulator/ops.py) mirrors these helpers; keep the two in step. */
#ifndef GPU_NATIVE_PRELUDE_CUH
#define GPU_NATIVE_PRELUDE_CUH

#ifndef GN_KERNEL_ID
#error "define GN_KERNEL_ID (the kernel id of gpu_native/abi.py) before including gpu_native/prelude.cuh"
#endif

typedef unsigned long long gn_u64;
typedef long long gn_i64;

struct gn_error_record {
    unsigned int state;
    unsigned int site;
    gn_u64 kernel;
    gn_i64 index;
    gn_i64 length;
    unsigned int block[3];
    unsigned int thread[3];
    unsigned int count;
    unsigned int reserved;
};

/* Record the first error of a launch into the host-mapped record.  No trap: the CUDA context
   stays usable and the host raises at the next synchronisation. */
__device__ __noinline__ void gn_record(gn_error_record* rec, unsigned int site, gn_i64 index,
                                       gn_i64 length, uint3 block, uint3 thread) {
    atomicAdd_system(&rec->count, 1u);
    if (atomicCAS_system(&rec->state, 0u, 1u) == 0u) {
        rec->site = site;
        rec->kernel = GN_KERNEL_ID;
        rec->index = index;
        rec->length = length;
        rec->block[0] = block.x; rec->block[1] = block.y; rec->block[2] = block.z;
        rec->thread[0] = thread.x; rec->thread[1] = thread.y; rec->thread[2] = thread.z;
        __threadfence_system();
        atomicExch_system(&rec->state, 2u);
    }
}

/* Report an error and end this thread. */
__device__ __forceinline__ void gn_fail(gn_error_record* rec, unsigned int site, gn_i64 index,
                                        gn_i64 length) {
    gn_record(rec, site, index, length, blockIdx, threadIdx);
    asm volatile("exit;");
}

/* The same for a kernel that runs its logical grid on fewer threads: report the logical block and
   thread of `uid`, as the user launched it. */
__device__ __forceinline__ void gn_fail_at(gn_error_record* rec, unsigned int site, gn_i64 index,
                                           gn_i64 length, gn_i64 uid, unsigned int bdim) {
    gn_record(rec, site, index, length, make_uint3((unsigned int)(uid / bdim), 0u, 0u),
              make_uint3((unsigned int)(uid % bdim), 0u, 0u));
    asm volatile("exit;");
}

/* Bounds check: one unsigned comparison covers negative indices too. */
__device__ __forceinline__ gn_i64 gn_chk(gn_error_record* rec, gn_i64 i, gn_i64 n,
                                         unsigned int site) {
    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail(rec, site, i, n);
    return i;
}
__device__ __forceinline__ gn_i64 gn_chk_at(gn_error_record* rec, gn_i64 i, gn_i64 n,
                                            unsigned int site, gn_i64 uid, unsigned int bdim) {
    if (__builtin_expect((gn_u64)i >= (gn_u64)n, 0)) gn_fail_at(rec, site, i, n, uid, bdim);
    return i;
}

/* Both indices of a 2-D access under one branch (the offset is returned); a failure reports the
   first axis out of range, as two separate checks would. */
__device__ __forceinline__ gn_i64 gn_at2(gn_error_record* rec, gn_i64 i, gn_i64 n0,
                                         unsigned int s0, gn_i64 j, gn_i64 n1, unsigned int s1) {
    if (__builtin_expect(((gn_u64)i >= (gn_u64)n0) | ((gn_u64)j >= (gn_u64)n1), 0)) {
        if ((gn_u64)i >= (gn_u64)n0) gn_fail(rec, s0, i, n0);
        gn_fail(rec, s1, j, n1);
    }
    return i * n1 + j;
}
__device__ __forceinline__ gn_i64 gn_at2_at(gn_error_record* rec, gn_i64 i, gn_i64 n0,
                                            unsigned int s0, gn_i64 j, gn_i64 n1,
                                            unsigned int s1, gn_i64 uid, unsigned int bdim) {
    if (__builtin_expect(((gn_u64)i >= (gn_u64)n0) | ((gn_u64)j >= (gn_u64)n1), 0)) {
        if ((gn_u64)i >= (gn_u64)n0) gn_fail_at(rec, s0, i, n0, uid, bdim);
        gn_fail_at(rec, s1, j, n1, uid, bdim);
    }
    return i * n1 + j;
}
/* The same in 32 bits, for the _i32 entry points (arrays below 2**31 elements, see
   gpu_native.emit.index32); a failure reports the same index and extent. */
__device__ __forceinline__ int gn_chk32(gn_error_record* rec, int i, int n, unsigned int site) {
    if (__builtin_expect((unsigned int)i >= (unsigned int)n, 0)) gn_fail(rec, site, i, n);
    return i;
}
__device__ __forceinline__ int gn_at2_32(gn_error_record* rec, int i, int n0, unsigned int s0,
                                         int j, int n1, unsigned int s1) {
    if (__builtin_expect(((unsigned int)i >= (unsigned int)n0) |
                         ((unsigned int)j >= (unsigned int)n1), 0)) {
        if ((unsigned int)i >= (unsigned int)n0) gn_fail(rec, s0, i, n0);
        gn_fail(rec, s1, j, n1);
    }
    return i * n1 + j;
}

/* load_vec4: the check of the last axis covers the w elements from i (i < n and n - i >= w,
   which no wrap can fool), and reports i and the extent n. */
__device__ __forceinline__ gn_i64 gn_chk_vec(gn_error_record* rec, gn_i64 i, gn_i64 n, int w,
                                             unsigned int site) {
    if (__builtin_expect(((gn_u64)i >= (gn_u64)n) | (n - i < w), 0)) gn_fail(rec, site, i, n);
    return i;
}
/* One vector access at p (a vector's alignment); the checked form first reports an address off
   that alignment (its distance from the boundary below, in bytes) instead of faulting. */
template <typename V, typename T> __device__ __forceinline__ V gn_vload(const T* p) {
    return *reinterpret_cast<const V*>(p);
}
template <typename V, typename T>
__device__ __forceinline__ V gn_vload_chk(gn_error_record* rec, const T* p, unsigned int site) {
    const unsigned long long off = (unsigned long long)p & (alignof(V) - 1);
    if (__builtin_expect(off != 0, 0)) gn_fail(rec, site, (gn_i64)off, 0);
    return *reinterpret_cast<const V*>(p);
}

__device__ __forceinline__ void gn_assert(gn_error_record* rec, bool ok, unsigned int site) {
    if (__builtin_expect(!ok, 0)) gn_fail(rec, site, 0, 0);
}
__device__ __forceinline__ void gn_assert_at(gn_error_record* rec, bool ok, unsigned int site,
                                             gn_i64 uid, unsigned int bdim) {
    if (__builtin_expect(!ok, 0)) gn_fail_at(rec, site, 0, 0, uid, bdim);
}

/* Python floor division and modulo for integers (wrapping, INT_MIN // -1 == INT_MIN). */
/* `if constexpr`: the signed branch is not instantiated for unsigned T, where NVRTC 12 warns
   about `r < 0` ("pointless comparison of unsigned integer with zero"). */
template <typename T> __device__ __forceinline__ T gn_floordiv(T a, T b) {
    if constexpr ((T)-1 > (T)0) {
        return a / b;
    } else {
        if (b == (T)-1) return (T)(0 - (gn_u64)a);
        T q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
        return q;
    }
}
template <typename T> __device__ __forceinline__ T gn_mod(T a, T b) {
    if constexpr ((T)-1 > (T)0) {
        return a % b;
    } else {
        if (b == (T)-1) return 0;
        T r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
}
template <typename T> __device__ __forceinline__ T gn_floordiv_chk(
        gn_error_record* rec, T a, T b, unsigned int site) {
    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);
    return gn_floordiv(a, b);
}
template <typename T> __device__ __forceinline__ T gn_mod_chk(
        gn_error_record* rec, T a, T b, unsigned int site) {
    if (__builtin_expect(b == 0, 0)) gn_fail(rec, site, (gn_i64)a, 0);
    return gn_mod(a, b);
}
template <typename T> __device__ __forceinline__ T gn_floordiv_chk_at(
        gn_error_record* rec, T a, T b, unsigned int site, gn_i64 uid, unsigned int bdim) {
    if (__builtin_expect(b == 0, 0)) gn_fail_at(rec, site, (gn_i64)a, 0, uid, bdim);
    return gn_floordiv(a, b);
}
template <typename T> __device__ __forceinline__ T gn_mod_chk_at(
        gn_error_record* rec, T a, T b, unsigned int site, gn_i64 uid, unsigned int bdim) {
    if (__builtin_expect(b == 0, 0)) gn_fail_at(rec, site, (gn_i64)a, 0, uid, bdim);
    return gn_mod(a, b);
}

/* Python float modulo and floor division (the result of % has the divisor's sign).  By a zero
   divisor, NumPy's values where Python raises: a // 0.0 is a / 0.0 (an infinity, or NaN for
   0 // 0.0), a % 0.0 is NaN (fmod's). */
__device__ __forceinline__ float gn_fmod_py(float a, float b) {
    float m = fmodf(a, b);
    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; }
    else m = copysignf(0.0f, b);
    return m;
}
__device__ __forceinline__ double gn_fmod_py(double a, double b) {
    double m = fmod(a, b);
    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; }
    else m = copysign(0.0, b);
    return m;
}
__device__ __forceinline__ float gn_ffloordiv_py(float a, float b) {
    if (b == 0.0f) return a / b;
    float m = fmodf(a, b);
    float d = (a - m) / b;
    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) d -= 1.0f; }
    if (d != 0.0f) { float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return f; }
    return copysignf(0.0f, a / b);
}
__device__ __forceinline__ double gn_ffloordiv_py(double a, double b) {
    if (b == 0.0) return a / b;
    double m = fmod(a, b);
    double d = (a - m) / b;
    if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) d -= 1.0; }
    if (d != 0.0) { double f = floor(d); if (d - f > 0.5) f += 1.0; return f; }
    return copysign(0.0, a / b);
}

/* Shifts by a count outside 0..bits-1 give 0 (left) or the sign fill (right), as if the value
   were shifted one bit at a time. */
template <typename T> __device__ __forceinline__ T gn_shl(T a, gn_i64 n) {
    const int bits = sizeof(T) * 8;
    if (n < 0 || n >= bits) return (T)0;
    return (T)((gn_u64)a << n);
}
template <typename T> __device__ __forceinline__ T gn_shr(T a, gn_i64 n) {
    const int bits = sizeof(T) * 8;
    if (n < 0 || n >= bits) return (a < (T)0) ? (T)-1 : (T)0;
    return a >> n;
}
/* Signed 32-bit (and narrower) right shifts are a PTX bfe.s32, the same value.  ptxas (NVRTC
   13.0, sm_90) takes the arithmetic shift of x | C, for a C with the sign bit set, to be
   non-negative: abs((x | C) >> 2) became (x | C) >> 2, and min(b, (x | C) >> 2) became b for a
   b in {0, 1} (fuzz seed 48495).  It does not make that assumption of a bit-field extract. */
__device__ __forceinline__ int gn_asr32(int a, int n) {
    int r;
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(n), "r"(32 - n));
    return r;
}
#define GN_SHR_SIGNED(T, BITS)                                                              \
    template <> __device__ __forceinline__ T gn_shr<T>(T a, gn_i64 n) {                      \
        if (n < 0 || n >= BITS) return (a < (T)0) ? (T)-1 : (T)0;                           \
        return (T)gn_asr32((int)a, (int)n); }
GN_SHR_SIGNED(int, 32)
GN_SHR_SIGNED(short, 16)
GN_SHR_SIGNED(signed char, 8)
#undef GN_SHR_SIGNED

/* Integer power with a constant non-negative exponent (wrapping). */
template <typename T> __device__ __forceinline__ T gn_ipow(T base, int e) {
    gn_u64 result = 1, b = (gn_u64)base;
    while (e > 0) { if (e & 1) result *= b; b *= b; e >>= 1; }
    return (T)result;
}

template <typename T> __device__ __forceinline__ T gn_sq(T a) { return a * a; }

/* x * c for a constant c = +-2**k, 1 <= |k| <= 3, as a fused multiply-add of -0.0 (the same
   IEEE result, -0.0 and NaN included).  ptxas (NVRTC 13.0 and 13.5, sm_90) folds a plain f32
   multiply by such a c into the multiply that produced x, as one FMUL.D8 or .M4 with a single
   rounding: (b * b) / 8 became finite where b * b overflows to inf (fuzz seed 2508). */
__device__ __forceinline__ float gn_fscale(float x, float c) { return __fmaf_rn(x, c, -0.0f); }

/* x / y, where y is not a non-zero constant.  NVVM (NVRTC 13.0) takes a quotient to be
   non-negative when neither operand can be less than zero, overlooking y = -0.0: it folded
   (float)u / -0.0f < 0.0f to false although the quotient is -inf, and Python's x % q took the
   wrong sign (fuzz seed 70643).  As the PTX div.rn it emits for x / y anyway, the quotient is
   opaque to that reasoning.  Fast math (div.approx) keeps the plain division. */
#if __USE_FAST_MATH__
__device__ __forceinline__ float gn_fdiv(float x, float y) { return x / y; }
#else
__device__ __forceinline__ float gn_fdiv(float x, float y) {
    float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y)); return r; }
#endif
__device__ __forceinline__ double gn_fdiv(double x, double y) {
    double r; asm("div.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(x), "d"(y)); return r; }

/* Python's min/max: min(a, b) is b only when b < a (so NaN handling follows the argument order). */
template <typename T> __device__ __forceinline__ T gn_min(T a, T b) { return (b < a) ? b : a; }
template <typename T> __device__ __forceinline__ T gn_max(T a, T b) { return (b > a) ? b : a; }
/* 32-bit (and narrower) integers select through a PTX `set` mask, min(a, b) = a ^ ((a ^ b) & m)
   with m all ones when b < a.  ptxas (NVRTC 13.0, sm_90) miscompiles the VIMNMX instructions it
   forms from chained minima and maxima: it fused min(min(-a, b), c) into one VIMNMX3 and dropped
   the negation (fuzz seeds 1951, 2552), and for m = max(max(x, 0), 0) it read m != 0 from the
   predicate output of a VIMNMX.RELU the wrong way round (fuzz seed 3534).  Even a setp/selp pair
   became a VIMNMX; a mask is not recognised as a min or max (tests/emit/test_nvrtc_bugs.py). */
#define GN_SELECT_MINMAX(T, R, CMP, NAME)                                                   \
    template <> __device__ __forceinline__ T NAME<T>(T a, T b) {                             \
        R m; asm("set." CMP " %0, %2, %1;" : "=r"(m) : "r"((R)a), "r"((R)b));                \
        return (T)((R)a ^ (((R)a ^ (R)b) & m)); }
GN_SELECT_MINMAX(int, int, "lt.u32.s32", gn_min)
GN_SELECT_MINMAX(int, int, "gt.u32.s32", gn_max)
GN_SELECT_MINMAX(unsigned int, unsigned int, "lt.u32.u32", gn_min)
GN_SELECT_MINMAX(unsigned int, unsigned int, "gt.u32.u32", gn_max)
GN_SELECT_MINMAX(short, int, "lt.u32.s32", gn_min)
GN_SELECT_MINMAX(short, int, "gt.u32.s32", gn_max)
GN_SELECT_MINMAX(unsigned short, unsigned int, "lt.u32.u32", gn_min)
GN_SELECT_MINMAX(unsigned short, unsigned int, "gt.u32.u32", gn_max)
GN_SELECT_MINMAX(signed char, int, "lt.u32.s32", gn_min)
GN_SELECT_MINMAX(signed char, int, "gt.u32.s32", gn_max)
GN_SELECT_MINMAX(unsigned char, unsigned int, "lt.u32.u32", gn_min)
GN_SELECT_MINMAX(unsigned char, unsigned int, "gt.u32.u32", gn_max)
#undef GN_SELECT_MINMAX
/* Floats compare on their bit patterns.  As a float select the optimiser may turn min/max into
   fmin/fmax, which do not keep the argument order for -0.0/+0.0 (fuzz seed 1403), and ptxas
   (NVRTC 13.0, sm_90) takes fabs(x), x*x and exp2(x) to be >= 0 although they may be NaN: it
   folds max(-5.0, fabs(x)) to fabs(x) and min(exp2(x), -3.0) to -3.0 (fuzz seeds 443, 9984,
   10215, 14661).  Integer operations on the bits carry none of those assumptions.
   gn_ieee_lt(b, a) is IEEE b < a: false when either is NaN or both are zeros. */
__device__ __forceinline__ bool gn_ieee_lt(float b, float a) {
    const unsigned int ua = (unsigned int)__float_as_int(a), ub = (unsigned int)__float_as_int(b);
    const unsigned int ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
    const bool unordered = (ma > 0x7f800000u) | (mb > 0x7f800000u) | ((ma | mb) == 0u);
    /* Negative values: flip the magnitude bits so that signed integer order is float order. */
    const int ka = (int)(ua ^ ((unsigned int)((int)ua >> 31) >> 1));
    const int kb = (int)(ub ^ ((unsigned int)((int)ub >> 31) >> 1));
    return !unordered & (kb < ka);
}
__device__ __forceinline__ bool gn_ieee_lt(double b, double a) {
    const gn_u64 ua = (gn_u64)__double_as_longlong(a), ub = (gn_u64)__double_as_longlong(b);
    const gn_u64 ma = ua & 0x7fffffffffffffffull, mb = ub & 0x7fffffffffffffffull;
    const bool unordered = (ma > 0x7ff0000000000000ull) | (mb > 0x7ff0000000000000ull) |
                           ((ma | mb) == 0ull);
    const gn_i64 ka = (gn_i64)(ua ^ ((gn_u64)((gn_i64)ua >> 63) >> 1));
    const gn_i64 kb = (gn_i64)(ub ^ ((gn_u64)((gn_i64)ub >> 63) >> 1));
    return !unordered & (kb < ka);
}
template <> __device__ __forceinline__ float gn_min<float>(float a, float b) {
    return gn_ieee_lt(b, a) ? b : a; }
template <> __device__ __forceinline__ float gn_max<float>(float a, float b) {
    return gn_ieee_lt(a, b) ? b : a; }
template <> __device__ __forceinline__ double gn_min<double>(double a, double b) {
    return gn_ieee_lt(b, a) ? b : a; }
template <> __device__ __forceinline__ double gn_max<double>(double a, double b) {
    return gn_ieee_lt(a, b) ? b : a; }
/* x > c and x >= c against a constant c <= 0, for the same ptxas assumption: the compare may be
   folded to true, so the NaN test is made on the bits (fuzz seed 2638).  Likewise x < c and
   x <= c against a constant c >= 0, for an x it takes to be <= 0: 2e18f > -v with v = fabs(y)
   was true for a NaN y (fuzz seed 47326). */
__device__ __forceinline__ bool gn_not_nan(float x) {
    return ((unsigned int)__float_as_int(x) & 0x7fffffffu) <= 0x7f800000u; }
__device__ __forceinline__ bool gn_not_nan(double x) {
    return ((gn_u64)__double_as_longlong(x) & 0x7fffffffffffffffull) <= 0x7ff0000000000000ull; }
template <typename T> __device__ __forceinline__ bool gn_gt_ord(T x, T c) {
    return (x > c) & gn_not_nan(x); }
template <typename T> __device__ __forceinline__ bool gn_ge_ord(T x, T c) {
    return (x >= c) & gn_not_nan(x); }
template <typename T> __device__ __forceinline__ bool gn_lt_ord(T x, T c) {
    return (x < c) & gn_not_nan(x); }
template <typename T> __device__ __forceinline__ bool gn_le_ord(T x, T c) {
    return (x <= c) & gn_not_nan(x); }
/* abs with wraparound: abs(INT_MIN) is INT_MIN.  Spelled as a PTX negate-and-select: both the
   C++ optimiser and ptxas (NVRTC 13.0) treat an abs, even PTX abs.s32, as non-negative, and then
   fold min(0, abs(x)) to 0 or drop a floor-division correction (fuzz seeds 530, 3080, 3404). */
template <typename T> __device__ __forceinline__ T gn_iabs(T a) {
    return (a < (T)0) ? (T)(0 - (gn_u64)a) : a;
}
template <> __device__ __forceinline__ int gn_iabs<int>(int a) {
    int r;
    asm("{ .reg .pred p; .reg .s32 n; setp.lt.s32 p, %1, 0; neg.s32 n, %1; selp.b32 %0, n, %1, p; }"
        : "=r"(r) : "r"(a));
    return r;
}
template <> __device__ __forceinline__ long long gn_iabs<long long>(long long a) {
    long long r;
    asm("{ .reg .pred p; .reg .s64 n; setp.lt.s64 p, %1, 0; neg.s64 n, %1; selp.b64 %0, n, %1, p; }"
        : "=l"(r) : "l"(a));
    return r;
}

/* reversed(range(start, stop, step)): the loop counts down from the range's length
   (gn_range_count: exact in 64 bits, 0 for an empty range or a zero step) and computes each value
   from its index (gn_range_value: modulo 2**64, exact for every index below the length), so a
   runtime step's sign decides the direction as in Python and no counter steps past a bound at
   the limit of its type.  `if constexpr`: no signed branch for unsigned T (see gn_floordiv). */
template <typename T> __device__ __forceinline__ gn_u64 gn_range_count(T start, T stop, T step) {
    const gn_u64 s = (gn_u64)start, e = (gn_u64)stop, d = (gn_u64)step;
    if constexpr ((T)-1 > (T)0) {
        return (step != 0 && start < stop) ? (e - s - 1) / d + 1 : 0;
    } else {
        if (step > 0) return start < stop ? (e - s - 1) / d + 1 : 0;
        if (step < 0) return start > stop ? (s - e - 1) / (0 - d) + 1 : 0;
        return 0;
    }
}
template <typename T> __device__ __forceinline__ T gn_range_value(T start, T step, gn_u64 k) {
    return (T)((gn_u64)start + k * (gn_u64)step);
}

/* Sign extension of a 32-bit result that may have wrapped.  NVVM (NVRTC 13.0 and 13.5) rewrote
   (long long)(int)((unsigned)x - C) as (long long)x - C in a uid loop, as if the 32-bit
   subtraction could not wrap (fuzz seed 12127); a PTX cvt keeps the extension after the wrap. */
__device__ __forceinline__ long long gn_sext32(int v) {
    long long r;
    asm("cvt.s64.s32 %0, %1;" : "=l"(r) : "r"(v));
    return r;
}

/* Float to integer: truncate toward zero, saturate at the type's range, NaN gives 0. */
template <typename T> __device__ __forceinline__ T gn_f2i(double x, double lo, double hi) {
    if (x != x) return (T)0;
    if (x <= lo) return (T)lo;
    if (x >= hi) return (T)hi;
    return (T)trunc(x);
}
__device__ __forceinline__ gn_i64 gn_f2i64(double x) {
    if (x != x) return 0;
    if (x <= -9223372036854775808.0) return (gn_i64)0x8000000000000000ull;
    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffll;
    return (gn_i64)x;
}
__device__ __forceinline__ gn_u64 gn_f2u64(double x) {
    if (x != x || x <= 0.0) return 0;
    if (x >= 18446744073709551616.0) return 0xffffffffffffffffull;
    return (gn_u64)x;
}

__device__ __forceinline__ int gn_lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return (int)lane;
}
__device__ __forceinline__ unsigned int gn_dynamic_smem_bytes() {
    unsigned int bytes;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    return bytes;
}

/* Atomic min/max on floats through compare-and-swap (no native instruction). */
__device__ __forceinline__ float gn_atomic_min(float* p, float v) {
    int* ip = (int*)p; int old = *ip, assumed;
    do { assumed = old; if (!(v < __int_as_float(assumed))) break;
         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);
    return __int_as_float(old);
}
__device__ __forceinline__ float gn_atomic_max(float* p, float v) {
    int* ip = (int*)p; int old = *ip, assumed;
    do { assumed = old; if (!(v > __int_as_float(assumed))) break;
         old = atomicCAS(ip, assumed, __float_as_int(v)); } while (old != assumed);
    return __int_as_float(old);
}
__device__ __forceinline__ double gn_atomic_min(double* p, double v) {
    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;
    do { assumed = old; if (!(v < __longlong_as_double(assumed))) break;
         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);
    return __longlong_as_double(old);
}
__device__ __forceinline__ double gn_atomic_max(double* p, double v) {
    gn_u64* ip = (gn_u64*)p; gn_u64 old = *ip, assumed;
    do { assumed = old; if (!(v > __longlong_as_double(assumed))) break;
         old = atomicCAS(ip, assumed, (gn_u64)__double_as_longlong(v)); } while (old != assumed);
    return __longlong_as_double(old);
}
__device__ __forceinline__ float gn_atomic_cas(float* p, float expected, float desired) {
    return __int_as_float(atomicCAS((int*)p, __float_as_int(expected), __float_as_int(desired)));
}
__device__ __forceinline__ double gn_atomic_cas(double* p, double expected, double desired) {
    return __longlong_as_double(atomicCAS((gn_u64*)p, (gn_u64)__double_as_longlong(expected),
                                          (gn_u64)__double_as_longlong(desired)));
}
template <typename T> __device__ __forceinline__ T gn_atomic_cas(T* p, T expected, T desired) {
    return atomicCAS(p, expected, desired);
}
__device__ __forceinline__ gn_i64 gn_atomic_cas(gn_i64* p, gn_i64 expected, gn_i64 desired) {
    return (gn_i64)atomicCAS((gn_u64*)p, (gn_u64)expected, (gn_u64)desired);
}
template <typename T> __device__ __forceinline__ T gn_atomic_load(T* p) {
    return *(volatile T*)p;
}
template <typename T> __device__ __forceinline__ void gn_atomic_store(T* p, T v) {
    *(volatile T*)p = v;
}

/* Bit operations CUDA has no intrinsic for, or one whose documented behaviour we pin. */
__device__ __forceinline__ int gn_ctz32(unsigned int x) { return __clz((int)__brev(x)); }
__device__ __forceinline__ int gn_ctz64(unsigned long long x) {
    return __clzll((long long)__brevll(x));
}
/* __byte_perm documents selector nibbles of 3 bits; the hardware's prmt reads a 4th (sign
   replication), so it is cleared: byte_perm computes the documented function on every backend. */
__device__ __forceinline__ unsigned int gn_byte_perm(unsigned int x, unsigned int y,
                                                     unsigned int s) {
    return __byte_perm(x, y, s & 0x7777u);
}
/* bitcast(x, R): the bits of x as an R of the same size (memcpy is how C++ spells it safely). */
template <typename R, typename T> __device__ __forceinline__ R gn_bitcast(T x) {
    static_assert(sizeof(R) == sizeof(T), "bitcast between types of different sizes");
    R r;
    memcpy(&r, &x, sizeof(R));
    return r;
}
/* __match_all_sync's predicate is true exactly when its result is nonzero: only the mask. */
template <typename T> __device__ __forceinline__ unsigned int gn_match_all(unsigned int mask, T v) {
    int all;
    return __match_all_sync(mask, v, &all);
}
/* ---- random numbers: Philox4x32-10 ------------------------------------------------------------

   A generator (`rng = philox(seed, subsequence, offset)`) is three u64s: the key (the seed), the
   subsequence and a counter of blocks.  Each draw computes the next block, Philox4x32-10 (Salmon
   et al., SC'11) of the counter (counter, subsequence) under the key, as cuRAND's curand_init
   numbers its blocks, and advances the counter.  gpu_native/simulator/philox.py computes the
   same values bit for bit: the floating-point steps are round-to-nearest operations spelled with
   __dadd_rn and friends, which the device compiler neither fuses into FMAs nor approximates
   (not even under --use_fast_math), and the constants are hexadecimal floats, the same text as
   philox.py's CONSTANTS. */
__device__ __forceinline__ uint4 gn_philox4x32_10(uint4 c, uint2 k) {
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r) { k.x += 0x9E3779B9u; k.y += 0xBB67AE85u; }
        const unsigned int lo0 = 0xD2511F53u * c.x, hi0 = __umulhi(0xD2511F53u, c.x);
        const unsigned int lo1 = 0xCD9E8D57u * c.z, hi1 = __umulhi(0xCD9E8D57u, c.z);
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}
/* The generator's next block; its counter moves on by one. */
__device__ __forceinline__ uint4 gn_philox_next(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    const uint4 c = make_uint4((unsigned int)ctr, (unsigned int)(ctr >> 32), (unsigned int)sub,
                               (unsigned int)(sub >> 32));
    ctr += 1ull;
    return gn_philox4x32_10(c, make_uint2((unsigned int)key, (unsigned int)(key >> 32)));
}
__device__ __forceinline__ gn_u64 gn_philox_pair(unsigned int lo, unsigned int hi) {
    return (gn_u64)lo | ((gn_u64)hi << 32);
}
__device__ __forceinline__ unsigned int gn_philox_u32(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    return gn_philox_next(key, sub, ctr).x;
}
/* k / 2**24 and k / 2**53: exact conversions, exact scalings. */
__device__ __forceinline__ float gn_philox_uniform_f32(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    return __fmul_rn((float)(gn_philox_next(key, sub, ctr).x >> 8), 0x1p-24f);
}
__device__ __forceinline__ double gn_philox_uniform_f64(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    const uint4 b = gn_philox_next(key, sub, ctr);
    return __dmul_rn((double)(gn_philox_pair(b.x, b.y) >> 11), 0x1p-53);
}
/* log(u) for u in (0, 1]: fdlibm's e_log.c without its shortcuts. */
__device__ __forceinline__ double gn_philox_log(double u) {
    int e;
    double m = frexp(u, &e);
    if (m < 0x1.6a09e667f3bcdp-1) { m = __dmul_rn(m, 2.0); e -= 1; }
    const double k = (double)e;
    const double f = __dsub_rn(m, 1.0);
    const double s = __ddiv_rn(f, __dadd_rn(2.0, f));
    const double z = __dmul_rn(s, s), w = __dmul_rn(z, z);
    const double t1 = __dmul_rn(w, __dadd_rn(0x1.999999997fa04p-2, __dmul_rn(w, __dadd_rn(
        0x1.c71c51d8e78afp-3, __dmul_rn(w, 0x1.39a09d078c69fp-3)))));
    const double t2 = __dmul_rn(z, __dadd_rn(0x1.5555555555593p-1, __dmul_rn(w, __dadd_rn(
        0x1.2492494229359p-2, __dmul_rn(w, __dadd_rn(0x1.7466496cb03dep-3, __dmul_rn(w, 0x1.2f112df3e5244p-3)))))));
    const double r = __dadd_rn(t2, t1);
    const double hfsq = __dmul_rn(__dmul_rn(0.5, f), f);
    return __dsub_rn(__dmul_rn(k, 0x1.62e42fee00000p-1), __dsub_rn(__dsub_rn(hfsq, __dadd_rn(
        __dmul_rn(s, __dadd_rn(hfsq, r)), __dmul_rn(k, 0x1.a39ef35793c76p-33))), f));
}
/* sin(x) and cos(x) for x in [0, pi/4]: fdlibm's k_sin.c and k_cos.c (no tail). */
__device__ __forceinline__ double gn_philox_sin(double x) {
    const double z = __dmul_rn(x, x), v = __dmul_rn(z, x);
    const double r = __dadd_rn(0x1.111111110f8a6p-7, __dmul_rn(z, __dadd_rn(-0x1.a01a019c161d5p-13, __dmul_rn(z, __dadd_rn(
        0x1.71de357b1fe7dp-19, __dmul_rn(z, __dadd_rn(-0x1.ae5e68a2b9cebp-26, __dmul_rn(z, 0x1.5d93a5acfd57cp-33))))))));
    return __dadd_rn(x, __dmul_rn(v, __dadd_rn(-0x1.5555555555549p-3, __dmul_rn(z, r))));
}
__device__ __forceinline__ double gn_philox_cos(double x) {
    const double z = __dmul_rn(x, x), w = __dmul_rn(z, z);
    const double r = __dadd_rn(
        __dmul_rn(z, __dadd_rn(0x1.555555555554cp-5, __dmul_rn(z, __dadd_rn(-0x1.6c16c16c15177p-10, __dmul_rn(z, 0x1.a01a019cb1590p-16))))),
        __dmul_rn(__dmul_rn(w, w), __dadd_rn(-0x1.27e4f809c52adp-22, __dmul_rn(z, __dadd_rn(
            0x1.1ee9ebdb4b1c4p-29, __dmul_rn(z, -0x1.8fae9be8838d4p-37))))));
    const double hz = __dmul_rn(0.5, z), v = __dsub_rn(1.0, hz);
    return __dadd_rn(v, __dadd_rn(__dsub_rn(__dsub_rn(1.0, v), hz), __dmul_rn(z, r)));
}
/* cos(2 pi t) for t in [0, 1): the quarter turn and the octant come exactly from t. */
__device__ __forceinline__ double gn_philox_cos2pi(double t) {
    const double t4 = __dmul_rn(t, 4.0);
    const double q = floor(t4);
    const double r = __dsub_rn(t4, q);
    const bool flip = r > 0.5;
    const double y = __dmul_rn(flip ? __dsub_rn(1.0, r) : r, 0x1.921fb54442d18p+0);
    const bool odd = q == 1.0 || q == 3.0;
    const double v = odd != flip ? gn_philox_sin(y) : gn_philox_cos(y);
    return q == 1.0 || q == 2.0 ? -v : v;
}
/* Box-Muller: sqrt(-2 log u1) cos(2 pi u2), u1 in (0, 1] from x, y and u2 in [0, 1) from z, w. */
__device__ __forceinline__ double gn_philox_normal_f64(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    const uint4 b = gn_philox_next(key, sub, ctr);
    const double u1 = __dmul_rn((double)((gn_philox_pair(b.x, b.y) >> 11) + 1ull), 0x1p-53);
    const double u2 = __dmul_rn((double)(gn_philox_pair(b.z, b.w) >> 11), 0x1p-53);
    return __dmul_rn(__dsqrt_rn(__dmul_rn(-2.0, gn_philox_log(u1))), gn_philox_cos2pi(u2));
}
__device__ __forceinline__ float gn_philox_normal_f32(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    return __double2float_rn(gn_philox_normal_f64(key, sub, ctr));
}
/* randint's bound, 1 <= n <= 2**32 - 1, or the thread reports the site's error and ends. */
template <typename T> __device__ __forceinline__ gn_u64 gn_philox_bound(
        gn_error_record* rec, T n, unsigned int site) {
    if (__builtin_expect(!(n >= (T)1 && (gn_u64)n <= 0xFFFFFFFFull), 0))
        gn_fail(rec, site, (gn_i64)n, 0);
    return (gn_u64)n;
}
template <typename T> __device__ __forceinline__ gn_u64 gn_philox_bound(
        gn_error_record* rec, T n, unsigned int site, gn_i64 uid, unsigned int bdim) {
    if (__builtin_expect(!(n >= (T)1 && (gn_u64)n <= 0xFFFFFFFFull), 0))
        gn_fail_at(rec, site, (gn_i64)n, 0, uid, bdim);
    return (gn_u64)n;
}
/* An integer in [0, n) without bias: Lemire's multiply-and-shift, rejecting a word x when
   (x * n) mod 2**32 < 2**32 mod n; the block's words in order, then the next block's. */
template <typename T> __device__ __forceinline__ T gn_philox_randint(
        gn_u64 key, gn_u64 sub, gn_u64& ctr, gn_u64 n) {
    const unsigned int bound = (unsigned int)n;
    for (;;) {
        const uint4 b = gn_philox_next(key, sub, ctr);
        const unsigned int words[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const gn_u64 m = (gn_u64)words[i] * bound;
            const unsigned int low = (unsigned int)m;
            if (low >= bound || low >= (0u - bound) % bound) return (T)(m >> 32);
        }
    }
}

/* ---- small vectors: gn_vec2f ... gn_vec4i (gpu_native/lang/types.py's VectorInfo) ----------
   Packed components, aligned as CUDA aligns its own vectors (2 and 4 components: their size up
   to 16 bytes; 3: their element's), so an array of them has NumPy's (n, 3) layout and gn_vec4f
   and gn_vec2d elements load in one 16-byte access.  Aggregates without constructors, so
   __shared__ arrays of them need no initialisation and gn_vec3f{x, y, z} evaluates left to right.
   Every operation works component by component as the scalar operator does (float division
   through gn_fdiv, integer + - * wrapping), and sums run x first; the simulator
   (gpu_native/simulator/vectors.py) computes the same, operation by operation (the compiler may
   still contract a product and a sum into an FMA here, as anywhere). */
struct __align__(8) gn_vec2f { float x, y; };
struct gn_vec3f { float x, y, z; };
struct __align__(16) gn_vec4f { float x, y, z, w; };
struct __align__(16) gn_vec2d { double x, y; };
struct gn_vec3d { double x, y, z; };
struct __align__(16) gn_vec4d { double x, y, z, w; };
struct __align__(8) gn_vec2i { int x, y; };
struct gn_vec3i { int x, y, z; };
struct __align__(16) gn_vec4i { int x, y, z, w; };

__device__ __forceinline__ float gn_e_add(float a, float b) { return a + b; }
__device__ __forceinline__ float gn_e_sub(float a, float b) { return a - b; }
__device__ __forceinline__ float gn_e_mul(float a, float b) { return a * b; }
__device__ __forceinline__ float gn_e_div(float a, float b) { return gn_fdiv(a, b); }
__device__ __forceinline__ float gn_e_neg(float a) { return -a; }
__device__ __forceinline__ double gn_e_add(double a, double b) { return a + b; }
__device__ __forceinline__ double gn_e_sub(double a, double b) { return a - b; }
__device__ __forceinline__ double gn_e_mul(double a, double b) { return a * b; }
__device__ __forceinline__ double gn_e_div(double a, double b) { return gn_fdiv(a, b); }
__device__ __forceinline__ double gn_e_neg(double a) { return -a; }
__device__ __forceinline__ int gn_e_add(int a, int b) {
    return (int)((unsigned int)a + (unsigned int)b); }
__device__ __forceinline__ int gn_e_sub(int a, int b) {
    return (int)((unsigned int)a - (unsigned int)b); }
__device__ __forceinline__ int gn_e_mul(int a, int b) {
    return (int)((unsigned int)a * (unsigned int)b); }
__device__ __forceinline__ int gn_e_neg(int a) { return (int)(0u - (unsigned int)a); }

/* GN_Cn(M, F) applies M(F, c) to each component name c; a braced list may end with a comma. */
#define GN_C2(M, F) M(F, x) M(F, y)
#define GN_C3(M, F) M(F, x) M(F, y) M(F, z)
#define GN_C4(M, F) M(F, x) M(F, y) M(F, z) M(F, w)
#define GN_VV(F, c) F(a.c, b.c),
#define GN_VS(F, c) F(a.c, s),
#define GN_SV(F, c) F(s, b.c),
#define GN_V1(F, c) F(a.c),
#define GN_DOT2 gn_e_add(gn_e_mul(a.x, b.x), gn_e_mul(a.y, b.y))
#define GN_DOT3 gn_e_add(GN_DOT2, gn_e_mul(a.z, b.z))
#define GN_DOT4 gn_e_add(GN_DOT3, gn_e_mul(a.w, b.w))
#define GN_VEC_OPERATOR(V, T, C, OP, F)                                                       \
    __device__ __forceinline__ V operator OP(V a, V b) { return V{C(GN_VV, F)}; }            \
    __device__ __forceinline__ V operator OP(V a, T s) { return V{C(GN_VS, F)}; }            \
    __device__ __forceinline__ V operator OP(T s, V b) { return V{C(GN_SV, F)}; }
#define GN_VEC_TYPE(V, T, C, DOT)                                                             \
    GN_VEC_OPERATOR(V, T, C, +, gn_e_add)                                                     \
    GN_VEC_OPERATOR(V, T, C, -, gn_e_sub)                                                     \
    GN_VEC_OPERATOR(V, T, C, *, gn_e_mul)                                                     \
    __device__ __forceinline__ V operator-(V a) { return V{C(GN_V1, gn_e_neg)}; }            \
    __device__ __forceinline__ T gn_dot(V a, V b) { return DOT; }                             \
    __device__ __forceinline__ T gn_length_sq(V a) { return gn_dot(a, a); }                  \
    __device__ __forceinline__ V gn_min(V a, V b) { return V{C(GN_VV, gn_min<T>)}; }         \
    __device__ __forceinline__ V gn_max(V a, V b) { return V{C(GN_VV, gn_max<T>)}; }
/* Float vectors divide, have a length, and normalise as Warp does: the zero vector where the
   length is not positive (NaN included: gn_gt_ord, as ptxas takes a square root to be >= 0). */
#define GN_VEC_FLOAT(V, T, C, SQRT)                                                           \
    GN_VEC_OPERATOR(V, T, C, /, gn_e_div)                                                     \
    __device__ __forceinline__ T gn_length(V a) { return SQRT(gn_dot(a, a)); }                \
    __device__ __forceinline__ V gn_normalize(V a) {                                          \
        T l = gn_length(a); return gn_gt_ord(l, (T)0) ? a / l : V{}; }
/* a * c for a constant c = +-2**k (see gn_fscale): component by component. */
#define GN_VEC_FSCALE(V, C)                                                                   \
    __device__ __forceinline__ V gn_fscale(V a, float s) { return V{C(GN_VS, gn_fscale)}; }
#define GN_VEC_CROSS(V)                                                                       \
    __device__ __forceinline__ V gn_cross(V a, V b) {                                         \
        return V{gn_e_sub(gn_e_mul(a.y, b.z), gn_e_mul(a.z, b.y)),                            \
                 gn_e_sub(gn_e_mul(a.z, b.x), gn_e_mul(a.x, b.z)),                            \
                 gn_e_sub(gn_e_mul(a.x, b.y), gn_e_mul(a.y, b.x))}; }

GN_VEC_TYPE(gn_vec2f, float, GN_C2, GN_DOT2)
GN_VEC_TYPE(gn_vec3f, float, GN_C3, GN_DOT3)
GN_VEC_TYPE(gn_vec4f, float, GN_C4, GN_DOT4)
GN_VEC_TYPE(gn_vec2d, double, GN_C2, GN_DOT2)
GN_VEC_TYPE(gn_vec3d, double, GN_C3, GN_DOT3)
GN_VEC_TYPE(gn_vec4d, double, GN_C4, GN_DOT4)
GN_VEC_TYPE(gn_vec2i, int, GN_C2, GN_DOT2)
GN_VEC_TYPE(gn_vec3i, int, GN_C3, GN_DOT3)
GN_VEC_TYPE(gn_vec4i, int, GN_C4, GN_DOT4)
GN_VEC_FLOAT(gn_vec2f, float, GN_C2, sqrtf)
GN_VEC_FLOAT(gn_vec3f, float, GN_C3, sqrtf)
GN_VEC_FLOAT(gn_vec4f, float, GN_C4, sqrtf)
GN_VEC_FLOAT(gn_vec2d, double, GN_C2, sqrt)
GN_VEC_FLOAT(gn_vec3d, double, GN_C3, sqrt)
GN_VEC_FLOAT(gn_vec4d, double, GN_C4, sqrt)
GN_VEC_FSCALE(gn_vec2f, GN_C2)
GN_VEC_FSCALE(gn_vec3f, GN_C3)
GN_VEC_FSCALE(gn_vec4f, GN_C4)
GN_VEC_CROSS(gn_vec3f)
GN_VEC_CROSS(gn_vec3d)
GN_VEC_CROSS(gn_vec3i)

/* Atomics on arrays of vectors (a.atomic_ref(i).fetch_add(v) ...): one atomic of the element
   type per component, x first (a braced list evaluates in order), each giving that component's
   old value; the vector as a whole is not updated atomically, as with Warp's atomic_add of a
   vec3.  Each component is the scalar atomic: a float subtraction adds the negation, float min
   and max are gn_atomic_min/max.  (The 16-bit pairs use CUDA's atomicAdd of __half2 and
   __nv_bfloat162, atomic per lane too.) */
__device__ __forceinline__ float gn_atomic_sub(float* p, float v) { return atomicAdd(p, -v); }
__device__ __forceinline__ double gn_atomic_sub(double* p, double v) { return atomicAdd(p, -v); }
__device__ __forceinline__ int gn_atomic_sub(int* p, int v) { return atomicSub(p, v); }
__device__ __forceinline__ int gn_atomic_min(int* p, int v) { return atomicMin(p, v); }
__device__ __forceinline__ int gn_atomic_max(int* p, int v) { return atomicMax(p, v); }
#define GN_VA(F, c) F(&p->c, v.c),
#define GN_VEC_ATOMIC(V, C)                                                                   \
    __device__ __forceinline__ V gn_vatomic_add(V* p, V v) { return V{C(GN_VA, atomicAdd)}; } \
    __device__ __forceinline__ V gn_vatomic_sub(V* p, V v) {                                  \
        return V{C(GN_VA, gn_atomic_sub)}; }                                                  \
    __device__ __forceinline__ V gn_vatomic_min(V* p, V v) {                                  \
        return V{C(GN_VA, gn_atomic_min)}; }                                                  \
    __device__ __forceinline__ V gn_vatomic_max(V* p, V v) {                                  \
        return V{C(GN_VA, gn_atomic_max)}; }
GN_VEC_ATOMIC(gn_vec2f, GN_C2)
GN_VEC_ATOMIC(gn_vec3f, GN_C3)
GN_VEC_ATOMIC(gn_vec4f, GN_C4)
GN_VEC_ATOMIC(gn_vec2d, GN_C2)
GN_VEC_ATOMIC(gn_vec3d, GN_C3)
GN_VEC_ATOMIC(gn_vec4d, GN_C4)
GN_VEC_ATOMIC(gn_vec2i, GN_C2)
GN_VEC_ATOMIC(gn_vec3i, GN_C3)
GN_VEC_ATOMIC(gn_vec4i, GN_C4)
#undef GN_VEC_ATOMIC
#undef GN_VA
#undef GN_VEC_CROSS
#undef GN_VEC_FSCALE
#undef GN_VEC_FLOAT
#undef GN_VEC_TYPE
#undef GN_VEC_OPERATOR
#undef GN_DOT4
#undef GN_DOT3
#undef GN_DOT2
#undef GN_V1
#undef GN_SV
#undef GN_VS
#undef GN_VV
#undef GN_C4
#undef GN_C3
#undef GN_C2

/* ---- random numbers four at a time: rng.uniform4() and rng.normal4(), a gn_vec4f -----------
   One block each, every word used.  uniform4 converts each word as gn_philox_uniform_f32 does
   x0.  normal4 is Box-Muller on the pairs (x0, x1) and (x2, x3), as cuRAND's curand_normal4
   pairs them: u1 = (a + 1) / 2**32 in (0, 1] and u2 = b / 2**32 in [0, 1) (exact), r =
   sqrt(-2 log u1), then r cos(2 pi u2) and r sin(2 pi u2), in double with the operations of
   gn_philox_normal_f64 and rounded once to float; sin(2 pi t) is cos(2 pi (t - 1/4)), with
   t - 1/4 taken modulo 1 (exact).  gpu_native/simulator/philox.py's uniform4 and normal4
   compute the same bits. */
__device__ __forceinline__ float gn_philox_word_uniform(unsigned int x) {
    return __fmul_rn((float)(x >> 8), 0x1p-24f);
}
__device__ __forceinline__ gn_vec4f gn_philox_uniform4(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    const uint4 b = gn_philox_next(key, sub, ctr);
    return gn_vec4f{gn_philox_word_uniform(b.x), gn_philox_word_uniform(b.y),
                    gn_philox_word_uniform(b.z), gn_philox_word_uniform(b.w)};
}
__device__ __forceinline__ double gn_philox_sin2pi(double t) {
    return gn_philox_cos2pi(t >= 0.25 ? __dsub_rn(t, 0.25) : __dadd_rn(t, 0.75));
}
__device__ __forceinline__ void gn_philox_box_muller(unsigned int a, unsigned int b, float& c,
                                                     float& s) {
    const double u1 = __dmul_rn((double)((gn_u64)a + 1ull), 0x1p-32);
    const double u2 = __dmul_rn((double)b, 0x1p-32);
    const double r = __dsqrt_rn(__dmul_rn(-2.0, gn_philox_log(u1)));
    c = __double2float_rn(__dmul_rn(r, gn_philox_cos2pi(u2)));
    s = __double2float_rn(__dmul_rn(r, gn_philox_sin2pi(u2)));
}
__device__ __forceinline__ gn_vec4f gn_philox_normal4(gn_u64 key, gn_u64 sub, gn_u64& ctr) {
    const uint4 b = gn_philox_next(key, sub, ctr);
    gn_vec4f z;
    gn_philox_box_muller(b.x, b.y, z.x, z.y);
    gn_philox_box_muller(b.z, b.w, z.z, z.w);
    return z;
}

/* ---- packed 16-bit pairs: gn_vec2h (__half2) and gn_vec2bf (__nv_bfloat162) ----------------
   CUDA's own types (two lanes in one 32-bit register, .x the low half, as NumPy's (n, 2) float16
   stores them), present where the kernel includes cuda_fp16.h / cuda_bf16.h (it does when it
   uses a 16-bit type).  + - * are the _rn intrinsics, one f16x2/bf16x2 instruction each that the
   device compiler does not contract into an FMA (PTX: a .rn add or mul is never fused), so each
   lane is rounded once as the simulator rounds it; a fused multiply-add is written as one
   (gn_pfma, __hfma2).  Division is each lane's f32 quotient through gn_fdiv, rounded once, as
   scalar half division is.  Named functions, not operators: cuda_fp16.hpp already defines the
   operators of __half2 (as the contractible __hadd2 ...). */
#define GN_PACKED(V, S, HALF, SPLAT, FMA)                                                        \
    __device__ __forceinline__ V gn_padd(V a, V b) { return __hadd2_rn(a, b); }               \
    __device__ __forceinline__ V gn_psub(V a, V b) { return __hsub2_rn(a, b); }               \
    __device__ __forceinline__ V gn_pmul(V a, V b) { return __hmul2_rn(a, b); }               \
    __device__ __forceinline__ V gn_pfma(V a, V b, V c) { return FMA(a, b, c); }              \
    __device__ __forceinline__ V gn_pneg(V a) { return __hneg2(a); }                          \
    __device__ __forceinline__ V gn_psplat(S s) { return SPLAT(s); }                          \
    __device__ __forceinline__ V gn_pdiv(V a, V b) {                                          \
        return V{__float2##HALF##_rn(gn_fdiv(__##HALF##2float(a.x), __##HALF##2float(b.x))),    \
                 __float2##HALF##_rn(gn_fdiv(__##HALF##2float(a.y), __##HALF##2float(b.y)))}; } \
    __device__ __forceinline__ V gn_min(V a, V b) {                                           \
        return V{gn_min<S>(a.x, b.x), gn_min<S>(a.y, b.y)}; }                                 \
    __device__ __forceinline__ V gn_max(V a, V b) {                                           \
        return V{gn_max<S>(a.x, b.x), gn_max<S>(a.y, b.y)}; }
#if defined(__CUDA_FP16_H__)
typedef __half2 gn_vec2h;
GN_PACKED(gn_vec2h, __half, half, __half2half2, __hfma2)
#endif
#if defined(__CUDA_BF16_H__)
typedef __nv_bfloat162 gn_vec2bf;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
/* The headers declare the bf16x2 __hfma2 from sm_80 on; below, each lane goes through f32, as
   the headers compute the other bf16 pair operations there (docs/language.md: the bit-for-bit
   promise for vec2bf holds from sm_80). */
__device__ __forceinline__ gn_vec2bf gn_bf16x2_fma(gn_vec2bf a, gn_vec2bf b, gn_vec2bf c) {
    return gn_vec2bf{
        __float2bfloat16_rn(fmaf(__bfloat162float(a.x), __bfloat162float(b.x), __bfloat162float(c.x))),
        __float2bfloat16_rn(fmaf(__bfloat162float(a.y), __bfloat162float(b.y), __bfloat162float(c.y)))};
}
#else
#define gn_bf16x2_fma __hfma2
#endif
GN_PACKED(gn_vec2bf, __nv_bfloat16, bfloat16, __bfloat162bfloat162, gn_bf16x2_fma)
#undef gn_bf16x2_fma
#endif
#undef GN_PACKED

/* ---- warp matrices and asynchronous copies (PTX ldmatrix, mma.sync, cp.async) ----
   A fragment is a local array of 16-bit or f32 elements, declared __align__(16) by the emitter
   so that its elements pair into the 32-bit registers PTX names; every index into it is a
   constant after unrolling, so it lives in registers.  The layouts are PTX's for mma.m16n8k16
   (see the registry's mma_sync entry).  gpu_native/simulator/matrices.py mirrors these. */
template <int N, bool TRANS>
__device__ __forceinline__ void gn_ldmatrix(void* frag, const void* src) {
    unsigned* d = reinterpret_cast<unsigned*>(frag);
    const unsigned a = (unsigned)__cvta_generic_to_shared(src);
    if (N == 4 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a));
    else if (N == 4)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a));
    else if (N == 2 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                     : "=r"(d[0]), "=r"(d[1]) : "r"(a));
    else if (N == 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                     : "=r"(d[0]), "=r"(d[1]) : "r"(a));
    else if (!TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(d[0]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
                     : "=r"(d[0]) : "r"(a));
}

/* acc += a @ b: one m16n8k16 tensor-core product, f32 accumulator. */
template <bool BF16>
__device__ __forceinline__ void gn_mma_m16n8k16(float* c, const void* a, const void* b) {
    const unsigned* A = reinterpret_cast<const unsigned*>(a);
    const unsigned* B = reinterpret_cast<const unsigned*>(b);
    if (BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]));
}

/* acc += a @ b: one m16n8k8 tensor-core product of f32 inputs rounded to tf32 (to nearest, ties
   away from zero: cvt.rna), f32 accumulator. */
__device__ __forceinline__ void gn_mma_m16n8k8_tf32(float* c, const float* a, const float* b) {
    unsigned A[4], B[2];
#pragma unroll
    for (int i = 0; i < 4; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(A[i]) : "f"(a[i]));
#pragma unroll
    for (int i = 0; i < 2; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(B[i]) : "f"(b[i]));
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]));
}

/* cp.async of N bytes global -> shared (16 bytes bypass L1: .cg), and its groups. */
template <int N>
__device__ __forceinline__ void gn_cp_async(void* dst, const void* src) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if (N == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(d), "l"(src), "n"(N)
                     : "memory");
}
__device__ __forceinline__ void gn_cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void gn_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
/* ---- swizzled shared arrays and warpgroup MMA (sm_90a; gpu_native/check/warpgroup.py) ----
   A swizzled array of R x C 16-bit elements per leading index (C a multiple of 64) is stored as
   C / 64 column blocks of R rows of 128 bytes; row r's 16-byte chunk k sits at chunk k ^ (r & 7)
   (the 128-byte swizzle of a wgmma descriptor, applied by the hardware to address bits 4-6 from
   bits 7-9: the arrays start 1024-byte aligned).  The element offset of (lead, r, c):  */
template <int R, int C>
__device__ __forceinline__ int gn_swz128(int lead, int r, int c) {
    return lead * (R * C) + (c >> 6) * (R * 64) + r * 64 + ((((c >> 3) & 7) ^ (r & 7)) << 3)
           + (c & 7);
}
/* The start of the swizzled arrays: the dynamic shared memory rounded up to 1024 bytes. */
__device__ __forceinline__ unsigned char* gn_swizzle_base(unsigned char* smem) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    return smem + ((1024u - (a & 1023u)) & 1023u);
}
/* A shared-memory matrix descriptor of the 128-byte swizzle: start, leading and stride byte
   offsets (>> 4), layout type 1 (bits 62-63). */
__device__ __forceinline__ unsigned long long gn_wgmma_desc(unsigned addr, unsigned lbo,
                                                            unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4)
           | ((unsigned long long)(lbo >> 4) << 16) | ((unsigned long long)(sbo >> 4) << 32)
           | (1ull << 62);
}
template <int N>
__device__ __forceinline__ void gn_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
template <int Unused = 0>
__device__ __forceinline__ void gn_wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
template <int Unused = 0>
__device__ __forceinline__ void gn_wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
/* Generic-proxy writes to shared memory (stores, cp.async) made visible to wgmma's async proxy:
   before each barrier of a kernel that uses warpgroup MMA. */
template <int Unused = 0>
__device__ __forceinline__ void gn_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/* A barrier of the 128 threads of this thread's warpgroup alone (named barrier 1 + its index in
   the block; barrier 0 is __syncthreads): warpgroup_store's staging. */
__device__ __forceinline__ void gn_warpgroup_barrier() {
    const unsigned id =
        1u + ((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 7);
    asm volatile("bar.sync %0, 128;" :: "r"(id) : "memory");
}
/* Thread t's place in its warpgroup, from its linear index in the block. */
__device__ __forceinline__ int gn_warpgroup_thread() {
    return (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 127u);
}
/* ---- tensor copies (sm_90; gpu_native/check/tma.py) ----
   A tensor map (CUtensorMap: 128 opaque bytes the launcher encodes with cuTensorMapEncodeTiled),
   passed as a __grid_constant__ parameter.  Each slice of a destination has an mbarrier that
   expects one arrival a phase: the issuing thread adds each copy's bytes (expect_tx), the copies
   complete them (complete_tx), and its arrival at its own tma_wait closes the phase. */
struct __align__(64) gn_tma_map { unsigned long long v[16]; };
__device__ __forceinline__ unsigned gn_smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void gn_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
/* The initialised barriers, visible to the copy engine (the async proxy). */
__device__ __forceinline__ void gn_mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void gn_mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                 :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gn_mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
/* Wait for the phase of `parity`.  A thread that failed a check has exited, maybe before it
   issued or closed the phase (unlike __syncthreads, an mbarrier does not count exited threads):
   a waiter that finds the launch's error record set stops waiting, so the block runs to its end
   and the error is reported instead of the block hanging (the launch's outputs are then
   unspecified).  It returns rather than exits: an exit here makes ptxas wait for the wgmma in
   flight (C7517), serializing a pipeline. */
__device__ __forceinline__ void gn_mbar_wait(unsigned bar, unsigned parity,
                                             const gn_error_record* rec) {
    unsigned done;
    for (;;) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        if (done) return;
        if (*(const volatile unsigned int*)&rec->state != 0u) return;
    }
}
/* One box of a 2-D tensor map at (column c0, row c1) into shared memory at `dst`. */
__device__ __forceinline__ void gn_tma_load_2d(unsigned dst, const gn_tma_map* map, unsigned bar,
                                               int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(dst), "l"((unsigned long long)map), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}
/* A nonzero low address bit under `mask` fails the check (an assert site). */
__device__ __forceinline__ bool gn_aligned(const void* p, unsigned mask) {
    return (((unsigned long long)p) & mask) == 0;
}

/* ---- complex numbers: gn_complex64, gn_complex128 (gpu_native/lang/types.py's ComplexInfo) ----
   Two parts, real first, aligned to their size as cuFloatComplex and cuDoubleComplex are, so an
   array of them is a NumPy complex64 / complex128 array.  Every + - * / below is a correctly
   rounded intrinsic (__fmul_rn ...), which the compiler never contracts into an FMA: the
   simulator (gpu_native/simulator/complexes.py) performs the same operations in the same order
   and gets the same bits for + - * / == != conj.  The functions of cmath take the same steps
   around the device's sin, exp, hypot ... (a few ulps from NumPy's).  Division is Smith's
   algorithm as NumPy writes it (no overflow for large denominators). */
struct __align__(8) gn_complex64 { float x, y; };
struct __align__(16) gn_complex128 { double x, y; };

#define GN_COMPLEX(C, T, M, A, S, D, F, L, E)                                                  \
    __device__ __forceinline__ C operator+(C a, C b) { return C{A(a.x, b.x), A(a.y, b.y)}; }   \
    __device__ __forceinline__ C operator-(C a, C b) { return C{S(a.x, b.x), S(a.y, b.y)}; }   \
    __device__ __forceinline__ C operator-(C a) { return C{-a.x, -a.y}; }                      \
    __device__ __forceinline__ C gn_cmul(C a, C b) {                                           \
        return C{S(M(a.x, b.x), M(a.y, b.y)), A(M(a.x, b.y), M(a.y, b.x))}; }                  \
    __device__ __forceinline__ C gn_cdiv(C a, C b) {                                           \
        T abr = F(fabs)(b.x), abi = F(fabs)(b.y);                                              \
        if (abr >= abi) {                                                                      \
            if (abr == (T)0 && abi == (T)0) return C{D(a.x, abr), D(a.y, abi)};                \
            T rat = D(b.y, b.x), scl = D((T)1, A(b.x, M(b.y, rat)));                           \
            return C{M(A(a.x, M(a.y, rat)), scl), M(S(a.y, M(a.x, rat)), scl)};                \
        }                                                                                      \
        T rat = D(b.x, b.y), scl = D((T)1, A(b.y, M(b.x, rat)));                               \
        return C{M(A(M(a.x, rat), a.y), scl), M(S(M(a.y, rat), a.x), scl)}; }                  \
    __device__ __forceinline__ bool gn_ceq(C a, C b) { return a.x == b.x && a.y == b.y; }      \
    __device__ __forceinline__ bool gn_cne(C a, C b) { return !(a.x == b.x && a.y == b.y); }   \
    __device__ __forceinline__ C gn_cconj(C a) { return C{a.x, -a.y}; }                        \
    __device__ __forceinline__ T gn_cabs(C a) { return F(hypot)(a.x, a.y); }                   \
    __device__ __forceinline__ T gn_cphase(C a) { return F(atan2)(a.y, a.x); }                 \
    __device__ __forceinline__ bool gn_cisnan(C a) { return isnan(a.x) || isnan(a.y); }        \
    __device__ __forceinline__ bool gn_cisinf(C a) { return isinf(a.x) || isinf(a.y); }        \
    __device__ __forceinline__ bool gn_cisfinite(C a) {                                        \
        return isfinite(a.x) && isfinite(a.y); }                                               \
    __device__ __forceinline__ C gn_crect(T r, T phi) {                                        \
        return C{M(r, F(cos)(phi)), M(r, F(sin)(phi))}; }                                      \
    __device__ __forceinline__ C gn_cexp(C a) {                                                \
        T e = F(exp)(a.x);                                                                     \
        return C{M(e, F(cos)(a.y)), a.y == (T)0 ? a.y : M(e, F(sin)(a.y))}; }                  \
    __device__ __forceinline__ C gn_clog(C a) {                                                \
        return C{F(log)(F(hypot)(a.x, a.y)), F(atan2)(a.y, a.x)}; }                            \
    __device__ __forceinline__ C gn_clog10(C a) {                                              \
        return C{F(log10)(F(hypot)(a.x, a.y)),                                                 \
                 M(F(atan2)(a.y, a.x), (T)0.43429448190325182765)}; }                          \
    __device__ __forceinline__ C gn_csqrt(C a) {                                               \
        if (a.x == (T)0 && a.y == (T)0) return C{(T)0, a.y};                                   \
        if (isinf(a.y)) return C{F(fabs)(a.y), a.y};  /* +inf, whatever the real part */    \
        T t = F(sqrt)(M(A(F(fabs)(a.x), F(hypot)(a.x, a.y)), (T)0.5));                         \
        if (a.x >= (T)0) return C{t, D(a.y, M((T)2, t))};                                      \
        return C{D(F(fabs)(a.y), M((T)2, t)), F(copysign)(t, a.y)}; }                          \
    __device__ __forceinline__ C gn_csin(C a) {                                                \
        return C{M(F(sin)(a.x), F(cosh)(a.y)), M(F(cos)(a.x), F(sinh)(a.y))}; }                \
    __device__ __forceinline__ C gn_ccos(C a) {                                                \
        return C{M(F(cos)(a.x), F(cosh)(a.y)), -M(F(sin)(a.x), F(sinh)(a.y))}; }               \
    __device__ __forceinline__ C gn_csinh(C a) {                                               \
        return C{M(F(sinh)(a.x), F(cos)(a.y)), M(F(cosh)(a.x), F(sin)(a.y))}; }                \
    __device__ __forceinline__ C gn_ccosh(C a) {                                               \
        return C{M(F(cosh)(a.x), F(cos)(a.y)), M(F(sinh)(a.x), F(sin)(a.y))}; }                \
    __device__ __forceinline__ C gn_ctanh(C a) {                                               \
        if (F(fabs)(a.x) > (T)20)                                                              \
            return C{F(copysign)((T)1, a.x),                                                   \
                     M(M((T)2, F(sin)(M((T)2, a.y))), F(exp)(M((T)-2, F(fabs)(a.x))))};        \
        T d = A(F(cosh)(M((T)2, a.x)), F(cos)(M((T)2, a.y)));                                  \
        return C{D(F(sinh)(M((T)2, a.x)), d), D(F(sin)(M((T)2, a.y)), d)}; }                   \
    __device__ __forceinline__ C gn_ctan(C a) {                                                \
        C w = gn_ctanh(C{-a.y, a.x});                                                          \
        return C{w.y, -w.x}; }                                                                 \
    /* The inverse functions: Kahan's forms from the principal roots of 1 - z and 1 + z        \
       (1 -+ iz, z -+ 1), whose sums never cancel; atanh by the parts of                       \
       log((1 + z) / (1 - z)) / 2.  Beyond L in either part, the leading term at               \
       infinity (exact there); below E, atanh's y*y would underflow. */                        \
    __device__ __forceinline__ bool gn_cfar(C a) {                                             \
        return F(fabs)(a.x) > (T)(L) || F(fabs)(a.y) > (T)(L); }                               \
    __device__ __forceinline__ T gn_clog_2abs(C a) {  /* log(2|z|), |z| not overflowing */     \
        return A(F(log)(F(hypot)(M(a.x, (T)0.5), M(a.y, (T)0.5))),                             \
                 (T)1.3862943611198906188); }                                                  \
    __device__ __forceinline__ C gn_casinh(C a) {                                              \
        if (gn_cfar(a))                                                                        \
            return C{F(copysign)(gn_clog_2abs(a), a.x), F(atan2)(a.y, F(fabs)(a.x))};          \
        C s1 = gn_csqrt(C{A((T)1, a.y), -a.x}), s2 = gn_csqrt(C{S((T)1, a.y), a.x});           \
        return C{F(asinh)(S(M(s1.x, s2.y), M(s1.y, s2.x))),                                    \
                 F(atan2)(a.y, S(M(s1.x, s2.x), M(s1.y, s2.y)))}; }                            \
    __device__ __forceinline__ C gn_casin(C a) {                                               \
        C w = gn_casinh(C{-a.y, a.x});                                                         \
        return C{w.y, -w.x}; }                                                                 \
    __device__ __forceinline__ C gn_cacos(C a) {                                               \
        if (gn_cfar(a))                                                                        \
            return C{F(atan2)(F(fabs)(a.y), a.x), F(copysign)(gn_clog_2abs(a), -a.y)};         \
        C s1 = gn_csqrt(C{S((T)1, a.x), -a.y}), s2 = gn_csqrt(C{A((T)1, a.x), a.y});           \
        return C{M((T)2, F(atan2)(s1.x, s2.x)), F(asinh)(S(M(s2.x, s1.y), M(s2.y, s1.x)))}; }  \
    __device__ __forceinline__ C gn_cacosh(C a) {                                              \
        if (gn_cfar(a)) return C{gn_clog_2abs(a), F(atan2)(a.y, a.x)};                         \
        C s1 = gn_csqrt(C{S(a.x, (T)1), a.y}), s2 = gn_csqrt(C{A(a.x, (T)1), a.y});            \
        return C{F(asinh)(A(M(s1.x, s2.x), M(s1.y, s2.y))), M((T)2, F(atan2)(s1.y, s2.x))}; }  \
    __device__ __forceinline__ C gn_catanh(C a) {                                              \
        if (gn_cfar(a))  /* 1/z +- i pi/2 (Smith's 1/z may lose the sign of a zero x) */       \
            return C{F(copysign)(gn_cdiv(C{(T)1, (T)0}, a).x, a.x),                            \
                     F(copysign)((T)1.5707963267948966192, a.y)};                              \
        /* the real part from |x| (with x, 4x/d would cancel against 1 near x = -1) */         \
        T ax = F(fabs)(a.x), re;                                                               \
        if (ax == (T)1 && F(fabs)(a.y) < (T)(E))                                               \
            re = M(S((T)0.69314718055994530942, F(log)(F(fabs)(a.y))), (T)0.5);                \
        else                                                                                   \
            re = M(F(log1p)(D(M((T)4, ax), A(M(S((T)1, ax), S((T)1, ax)), M(a.y, a.y)))),      \
                   (T)0.25);                                                                   \
        return C{F(copysign)(re, a.x),                                                         \
                 M(F(atan2)(M((T)2, a.y), S(M(S((T)1, a.x), A((T)1, a.x)), M(a.y, a.y))),      \
                   (T)0.5)}; }                                                                 \
    __device__ __forceinline__ C gn_catan(C a) {                                               \
        C w = gn_catanh(C{-a.y, a.x});                                                         \
        return C{w.y, -w.x}; }

#define GN_F32(name) name##f
#define GN_F64(name) name
GN_COMPLEX(gn_complex64, float, __fmul_rn, __fadd_rn, __fsub_rn, __fdiv_rn, GN_F32, 1e18, 1e-18)
GN_COMPLEX(gn_complex128, double, __dmul_rn, __dadd_rn, __dsub_rn, __ddiv_rn, GN_F64, 1e150,
           1e-150)
#undef GN_F64
#undef GN_F32
#undef GN_COMPLEX

#endif /* GPU_NATIVE_PRELUDE_CUH */
