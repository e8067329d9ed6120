"""Two stores that the conditions around them keep apart: one index of one store (or the sum or
difference of two of its indices) is always above the other store's, whichever threads run them.

The mixed-radix rule (:mod:`.radix`) tells threads apart by the digits of one index; it cannot
see that an in-place reverse ``if i < n // 2: a[i], a[n - 1 - i] = ...`` is race-free, since
the two stores' digits have opposite signs, nor a square transpose ``if x < y: a[y, x], a[x, y]
= ...``, whose two indices trade places.  Here each store's thread is a separate set of values:
for a pair ``(a, b)`` and a combination ``E`` of index dimensions (one index; the sum or
difference of two), ``E(a's index in thread T) - E(b's index in thread T')`` is bounded below
over every ``T`` that runs ``a`` and ``T'`` that runs ``b``; where that bound is at least 1 (or
the bound of the negated difference is), no two threads, the same one included, write one
element through the pair.

**Bounds.**  A thread's part of the difference is a linear sum of its digits (each at least 0:
a thread coordinate, its radix parts, a loop's iteration count).  Its lower bound comes from a
comparison around its store (:attr:`.ownership.StoreForm.relations`, ``Q < U``, so ``Q <= U -
1``): where the part is ``-mu * Q`` plus digits with nonnegative coefficients (``mu`` a positive
fraction: ``-i`` under ``if i < n - 1 - i:`` is ``-(2 * i) / 2``), it is at least ``-mu * (U -
1)``; or from the digits' own ranges (``-c * d >= -c * (n - 1)``).  Only comparisons whose
sides are exact (no wrap) are relations, and only integer arithmetic is done on them: the
fractions are cleared by scaling.

**The uniform rest** must then be shown at least 1 with every atom positive: ``block_dim``,
``grid_dim``, or a value that a condition bounds below (``if i < n // 2:`` makes ``n // 2 >=
1``, :func:`.ownership.guard_assumptions`).  A floor division ``X // K`` by a positive constant
that a comparison holds relates ``X`` to it: ``X == K * (X // K) + r`` with ``0 <= r <= K - 1``
(floor division, as kernels do it), so an atom of ``X`` is written through ``X // K`` and the
bound takes the worst ``r``; that shows ``n - 2 * (n // 2) >= 0``.  The indices a combination
reads must be exact at both stores (:attr:`.ownership.StoreForm.exact`): one that may wrap
could meet the other by a multiple of ``2**bits``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..analysis.ranges import Affine
from ..nodes import node
from .ownership import Assumption, StoreForm, guard_assumptions
from .poly import (
    Digit,
    Poly,
    atom,
    coefficients,
    const,
    is_uniform,
    magnitude,
    mul,
    nonnegative,
    positive_atom,
    substitute,
)

__all__ = ["bounds_apart"]


@node
class Remainder:
    """``X % K`` of a division ``X // K`` a comparison holds: between 0 and ``K - 1``."""

    quotient: object
    k: int


