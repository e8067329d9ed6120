"""The first-test rule's fuzzer (``tools/fuzz/entries.py``): over a few hundred draws the
checker accepts a barrier in a while loop as ordering the stores around it only where the facts
before the loop make its first test pass, and no accepted kernel races on the simulator's race
detector, for any ``n`` and launch shape its checks let through."""

from __future__ import annotations

import pytest

from tests.simulator.support import race_free_draws
from tools.fuzz import entries, guarded


@pytest.mark.slow
def test_generated_entry_tests_accepted_only_when_race_free(tmp_path):
    """The counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, entries.generated, 20261207, 300, "entries", guarded.runs)
    print(f"\nentry-test draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 40 and launches >= 200
