"""Generated reads of a written array beside its stores (``gpu_native/check/unique.py``: a read
at an element no other thread's store can write is proven as a pair of stores is).

:func:`generated` draws a kernel from :mod:`.mirrored`, :mod:`.residues` or :mod:`.rowwalk`
(two stores into ``out``, kept apart by a condition or not) and turns its first two stores
into one store and one read, ``out[A] = out[B] + 1`` (or keeps both stores and reads
``v = out[B]`` after them, outside their conditions): the read of ``out[B]`` must not meet any
other thread's store.  Whatever the checker accepts must run without a race (the simulator's
race detector reports a read of an element another thread writes in the launch) for every ``n``
and launch shape its checks let through (the launches of :func:`tools.fuzz.guarded.launches`).
``tests/check/test_reads_apart.py`` runs a few hundred draws; ``python3 -m tools.fuzz_races
--family reads`` runs more, and on a GPU.
"""

from __future__ import annotations

import random
import re

from . import mirrored, residues, rowwalk

_STORE = re.compile(r"^(\s+)out\[(.+)\] = .+$")


def generated(r: random.Random) -> str:
    """The body of one module defining kernel ``k(out, n)``, drawn from ``r``; the same state
    always gives the same source."""
    while True:
        source = r.choice([mirrored, residues, rowwalk]).generated(r)
        lines = source.splitlines()
        stores = [k for k, line in enumerate(lines) if _STORE.match(line)]
        if len(stores) >= 2:
            break
    first, second = stores[0], stores[1]
    indent, a = _STORE.match(lines[first]).groups()  # type: ignore[union-attr]
    b = _STORE.match(lines[second]).group(2)  # type: ignore[union-attr]
    if r.random() < 0.5:
        a, b = b, a
    if r.random() < 0.3:
        # The read outside every condition, after them: it runs in threads the conditions
        # around the store leave out (a read at the store's own index is the thread's own
        # element only where the store runs too).
        lines.append(f"    v = out[{b}]")
        return "\n".join(lines) + "\n"
    lines[first] = f"{indent}out[{a}] = out[{b}] + 1"
    # `pass`, not nothing: the store may be the only statement of its block.
    lines[second] = _STORE.match(lines[second]).group(1) + "pass"  # type: ignore[union-attr]
    return "\n".join(lines) + "\n"
