"""Generated row walks: a thread writes the first element of its row and then walks the rest
(``gpu_native/check/radix.py``: a sum bounded in one store, ``x + 1 < w``, whose digits the
other store does not have).

:func:`generated` draws a kernel ``k(out, n)`` whose thread ``y`` writes ``out[y * S + F]``
and then ``out[y * S + x]`` for ``x`` in ``range(A, B)`` (or the loop first, then the single
store).  The stride, the start and the stop of the walk and the single store's offset are
drawn from values that keep the rows apart (``S = n``, ``range(1, n)``, ``F = 0``) and near
misses that do not (``range(1, n + 1)``, ``range(0, n)`` beside ``F = 0`` in a stride ``n -
1``, ``F = n``); whatever the checker accepts must be race-free for every ``n`` and launch
shape its checks let through (the launches of :func:`tools.fuzz.guarded.launches`).
``tests/check/test_row_walks.py`` runs a few hundred draws; ``python3 -m tools.fuzz_races
--family rowwalk`` runs more, and on a GPU.
"""

from __future__ import annotations

import random

ROWS = ["block_idx.x * block_dim.x + thread_idx.x", "i64(block_idx.x) * block_dim.x + thread_idx.x",
        "i64(block_idx.x) * block_dim.x + thread_idx.x", "thread_idx.x"]
STRIDES = ["n"] * 6 + ["n - 1", "n + 1", "2 * n"]
STARTS = ["1"] * 6 + ["0", "2"]
STOPS = ["n"] * 6 + ["n + 1", "n - 1", "2 * n"]
FIRSTS = ["0"] * 6 + ["n", "n - 1", "1"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    stride, first = r.choice(STRIDES), r.choice(FIRSTS)
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    y = {r.choice(ROWS)}"]
    indent = "    "
    if r.random() < 0.5:
        lines.append(f"    if y < {r.choice(['4', 'n', '3'])}:")
        indent += "    "
    single = [f"{indent}out[y * ({stride}) + {first}] = y + 1"]
    walk = [f"{indent}for x in range({r.choice(STARTS)}, {r.choice(STOPS)}):",
            f"{indent}    out[y * ({stride}) + x] = x + 100"]
    lines += single + walk if r.random() < 0.7 else walk + single
    return "\n".join(lines) + "\n"
