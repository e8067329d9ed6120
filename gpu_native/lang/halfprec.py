"""Conversions for the 16-bit float types that NumPy lacks (bfloat16)."""

from __future__ import annotations

import numpy as np

__all__ = ["bf16_bits_to_f32", "f32_to_bf16_bits", "round_bf16"]


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


def round_bf16(x: float) -> float:
    """Round one Python float to the nearest bfloat16 value, returned as a Python float."""
    return float(bf16_bits_to_f32(f32_to_bf16_bits(np.float32(x))))
