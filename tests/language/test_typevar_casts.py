"""``T(x)`` for a TypeVar ``T`` of a generic kernel or device function: in each specialisation it
is exactly the conversion of the type ``T`` stands for (``f32(x)``, ``f64(x)``, ``i32(x)``), with
the same truncation, saturation and errors.  The kernels are tests/helpers/kernels_typevar_casts.py
(also compiled with NVRTC by tests/compiler/test_nvrtc_all.py)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import located_transpile_error

DTYPES = [np.float32, np.float64, np.int32]


@pytest.fixture(scope="module")
def kc():
    from tests.helpers import kernels_typevar_casts

    return kernels_typevar_casts


def _launch(kernel, n, *args):
    kernel.launch(gn.GridDim1D((n + 127) // 128), gn.BlockDim1D(128), 0,
                  gn.DEFAULT_STREAM)(*args)


def _values(rng, dtype, n):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_axpy_with_a_converted_constant(backend, kc, rng, dtype):
    n = 300
    x, y = _values(rng, dtype, n), _values(rng, dtype, n)
    a = dtype(3)
    out = gn.to_device(np.zeros(n, dtype))
    _launch(kc.axpy, n, a, gn.to_device(x), gn.to_device(y), out)
    expect = a * (dtype(2) * x) + y
    if np.dtype(dtype).kind == "f":
        # (the GPU may fuse a * (2 * x) + y into one FMA: one rounding less)
        np.testing.assert_allclose(out.to_host(), expect, rtol=1e-6, atol=1e-5)
    else:
        np.testing.assert_array_equal(out.to_host(), expect)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_a_reduction_from_a_converted_zero(backend, kc, rng, dtype):
    rows, width = 200, 37
    x = _values(rng, dtype, rows * width)
    out = gn.to_device(np.full(rows, 99, dtype))
    _launch(kc.row_sums, rows, gn.to_device(x), np.int32(width), out)
    expect = (2 * x.reshape(rows, width).astype(np.float64)).sum(axis=1)
    got = out.to_host()
    assert got.dtype == dtype
    if np.dtype(dtype).kind == "f":
        tol = 1e-4 if dtype == np.float32 else 1e-12  # 37 terms of either sign, summed in T
        np.testing.assert_allclose(got, expect, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, expect.astype(dtype))


SOURCES = {
    np.float32: np.array([0.0, -0.0, 2.75, -2.75, 1e20, -1e20, np.inf, -np.inf, np.nan, 7.0,
                          2147483520.0, -2147483648.0], np.float32),
    np.float64: np.array([0.0, 2.5, -2.5, 1e300, -1e300, np.inf, np.nan, 2147483647.9,
                          -2147483648.9, 2147483648.0, 1e-300, 3.0]),
    np.int32: np.array([0, 1, -1, 2**31 - 1, -2**31, 16777217, 123456789, -7], np.int32),
}


@pytest.mark.parametrize("source", DTYPES, ids=lambda t: np.dtype(t).name)
def test_the_conversion_to_i32_is_i32_s(backend, kc, source):
    """Truncation toward zero, saturation and NaN to 0: T(x) where T is i32 gives what i32(x)
    gives, value for value."""
    x = SOURCES[source]
    n = len(x)
    generic, concrete = gn.to_device(np.full(n, 5, np.int32)), gn.to_device(
        np.full(n, 6, np.int32))
    _launch(kc.converted, n, gn.to_device(x), generic)
    _launch(kc.converted_i32, n, gn.to_device(x), concrete)
    np.testing.assert_array_equal(generic.to_host(), concrete.to_host())
    if source == np.float32:
        assert list(generic.to_host()[:10]) == [0, 0, 2, -2, 2**31 - 1, -2**31, 2**31 - 1,
                                                -2**31, 0, 7]


@pytest.mark.parametrize("target", [np.float32, np.float64], ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("source", DTYPES, ids=lambda t: np.dtype(t).name)
def test_the_conversion_to_a_float_rounds_as_numpy(backend, kc, source, target):
    x = SOURCES[source]
    out = gn.to_device(np.zeros(len(x), target))
    _launch(kc.converted, len(x), gn.to_device(x), out)
    with np.errstate(over="ignore"):  # 1e300 is inf as an f32, in NumPy as in f32(x)
        expect = x.astype(target)
    np.testing.assert_array_equal(out.to_host(), expect)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_float_and_bool_literals_convert_as_the_concrete_type_does(backend, kc, dtype):
    """``T(0.0) + T(2.75) * T(i) - T(-2.75) + T(True)``: with T = i32 the literals truncate
    (2.75 is 2, -2.75 is -2), as ``i32(2.75)`` does."""
    n = 64
    out = gn.to_device(np.full(n, -1, dtype))
    _launch(kc.literals, n, out)
    i = np.arange(n, dtype=np.float64)
    if dtype == np.int32:
        expect = 0 + 2 * i + 2 + 1
    else:
        expect = 2.75 * i + 2.75 + 1
    np.testing.assert_array_equal(out.to_host(), expect.astype(dtype))


def test_each_specialisation_spells_its_own_conversion():
    from gpu_native.rewrite import transpile_module
    from tests.helpers import HELPERS

    path = HELPERS / "kernels_typevar_casts.py"
    kernels = {k.name: k for k in transpile_module(path.read_text(), str(path),
                                                   "kernels_typevar_casts").kernels}
    stores = {v.symbol.rsplit("_", 1)[1]: next(line for line in v.cuda.splitlines() if "out[" in line)
              for v in kernels["literals"].variants}
    assert "(2.75f * ((float)(i)))" in stores["f32"] and "-2.75f" in stores["f32"]
    assert "(2.75 * ((double)(i)))" in stores["f64"]
    # i32(2.75) and i32(-2.75) are folded, truncated toward zero, as the literals of i32(x) are.
    assert "(unsigned int)(2) * " in stores["i32"] and "(unsigned int)(-2)" in stores["i32"]
    assert "2.75" not in stores["i32"]


HEADER = """\
from typing import TypeVar
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                        f32, f64, i32, vec2f)

