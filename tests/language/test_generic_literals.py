"""A literal passed for a generic device function's TypeVar takes the type the typed arguments
give it, as a literal takes the type of the operand it meets: ``softplus(x[i], 2.0)`` with ``x``
of f32 is ``softplus[f32]``.  The literal once bound the TypeVar itself (to f64) when it came
first, and the call was refused: "'T' is f64 from an earlier argument but f32 here"."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module, transpile_module

HEADER = textwrap.dedent("""\
    import math
    from typing import TypeVar
    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, f32, f64, i32)

    T = TypeVar("T", f32, f64, i32)
    F = TypeVar("F", f32, f64)


    @gpu_device
    def scale(k: T, x: T) -> T:
        return k * x


    @gpu_device
    def softplus(x: F, beta: F) -> F:
        return math.log1p(math.exp(beta * x)) / beta
    """)

KERNELS = HEADER + textwrap.dedent("""

    @gpu_kernel(Kernel1D)
    def both(x: CUDASlice[f32], y: CUDASliceMut[f32], z: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        y[i] = scale(2.5, x[i])
        z[i] = softplus(x[i], 2.0)


    @gpu_kernel(Kernel1D)
    def literals_only(y: CUDASliceMut[f64]):
        i = FlatLayout1D.uid()
        y[i] = scale(2.5, 4.0)
    """)


def test_a_literal_takes_its_typevar_from_the_typed_argument(backend, kernel_module):
    m = kernel_module(KERNELS)
    rng = np.random.default_rng()
    x = rng.standard_normal(300).astype(np.float32)
    y, z = gn.to_device(np.full(300, np.nan, np.float32)), gn.to_device(
        np.full(300, np.nan, np.float32))
    m.both[3, 128](gn.to_device(x), y, z)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y.to_host(), 2.5 * x64, rtol=1e-6)
    np.testing.assert_allclose(z.to_host(), np.log1p(np.exp(2.0 * x64)) / 2.0, rtol=1e-5,
                               atol=1e-6)
    w = gn.to_device(np.full(64, np.nan, np.float64))
    m.literals_only[1, 64](w)                 # literals alone: Python's float, f64
    np.testing.assert_array_equal(w.to_host(), np.full(64, 10.0))


def test_the_call_is_the_typed_arguments_specialisation():
    (kernel, _) = transpile_module(KERNELS, "generic_literals.py", "generic_literals").kernels
    cuda = kernel.variants[0].cuda
    assert "_scale_f32(__gn_err, 2.5f, " in cuda
    assert "_softplus_f32(__gn_err, " in cuda and ", 2.0f)" in cuda


def test_a_literal_that_the_bound_type_cannot_hold_is_refused(tmp_path):
    source = HEADER + textwrap.dedent("""

        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[i32], y: CUDASliceMut[i32]):
            i = FlatLayout1D.uid()
            y[i] = scale(2.5, x[i])
        """)
    with pytest.raises(TranspileError, match=r"argument 'k' of scale\(\): the float literal 2.5 "
                                             r"cannot be assigned to i32 without a cast"):
        rewrite_module(source, str(tmp_path / "k.py"), "k")
