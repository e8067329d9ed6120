"""Generated padded indices for the padding rule (``gpu_native/check/monotone.py``, R10).

:func:`generated` draws a kernel ``k(out)`` that stores into a shared array (or into ``out``)
through a padded index ``h(u)``: ``u`` a value of the thread (``tid``, ``tid + C``, ``2 * tid +
C``, ``block_dim.x + tid``, the grid uid, a value that may be negative, a remainder), ``h`` a
padding (``u + (u >> 5)``, ``u + u // 32``, two shifts at once) or a near miss that is no
strictly increasing function (``u - (u >> 5)``, ``u + (7 * u) % 32``, ``u + (u & 31)``).  A
second store may pad ``u + OFF`` the same way, another way (another shift), or add an offset
after the padding.  Whatever the checker accepts must be race-free on every launch shape its
asserts allow: ``tests/fuzz/test_padded_fuzz.py`` runs a few hundred draws.
"""

from __future__ import annotations

import random

import numpy as np

from gpu_native import ir

from . import indices

#: Elements of the shared array ``s``: more than any drawn index reaches on the launch shapes.
SHARED = 4096

VALUES = ["tid", "tid", "tid + {c}", "2 * tid + {c}", "block_dim.x + tid", "tid - {c}",
          "tid % 48", "3 * tid"]
GRID_VALUES = ["i64(block_idx.x) * block_dim.x + tid", "block_idx.x * block_dim.x + tid",
               "i64(block_idx.x) * 128 + tid", "i64(block_idx.x) * 32 + tid"]
#: Paddings of ``u`` (``{s}`` a shift, ``{d}`` a divisor); the last four are not strictly
#: increasing, or not functions the rule knows.
PADDINGS = ["{u} + ({u} >> {s})", "{u} + ({u} >> {s})", "{u} + {u} // {d}",
            "{u} + ({u} >> {s}) + 2 * ({u} >> 6)", "2 * {u} - ({u} >> {s})",
            "{u} - ({u} >> {s})", "{u} + ({u} * 7) % 32", "{u} + ({u} & 31)",
            "{u} - 2 * ({u} >> {s})"]
#: The second store: none, the same padding of ``u + OFF``, another shift, an offset after it.
SECONDS = [None, "same", "same", "same", "shift", "after"]
OFFSETS = [32, 64, 96, 128, 256, 1]


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out)``, drawn from ``r``; the same state
    always gives the same source."""
    block = r.choice([32, 64, 128, None])
    shared = r.random() < 0.7
    value = r.choice(VALUES if shared else GRID_VALUES).format(c=r.choice([0, 1, 32, 64, 128]))
    shift = r.choice([3, 4, 5, 5, 5])
    padding = r.choice(PADDINGS)
    second = r.choice(SECONDS)
    offset = r.choice(OFFSETS)
    target = "s" if shared else "out"
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):"]
    if block is not None:
        lines.append(f"    assert block_dim.x == {block}")
    lines += ["    tid = thread_idx.x", f"    u = {value}"]
    if shared:
        lines.append(f"    s = shared_array(i32, {SHARED})")

    def pad(u: str, s: int) -> str:
        return padding.format(u=u, s=s, d=1 << s)

    lines.append(f"    {target}[{pad('u', shift)}] = tid + 1")
    if second is not None:
        if second == "after":
            lines.append(f"    {target}[{pad('u', shift)} + {offset}] = tid + 2")
        else:
            lines.append(f"    v = u + {offset}")
            other = shift if second == "same" else (shift - 1 if shift > 3 else shift + 1)
            lines.append(f"    {target}[{pad('v', other)}] = tid + 2")
    return "\n".join(lines) + "\n"


def launches(kernel: ir.Kernel):
    """``(grid, block)`` for each launch shape of :func:`indices.launch_shapes` (its asserts and
    the checks its proofs added let it through)."""
    yield from indices.launch_shapes(kernel)


def run(kernel: ir.Kernel, grid: int, block: int) -> indices.SimErrors:
    """One launch on the simulator, its race detector watching ``out`` and ``s``."""
    out = np.full(indices.OUT_SIZE, indices.POISON, np.int32)
    return indices.run_sim(kernel, grid, block, out)
