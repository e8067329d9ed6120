"""Generated pairs of stores that a condition orders (``gpu_native/check/apart.py``: an in-place
reverse, a butterfly), over launch values the proofs keep opaque (``m // 2``).

:func:`generated` draws a kernel ``k(out, n)`` whose thread, with flat index ``i``, writes
``out`` twice under one condition: ``out[i]`` and ``out[m - 1 - i]`` under ``if i < m // 2:``
(``m`` is ``n`` widened to i64, so that ``m - 1 - i`` cannot wrap), ``out[i + h]`` under ``if i <
h:``, and their neighbours.  The halves, conditions and second indices are drawn from values
that keep the stores apart and near misses that do not (``i < m // 2 + 1``, ``i <= h``, ``out[i
+ h - 1]``, ``h = m - m // 2`` beside ``out[m - 1 - i]``); whatever the checker accepts must be
race-free for every ``n`` and launch shape its checks let through (the launches of
:func:`tools.fuzz.guarded.launches`).  ``tests/check/test_symmetric_pairs.py`` runs a few hundred
draws; ``python3 -m tools.fuzz_races --family mirrored`` runs more, and on a GPU.
"""

from __future__ import annotations

import random

THREADS = ["i64(block_idx.x) * block_dim.x + thread_idx.x", "block_idx.x * block_dim.x + thread_idx.x", "thread_idx.x"]
HALVES = ["m // 2", "m // 2", "(m + 1) // 2", "m // 2 + 1", "m - m // 2", "m // 3", "m // 2 - 1",
          "m // 4"]
CONDITIONS = ["i < h", "i < h", "i < h", "i <= h", "i < h + 1", "h > i", "i < m - 1 - i",
              "i < m - i", "i + 1 < m - i", "i > h", "i < m - h", "i < h and i < m"]
FIRSTS = ["i", "i", "i", "i + 1", "m - 1 - i"]
SECONDS = ["i + h", "m - 1 - i", "m - i - 1", "m - i", "m - 2 - i", "i + h - 1", "h - 1 - i",
           "2 * h - 1 - i", "i + h + 1", "m - 1 - 2 * i", "m - h - 1 - i", "i"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    i = {r.choice(THREADS)}",
             "    m = i64(n)",
             f"    h = {r.choice(HALVES)}",
             f"    if {r.choice(CONDITIONS)}:"]
    stores = [(r.choice(FIRSTS), "thread_idx.x + 1"), (r.choice(SECONDS), "2")]
    if r.random() < 0.3:
        stores.reverse()
    if r.random() < 0.3:  # a swap, as a reverse writes it: both stores in one statement
        (x1, _), (x2, _) = stores
        lines.append(f"        out[{x1}], out[{x2}] = out[{x2}], out[{x1}] + 1")
    else:
        lines += [f"        out[{x}] = {v}" for x, v in stores]
    return "\n".join(lines) + "\n"
