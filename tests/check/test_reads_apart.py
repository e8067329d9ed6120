"""A read of a writable global array at an element no other thread's store can write, proven as
a pair of stores is (the read's index against each store's): Gaussian elimination reads the
pivot row ``a[k, j]`` while the threads update the rows below it (``a[i, j]``, ``i > k``).
It was refused ("read here at another index than it is written at") unless the read was put
under ``with unsafe():``.

Accepted kernels run on the simulator against NumPy in float64 with the race detector watching
every write; near misses (a read of a row another thread writes) are refused and race once the
read is put under ``with unsafe():``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from gpu_native.spec import ParamCheck
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch, race_free_draws
from tools.fuzz import guarded, reads


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


ELIMINATE = """
    @gpu_kernel(Kernel2D)
    def k(a: CUDASliceMut2D[f64], k: i32):
        j, i = FlatLayout2D.uid()
        n, w = a.shape
        if i > k and i < n and j > k and j < w:
            f = a[i, k] / a[k, k]  # <--
            a[i, j] -= f * a[k, j]  # <--
    """

COLUMN_ZERO = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut2D[f32]):
        i = FlatLayout1D.uid()
        n, w = a.shape
        if i < n - 1:
            f = a[i + 1, 0] / a[0, 0]  # <--
            for j in range(w):
                a[i + 1, j] -= f * a[0, j]  # <--
    """


def test_an_elimination_step_reads_the_pivot_row(tmp_path):
    kernel = build(tmp_path, marked_unsafe(ELIMINATE, wrap=False), name="eliminate")["k"]
    # No launch check on k: every step's launch is allowed.
    assert not [c for c in kernel.launch_checks if isinstance(c, ParamCheck)]
    rng = np.random.default_rng(7)
    a = rng.standard_normal((9, 11)) + 4 * np.eye(9, 11)
    want = a.copy()
    got = a.copy()
    for step in range(8):
        # The multipliers read a[i, k], which this step leaves alone (j > k): as on the host.
        f = want[step + 1:, step] / want[step, step]
        want[step + 1:, step + 1:] -= np.outer(f, want[step, step + 1:])
        errors = launch(kernel, (2, 2), (8, 8), got, np.int32(step))
        assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_first_column_from_row_zero(tmp_path):
    kernel = build(tmp_path, marked_unsafe(COLUMN_ZERO, wrap=False), name="column0")["k"]
    a = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    got = a.copy()
    errors = launch(kernel, 1, 32, got)
    assert errors.races == [] and errors.fails == [], errors
    want = a.astype(np.float64)
    want[1:] -= np.outer(want[1:, 0] / want[0, 0], want[0])
    np.testing.assert_allclose(got, want, rtol=1e-6)


NEAR_MISSES = {
    # Row i + 1 is updated from row i, which the thread before writes.
    "previous_row": COLUMN_ZERO.replace("a[0, j]  # <--", "a[i, j]  # <--"),
    # The pivot row itself is updated (i >= k): thread k writes a[k, j] while others read it.
    "pivot_included": ELIMINATE.replace("if i > k and", "if i >= k and"),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused_and_race(tmp_path, name):
    source = NEAR_MISSES[name]
    with pytest.raises(TranspileError, match="read here"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    if name == "previous_row":
        errors = launch(kernel, 1, 32, np.ones((6, 4), np.float32))
    else:
        errors = launch(kernel, (1, 1), (8, 8), np.ones((6, 6)) + np.eye(6), np.int32(1))
    assert errors.races


@pytest.mark.slow
def test_generated_reads_accepted_only_when_race_free(tmp_path):
    """Every draw of tools/fuzz/reads.py (a store and a read where another family drew two
    stores) the checker accepts runs without a race for each n and launch shape its checks let
    through; the counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, reads.generated, 20261206, 300, "reads", guarded.runs)
    print(f"\nread draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 20 and refused >= 100
