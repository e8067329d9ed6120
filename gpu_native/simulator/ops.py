"""Per-lane arithmetic with the GPU's semantics, on NumPy vectors of lanes.

Each function mirrors one helper of the CUDA prelude (the header
``gpu_native/include/gpu_native/prelude.cuh``, which ``gpu-native expand --prelude`` prints) or one
conversion of :func:`gpu_native.emit.cuda.convert`, so the simulator computes what the generated
CUDA computes: fixed-width wrapping integers, Python floor division and modulo, clamped shifts,
saturating float-to-int casts, one rounding per ``f16`` operation, ``bf16`` computed in ``f32``
and rounded to nearest even.

Values are NumPy scalars (a value every lane shares) or 1-D arrays with one entry per lane.
``bf16`` values are carried as ``float32`` numbers that are exactly representable in ``bf16``;
``bf16`` arrays in memory hold the 16-bit patterns (``uint16``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from ..lang import registry
from ..lang.entry import spelling
from ..lang.halfprec import f64_to_bf16_bits
from ..lang.types import ScalarInfo
from . import bits

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
U64 = np.dtype(np.uint64)


def value_dtype(info: ScalarInfo) -> np.dtype:
    """The NumPy dtype a lane value of this scalar type is carried in."""
    if info.name == "bf16":
        return F32
    return np.dtype(info.numpy)


def memory_dtype(info: ScalarInfo) -> np.dtype:
    """The NumPy dtype of arrays of this element type (bf16: raw 16-bit words)."""
    return info.dtype


def constant(value, info: ScalarInfo):
    """A NumPy scalar holding ``value`` converted to the type (ints wrap, bf16 rounds)."""
    dt = value_dtype(info)
    if info.kind == "bool":
        return np.bool_(bool(value))
    if info.is_int:
        v = int(value) & ((1 << info.bits) - 1)
        if info.is_signed and v >= 1 << (info.bits - 1):
            v -= 1 << info.bits
        return dt.type(v)
    with np.errstate(over="ignore"):   # beyond the type's range is inf, as on the device
        if info.name == "bf16":   # one rounding, from the double, as the CUDA constant's
            return f64_to_bf16(np.float64(value))[()]
        if info.name == "f16":
            return np.float16(np.float64(value))
        return dt.type(value)


def zero(info: ScalarInfo):
    return constant(0, info)


# ---- bfloat16 ------------------------------------------------------------------------------


def round_bf16(x):
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    a = np.asarray(x, dtype=F32)
    bits = a.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(
        0xFFFF0000)
    nan = a != a
    if nan.any():
        rounded = np.where(nan, (bits & np.uint32(0xFFFF0000)) | np.uint32(0x00400000), rounded)
    return rounded.astype(np.uint32).view(F32)


def bf16_to_bits(x) -> np.ndarray:
    """bf16 values (float32, already rounded) to their 16-bit patterns."""
    a = np.asarray(round_bf16(x), dtype=F32)
    return (a.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bits_to_bf16(bits):
    """16-bit patterns to float32 values (exact)."""
    b = np.asarray(bits).astype(np.uint32) << np.uint32(16)
    return b.view(F32)


def f64_to_bf16(x):
    """Round float64 straight to bfloat16 (``__double2bfloat16``): one rounding, not two."""
    return bits_to_bf16(f64_to_bf16_bits(x))


# ---- conversions ---------------------------------------------------------------------------


def _f2i(x, dst: np.dtype, lo: float, hi: float):
    d = np.asarray(x, dtype=F64)
    nan = d != d
    t = np.trunc(np.where(nan, 0.0, np.clip(d, lo, hi)))
    return t.astype(dst)


def _f2i64(x):
    d = np.asarray(x, dtype=F64)
    low = d <= -9223372036854775808.0
    high = d >= 9223372036854775808.0
    safe = np.where((d != d) | low | high, 0.0, d)
    out = np.trunc(safe).astype(I64)
    out = np.where(low, np.int64(-(1 << 63)), out)
    return np.where(high, np.int64((1 << 63) - 1), out)


def _f2u64(x):
    d = np.asarray(x, dtype=F64)
    zero_ = (d != d) | (d <= 0.0)
    high = d >= 18446744073709551616.0
    safe = np.where(zero_ | high, 0.0, d)
    out = np.trunc(safe).astype(U64)
    return np.where(high, np.uint64((1 << 64) - 1), out)


def _scalarize(fn: Callable) -> Callable:
    """Keep a lane-uniform value a NumPy scalar (0-d results become scalars)."""

    def wrapped(x):
        out = fn(x)
        if isinstance(out, np.ndarray) and out.ndim == 0:
            return out[()]
        return out

    wrapped.__name__ = getattr(fn, "__name__", "cast")
    return wrapped


def cast_function(src: ScalarInfo, dst: ScalarInfo) -> Callable:
    """A function converting lane values of type ``src`` to ``dst`` as the CUDA emitter does."""
    if src == dst:
        return lambda x: x
    ddt = value_dtype(dst)
    if dst.kind == "bool":
        return _scalarize(lambda x: np.asarray(x) != 0)
    if src.name == "f16":
        pre = lambda x: np.asarray(x).astype(F32)  # noqa: E731
        src_float, src_f64 = True, False
    elif src.name == "bf16":
        pre = np.asarray  # already float32 values
        src_float, src_f64 = True, False
    else:
        pre = np.asarray
        src_float, src_f64 = src.is_float, src.name == "f64"
    if dst.name == "f16":
        if src_f64:
            return _scalarize(lambda x: pre(x).astype(F16))
        return _scalarize(lambda x: pre(x).astype(F32).astype(F16))
    if dst.name == "bf16":
        if src_f64:
            return _scalarize(lambda x: f64_to_bf16(pre(x)))
        return _scalarize(lambda x: round_bf16(pre(x).astype(F32)))
    if dst.is_float:
        return _scalarize(lambda x: pre(x).astype(ddt))
    if src_float:
        if dst.name == "i64":
            return _scalarize(lambda x: _f2i64(pre(x)))
        if dst.name == "u64":
            return _scalarize(lambda x: _f2u64(pre(x)))
        lo, hi = float(dst.min), float(dst.max)
        return _scalarize(lambda x: _f2i(pre(x), ddt, lo, hi))
    # integer (or bool) to integer: wrap, as C does.
    return _scalarize(lambda x: pre(x).astype(ddt))


# ---- integer arithmetic --------------------------------------------------------------------


def floordiv_int(a, b):
    """Python floor division with wrapping (INT_MIN // -1 == INT_MIN); b == 0 gives 0."""
    return np.floor_divide(a, b)


def mod_int(a, b):
    """Python modulo (the result has the divisor's sign); b == 0 gives 0."""
    return np.remainder(a, b)


def shl(a, n):
    """``gn_shl``: a count outside 0..bits-1 gives 0."""
    a = np.asarray(a)
    dt = a.dtype
    bits = dt.itemsize * 8
    n = np.asarray(n).astype(I64)
    bad = (n < 0) | (n >= bits)
    count = np.where(bad, 0, n).astype(U64)
    out = (a.astype(U64) << count).astype(dt)
    out = np.where(bad, dt.type(0), out)
    return out[()] if out.ndim == 0 else out


def shr(a, n):
    """``gn_shr``: a count outside 0..bits-1 gives the sign fill (0 or -1)."""
    a = np.asarray(a)
    dt = a.dtype
    bits = dt.itemsize * 8
    n = np.asarray(n).astype(I64)
    bad = (n < 0) | (n >= bits)
    count = np.where(bad, 0, n).astype(dt)
    out = np.right_shift(a, count)
    if dt.kind == "i":
        fill = np.where(a < 0, dt.type(-1), dt.type(0))
    else:
        fill = dt.type(0)
    out = np.where(bad, fill, out).astype(dt)
    return out[()] if out.ndim == 0 else out


def ipow(base, n: int):
    """``gn_ipow``: integer power by squaring in 64 bits, wrapped to the base's width."""
    b = np.asarray(base)
    dt = b.dtype
    result = np.ones_like(b, dtype=U64)
    acc = b.astype(U64)
    e = int(n)
    while e > 0:
        if e & 1:
            result = result * acc
        acc = acc * acc
        e >>= 1
    out = result.astype(dt)
    return out[()] if out.ndim == 0 else out


def range_count(start, stop, step):
    """``len(range(start, stop, step))`` per lane, exactly (as uint64; a zero step gives 0).

    The loop then runs an iteration counter up to this count, so no loop variable ever wraps
    near the limit of its type, as Python's range never does."""
    start, stop, step = np.asarray(start), np.asarray(stop), np.asarray(step)
    if start.dtype.kind == "u":
        s, e, st = start.astype(U64), stop.astype(U64), step.astype(U64)
        up = np.ones(np.broadcast(s, e, st).shape, bool)
        pos = st > 0
    else:
        s, e, st = start.astype(I64), stop.astype(I64), step.astype(I64)
        pos = st > 0
        up = pos
    su, eu, stu = s.astype(U64), e.astype(U64), st.astype(U64)
    span = np.where(up, eu - su, su - eu)
    stride = np.where(up, stu, np.uint64(0) - stu)
    nonempty = np.where(up, s < e, s > e) & (st != 0)
    safe = np.where(stride == 0, np.uint64(1), stride)
    count = np.where(nonempty, (span - np.uint64(1)) // safe + np.uint64(1), np.uint64(0))
    return count[()] if count.ndim == 0 else count


def range_value(start, step, k):
    """``start + k * step`` (the k-th value of a range), computed modulo 2**64: exact whenever
    the value lies in range, which it does for ``k < range_count(...)``."""
    start = np.asarray(start)
    out = (start.astype(U64) + np.asarray(k, U64) * np.asarray(step).astype(U64)).astype(
        start.dtype)
    return out[()] if out.ndim == 0 else out


def range_value_back(start, step, count, k):
    """The k-th value of ``reversed(range(start, stop, step))``: the range's ``count - 1 - k``-th
    (``count`` from :func:`range_count`), exact for ``k < count``."""
    back = np.asarray(count, U64) - (np.asarray(k, U64) + np.uint64(1))
    return range_value(start, step, back)


def iabs(a):
    return np.abs(a)  # wraps INT_MIN to itself, like gn_iabs


# ---- float arithmetic ----------------------------------------------------------------------


def fmod_py(a, b):
    """``gn_fmod_py``: Python's float ``%`` (the result has the divisor's sign)."""
    m = np.fmod(a, b)
    nz = m != 0
    fix = nz & ((b < 0) != (m < 0))
    m = np.where(fix, m + b, m)
    m = np.where(nz, m, np.copysign(np.zeros_like(m), b))
    return m[()] if isinstance(m, np.ndarray) and m.ndim == 0 else m


def floordiv_py(a, b):
    """``gn_ffloordiv_py``: Python's float ``//`` (as CPython computes it); by a zero divisor,
    ``a / b`` (NumPy's value, where Python raises)."""
    m = np.fmod(a, b)
    d = (a - m) / b
    d = np.where((m != 0) & ((b < 0) != (m < 0)), d - np.ones_like(d), d)
    f = np.floor(d)
    f = np.where(d - f > d.dtype.type(0.5), f + np.ones_like(f), f)
    out = np.where(d != 0, f, np.copysign(np.zeros_like(d), a / b))
    out = np.where(b == 0, a / b, out)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def fpow_const(x, n: int):
    """``x ** n`` for a float x and a constant integer n, as the emitter spells it."""
    x = np.asarray(x)
    if n == 0:
        out = np.ones_like(x)
    elif n == 1:
        out = x
    elif n == 2:
        out = x * x
    elif x.dtype == F16:
        # powf in float32, rounded once to half (the emitter's pow(__half, 3.0) does not compile
        # today; promoting to f32 like `//` is the natural fix).
        out = np.power(x.astype(F32), np.float32(n)).astype(F16)
    else:
        out = np.power(x, x.dtype.type(n))
    return out[()] if out.ndim == 0 else out


def pymin(a, b):
    """``gn_min``: b only when b < a (NaN handling follows the argument order)."""
    out = np.where(b < a, b, a)
    return out[()] if out.ndim == 0 else out


def pymax(a, b):
    """``gn_max``: b only when b > a."""
    out = np.where(b > a, b, a)
    return out[()] if out.ndim == 0 else out


def _via_python(fn: Callable, special: Callable | None = None) -> Callable:
    """Apply a ``math`` function lane by lane in float64 (for erf, lgamma, tgamma)."""

    def safe(v: float) -> float:
        try:
            return fn(v)
        except (ValueError, OverflowError):
            return special(v) if special is not None else math.nan

    ufunc = np.frompyfunc(safe, 1, 1)

    def apply(x):
        x = np.asarray(x)
        # frompyfunc returns a bare Python float for a 0-d argument: wrap it back.
        out = np.asarray(ufunc(x.astype(F64)), dtype=object).astype(F64).astype(x.dtype)
        return out[()] if out.ndim == 0 else out

    return apply


def _tgamma_special(v: float) -> float:
    """C's ``tgamma`` where Python's raises: a pole at +-0, NaN at a negative integer and at
    -inf (tested first: ``math.floor(-inf)`` raises), +inf on overflow."""
    if v == 0.0:
        return math.copysign(math.inf, v)
    if v == -math.inf:
        return math.nan
    if v < 0 and v == math.floor(v):
        return math.nan
    return math.inf


def _lgamma_special(v: float) -> float:
    return math.inf


def fma(a, b, c):
    """``fma(a, b, c)``: ``a * b + c`` rounded once."""
    a, b, c = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c))
    scalar = a.ndim == 0
    a, b, c = np.atleast_1d(a, b, c)
    dt = a.dtype
    if dt in (F32, F16):
        # a*b is exact in float64; s = a*b + c is rounded once there.  Rounding s "to odd"
        # (with the exact error of the addition) makes the final rounding correct.
        p = a.astype(F64) * b.astype(F64)
        cc = c.astype(F64)
        s = p + cc
        bb = s - p
        err = (p - (s - bb)) + (cc - bb)
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        toward = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
        out = np.where((err != 0) & np.isfinite(s) & even, toward, s).astype(dt)
    else:
        def exact(x: float, y: float, z: float) -> float:
            if not all(math.isfinite(v) for v in (x, y, z)):
                return x * y + z
            r = Fraction(x) * Fraction(y) + Fraction(z)
            try:
                return float(r)
            except OverflowError:
                return math.copysign(math.inf, r)

        out = np.asarray(np.frompyfunc(exact, 3, 1)(a, b, c), dtype=object).astype(dt)
    return out[0] if scalar else out