T = TypeVar("T", f32, f64, i32)
U = TypeVar("U", f32, f64)
"""

MISUSES = {
    "no argument": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = T()  # <-
""", "T(x) takes exactly one argument (T is f32 here)"),
    "two arguments": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = T(1, 2)  # <-
""", "T(x) takes exactly one argument"),
    "a keyword": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = T(x=1)  # <-
""", "T(x) takes exactly one argument"),
    "in a device function": ("""
@gpu_device
def zero(x: T) -> T:
    return T()  # <-

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = zero(out[FlatLayout1D.uid()])
""", "T(x) takes exactly one argument"),
    "a literal the specialisation cannot hold": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = T(3000000000)  # <-
""", "3000000000 does not fit in i32 (-2147483648..2147483647) (T is i32 here)"),
    "a vector": ("""
@gpu_kernel(Kernel1D)
def k(v: CUDASlice[vec2f], out: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    out[i] = T(v[i])  # <-
""", "T() (T is f32 here) must be a scalar f32, not vec2f"),
    "a TypeVar no parameter names": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = U(1)  # <-
""", "the TypeVar 'U' is not bound here"),
    "the TypeVar as a value": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = T  # <-
""", "'T' is a TypeVar: it names a type in annotations and converts when called, `T(x)`"),
}


@pytest.mark.parametrize("case", sorted(MISUSES))
def test_misuse_is_located(tmp_path, case):
    body, message = MISUSES[case]
    err = located_transpile_error(HEADER + body, tmp_path / "typevar_casts.py", message)
    text = str(err)
    assert "^" in text.splitlines()[2], text  # the caret under the call


def test_the_typevar_as_a_value_suggests_converting(tmp_path):
    body, _ = MISUSES["the TypeVar as a value"]
    err = located_transpile_error(HEADER + body, tmp_path / "tv.py", "TypeVar")
    assert "`acc = T(0)`" in str(err) and "`T(2) * x[i]`" in str(err)
