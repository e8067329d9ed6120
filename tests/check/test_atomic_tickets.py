"""Atomic tickets (the gallery's rule R7): ``slot = count.atomic_ref(0).fetch_add(1)`` returns
another value to every thread of the launch where nothing else in the kernel changes ``count``,
so ``out[slot] = ...`` is race-free without ``unsafe``.  Anything else that changes the counter (a
store, another kind of atomic, a device function it is passed to) voids the rule, and the store
is refused with the reason."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

HEAD = """\
from gpu_native import (gpu_device, gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut,
                        CUDASliceMut2D, FlatLayout1D, FlatLayout2D, UniqueId, f32, i32, u32,
                        u64, block_idx, thread_idx)
"""

COMPACT = HEAD + """
@gpu_kernel(Kernel1D)
def compact(x: CUDASlice[f32], out: CUDASliceMut[f32], count: CUDASliceMut[u32], cut: f32):
    i: UniqueId = FlatLayout1D.uid()
    if i < len(x) and x[i] > cut:
        slot = count.atomic_ref(0).fetch_add(1)
        out[slot] = x[i]
"""


def transpile(source: str):
    return transpile_module(textwrap.dedent(source), "tickets.py", "tickets")


def refusal(source: str) -> str:
    with pytest.raises(TranspileError) as info:
        transpile(source)
    return str(info.value)


def test_a_ticket_index_is_unique_in_the_grid():
    (kernel,) = transpile(COMPACT).kernels
    assert kernel.name == "compact"


def test_a_ticket_of_a_two_dimensional_launch_with_a_step_of_three():
    # Unique over every coordinate of the grid, whatever the launch's dimensions.
    transpile(HEAD + """
@gpu_kernel(Kernel2D)
def pairs(out: CUDASliceMut[u64], count: CUDASliceMut[u64]):
    r, c = FlatLayout2D.uid()
    slot = count.atomic_ref(0).fetch_add(u64(3))
    out[slot] = u64(r)
""")


@pytest.mark.parametrize("change, what", [
    ("    if i == 0:\n        count[0] = 0\n", "a store does at line"),
    ("    count.atomic_ref(0).exchange(7)\n", "an atomic exchange does at line"),
    ("    count.atomic_ref(0).fetch_sub(1)\n", "an atomic sub does at line"),
    ("    bump(count)\n", "a device function call it is passed to does at line"),
])
def test_anything_else_that_changes_the_counter_voids_the_ticket(change, what):
    # Before or after the draw: the whole kernel is read first.
    source = COMPACT.replace("@gpu_kernel", "@gpu_device\ndef bump(c: CUDASliceMut[u32]):\n"
                             "    c.atomic_ref(1).fetch_add(1)\n\n\n@gpu_kernel")
    source = source.replace("    if i < len(x)", change + "    if i < len(x)")
    text = refusal(source)
    assert "store into 'out' through a value drawn from 'count' at line" in text
    assert what in text
    assert "keep the counter for the draws alone" in text


@pytest.mark.parametrize("draw", [
    "count.atomic_ref(i % 2).fetch_add(1)",   # two counters: their draws can meet
    "count.atomic_ref(0).fetch_add(0)",        # no step: every thread may get the same value
    "count.atomic_ref(0).exchange(1)",         # not an addition
    "count.atomic_ref(0).load()",
])
def test_what_is_not_a_ticket_is_not_unique(draw):
    text = refusal(COMPACT.replace("count.atomic_ref(0).fetch_add(1)", draw))
    assert "store into 'out'" in text and "not provably unique" in text


def test_a_ticket_store_and_a_store_through_another_index_must_be_proven_together():
    # The rule is for one index: another store into `out` at i is refused as before.
    text = refusal(COMPACT.replace("        out[slot] = x[i]\n",
                                   "        out[slot] = x[i]\n        out[i] = x[i]\n"))
    assert "'out'" in text


def test_the_kept_elements_arrive_once_each(backend, kernel_module, rng):
    m = kernel_module(COMPACT)
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    keep = np.sort(x[x > 0.25])
    out = gn.to_device(np.full(n, np.nan, np.float32))
    count = gn.to_device(np.zeros(1, np.uint32))
    m.compact.launch(gn.GridDim1D((n + 127) // 128), gn.BlockDim1D(128), 0,
                     gn.DEFAULT_STREAM)(gn.to_device(x), out, count, np.float32(0.25))
    got = out.to_host()
    assert int(count.to_host()[0]) == len(keep)
    np.testing.assert_array_equal(np.sort(got[:len(keep)]), keep)
    assert np.isnan(got[len(keep):]).all()


def _race_reports(source: str, x: np.ndarray, count: np.ndarray) -> list[str]:
    """Run the kernel ``compact`` of ``source`` on the simulator with its race detector
    watching ``out`` (by default it shadows only arrays a launch reads and writes)."""
    from tools.fuzz.indices import run_sim

    (checked,) = transpile(source).checked
    kernel = checked.specializations[0]
    out = np.full(len(x), np.nan, np.float32)
    errors = run_sim(kernel, (len(x) + 63) // 64, 64, x, out, count, np.float32(0.0))
    assert not errors.fails
    return errors.races


def test_the_race_detector_sees_no_race_in_a_ticket_store(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    assert _race_reports(COMPACT, x, np.zeros(1, np.uint32)) == []


def test_the_race_detector_sees_the_race_that_a_voided_ticket_would_allow(rng):
    # The control: with the counter reset between the draws (inside `unsafe`, which the rule
    # refuses to prove), two threads can draw the same slot, and the detector says so.
    racy = COMPACT.replace("        out[slot] = x[i]\n",
                           "        with unsafe():\n            out[slot] = x[i]\n"
                           "            count[0] = 0\n").replace(
        "u64, block_idx", "u64, unsafe, block_idx")
    x = np.abs(rng.standard_normal(1000)).astype(np.float32) + 1
    assert _race_reports(racy, x, np.zeros(1, np.uint32))
