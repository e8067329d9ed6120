"""The padding rule's fuzzer (``tools/fuzz/padded.py``): over a few hundred draws, the checker
accepts padded indices it can prove and refuses near misses, and no accepted kernel races on the
simulator's race detector, on any launch shape its asserts allow."""

from __future__ import annotations

import pytest

from tests.simulator.support import race_free_draws
from tools.fuzz import padded


@pytest.mark.slow
def test_generated_padded_indices_accepted_only_when_race_free(tmp_path):
    """The counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, padded.generated, 20261215, 400, "padded",
        lambda k: ((f"grid {grid}, block {block}", lambda g=grid, b=block: padded.run(k, g, b))
                   for grid, block in padded.launches(k)))
    print(f"\npadded draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 100 and launches >= 150
