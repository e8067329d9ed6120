"""Generated device function calls that store into or read a written array beside the caller's
own accesses (``gpu_native/check/unique.py``, ``check_calls``: a call's accesses are compared
with the caller's where the callee indexes the array by its parameters alone and the call passes
the element the caller's stores own).

:func:`generated` draws a kernel from :mod:`.reads` (``out[A] = out[B] + 1``, with ``A`` and
``B`` drawn by another family) and moves the read, the store or both into device functions:
``peek(out, B)`` reads ``y[i]``, ``put(out, A, v)`` stores ``y[i] = v`` at a ``UniqueId``, and
``peek_next(out, B - 1)`` reads ``y[i + 1]``, an element the proofs cannot name from the call,
``bump(out, A)`` reads and stores ``y[i]``, and ``tally(out, A, v)`` (or the kernel's own
``out.atomic_ref(A).fetch_add(v)``) adds atomically, beside the plain read and the draw's other
stores.
Whatever the checker accepts must run without a race for every ``n`` and launch shape its
checks let through (the launches of :func:`tools.fuzz.guarded.launches`).
``tests/check/test_call_accesses.py`` runs a few hundred draws; ``python3 -m tools.fuzz_races
--family calls`` runs more, and on a GPU.
"""

from __future__ import annotations

import random
import re

from . import reads

FUNCTIONS = '''from typing import TypeVar
from gpu_native import CUDASlice, UniqueId, gpu_device

I = TypeVar("I", i32, i64)


@gpu_device
def peek(y: CUDASlice[i32], i: I) -> i32:
    return y[i]


@gpu_device
def peek_next(y: CUDASlice[i32], i: I) -> i32:
    return y[i + 1]


@gpu_device
def put(y: CUDASliceMut[i32], i: UniqueId, v: i32):
    y[i] = v


@gpu_device
def bump(y: CUDASliceMut[i32], i: UniqueId):
    y[i] = peek(y, i) + 1


@gpu_device
def tally(y: CUDASliceMut[i32], i: I, v: i32):
    y.atomic_ref(i).fetch_add(v)


'''

_LINE = re.compile(r"^(\s+)out\[(.+)\] = out\[(.+)\] \+ 1$")


def generated(r: random.Random) -> str:
    """The body of one module defining device functions and kernel ``k(out, n)``, drawn from
    ``r``; the same state always gives the same source."""
    while True:  # a draw whose read is beside its store (not one read after both stores)
        lines = reads.generated(r).splitlines()
        at = next((k for k, line in enumerate(lines) if _LINE.match(line)), None)
        if at is not None:
            break
    indent, a, b = _LINE.match(lines[at]).groups()  # type: ignore[union-attr]
    read = r.choice([f"out[{b}]", f"peek(out, {b})", f"peek(out, {b})",
                     f"peek_next(out, {b} - 1)"])
    lines[at] = r.choice([f"{indent}out[{a}] = {read} + 1",
                          f"{indent}put(out, {a}, {read} + 1)",
                          f"{indent}bump(out, {a})",
                          f"{indent}tally(out, {a}, {r.choice([read, '1'])})",
                          f"{indent}out.atomic_ref({a}).fetch_add({r.choice([read, '1'])})"])
    return FUNCTIONS + "\n".join(lines) + "\n"
