"""Generated whole-warps indices for the ownership proofs' quotient atoms
(``gpu_native/check/ownership.py``: under ``assert block_dim.x % d == 0`` the block's extent is
``d * Q`` with ``Q = block_dim.x // d``, so ``block_dim.x // q`` is a step and ``tid // m`` a
digit whose range is a multiple of Q).

:func:`generated` draws a kernel ``k(out)`` whose store is ``out[block_idx.x * S + c * (tid //
m) + o]`` with ``S = s * (block_dim.x // q)``, under a condition that pins the low part of the
thread (``tid % m == 0``, ``lane_id() == 0``, or the grid's lane ``(block_idx.x * block_dim.x +
tid) % m == 0``) or none, and sometimes a second store at ``+ 1``;
a quarter of the draws index by the flat index's quotient instead, ``c * ((block_idx.x *
block_dim.x + tid) // m) + o``.  The draws mix the
provable (``q`` and ``m`` divide ``d``, ``c * q <= s * m``) with near misses that race on some
launch: ``q`` or ``m`` not dividing ``d`` (a block of 48 under ``% 16`` is one and a half
warps), a warp step below the warps' reach, the low part unpinned.  Whatever the checker accepts
must be race-free on every launch shape of :data:`BLOCKS` x :data:`GRIDS` its checks allow;
``tests/check/test_unique_idioms.py`` runs a hundred draws, ``python3 -m tools.fuzz_races
--family warps`` thousands (and on a GPU compares each launch with the simulator).
"""

from __future__ import annotations

import random

from gpu_native import ir

from . import indices

#: Blocks of 16s that are not all whole warps (48, 80, 112), beside whole warps.
BLOCKS = (16, 32, 48, 64, 80, 96, 112, 128, 192)
GRIDS = (1, 2, 3)
DIVISORS = (16, 32, 32, 64)


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out)``, drawn from ``r``; the same state
    always gives the same source."""
    d = r.choice(DIVISORS)
    q = r.choice(DIVISORS)
    m = r.choice(DIVISORS)
    s = r.choice([1, 1, 2])
    c = r.choice([1, 1, 2])
    o = r.choice([0, 0, 1, 5])
    split = r.choice(["tid // {m}", "tid // {m}", "tid >> {shift}"]).format(
        m=m, shift=m.bit_length() - 1)
    pin = r.choice(["tid % {m} == 0", "tid % {m} == 0", "tid & {mask} == 1", "",
                    "tid % {half} == 0", "lane_id() == 0", "lane_id() == 3"]).format(
        m=m, mask=m - 1, half=m // 2)
    second = c >= 2 and r.random() < 0.5
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):"]
    if r.random() < 0.9:
        lines.append(f"    assert block_dim.x % {d} == 0")
    lines.append("    tid = thread_idx.x")
    if r.random() < 0.25:
        # The flat index's quotient: one writer per group of m over the grid, where the pin is
        # of the thread's own lane and the block a multiple of m (or not: a near miss).
        flat = "(block_idx.x * block_dim.x + tid)"
        lines.append(f"    slot = {c} * ({flat} // {m}) + {o}")
    else:
        lines += [f"    step = {s} * (block_dim.x // {q})" if s > 1 else
                  f"    step = block_dim.x // {q}",
                  f"    slot = block_idx.x * step + {c} * ({split}) + {o}"]
    indent = "    "
    if pin:
        lines.append(f"    if {pin}:")
        indent += "    "
    lines.append(f"{indent}out[slot] = tid + 1")
    if second:
        lines.append(f"{indent}out[slot + 1] = tid + 2")
    elif pin and r.random() < 0.2:
        # The same index under another pin: threads of the two conditions meet (a near miss
        # that must be refused; the same pin again is fine).
        other = r.choice([pin, pin.replace("== 0", "== 1").replace("== 3", "== 4")])
        lines += [f"    if {other}:", "        out[slot] = tid + 3"]
    if pin.startswith("tid ") and r.random() < 0.3:
        # The grid's lane (cuda-samples shfl_scan's `id % warpSize`): the thread's own where
        # the block is a multiple of m, another thread's remainder where it is not.
        grid = pin.replace("tid ", "(block_idx.x * block_dim.x + tid) ", 1)
        lines = [f"    if {grid}:" if line == f"    if {pin}:" else line for line in lines]
    return "\n".join(lines) + "\n"


def launch_shapes(kernel: ir.Kernel) -> list[tuple[int, int]]:
    """The (grid, block) sizes of :data:`GRIDS` x :data:`BLOCKS` that the kernel's launch checks
    allow."""
    return indices.launch_shapes(kernel, BLOCKS, GRIDS)


__all__ = ["BLOCKS", "GRIDS", "generated", "launch_shapes"]
