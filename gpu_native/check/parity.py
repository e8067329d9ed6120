"""Parity: the in-place red-black (checkerboard) update reads neighbours no thread writes.

When every store into an array happens under a condition ``(i + j) % 2 == c`` whose left side is
the sum of the store's indices and whose ``c`` is the same launch-uniform value for every store
(a constant, or an unchanged parameter such as ``colour``), every element written in the launch
has index sum of one parity.  A read under the same condition, at indices whose sum is that
condition's sum plus an odd constant (``u[y - 1, x]``, ``u[y, x + 1]``), reads an element of the
other parity: no thread writes it, so no thread races with the read.

Sums are compared as polynomials (:mod:`.ownership`).  Wrapping does not matter: ``+ - *`` in a
fixed-width type agree with the exact values modulo ``2**bits``, so they keep the parity; ``%``
follows Python (floor), so ``x % 2`` is 0 or 1, the parity itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from .facts import Equal, Key, OpKey
from .ownership import Forms
from .poly import Poly, is_uniform

__all__ = ["read_parities", "store_parities"]


def _index_sum(forms: Forms, keys: Iterable[Key]) -> Poly | None:
    total = None
    for k in keys:
        p = forms.poly(k)
        if p is None:
            return None
        total = p if total is None else total.plus(p)
    return total


def _conditions(forms: Forms, facts: Iterable) -> list[tuple[Poly, Key]]:
    """The ``(E, c)`` of each fact ``E % 2 == c`` with ``c`` launch-uniform."""
    out = []
    for f in facts:
        if not isinstance(f, Equal):
            continue
        for a, b in ((f.left, f.right), (f.right, f.left)):
            if isinstance(a, OpKey) and a.op == "%" and a.right.integer == 2:
                e, c = forms.poly(a.left), forms.poly(b)
                if e is not None and c is not None and is_uniform(c):
                    out.append((e, b))
    return out


def store_parities(forms: Forms, keys: tuple[Key, ...], facts: Iterable) -> frozenset:
    """The values ``c`` (as keys) of the conditions ``(sum of the indices) % 2 == c`` around a
    store: every element it writes has that parity."""
    total = _index_sum(forms, keys)
    if total is None:
        return frozenset()
    return frozenset(c for e, c in _conditions(forms, facts) if e == total)


def read_parities(forms: Forms, keys: tuple[Key, ...], facts: Iterable) -> frozenset:
    """The values ``c`` of the conditions ``E % 2 == c`` around a read whose index sum is ``E``
    plus an odd constant: the read's element has the other parity."""
    total = _index_sum(forms, keys)
    if total is None:
        return frozenset()
    out = set()
    for e, c in _conditions(forms, facts):
        offset = total.plus(e.scaled(-1))
        if not offset.terms and offset.const % 2 == 1:
            out.add(c)
    return frozenset(out)
