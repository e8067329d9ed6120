"""The last ticket (the gallery's rule R7, ``gpu_native/check/lastblock.py``): the block whose
``fetch_add`` on a global counter returns ``grid_dim.x - 1`` is the only one where a flag in
shared memory, written by its thread 0 and read after ``sync_threads()``, is nonzero; its thread
0 may write ``out[0]`` and reset the counter without ``unsafe``.  Every near miss stays refused,
with the reason, and the simulator's race detector agrees with the accepted kernel and with a
refused one run under ``unsafe``."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gpu_native import ir
from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

HEAD = """\
from gpu_native import (gpu_device, gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut,
                        FlatLayout1D, f32, i32, u32, u64, block_idx, grid_dim, shared_array,
                        sync_threads, thread_idx, unsafe)
"""

# The gallery's last_block_reduce, reduced to what the rule reads: every block adds its share
# into `partial`, draws a ticket, and the block that draws the last adds the partial sums.
LAST = HEAD + """
@gpu_kernel(Kernel1D)
def last(x: CUDASlice[f32], partial: CUDASliceMut[f32], ticket: CUDASliceMut[u32],
         out: CUDASliceMut[f32]):
    is_last = shared_array(i32, (1,))
    tid = thread_idx.x
    if tid == 0:
        partial.atomic_ref(block_idx.x).store(x[block_idx.x])
        drawn = ticket.atomic_ref(0).fetch_add(1)
        is_last[0] = 1 if drawn == grid_dim.x - 1 else 0
    sync_threads()
    if is_last[0] == 1:
        if tid == 0:
            total = f32(0.0)
            for b in range(grid_dim.x):
                total += partial.atomic_ref(b).load()
            out[0] = total
            ticket[0] = 0
"""


def transpile(source: str):
    return transpile_module(textwrap.dedent(source), "last.py", "last")


def refusal(source: str) -> str:
    with pytest.raises(TranspileError) as info:
        transpile(source)
    return str(info.value)


def change(old: str, new: str, source: str = LAST) -> str:
    assert old in source, old
    return source.replace(old, new)


def stores(source: str) -> dict[str, ir.Store]:
    (checked,) = transpile(source).checked
    body = checked.specializations[0].body
    return {n.array.var.name: n for n in ir.walk(body) if isinstance(n, ir.Store)}


# ---- accepted ---------------------------------------------------------------------------------


def test_the_last_block_writes_out_and_resets_the_counter_without_unsafe():
    got = stores(LAST)
    for name in ("out", "ticket"):
        assert got[name].unique == "single"
        assert got[name].proof == ("unique: the flag 'is_last' (line 15) selects one block of "
                                   "the grid, the one whose atomic ticket won (R7, the last "
                                   "ticket)")


@pytest.mark.parametrize("old, new", [
    ("if is_last[0] == 1:", "if is_last[0] != 0:"),
    ("if is_last[0] == 1:", "if not is_last[0] == 0:"),
    ("1 if drawn == grid_dim.x - 1 else 0", "7 if drawn + 1 == grid_dim.x else 0"),
    ("thread_idx.x\n", "thread_idx.x\n    other = 3\n"),
])
def test_the_forms_the_rule_reads(old, new):
    assert stores(change(old, new))["out"].unique == "single"


def test_the_winner_itself_needs_no_flag():
    # `drawn == grid_dim.x - 1` pins every coordinate in the thread that draws.
    got = stores(HEAD + """
