"""The rotation rule's fuzzer (R11, the rotation draws of ``tools/fuzz/splits.py``): over a few
hundred draws the checker accepts ``((f % K + c * (f // K)) % M) * W + f // K`` where ``M >= K``
and a row holds every ``f // K``, refuses the near misses, and no accepted kernel races on the
simulator's race detector, on any launch shape its asserts allow."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.simulator.support import race_free_draws
from tools.fuzz import indices, splits


def rotations(r: random.Random) -> str:
    """The next draw of the splits family that is a rotation."""
    while True:
        source = splits.generated(r)
        if "lo = f %" in source:
            return source


def _runs(kernel):
    for grid, block in indices.launch_shapes(kernel):
        yield (f"grid {grid}, block {block}",
               lambda g=grid, b=block: indices.run_sim(
                   kernel, g, b, np.full(indices.OUT_SIZE, indices.POISON, np.int32)))


@pytest.mark.slow
def test_generated_rotations_accepted_only_when_race_free(tmp_path):
    """The counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(tmp_path, rotations, 20261207, 300,
                                                  "rotation", _runs)
    print(f"\nrotation draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 30 and refused >= 30 and launches >= 100
