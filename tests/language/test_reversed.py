"""``for i in reversed(range(...))``: the range's values, last first, as Python's
``list(reversed(range(...)))`` gives them, for one to three arguments, constant or runtime bounds
and steps of either sign (a runtime step's sign decided at run time), next to the limits of the
loop's type; the indices in the body proven in bounds as in the range's own loop; the errors.
The kernels are tests/helpers/kernels_reversed.py (also compiled with NVRTC by
tests/compiler/test_nvrtc_all.py)."""

from __future__ import annotations

import itertools
import re
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelError
from gpu_native.rewrite import transpile_module
from tests.helpers import HELPERS, compiled_cleanly, located_transpile_error

WIDTH = 40  # the values kept of each range (the count is checked in full)
I32 = np.iinfo(np.int32)
I64 = np.iinfo(np.int64)


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_reversed

    return kernels_reversed


def _launch(kernel, n, *args):
    kernel.launch(gn.GridDim1D((n + 63) // 64), gn.BlockDim1D(64), 0, gn.DEFAULT_STREAM)(*args)


def _small_triples():
    values = [-9, -7, -4, -1, 0, 1, 2, 3, 5, 8, 11]
    steps = [-7, -3, -2, -1, 1, 2, 3, 4, 9]
    return [(a, b, s) for a, b, s in itertools.product(values, values, steps)]


def _limit_triples(info):
    lo, hi = int(info.min), int(info.max)
    return [
        (hi - 5, hi, 1), (hi - 5, hi, 2), (lo, lo + 5, 1), (lo, lo + 7, 3), (hi, hi - 4, -1),
        (lo + 4, lo, -1), (lo + 9, lo, -4), (hi, lo, lo), (0, lo, lo), (lo, hi, hi),
        (hi, lo, -(hi // 3) - 1), (lo, hi, hi // 4), (-1, hi, hi), (hi, hi, 1), (lo, lo, -1),
        (hi - 1, lo, lo), (0, hi, hi), (lo + 1, hi, hi),
    ]


def _walk(kernel, triples, dtype):
    starts, stops, steps = (np.array(column, dtype) for column in zip(*triples))
    n = len(triples)
    out = gn.to_device(np.full((n, WIDTH), -12345, np.int64))
    counts = gn.to_device(np.full(n, -1, np.int64))
    _launch(kernel, n, gn.to_device(starts), gn.to_device(stops), gn.to_device(steps), out,
            counts)
    return out.to_host(), counts.to_host()


def _assert_walks(triples, rows, counts):
    for (start, stop, step), row, count in zip(triples, rows, counts):
        want = list(reversed(range(start, stop, step)))
        assert count == len(want), (start, stop, step)
        got = [int(v) for v in row[:min(count, WIDTH)]]
        assert got == want[:WIDTH], (start, stop, step, got)


@pytest.mark.parametrize("dtype, kernel", [(np.int64, "walk_i64"), (np.int32, "walk_i32")])
def test_runtime_bounds_and_steps_walk_as_python(backend, kr, dtype, kernel):
    triples = _small_triples() + _limit_triples(np.iinfo(dtype))
    rows, counts = _walk(getattr(kr, kernel), triples, dtype)
    _assert_walks(triples, rows, counts)


def test_unsigned_bounds_walk_as_python(backend, kr):
    hi = int(np.iinfo(np.uint32).max)
    triples = [(a, b, s) for a, b, s in itertools.product([0, 1, 2, 5, 9], [0, 1, 4, 9, 10],
                                                          [1, 2, 3, 7])]
    triples += [(hi - 5, hi, 1), (hi - 9, hi, 4), (0, hi, hi), (1, hi, hi // 2), (hi, hi, 1),
                (0, 5, hi)]
    rows, counts = _walk(kr.walk_u32, triples, np.uint32)
    _assert_walks(triples, rows, counts)


def test_constant_steps_walk_as_python(backend, kr):
    values = [-8, -5, -3, -1, 0, 1, 2, 4, 7, 10, int(I32.min), int(I32.min) + 4,
              int(I32.max) - 4, int(I32.max)]
    pairs = [(a, b) for a, b in itertools.product(values, values) if abs(a - b) < 25]
    starts, stops = (np.array(column, np.int32) for column in zip(*pairs))
    out = gn.to_device(np.full((len(pairs), 3 * WIDTH), -12345, np.int64))
    counts = gn.to_device(np.full(len(pairs), -1, np.int64))
    _launch(kr.walk_constant_steps, len(pairs), gn.to_device(starts), gn.to_device(stops), out,
            counts)
    for (a, b), row, count in zip(pairs, out.to_host(), counts.to_host()):
        want = [*reversed(range(a, b)), -99, *reversed(range(a, b, kr.STEP)), -99,
                *reversed(range(a, b, -kr.STEP))]
        assert count == len(want), (a, b)
        assert [int(v) for v in row[:count]] == want, (a, b)


CONSTANT_RANGES = [(5,), (0,), (-3,), (2, 9), (9, 2), (-4, 4), (0, 10, 3), (10, 0, -3),
                   (10, 0, 3), (0, 10, -3), (-5, 6, 4), (7, -8, -5), (3, 4, 100), (4, 3, -100),
                   (2**31 - 3, 2**31 - 1), (-2**31, -2**31 + 3), (2**31 - 1, -2**31, -2**31),
                   (2**62, 2**62 + 10, 4), (-2**63, -2**63 + 2)]


def _constant_kernel_source():
    """One kernel writing the values of every constant reversed range in turn into its row."""
    lines = ["from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut2D, FlatLayout1D, i64)",
             "", "", "@gpu_kernel(Kernel1D)", "def walk(out: CUDASliceMut2D[i64]):",
             "    t = FlatLayout1D.uid()", "    n = 0"]
    for k, args in enumerate(CONSTANT_RANGES):  # a name each: the loops' types differ
        lines += [f"    for v{k} in reversed(range({', '.join(map(str, args))})):",
                  f"        out[t, n] = i64(v{k})", "        n += 1",
                  "    out[t, n] = -99", "    n += 1"]
    return "\n".join(lines) + "\n"


def _constant_expected():
    return [v for args in CONSTANT_RANGES for v in [*reversed(range(*args)), -99]]


def test_constant_ranges_walk_as_python(backend, kernel_module):
    m = kernel_module(_constant_kernel_source())
    want = _constant_expected()
    out = gn.to_device(np.full((3, len(want) + 2), 7, np.int64))
    m.walk.launch(gn.GridDim1D(1), gn.BlockDim1D(3), 0, gn.DEFAULT_STREAM)(out)
    for row in out.to_host():
        assert [int(v) for v in row] == [*want, 7, 7]


@pytest.mark.slow
def test_constant_ranges_compile_with_nvrtc():
    compiled_cleanly(_constant_kernel_source(), "/tmp/reversed_constants.py",
                     "reversed_constants")


def test_a_zero_step_at_run_time_fails_as_the_range_does(backend, kr):
    with pytest.raises(KernelError, match=r"range\(\) arg 3 must not be zero"):
        _walk(kr.walk_i64, [(0, 5, 1), (0, 5, 0)], np.int64)
        gn.DEFAULT_STREAM.synchronize()


def test_loop_bodies_read_backwards_with_proven_indices(backend, kr, rng):
    a = rng.standard_normal(200).astype(np.float32)
    out = gn.to_device(np.full(200, np.nan, np.float32))
    _launch(kr.suffix_sums, 200, gn.to_device(a), out)
    a64 = a.astype(np.float64)
    want = [sum(a64[j] * 0.5 ** (j - i) for j in range(i, 200)) for i in range(200)]
    np.testing.assert_allclose(out.to_host(), want, rtol=1e-4, atol=1e-5)


def test_an_unrolled_reversed_loop_runs_as_written(backend, kr, rng):
    a = rng.standard_normal(64 + kr.TAPS).astype(np.float32)
    out = gn.empty(64, gn.f32)
    _launch(kr.reversed_taps, 64, gn.to_device(a), out)
    a64 = a.astype(np.float64)
    want = np.array([sum(2.0 ** k * a64[i + k] for k in range(kr.TAPS)) for i in range(64)])
    # An f32 sum's error is relative to its terms', not to a total they cancel to (a random
    # draw made one output -0.119 of terms near 150: rtol=1e-5 of it failed).
    scale = np.array([sum(2.0 ** k * abs(a64[i + k]) for k in range(kr.TAPS))
                      for i in range(64)])
    err = np.abs(out.to_host().astype(np.float64) - want)
    assert np.all(err <= 1e-6 * scale * kr.TAPS), (err / scale).max()


def test_a_tree_reduction_over_reversed_strides(backend, kr, rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    blocks = (n + kr.THREADS - 1) // kr.THREADS
    out = gn.empty(blocks, gn.f32)
    kr.block_sums.launch(gn.GridDim1D(blocks), gn.BlockDim1D(kr.THREADS), 0,
                         gn.DEFAULT_STREAM)(gn.to_device(a), out)
    padded = np.zeros(blocks * kr.THREADS, np.float64)
    padded[:n] = a
    np.testing.assert_allclose(out.to_host(), padded.reshape(blocks, -1).sum(axis=1),
                               rtol=1e-4, atol=1e-5)


# ---- the proofs --------------------------------------------------------------------------------

PROOF_HEADER = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32, i32)
"""


def _remaining_checks(body: str) -> set[tuple[int, str]]:
    """The (line from the def, array) of each bounds check the kernel keeps."""
    (kernel,) = transpile_module(PROOF_HEADER + textwrap.dedent(body), "proofs.py",
                                 "proofs").kernels
    return {(site.line - kernel.line, site.array) for site in kernel.variants[0].sites
            if site.kind == "index"}


@pytest.mark.parametrize("loop", [
    "range({n})", "range(0, {n})", "range(0, {n}, 1)", "range(0, {n}, 3)", "range(2, {n}, 2)",
])
@pytest.mark.parametrize("n", ["len(a)", "m"])
def test_indices_in_a_reversed_range_are_proven_as_in_the_range(loop, n):
    body = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        m = len(a)
        s = f32(0.0)
        for j in {it}:
            s += a[j]
        out[i] = s
    """
    forward = _remaining_checks(body.format(it=loop.format(n=n)))
    backward = _remaining_checks(body.format(it=f"reversed({loop.format(n=n)})"))
    assert backward == forward == {(7, "out")}


def test_an_index_the_range_does_not_bound_is_still_checked():
    body = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], out: CUDASliceMut[f32], n: i32):
        i = FlatLayout1D.uid()
        s = f32(0.0)
        for j in reversed(range(n)):
            s += a[j]
        for m in reversed(range(1, len(a) + 1)):
            s += a[m]
        out[i] = s
    """
    assert _remaining_checks(body) == {(5, "a"), (7, "a"), (8, "out")}


def test_the_cuda_counts_down_from_the_range_s_length(kr):
    path = HELPERS / "kernels_reversed.py"
    kernels = {k.name: k for k in transpile_module(path.read_text(), str(path),
                                                   "kernels_reversed").kernels}
    cuda = kernels["suffix_sums"].variants[0].cuda
    assert re.search(r"for \(gn_u64 __gn_k0 = gn_range_count\(__gn_start0, __gn_stop0, "
                     r"__gn_step0\); __gn_k0 != 0; --__gn_k0\) \{\n\s*j = \(long long\)"
                     r"gn_range_value\(__gn_start0, __gn_step0, __gn_k0 - 1\);", cuda), cuda
    taps = kernels["reversed_taps"].variants[0].cuda
    assert re.search(r"#pragma unroll\n\s*for \(gn_u64 __gn_k1 = ", taps), taps


# ---- errors ------------------------------------------------------------------------------------

ERROR_HEADER = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32, i32,
                        unroll)
T3 = (1.0, 2.0, 3.0)

@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    s = f32(0.0)
"""

ERRORS = {
    "a tuple": ("""
    for x in reversed(T3):  # <-
        s += x
""", "reversed() in a kernel reverses a range"),
    "no argument": ("""
    for j in reversed():  # <-
        s += 1.0
""", "reversed() takes one argument"),
    "two arguments": ("""
    for j in reversed(range(n), range(n)):  # <-
        s += 1.0
""", "reversed() takes one argument"),
    "an array": ("""
    for j in reversed(a):  # <-
        s += 1.0
""", "reversed() in a kernel reverses a range"),
    "reversed twice": ("""
    for j in reversed(reversed(range(n))):  # <-
        s += 1.0
""", "reversed() in a kernel reverses a range"),
    "a float bound": ("""
    for j in reversed(range(2.5)):  # <-
        s += 1.0
""", "range() arguments must be integers"),
    "a zero step": ("""
    for j in reversed(range(0, n, 0)):  # <-
        s += 1.0
""", "range() step must not be zero"),
    "used as a value": ("""
    r = reversed(range(n))  # <-
""", "reversed() is iterated by a `for` loop, not used as a value"),
    "counted by enumerate": ("""
    for c, j in enumerate(reversed(range(n))):  # <-
        s += 1.0
""", "enumerate() does not count a reversed range in kernels"),
    "unrolled fully with unknown bounds": ("""
    for j in unroll(reversed(range(n))):  # <-
        s += 1.0
""", "unroll() unrolls fully only a loop of constant bounds"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors(tmp_path, case):
    body, message = ERRORS[case]
    source = ERROR_HEADER + textwrap.dedent(body).replace("\n", "\n    ") + "\n    out[i] = s\n"
    err = located_transpile_error(source, tmp_path / "reversed_errors.py", message)
    assert "^" in str(err).splitlines()[2], str(err)
