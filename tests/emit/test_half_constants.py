"""f16 and bf16 constants are emitted as bit patterns, rounded once from the double on the host
(as ``f16(x)`` and ``bf16(x)`` round there), so that the device sees an immediate.

``__double2half(<literal>)`` (what they were) is an inline-asm ``cvt.rn.f16.f64`` that NVVM and
ptxas do not fold: every thread converted every constant again, 32 extra instructions in the
32-step Horner loop of examples/gallery/horner_half2.py against its hand-written CUDA.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_native import ir
from gpu_native.emit.spelling import const_code
from gpu_native.lang.halfprec import bf16_bits_to_f32, f64_to_bf16_bits

F16, BF16 = ir.F16, ir.BF16


def f16_bits(code: str) -> int:
    assert code.startswith("__ushort_as_half((unsigned short)0x") and code.endswith("u)"), code
    return int(code[len("__ushort_as_half((unsigned short)"):-2], 16)


def bf16_bits(code: str) -> int:
    assert code.startswith("__ushort_as_bfloat16((unsigned short)0x") and code.endswith("u)"), \
        code
    return int(code[len("__ushort_as_bfloat16((unsigned short)"):-2], 16)


@pytest.mark.parametrize("value, expected", [
    (1.0, 0x3C00), (-0.0, 0x8000), (0.0, 0x0000), (65504.0, 0x7BFF),
    (1e6, 0x7C00), (-1e6, 0xFC00), (math.inf, 0x7C00), (2.0 ** -24, 0x0001),
    # Above the tie between 1.0 and 1.0009765625: one rounding gives the upper value, a
    # rounding to f32 first would land on the tie and give 1.0.
    (1.0004882821813226, 0x3C01),
])
def test_f16_constants_are_the_bits_of_one_rounding(value, expected):
    assert f16_bits(const_code(value, F16)) == expected


def test_f16_nan_is_a_quiet_nan():
    bits = f16_bits(const_code(math.nan, F16))
    assert np.isnan(np.uint16(bits).view(np.float16))


@pytest.mark.parametrize("value", [1.0, -2.5, 3.0e38, 1e39, 1.0039062500000002, 1.0039062499999998,
                                   -1.0039062500000002, 1e-40])
def test_bf16_constants_are_the_bits_of_one_rounding(value):
    bits = bf16_bits(const_code(value, BF16))
    assert bits == int(f64_to_bf16_bits(value))
    # The nearest bf16 to the exact value (ties to even): no value of bf16 is closer.
    got = float(bf16_bits_to_f32(bits))
    if math.isfinite(got):
        neighbours = [float(bf16_bits_to_f32(b)) for b in ((bits - 1) & 0xFFFF, bits + 1)]
        assert all(abs(got - value) <= abs(n - value) for n in neighbours if math.isfinite(n))


def test_bf16_just_above_a_tie_rounds_up_once():
    # 1.00390625 is the tie between 1.0 (0x3F80) and 1.0078125 (0x3F81).
    assert bf16_bits(const_code(1.0039062500000002, BF16)) == 0x3F81
    assert bf16_bits(const_code(1.0039062499999998, BF16)) == 0x3F80
