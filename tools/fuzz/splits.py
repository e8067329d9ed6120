"""Generated split indices for the race fuzzer (``gpu_native/check/splits.py``, the gallery's R6).

:func:`generated` draws one kernel like :func:`tools.fuzz.indices.generated` does (``k(out)``,
storing ``tid + 1`` into ``out`` or the shared ``s``), whose index splits a flat value: ``f //
K`` and ``f % K2`` laid out with a row width ``W``, the FFT butterfly ``j = (f // K) * (2 * K) +
f % K`` with a second store at ``j + D``, or a row's chunk XOR-ed with ``g``
(``(f // K) * K + (f % K ^ g)``).  The flat value is ``tid + L * j`` over a counted loop, or the
grid-wide ``block_idx.x * block_dim.x + tid``.  Near misses come from the same draws: ``L``
below the block, no block-size assert, ``K2 != K``, ``W < K``, ``D != K``, ``g`` reaching past
the row or made of the chunk itself or of the thread.  A rotation writes row ``f // K`` at column
``(f % K + c * (f // K)) % M`` (R11), unique where ``M >= K``, or the other way round (row
``(f // K + c * (f % K)) % M``, with ``K`` also ``block_dim.x``); a smaller ``M`` is the near
miss.  ``python3 -m tools.fuzz_races --family
splits`` runs them.
"""

from __future__ import annotations

import random

from .indices import SHARED_SIZE

__all__ = ["generated"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k`` (same state, same source)."""
    b = r.choice([32, 64, 128, None])
    space = r.choice(["global", "shared"])
    trips = r.choice([1, 2, 3])
    size = b or 64
    stride = r.choice([f"{size}", f"{size}", f"{size - 1}", f"{size + 1}", f"{2 * size}",
                       "block_dim.x"])
    grid_flat = space == "global" and r.random() < 0.3
    flat = "block_idx.x * block_dim.x + tid" if grid_flat else f"tid + {stride} * j"
    k = r.choice([1, 2, 4, 8, 16, 32, 3, 5])
    shape = r.choice(["pair", "pair", "butterfly", "xor", "rotation"])
    target = "s" if space == "shared" else "out"
    # Global stores keep one slice per block (the flat value covers the block only).
    base = "" if grid_flat or space == "shared" else f"block_idx.x * {SHARED_SIZE} + "
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):"]
    if b is not None:
        lines.append(f"    assert block_dim.x == {b}")
    lines += ["    tid = thread_idx.x"]
    if space == "shared":
        lines.append(f"    s = shared_array(i32, {SHARED_SIZE})")
    lines.append(f"    for j in range({1 if grid_flat else trips}):")
    lines.append(f"        f = {flat}")
    if shape == "pair":
        k2 = r.choice([k, k, k, 2 * k, max(1, k // 2), k + 1])
        width = r.choice([k, k, 2 * k, k + 1, max(1, k - 1)])
        lines.append(f"        {target}[{base}(f // {k}) * {width} + f % {k2}] = tid + 1")
    elif shape == "butterfly":
        d = r.choice([k, k, k, max(0, k - 1), k + 1, 2 * k])
        scale = r.choice([2 * k, 2 * k, k, 2 * k - 1])
        lines.append(f"        i = (f // {k}) * {scale} + f % {k}")
        lines.append(f"        {target}[{base}i] = tid + 1")
        lines.append(f"        {target}[{base}i + {d}] = tid + 2")
    elif shape == "rotation":
        # R11: row hi's columns rotated by c * hi, modulo K; unique where the K columns hold
        # f % k's k values (K >= k) and a row of W holds every hi.
        rows = -(-(size + int(stride if stride.isdigit() else size) * (trips - 1)) // k) \
            if not grid_flat else size
        modulus = r.choice([k, k, k + 1, 2 * k, max(1, k - 1), max(1, k // 2)])
        c = r.choice([0, 1, 1, 3, k])
        width = r.choice([rows, rows, rows + 1, max(1, rows - 1)])
        if r.random() < 0.5:
            lines.append(f"        lo = f % {k}")
            lines.append(f"        hi = f // {k}")
            lines.append(f"        {target}[{base}((lo + {c} * hi) % {modulus}) * {width} + hi] "
                         "= tid + 1")
        else:
            # The other way round: hi rotated by c * lo, unique where the modulus holds hi's
            # values; split by block_dim.x, hi's range is the loop's trip count (the quotient
            # of f's largest value plus one, block_dim.x * trips, by block_dim.x).
            split = "block_dim.x" if stride == "block_dim.x" and not grid_flat and \
                r.random() < 0.6 else str(k)
            count = trips if split == "block_dim.x" else rows
            modulus = r.choice([count, count, count + 1, max(1, count - 1)])
            width = r.choice([split, split, f"({split} + 1)", f"({split} - 1)"])
            lines.append(f"        lo = f % {split}")
            lines.append(f"        hi = f // {split}")
            lines.append(f"        {target}[{base}((hi + {c} * lo) % {modulus}) * {width} + lo] "
                         "= tid + 1")
    else:
        k = r.choice([2, 4, 8, 16])
        g = r.choice(["r & {m}", "(r >> 1) & {m}", "r & {m2}", "c & 1", "tid & {m}", "1",
                      "r"]).format(m=k - 1, m2=2 * k - 1)
        lines.append(f"        r = f // {k}")
        lines.append(f"        c = f % {k}")
        lines.append(f"        {target}[{base}r * {k} + (c ^ ({g}))] = tid + 1")
    return "\n".join(lines) + "\n"
