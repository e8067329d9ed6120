"""The complex functions on the simulator, mirroring the prelude's ``gn_cmul``, ``gn_cdiv``,
``gn_cexp`` ... (gpu_native/include/gpu_native/prelude.cuh), step for step.

A complex value is a tuple ``(re, im)`` of its parts, each a value as :mod:`.ops` carries it (a
NumPy scalar or a vector of lanes) of the part type: ``complex64`` computes in ``float32``, one
rounding per operation, never in ``float64``.  The prelude writes every ``+ - * /`` as a correctly
rounded intrinsic, which the device compiler does not contract into an FMA, so ``mul``, ``div``
(Smith's algorithm, as NumPy writes it), ``eq``, ``ne`` and ``conj`` give the GPU's bits; the
others call NumPy's ``sin``, ``exp``, ``hypot`` ... where the GPU calls CUDA's, which differ by
a few ulps.  Where the prelude branches, every lane computes both sides and keeps its own.
"""

from __future__ import annotations

import numpy as np

__all__ = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "div",
           "eq", "exp", "isfinite", "isinf", "isnan", "log", "log10", "mul", "ne", "phase", "rect",
           "sin", "sinh", "sqrt", "tan", "tanh"]

_LOG10_E = 0.43429448190325182765
_HALF_PI = 1.5707963267948966192
_LN2 = 0.69314718055994530942
_TWO_LN2 = 1.3862943611198906188
# The inverse functions' thresholds, the prelude's GN_COMPLEX arguments: beyond the first (in
# either part) they take their leading term at infinity, exact there to the last bit (atanh's
# (1 - x)**2 + y**2 overflows a little further); below the second, atanh's y**2 underflows.
_LIMITS = {np.float32: (1e18, 1e-18), np.float64: (1e150, 1e-150)}


def _t(x):
    """The part type's scalar constructor (``np.float32`` for ``complex64``)."""
    return np.asarray(x).dtype.type


def _select(c, a, b):
    """``a`` where ``c``, else ``b`` (a NumPy scalar when every operand is one)."""
    if np.ndim(c) == 0 and np.ndim(a) == 0 and np.ndim(b) == 0:
        return a if c else b
    return np.where(c, a, b)


