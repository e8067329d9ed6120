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

__all__ = ["abs", "conj", "cos", "cosh", "div", "eq", "exp", "isfinite", "isinf", "isnan",
           "log", "log10", "mul", "ne", "phase", "rect", "sin", "sinh", "sqrt", "tan", "tanh"]

_LOG10_E = 0.43429448190325182765


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
