"""Residues: two stores whose indices a condition puts in one residue class, at offsets that are
not, write different elements (``if i % 2 == 0: a[i] = y; a[i + 1] = x``, a pairwise swap).

Where a condition ``E % m == c`` (or ``E & (m - 1) == c``) around both stores holds with ``m`` a
power of two and ``c`` the same value for every thread of the launch (a constant or an unchanged
parameter), and one index of the stores is ``E + ka`` at one and ``E + kb`` at the other with
``ka - kb`` not a multiple of ``m``, then for any two threads ``T`` and ``T'`` (the same one
included) ``(E(T) + ka) - (E(T') + kb)`` is ``ka - kb`` modulo ``m``: never 0, so never one
element.

Wrapping: ``+ - *`` in a fixed-width type agree with the exact values modulo ``2**bits``, and so
modulo ``m``; ``%`` follows Python (floor), so ``E % m`` is the residue itself, and ``E & (m -
1)`` is the same residue in two's complement.  The condition therefore holds of the exact ``E``
too, but the store's index must be exact (no wrap) for its element to be ``E + k``:
:attr:`.ownership.StoreForm.exact`.  ``c`` must not change between the two stores' runs: a loop
counter (a digit) or a read of memory is not taken.
"""

from __future__ import annotations

from collections.abc import Iterable

from .facts import Equal, Key, OpKey
from .poly import Poly, digits_of, poly_text

__all__ = ["residue_conditions", "residues_apart"]


def _modulus(key: Key) -> tuple[Key, int] | None:
    """``(E, m)`` where ``key`` is ``E % m`` or ``E & (m - 1)``, ``m`` a power of two >= 2."""
    if not isinstance(key, OpKey):
        return None
    k = key.right.integer
    if k is None or isinstance(k, bool):
        return None
    if key.op == "%" and k >= 2 and k & (k - 1) == 0:
        return key.left, k
    if key.op == "&" and k >= 1 and (k + 1) & k == 0:
        return key.left, k + 1
    return None


def residue_conditions(facts: Iterable, poly, fold) -> tuple[tuple[Poly, int, Poly], ...]:
    """``(E, m, c)`` of each fact ``E % m == c`` among ``facts`` (see the module docstring):
    ``poly`` makes a key's polynomial (None where it has none), ``fold`` rewrites one as the
    store's indices are."""
    out = []
    for f in facts:
        if not isinstance(f, Equal):
            continue
        for a, b in ((f.left, f.right), (f.right, f.left)):
            found = _modulus(a)
            if found is None or b.reads_memory() or found[0].reads_memory():
                continue
            left, m = found
            e, c = poly(left), poly(b)
            if e is None or c is None or digits_of(c) or not digits_of(e):
                continue
            out.append((fold(e), m, fold(c)))
    return tuple(out)


def residues_apart(a, b) -> str | None:
    """The rule's text where a condition around both stores ``a`` and ``b``
    (:class:`.ownership.StoreForm`) puts one index of theirs in one residue class at offsets
    that differ in it (see the module docstring); else None."""
    if a is b or len(a.dims) != len(b.dims):
        return None
    shared = [r for r in a.residues if r in b.residues]
    for k, (pa, pb) in enumerate(zip(a.dims, b.dims)):
        if not (_exact(a, k) and _exact(b, k)):
            continue
        for e, m, c in shared:
            da, db = pa.plus(e.scaled(-1)), pb.plus(e.scaled(-1))
            if da.terms or db.terms or (da.const - db.const) % m == 0:
                continue
            axis = "" if len(a.dims) == 1 else f" {k}"
            e_text = poly_text(e)
            if len(e.terms) + (e.const != 0) > 1:
                e_text = f"({e_text})"
            return (f"{e_text} % {m} == {poly_text(c)} around both stores, and index{axis} is "
                    f"{poly_text(pa)} here, {poly_text(pb)} at line {b.line}: apart modulo {m}")
    return None


def _exact(form, k: int) -> bool:
    return len(form.exact) > k and form.exact[k] is True
