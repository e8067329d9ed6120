"""Generated per-thread columns of a shared table (R12, ``gpu_native/check/classify.py``): a store
``s[q * K + pos]`` whose row ``q`` is any value the thread computes (here a hash of the thread,
the round and ``n``, which no index rule follows, as a bin loaded from the data) is unique where
``pos`` tells the threads apart and stays below ``K``.

:func:`generated` draws a kernel ``k(out, n)``: ``pos`` is ``tid``, one of cuda-samples
histogram64's bit permutations of ``tid`` or a near miss of one (a field that drops, overlaps
or leaves out a bit), ``tid + 1``, ``tid // 2`` or ``tid % 32``; ``K`` is the block size, or less
or more than it, the block size asserted or not; each thread adds to its counters in a few
rounds (``+= 1``, where the table was cleared, each column by its thread or in steps of
``block_dim.x``, which a barrier may part from the counting; a plain store where it was not),
and sometimes reads another row of its column or of its neighbour's.  Whatever the checker
accepts must be race-free for every ``n`` of :data:`tools.fuzz.guarded.NS` and launch shape its
checks let through.  ``tests/fuzz/test_columns_fuzz.py`` runs a few hundred draws; ``python3 -m
tools.fuzz_races --family columns`` runs more, and on a GPU.  The kernels name the thread
``tid`` and the table ``s``, so that the runner's copy-out
(:func:`tools.fuzz.indices.with_copy_out`) applies.
"""

from __future__ import annotations

import random

from .indices import SHARED_SIZE

__all__ = ["generated"]

#: ``pos`` for a block of ``b`` threads (``{b}``; ``{q}`` is ``b // 4``): the first three tell
#: the threads apart below ``b`` (histogram64's ``threadPos`` with ``b // 4`` banks, a swap of
#: the two halves of the bits), the rest are near misses.
POSITIONS = ["tid",
             "(tid & ~({b} - 1)) | ((tid & ({q} - 1)) << 2) | ((tid & ({q} * 3)) >> {s})",
             "((tid & ({q} - 1)) << 2) + ((tid >> {s}) & 3)",
             "((tid & ({q} - 1)) << 2) | ((tid & ({q} * 3)) >> {s1})",
             "((tid & ({q} - 1)) << 2) | ((tid & ({q} * 3)) >> {s2})",
             "(tid & ({q} - 1)) << 2",
             "tid + 1", "tid // 2", "tid % 32"]

#: The row of round ``r``: a hash no index rule follows, kept within the table's rows (the
#: fourth wraps around in i32 on its way, which the mask makes harmless); the last is not kept
#: within them and may wrap (then the product with ``K`` is not shown exact: refused).
ROWS = ["((tid * 37 + {r} * 11 + (n & 255)) >> 2) & {mask}",
        "((tid ^ ((n & 255) * 13 + {r})) * 29 >> 3) & {mask}",
        "((tid * 37 + {r} * 11 + (n & 255)) >> 2) % {rows}",
        "((tid * 40503 + {r} * 7919 + n) * 2654435 >> 7) & {mask}",
        "(tid * 40503 + {r} * 7919 + n) >> 4"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``."""
    block = r.choice([32, 64, 64, 128])
    k = r.choice([block, block, block, block // 2, 2 * block])
    rows = SHARED_SIZE // k
    shift = (block // 4).bit_length() - 1  # log2(q): the two bits above the bank's moved down
    values = {"b": block, "q": block // 4, "s": shift, "s1": shift + 1, "s2": shift - 1,
              "mask": rows - 1, "rows": rows}
    pos = r.choice(POSITIONS[:3] if r.random() < 0.5 else POSITIONS).format(**values)
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):"]
    asserted = r.random() < 0.85
    if asserted:
        lines.append(f"    assert block_dim.x == {block}")
    lines += ["    tid = thread_idx.x",
              f"    s = shared_array(i32, {SHARED_SIZE})",
              f"    pos = {pos}"]
    cleared = r.random() < 0.6
    if cleared and asserted and k <= block:
        # Every column by its own thread (the counting's owner where `pos` is `tid`).
        lines += [f"    for i in range({rows}):",
                  f"        if tid < {k}:",
                  f"            s[i * {k} + tid] = 0"]
    elif cleared:
        # More columns than threads (or a block of any size): each thread clears a column in
        # every block_dim.x, so that no count starts from uninitialised memory (whose value the
        # GPU and the simulator need not agree on).
        lines += [f"    for i in range({rows}):",
                  f"        for c in range(tid, {k}, block_dim.x):",
                  f"            s[i * {k} + c] = 0"]
    if cleared and r.random() < 0.8:
        lines.append("    sync_threads()")
    row = r.choice(ROWS)
    for rnd in range(r.choice([1, 2, 3])):
        # A count where the table was cleared; else a store, which reads nothing uninitialised
        # (whose value the GPU and the simulator need not agree on).
        lines += [f"    q{rnd} = {row.format(r=rnd, **values)}",
                  f"    s[q{rnd} * {k} + pos] += 1" if cleared else
                  f"    s[q{rnd} * {k} + pos] = tid + {100 * (rnd + 1)}"]
    read = r.random() if cleared else 1.0
    if read < 0.25:  # another row of the thread's own column
        lines += [f"    x = s[(q0 ^ 1) * {k} + pos]", f"    s[q0 * {k} + pos] = x + 2"]
    elif read < 0.4:  # a row of the neighbour's column
        lines += [f"    x = s[q0 * {k} + (pos + 1) % {k}]", f"    s[q0 * {k} + pos] = x + 2"]
    return "\n".join(lines) + "\n"
