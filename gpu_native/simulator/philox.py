"""Philox4x32-10 random numbers in NumPy: the simulator's generator, and the reference the GPU's
is tested against.

A generator (``rng = philox(seed, subsequence, offset)`` in a kernel) is three ``u64`` values:
the key (the seed), the subsequence and a counter of blocks (starting at ``offset``).  Each draw
takes the next block, the Philox4x32-10 function (Salmon, Moraes, Dror and Shaw, "Parallel
random numbers: as easy as 1, 2, 3", SC'11) of the 128-bit counter ``(counter, subsequence)``
under the 64-bit key: the words cuRAND's ``curand_init(seed, subsequence, 4 * counter)``
followed by ``curand4()`` returns.  A draw uses the block's four ``u32`` words as it needs them
and advances the counter by one (``randint`` by more when it rejects all four).

Every function here computes what the CUDA prelude (``gpu_native/include/gpu_native/
prelude.cuh``, the ``gn_philox_*`` functions) computes, bit for bit: integer arithmetic, exact
conversions and scalings by powers of two, and, for ``normal``, a fixed sequence of IEEE double
operations each rounded once (the prelude spells them ``__dadd_rn``, ``__dmul_rn`` ... so that
the device compiler neither fuses nor approximates them).  The constants of the logarithm and
the sine and cosine polynomials are written as hexadecimal floats, the same text in both files
(``tests/test_random.py`` compares them).  Each function takes the generator's values (NumPy
scalars or one value per lane) and returns ``(value, new counter)``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "CONSTANTS",
    "block",
    "cos2pi",
    "log_unit",
    "normal4",
    "normal_f32",
    "normal_f64",
    "philox4x32",
    "randint",
    "randint_ok",
    "random_u32",
    "sin2pi",
    "uniform4",
    "uniform_f32",
    "uniform_f64",
]

_U64 = np.uint64
_MASK = _U64(0xFFFFFFFF)
_M0, _M1 = _U64(0xD2511F53), _U64(0xCD9E8D57)  # the round multipliers
_W0, _W1 = _U64(0x9E3779B9), _U64(0xBB67AE85)  # the key schedule's increments (Weyl sequence)
_32 = _U64(32)
_ONE = _U64(1)
RANDINT_MAX = 0xFFFFFFFF
"""The largest bound ``randint(n)`` takes (it draws from 32-bit words)."""

# The constants of log_unit (fdlibm's e_log.c) and of the sine and cosine kernels (fdlibm's
# k_sin.c and k_cos.c), as the prelude writes them.
CONSTANTS: dict[str, str] = {
    "LN2_HI": "0x1.62e42fee00000p-1",
    "LN2_LO": "0x1.a39ef35793c76p-33",
    "LG1": "0x1.5555555555593p-1",
    "LG2": "0x1.999999997fa04p-2",
    "LG3": "0x1.2492494229359p-2",
    "LG4": "0x1.c71c51d8e78afp-3",
    "LG5": "0x1.7466496cb03dep-3",
    "LG6": "0x1.39a09d078c69fp-3",
    "LG7": "0x1.2f112df3e5244p-3",
    "SQRT_HALF": "0x1.6a09e667f3bcdp-1",
    "PI_2": "0x1.921fb54442d18p+0",
    "S1": "-0x1.5555555555549p-3",
    "S2": "0x1.111111110f8a6p-7",
    "S3": "-0x1.a01a019c161d5p-13",
    "S4": "0x1.71de357b1fe7dp-19",
    "S5": "-0x1.ae5e68a2b9cebp-26",
    "S6": "0x1.5d93a5acfd57cp-33",
    "C1": "0x1.555555555554cp-5",
    "C2": "-0x1.6c16c16c15177p-10",
    "C3": "0x1.a01a019cb1590p-16",
    "C4": "-0x1.27e4f809c52adp-22",
    "C5": "0x1.1ee9ebdb4b1c4p-29",
    "C6": "-0x1.8fae9be8838d4p-37",
}
_K = {name: np.float64(float.fromhex(text)) for name, text in CONSTANTS.items()}
_F64 = np.float64


def philox4x32(c0, c1, c2, c3, k0, k1, rounds: int = 10):
    """The Philox4x32 bijection of the counter ``(c0, c1, c2, c3)`` under the key ``(k0, k1)``
    (``u32`` values or arrays; the result is four ``uint32`` arrays)."""
    c0, c1, c2, c3, k0, k1 = (np.asarray(v, dtype=np.uint64) for v in (c0, c1, c2, c3, k0, k1))
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        p0, p1 = _M0 * c0, _M1 * c2  # products of two u32s: exact in u64
        c0, c1, c2, c3 = (p1 >> _32) ^ c1 ^ k0, p1 & _MASK, (p0 >> _32) ^ c3 ^ k1, p0 & _MASK
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def block(key, subsequence, counter):
    """The block of a generator at ``counter``: Philox4x32-10 of the counter
    ``(counter, subsequence)`` (low words first) under the key ``key``."""
    key, sub, ctr = (np.asarray(v, dtype=np.uint64) for v in (key, subsequence, counter))
    return philox4x32(ctr & _MASK, ctr >> _32, sub & _MASK, sub >> _32, key & _MASK, key >> _32)


def _u64(lo, hi):
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << _32)


def _scalar(a):
    return a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a


def _next(counter):
    return _scalar(np.asarray(counter, dtype=np.uint64) + _ONE)


def random_u32(key, subsequence, counter):
    """The block's first word."""
    x0, _, _, _ = block(key, subsequence, counter)
    return _scalar(x0), _next(counter)


