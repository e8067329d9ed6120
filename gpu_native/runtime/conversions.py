"""Host data converted to a device array's element type, checked.

NumPy's conversion (``astype``, ``np.asarray(x, dtype=...)``, ``np.full``) wraps an integer out of
the target's range (``2**60`` to ``i32`` is 0), turns NaN into ``INT_MIN`` and a finite float too
large for ``f32`` into infinity, all without a word.  Here each is a ``ValueError`` naming the
value, where it is and the type's range, as a launch argument's is (see :mod:`.context`): an integer
type takes the values whose integer part it holds (fractions truncate toward zero, as ``astype``
does; NaN and infinity are refused), a float type any finite value that does not round to
infinity (inf and nan pass as they are).  A complex value with an imaginary part is refused for a
real type, and data that is not numbers is a ``TypeError``.

The checks are vectorised (a minimum and a maximum, or one test of the converted array for
infinities) and run only when a conversion happens: data already of the element type is taken
as it is.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import abi
from ..lang.halfprec import f32_to_bf16_bits, f64_to_bf16_bits

__all__ = ["convert", "host_array", "host_data", "shown"]

_NAMES = {"bool": "bool_", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
          "float32": "f32", "float64": "f64", "complex64": "complex64",
          "complex128": "complex128"}
_FLOAT_NAMES = {"f16": "f16", "f32": "f32", "f64": "f64", "complex64": "f32",
                "complex128": "f64", "bf16": "bf16"}


def host_array(obj, what: str) -> np.ndarray:
    """``obj`` as a NumPy array (no conversion), or a ``ValueError`` naming ``what`` where NumPy
    cannot make one (a ragged nested list)."""
    if isinstance(obj, np.ndarray):
        return obj
    try:
        return np.asarray(obj)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"the {what} is not an array NumPy can make: {exc}") from None


def host_data(obj, info, what: str) -> np.ndarray:
    """``obj`` as a C-contiguous NumPy array of ``info``'s element type (a scalar, complex or
    struct info; ``bf16``: its 16-bit patterns), converted with the checks above.

    ``what`` names the data in messages (``"data given to to_device()"`` reads ``element [3] of
    the data given to to_device() is ...``)."""
    src = host_array(obj, what)
    if info.name == "bf16":
        if src.dtype == np.uint16:  # the bits as they are
            return np.ascontiguousarray(src)
        if src.dtype.name == "bfloat16":  # ml_dtypes' bfloat16: the bits as they are
            return np.ascontiguousarray(src).view(np.uint16)
        wide = convert(src, np.dtype(np.float32), what, "bf16")
        if src.dtype == np.float64:  # one rounding of the exact value, not two
            bits = np.asarray(f64_to_bf16_bits(src)).reshape(wide.shape)
        else:
            bits = np.asarray(f32_to_bf16_bits(wide)).reshape(wide.shape)
        # A finite f32 just below f32's top can still round up to bf16's infinity.
        rounded_up = ((bits & 0x7FFF) == 0x7F80) & np.isfinite(wide)
        if rounded_up.any():
            raise _float_range(src, rounded_up, what, "bf16", "")
        return np.ascontiguousarray(bits)
    return np.ascontiguousarray(convert(src, info.dtype, what, info.name))


def convert(src: np.ndarray, dtype: np.dtype, what: str, name: str | None = None,
            field: str = "") -> np.ndarray:
    """``src`` as an array of ``dtype`` (itself when it is one already), refusing a value the
    conversion would change beyond rounding; ``name`` is the type's name in messages, ``field``
    the struct field being converted (``"mass"``, ``"inner.x"``)."""
    if src.dtype == dtype:
        return src
    name = name or _NAMES.get(dtype.name, str(dtype))
    if dtype.names is not None or src.dtype.names is not None:
        return _convert_struct(src, dtype, what, field)
    skind, tkind = src.dtype.kind, dtype.kind
    if skind == "O":
        return _convert_objects(src, dtype, what, name, field)
    if skind not in "biufc" or tkind not in "biufc":
        if src.ndim == 0:
            value = src.item()
            raise TypeError(f"{_where(what, src, (), field)} must be a number ({name}), not "
                            f"{type(value).__name__} {value!r:.60}")
        raise TypeError(f"{_where(what, None, (), field)} must be numbers to convert to {name}, "
                        f"not an array of {src.dtype}")
    if skind == "c" and tkind != "c":
        imaginary = src.imag != 0
        if imaginary.any():
            index = _first(imaginary)
            raise ValueError(f"{_where(what, src, index, field)} is {src[index].item()}, which "
                             f"{name} cannot hold (it has no imaginary part); convert the real "
                             "parts (.real) if that is meant")
        src = src.real
        skind = src.dtype.kind
    if tkind in "iu" and skind in "iuf":
        _check_integer_range(src, dtype, what, name, field)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # Overflow to infinity is found below; NumPy's own warning would only repeat it.
        warnings.simplefilter("ignore")
        out = np.asarray(src, dtype=dtype)
    if tkind in "fc" and skind in "iufc" and _largest(src.dtype) > _largest(dtype) and (
            not _all_finite(out)):
        infinite = np.isinf(out)
        if infinite.any():
            overflowed = infinite & ~np.isinf(src) if skind in "fc" else infinite
            if overflowed.any():
                raise _float_range(src, overflowed, what, _FLOAT_NAMES.get(name, name), field)
    return out


def _all_finite(out: np.ndarray) -> bool:
    """Whether ``out`` is sure to hold no infinity: its minimum and maximum (two reductions,
    no temporary array) are finite.  A NaN among the values makes the answer no."""
    if out.size == 0:
        return True
    if out.dtype.kind == "c":
        out = np.ravel(out).view(out.real.dtype)  # the parts, side by side
    return bool(np.isfinite(out.min()) and np.isfinite(out.max()))


def _largest(dtype: np.dtype) -> float:
    if dtype.kind in "fc":
        return float(np.finfo(dtype).max)
    if dtype.kind in "iu":
        return float(np.iinfo(dtype).max)
    return 1.0


def _check_integer_range(src: np.ndarray, dtype: np.dtype, what: str, name: str,
                         field: str) -> None:
    limits = np.iinfo(dtype)
    lo, hi = int(limits.min), int(limits.max)
    if src.size == 0:
        return
    if src.dtype.kind in "iu":
        have = np.iinfo(src.dtype)
        if lo <= int(have.min) and int(have.max) <= hi:
            return  # every value of the source type fits
        if lo <= int(src.min()) and int(src.max()) <= hi:
            return
    else:
        # min and max carry NaN through; a float compares exactly with a Python int.
        low, high = float(src.min()), float(src.max())
        if math.isfinite(low) and math.isfinite(high) and lo <= int(low) and int(high) <= hi:
            return
    # The smallest or the largest value is one out of range (argmin and argmax find a NaN).
    index = np.unravel_index(int(np.argmin(src)), src.shape)
    value = src[index].item()
    if math.isfinite(value) and lo <= int(value):
        index = np.unravel_index(int(np.argmax(src)), src.shape)
        value = src[index].item()
    raise ValueError(f"{_where(what, src, index, field)} is {shown(value)}, out of range for "
                     f"{name} ({lo}..{hi})")


def _float_range(src: np.ndarray, bad: np.ndarray, what: str, name: str,
                 field: str) -> ValueError:
    index = _first(bad)
    top = abi.FLOAT_MAX[name]
    # str() of the element itself: .item() and format() turn a longdouble past f64 into inf.
    return ValueError(f"{_where(what, src, index, field)} is {src[index]!s}, out of range "
                      f"for {name} (finite values {-top:.8g}..{top:.8g}, or inf or nan)")


def _convert_objects(src: np.ndarray, dtype: np.dtype, what: str, name: str,
                     field: str) -> np.ndarray:
    """An object array (Python ints beyond 64 bits, mixed scalars), element by element (NumPy
    is slow on such arrays already): each checked as a 0-d array of its own."""
    out = np.empty(src.shape, dtype)
    for index, value in np.ndenumerate(src):
        where = _where(what, src, index, field)
        if isinstance(value, (str, bytes)) or not isinstance(
                value, (bool, int, float, complex, np.generic)):
            raise TypeError(f"{where} must be a number ({name}), not "
                            f"{type(value).__name__} {value!r:.60}")
        if isinstance(value, int) and not isinstance(value, bool) and not (
                -(1 << 63) <= value < (1 << 64)):  # beyond every NumPy integer
            if dtype.kind in "iu":
                limits = np.iinfo(dtype)
                raise ValueError(f"{where} is {shown(value)}, out of range for {name} "
                                 f"({limits.min}..{limits.max})")
            try:
                value = float(value)
            except OverflowError:
                top = abi.FLOAT_MAX.get(_FLOAT_NAMES.get(name, name), math.inf)
                raise ValueError(f"{where} is {shown(value)}, out of range for {name} "
                                 f"(finite values {-top:.8g}..{top:.8g}, or inf or "
                                 "nan)") from None
        one = np.asarray(value)
        try:
            out[index] = convert(one, dtype, what, name, field)
        except ValueError as exc:
            # Name the element in the whole array, not its 0-d copy.
            raise ValueError(str(exc).replace(_where(what, one, (), field), where, 1)) from None
    return out


def _convert_struct(src: np.ndarray, dtype: np.dtype, what: str, field: str) -> np.ndarray:
    """A structured array converted field by field: by name where both have the same names
    (in another order, ``('y', 'x')`` to ``('x', 'y')``: position would swap the values), else
    by position (as NumPy assigns them)."""
    if dtype.names is None or src.dtype.names is None or len(dtype.names) != len(src.dtype.names):
        raise TypeError(f"{_where(what, None, (), field)} is {_described(src.dtype)}, which does "
                        f"not convert to {_described(dtype)}: structs convert to structs of as "
                        "many fields, field by field")
    out = np.zeros(src.shape, dtype)
    fields = dtype.fields
    assert fields is not None
    by_name = sorted(src.dtype.names) == sorted(dtype.names)
    for source_field, name in zip(dtype.names if by_name else src.dtype.names, dtype.names):
        path = f"{field}.{name}" if field else name
        values = convert(src[source_field], fields[name][0].base, what, None, path)
        try:
            out[name] = values
        except ValueError as exc:
            raise ValueError(f"{_where(what, None, (), path)} does not fit the struct's field: "
                             f"{exc}") from None
    return out


def shown(value) -> str:
    """A value as a message shows it: an integer of hundreds of digits by its first ones."""
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text.lstrip('-'))} digits)"


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(mask)[0]), mask.shape))


def _where(what: str, src: np.ndarray | None, index, field: str) -> str:
    """``field 'f' of element [i, j] of the {what}``: ``src`` None or 0-d names no element."""
    place = f"the {what}"
    if src is not None and src.ndim:
        place = f"element [{', '.join(str(int(i)) for i in index)}] of {place}"
    return f"field '{field}' of {place}" if field else place


def _described(dtype: np.dtype) -> str:
    return f"structs of {len(dtype.names)} fields" if dtype.names is not None else (
        f"an array of {dtype}")
