"""Kernels for the race fuzzer whose shared-array stores are scaled by a loop variable the block
shares (rule R3 for loop variables, :mod:`gpu_native.check.strides`): the tree indices of a
Blelloch scan, a bitonic network's bit insertion, a plain ``scale * tid``; provable forms and
near misses (a scale that starts at 0 or 3, is halved to 0, steps by -1, is assigned under a
thread-dependent condition, no barrier in the loop, cofactors of equal parity), in loops of
known trip count and in loops whose condition the checker cannot evaluate (``while sc <
len(out) // K``); some with a plain read of ``s`` after the stores of a round (``acc +=
s[...]``), before or after a barrier.  The module
bodies have the shape :func:`tools.fuzz.indices.generated` gives (a kernel ``k`` writing
``s = shared_array(i32, SHARED_SIZE)``), so that the same runner checks them."""

from __future__ import annotations

import random

from .indices import OUT_SIZE, SHARED_SIZE

#: Pairs of stores (one or two indices of the scale ``sc``): provable, and near misses.
SHAPES = [
    ("sc * tid",),
    ("sc * (2 * tid + 1) - 1", "sc * (2 * tid + 2) - 1"),
    ("2 * tid - (tid & (sc - 1))", "2 * tid - (tid & (sc - 1)) + sc"),
    ("sc * (2 * tid + 2) - 1",),
    ("sc * (2 * tid + 1)", "sc * (2 * tid + 3)"),  # equal parity: t meets t' + 1
    ("2 * tid - (tid & (sc - 1))", "2 * tid - (tid & (sc - 1)) + sc - 1"),  # overlaps
]


#: Double buffers: ``sc`` is 0 or 1 and flips each round (``B``: the block size).
FLIPPED = [
    ("sc * B + tid",),
    ("sc * B + tid", "(1 - sc) * B + tid"),
    ("sc * B + tid", "(1 - sc) * B + tid + 1"),  # thread B - 1 meets thread 0
    ("sc * (B - 1) + tid",),  # rounds with no barrier between meet
    # Mirrored in the rounds with sc = 1: with a barrier between the stores, the first store
    # of a round with sc = 0 meets the second of the round before it.
    ("sc * B + tid", "(1 - sc) * B + tid + sc * (B - 1 - 2 * tid)"),
]


