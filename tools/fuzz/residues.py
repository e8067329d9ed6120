"""Generated stores that a condition puts in one residue class (``gpu_native/check/residues.py``:
a pairwise swap under ``if i % 2 == 0:``).

:func:`generated` draws a kernel ``k(out, n)`` whose thread, with flat index ``i``, writes
``out`` at two or three offsets from ``i`` under a condition on ``i`` modulo a power of two
(``i % 4 == 1``, ``(i & 1) == 0``, ``i % 2 == p`` with ``p`` a parameter's value).  The offsets
and conditions are drawn from classes that keep the stores apart and near misses that do not:
offsets a multiple of the modulus apart, a modulus of 3, a condition that is not an equality
(``i % 2 < 1``), a class chosen by a loop counter (``for p in range(2): if i % 2 == p:``) or by
the thread (``i % 2 == i // 64 % 2``).  Whatever the checker accepts must be race-free for
every ``n`` and launch shape its checks let through (the launches of
:func:`tools.fuzz.guarded.launches`).  ``tests/check/test_residue_classes.py`` runs a few
hundred draws; ``python3 -m tools.fuzz_races --family residues`` runs more, and on a GPU.
"""

from __future__ import annotations

import random

THREADS = ["block_idx.x * block_dim.x + thread_idx.x", "FlatLayout1D.uid()", "thread_idx.x",
           "2 * (block_idx.x * block_dim.x + thread_idx.x)"]
# (the condition, its modulus as far as the offsets go: 0 where no class is fixed)
CONDITIONS = [("i % 2 == 0", 2), ("i % 2 == 1", 2), ("(i & 1) == 0", 2), ("i % 4 == 1", 4),
              ("(i & 3) == 3", 4), ("i % 2 == n % 2", 2), ("i % 8 == 5", 8),
              ("i % 3 == 0", 3), ("i % 2 < 1", 0), ("i % 2 == i // 64 % 2", 0),
              ("i % 2 == p", 0), ("i % 4 != 0", 0)]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    condition, modulus = r.choice(CONDITIONS)
    count = r.choice([2, 2, 3])
    if modulus >= count and r.random() < 0.6:
        offsets = r.sample(range(modulus), count)  # distinct classes
    else:
        offsets = [r.randrange(-2, 6) for _ in range(count)]
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):",
             f"    i = {r.choice(THREADS)}"]
    indent = "    "
    if "p" in condition.split():
        lines.append("    for p in range(2):")
        indent += "    "
    low = -min(offsets)
    high = max(offsets)
    guard = f"i >= {low} and " if low > 0 else ""
    lines.append(f"{indent}if {condition} and {guard}i + {high} < n:")
    if count == 2 and r.random() < 0.3:  # a swap, both stores in one statement
        x1, x2 = (f"out[i + {k}]" for k in offsets)
        lines.append(f"{indent}    {x1}, {x2} = {x2}, {x1} + 1")
    else:
        lines += [f"{indent}    out[i + {k}] = thread_idx.x + {j + 1}"
                  for j, k in enumerate(offsets)]
    return "\n".join(lines) + "\n"
