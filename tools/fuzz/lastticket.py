"""Race fuzzing of the last ticket (R7, ``gpu_native/check/lastblock.py``): kernels of the
``threadFenceReduction`` shape, provable and near misses, drawn from a seed.

The index fuzzer (:func:`tools.fuzz.indices.generated`) draws kernels with one parameter,
``out``; this pattern needs a counter beside it, so it has its own generator and runner here
rather than a new shape of that one.  Each kernel draws a ticket from ``ticket`` (maybe by
thread 0 only, maybe in a loop), writes a shared flag from it (maybe not by thread 0, maybe
inverted), maybe waits at a barrier, and in the block the flag selects writes ``out[0]`` (maybe
by every thread) and maybe resets the counter.  :func:`run` checks one and, where the checker
accepts it, launches it twice with one counter on the simulator's race detector: an accepted
kernel must not race.  ``tests/fuzz/test_last_ticket_fuzz.py`` runs a few hundred seeds.
"""

from __future__ import annotations

import random
import textwrap

import numpy as np

from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

from .indices import run_sim

HEADER = ("from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, i32, u32, u64, f32,\n"
          "                        thread_idx, block_idx, grid_dim, shared_array, sync_threads)\n")


def generated(r: random.Random) -> str:
    """The source of one module defining kernel ``k(out, ticket)``, drawn from ``r``."""
    # The provable kernel, then (more often than not) one knob turned to a near miss.
    ty, step, winner = r.choice(["u32", "u64"]), r.choice([1, 1, 2]), "LAST"
    drawer, in_loop, barrier, reset, writer = "tid == 0", False, True, "inside", "tid == 0"
    second_draw = False
    if step == 2:
        reset = None  # provable without the reset (the draws cannot wrap); a near miss with it
    if reset is None or r.random() < 0.3:
        reset, winner = None, r.choice(["LAST", "0", "LAST - 1"])
    near = r.choice([None, None, None, "step", "winner", "flag", "drawer", "loop", "barrier",
                     "reset", "writer", "second"])
    if near == "step":
        step = 2
        reset = "inside"
    elif near == "winner":
        winner, reset = r.choice(["0", "LAST - 1"]), "inside"
    elif near == "drawer":
        drawer = r.choice(["tid == 1", "tid < 2", None])
    elif near == "loop":
        in_loop = True
    elif near == "barrier":
        barrier = False
    elif near == "reset":
        reset = "outside"
    elif near == "writer":
        writer = None
    elif near == "second":
        second_draw = True
    # The grid's last block, in the counter's type (a u64 and an i32 have no common type).
    winner = winner.replace("LAST", f"{ty}(grid_dim.x) - 1")
    flag_value = f"1 if drawn == {winner} else 0"
    if near == "flag":
        flag_value = r.choice([f"0 if drawn == {winner} else 1", f"1 if drawn >= {winner} else 0"])
    draw = f"drawn = ticket.atomic_ref(0).fetch_add({ty}({step}))"
    lines = ["@gpu_kernel(Kernel1D)",
             f"def k(out: CUDASliceMut[f32], ticket: CUDASliceMut[{ty}]):",
             "    is_last = shared_array(i32, (1,))",
             "    tid = thread_idx.x"]
    indent = "    "
    if drawer is not None:
        lines.append(f"    if {drawer}:")
        indent += "    "
    if in_loop:
        lines.append(f"{indent}for j in range(2):")
        indent += "    "
    lines += [f"{indent}{draw}", f"{indent}is_last[0] = {flag_value}"]
    if second_draw:
        lines += ["    if tid == 0:", f"        ticket.atomic_ref(0).fetch_add({ty}(1))"]
    if barrier:
        lines.append("    sync_threads()")
    if reset == "outside":
        lines += ["    if tid == 0 and block_idx.x == 0:", "        ticket[0] = 0"]
    lines.append("    if is_last[0] == 1:")
    inner = "        "
    if writer is not None:
        lines.append(f"        if {writer}:")
        inner += "    "
    lines.append(f"{inner}out[0] = f32(block_idx.x)")
    if reset == "inside":
        lines.append(f"{inner}ticket[0] = 0")
    return HEADER + "\n" + "\n".join(lines) + "\n"


def run(seed: int, blocks: tuple[int, ...] = (1, 3, 7)) -> dict:
    """Check the kernel of ``seed``; where it is accepted, launch it twice per grid size with one
    zeroed counter on the simulator's race detector.  A plain dict: ``accepted``, ``races``
    (what the detector reported), ``source``."""
    source = generated(random.Random(seed))
    item: dict = {"seed": seed, "accepted": False, "races": [], "source": source}
    try:
        module = transpile_module(textwrap.dedent(source), f"lt{seed}.py", f"lt{seed}")
    except TranspileError:
        return item
    item["accepted"] = True
    kernel = module.checked[0].specializations[0]
    ty = np.uint64 if "ticket: CUDASliceMut[u64]" in source else np.uint32
    for grid in blocks:
        ticket = np.zeros(1, ty)
        for launch in range(2):
            out = np.full(1, np.nan, np.float32)
            errors = run_sim(kernel, grid, 64, out, ticket)
            item["races"] += [f"grid {grid}, launch {launch}: {m}" for m in errors.races]
    return item


__all__ = ["HEADER", "generated", "run"]
