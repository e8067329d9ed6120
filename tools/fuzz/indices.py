"""Generated store indices for the unique-write proofs (``gpu_native/check/unique.py``).

:func:`generated` draws one kernel that stores ``tid + 1`` into a global or a shared array through
an index built from the idioms the proofs know: affine in the thread coordinates, ``%`` and ``//``
parts, lane/warp splits, a second store at an offset, a condition that pins some threads, loops
(counted, and strided by the launch), single-block asserts, an index that reaches the store
through a local assigned more than once (:data:`REACHING`), and a second store under a condition
of its own.  Many draws are near misses the
checker must refuse; whatever it accepts must be race-free on every launch shape its asserts allow.

:func:`run_sim` runs an accepted kernel on the simulator with its race detector watching every
array the kernel writes (by default the simulator shadows only arrays a launch both reads and
writes).  ``tests/check/test_unique_idioms.py`` runs a few hundred draws in CI;
``python3 -m tools.fuzz_races`` runs thousands, and on a GPU compares every launch with the
simulator bit for bit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from gpu_native import ir
from gpu_native.errors import GpuNativeError
from gpu_native.runtime.launch_checks import check_launch
from gpu_native.simulator import compile_kernel

#: The imports a :func:`generated` body needs, to make it a module.
HEADER = ("from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, i32, i64, thread_idx, block_idx,\n"
          "                        block_dim, grid_dim, shared_array, sync_threads, lane_id)\n\n")

TID_FORMS = ["tid", "tid % {m}", "tid // {m}", "tid & 31", "tid >> 5", "tid % 32", "tid // 32"]
PINS = [None, "tid % 32 == 0", "tid // 32 == 0", "tid == 0", "tid & 31 == 1", "lane < 4", "tid == 31",
        "tid == block_dim.x - 1", "tid == block_dim.x - 2",
        "tid == 63"]
BLOCKS = (32, 64, 96, 128)
GRIDS = (1, 2, 3)
BLOCK_TERMS = ["{c} * block_idx.x", "block_idx.x * block_dim.x", "block_idx.x * (2 * block_dim.x)",
               "block_idx.x", "block_idx.x * 64 * {trips}"]
TID_COEFFICIENTS = ["{a}", "{a}", "grid_dim.x", "block_dim.x"]
LOOPS = ["range({trips})", "range({trips})", "range(tid, 256, block_dim.x)", "range(tid, 256, 32)",
         "range(1, 2 * {trips}, 2)"]

#: Elements of ``out``: more than any accepted index reaches on the launch shapes above.
OUT_SIZE = 1 << 17
#: Elements of the shared array ``s`` (and of each block's slice of ``out`` in the copy-out).
SHARED_SIZE = 2048
#: What ``out`` holds before every launch (0xDEADBEEF): no store writes it (they write tid + 1, 2).
POISON = np.int32(-0x21524111)
#: What the simulator's uninitialised shared memory holds (0xCD bytes, see simulator/memory.py).
SHARED_POISON = np.frombuffer(b"\xcd" * 4, np.int32)[0]


def generated(r: random.Random) -> str:
    """The body of one module (after the simulator tests' import header) defining kernel ``k``,
    drawn from ``r``; the same state always gives the same source."""
    b = r.choice([32, 64, None])
    space = r.choice(["global", "shared"])
    tid_form = r.choice(TID_FORMS).format(m=r.choice([2, 16, 32, 64]))
    a = r.choice([1, 1, 2, 3])
    trips = r.choice([1, 2, 3])
    cj = r.choice([0, 1, 16, 32, 64, 96, 128, 192])
    loop = r.choice(LOOPS).format(trips=trips)
    if "tid" in loop:
        tid_form, cj = "0", 1  # the loop variable carries the thread
    block_term = r.choice(BLOCK_TERMS).format(c=r.choice([0, 32, 64, 128, 256, 384]),
                                              trips=trips)
    if space == "shared":
        block_term = "0"
    tid_coefficient = r.choice(TID_COEFFICIENTS).format(a=a)
    second = r.choice([None, None, 1, 16, 32, 64, 128, 256])
    pin = r.choice(PINS)
    single = r.random() < 0.15
    index = f"{block_term} + {tid_coefficient} * ({tid_form}) + {cj} * j"
    target = "s" if space == "shared" else "out"
    lines = ["@gpu_kernel(Kernel1D)", "def k(out: CUDASliceMut[i32]):"]
    if b is not None:
        lines.append(f"    assert block_dim.x == {b}")
    if single:
        lines.append("    assert grid_dim.x == 1")
    lines += ["    tid = thread_idx.x", "    lane = tid % 32"]
    if space == "shared":
        lines.append(f"    s = shared_array(i32, {SHARED_SIZE})")
    lines.append(f"    for j in {loop}:")
    indent = "        "
    if pin is not None:
        lines.append(f"        if {pin}:")
        indent += "    "
    lines.append(f"{indent}{target}[{index}] = tid + 1")
    if second is not None:
        lines.append(f"{indent}{target}[{index} + {second}] = tid + 2")
    # Drawn last, so that a seed drawing no such form gives the source it always gave.
    reaching = r.choice(REACHING)
    if reaching is not None:
        lines = _through_a_local(lines, reaching, indent, target, index)
    if space == "shared" and second is not None and pin is None and "tid" not in loop:
        lines = _with_barriers(lines, r.choice(BARRIERS), target)
    # A barrier in a loop of the thread's own bounds would be a divergent one: none there.
    if r.random() < 0.25 and not any(line.strip() == "sync_threads()" for line in lines):
        # A thread's chunk (thread coarsening): j from tid * T, the stop T past the start (or a
        # min() with one), beside chunks that overlap the next thread's.
        chunk = r.choice(CHUNKS).format(t=r.choice([2, 3, 4]), s=r.choice([1, 2]))
        walk = f"{block_term} + j"
        lines = [f"    for j in {chunk}:" if line.startswith("    for j in ") else
                 line.replace(index, walk) for line in lines]
    if r.random() < 0.25:
        lines = _as_while(lines)
    if pin is not None and second is not None and r.random() < 0.2:
        # The second store under a condition of its own: the same one (one thread makes both
        # stores, whatever their indices) or another (two threads, apart only by the index).
        at = next(k for k, line in enumerate(lines) if line.rstrip().endswith("= tid + 2"))
        lines.insert(at, f"{indent[:-4]}if {r.choice([pin, *PINS[1:]])}:")
    return "\n".join(lines) + "\n"


def _as_while(lines: list[str]) -> list[str]:
    """``lines`` with the ``for j in range(...)`` loop written as the ``while`` loop a CUDA
    programmer writes (``j = start; while j < stop: ...; j += step``,
    :mod:`gpu_native.check.counted`), which must be proven as the range is."""
    at = next(k for k, line in enumerate(lines) if line.startswith("    for j in range("))
    inner = lines[at][len("    for j in range("):-len("):")]
    args = _split_args(inner)
    start, stop, step = (["0"] + args + ["1"])[:3] if len(args) == 1 else (args + ["1"])[:3]
    end = next((k for k in range(at + 1, len(lines)) if not lines[k].startswith("        ")),
               len(lines))
    return (lines[:at] + [f"    j = {start}", f"    while j < {stop}:"] + lines[at + 1:end]
            + [f"        j += {step}"] + lines[end:])


def _split_args(text: str) -> list[str]:
    """The arguments of a call's text, split at the commas outside parentheses."""
    out, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
            continue
        depth += (ch == "(") - (ch == ")")
        current += ch
    return out + [current.strip()]


#: Chunk loops (drawn last, so that a seed drawing none gives the source it always gave): the
#: first three keep threads apart, the others overlap the next thread's chunk.
CHUNKS = ["range(tid * {t}, (tid + 1) * {t})", "range(tid * {t}, tid * {t} + {t}, {s})",
          "range({t} * tid, min({t} * tid + {t}, 256), {s})",
          "range(tid * {t}, (tid + 1) * {t} + 1)", "range(tid * {t}, tid * {t} + 2 * {t}, 2)",
          "range(tid * {t}, min(tid * {t} + {t} + {s}, 256))"]


#: Where barriers go between a shared array's two stores in the loop (a pair a barrier orders is
#: not compared, :mod:`gpu_native.check.phases`): between them (orders the first before the
#: second, not the second before the next iteration's first), at the top of the body or at its
#: bottom (the reverse), or both.  Only in loops every thread runs alike and under no condition.
BARRIERS = [None, None, None, None, "between", "top", "bottom", "between+top", "between+bottom"]


def _with_barriers(lines: list[str], where: str | None, target: str) -> list[str]:
    if where is None:
        return lines
    second = next(k for k, line in enumerate(lines) if line.strip().startswith(f"{target}[")
                  and line.rstrip().endswith("= tid + 2"))
    loop = next(k for k, line in enumerate(lines) if line.startswith("    for j in "))
    barrier = "        sync_threads()"
    out = list(lines)
    if "bottom" in where:
        out.insert(second + 1, barrier)
    if "between" in where:
        out.insert(second, barrier)
    if "top" in where:
        out.insert(loop + 1, barrier)
    return out


#: How the first store's index may reach it through a local assigned more than once (the
#: reaching definitions the proofs follow, R8): assigned just before the store in the loop
#: (provable when the index is), reassigned in a branch before it (unknown after the join), or
#: read before this iteration assigns it (the previous iteration's or the first value).
REACHING = [None, None, None, None, None, None, "reassigned", "branch", "stale"]


def _through_a_local(lines: list[str], how: str, indent: str, target: str,
                     index: str) -> list[str]:
    """``lines`` with the first store's index moved into a local ``x`` assigned twice."""
    store = f"{indent}{target}[{index}] = tid + 1"
    at = lines.index(store)
    loop = next(k for k, line in enumerate(lines) if line.startswith("    for j in "))
    via = f"{indent}{target}[x] = tid + 1"
    assign = f"{indent}x = {index}"
    if how == "reassigned":
        body = [assign, via]
    elif how == "branch":
        body = [assign, f"{indent}if lane < 3:", f"{indent}    x = tid", via]
    else:  # "stale"
        body = [via, assign]
    return lines[:loop] + ["    x = tid * 3"] + lines[loop:at] + body + lines[at + 1:]


def uses_shared(source: str) -> bool:
    """Whether a :func:`generated` kernel stores into the shared array (not into ``out``)."""
    return "shared_array" in source


def with_copy_out(source: str) -> str:
    """A shared-array kernel that also copies its block's ``s`` to ``out`` after a barrier, so
    that what the stores left in shared memory can be compared between backends (block ``b``'s
    copy is ``out[b * SHARED_SIZE:(b + 1) * SHARED_SIZE]``, by its first warp: every block has
    one, and the checker proves that copy's stores unique).  The stores are unchanged."""
    return source + (
        "    sync_threads()\n"
        f"    for t in range({SHARED_SIZE // 32}):\n"
        "        if tid < 32:\n"
        f"            out[i64(block_idx.x) * {SHARED_SIZE} + t * 32 + tid] = s[t * 32 + tid]\n")


def launch_shapes(kernel: ir.Kernel, blocks: tuple[int, ...] = BLOCKS,
                  grids: tuple[int, ...] = GRIDS) -> list[tuple[int, int]]:
    """The (grid, block) sizes of ``grids`` x ``blocks`` that the kernel's launch checks (its
    asserts and the checks its proofs added) allow."""
    shapes = []
    for block in blocks:
        for grid in grids:
            try:
                check_launch(kernel.name, "k.py", 0, kernel.launch_checks, (grid, 1, 1),
                             (block, 1, 1))
            except GpuNativeError:  # a launch its asserts refuse
                continue
            shapes.append((grid, block))
    return shapes


@dataclass
class SimErrors:
    """The error sink of a simulator launch: device errors and race reports."""

    fails: list = field(default_factory=list)
    races: list = field(default_factory=list)
    watched: set = field(default_factory=set)  # the parameters the race detector shadowed

    def fail(self, site, index, length, block, thread):
        self.fails.append((site, index, length, tuple(block), tuple(thread)))

    def race(self, message):
        self.races.append(message)


_WRITES = frozenset({"store", "unsafe", "atomic"})


def run_sim(kernel: ir.Kernel, grid, block, *args, consts=()) -> SimErrors:
    """Run ``kernel`` on the simulator with ``args`` (NumPy arrays, written in place), its race
    detector on and watching every array the kernel writes; returns what it reported.
    ``grid`` and ``block`` are sizes or tuples of up to three; ``consts`` the values of the
    kernel's ``const_array`` tables, in the order of ``kernel.consts``."""
    program = compile_kernel(kernel)
    # A race between two plain stores of different blocks must be reported too, not only one
    # between a store and a load (what GPU_NATIVE_SIM_WRITE_RACES=1 does); the set is the
    # kernel's own, so setting it is idempotent.
    program.shadowed = program.shadowed | program.written
    errors = SimErrors(watched=set(program.shadowed))
    program.run(_dims(grid), _dims(block), 0, list(args), errors, consts)
    return errors


def _dims(size) -> tuple[int, int, int]:
    sizes = tuple(size) if isinstance(size, tuple) else (size,)
    return (*sizes, 1, 1, 1)[:3]  # type: ignore[return-value]


def compare(sim: np.ndarray, gpu: np.ndarray, shared: bool) -> tuple[int, list[int]]:
    """Compare ``out`` after the same launch on the simulator and the GPU, bit for bit:
    (elements compared, indices that differ).  In a shared-array kernel's copy-out, elements the
    simulator shows as uninitialised shared memory are skipped (the GPU's hold whatever was
    there); every other element, written or still poisoned, must agree."""
    a, b = sim.view(np.uint32), gpu.view(np.uint32)
    care = np.ones(a.shape, bool)
    if shared:
        care = a != np.uint32(SHARED_POISON.view(np.uint32))
    differ = np.flatnonzero(care & (a != b))
    return int(care.sum()), differ.tolist()


__all__ = ["BLOCKS", "GRIDS", "HEADER", "OUT_SIZE", "POISON", "SHARED_POISON", "SHARED_SIZE", "SimErrors",
           "compare", "generated", "launch_shapes", "run_sim", "uses_shared", "with_copy_out"]
