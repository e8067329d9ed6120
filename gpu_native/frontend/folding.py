"""The library values a module-level constant may be computed from, folded without running the
module: ``X = math.pi / 2``, ``N = int(math.log2(16))``, ``EPS = np.float32(1e-3)``.

Numba freezes a module's globals when it compiles; the import hook rewrites a module before it
runs, so the transpiler computes such a constant itself, from numbers, arithmetic and the few
pure functions below, which take and give numbers alone (nothing here runs user code or grows
without bound: integers are limited as :func:`gpu_native.frontend.parse` limits its own).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

from ..lang import registry

# (module, name) -> value: constants read as attributes or imported by name.
CONSTANTS: dict[tuple[str, str], float] = {
    ("math", "pi"): math.pi, ("math", "e"): math.e, ("math", "tau"): math.tau,
    ("math", "inf"): math.inf, ("math", "nan"): math.nan,
    ("numpy", "pi"): math.pi, ("numpy", "e"): math.e, ("numpy", "inf"): math.inf,
    ("numpy", "nan"): math.nan,
}

# Python's math functions that kernels have (the registry's), and a few more for constants alone;
# each takes and gives numbers.
_MATH = frozenset(name for name, e in registry.MATH.items()
                  if e.form == "call" and hasattr(math, name)) | {
    "radians", "degrees", "isqrt", "gcd"}
_BUILTINS = ("int", "float", "bool", "abs", "min", "max", "round")
# NumPy's scalar types: the value rounded as that type, then the Python number it holds.
_NUMPY = ("float16", "float32", "float64", "single", "double", "half", "int8", "int16",
          "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_", "intc", "intp")

_LIMIT_BITS = 128  # as parse's folding of integers: kernel constants fit 64 bits


def function(module: str, name: str) -> Callable[..., object] | None:
    """The pure function ``module.name`` a constant may call, or ``None``."""
    if module == "math" and name in _MATH:
        fn: Callable[..., Any] = getattr(math, name)
        return fn
    if module == "builtins" and name in _BUILTINS:
        return getattr(builtins, name)
    if module == "numpy" and name in _NUMPY:
        return lambda *args: _numpy_scalar(name, *args)
    return None


class CallFailed(Exception):
    """A foldable call raised (``math.log(0.0)``, ``int(math.inf)``): the message is Python's
    error, as ``ValueError: math domain error``, for the refusal of the constant to quote."""


def call(fn: Callable[..., object], args: list[object]) -> object | None:
    """``fn(*args)`` where every argument and the result are numbers of a kernel constant's
    size; ``None`` where they are not.  Raises :class:`CallFailed` where the call fails."""
    if not args or not all(_number(a) for a in args):
        return None
    try:
        result = fn(*args)
    except (ArithmeticError, TypeError, ValueError) as e:
        raise CallFailed(f"{type(e).__name__}: {e}") from None
    return result if _number(result) else None


def _number(v: object) -> bool:
    if type(v) is int:
        return v.bit_length() <= _LIMIT_BITS
    return type(v) in (float, bool)


def _numpy_scalar(name: str, *args: object) -> object:
    import warnings

    import numpy

    if len(args) != 1:
        raise TypeError(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # np.int8(300) or np.float16(1e6): not this constant
        try:
            value = getattr(numpy, name)(args[0])
        except (OverflowError, RuntimeWarning, DeprecationWarning):
            raise OverflowError(f"{args[0]!r} overflows {name}") from None
    return value.item()