def bounds_apart(a: StoreForm, b: StoreForm) -> str | None:
    """The rule's text where the conditions around ``a`` and ``b`` keep every element one
    writes apart from every element the other writes (see the module docstring); else None."""
    if not (a.relations or b.relations) or len(a.dims) != len(b.dims):
        return None
    divisions = {d[0]: d for d in a.divisions + b.divisions}
    # What the conditions show of uniform values (``if i < n // 2:`` makes n // 2 >= 1).
    assumptions = guard_assumptions((a, b))
    for weights, what in _combinations(len(a.dims)):
        if not (_exact(a, weights) and _exact(b, weights)):
            continue
        pa = _combined(a.dims, weights)
        pb = _combined(b.dims, weights)
        for sign, order in ((1, "above"), (-1, "below")):
            mine, theirs = pa.scaled(sign), pb.scaled(-sign)
            rest = _uniform(mine).plus(_uniform(theirs))
            for low_a, den_a in _lower(_digits(mine), a):
                for low_b, den_b in _lower(_digits(theirs), b):
                    den = math.lcm(den_a, den_b)
                    total = rest.scaled(den).plus(low_a.scaled(den // den_a)).plus(
                        low_b.scaled(den // den_b))
                    if _at_least(total, den, divisions, assumptions):
                        return (f"the conditions around the stores keep them apart: {what} is "
                                f"always {order} its value at line {b.line}")
    return None


def _combinations(ndim: int) -> list[tuple[tuple[int, ...], str]]:
    """The combinations of index dimensions tried: each index, then the difference and the sum
    of each two (a transpose's indices trade places: their difference changes sign)."""
    out = []
    for k in range(ndim):
        weights = tuple(int(j == k) for j in range(ndim))
        out.append((weights, "the index" if ndim == 1 else f"index {k}"))
    for k in range(ndim):
        for m in range(k + 1, ndim):
            for s, word in ((-1, "minus"), (1, "plus")):
                weights = tuple(1 if j == k else s if j == m else 0 for j in range(ndim))
                out.append((weights, f"index {k} {word} index {m}"))
    return out


def _exact(form: StoreForm, weights: tuple[int, ...]) -> bool:
    """Is each index the combination reads exact at the store (the bounds are of integers:
    an index that may wrap could meet the other store's by a multiple of ``2**bits``)?"""
    return len(form.exact) == len(weights) and all(
        form.exact[k] for k, w in enumerate(weights) if w)


def _combined(dims: tuple[Poly, ...], weights: tuple[int, ...]) -> Poly:
    out = Affine()
    for p, w in zip(dims, weights):
        if w:
            out = out.plus(p.scaled(w))
    return out


def _digits(p: Poly) -> Poly:
    """The terms of ``p`` that hold a digit."""
    return Affine(0, frozenset(t for t in p.terms if any(isinstance(x, Digit) for x in t[0])))


def _uniform(p: Poly) -> Poly:
    """``p`` without its digits' terms."""
    return Affine(p.const, frozenset(t for t in p.terms
                                     if not any(isinstance(x, Digit) for x in t[0])))


def _lower(g: Poly, form: StoreForm) -> list[tuple[Poly, int]]:
    """Lower bounds of the digits' sum ``g`` over the threads that run ``form``: ``(N, s)`` for
    ``g >= N / s``, from the digits' ranges alone and from each comparison around the store."""
    if any(sum(isinstance(x, Digit) for x in m) > 1 for m, _ in g.terms):
        return []
    out = []
    alone = _interval(g, form)
    if alone is not None:
        out.append((alone, 1))
    cg = coefficients(g)
    for q, u in form.relations:
        cq = coefficients(q)
        tried: set[Fraction] = set()
        for d, c in cq.items():
            r = _ratio(cg[d], c) if d in cg else None
            if r is None or r >= 0 or -r in tried:
                continue
            mu = -r
            tried.add(mu)
            # s * g == rest - p * q, and q <= u - 1.
            s, p = mu.denominator, mu.numerator
            rest = _interval(g.scaled(s).plus(q.scaled(p)), form)
            if rest is not None:
                out.append((rest.plus(u.plus(const(-1)).scaled(-p)), s))
    return out


def _interval(g: Poly, form: StoreForm) -> Poly | None:
    """The least value of the digits' sum ``g`` from each digit's range ``[0, n)``: 0 for a
    term with a nonnegative coefficient, ``c * (n - 1)`` for a negative ``c``; None where a
    coefficient's sign or a needed range is unknown."""
    low = Affine()
    for d, c in coefficients(g).items():
        if d.of is not None:
            return None  # a derived digit (.splits) may be negative
        if not c.terms and not c.const:
            continue
        m = magnitude(c)
        if m is None:
            return None
        if m == c:
            continue
        n = form.ranges.get(d)
        if n is None and d.is_thread and d.part == "all":
            n = (form.whole or {}).get(d.coord)
        if n is None or magnitude(n) != n:
            return None
        low = low.plus(mul(c, n.plus(const(-1))))
    return low


def _ratio(c: Poly, k: Poly) -> Fraction | None:
    """``c / k`` where it is a constant fraction (``-block_dim.x`` over ``2 * block_dim.x``)."""
    if (c.const == 0) != (k.const == 0):
        return None
    ct, kt = dict(c.terms), dict(k.terms)
    if set(ct) != set(kt):
        return None
    ratios = {Fraction(ct[m], kt[m]) for m in ct}
    if k.const:
        ratios.add(Fraction(c.const, k.const))
    return ratios.pop() if len(ratios) == 1 else None


def _at_least(p: Poly, c: int, divisions: dict, assumptions: list[Assumption]) -> bool:
    """Is ``p >= c`` for every launch that runs both stores?  Each atom must be positive
    (``block_dim``, ``grid_dim``), but for the floor divisions comparisons hold (``divisions``:
    ``X // K`` -> ``(X // K, X, K)``), whose dividends are written as ``K * (X // K) + r``, and
    the uniform values the conditions bound below (``assumptions``, see
    :func:`.ownership.guard_assumptions`)."""
    p = p.plus(const(-c))
    remainders: dict = {}
    for quotient, x, k in divisions.values():
        for mono, coefficient in x.terms:
            if len(mono) != 1 or coefficient not in (1, -1) or positive_atom(mono[0]):
                continue
            v = mono[0]
            if not any(v in m for m, _ in p.terms):
                continue
            r = Remainder(quotient, k)
            remainders[r] = k
            # x == k * quotient + r, and x == coefficient * v + others.
            others = x.plus(atom(v).scaled(-coefficient))
            value = atom(quotient).scaled(k).plus(atom(r)).plus(others.scaled(-1)).scaled(
                coefficient)
            p = _replaced(p, v, value)
            break
    for r, k in remainders.items():
        terms = [(m, w) for m, w in p.terms if r in m]
        if any(m != (r,) for m, _ in terms):
            return False
        # The worst remainder: 0 where it adds, K - 1 where it takes away.
        p = _replaced(p, r, const(0 if sum(w for _, w in terms) > 0 else k - 1))
    for assumption in assumptions:
        p = substitute(p, assumption.replace)
    if not is_uniform(p) or any(not positive_atom(x) for m, _ in p.terms for x in m):
        return False
    return nonnegative(p)


def _replaced(p: Poly, old: object, value: Poly) -> Poly:
    """``p`` with the atom ``old`` replaced by ``value``."""
    def replace(a: object) -> Poly | None:
        return value if a == old else None

    return substitute(p, replace)
