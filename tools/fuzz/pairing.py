"""Generated pairs of stores that an XOR pairs up, or that one round of a loop keeps apart
(``gpu_native/check/xorpairs.py``, ``gpu_native/check/phases.py``'s ``round_digits``).

:func:`generated` draws a kernel ``k(out, n)`` of one of three kinds:

* a global bitonic step: thread ``i`` writes ``out[i]`` and ``out[i ^ n]`` under ``if (i ^ n) >
  i:``, and near misses (``>=``, no order, the order around one store, two orders, a partner
  of the thread's own, ``i + n``, a third store, the block's index for ``i``);
* a bitonic network in a block: ``s[tid]`` and ``s[tid ^ j]`` with ``j`` halved by a while loop
  (or computed from a ``range()`` counter), a barrier closing each round or not;
* an odd-even transposition in a block: ``s[2 * tid + (phase & 1)]`` and the next element (or
  ``s[tid]``, ``s[tid + 1]`` under ``tid % 2 == phase % 2``), the rounds parted by a barrier at
  the end or the start of the round, or not (none, one under a condition, one a ``continue``
  skips, one between the stores), over launch-uniform bounds (bounds of the thread's own,
  with a barrier in the loop, are a barrier in divergent code, which the simulator reports
  before any race).

Whatever the checker accepts must be race-free for every ``n`` and launch shape its checks let
through (:func:`tools.fuzz.guarded.launches`).  ``tests/check/test_pairing_rounds.py`` runs a few
hundred draws; ``python3 -m tools.fuzz_races --family pairing`` runs more, and on a GPU.  The
shared-array kernels name the thread ``tid`` and their array ``s``, so that the runner's copy-out
(:func:`tools.fuzz.indices.with_copy_out`) applies.
"""

from __future__ import annotations

import random

from .indices import SHARED_SIZE

GLOBAL_THREADS = ["block_idx.x * block_dim.x + thread_idx.x",
                  "i64(block_idx.x) * block_dim.x + thread_idx.x", "thread_idx.x"]
PARTNERS = ["i ^ n", "i ^ n", "i ^ n", "n ^ i", "i ^ (n + 1)", "i ^ 3", "i ^ (i & 3)",
            "i ^ (1 + (i & 1))", "i + n"]
ORDERS = ["p > i", "p > i", "i < p", "p < i", "p >= i", "p != i", "p > i + 1", "True"]
SECONDS = ["out[p] = 2", "out[p] = 2", "out[p] = 2", "out[p] = 2", "out[i + 1] = 2",
           "out[p] = 2\n            out[i + 1] = 3"]

BLOCKS = [32, 64, 128]
XORS = ["tid ^ j", "tid ^ j", "tid ^ j", "j ^ tid", "tid ^ (j + 1)", "tid ^ (tid & 1)"]
BLOCK_ORDERS = ["q > tid", "q > tid", "tid < q", "q < tid", "q >= tid", "True"]

ROUNDS = ["range({r})", "range({r})", "range(n)", "range(1, {r})"]
PAIRS = ["2 * tid + (phase & 1)", "2 * tid + (phase & 1)", "2 * tid + phase % 2",
         "2 * tid + (phase & 1) + 1", "2 * tid"]
ENDS = ["bottom", "bottom", "bottom", "top", "none", "under_if", "continue", "between"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    kind = r.choice(["global", "global", "block_xor", "rounds", "rounds"])
    if kind == "global":
        return _global(r)
    if kind == "block_xor":
        return _block_xor(r)
    return _rounds(r)


def _global(r: random.Random) -> str:
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    i = {r.choice(GLOBAL_THREADS)}",
             f"    p = {r.choice(PARTNERS)}",
             "    if p < 4096 and i < 4096 and p >= 0:"]
    order = r.choice(ORDERS)
    first, second = "out[i] = thread_idx.x + 1", r.choice(SECONDS)
    where = r.choice(["both", "both", "both", "first", "second"])
    if where == "both":
        lines += [f"        if {order}:", f"            {first}", f"            {second}"]
    else:  # the order around one store only (or the other around the other)
        other = r.choice(["True", "p < i"])
        lines += [f"        if {order if where == 'first' else other}:", f"            {first}",
                  f"        if {other if where == 'first' else order}:",
                  f"            {second}"]
    return "\n".join(lines) + "\n"


def _block_xor(r: random.Random) -> str:
    b = r.choice(BLOCKS)
    top = r.choice([b // 2, b // 2, b // 4, 3])
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    assert block_dim.x == {b}",
             "    tid = thread_idx.x",
             f"    s = shared_array(i32, {SHARED_SIZE})"]
    counted = r.random() < 0.4  # j from a range() counter, not halved by a while loop
    if counted:
        lines += [f"    for e in range({top.bit_length()}):", f"        j = {top} >> e"]
    else:
        lines += [f"    j = {top}", "    while j > 0:"]
    lines += [f"        q = {r.choice(XORS)}",
              f"        if {r.choice(BLOCK_ORDERS)}:",
              "            s[tid] = tid + 1",
              "            s[q] = 2"]
    if r.random() < 0.8:
        lines.append("        sync_threads()")
    if not counted:
        lines.append("        j //= 2")
    return "\n".join(lines) + "\n"


def _rounds(r: random.Random) -> str:
    b = r.choice(BLOCKS)
    rounds = r.choice(ROUNDS).format(r=r.choice([2, 3, 8]))
    end = r.choice(ENDS)
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    assert block_dim.x == {b}",
             "    tid = thread_idx.x",
             f"    s = shared_array(i32, {SHARED_SIZE})",
             f"    for phase in {rounds}:"]
    if end == "top":
        lines.append("        sync_threads()")
    if r.random() < 0.3:  # one element per thread, the parity chosen by the round
        parity = r.choice(["phase % 2", "phase % 2", "(phase + tid) % 2", "(phase + 1) % 2"])
        condition = f"        if tid % 2 == {parity} and tid + 1 < {b}:"
        first, second = "            s[tid] = tid + 1", "            s[tid + 1] = 2"
    else:
        lines.append(f"        x = {r.choice(PAIRS)}")
        condition = f"        if x + 1 < {2 * b}:"
        first, second = "            s[x] = tid + 1", "            s[x + 1] = 2"
    lines += [condition, first]
    if end == "between":  # a barrier between the two stores, each under the condition
        lines += ["        sync_threads()", condition]
    lines.append(second)
    if end == "bottom":
        lines.append("        sync_threads()")
    elif end == "under_if":
        lines += ["        if phase % 2 == 1:", "            sync_threads()"]
    elif end == "continue":
        lines += ["        if phase % 2 == 0:", "            continue", "        sync_threads()"]
    return "\n".join(lines) + "\n"