def generated(r: random.Random) -> str:
    """One module body defining kernel ``k``, drawn from ``r`` (the same state, the same
    source)."""
    b = r.choice([32, 64, 128])
    trips = r.choice([1, 2, 3, 4])
    direction = r.choice(["up", "up", "down", "shift", "minus", "flip"])
    if direction == "flip":
        return _flipped(r, b, trips)
    shape = r.choice(SHAPES)
    top = 1 << (trips - 1)
    start = {"up": 1, "shift": 1, "down": top, "minus": top}[direction]
    start = r.choice([start, start, start, start, 0, 3, top // 2 if direction == "down" else start])
    step = {"up": "sc *= 2", "shift": "sc <<= 1", "down": "sc //= 2", "minus": "sc -= 1"}[direction]
    barrier = r.random() < 0.85
    limit = r.choice([b, b // 2, "d + 1", None])
    uniform = r.random() < 0.9
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):",
             f"    assert block_dim.x == {b}", "    tid = thread_idx.x",
             f"    s = shared_array(i32, {SHARED_SIZE})", f"    sc = {start}"]
    if not uniform:
        lines += ["    if tid < 3:", "        sc = 1"]
    # A loop whose trip count the checker cannot evaluate (len(out) is OUT_SIZE at run time):
    # it follows each round the block could run (strides.Trace.loop_maybe).
    uncounted = r.random() < 0.3
    if uncounted and direction in ("up", "shift"):
        lines.append(f"    while sc < len(out) // {OUT_SIZE >> trips}:")
    elif uncounted:
        lines.append(f"    while sc > len(out) // {OUT_SIZE << 1}:")  # 0 at run time
    else:
        lines += ["    d = 0", f"    while d < {trips}:"]
    if barrier:
        lines.append("        sync_threads()")
    indent = "        "
    if limit is not None:
        lines.append(f"        if tid < {limit}:")
        indent += "    "
    for n, index in enumerate(shape):
        lines.append(f"{indent}s[{index}] = tid + {n + 1}")
    if r.random() < 0.4:
        lines += _read(r, shape + ("tid", "tid + sc", "tid + 1", f"{b} - 1 - tid", "2 * tid + sc"),
                       ["tid < sc", f"tid < {b // 2}", "tid >= sc"], lines)
    lines.append(f"        {step}")
    if not uncounted:
        lines.append("        d += 1")
    return "\n".join(lines) + "\n"


def _read(r: random.Random, indices: tuple[str, ...], guards: list[str], lines: list[str]
          ) -> list[str]:
    """A plain read of ``s`` in the loop's body after its stores (``acc += s[...]``, ``acc``
    set before the loop), at one of ``indices``, under one of
    ``guards`` or none, with a barrier before it or not: the read proofs of
    :meth:`gpu_native.check.unique.UniqueWrites.check_shared_reads` and of
    :mod:`gpu_native.check.strides`.  ``lines`` gets ``acc = 0`` before its loop."""
    loop = next(n for n, line in enumerate(lines) if line.startswith("    while "))
    lines.insert(loop, "    acc = 0")
    out = []
    if r.random() < 0.35:
        out.append("        sync_threads()")
    guard = r.choice([None, None, *guards])
    indent = "        "
    if guard is not None:
        out.append(f"        if {guard}:")
        indent += "    "
    out.append(f"{indent}acc += s[{r.choice(indices)}]")
    return out


def _flipped(r: random.Random, b: int, trips: int) -> str:
    """A double-buffered loop: ``sc`` flips between 0 and 1 each round, in a loop of known trip
    count or one whose condition the checker cannot evaluate (``c`` doubles to ``len(out) //
    K``, as a Hillis-Steele scan's offset does, or counts up from a value the checker does not
    know either, so that the rounds repeat after two), with the barrier at the top of the body
    or between its two stores."""
    shape = r.choice(FLIPPED)
    uncounted = r.random() < 0.6
    unknown_start = uncounted and r.random() < 0.5
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):",
             f"    assert block_dim.x == {b}", "    tid = thread_idx.x",
             f"    s = shared_array(i32, {SHARED_SIZE})", f"    sc = {r.choice([0, 1])}",
             f"    c = len(out) // {OUT_SIZE}" if unknown_start else "    c = 1"]
    lines.append(f"    while c < {trips} * len(out) // {OUT_SIZE}:" if unknown_start else
                 f"    while c < len(out) // {OUT_SIZE >> trips}:" if uncounted else
                 f"    while c < {1 << trips}:")
    barrier = r.choice(["top", "top", "top", "middle", "middle", None])
    if barrier == "top":
        lines.append("        sync_threads()")
    limit = r.choice([b, b // 2, None])
    for n, index in enumerate(shape):
        if n and barrier == "middle":
            lines.append("        sync_threads()")
        indent = "        "
        if limit is not None:
            lines.append(f"        if tid < {limit}:")
            indent += "    "
        lines.append(f"{indent}s[{index.replace('B', str(b))}] = tid + {n + 1}")
    if r.random() < 0.4:
        lines += _read(r, tuple(i.replace("B", str(b)) for i in shape) + (
            f"sc * {b} + tid", f"(1 - sc) * {b} + tid", f"(1 - sc) * {b} + {b} - 1 - tid", f"sc * {b} + tid + 1"),
            [f"tid < {b // 2}", f"tid < {b - 1}"], lines)
    lines += ["        sc = 1 - sc", "        c += 1" if unknown_start else "        c *= 2"]
    if r.random() < 0.5:  # a store after the loop, with or without a barrier before it
        if r.random() < 0.5:
            lines.append("    sync_threads()")
        lines.append(f"    s[tid + {r.choice([0, 1, b])}] = 7")
    return "\n".join(lines) + "\n"
