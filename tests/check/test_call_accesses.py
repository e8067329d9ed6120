"""A device function's accesses of an array beside its caller's (``check_calls`` in
gpu_native/check/unique.py): a call that reads or stores an array the caller also writes is
accepted where a barrier orders the two or both touch the thread's own element (the callee
indexes the array by its parameters alone, the call passes the caller's owner index), and
refused otherwise; the hand-written cases are in test_unique_soundness.py, the generated ones
(tools/fuzz/calls.py) here, each accepted draw run on the simulator's race detector."""

from __future__ import annotations

import numpy as np
import pytest

from tests.simulator.support import build, launch, race_free_draws
from tools.fuzz import calls, guarded


def test_the_callee_s_own_element_round_trip_matches_numpy(tmp_path):
    kernels = build(tmp_path, calls.FUNCTIONS.replace("from typing import TypeVar\n", "") + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32], n: i32):
    u = FlatLayout1D.uid()
    if u < n:
        put(out, u, peek(out, u) * 3)
        bump(out, u)
        out[u] = out[u] + peek(out, u)
""")
    rng = np.random.default_rng()
    host = rng.integers(-1000, 1000, 300).astype(np.int32)
    out = host.copy()
    errors = launch(kernels["k"], 3, 128, out, np.int32(300))
    assert errors.races == [] and not errors.fails
    np.testing.assert_array_equal(out.astype(np.float64), (host * 3.0 + 1) * 2)


@pytest.mark.slow
def test_generated_calls_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/calls.py the checker accepts runs without a race for each n
    and launch shape its checks let through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, calls.generated, 20261207, 300, "calls", guarded.runs)
    print(f"\ncall draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 20 and refused >= 100
