"""Generated ``store_matrix`` tiles for the race fuzzer (``gpu_native/check/warptiles.py``).

:func:`generated` draws one kernel ``k(out)`` that stores 16 x 8 accumulator tiles into the
shared f16 array ``tile`` from an origin made of the warp (``tid // 32``, or its split ``warp //
2``, ``warp % 2``), two loop counters ``i``, ``j`` and constant offsets, and stores ``tid + 1``
into the shared ``s`` (which the harness copies out).  Near misses come from the same draws:
warps or iterations fewer than 16 rows or 8 columns apart, an origin that holds the lane
(``lane_id()``, ``tid % 32``, ``tid``, ``tid // 16``), no block-size assert.  ``python3 -m
tools.fuzz_races --family tiles`` runs them; every accepted kernel runs on the simulator with its
race detector watching ``tile``.
"""

from __future__ import annotations

import random

from .indices import SHARED_SIZE

__all__ = ["generated"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k`` (same state, same source)."""
    b = r.choice([32, 64, 128, 128, None])
    trips_i, trips_j = r.choice([1, 2]), r.choice([1, 2, 3])
    step_i = r.choice([16, 16, 16, 8, 32, 24])
    step_j = r.choice([8, 8, 8, 4, 16, 12])
    split = r.random() < 0.5
    if split:  # a 2 x 2 grid of warp tiles
        warp_row = f"(warp // 2) * {r.choice([16 * trips_i, 16 * trips_i, 8, step_i * trips_i])}"
        warp_col = f"(warp % 2) * {r.choice([8 * trips_j, 8 * trips_j, 4, step_j * trips_j])}"
    else:
        warp_row = f"warp * {r.choice([16 * trips_i, 16 * trips_i, 8, 16])}"
        warp_col = "0"
    warp = r.choice(["tid // 32"] * 6 + ["tid // 16", "tid // 64"])
    lane = r.choice([""] * 8 + [" + lane_id()", " + tid % 32", " + tid % 4", " + tid"])
    # Every accepted origin stays inside the tile (f16, 33 KiB beside s's 8 KiB).
    rows, cols = 160, 104
    lines = ["from gpu_native import f16, f32, lane_id, local_array, store_matrix", "",
             "@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):"]
    if b is not None:
        lines.append(f"    assert block_dim.x == {b}")
    lines += ["    tid = thread_idx.x",
              f"    s = shared_array(i32, {SHARED_SIZE})",
              f"    tile = shared_array(f16, ({rows}, {cols}))",
              "    acc = local_array(f32, (4,))",
              "    for e in range(4):",
              "        acc[e] = f32(tid)",
              f"    warp = {warp}",
              f"    for i in range({trips_i}):",
              f"        for j in range({trips_j}):",
              f"            store_matrix(tile, ({warp_row} + i * {step_i}{lane}, {warp_col} + j * "
              f"{step_j}), acc, ())",
              f"    if tid < {SHARED_SIZE}:",
              "        s[tid] = tid + 1"]
    return "\n".join(lines) + "\n"
