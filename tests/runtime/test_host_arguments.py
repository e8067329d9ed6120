"""What the host side accepts, on every backend: float scalars out of their type's range, and
writes and reshapes of device arrays that cannot be honoured."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import gpu_native as gn

SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, bf16, f16, f32, f64, i32

@gpu_kernel(Kernel1D)
def put_i32(out: CUDASliceMut[i32], value: i32):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = value

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


@pytest.mark.untrusted
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
            # An integer of hundreds of digits is shown by its first ones (as fill() shows it).
            text = str(value) if len(str(value)) <= 40 else "-" * (value < 0) + \
                f"{str(abs(value))[:20 - (value < 0)]}... ({len(str(abs(value)))} digits)"
            expected = (f"argument 'value' of put_{dtype} is {text}, out of range for {dtype} "
                        f"(finite values {RANGE_TEXT[dtype]}, or inf or nan)")
            with pytest.raises(ValueError, match=re.escape(expected)):
                launcher(out, value)
        assert (out.to_host() == 0).all()

    def test_an_integer_of_hundreds_of_digits_is_shown_by_its_first(self, k, backend):
        out = gn.zeros(4, gn.i32)
        launcher = k.put_i32.launch(gn.GridDim1D(1), gn.BlockDim1D(32))
        for value, text in ((10**400, "10000000000000000000... (401 digits)"),
                            (2**40, str(2**40))):
            with pytest.raises(ValueError, match=re.escape(
                    f"argument 'value' of put_i32 is {text}, out of range for i32 "
                    f"({-2**31}..{2**31 - 1})")):
                launcher(out, value)
        assert (out.to_host() == 0).all()

    @pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max,
                        reason="np.longdouble is f64 on this platform")
    def test_a_finite_longdouble_beyond_f64_is_refused_and_its_inf_and_nan_pass(self, k,
                                                                                 backend):
        # float() turns such a value into inf without a word, as np.float32 does not for f32.
        out = gn.zeros(4, gn.f64)
        launcher = k.put_f64.launch(gn.GridDim1D(1), gn.BlockDim1D(32))
        for value in (np.longdouble("1e4000"), np.longdouble("-1e4000")):
            expected = (f"argument 'value' of put_f64 is {value!s}, out of range for f64 "
                        f"(finite values {RANGE_TEXT['f64']}, or inf or nan)")
            with pytest.raises(ValueError, match=re.escape(expected)):
                launcher(out, value)
        assert (out.to_host() == 0).all()
        for text in ("inf", "-inf", "nan", "1e300"):
            launcher(out, np.longdouble(text))
            np.testing.assert_array_equal(out.to_host(), np.full(4, float(text)))

    @pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max,
                        reason="np.longdouble is f64 on this platform")
    def test_fill_and_to_device_name_a_longdouble_beyond_f64_by_its_value(self, backend):
        # NumPy's format() of the element (an f-string) and .item() showed it as inf.
        value = np.longdouble("-1e4000")
        with pytest.raises(ValueError, match=re.escape("the fill value is -1e+4000, out of "
                                                       "range for f64")):
            gn.zeros(4, gn.f64).fill(value)
        with pytest.raises(ValueError, match=re.escape("element [1] of the data given to "
                                                       "to_device() is -1e+4000, out of range "
                                                       "for f32")):
            gn.to_device(np.array([1, value], np.longdouble), dtype=gn.f32)

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
    @pytest.mark.untrusted
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

    @pytest.mark.untrusted
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

    def test_a_zero_or_non_integer_slice_step_says_which_slice(self, backend):
        a = gn.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
        with pytest.raises(ValueError, match=r"^slice ::0 of axis 0 has step 0; a step must be "
                                             r"nonzero \(a negative one reverses the axis\)$"):
            a[::0]
        with pytest.raises(ValueError, match=r"slice 1:3:0 of axis 1 has step 0"):
            a[:, 1:3:np.int64(0)]
        with pytest.raises(TypeError, match=r"slice 1.5: of axis 0: device arrays are sliced by "
                                            r"integers or None, not float"):
            a[1.5:]
        assert a[::-2, 1::2].to_host().tolist() == [[9, 11], [1, 3]]


I32_RANGE = "(-2147483648..2147483647)"
F32_RANGE = "(finite values -3.4028235e+38..3.4028235e+38, or inf or nan)"


class TestHostConversions:
    """Host data converted to an array's element type (``to_device(..., dtype=)``,
    ``copy_from_host``, ``fill``): a value the type cannot hold is refused, naming it."""

    @pytest.mark.parametrize("data, dtype, message", [
        (np.array([1, 2**60]), gn.i32, r"element \[1\] of the data given to to_device\(\) is "
                                       r"1152921504606846976, out of range for i32 "
                                       + re.escape(I32_RANGE)),
        (np.array([np.nan]), gn.i32, r"element \[0\] .* is nan, out of range for i32"),
        (np.array([[1.0], [-np.inf]]), gn.i64, r"element \[1, 0\] .* is -inf, out of range "
                                               r"for i64"),
        (np.array([-1, 5]), gn.u32, r"element \[0\] .* is -1, out of range for u32 "
                                    r"\(0\.\.4294967295\)"),
        (np.array([200.0]), gn.i8, r"is 200.0, out of range for i8 \(-128\.\.127\)"),
        (np.array([2**64 - 1], np.uint64), gn.i64, r"is 18446744073709551615, out of range "
                                                   r"for i64"),
        (np.array([1e40, 1.0]), gn.f32, r"element \[0\] .* is 1e\+40, out of range for f32 "
                                        + re.escape(F32_RANGE)),
        (np.array([70000]), gn.f16, r"is 70000, out of range for f16 \(finite values "
                                    r"-65504\.\.65504, or inf or nan\)"),
        (np.array([3.4e38]), gn.bf16, r"is 3.4e\+38, out of range for bf16"),
        (np.array([1e300 + 0j]), gn.complex64, r"out of range for f32"),
        (np.array([[1e40, 2.0]]), gn.vec2f, r"element \[0, 0\] .* is 1e\+40, out of range"),
        (np.array([1 + 2j]), gn.f32, r"is \(1\+2j\), which f32 cannot hold \(it has no "
                                     r"imaginary part\)"),
        ([1, 2**70], gn.i64, r"element \[1\] .* is 1180591620717411303424, out of range for "
                             r"i64"),
        ([1, 10**400], gn.f64, r"is 10000000000000000000\.\.\. \(401 digits\), out of range "
                               r"for f64"),
        (np.float64(np.nan), gn.u8, r"^the data given to to_device\(\) is nan, out of range "
                                    r"for u8"),
    ])
    def test_to_device_refuses_what_the_type_cannot_hold(self, backend, data, dtype, message):
        with pytest.raises(ValueError, match=message):
            gn.to_device(data, dtype=dtype)

    @pytest.mark.parametrize("data, dtype, error, message", [
        (["1", "2"], gn.i32, TypeError, r"the data given to to_device\(\) must be numbers to "
                                        r"convert to i32, not an array of <U1"),
        (np.array([1, None], dtype=object), gn.f32, TypeError,
         r"element \[1\] of the data given to to_device\(\) must be a number \(f32\), not "
         r"NoneType None"),
        ([[1], [1, 2]], gn.i32, ValueError, r"the data given to to_device\(\) is not an array "
                                            r"NumPy can make"),
        (np.zeros(3), "f32x", TypeError, r"f32x"),
    ])
    def test_to_device_refuses_what_is_not_numbers(self, backend, data, dtype, error, message):
        with pytest.raises(error, match=message):
            gn.to_device(data, dtype=dtype)

    @pytest.mark.parametrize("data, shown", [
        (2**64, "18446744073709551616"), ([1, 2**64], "18446744073709551616"),
        (-2**70, "-1180591620717411303424"), ([2**200], "of 201 bits")])
    def test_to_device_names_an_integer_beyond_every_type(self, backend, data, shown):
        # It was "dtype object has no gpu_native scalar type" (NumPy keeps such ints as objects).
        with pytest.raises(ValueError, match=rf"the data given to to_device\(\) holds the "
                                             rf"integer {shown}, beyond every integer type"):
            gn.to_device(data)
        assert gn.to_device([2**63]).dtype == np.uint64

    def test_values_that_fit_convert_exactly(self, backend):
        def round_trip(data, dtype):
            return gn.to_device(data, dtype=dtype).to_host()

        ints = np.array([-2**31, -1, 0, 2**31 - 1])
        assert round_trip(ints, gn.i32).tolist() == ints.tolist()
        assert round_trip(np.array([0, 255], np.int64), gn.u8).tolist() == [0, 255]
        # Fractions truncate toward zero, as astype does, as long as that fits.
        assert round_trip(np.array([-128.9, -0.5, 127.9]), gn.i8).tolist() == [-128, 0, 127]
        assert round_trip(np.array([-0.9, 255.5]), gn.u8).tolist() == [0, 255]
        floats = round_trip(np.array([np.inf, -np.inf, np.nan, 3.4028234e38, 0.1]), gn.f32)
        np.testing.assert_array_equal(floats, np.array([np.inf, -np.inf, np.nan, 3.4028234e38,
                                                        0.1], np.float32))
        assert round_trip(np.array([65504, -65504]), gn.f16).tolist() == [65504, -65504]
        assert round_trip([1, 2**63], gn.u64).tolist() == [1, 2**63]
        assert round_trip(np.array([1.5 + 0j]), gn.f32).tolist() == [1.5]
        assert round_trip(np.array([True, False]), gn.i8).tolist() == [1, 0]
        struct = np.zeros(2, [("x", "f8"), ("n", "i8")])
        struct["x"], struct["n"] = [1.5, 2.5], [3, -4]
        into = np.dtype([("a", "f4"), ("b", "i2")])
        back = gn.to_device(struct, dtype=into).to_host()
        assert back["a"].tolist() == [1.5, 2.5] and back["b"].tolist() == [3, -4]
        struct["n"][1] = 2**40
        with pytest.raises(ValueError, match=r"field 'b' of element \[1\] of the data given to "
                                             r"to_device\(\) is 1099511627776, out of range for "
                                             r"i16"):
            gn.to_device(struct, dtype=into)

    def test_copy_from_host_refuses_and_keeps_the_array(self, backend):
        a = gn.to_device(np.arange(3, dtype=np.int32))
        with pytest.raises(ValueError, match=r"element \[2\] of the data given to "
                                             r"copy_from_host\(\) is 1099511627776, out of "
                                             r"range for i32"):
            a.copy_from_host(np.array([7, 8, 2**40]))
        assert a.to_host().tolist() == [0, 1, 2]

    @pytest.mark.parametrize("dtype, value, error, message", [
        (gn.i32, float("nan"), ValueError, r"^the fill value is nan, out of range for i32 "
                                           + re.escape(I32_RANGE) + "$"),
        (gn.i32, 2**31, ValueError, r"the fill value is 2147483648, out of range for i32"),
        (gn.i8, 1000, ValueError, r"the fill value is 1000, out of range for i8 \(-128\.\.127\)"),
        (gn.f32, 1e40, ValueError, r"^the fill value is 1e\+40, out of range for f32 "
                                   + re.escape(F32_RANGE) + "$"),
        (gn.bf16, -1e39, ValueError, r"the fill value is -1e\+39, out of range for bf16"),
        (gn.f16, 1e5, ValueError, r"the fill value is 100000.0, out of range for f16"),
        (gn.i32, "x", TypeError, r"^the fill value must be a number \(i32\), not str 'x'$"),
        (gn.f32, None, TypeError, r"the fill value must be a number \(f32\), not NoneType"),
        (gn.vec2f, [1.0, 1e40], ValueError, r"element \[1\] of the fill value is 1e\+40"),
        (gn.vec2f, [1.0, 2.0, 3.0], ValueError, r"a fill value of shape \(3,\) does not "
                                                r"broadcast to the array's \(4, 2\)"),
    ])
    def test_fill_refuses_what_the_type_cannot_hold(self, backend, dtype, value, error,
                                                    message):
        a = gn.zeros(4, dtype)
        with pytest.raises(error, match=message):
            a.fill(value)
        assert not a.to_host().any()

    def test_fill_takes_values_that_fit(self, backend):
        a = gn.empty(3, gn.i8)
        a.fill(np.int64(-128))
        assert a.to_host().tolist() == [-128] * 3
        b = gn.empty(3, gn.bf16)
        b.fill(np.uint16(3))  # a value, never bits
        assert np.asarray(b.to_host(), np.float32).tolist() == [3.0] * 3
        c = gn.empty(2, gn.f32)
        c.fill(np.inf)
        assert c.to_host().tolist() == [np.inf] * 2
        d = gn.empty(2, gn.vec3f)
        d.fill([1, 2, 3])
        assert d.to_host().tolist() == [[1, 2, 3]] * 2


class TestAllocation:
    @pytest.mark.parametrize("shape, message", [
        (2.5, r"^shape must be an int or a tuple of ints, not float 2\.5$"),
        ((2.0, 3), r"^shape \(2\.0, 3\) must hold ints, not float 2\.0$"),
        ((4, np.float32(2)), r"must hold ints, not float32"),
        (True, r"not bool True"),
        ("12", r"not str '12'"),
        (None, r"not NoneType None"),
    ])
    def test_a_shape_that_is_not_ints_is_a_type_error(self, backend, shape, message):
        for make in (gn.empty, gn.zeros):
            with pytest.raises(TypeError, match=message):
                make(shape, gn.f32)

    def test_a_scalar_becomes_an_array_of_one_element(self, backend):
        # Device arrays have 1 to 3 dimensions; to_device's docstring says a 0-d one is (1,).
        for host in (np.array(3.0, np.float32), np.int32(7), 2.5):
            arr = gn.to_device(host)
            assert arr.shape == (1,) and arr.to_host().shape == (1,)
            assert arr.to_host()[0] == host
        with pytest.raises(ValueError, match="1 to 3 dimensions, not 0"):
            gn.empty((), gn.f32)

    def test_integer_shapes_of_any_kind(self, backend):
        assert gn.empty(np.uint8(4)).shape == (4,)
        assert gn.zeros([np.int64(2), 3], gn.i32).shape == (2, 3)
        assert gn.empty(np.array([3, 1])).shape == (3, 1)

    @pytest.mark.parametrize("shape", [2**62, (2**40, 2**40), (2**21, 2**21, 2**21)])
    def test_a_size_no_device_holds_is_a_value_error(self, backend, shape):
        with pytest.raises(ValueError, match=r"an array of shape \(.*\) of f32 takes [\d,]+ "
                                             r"bytes, more than the [\d,]+ bytes of memory "
                                             r"device 0 has"):
            gn.empty(shape, gn.f32)
        with pytest.raises(ValueError, match=r"more than the"):
            gn.to_device(np.broadcast_to(np.float32(0), (2**21, 2**21, 2**10)))

    @pytest.mark.parametrize("shape, axis", [((0, 2**62), 1), ((0, 2**63), 1), ((0, 2**64), 1),
                                             ((2**62, 0), 0), ((0, 2**31, 2**31), 2)])
    def test_an_empty_array_whose_other_axes_overflow_64_bits_is_a_value_error(self, backend,
                                                                               shape, axis):
        # It holds nothing, but its strides, and NumPy's array of its shape, would not fit.
        message = (rf"^an array of shape {re.escape(str(shape))} of f32 cannot be made: axis "
                   rf"{axis}'s extent {shape[axis]} is too large \(its nonempty axes span "
                   r"[\d,]+ bytes, more than the 2\*\*63 - 1")
        for make in (gn.empty, gn.zeros):
            with pytest.raises(ValueError, match=message):
                make(shape, gn.f32)
        widest = gn.empty((0, 2**61 - 1), gn.f32)
        assert widest.view(gn.u8).shape == (0, 2**63 - 4)
        assert widest.to_host().shape == (0, 2**61 - 1)

    def test_the_simulator_runs_out_of_memory_as_a_gpu_does(self):
        from gpu_native.runtime.sim_backend import SimMemory

        with pytest.raises(gn.CudaError, match=r"CUDA_ERROR_OUT_OF_MEMORY \(2\): allocating "
                                               r"\d+ bytes: out of memory") as caught:
            SimMemory().alloc(2**63)
        assert caught.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