def _ufunc(fn: Callable) -> Callable:
    def apply(*args):
        out = fn(*args)
        if isinstance(out, np.ndarray) and out.ndim == 0:
            return out[()]
        return out

    return apply


def rsqrt(x):
    """``1 / sqrt(x)``, in the operand's precision."""
    x = np.asarray(x)
    out = x.dtype.type(1) / np.sqrt(x)
    return out[()] if out.ndim == 0 else out


def c_pow(x, y):
    """C's ``pow``: NumPy computes ``x ** 0.5`` as ``sqrt(x)``, which gives NaN for -inf and
    -0.0 for -0.0 where C (and the GPU, and ``math.pow``) give +inf and +0.0."""
    x, y = np.asarray(x), np.asarray(y)
    out = np.power(x, y)
    fix = (y == 0.5) & ((x == -np.inf) | (x == 0))
    if np.any(fix):
        out = np.where(fix, np.where(x == 0, 0, np.inf).astype(out.dtype), out)
    return out[()] if out.ndim == 0 else out


erf = _via_python(math.erf)
erfc = _via_python(math.erfc)
lgamma = _via_python(math.lgamma, _lgamma_special)
tgamma = _via_python(math.gamma, _tgamma_special)


def math_function(name: str, info: ScalarInfo, result: ScalarInfo | None = None) -> Callable:
    """The lane function for ``MathCall(name)`` on operands of type ``info`` (with a result of
    type ``result``): the registry's NumPy function, or the function of this module or of
    :mod:`.bits` it names; one of :data:`.bits.TAKES_TYPES` (``bitcast``) is called with both
    types to make it."""
    try:
        fn = spelling(registry.MATH_OPS[name].sim, info)
    except KeyError:
        raise NotImplementedError(f"math.{name} is not supported by the simulator") from None
    if isinstance(fn, str):
        fn = globals()[fn] if fn in globals() else getattr(bits, fn)
    if fn in bits.TAKES_TYPES:
        fn = fn(info, result or info)
    return _ufunc(fn)