def uniform_f32(key, subsequence, counter):
    """``(x0 >> 8) * 2**-24``: one of the 2**24 floats ``k / 2**24`` in [0, 1), each as likely."""
    x0, _, _, _ = block(key, subsequence, counter)
    return _scalar((x0 >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)), \
        _next(counter)


def uniform_f64(key, subsequence, counter):
    """``((x0 + 2**32 * x1) >> 11) * 2**-53``: one of the 2**53 doubles ``k / 2**53`` in [0, 1)."""
    x0, x1, _, _ = block(key, subsequence, counter)
    return _scalar((_u64(x0, x1) >> _U64(11)).astype(np.float64) * _F64(2.0 ** -53)), \
        _next(counter)


def log_unit(u):
    """The natural logarithm of ``u`` in (0, 1], as fdlibm's ``log`` computes it (within an ulp
    or so), in round-to-nearest double operations only."""
    u = np.asarray(u, dtype=np.float64)
    m, e = np.frexp(u)  # u = m * 2**e exactly, m in [0.5, 1)
    low = m < _K["SQRT_HALF"]
    m = np.where(low, m * _F64(2.0), m)  # now in [sqrt(1/2), sqrt(2)): exact
    k = (e - low.astype(e.dtype)).astype(np.float64)
    f = m - _F64(1.0)  # exact (Sterbenz)
    s = f / (_F64(2.0) + f)
    z = s * s
    w = z * z
    t1 = w * (_K["LG2"] + w * (_K["LG4"] + w * _K["LG6"]))
    t2 = z * (_K["LG1"] + w * (_K["LG3"] + w * (_K["LG5"] + w * _K["LG7"])))
    r = t2 + t1
    hfsq = _F64(0.5) * f * f
    return k * _K["LN2_HI"] - ((hfsq - (s * (hfsq + r) + k * _K["LN2_LO"])) - f)


def _sin_kernel(x):
    z = x * x
    v = z * x
    r = _K["S2"] + z * (_K["S3"] + z * (_K["S4"] + z * (_K["S5"] + z * _K["S6"])))
    return x + v * (_K["S1"] + z * r)


def _cos_kernel(x):
    z = x * x
    w = z * z
    r = z * (_K["C1"] + z * (_K["C2"] + z * _K["C3"])) + w * w * (
        _K["C4"] + z * (_K["C5"] + z * _K["C6"]))
    hz = _F64(0.5) * z
    w = _F64(1.0) - hz
    return w + (((_F64(1.0) - w) - hz) + z * r)


def cos2pi(t):
    """``cos(2 * pi * t)`` for ``t`` in [0, 1): the quarter turn and the octant are taken exactly
    from ``t``, what remains is an angle in [0, pi/4] for fdlibm's sine or cosine polynomial."""
    t4 = np.asarray(t, dtype=np.float64) * _F64(4.0)  # exact
    q = np.floor(t4)
    r = t4 - q  # exact: the fraction of a quarter turn
    flip = r > _F64(0.5)
    y = np.where(flip, _F64(1.0) - r, r) * _K["PI_2"]
    odd = (q == _F64(1.0)) | (q == _F64(3.0))
    v = np.where(odd != flip, _sin_kernel(y), _cos_kernel(y))
    return np.where((q == _F64(1.0)) | (q == _F64(2.0)), -v, v)


