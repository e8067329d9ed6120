"""``while`` loops that count (:mod:`gpu_native.check.counted`): the grid-stride loop as CUDA C++
writes it (``i = block_idx.x * block_dim.x + thread_idx.x; while i < n: ...; i += stride``) is
proven race-free and in bounds as ``for i in range(start, n, stride)`` is, its counter kept from
wrapping around (statically, or by a launch check of the array's extent); the near misses stay
refused."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.rewrite import transpile_module
from gpu_native.runtime.launch_checks import check_params, check_shapes
from gpu_native.spec import ParamCheck, ShapeAssert

KERNELS = textwrap.dedent("""\
    from gpu_native import *

    @gpu_kernel(Kernel1D)
    def saxpy(a: f32, x: CUDASlice[f32], y: CUDASliceMut[f32]):
        # CUDA by Example's loop: an i32 counter stepped by the whole grid.
        i = block_idx.x * block_dim.x + thread_idx.x
        while i < len(y):
            y[i] = a * x[i] + y[i]
            i += block_dim.x * grid_dim.x

    @gpu_kernel(Kernel1D)
    def saxpy_n(n: i32, a: f32, x: CUDASlice[f32], y: CUDASliceMut[f32]):
        # Harris' grid-stride loop, bounded by an `int n` parameter.
        i = block_idx.x * block_dim.x + thread_idx.x
        while i < n:
            y[i] = a * x[i] + y[i]
            i += block_dim.x * grid_dim.x

    @gpu_kernel(Kernel1D)
    def block_loop(x: CUDASlice[f64], y: CUDASliceMut[f64], n: i32):
        # One block strides over n elements; an i64 counter; a continue skips the step.
        assert grid_dim.x == 1
        j = FlatLayout1D.uid()
        while j < n and j < len(y):
            if x[j] < 0.0:
                y[j] = 0.0
                j = j + block_dim.x
                continue
            y[j] = x[j] * 2.0
            j = j + block_dim.x

    @gpu_kernel(Kernel1D)
    def strided_pairs(out: CUDASliceMut[i32]):
        # Two stores a constant apart, stepped by twice the grid.
        k = 2 * (block_idx.x * block_dim.x + thread_idx.x)
        while k + 1 < len(out):
            out[k] = k
            out[k + 1] = -k
            k += 2 * block_dim.x * grid_dim.x
    """)


def test_grid_stride_while_loops_run_as_their_ranges(backend, kernel_module):
    module = kernel_module(KERNELS)
    rng = np.random.default_rng()
    for n in (1, 100, 1000, 4097):
        x = rng.standard_normal(n).astype(np.float32)
        y0 = rng.standard_normal(n).astype(np.float32)
        y = gn.to_device(y0)
        module.saxpy.launch(gn.GridDim1D(3), gn.BlockDim1D(64))(np.float32(1.5), gn.to_device(x),
                                                                  y)
        np.testing.assert_allclose(y.to_host(), 1.5 * x.astype(np.float64) + y0, rtol=1e-6,
                                   atol=1e-6)
        y = gn.to_device(y0)
        module.saxpy_n.launch(gn.GridDim1D(3), gn.BlockDim1D(64))(
            n - n // 3, np.float32(1.5), gn.to_device(x), y)
        want = y0.astype(np.float64)
        want[:n - n // 3] += 1.5 * x[:n - n // 3]
        np.testing.assert_allclose(y.to_host(), want, rtol=1e-6, atol=1e-6)
    x = rng.standard_normal(300)
    y = gn.to_device(np.full(300, np.nan))
    module.block_loop.launch(gn.GridDim1D(1), gn.BlockDim1D(32))(gn.to_device(x), y, 250)
    expected = np.where(x < 0.0, 0.0, x * 2.0)
    got = y.to_host()
    np.testing.assert_array_equal(got[:250], expected[:250])
    assert np.isnan(got[250:]).all()
    out = gn.to_device(np.full(1001, 7, np.int32))
    module.strided_pairs.launch(gn.GridDim1D(2), gn.BlockDim1D(32))(out)
    k = np.arange(0, 1000, 2)
    expected = np.full(1001, 7)
    expected[k], expected[k + 1] = k, -k
    np.testing.assert_array_equal(out.to_host(), expected)


def test_an_array_too_long_for_an_i32_counter_is_refused_at_launch(sim, kernel_module):
    # len(y) + block_dim.x * grid_dim.x must fit an i32, or the counter's last step wraps.
    # (The check the launcher makes, on extents no test machine holds.)
    loaded = kernel_module(KERNELS)
    variant = loaded.saxpy.spec.variants[0]
    (check,) = [c for c in variant.launch_checks if isinstance(c, ShapeAssert)]
    site = variant.sites[check.site]
    assert "counter 'i' (i32) would wrap around" in site.message
    assert "i64 counter" in site.message

    class Extent:
        def __init__(self, n):
            self.shape = (n,)

    arrays = [None, Extent(2**31), Extent(2**31 - 256)]
    check_shapes(variant.kernel_id, (check,), arrays, (2, 1, 1), (128, 1, 1))  # just fits
    with pytest.raises(gn.KernelAssertionError, match=r"counter 'i' \(i32\) would wrap"):
        check_shapes(variant.kernel_id, (check,), arrays, (3, 1, 1), (128, 1, 1))
    # An i64 counter (block_loop's) needs no such check.
    module = transpile_module(KERNELS, "counted.py", "counted")
    block_loop = next(k for k in module.kernels if k.name == "block_loop")
    assert not any(isinstance(c, ShapeAssert) for c in block_loop.variants[0].launch_checks)


@pytest.mark.parametrize("body, message", [
    # The step changes inside the loop: the counter's values are no arithmetic progression.
    ("s = block_dim.x\n    while i < len(y):\n        y[i] = 1.0\n        s += 1\n"
     "        i += s", "not provably unique"),
    # The counter is assigned before the step too.
    ("while i < len(y):\n        y[i] = 1.0\n        i = i * 2\n        i += 1",
     "not provably unique"),
    # The step is not the body's last statement: the store after it reads the next value.
    ("while i < len(y):\n        i += block_dim.x * grid_dim.x\n        y[i] = 1.0",
     "not provably unique"),
    # Every thread steps by the block alone: two blocks meet.
    ("while i < len(y):\n        y[i] = 1.0\n        i += block_dim.x", "both write y["),
    # A for loop in the body rebinds the counter (i -= 1, unseen): it raced, its bounds check
    # dropped.
    ("while i < len(y):\n        y[i] = 1.0\n        for i in range(i - 1, i):\n"
     "            pass\n        i += block_dim.x * grid_dim.x", "not provably unique"),
    ("while i < len(y):\n        y[i] = 1.0\n        if i > 3:\n"
     "            for i in range(i - 1000, i - 999):\n                pass\n"
     "        i += block_dim.x * grid_dim.x", "not provably unique"),
    # The chunk's ends in i64 wrap for a large C: its span says nothing of the trip.
    ("t = i64(i) * 4\n    i = t * 4611686018427387903\n"
     "    while i < t * 4611686018427387903 + 4611686018427387903 and i < len(y):\n"
     "        if i >= 0:\n            y[i] = 1.0\n        i += 1", "not provably unique"),
])
def test_near_misses_stay_refused(body, message, tmp_path):
    source = ("from gpu_native import *\n\n@gpu_kernel(Kernel1D)\n"
              "def k(y: CUDASliceMut[f32]):\n"
              "    i = block_idx.x * block_dim.x + thread_idx.x\n"
              f"    {body}\n")
    with pytest.raises(gn.TranspileError, match=message.replace("[", r"\[")):
        transpile_module(source, str(tmp_path / "near.py"), "near")


def test_a_parameter_bound_too_close_to_the_i32_limit_is_refused_at_launch(sim, kernel_module):
    # n + block_dim.x * grid_dim.x must fit an i32, or the counter's last step wraps: the
    # launcher checks the value passed, a ValueError naming the parameter.
    # (The check itself, on values no test array is long enough to launch with.)
    variant = kernel_module(KERNELS).saxpy_n.spec.variants[0]
    checks = tuple(c for c in variant.launch_checks if isinstance(c, ParamCheck))
    names = ("n", "a", "x", "y")
    args = [2**31 - 64, 1.0, None, None]
    check_params("saxpy_n", names, checks, args, (2, 1, 1), (32, 1, 1))  # reaches 2**31 - 1
    args[0] += 1
    with pytest.raises(ValueError, match=r"parameter 'n' is 2147483585, too close to the limit "
                                         r"of the while loop's counter 'i' \(line \d+\)"):
        check_params("saxpy_n", names, checks, args, (2, 1, 1), (32, 1, 1))
    # A launch whose n the arrays hold runs (the check passes).
    x, y = gn.to_device(np.ones(64, np.float32)), gn.to_device(np.ones(64, np.float32))
    kernel_module(KERNELS).saxpy_n.launch(gn.GridDim1D(2), gn.BlockDim1D(32))(
        64, np.float32(1.0), x, y)
    np.testing.assert_array_equal(y.to_host(), np.full(64, 2.0))


@pytest.mark.parametrize("body", [
    # The bound is reassigned before the loop: not the value the launcher checks.
    "n = n * 2\n    while i < n:",
    # The bound is arithmetic of the parameter, not the parameter.
    "while i < n - 1:",
])
def test_a_parameter_bound_the_launcher_cannot_check_stays_refused(body, tmp_path):
    source = ("from gpu_native import *\n\n@gpu_kernel(Kernel1D)\n"
              "def k(n: i32, y: CUDASliceMut[f32]):\n"
              "    i = block_idx.x * block_dim.x + thread_idx.x\n"
              f"    {body}\n        y[i] = 1.0\n        i += block_dim.x * grid_dim.x\n")
    with pytest.raises(gn.TranspileError, match="not provably unique"):
        transpile_module(source, str(tmp_path / "bound.py"), "bound")
