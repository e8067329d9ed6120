"""What the host side accepts, on every backend: float scalars out of their type's range, and
writes and reshapes of device arrays that cannot be honoured."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import gpu_native as gn

SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, bf16, f16, f32, f64

@gpu_kernel(Kernel1D)
def put_f32(out: CUDASliceMut[f32], value: f32):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = value

@gpu_kernel(Kernel1D)
def put_f16(out: CUDASliceMut[f32], value: f16):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = f32(value)

@gpu_kernel(Kernel1D)
def put_bf16(out: CUDASliceMut[f32], value: bf16):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = f32(value)

@gpu_kernel(Kernel1D)
def put_f64(out: CUDASliceMut[f64], value: f64):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = value
"""

# The largest finite values, and values that round to them (the type's maximum plus less than
# half a unit in the last place), then the first values that round to infinity.
F32_MAX = float(np.finfo(np.float32).max)
BF16_MAX = 2.0**128 - 2.0**120
IN_RANGE = {"f32": [F32_MAX, -F32_MAX, 2.0**128 - 2.0**103 - 2.0**75, 1e-45],
            "f16": [65504.0, 65519.99, -65519.0], "bf16": [BF16_MAX, 3.38e38, -3.3e38]}
OUT_OF_RANGE = {"f32": [1e40, -1e40, 2.0**128 - 2.0**103, 10**39],
                "f16": [65520.0, -65520.0, 1e5, 70000],
                "bf16": [2.0**128 - 2.0**119, 1e39, -1e40, 10**40],
                "f64": [10**400, -(10**400)]}
RANGE_TEXT = {"f32": "-3.4028235e+38..3.4028235e+38", "f16": "-65504..65504",
              "bf16": "-3.3895314e+38..3.3895314e+38", "f64": "-1.7976931e+308..1.7976931e+308"}


@pytest.fixture
def k(kernel_module):
    return kernel_module(SOURCE)


def _round(dtype: str, value: float) -> float:
    if dtype == "bf16":
        from gpu_native.lang.halfprec import round_bf16

        return round_bf16(value)
    return float({"f32": np.float32, "f16": np.float16, "f64": np.float64}[dtype](value))


class TestFloatScalarRange:
    @pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
    def test_out_of_range_is_a_value_error_naming_the_parameter(self, k, backend, dtype):
        out = gn.zeros(4, gn.f64 if dtype == "f64" else gn.f32)
        launcher = getattr(k, f"put_{dtype}").launch(gn.GridDim1D(1), gn.BlockDim1D(32))
        values = list(OUT_OF_RANGE[dtype])
        # A NumPy float takes the checked path whatever its value (a Python float in range
        # takes the fast one).
        values += [np.float64(v) for v in values if isinstance(v, float)]
        for value in values:
            expected = (f"argument 'value' of put_{dtype} is {value}, out of range for {dtype} "
                        f"(finite values {RANGE_TEXT[dtype]}, or inf or nan)")
            with pytest.raises(ValueError, match=re.escape(expected)):
                launcher(out, value)
        assert (out.to_host() == 0).all()

    @pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
    def test_values_that_round_into_range_inf_and_nan_pass(self, k, backend, dtype,
                                                            launch_paths):
        out = gn.empty(4, gn.f32)
        launcher = getattr(k, f"put_{dtype}").launch(gn.GridDim1D(1), gn.BlockDim1D(32))
        for value in [*IN_RANGE[dtype], math.inf, -math.inf, math.nan, 1.5]:
            out.fill(0)
            launcher(out, value)
            got = out.to_host()
            want = _round(dtype, value)
            assert math.isfinite(got[0]) == math.isfinite(want)
            np.testing.assert_array_equal(got, np.full(4, want, np.float32))
        # Ordinary floats take the fast path (bf16 is converted to its bits on the checked
        # one); inf and nan take the checked path.
        fast = 0 if dtype == "bf16" else len(IN_RANGE[dtype]) + 1
        assert launch_paths["fast"] == [True] * fast
        assert launch_paths["slow"] == len(IN_RANGE[dtype]) + 4 - fast


class TestDeviceArrayViews:
    def test_reshape_refuses_negative_dimensions(self, backend):
        a = gn.to_device(np.arange(6, dtype=np.float32))
        for shape in ((-2, -3), (3, -2), (-6,), (-1, -1), (-1, 4), (7, -1), (2.0, 3)):
            error = TypeError if 2.0 in shape else ValueError
            with pytest.raises(error, match=r"reshape"):
                a.reshape(*shape)
        for shape in ((0, -1), (3, 0, -1)):  # -1 beside a 0 could be anything (as in NumPy)
            with pytest.raises(ValueError, match="reshape"):
                gn.empty((0, 3)).reshape(*shape)
        assert a.reshape(-1, 3).shape == (2, 3)
        assert a.reshape((3, -1)).shape == (3, 2)
        assert a.reshape(np.int64(6)).shape == (6,)
        assert gn.empty((0, 3)).reshape(3, 0, 5).shape == (3, 0, 5)

    @pytest.mark.parametrize("write", ["copy_from_host", "fill"])
    def test_a_read_only_view_refuses_writes(self, backend, write):
        host = np.arange(8, dtype=np.float32)
        a = gn.to_device(host)
        view = a.readonly()
        with pytest.raises(TypeError, match="read-only view"):
            if write == "fill":
                view.fill(1.0)
            else:
                view.copy_from_host(np.zeros(8, np.float32))
        with pytest.raises(TypeError, match="read-only view"):
            getattr(view[2:4], write)(*([0.0] if write == "fill" else [np.zeros(2, np.float32)]))
        np.testing.assert_array_equal(a.to_host(), host)
        a.fill(3.0)  # the array itself stays writable
        np.testing.assert_array_equal(view.to_host(), np.full(8, 3.0, np.float32))
