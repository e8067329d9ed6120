"""Conversions for the 16-bit float types that NumPy lacks (bfloat16).

NumPy has no bfloat16 dtype; the ``ml_dtypes`` package (an optional dependency: ``pip install
ml_dtypes``, which JAX and TensorFlow install too) adds one.  :func:`bf16_dtype` returns it when
``ml_dtypes`` can be imported, and None otherwise: host arrays of bf16 values are then widened to
float32 (exact) instead.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bf16_bits_to_f32", "bf16_dtype", "f32_to_bf16_bits", "round_bf16"]

_BF16_DTYPE: list = []


def f32_to_bf16_bits(x: np.ndarray | np.floating | float) -> np.ndarray:
    """Round float32 values to bfloat16 (round to nearest even, NaN kept) and return the bits."""
    a = np.asarray(x, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    out = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if np.any(nan):
        out = np.where(nan, (bits >> 16).astype(np.uint16) | np.uint16(0x40), out)
    return out


def bf16_bits_to_f32(bits: np.ndarray | int) -> np.ndarray:
    """Widen bfloat16 bit patterns to float32 (exact)."""
    b = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return b.view(np.float32)


def f64_to_bf16_bits(x) -> np.ndarray:
    """Round float64 values straight to bfloat16 bit patterns (``__double2bfloat16``): one
    rounding of the exact value, not one to float32 and another to bfloat16."""
    d = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range is infinity, as on the device
        f = d.astype(np.float32)
    bits = f.view(np.uint32).copy()
    # Going through float32 first can land exactly on a bf16 tie that the exact value is not
    # on; nudging one float32 ulp toward the exact value makes the second rounding correct.
    tie = (((bits & np.uint32(0xFFFF)) == np.uint32(0x8000)) & (f.astype(np.float64) != d)
           & np.isfinite(f))
    if np.any(tie):
        away = np.abs(d) > np.abs(f.astype(np.float64))
        bits = np.where(tie, np.where(away, bits + np.uint32(1), bits - np.uint32(1)), bits)
        f = bits.astype(np.uint32).view(np.float32)
    return f32_to_bf16_bits(f)


def round_bf16(x: float) -> float:
    """Round one Python float to the nearest bfloat16 value (one rounding, as a kernel's
    ``bf16(x)`` of an f64 does), returned as a Python float."""
    return float(bf16_bits_to_f32(f64_to_bf16_bits(x)))


def bf16_dtype() -> np.dtype | None:
    """The NumPy dtype ``bfloat16`` of the ``ml_dtypes`` package, or None when it is not
    installed (looked up once; the import is deferred so ``import gpu_native`` never pays it)."""
    if not _BF16_DTYPE:
        try:
            import ml_dtypes  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            _BF16_DTYPE.append(None)
        else:
            _BF16_DTYPE.append(np.dtype(ml_dtypes.bfloat16))
    return _BF16_DTYPE[0]
