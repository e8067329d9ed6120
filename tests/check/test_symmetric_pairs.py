"""Two stores per thread that a condition keeps apart: a butterfly over a launch value the proofs
keep opaque.

``half = len(a) // 2; if i < half: a[i], a[i + half]``: the quotient is the same in every
thread, an opaque value like a parameter, and ``i < half`` makes it at least 1 there, so the
mixed-radix rule sees ``i + half`` past every thread's ``i`` (:func:`gpu_native.check.
ownership.guard_assumptions`).  Each accepted kernel runs on the simulator against NumPy with
the race detector on; each near miss is refused and races on the simulator once its stores are
put under ``with unsafe():``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from gpu_native.spec import ParamCheck
from tests.simulator.support import build, launch


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def _butterfly(a: np.ndarray, half: int) -> np.ndarray:
    out = a.copy()
    u, v = a[:half], a[half:2 * half]
    out[:half], out[half:2 * half] = u + v, u - v
    return out


BUTTERFLY = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]{params}):
        i = FlatLayout1D.uid()
        half = {half}
        if i < half:
            u = a[i]
            v = a[i + half]
            a[i] = u + v  # <--
            a[i + half] = u - v  # <--
    """

# name: (the half, extra parameters, the arguments after a for an array of n).
BUTTERFLIES = {
    "len": ("len(a) // 2", "", lambda n: ()),
    "shape": ("a.shape[0] // 2", "", lambda n: ()),
    "i64_param": ("n // 2", ", n: i64", lambda n: (np.int64(n),)),
    "i32_param": ("n // 2", ", n: i32", lambda n: (np.int32(n),)),
    "rounded_up": ("(len(a) + 1) // 2", "", lambda n: ()),
}

def _unsafe(source: str) -> str:
    """``source`` with each line marked ``# <--`` under ``with unsafe():``."""
    lines = []
    for line in source.splitlines():
        if line.endswith("# <--"):
            text = line[:-len("# <--")].rstrip()
            indent = text[:len(text) - len(text.lstrip())]
            lines += [f"{indent}with unsafe():", f"    {text}"]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def _plain(source: str) -> str:
    return source.replace("  # <--", "")


def _run_1d(kernel, a: np.ndarray, *extra, grid=2, block=32) -> np.ndarray:
    out = a.copy()
    errors = launch(kernel, grid, block, out, *extra)
    assert errors.races == [] and errors.fails == [], errors
    return out


# ---- accepted ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUTTERFLIES))
def test_a_butterfly_over_a_quotient_of_the_length(tmp_path, name):
    half, params, args = BUTTERFLIES[name]
    kernel = build(tmp_path, _plain(BUTTERFLY.format(half=half, params=params)), name=name)["k"]
    # The quotient needs no launch check: it is the same in every thread.
    assert not [c for c in kernel.launch_checks if isinstance(c, ParamCheck)]
    rng = np.random.default_rng(len(name))
    for n in (2, 8, 64, 70, 100):  # even lengths: (len(a) + 1) // 2 is len(a) // 2 there
        a = rng.standard_normal(n).astype(np.float32)
        got = _run_1d(kernel, a, *args(n), grid=2, block=32)
        np.testing.assert_allclose(got, _butterfly(a, n // 2), rtol=1e-6)
    if name != "rounded_up":
        a = rng.standard_normal(9).astype(np.float32)  # an odd length: the last one stays
        np.testing.assert_allclose(_run_1d(kernel, a, *args(9)), _butterfly(a, 4), rtol=1e-6)


def test_a_butterfly_rounded_up_with_its_end_guarded(tmp_path):
    source = """
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            half = (len(a) + 1) // 2
            if i < half and i + half < len(a):
                u = a[i]
                v = a[i + half]
                a[i] = u + v
                a[i + half] = u - v
        """
    kernel = build(tmp_path, source, name="rounded_guarded")["k"]
    a = np.random.default_rng(3).standard_normal(9).astype(np.float32)
    expected = a.copy()
    expected[:4], expected[5:9] = a[:4] + a[5:9], a[:4] - a[5:9]  # a[4] has no partner
    np.testing.assert_allclose(_run_1d(kernel, a), expected, rtol=1e-6)


# ---- near misses: refused, and racing ------------------------------------------------------------

# name: (source, the array's shape, a launch that races once the stores are unsafe).
NEAR_MISSES = {
    # Thread half writes a[half] through a[i], thread 0 through a[i + half] (odd lengths: for
    # even ones thread half's a[2 * half] is out of bounds first).
    "butterfly_inclusive": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "if i < half:", "if i <= half:"), 9, 1, 32),
    "butterfly_one_more": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "if i < half:", "if i < half + 1:"), 9, 1, 32),
    "butterfly_rest_of_the_length": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "if i < half:", "if i < len(a) - half:"), 9, 1, 32),
    # Thread 0's second index is thread half - 1's first.
    "butterfly_one_short": (BUTTERFLY.format(half="len(a) // 2", params="").replace(
        "i + half]", "i + half - 1]"), 8, 1, 32),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused_and_race(tmp_path, name):
    source, shape, grid, block = NEAR_MISSES[name]
    with pytest.raises(TranspileError, match=r"could write the same element|could race|may meet"):
        build(tmp_path, _plain(source), name=name)
    kernel = build(tmp_path, _unsafe(source), name=f"{name}_unsafe")["k"]
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    assert launch(kernel, grid, block, a).races
