"""The padding rule's fuzzer (``tools/fuzz/padded.py``): over a few hundred draws, the checker
accepts padded indices it can prove and refuses near misses, and no accepted kernel races on the
simulator's race detector, on any launch shape its asserts allow."""

from __future__ import annotations

from tests.simulator.support import generated_draws
from tools.fuzz import padded


def test_generated_padded_indices_accepted_only_when_race_free(tmp_path):
    """The counts are printed (``pytest -s``)."""
    accepted = refused = launches = 0
    for source, kernel in generated_draws(tmp_path, padded.generated, 20261215, 400, "padded"):
        if kernel is None:
            refused += 1
            continue
        accepted += 1
        for grid, block in padded.launches(kernel):
            errors = padded.run(kernel, grid, block)
            launches += 1
            assert errors.races == [], f"{source}\ngrid {grid}, block {block}: " \
                f"{errors.races[0]}"
    print(f"\npadded draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 100 and launches >= 150
