"""Generated while loops whose first test the facts before them decide
(``gpu_native/check/control.py``'s ``first_test_holds``): a barrier in such a loop orders the
stores before it with those after it only where the body surely runs once.

:func:`generated` draws a kernel ``k(out, n)``: every thread stores ``s[tid]``, a ``while`` loop
with a barrier in its body runs over a counter started from ``n`` or a constant (halved to 0,
doubled up to ``n``, counted down), and after it one thread stores another thread's element.
Under ``assert n >= A`` (or none) the loop may or may not surely run: ``d = n >> 1; while d >
0:`` needs ``n >= 2``; ``d = 1; while d < n:`` too; ``d = n - 3; while d > 0:`` needs ``n >= 4``.
Near misses: a smaller ``A``, a first test that needs more (``d > 1``), the barrier under a
condition in the body.  Whatever the checker accepts must be race-free for every ``n`` of
:data:`tools.fuzz.guarded.NS` (a failing assert stops the threads before they store).
``tests/fuzz/test_entries_fuzz.py`` runs a few hundred draws; ``python3 -m tools.fuzz_races
--family entries`` runs more, and on a GPU.  The kernels name the thread ``tid`` and their
array ``s``, so that the runner's copy-out (:func:`tools.fuzz.indices.with_copy_out`) applies.
"""

from __future__ import annotations

import random

from .indices import SHARED_SIZE

__all__ = ["generated"]

# (the counter's start, the loop's test, its step): each ends within n's range.
HEADS = [("n >> {s}", "d > {c}", "d >>= 1"),
         ("n // {k}", "d >= {c1}", "d //= 2"),
         ("{c1}", "d < n", "d *= 2"),
         ("{c1}", "n > d", "d += {c1}"),
         ("n - {k}", "d > {c}", "d -= 1"),
         ("n", "d >= {c1}", "d -= {k}")]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``."""
    block = r.choice([32, 64, 128])
    start, test, step = r.choice(HEADS)
    values = {"s": r.choice([0, 1, 1, 2]), "c": r.choice([0, 0, 1]), "k": r.choice([1, 2, 3]),
              "c1": r.choice([1, 1, 2])}
    least = r.choice([None, 0, 1, 2, 3, 4, 8])
    writer, element = r.choice([(0, 1), (1, 0), (0, 5), (block - 1, 0), (2, 2)])
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    assert block_dim.x == {block}"]
    if least is not None:
        lines.append(f"    assert n >= {least}")
    lines += ["    tid = thread_idx.x",
              f"    s = shared_array(i32, {SHARED_SIZE})",
              "    s[tid] = tid + 1",
              f"    d = {start.format(**values)}",
              f"    while {test.format(**values)}:"]
    if r.random() < 0.15:  # a barrier the body may skip: it orders nothing
        lines += ["        if d > 1:", "            sync_threads()"]
    else:
        lines.append("        sync_threads()")
    lines += [f"        {step.format(**values)}",
              f"    if tid == {writer}:",
              f"        s[{element}] = 100"]
    return "\n".join(lines) + "\n"
