"""Polynomials over *digits* and launch-uniform atoms: the forms of the ownership proofs.

A :class:`Digit` is a value that differs between threads or between a thread's iterations, with a
known range; the other atoms are uniform over the launch (:mod:`.facts` keys: ``block_dim``,
``grid_dim``, unchanged scalar parameters, extents) or a :class:`Slack` that stands for a
parameter the launcher bounds.  A polynomial is an :class:`~gpu_native.analysis.ranges.Affine`
form whose symbols are monomials, sorted tuples of atoms.  :mod:`.ownership` proves stores apart
with them; :mod:`.wrapping` turns them into launch checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..analysis.ranges import Affine
from ..nodes import node
from .facts import ConstKey, Key, OpKey, ShapeKey, SpecialKey, VarKey

if TYPE_CHECKING:
    from .splits import Derived


@node
class Digit:
    """A value that differs between threads (``coord`` "tid0".."bid2") or between iterations
    (``coord`` "loop:N"): the whole coordinate (``part`` "all"), or its ``part`` "lo" (``x %
    radix``) or "hi" (``x // radix``)."""

    coord: str
    part: str = "all"
    radix: int = 0
    of: Derived | None = None  # a function of other digits (coord "derived", see .splits)

    @property
    def is_thread(self) -> bool:
        return self.coord[:3] in ("tid", "bid")

    def text(self) -> str:
        if self.of is not None:
            from .splits import derived_text
            return derived_text(self.of)
        if not self.is_thread:
            return self.coord[5:].split("@")[0]
        name = f"{'thread_idx' if self.coord[0] == 't' else 'block_idx'}.{'xyz'[int(self.coord[3])]}"
        if self.part == "lo":
            return f"{name} % {self.radix}"
        if self.part == "hi":
            return f"{name} // {self.radix}"
        return name


Poly = Affine  # symbols are monomials: sorted tuples of atoms (Digits and uniform Keys)


def atom_order(a) -> str:
    return repr(a)


def const(c: int) -> Poly:
    return Affine(c)


def atom(a) -> Poly:
    return Affine.of((a,))


def mul(p: Poly, q: Poly) -> Poly:
    """The product of two polynomials."""
    out = Affine(p.const * q.const)
    for m, k in p.terms:
        out = out.plus(Affine(0, frozenset({(m, k * q.const)})) if q.const else Affine())
    for m, k in q.terms:
        out = out.plus(Affine(0, frozenset({(m, k * p.const)})) if p.const else Affine())
    for m1, k1 in p.terms:
        for m2, k2 in q.terms:
            mono = tuple(sorted(m1 + m2, key=atom_order))
            out = out.plus(Affine(0, frozenset({(mono, k1 * k2)})))
    return out


def digits_of(p: Poly) -> set[Digit]:
    return {a for m, _ in p.terms for a in m if isinstance(a, Digit)}


def is_uniform(p: Poly) -> bool:
    return not digits_of(p)


def substitute(p: Poly, replace: Callable[[object], Poly | None]) -> Poly:
    """``p`` with each atom ``a`` for which ``replace(a)`` is a polynomial replaced by it."""
    out = Affine(p.const)
    for m, k in ordered_terms(p.terms):
        term = const(k)
        for a in m:
            r = replace(a)
            term = mul(term, r if r is not None else atom(a))
        out = out.plus(term)
    return out


def evaluate(p: Poly, value: Callable[[object], int]) -> int:
    total = p.const
    for m, k in p.terms:
        v = k
        for a in m:
            v *= value(a)
        total += v
    return total


def nonnegative(p: Poly) -> bool:
    """Is ``p >= 0`` for every value of its atoms, each at least 1 (``block_dim``, ``grid_dim``)?
    (Sufficient: no monomial with a negative coefficient, and ``p(1, ..., 1) >= 0``.)"""
    if all(k >= 0 for _, k in p.terms) and evaluate(p, lambda a: 1) >= 0:
        return True
    # Each atom as 1 + a' with a' >= 0: nonnegative coefficients then show it (``(S - 1) * b +
    # G * b`` with S >= 1, which an assumption on a parameter makes).
    shifted = substitute(p, lambda a: atom(a).plus(const(1)))
    return shifted.const >= 0 and all(k >= 0 for _, k in shifted.terms)


def positive_atom(a) -> bool:
    return isinstance(a, (Slack, Quotient)) or (
        isinstance(a, SpecialKey) and a.name in ("block_dim", "grid_dim"))


def ordered_terms(terms) -> list:
    """A polynomial's terms in a fixed order (by monomial)."""
    return sorted(terms, key=lambda t: repr(t[0]))


def poly_text(p: Poly) -> str:
    parts = []
    for m, k in sorted(p.terms, key=lambda t: repr(t[0])):
        names = " * ".join(atom_text(a) for a in m)
        parts.append(names if k == 1 else f"{k} * {names}")
    if p.const or not parts:
        parts.append(str(p.const))
    return " + ".join(parts).replace("+ -", "- ")


def atom_text(a) -> str:
    if isinstance(a, Digit):
        return a.text()
    if isinstance(a, Slack):
        return f"({a.name} - {poly_text(a.bound)} + 1)"
    if isinstance(a, Quotient):
        return f"{atom_text(a.extent)} // {a.k}"
    if isinstance(a, SpecialKey):
        return f"{a.name}.{'xyz'[a.axis]}"
    if isinstance(a, Key):
        return key_text(a)
    return "..."


def key_text(k: Key, nested: bool = False) -> str:
    """A launch-uniform atom as the kernel spells it (``len(a) // 2`` reads ``a.shape[0] //
    2``); ``...`` for a value it has no words for."""
    if isinstance(k, VarKey):
        return k.var.name
    if isinstance(k, ShapeKey):
        return f"{k.array.name}.shape[{k.axis}]"
    if isinstance(k, SpecialKey):
        return f"{k.name}.{'xyz'[k.axis]}"
    if isinstance(k, ConstKey):
        return str(k.value)
    if isinstance(k, OpKey):
        text = f"{key_text(k.left, True)} {k.op} {key_text(k.right, True)}"
        return f"({text})" if nested else text
    return "..."



@node
class Quotient:
    """``extent // k`` where an assert shows ``extent % k == 0`` (``assert block_dim.x % 32 ==
    0``): at least 1, and ``extent`` is ``k`` times it, so ``block_dim.x // 32`` (the warps of a
    block) is a stride that ``thread_idx.x // 32`` never reaches."""

    extent: SpecialKey
    k: int


@node
class Slack:
    """``name - bound + 1``: at least 1 where the launcher checked ``name >= bound``, or where a
    condition around the store shows it (``var`` a parameter's key, or an extent's)."""

    var: Key  # a parameter, an extent, or another launch-uniform value (len(a) // 2)
    bound: Affine

    @property
    def name(self) -> str:
        return key_text(self.var)


def unassume(p: Poly) -> Poly:
    """``p`` with each :class:`Slack` written back as its parameter (for the rule's text)."""
    return substitute(p, lambda a: atom(a.var).plus(unassume(a.bound).scaled(-1)).plus(
        const(1)) if isinstance(a, Slack) else None)


def coefficients(p: Poly) -> dict:
    """Each digit of ``p`` and its coefficient (a polynomial of uniform atoms)."""
    out: dict = {}
    for mono, k in p.terms:
        digits = [a for a in mono if isinstance(a, Digit)]
        if len(digits) == 1:
            rest = tuple(a for a in mono if a is not digits[0])
            c = Affine(0, frozenset({(rest, k)})) if rest else const(k)
            out[digits[0]] = out.get(digits[0], Affine()).plus(c)
    return out



def magnitude(c: Poly) -> Poly | None:
    if any(not all(positive_atom(x) for x in m) for m, _ in c.terms):
        return None
    if nonnegative(c):
        return c
    if nonnegative(c.scaled(-1)):
        return c.scaled(-1)
    return None
