"""Generated pairs of stores told apart by their index ranges (``gpu_native/check/pairproofs.py``
and ``storepairs.spans_apart``: two stores whose values of an index never meet write different
elements).

:func:`generated` draws a kernel ``k(out, n)`` with two stores into ``out``: one under a
condition on the thread's flat index ``i`` (``if i == 0: out[0] = ...``, ``i < c``, ``i == n``),
the other under a second condition, as an ``elif`` or an ``if`` of its own, through ``i``
shifted by a constant (``out[i + 1]``, ``out[i - 2]``).  Both sides come from values that keep
the ranges apart (``i > 0`` beside ``out[0]``, ``out[i + 1]`` beside ``out[0]``) and near misses
that do not (``out[1]`` beside ``elif i < n: out[i]``, ``i >= 0``); whatever the checker accepts
must be race-free for every ``n`` and launch shape its checks let through (the launches of
:func:`tools.fuzz.guarded.launches`).  ``tests/check/test_index_ranges.py`` runs a few hundred
draws; ``python3 -m tools.fuzz_races --family ranges`` runs more, and on a GPU.
"""

from __future__ import annotations

import random

FIRST_CONDITIONS = ["i == 0", "i == 0", "i == {c}", "i < {c}", "i == n", "i == n - 1"]
FIRST_INDICES = ["0", "0", "{c}", "i", "n", "n - 1"]
SECOND_CONDITIONS = ["i < n", "i > 0 and i < n", "i > {c} and i < n", "i != 0 and i < n",
                     "i >= {c} and i < n", "i < n - 1", "i > 1 and i < n", "0 < i and i < n"]
SECOND_INDICES = ["i", "i", "i + 1", "i + {k}", "i - 1", "i - {k}"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    c, k = r.choice([0, 1, 2, 5]), r.choice([1, 2, 3])
    first = r.choice(FIRST_CONDITIONS).format(c=c)
    first_index = r.choice(FIRST_INDICES).format(c=c)
    second = r.choice(SECOND_CONDITIONS).format(c=c)
    second_index = r.choice(SECOND_INDICES).format(k=k)
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             "    i = block_idx.x * block_dim.x + thread_idx.x"]
    stores = [(first, first_index, "thread_idx.x + 1"), (second, second_index, "2")]
    if r.random() < 0.5:
        stores.reverse()
    (c1, x1, v1), (c2, x2, v2) = stores
    lines += [f"    if {c1}:", f"        out[{x1}] = {v1}"]
    if r.random() < 0.5:
        lines += [f"    elif {c2}:", f"        out[{x2}] = {v2}"]
    else:
        lines += [f"    if {c2}:", f"        out[{x2}] = {v2}"]
    return "\n".join(lines) + "\n"