@gpu_kernel(Kernel1D)
def direct(ticket: CUDASliceMut[u32], out: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        drawn = ticket.atomic_ref(0).fetch_add(1)
        if drawn == grid_dim.x - 1:
            out[0] = f32(block_idx.x)
            ticket[0] = 0
""")
    assert got["out"].unique == got["ticket"].unique == "single"
    assert got["out"].proof.startswith("unique: one thread of the grid draws from 'ticket' "
                                       "(line 8) the value it is compared with")


def test_a_first_thread_with_a_counter_that_cannot_wrap():
    # No reset: every thread may draw; a u64 counter does not wrap in a launch.
    got = stores(HEAD + """
@gpu_kernel(Kernel1D)
def first(count: CUDASliceMut[u64], out: CUDASliceMut[f32]):
    if count.atomic_ref(0).fetch_add(1) == 0:
        out[0] = f32(block_idx.x)
""")
    assert got["out"].unique == "single"


# ---- refused ----------------------------------------------------------------------------------

REFUSED = "store into 'out' is left to one thread by a ticket's value, but"


@pytest.mark.parametrize("old, new, why", [
    # The counter written elsewhere: before the draws, or by the winner outside its condition.
    ("        drawn = ticket", "        ticket[0] = 0\n        drawn = ticket",
     "store into 'ticket' through an index that is not provably unique"),
    ("    sync_threads()\n", "    sync_threads()\n    if tid == 0:\n        ticket[0] = 0\n",
     "store into 'ticket' through an index that is not provably unique"),
    ("            ticket[0] = 0\n", "            with unsafe():\n                ticket[0] = 0\n",
     "the counter 'ticket' (drawn at line 17) is written elsewhere (line 27)"),
    ("ticket[0] = 0", "ticket[0] = 1", "is written elsewhere"),
    ("ticket[0] = 0", "ticket.atomic_ref(0).exchange(0)", "is changed by an atomic exchange"),
    ("ticket[0] = 0", "ticket.atomic_ref(0).fetch_sub(1)", "is changed by an atomic sub"),
    ("ticket[0] = 0", "bump(ticket)", "is passed to a device function"),
    # A second draw, a larger step, another winning value.
    ("    sync_threads()\n",
     "    if tid == 0:\n        ticket.atomic_ref(0).fetch_add(1)\n    sync_threads()\n",
     "is reset at line 28 and drawn again at line 20"),
    ("    sync_threads()\n", "    ticket.atomic_ref(0).fetch_add(1)\n    sync_threads()\n",
     "is u32 and its draws may wrap around in one launch"),
    ("fetch_add(1)", "fetch_add(2)", "adds more than 1"),
    ("drawn == grid_dim.x - 1", "drawn == 0", "the winning value is not the last one"),
    ("drawn == grid_dim.x - 1", "drawn == grid_dim.x - 2", "is not the last one"),
    # The draw in a loop, or by every thread.
    ("        drawn = ticket.atomic_ref(0).fetch_add(1)\n        is_last",
     "        for k in range(2):\n            drawn = ticket.atomic_ref(0).fetch_add(1)\n"
     "            is_last", "not once in every block"),
    ("    if tid == 0:\n        partial.atomic_ref(block_idx.x).store(x[block_idx.x])\n"
     "        drawn = ticket.atomic_ref(0).fetch_add(1)\n",
     "    drawn = ticket.atomic_ref(0).fetch_add(1)\n"
     "    if tid == 0:\n        partial.atomic_ref(block_idx.x).store(x[block_idx.x])\n",
     "not drawn just before it by the same thread"),
    # The flag written elsewhere, unwritten in some block, or read without the barrier.
    ("        is_last[0] = 1 if", "        is_last[0] = 0\n        is_last[0] = 1 if",
     "the flag 'is_last' (read at line 21) is written elsewhere (lines 18, 19)"),
    ("    sync_threads()\n", "    if tid == 0:\n        is_last[0] = 0\n    sync_threads()\n",
     "is written elsewhere"),
    ("    sync_threads()\n", "    sync_threads()\n    is_last.atomic_ref(0).store(1)\n",
     "is changed by an atomic store"),
    ("    sync_threads()\n", "", "no sync_threads() between that store and this read"),
    ("    sync_threads()\n", "    if x[0] > 0.0:\n        sync_threads()\n",
     "no sync_threads() between"),
    ("    if tid == 0:\n        partial", "    if tid == 0 and x[0] > 0.0:\n        partial",
     "not once in every block"),
    ("    if tid == 0:\n        partial", "    if tid == 1:\n        partial",
     "not once in every block"),
    ("    tid = thread_idx.x\n", "    tid = thread_idx.x\n    if block_idx.x == 3:\n"
     "        return\n", "after a return"),
    # The flag's value: an equality with a launch-uniform value, nonzero exactly when it holds.
    ("1 if drawn == grid_dim.x - 1 else 0", "0 if drawn == grid_dim.x - 1 else 1",
     "not `1 if drawn == C else 0`"),
    ("1 if drawn == grid_dim.x - 1 else 0", "1 if drawn >= grid_dim.x - 1 else 0",
     "not `1 if drawn == C else 0`"),
    ("1 if drawn == grid_dim.x - 1 else 0", "1 if drawn == block_idx.x else 0",
     "not `1 if drawn == C else 0`"),
    ("1 if drawn == grid_dim.x - 1 else 0", "i32(block_idx.x == 0)",
     "not `1 if drawn == C else 0`"),
])
def test_near_misses_stay_refused_with_the_reason(old, new, why):
    source = change("@gpu_kernel", "@gpu_device\ndef bump(c: CUDASliceMut[u32]):\n"
                    "    c.atomic_ref(0).fetch_add(1)\n\n\n@gpu_kernel")
    source = change(old, new, source)
    text = refusal(source)
    assert why in text, text


def test_every_thread_of_the_last_block_writing_out_is_refused():
    text = refusal(change("            out[0] = total\n", "").replace(
        "    if is_last[0] == 1:\n", "    if is_last[0] == 1:\n        out[0] = f32(tid)\n"))
    assert "store into 'out' through an index that is not provably unique" in text


def test_a_flag_of_two_elements_selects_no_block():
    text = refusal(change("shared_array(i32, (1,))", "shared_array(i32, (2,))"))
    assert "store into 'out' through an index that is not provably unique" in text


def test_a_flag_fed_by_a_shared_counter_selects_no_block():
    # Each block draws from its own counter: every block may draw the "last" value.
    source = change("        drawn = ticket.atomic_ref(0).fetch_add(1)\n",
                    "        drawn = mine.atomic_ref(0).fetch_add(1)\n")
    source = change("    tid = thread_idx.x\n",
                    "    tid = thread_idx.x\n    mine = shared_array(u32, (1,))\n", source)
    assert "from a ticket of the shared array 'mine'" in refusal(source)


@pytest.mark.parametrize("ty, why", [
    ("u32", "is u32 and its draws may wrap around in one launch"),
    ("u64", "its draw may run more than once per block"),
])
def test_a_reset_after_every_thread_draws_is_refused(ty, why):
    # Before the rule, `d == 0` pinned every thread whatever changed the counter: the winner's
    # reset let the next draw return 0 again (the race detector sees it, below).
    text = refusal(HEAD + f"""
@gpu_kernel(Kernel1D)
def every(out: CUDASliceMut[f32], count: CUDASliceMut[{ty}]):
    d = count.atomic_ref(0).fetch_add(1)
    if d == 0:
        out[0] = f32(block_idx.x)
        count[0] = 0
""")
    assert REFUSED in text and why in text, text


def test_a_two_dimensional_grid_may_not_reset():
    text = refusal(HEAD + """
@gpu_kernel(Kernel2D)
def grid2(ticket: CUDASliceMut[u32], out: CUDASliceMut[f32]):
    if thread_idx.x == 0 and thread_idx.y == 0:
        drawn = ticket.atomic_ref(0).fetch_add(1)
        if drawn == grid_dim.x - 1:
            out[0] = 1.0
            ticket[0] = 0
""")
    assert "may wrap around" in text or "more than once per block" in text, text


# ---- the race detector agrees -------------------------------------------------------------------


def _run(source: str, blocks: int, ticket: np.ndarray, threads: int = 32):
    from tools.fuzz.indices import run_sim

    (checked,) = transpile(source).checked
    kernel = checked.specializations[0]
    x = np.arange(1, blocks + 1, dtype=np.float32)
    partial = np.full(blocks, np.nan, np.float32)
    out = np.full(1, np.nan, np.float32)
    errors = run_sim(kernel, blocks, threads, x, partial, ticket, out)
    assert not errors.fails
    return errors, out


def test_the_race_detector_sees_no_race_in_the_last_block():
    ticket = np.zeros(1, np.uint32)
    for _ in range(2):  # the reset leaves the counter ready for the next launch
        errors, out = _run(LAST, 7, ticket)
        assert {2, 3} <= errors.watched  # ticket and out, by parameter position
        assert errors.races == []
        assert out[0] == 28.0 and ticket[0] == 0


def test_the_race_detector_sees_the_race_a_refused_variant_allows():
    # The control: the first ticket wins and resets, so the next block wins too (refused
    # above; run here under `unsafe`), and two blocks write out[0].
    racy = change("drawn == grid_dim.x - 1", "drawn == 0").replace(
        "            out[0] = total\n            ticket[0] = 0\n",
        "            with unsafe():\n                out[0] = total\n                ticket[0] = 0\n")
    errors, _ = _run(racy, 7, np.zeros(1, np.uint32))
    assert errors.races