def mul(a: tuple, b: tuple) -> tuple:
    return (a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


def div(a: tuple, b: tuple) -> tuple:
    """Smith's algorithm, as NumPy and the prelude's ``gn_cdiv`` write it."""
    ar, ai = a
    br, bi = b
    t = _t(br)
    abr, abi = np.abs(br), np.abs(bi)
    one = t(1)
    # |br| >= |bi|: divide through by br (both zero: the parts over zero, inf or NaN)
    rat1 = bi / br
    scl1 = one / (br + bi * rat1)
    re1, im1 = (ar + ai * rat1) * scl1, (ai - ar * rat1) * scl1
    zero = (abr == 0) & (abi == 0)
    re1, im1 = _select(zero, ar / abr, re1), _select(zero, ai / abi, im1)
    # otherwise through by bi
    rat2 = br / bi
    scl2 = one / (bi + br * rat2)
    re2, im2 = (ar * rat2 + ai) * scl2, (ai * rat2 - ar) * scl2
    first = abr >= abi
    return _select(first, re1, re2), _select(first, im1, im2)


def eq(a: tuple, b: tuple):
    return (a[0] == b[0]) & (a[1] == b[1])


def ne(a: tuple, b: tuple):
    return ~eq(a, b)


def conj(a: tuple) -> tuple:
    return (a[0], -a[1])


def abs(a: tuple):
    return np.hypot(a[0], a[1])


def phase(a: tuple):
    return np.arctan2(a[1], a[0])


def isnan(a: tuple):
    return np.isnan(a[0]) | np.isnan(a[1])


def isinf(a: tuple):
    return np.isinf(a[0]) | np.isinf(a[1])


def isfinite(a: tuple):
    return np.isfinite(a[0]) & np.isfinite(a[1])


def rect(r, phi) -> tuple:
    return (r * np.cos(phi), r * np.sin(phi))


def exp(a: tuple) -> tuple:
    x, y = a
    e = np.exp(x)
    return (e * np.cos(y), _select(y == 0, y, e * np.sin(y)))


def log(a: tuple) -> tuple:
    x, y = a
    return (np.log(np.hypot(x, y)), np.arctan2(y, x))


def log10(a: tuple) -> tuple:
    x, y = a
    return (np.log10(np.hypot(x, y)), np.arctan2(y, x) * _t(x)(_LOG10_E))


def sqrt(a: tuple) -> tuple:
    x, y = a
    t = _t(x)
    s = np.sqrt((np.abs(x) + np.hypot(x, y)) * t(0.5))
    two_s = t(2) * s
    re = _select(x >= 0, s, np.abs(y) / two_s)
    im = _select(x >= 0, y / two_s, np.copysign(s, y))
    infinite = np.isinf(y)
    re, im = _select(infinite, np.abs(y), re), _select(infinite, y, im)
    zero = (x == 0) & (y == 0)
    return _select(zero, t(0), re), _select(zero, y, im)


def sin(a: tuple) -> tuple:
    x, y = a
    return (np.sin(x) * np.cosh(y), np.cos(x) * np.sinh(y))


def cos(a: tuple) -> tuple:
    x, y = a
    return (np.cos(x) * np.cosh(y), -(np.sin(x) * np.sinh(y)))


def sinh(a: tuple) -> tuple:
    x, y = a
    return (np.sinh(x) * np.cos(y), np.cosh(x) * np.sin(y))


def cosh(a: tuple) -> tuple:
    x, y = a
    return (np.cosh(x) * np.cos(y), np.sinh(x) * np.sin(y))


def tanh(a: tuple) -> tuple:
    x, y = a
    t = _t(x)
    two = t(2)
    d = np.cosh(two * x) + np.cos(two * y)
    re, im = np.sinh(two * x) / d, np.sin(two * y) / d
    # |x| > 20: tanh(x) is ±1 to the last bit, and cosh(2x) would overflow
    far = np.abs(x) > 20
    far_im = (two * np.sin(two * y)) * np.exp(t(-2) * np.abs(x))
    return _select(far, np.copysign(t(1), x), re), _select(far, far_im, im)


def tan(a: tuple) -> tuple:
    w = tanh((-a[1], a[0]))
    return (w[1], -w[0])


def _far(x, y):
    """Either part beyond the type's first limit (the prelude's ``gn_cfar``)."""
    t = _t(x)
    big = t(_LIMITS[t][0])
    return (np.abs(x) > big) | (np.abs(y) > big)


def _log_2abs(x, y):
    """``log(2 |z|)``, as ``log(|z / 2|) + 2 log 2`` so that ``|z|`` does not overflow."""
    t = _t(x)
    half = t(0.5)
    return np.log(np.hypot(x * half, y * half)) + t(_TWO_LN2)


def asinh(a: tuple) -> tuple:
    """Kahan's: with ``s1 = sqrt(1 - iz)``, ``s2 = sqrt(1 + iz)`` (principal roots),
    ``(asinh(Im(conj(s1) s2)), atan2(y, Re(s1 s2)))``; neither sum cancels (its two products
    have the same sign)."""
    x, y = a
    t = _t(x)
    one = t(1)
    r1, i1 = sqrt((one + y, -x))
    r2, i2 = sqrt((one - y, x))
    re, im = np.arcsinh(r1 * i2 - i1 * r2), np.arctan2(y, r1 * r2 - i1 * i2)
    # far out: asinh(z) = ±log(2z) to the last bit
    far = _far(x, y)
    return (_select(far, np.copysign(_log_2abs(x, y), x), re),
            _select(far, np.arctan2(y, np.abs(x)), im))


def asin(a: tuple) -> tuple:
    """``-i asinh(iz)``."""
    w = asinh((-a[1], a[0]))
    return (w[1], -w[0])


def acos(a: tuple) -> tuple:
    """Kahan's: with ``s1 = sqrt(1 - z)``, ``s2 = sqrt(1 + z)``,
    ``(2 atan2(Re s1, Re s2), asinh(Im(conj(s2) s1)))``."""
    x, y = a
    t = _t(x)
    one = t(1)
    r1, i1 = sqrt((one - x, -y))
    r2, i2 = sqrt((one + x, y))
    re, im = t(2) * np.arctan2(r1, r2), np.arcsinh(r2 * i1 - i2 * r1)
    far = _far(x, y)
    return (_select(far, np.arctan2(np.abs(y), x), re),
            _select(far, np.copysign(_log_2abs(x, y), -y), im))


def acosh(a: tuple) -> tuple:
    """Kahan's: with ``s1 = sqrt(z - 1)``, ``s2 = sqrt(z + 1)``,
    ``(asinh(Re(conj(s1) s2)), 2 atan2(Im s1, Re s2))``."""
    x, y = a
    t = _t(x)
    one = t(1)
    r1, i1 = sqrt((x - one, y))
    r2, i2 = sqrt((x + one, y))
    re, im = np.arcsinh(r1 * r2 + i1 * i2), t(2) * np.arctan2(i1, r2)
    far = _far(x, y)
    return _select(far, _log_2abs(x, y), re), _select(far, np.arctan2(y, x), im)


def atanh(a: tuple) -> tuple:
    """``log((1 + z) / (1 - z)) / 2`` by its parts: ``±log1p(4|x| / ((1 - |x|)**2 + y**2)) / 4``
    (the sign of x; with x itself the sum would cancel near x = -1) and
    ``atan2(2y, (1 - x)(1 + x) - y**2) / 2``."""
    x, y = a
    t = _t(x)
    one = t(1)
    ax = np.abs(x)
    re = np.log1p(t(4) * ax / ((one - ax) * (one - ax) + y * y)) * t(0.25)
    # x = ±1 and |y| below the second limit: y**2 would underflow; log(2 / |y|) / 2 is exact
    edge = (ax == one) & (np.abs(y) < t(_LIMITS[t][1]))
    re = np.copysign(_select(edge, (t(_LN2) - np.log(np.abs(y))) * t(0.5), re), x)
    im = np.arctan2(t(2) * y, (one - x) * (one + x) - y * y) * t(0.5)
    # far out: atanh(z) = 1/z ± iπ/2 to the last bit (Smith's 1/z may lose the sign of x = 0)
    far = _far(x, y)
    return (_select(far, np.copysign(div((one, t(0)), a)[0], x), re),
            _select(far, np.copysign(t(_HALF_PI), y), im))


def atan(a: tuple) -> tuple:
    """``-i atanh(iz)``."""
    w = atanh((-a[1], a[0]))
    return (w[1], -w[0])
