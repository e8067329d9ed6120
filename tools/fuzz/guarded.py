"""Generated guarded row-major indices for the ownership proofs' bounded sums
(``gpu_native/check/ownership.py``: a condition ``col < U`` bounds the digits of ``col``).

:func:`generated` draws a kernel ``k(out, n)`` whose store is ``out[row * S + col]`` with ``col``
a thread's column (its grid uid, or its index in the block) kept below a bound by an ``if``
(``if col < n:``) or by a block-stride loop (``for j in range(tid, n, block_dim.x)``), and
``row`` a per-thread loop counter or the block's index.  The bound, the comparison and the
stride ``S`` are drawn from values that keep rows apart (``S >= U``) and near misses that do not
(``S = n - 1`` under ``col < n``, ``col <= n``); whatever the checker accepts must be race-free
for every ``n`` of :data:`NS` and launch shape that its launch checks (and the launcher's
checks of ``n``) let through.  ``tests/check/test_guarded_indices.py`` runs a few hundred draws.
"""

from __future__ import annotations

import random

import numpy as np

from gpu_native import ir
from gpu_native.errors import GpuNativeError
from gpu_native.runtime.launch_checks import check_params
from gpu_native.spec import ParamCheck

from . import indices

#: The values of ``n`` every accepted kernel is launched with.
NS = (1, 7, 33, 64, 100)

COLUMNS = ["block_idx.x * block_dim.x + tid", "block_idx.x * 32 + tid", "tid",
           "block_idx.x * block_dim.x + tid + 1", "block_idx.x * 64 + tid"]
BOUNDS = ["n", "n", "n", "n - 1", "n + 1", "64", "2 * n"]
COMPARISONS = ["<", "<", "<", "<="]
STRIDES = ["n", "n", "n", "n - 1", "n + 1", "2 * n", "64", "65", "32"]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    stride = r.choice(STRIDES)
    bound = r.choice(BOUNDS)
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32], n: i32):"]
    if r.random() < 0.3:
        lines.append("    assert block_dim.x == 32")
    lines.append("    tid = thread_idx.x")
    guarded = r.random() < 0.5
    if guarded:
        comparison = r.choice(COMPARISONS)
        col = r.choice(COLUMNS)
        rows = r.choice([1, 2, 3])
        lines += [f"    col = {col}",
                  f"    if col {comparison} {bound}:",
                  f"        for row in range({rows}):",
                  f"            out[row * ({stride}) + col] = tid + 1"]
    else:
        lines += [f"    for j in range(tid, {bound}, block_dim.x):",
                  f"        out[block_idx.x * ({stride}) + j] = tid + 1"]
    # Drawn last, so that a seed drawing none gives the source it always gave: the same index
    # under an `elif` of another bound (an image's border beside its interior).
    if guarded and r.random() < 0.4:
        lines += [f"    elif {r.choice(OTHER_BOUNDS)}:",
                  f"        for row in range({rows}):",
                  f"            out[row * ({stride}) + col] = tid + 2"]
    return "\n".join(lines) + "\n"


#: The conditions of a second store through the same index, in an ``elif``.
OTHER_BOUNDS = ["col < n", "col + 1 < n", "col < n - 1", "col < n + 1", "col <= n",
                "col + 2 < 2 * n", "col + 1 < 64", "col < 2 * n - 1"]


def launches(kernel: ir.Kernel):
    """``(n, grid, block)`` for each ``n`` of :data:`NS` and launch shape of
    :func:`indices.launch_shapes` that the kernel's checks of ``n`` let through."""
    checks = tuple(c for c in kernel.launch_checks if isinstance(c, ParamCheck))
    names = tuple(p.name for p in kernel.params)
    for n in NS:
        for grid, block in indices.launch_shapes(kernel):
            try:
                check_params(kernel.name, names, checks, (None, n), (grid, 1, 1), (block, 1, 1))
            except (ValueError, GpuNativeError):  # the launcher refuses this n for the shape
                continue
            yield n, grid, block


def runs(kernel: ir.Kernel):
    """``(what, run)`` for each launch of :func:`launches`: what it is (``"n 7, grid 2, block
    64"``) and a call that runs it (:func:`run`), as
    ``tests.simulator.support.race_free_draws`` takes them."""
    for n, grid, block in launches(kernel):
        yield (f"n {n}, grid {grid}, block {block}",
               lambda n=n, g=grid, b=block: run(kernel, n, g, b))


def run(kernel: ir.Kernel, n: int, grid: int, block: int) -> indices.SimErrors:
    """One launch on the simulator, its race detector watching ``out``."""
    out = np.full(indices.OUT_SIZE, indices.POISON, np.int32)
    return indices.run_sim(kernel, grid, block, out, np.int32(n))
