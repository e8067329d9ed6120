"""The residue-column rule's fuzzer (``tools/fuzz/columns.py``): over a few hundred draws the
checker accepts a store ``s[q * K + pos]`` with a row ``q`` no index rule follows only where
``pos`` tells the block's threads apart below ``K`` (the thread's index, or a permutation of its
bits), and no accepted kernel races on the simulator's race detector, for any ``n`` and launch
shape its checks let through."""

from __future__ import annotations

import pytest

from tests.simulator.support import race_free_draws
from tools.fuzz import columns, guarded


@pytest.mark.slow
def test_generated_columns_accepted_only_when_race_free(tmp_path):
    """The counts are printed (``pytest -s``)."""
    accepted, refused, launches = race_free_draws(
        tmp_path, columns.generated, 20261207, 300, "columns", guarded.runs)
    print(f"\ncolumn draws: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 40 and launches >= 300
