"""``python3 -m tools.fuzz_races``: generated store indices (tools/fuzz/indices.py), the
checker's verdict, the simulator's race detector and the GPU against the simulator.

Without a GPU the comparison half runs through the runtime launcher on the simulator backend
(the same code path as on the GPU); ``gpu``-marked, on the GPU.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tools import fuzz_races
from tools.fuzz import guarded, indices

# Seeds whose kernels the checker accepts: 4 stores into shared memory, 37 into global memory;
# the guarded family's seed 2 takes a bound ``n`` too.
SHARED_SEED, GLOBAL_SEED, GUARDED_SEED = 4, 37, 2


def test_the_seeds_draw_what_the_tests_assume():
    shared = indices.generated(random.Random(SHARED_SEED))
    plain = indices.generated(random.Random(GLOBAL_SEED))
    assert indices.uses_shared(shared) and not indices.uses_shared(plain)
    assert fuzz_races._transpile(shared, "a") is not None
    assert fuzz_races._transpile(plain, "b") is not None
    assert fuzz_races._transpile(indices.with_copy_out(shared), "c") is not None
    assert fuzz_races._transpile(guarded.generated(random.Random(GUARDED_SEED)), "d") is not None


@pytest.mark.parametrize("seed", [SHARED_SEED, GLOBAL_SEED])
def test_the_launcher_half_agrees_with_the_simulator(tmp_path, monkeypatch, seed):
    """The comparison half (poisoned ``out``, the copy-out of shared memory) run through the
    runtime launcher on the simulator: every launch agrees, and something was compared."""
    monkeypatch.syspath_prepend(str(tmp_path))
    source = indices.generated(random.Random(seed))
    item = fuzz_races.run_one(seed, source, "sim", False, str(tmp_path))
    assert item["failure"] is None, item["failure"]
    assert item["accepted"] and item["gpu_launches"] > 0
    assert item["mismatches"] == [] and item["races"] == [] and item["error_disagreements"] == []
    assert item["compared"] >= item["gpu_launches"] * 32


def test_the_guarded_family_runs_each_n_through_the_launcher(tmp_path, monkeypatch):
    """A kernel ``k(out, n)``: every ``n`` the launcher's checks let through runs on both halves,
    and the launcher half passes ``n`` as the simulator half does."""
    monkeypatch.syspath_prepend(str(tmp_path))
    source = guarded.generated(random.Random(GUARDED_SEED))
    item = fuzz_races.run_one(GUARDED_SEED, source, "sim", False, str(tmp_path), "guarded")
    assert item["failure"] is None, item["failure"]
    kernel = fuzz_races._transpile(source, "e")
    assert item["gpu_launches"] == len(list(guarded.launches(kernel))) > len(guarded.NS)
    assert item["mismatches"] == [] and item["races"] == [] and item["error_disagreements"] == []
    assert item["compared"] >= item["gpu_launches"] * 32


def test_compare_finds_one_flipped_bit_and_skips_uninitialised_shared_memory():
    sim = np.full(64, indices.POISON, np.int32)
    sim[:8] = np.arange(1, 9)
    sim[8:16] = indices.SHARED_POISON
    gpu = sim.copy()
    gpu[8:16] = 12345  # the GPU's uninitialised shared memory
    assert indices.compare(sim, gpu, shared=True) == (56, [])
    assert indices.compare(sim, gpu, shared=False)[1] == list(range(8, 16))
    gpu[3] ^= 1
    gpu[40] = 0  # an element the simulator left poisoned
    assert indices.compare(sim, gpu, shared=True)[1] == [3, 40]


@pytest.mark.slow
def test_simulator_run_writes_the_summary(tmp_path, capsys):
    out = tmp_path / "races.json"
    assert fuzz_races.main(["--seeds", "60", "--backend", "sim", "--jobs", "1",
                            "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["generated"] + summary["duplicates_dropped"] == 60
    assert summary["accepted"] + summary["refused"] == summary["generated"]
    assert summary["accepted"] > 5 and summary["refused"] > 20 and summary["launches"] > 0
    assert summary["race_reports"] == summary["mismatches"] == summary["failures"] == 0
    assert summary["gpu_launches"] == 0
    assert "race reports" in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.parametrize("family, seed", [("indices", SHARED_SEED), ("indices", GLOBAL_SEED),
                                          ("guarded", GUARDED_SEED)])
def test_the_gpu_agrees_with_the_simulator(tmp_path, monkeypatch, family, seed):
    monkeypatch.syspath_prepend(str(tmp_path))
    source = fuzz_races.FAMILIES[family].generated(random.Random(seed))
    item = fuzz_races.run_one(seed, source, "cuda", False, str(tmp_path), family)
    assert item["failure"] is None, item["failure"]
    assert item["gpu_launches"] > 0 and item["compared"] > 0
    assert item["mismatches"] == [] and item["races"] == [] and item["error_disagreements"] == []


def test_help_lists_every_family(capsys):
    with pytest.raises(SystemExit) as done:
        fuzz_races.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert all(family in text for family in fuzz_races.FAMILIES)


def test_the_cuda_backend_without_a_gpu_is_a_usage_error(monkeypatch, capsys):
    from gpu_native.runtime import driver

    monkeypatch.setattr(driver, "available", lambda: False)
    with pytest.raises(SystemExit) as done:
        fuzz_races.main(["--seeds", "1"])
    assert done.value.code == 2
    assert "--backend sim" in capsys.readouterr().err
