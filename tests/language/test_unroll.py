"""``for i in unroll(range(...), factor)``: the loop runs as written on the simulator (and,
GPU-marked, on the GPU); the errors for what cannot be unrolled.  What the emitter writes
(``#pragma unroll``) is tested in tests/emit/test_unroll_pragma.py."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module


@pytest.fixture(scope="module")
def ku():
    from tests.helpers import kernels_unroll

    return kernels_unroll


@pytest.mark.parametrize("n", [0, 3, 8])
def test_unrolled_loops_run_as_written(backend, ku, n):
    a = np.arange(40, dtype=np.float32) / 4
    out = gn.empty(32, gn.f32)
    ku.unrolled_sums.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(
        gn.to_device(a), np.int32(n), out)
    taps = np.stack([a[i:i + ku.TAPS] for i in range(32)])
    expect = 2 * taps[:, ::-1].astype(np.float64).sum(axis=1) + taps[:, 0:n:2].sum(axis=1)
    np.testing.assert_allclose(out.to_host(), expect, rtol=1e-6)


def test_the_host_stub_is_device_only():
    with pytest.raises(RuntimeError, match=r"unroll\(\) can only be used inside"):
        gn.unroll(range(4))


HEADER = """
from gpu_native import CUDASliceMut, FlatLayout1D, Kernel1D, f32, i32, gpu_kernel, unroll
N = 8
"""
KERNEL = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    s = f32(0.0)
"""

ERRORS = {
    "full unroll of unknown bounds": ("""
    for j in unroll(range(n)):  # <-
        s += 1.0
""", r"unroll\(\) unrolls fully only a loop of constant bounds"),
    "too many iterations": ("""
    for j in unroll(range(2000)):  # <-
        s += 1.0
""", r"unroll\(\) unrolls fully at most 1024 iterations, not 2000"),
    "not a range": ("""
    for j in unroll((1, 2, 3)):  # <-
        s += 1.0
""", r"unroll\(\) takes a range"),
    "negative factor": ("""
    for j in unroll(range(n), -2):  # <-
        s += 1.0
""", r"unroll\(\)'s factor must be 1 or more"),
    "variable factor": ("""
    for j in unroll(range(N), n):  # <-
        s += 1.0
""", r"unroll\(\)'s factor must be a constant integer"),
    "unknown keyword": ("""
    for j in unroll(range(N), times=2):  # <-
        s += 1.0
""", r"unroll\(\) has no parameter 'times'"),
    "used as a value": ("""
    r = unroll(range(N))  # <-
""", r"unroll\(\) is iterated by a `for` loop"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors(case):
    source = textwrap.dedent(HEADER) + KERNEL + ERRORS[case][0] + \
        "    if i < len(out):\n        out[i] = s\n"
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, "/tmp/unroll.py", "unroll_errors")
    assert info.value.span.line == line, str(info.value)
    assert re.search(ERRORS[case][1], str(info.value)), str(info.value)