def normal_f64(key, subsequence, counter):
    """Box-Muller: ``sqrt(-2 log u1) * cos(2 pi u2)`` with ``u1`` in (0, 1] from ``x0, x1`` and
    ``u2`` in [0, 1) from ``x2, x3`` (53 bits each)."""
    x0, x1, x2, x3 = block(key, subsequence, counter)
    u1 = ((_u64(x0, x1) >> _U64(11)) + _ONE).astype(np.float64) * _F64(2.0 ** -53)
    u2 = (_u64(x2, x3) >> _U64(11)).astype(np.float64) * _F64(2.0 ** -53)
    r = np.sqrt(_F64(-2.0) * log_unit(u1))
    return _scalar(r * cos2pi(u2)), _next(counter)


def normal_f32(key, subsequence, counter):
    """The ``f64`` normal of the same block, rounded to ``f32``."""
    z, counter = normal_f64(key, subsequence, counter)
    return _scalar(np.asarray(z).astype(np.float32)), counter


def uniform4(key, subsequence, counter):
    """``uniform_f32``'s conversion of each of the block's four words: ``(x >> 8) * 2**-24``,
    a tuple of four ``float32`` values (a ``vec4f``)."""
    words = block(key, subsequence, counter)
    return tuple(_scalar((x >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24))
                 for x in words), _next(counter)


def sin2pi(t):
    """``sin(2 * pi * t)`` for ``t`` in [0, 1) a multiple of 2**-52 or coarser: ``cos2pi`` of
    ``t - 1/4`` taken modulo 1, which is exact."""
    t = np.asarray(t, dtype=np.float64)
    return cos2pi(np.where(t >= _F64(0.25), t - _F64(0.25), t + _F64(0.75)))


def _box_muller32(a, b):
    """The two normals of the words ``a, b``: ``r cos(2 pi u2)`` and ``r sin(2 pi u2)`` with
    ``r = sqrt(-2 log u1)``, ``u1 = (a + 1) / 2**32`` in (0, 1] and ``u2 = b / 2**32`` in [0, 1),
    in ``f64`` and rounded to ``f32``."""
    u1 = (a.astype(np.uint64) + _ONE).astype(np.float64) * _F64(2.0 ** -32)
    u2 = b.astype(np.float64) * _F64(2.0 ** -32)
    r = np.sqrt(_F64(-2.0) * log_unit(u1))
    return ((r * cos2pi(u2)).astype(np.float32), (r * sin2pi(u2)).astype(np.float32))


def normal4(key, subsequence, counter):
    """Four standard normals from one block, as cuRAND's ``curand_normal4`` pairs its words:
    Box-Muller on ``x0, x1`` and on ``x2, x3`` (32 bits each, see :func:`_box_muller32`), a
    tuple of four ``float32`` values (a ``vec4f``)."""
    x0, x1, x2, x3 = block(key, subsequence, counter)
    return tuple(_scalar(z) for z in (*_box_muller32(x0, x1), *_box_muller32(x2, x3))), \
        _next(counter)


def randint_ok(n):
    """Whether ``randint`` takes the bound ``n`` (1 <= n <= 2**32 - 1)."""
    a = np.asarray(n)
    a = a.astype(np.int64) if a.dtype.kind in "ib" else a.astype(np.uint64)
    return _scalar((a >= 1) & (a <= RANDINT_MAX))


def randint(key, subsequence, counter, n):
    """A ``u64`` in [0, n) without bias, by Lemire's multiply-and-shift with rejection: a word
    ``x`` gives ``(x * n) >> 32`` unless ``(x * n) mod 2**32 < 2**32 mod n``; the block's words
    are tried in order, then the next block's.  ``n`` must pass :func:`randint_ok` (other lanes
    get a bound of 1: they are not executing)."""
    ok = np.asarray(randint_ok(n))
    bound = np.where(ok, np.asarray(n).astype(np.uint64), _ONE)
    threshold = ((_U64(1) << _32) - bound) % bound
    key, sub, ctr = np.broadcast_arrays(*(np.asarray(v, dtype=np.uint64) for v in (
        key, subsequence, counter)), bound)[:3]
    ctr = ctr.copy()
    result = np.zeros(ctr.shape, dtype=np.uint64)
    done = np.zeros(ctr.shape, dtype=bool)
    while not done.all():
        words = block(key, sub, ctr)
        ctr = np.where(done, ctr, ctr + _ONE)
        for x in words:
            m = x.astype(np.uint64) * bound
            take = ~done & ((m & _MASK) >= threshold)
            result = np.where(take, m >> _32, result)
            done |= take
    return _scalar(result), _scalar(ctr)
