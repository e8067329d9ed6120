"""Splits of a flat value and XOR swizzles: digits that are functions of other digits.

The ownership proofs (:mod:`.ownership`) follow ``tid % 32`` and ``tid // 32``: one thread
coordinate split by a constant.  The standard idioms split more: a flat value made of several
digits (``flat = ty * TX + tx + load * THREADS``, then ``tile[flat // BK, flat % BK]``), a
thread id split by a launch parameter (the FFT's ``t // half`` and ``t % half``), and a chunk
index XOR-ed with bits of its row (``(ka ^ ((ra >> 1) & 3)) * 8``, the bank-conflict swizzle of
tensor-core kernels).  This module gives each such value a *derived digit*: a
:class:`~.poly.Digit` whose ``of`` is a :class:`Derived` that says how it is computed.

**Ranges.**  A derived digit is built only from a flat value ``f`` that is never negative (every
coefficient positive, every atom a digit or a positive launch value) and a launch-uniform ``K``:
``f % K`` lies in ``[0, K)`` and ``f // K`` in ``[0, max(f) // K]``, for ``K >= 1``.  ``f & M``
(``M + 1`` a power of two) is ``f % (M + 1)``, ``f >> s`` is ``f // 2**s``.  ``x ^ y`` of two
values in ``[0, 2**m)`` lies in ``[0, 2**m)``.  Where ``K >= 1`` is not shown (a parameter's sign
is unknown until the launcher checks it; see :func:`.ownership.assume`), the split digits count
as unbounded integers and prove nothing of ``f``.

**Rules** (:func:`implied`, applied while the pair proof shows digits equal in both threads):

- R6, split: where ``f // K`` and ``f % K`` are both equal in both threads, so is ``f = K * (f //
  K) + f % K`` (for any ``K`` but 0, which stops the thread that divides by it before its store):
  the proof gains the dimension ``f == f'``, which the mixed-radix rule then reads like any
  index (``f`` unique per (thread, iteration) makes every digit equal).
- XOR: where ``x ^ y`` is equal in both threads and ``y`` is a function of values already shown
  equal (``(ra >> 1) & 3`` with ``ra`` equal), so is ``x``: XOR with a fixed value is one-to-one
  (where ``x`` is a flat value, ``block_idx.x * block_dim.x + thread_idx.x``, it is one more
  dimension).  ``y`` may be any value every thread shares (``i ^ j``, ``j`` a parameter of
  unknown sign): the digit may then be negative, and no rule that counts a digit as at least 0
  reads it (:func:`may_be_negative`).
- R11, rotation: where ``f % K`` is equal in both threads and the digits of ``f`` not yet shown
  equal make up less than ``K`` of its difference (``(block_idx.x + block_idx.y) %
  grid_dim.x`` with ``block_idx.x`` equal and ``block_idx.y`` below ``grid_dim.x``), ``f`` is
  equal too: one more dimension.  A quotient's range is ``Q`` where ``max(f) + 1`` is ``K * Q``
  (``bid // grid_dim.y`` below ``grid_dim.x`` for ``bid`` below ``grid_dim.x * grid_dim.y``).
- Any derived digit computed from values shown equal in both threads is equal (``phase & 1``
  where the pair shares the round: :mod:`.phases`).

Each thread's own values are exact only when ``f`` does not wrap: :func:`.wrapping.index_is_exact`
asks that of every operand of ``//``, ``%``, ``&``, ``>>`` and ``^``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..nodes import node
from .facts import ShapeKey
from .ownership import StoreForm
from .poly import (
    Digit,
    Poly,
    atom,
    const,
    digits_of,
    evaluate,
    is_uniform,
    magnitude,
    mul,
    nonnegative,
    poly_text,
    positive_atom,
    substitute,
    unassume,
)

__all__ = ["Derived", "align_loops", "deep", "derive", "derived_range", "derived_text", "derived_value", "implied", "lanes",
           "may_be_negative", "nested_atoms", "nested_digits", "prepare", "shows_positive"]

DERIVED = "derived"  # the coord of every derived digit


@node
class Derived:
    """How a derived digit is computed: ``op`` "hi" (``flat // other``), "lo" (``flat %
    other``) or "xor" (``flat ^ other``)."""

    op: str
    flat: Poly
    other: Poly


def _digit(op: str, flat: Poly, other: Poly) -> Poly:
    return atom(Digit(DERIVED, of=Derived(op, flat, other)))


def lanes(p: Poly) -> Poly:
    """``p`` with each ``flat % m`` (``m`` a power of two) whose ``flat`` is a thread
    coordinate plus multiples of ``m`` written as the thread's own digit: ``(block_idx.x *
    block_dim.x + thread_idx.x) % 32`` is ``thread_idx.x % 32`` in blocks of whole warps (the
    asserted extent is ``32 * q``).  The low bits of a sum are those of its low bits, also
    where the sum wraps in its type (two's complement, and ``%`` by a power of two floors), so
    the index need not be exact.  (Not the forms' first reading: a split rule pairs ``f %
    m`` with ``f // m``, which this would part.)"""

    def lane(a) -> Poly | None:
        d = a.of if isinstance(a, Digit) else None
        if d is None or d.op != "lo" or d.other.terms or d.other.const < 1:
            return None
        m = d.other.const
        rest = [(mono, k) for mono, k in d.flat.terms if k % m]
        if m & (m - 1) or d.flat.const % m or len(rest) != 1:
            return None
        (mono, k), = rest
        x = mono[0]
        if k != 1 or len(mono) != 1 or not isinstance(x, Digit) or not x.is_thread \
                or x.part != "all":
            return None
        return atom(Digit(x.coord, "lo", m))

    return substitute(p, lane)


def never_negative(p: Poly) -> bool:
    """Is ``p >= 0`` for every value of its atoms, digits at least 0?  (Every coefficient and
    the constant at least 0; every atom a digit that is never negative, a launch extent, an
    array extent or a checked parameter's slack.)"""
    if p.const < 0:
        return False
    return all(k >= 0 and all((isinstance(a, Digit) and not may_be_negative(a))
                              or isinstance(a, ShapeKey) or positive_atom(a) for a in m)
               for m, k in p.terms)


def may_be_negative(d: Digit) -> bool:
    """Is ``d`` an XOR with a value of unknown sign (``i ^ j``, ``j`` a parameter)?  Every
    other digit is at least 0."""
    return d.of is not None and d.of.op == "xor" and not (
        never_negative(d.of.flat) and never_negative(d.of.other))


def derive(op: str, left: Poly, right: Poly) -> Poly | None:
    """The polynomial of ``left op right`` as a derived digit, or ``None`` (see the module
    docstring for the forms)."""
    if op == "^" and is_uniform(left) and not is_uniform(right):
        left, right = right, left  # XOR commutes: `j ^ i` is `i ^ j`
    if is_uniform(left) or not never_negative(left):
        return None
    if op == "^":
        # With a value every thread shares of unknown sign (a parameter), the digit may be
        # negative (:func:`may_be_negative`): no rule that counts digits as at least 0 uses it.
        return _digit("xor", left, right) if never_negative(right) or is_uniform(right) \
            else None
    if not is_uniform(right):
        return None
    if op in ("//", "%"):
        if not right.terms and right.const < 1:
            return None
        return _digit("hi" if op == "//" else "lo", left, right)
    c = right.const
    if right.terms:
        return None
    if op == ">>" and 0 <= c < 63:
        return _digit("hi", left, const(1 << c))
    if op == "&" and c > 0 and c & (c + 1) == 0:
        return _digit("lo", left, const(c + 1))
    return None


def shows_positive(k: Poly) -> bool:
    """Is ``k >= 1`` on every launch (a constant, or launch extents and checked slacks)?"""
    if not k.terms:
        return k.const >= 1
    return magnitude(k) == k and nonnegative(k.plus(const(-1)))


def largest(p: Poly, range_of: Callable[[Digit], Poly | None]) -> Poly | None:
    """The largest value of a never-negative ``p`` (each digit below its range), or ``None``."""
    if not never_negative(p):
        return None
    out = const(p.const)
    for mono, k in p.terms:
        ds = [a for a in mono if isinstance(a, Digit)]
        if len(ds) > 1 or any(isinstance(a, ShapeKey) for a in mono):
            return None
        rest = const(k)
        for a in mono:
            if not isinstance(a, Digit):
                rest = mul(rest, atom(a))
        if ds:
            n = range_of(ds[0])
            if n is None or magnitude(n) is None:
                return None
            rest = mul(rest, n.plus(const(-1)))
        out = out.plus(rest)
    return out


def derived_range(d: Derived, range_of: Callable[[Digit], Poly | None]) -> Poly | None:
    """The range ``[0, n)`` of a derived digit: ``n``, or ``None`` when not bounded."""
    top = largest(d.flat, range_of)
    if d.op == "xor":
        other = largest(d.other, range_of)
        if top is None or other is None or top.terms or other.terms:
            return None
        return const(1 << max(top.const, other.const).bit_length())
    k = d.other
    if d.op == "lo":
        if not k.terms and top is not None and not top.terms:
            return const(min(k.const, top.const + 1))
        return k
    # hi: at most max(f) // K, at most max(f) for any K >= 1 (prepare() drops it otherwise).
    if top is None:
        return None
    if not k.terms and not top.terms:
        return const(top.const // k.const + 1)
    # max(f) + 1 == K * Q (a flat block number's largest value, gx * gy - 1, split by gy): the
    # quotient is below Q.
    return _quotient(top.plus(const(1)), k) or top.plus(const(1))


def _quotient(p: Poly, k: Poly) -> Poly | None:
    """``p / k`` where ``k`` is one monomial of launch values (``grid_dim.y``) that divides
    every term of ``p`` (and ``p`` has no constant), else ``None``."""
    if p.const or len(k.terms) != 1 or k.const:
        return None
    (divisor, c), = k.terms
    if c != 1 or any(isinstance(a, Digit) for a in divisor):
        return None
    out = const(0)
    for mono, coefficient in p.terms:
        rest = list(mono)
        for a in divisor:
            if a not in rest:
                return None
            rest.remove(a)
        out = out.plus(Poly.of(tuple(rest)).scaled(coefficient) if rest else const(coefficient))
    return out


def deep(replace: Callable[[object], Poly | None]) -> Callable[[object], Poly | None]:
    """``replace`` for :func:`.poly.substitute` that also rewrites inside derived digits
    (the same flat value in two stores stays one digit)."""

    def go(a) -> Poly | None:
        if isinstance(a, Digit) and a.of is not None:
            d = a.of
            flat, other = substitute(d.flat, go), substitute(d.other, go)
            if flat == d.flat and other == d.other:
                return replace(a)
            return _digit(d.op, flat, other)
        return replace(a)

    return go


def nested_atoms(mono) -> list:
    """The atoms of a monomial and, inside each derived digit, of its operands."""
    out = []
    for a in mono:
        out.append(a)
        if isinstance(a, Digit) and a.of is not None:
            for p in (a.of.flat, a.of.other):
                for m, _ in p.terms:
                    out.extend(nested_atoms(m))
    return out


def nested_digits(p: Poly) -> set[Digit]:
    """The digits of ``p``, and those its derived digits are computed from."""
    return {a for m, _ in p.terms for a in nested_atoms(m) if isinstance(a, Digit)}


def prepare(ranges: dict) -> dict:
    """The merged ranges of a pair, with the split digits of a ``K`` not shown ``>= 1``
    unbounded (their ranges assumed it)."""
    out = dict(ranges)
    for d in ranges:
        if d.of is not None and d.of.op in ("hi", "lo") and not shows_positive(d.of.other):
            out[d] = None
    return out


def _determined(p: Poly, forced: set) -> bool:
    """Is ``p`` the same in both threads: every digit in it shown equal, or derived from such?"""
    for m, _ in p.terms:
        for a in m:
            if isinstance(a, Digit) and a not in forced and not (
                    a.of is not None and _determined(a.of.flat, forced)
                    and _determined(a.of.other, forced)):
                return False
    return True


def implied(forced: set, ranges: dict, used: set, notes: list | None = None
            ) -> tuple[list[tuple[Poly, Poly]], set]:
    """What the digits shown equal (``forced``) imply: new dimensions (a split's flat value,
    equal in both threads) and new equal digits (the XOR rule).  ``used``: the flat values
    already given as dimensions (updated); ``notes``, where given, receives what a rotation
    showed, for the proof's text."""
    dims: list[tuple[Poly, Poly]] = []
    more: set = set()
    for d in sorted(ranges, key=repr):
        if d.of is not None and d not in forced and _determined(d.of.flat, forced) and \
                _determined(d.of.other, forced):
            more.add(d)  # a function of values equal in both threads (`phase & 1`, a round's)
        if d.of is None or d not in forced:
            continue
        if d.of.op == "hi":
            lo = Digit(DERIVED, of=Derived("lo", d.of.flat, d.of.other))
            key = (d.of.flat, d.of.other)
            # f == K * (f // K) + f % K for every K != 0 (floor division), and a thread that
            # computed the split ran with K != 0: a zero divisor stops it before its store.
            if lo in forced and key not in used:
                used.add(key)
                dims.append((d.of.flat, d.of.flat))
        elif d.of.op == "lo" and (d.of.flat, d.of.other) not in used and \
                _within_modulus(d.of.flat, d.of.other, forced, ranges):
            # R11, rotation: f % K equal makes f and f' congruent modulo K; where they differ
            # by less than K (the digits of f not yet equal span less), they are equal.
            used.add((d.of.flat, d.of.other))
            dims.append((d.of.flat, d.of.flat))
            if notes is not None:
                notes.append(f"the rotation {derived_text(d.of)} (R11)")
        elif d.of.op == "xor":
            for side, rest in ((d.of.flat, d.of.other), (d.of.other, d.of.flat)):
                ds = digits_of(side)
                if not ds or not _determined(rest, forced):
                    continue
                if len(ds) == 1 and side == atom(next(iter(ds))):
                    more |= ds - forced
                elif ("xor", side) not in used:
                    # A flat value (a grid's uid): equal in both threads, one more dimension.
                    used.add(("xor", side))
                    dims.append((side, side))
    return dims, more


def _within_modulus(flat: Poly, k: Poly, forced: set, ranges: dict) -> bool:
    """Do two threads' values of ``flat`` differ by less than ``k``, where the digits in
    ``forced`` are equal in both (``(block_idx.x + block_idx.y) % grid_dim.x`` with
    ``block_idx.x`` equal and ``block_idx.y < grid_dim.y == grid_dim.x``)?  Each term with a
    digit not shown equal, ``c * d``, makes up at most ``|c| * (n - 1)`` of the difference."""
    spread = const(0)
    for mono, c in flat.terms:
        ds = [a for a in mono if isinstance(a, Digit)]
        if not ds or _determined(Poly.of(mono), forced):
            continue  # the same in both threads
        n = ranges.get(ds[0])
        if len(ds) > 1 or may_be_negative(ds[0]) or n is None or magnitude(n) != n:
            return False
        term = mul(const(abs(c)), n.plus(const(-1)))
        for a in mono:
            if not isinstance(a, Digit):
                if not positive_atom(a):
                    return False
                term = mul(term, atom(a))
        spread = spread.plus(term)
    slack = k.plus(spread.scaled(-1)).plus(const(-1))
    return all(positive_atom(a) for m, _ in slack.terms for a in m) and nonnegative(slack)


def derived_text(d: Derived) -> str:
    """How a derived digit reads in a message."""
    def part(p: Poly) -> str:
        text = poly_text(unassume(p))
        return text if len(p.terms) + (1 if p.const else 0) <= 1 else f"({text})"
    sign = {"hi": "//", "lo": "%", "xor": "^"}[d.op]
    return f"{part(d.flat)} {sign} {part(d.other)}"


def derived_value(d: Derived, value: Callable[[object], int]) -> int:
    """The digit's value where each atom of its operands has ``value``."""
    x, y = evaluate(d.flat, value), evaluate(d.other, value)
    if d.op == "xor":
        return x ^ y
    if y == 0:
        return 0
    return x // y if d.op == "hi" else x % y


def align_loops(a: StoreForm, b: StoreForm, same: frozenset = frozenset()) -> StoreForm:
    """``b`` with each loop counter renamed to ``a``'s counter of the same loop variable name
    (one each): the prologue's ``for q in range(4)`` and the main loop's copy of it give the
    same split digits.  Sound: the pair proof reads a counter in two threads as two values, each
    within the pair's (wider, see :func:`.radix.prove_pair`) range, whatever its name."""
    def loops(f: StoreForm) -> dict[str, list[Digit]]:
        found: dict[str, list[Digit]] = {}
        digits = set(f.ranges) | {d for p in f.dims for d in nested_digits(p)}
        for d in sorted(digits, key=repr):
            if d.coord.startswith("loop:"):
                found.setdefault(d.coord[5:].split("@")[0], []).append(d)
        return found

    if a is b:
        return b
    mine, theirs = loops(a), loops(b)
    # A counter the pair shares (``same``: one round of a loop that holds both) is one value
    # in both threads: none is renamed to it, or from it.
    rename = {ds[0]: mine[n][0] for n, ds in theirs.items()
              if len(ds) == 1 and len(mine.get(n, ())) == 1 and ds[0] != mine[n][0]
              and ds[0] not in same and mine[n][0] not in same}
    if not rename:
        return b
    replace = deep(lambda x: atom(rename[x]) if x in rename else None)

    def digit(d):
        (mono, _), = substitute(atom(d), replace).terms
        return mono[0]

    return StoreForm(tuple(substitute(p, replace) for p in b.dims),
                     {digit(d): v for d, v in b.pins.items()},
                     {digit(d): n for d, n in b.ranges.items()},
                     b.line, b.text, b.single, b.whole, b.launch,
                     tuple((substitute(q, replace), u) for q, u in b.bounded))
