"""Race-freedom of a pair of stores from their forms (:mod:`.ownership`): the mixed-radix rule.

**The proof.**  Two threads ``T != T'`` collide on a pair of stores ``(s, s')`` of one array when
every index dimension agrees.  In each dimension the difference is ``sum(c_d * delta_d)`` over
the digits plus the difference of the two stores' uniform parts.  When the digits of a dimension
form a *mixed radix* (sorted by coefficient, each coefficient exceeds the largest sum the smaller
digits can make: ``c_k > sum(|c_j| * (n_j - 1))``), the only solution has every ``delta`` zero;
those digits are then equal in both threads, drop out of the other dimensions, and the rule is
applied again.  The pair is race-free when every digit of every thread coordinate that must be
unique (the grid's for global memory, the block's for shared memory) is shown equal, or when a
dimension has no solution at all (the stores' offsets differ by a multiple the digits cannot
make up).  A coordinate pinned by a condition (``if lane == 0:``) is equal in both threads when
both stores are under the same pin.
"""

from __future__ import annotations

import math

from ..analysis.ranges import HARDWARE, Affine
from ..nodes import node, replace
from .ownership import Pin, StoreForm
from .poly import (
    Digit,
    Poly,
    atom,
    coefficients,
    const,
    digits_of,
    magnitude,
    mul,
    nonnegative,
    ordered_terms,
    poly_text,
    positive_atom,
    substitute,
    unassume,
)

__all__ = ["PairProof", "prove_pair"]


def _split(forms: tuple[StoreForm, StoreForm]) -> tuple[tuple[StoreForm, StoreForm], dict] | str:
    """Both forms with every thread coordinate written in one radix (``tid`` as ``32 * (tid //
    32) + tid % 32`` where either uses ``tid % 32``); the merged digit ranges."""
    radix: dict[str, int] = {}
    for f in forms:
        for digit in list(f.ranges) + list(f.pins):
            if digit.part != "all" and radix.setdefault(digit.coord, digit.radix) != digit.radix:
                return f"{Digit(digit.coord).text()} is split in two different radices"
    if not radix:
        return forms, {}

    def rewrite(a):
        if isinstance(a, Digit) and a.part == "all" and a.coord in radix:
            r = radix[a.coord]
            return atom(Digit(a.coord, "hi", r)).scaled(r).plus(atom(Digit(a.coord, "lo", r)))
        return None

    out = []
    for f in forms:
        dims = tuple(substitute(p, rewrite) for p in f.dims)
        pins = {}
        for digit, value in f.pins.items():
            if digit.part == "all" and digit.coord in radix:
                r = radix[digit.coord]
                v = value.value
                pins[Digit(digit.coord, "hi", r)] = Pin(("hi", value.source),
                                                        None if v is None else v // r,
                                                        value.rounds)
                pins[Digit(digit.coord, "lo", r)] = Pin(("lo", value.source),
                                                        None if v is None else v % r,
                                                        value.rounds)
            else:
                pins[digit] = value
        ranges = dict(f.ranges)
        # A split coordinate tells threads apart only by both of its parts: each is a digit of
        # the pair, in the index or not.
        for coord, r in radix.items():
            for part in ("lo", "hi"):
                ranges.setdefault(Digit(coord, part, r), None)
        items = list(f.ranges.items()) + [(Digit(c), (f.whole or {}).get(c)) for c in radix]
        for digit, n in items:
            if digit.part == "all" and digit.coord in radix:
                r = radix[digit.coord]
                lo = Digit(digit.coord, "lo", r)
                if ranges.get(lo) is None:
                    ranges[lo] = const(r) if n is None or n.terms else const(min(r, n.const))
                top = n
                if n is not None and n.terms:
                    name = "block_dim" if digit.coord.startswith("tid") else "grid_dim"
                    top = const(HARDWARE.special(name, int(digit.coord[3])).hi)
                hi = Digit(digit.coord, "hi", r)
                if ranges.get(hi) is None:
                    ranges[hi] = None if top is None else const(-(-top.const // r))
        for coord in radix:
            ranges.pop(Digit(coord), None)
        bounded = tuple((substitute(q, rewrite), u) for q, u in f.bounded)
        out.append(StoreForm(dims, pins, ranges, f.line, f.text, f.single, f.whole, f.launch,
                             bounded))
    return (out[0], out[1]), {}


@node
class PairProof:
    """The outcome for a pair of stores: ``ok``, and the rule (or the reason it failed)."""

    ok: bool
    text: str
    missing: tuple[Digit, ...] = ()
    hint: str = ""  # what would make the pair provable, where a rule knows (.monotone)
    # Whether the rule is about the pair (their ranges, the conditions around them), not the
    # digits each store reads: ``expand --proofs`` shows its text beside the store's own rule.
    shown: bool = False


def prove_pair(a: StoreForm, b: StoreForm, required: frozenset[str],
               same: frozenset = frozenset()) -> PairProof:
    """Can a thread's store ``a`` and another thread's store ``b`` write the same element?
    ``required``: the thread coordinates that tell threads apart here; ``same``: loop counters
    the two threads share (the pair is in one round of their loops: .phases.round_digits).

    Where that fails and a condition gives a digit of one store a value every thread shares
    (``if tx == block_dim.x - 1:``), the pair is tried again with the digit written as that
    value in the store's index (:func:`_pinned_values`): the offsets may then be apart (a halo
    store beside the tile's), though the digit no longer pairs with the other store's (the
    same thread reaching both stores, which is no race, shows as two)."""
    outcome = _prove_pair(a, b, required, same, False)
    assert outcome is not None  # only a try with the pins' values gives none
    if not outcome.ok:
        # A global lane in blocks of whole warps, read as the thread's own (.splits.lanes;
        # Forms.store reads a pin on one so already).
        la, lb = _lanes(a), _lanes(b)
        if la is not a or lb is not b:
            again = _prove_pair(la, lb, required, same, False)
            if again is not None and again.ok:
                return again
    if outcome.ok or not any(p.poly is not None for f in (a, b) for p in f.pins.values()):
        return outcome
    again = _prove_pair(a, b, required, same, True)
    return again if again is not None and again.ok else outcome


def _lanes(f: StoreForm) -> StoreForm:
    """``f`` with the grid's lanes in its indices read as the thread's own (``f`` itself where
    it has none)."""
    from .splits import lanes
    dims = tuple(lanes(p) for p in f.dims)
    if dims == f.dims:
        return f
    ranges = dict(f.ranges)
    for d in (d for p in dims for d in digits_of(p)):
        if d.part == "lo" and d.of is None:
            ranges.setdefault(d, const(d.radix))
    return replace(f, dims=dims, ranges=ranges)


def _prove_pair(a: StoreForm, b: StoreForm, required: frozenset[str], same: frozenset,
                pinned_values: bool) -> PairProof | None:
    """:func:`prove_pair`'s one try, with the pins' values written in (``pinned_values``); None
    where there is none to write (every pin with a value shared: the first try again)."""
    from .splits import align_loops
    apart = _rounds_apart(a, b, same)
    if apart is not None:
        return PairProof(True, apart)
    split = _split((a, align_loops(a, b, same)))  # one name per loop variable (.splits)
    if isinstance(split, str):
        return PairProof(False, split)
    (a, b), _ = split
    # Pins that both stores share (same digit, same value) hold the digit equal; a pin to a
    # value of loop counters only where the pair shares them.
    equal = {d for d, v in a.pins.items() if b.pins.get(d) == v and v.rounds <= same}
    if pinned_values:
        pinned_a, pinned_b = _pinned_values(a, equal), _pinned_values(b, equal)
        if pinned_a is a and pinned_b is b:
            return None
        a, b = pinned_a, pinned_b
    ranges: dict = {}
    for f in (a, b):
        for d, n in f.ranges.items():
            # A digit's value in each thread lies in its own store's range (``if tid < 16:``
            # narrows one store only): the pair needs the larger of the two.
            ranges[d] = _wider(ranges[d], n) if d in ranges else n
    from .splits import implied, prepare
    ranges = prepare(ranges)  # a split by a K not shown >= 1 bounds nothing
    thread_digits = {d for d in ranges if d.is_thread and d.coord in required}
    pinned = {d for d in thread_digits if d in equal}
    rules: list[str] = []
    # A digit is the same in both threads where each store leaves it one known value, and the
    # two values agree (a range of one in one store says nothing of the other's thread).
    # So is a counter of a loop in one round of which both threads are (``same``).
    forced = set(pinned) | {d for d in ranges
                            if _fixed_value(a, d) is not None
                            and _fixed_value(a, d) == _fixed_value(b, d)}
    forced |= set(same) & set(ranges)
    dims = list(zip(a.dims, b.dims))
    # The one value a condition leaves a digit in each store's thread (``if tx == B - 1:``).
    fixed = ({d: _fixed_value(a, d) for d in ranges}, {d: _fixed_value(b, d) for d in ranges})
    # A sum bounded in both stores bounds the difference of its digits between the threads:
    # by the larger bound where the two differ by a constant (`x < w - 1` around one store,
    # `x < w` around the other: x < w in both threads).
    bounded = _common_bounds(a.bounded, b.bounded)
    # A sum bounded in one store whose digits the other store does not have (a loop counter of
    # its own: ``od[y * w]`` beside ``for x in range(1, w): od[y * w + x]``, the sum ``x +
    # 1 < w``): see :func:`_own_sum`.
    sums = [(q, u, side) for mine, other, side in ((a, b, 1), (b, a, -1))
            for q, u in mine.bounded if not set(coefficients(q)) & _digits(other)]
    conditions: list[str] = []  # the bounds a step of the proof needed, for its rule's text
    used: set = set()
    rotations: list[str] = []
    progress = True
    while progress:
        progress = False
        for pa, pb in dims:
            verdict = _dimension(pa, pb, ranges, forced, _radix_bounds(bounded, forced),
                                 conditions, sums, fixed)
            if verdict is None:
                continue
            if verdict is True:
                return PairProof(True, "the two stores' offsets never meet")
            new = verdict - forced
            if new:
                forced |= new
                progress = True
        # Splits and XORs of digits now equal (see .splits): a flat value equal in both
        # threads is one more dimension; an XOR's digit is equal.
        more_dims, more = implied(forced, ranges, used, rotations)
        if more_dims or more - forced:
            dims += more_dims
            forced |= more
            progress = True
    missing = sorted({d for d in thread_digits if d not in forced}, key=repr)
    uncovered = sorted(c for c in required if not any(d.coord == c for d in ranges)
                       and c not in a.single and c not in b.single)
    if missing or uncovered:
        names = [d.text() for d in missing] + [
            f"{'thread_idx' if c[0] == 't' else 'block_idx'}.{'xyz'[int(c[3])]}"
            for c in uncovered]
        return PairProof(False, "two threads that differ only in " + " and ".join(names) +
                         " can reach the same element",
                         tuple(missing) + tuple(Digit(c) for c in uncovered))
    for pa, _ in dims:
        for d, c in sorted(coefficients(pa).items(), key=lambda t: repr(t[0])):
            if d not in pinned:
                rules.append(f"{d.text()} (stride {poly_text(unassume(magnitude(c) or c))})")
    for d in sorted(pinned, key=repr):
        rules.append(f"one thread by {d.text()}")
    for text in dict.fromkeys(conditions):
        rules.append(f"the condition {text}")
    rules += rotations
    return PairProof(True, ", ".join(dict.fromkeys(rules)))



def _common_bounds(mine, theirs) -> list[tuple[Poly, Poly]]:
    """The sums both stores bound (``q < u`` in each), each by the larger of its two bounds
    where they differ by a constant; a constant in a sum is moved to its bound (``x + 1 < w``
    is ``x < w - 1``)."""
    def moved(q: Poly, u: Poly) -> tuple[Poly, Poly]:
        return q.plus(const(-q.const)), u.plus(const(-q.const))

    out: list[tuple[Poly, Poly]] = []
    for q, u in (moved(*pair) for pair in mine):
        for q2, v in (moved(*pair) for pair in theirs):
            if q2 != q:
                continue
            d = v.plus(u.scaled(-1))
            if d.terms:
                continue
            pair = (q, v if d.const >= 0 else u)
            if pair not in out:
                out.append(pair)
    return out


def _pinned_values(f: StoreForm, equal: set) -> StoreForm:
    """``f`` with each digit a pin gives a polynomial value (:attr:`.ownership.Pin.poly`)
    written as that value in its indices, but for the digits ``equal`` in both stores."""
    values = {d: p.poly for d, p in f.pins.items() if p.poly is not None and d not in equal}
    if not values:
        return f
    dims = tuple(substitute(p, lambda x: values.get(x)) for p in f.dims)
    return replace(f, dims=dims)


def _digits(f: StoreForm) -> set:
    """Every digit a store's form has: in its indices, ranges or pins."""
    out = set(f.ranges) | set(f.pins)
    for p in f.dims:
        out |= set(coefficients(p))
    return out


def _radix_bounds(bounded, forced: set) -> list[tuple[frozenset, Poly, str]]:
    """For :func:`_mixed_radix`: each bounded sum as the set of its (digit, coefficient) terms
    that differ between the threads (a forced digit is equal in both: it adds nothing to the
    difference), the most that difference can be, ``U - 1 - P.const``, and the bound's text."""
    out = []
    for q, u in bounded:
        reach = u.plus(const(-1 - q.const))
        # `x < w - 1` reaches w - 2, which the proofs cannot show nonnegative (their atoms are
        # at least 1, and w may be 1 where no thread passes the condition): the weakest larger
        # reach they can (w - 1) bounds the sum as well.
        for _ in range(min(max(-reach.const, 0), 64)):
            if magnitude(reach) == reach:
                break
            reach = reach.plus(const(1))
        if magnitude(reach) != reach:
            continue
        key = frozenset((d, c) for d, c in coefficients(q).items() if d not in forced)
        if key:
            out.append((key, reach, f"{poly_text(unassume(q))} < {poly_text(unassume(u))}"))
    return out


def _fixed_value(f: StoreForm, d: Digit) -> int | None:
    """The one value the digit ``d`` can have in a thread that runs the store ``f``: 0 where
    its range there is one value, a pinned constant, else ``None``."""
    n = f.ranges.get(d) if d in f.ranges else (
        (f.whole or {}).get(d.coord) if d.is_thread else None)
    if n is not None and n == const(1):
        return 0
    pin = f.pins.get(d)
    return pin.value if pin is not None else None


def _wider(m: Poly | None, n: Poly | None) -> Poly | None:
    """The larger of two ranges (``None``, not bounded, where neither is shown larger)."""
    if m == n or m is None or n is None:
        return m if m == n else None
    if magnitude(m) is None or magnitude(n) is None:
        return None
    if nonnegative(m.plus(n.scaled(-1))):
        return m
    return n if nonnegative(n.plus(m.scaled(-1))) else None


def _own_sum(pa: Poly, pb: Poly, sums, forced: set):
    """``(pa, pb, U)`` with a sum ``P`` that one store bounds taken out of its index, where the
    dimension is ``rest + P`` in that store and the other store's has none of ``P``'s digits
    nor the constant ``P.const >= 1`` (``y * w + x + 1`` beside ``y * w``, ``x + 1 < w``):
    ``P`` then stands in the difference of the two as one term between 1 and ``U - 1``, which
    the mixed radix must force to 0, and cannot; else None."""
    for q, u, side in sums:
        if q.const < 1 or any(d in forced for d in coefficients(q)):
            continue
        mine = pa if side == 1 else pb
        rest = mine.plus(q.scaled(-1))
        if set(coefficients(rest)) & set(coefficients(q)) or rest.const != (
                pb.const if side == 1 else pa.const):
            continue
        return (rest, pb, u) if side == 1 else (pa, rest, u)
    return None


def _rounds_apart(a: StoreForm, b: StoreForm, same: frozenset) -> str | None:
    """An index whose values in the two stores differ by a function of loop counters that the
    two threads share (``same``) and constants only, which is never zero over the counters'
    ranges: a double buffer's read of ``tile[1 - buf]`` beside the store into ``tile[buf]``
    in one round of the ``buf`` loop (the difference ``1 - 2 * buf`` is odd).  Whatever the
    other indices, the two accesses then never meet; the rule's text, or None."""
    for axis, (pa, pb) in enumerate(zip(a.dims, b.dims)):
        if any(len(mono) != 1 or mono[0] not in same for p in (pa, pb) for mono, _ in p.terms):
            continue  # a digit of each thread's own (the same name, two values), or an atom
        diff = pa.plus(pb.scaled(-1))
        low = high = diff.const
        step = 0
        for (d,), k in diff.terms:
            n = a.ranges.get(d)
            if n is None or n != b.ranges.get(d) or n.terms or n.const < 1:
                break  # a counter's range not one known constant
            low, high = low + min(0, k * (n.const - 1)), high + max(0, k * (n.const - 1))
            step = math.gcd(step, k)
        else:
            if max(abs(low), abs(high), abs(pa.const), abs(pb.const)) >= 1 << 31:
                continue  # the generated code's index may wrap: not this rule
            if low > 0 or high < 0 or (step and diff.const % step):
                where = f"index {axis}" if len(a.dims) > 1 else "the index"
                return (f"{where} differs by {poly_text(diff)}, never 0, in one round of the "
                        "loops whose counters both threads share")
    return None


def _dimension(pa: Poly, pb: Poly, ranges: dict, forced: set, bounds=(),
               conditions: list | None = None, sums=(), fixed=({}, {})):
    """One index dimension of a pair: the digits it shows equal in both threads (a set), True
    when it shows the two stores never meet, or None when it shows nothing."""
    terms: list[tuple[Poly, Poly | None, set]] = []  # (coefficient, range, digits it stands for)
    own = _own_sum(pa, pb, sums, forced)
    if own is not None and magnitude(own[2]) == own[2]:
        pa, pb, reach = own
        terms.append((const(1), reach, {"offset"}))  # the sum: 1 <= P <= U - 1
    offsets = Affine(pa.const - pb.const)
    coefficient: dict = {}
    for side, p in ((1, pa), (-1, pb)):
        for mono, k in ordered_terms(p.terms):
            ds = [x for x in mono if isinstance(x, Digit)]
            if len(ds) > 1:
                return None
            if not ds:
                offsets = offsets.plus(Affine(0, frozenset({(mono, side * k)})))
                continue
            (d,) = ds
            rest = tuple(x for x in mono if x is not d)
            c = Affine(0, frozenset({(rest, k)})) if rest else const(k)
            coefficient.setdefault(d, [Affine(), Affine()])
            coefficient[d][0 if side == 1 else 1] = coefficient[d][0 if side == 1 else 1].plus(c)
    signed = _signed_offset(coefficient, offsets, ranges, forced)
    folded = _folded_offset(coefficient, offsets, ranges, forced) if signed is None else None
    for d, (ca, cb) in coefficient.items():
        if signed is not None and d == signed[0]:
            continue  # with the offset, one term of known sign (see _signed_offset)
        if folded is not None and d == folded[0]:
            continue  # with the offset, one term of known size (see _folded_offset)
        if d in forced:
            # Equal in both threads: the difference is (ca - cb) * d, a known-range offset.
            diff = ca.plus(cb.scaled(-1))
            if diff.terms or diff.const:
                terms.append((diff, ranges.get(d), set()))
            continue
        if ca == cb:
            terms.append((ca, ranges.get(d), {d}))
        else:
            for c in (ca, cb):
                if c.terms or c.const:
                    terms.append((c, ranges.get(d), set()))
    if _apart(offsets, coefficient, ranges, forced, fixed):
        return True
    if signed is not None:
        terms.append((const(1), signed[1], {"offset"}))
    elif folded is not None:
        terms.append((const(1), folded[1], set()))  # it may be 0: no "offset"
    elif offsets.terms or offsets.const:
        if any(not all(positive_atom(x) for x in m) for m, _ in offsets.terms):
            return None  # an unknown uniform difference: nothing is shown
        terms.append((offsets, const(2), {"offset"}))
    # A fixed order, whatever the hash order of the forms' sets: the same proof on every run.
    terms.sort(key=lambda t: (poly_text(t[0]), sorted(map(repr, t[2]))))
    if not terms:
        return set()
    ordered = _mixed_radix(terms, bounds, conditions)
    if ordered is None:
        return None
    shown = set()
    for _, _, ds in ordered:
        shown |= ds
    if "offset" in shown:
        return True  # the offset term can only be zero, but it is not: no solution
    return {d for d in shown if isinstance(d, Digit)}


def _signed_offset(coefficient: dict, offsets: Poly, ranges: dict, forced: set):
    """``(d, n)`` where a digit ``d`` of one store only (its coefficient ``s`` a constant, its
    range ``r`` known) and the offset ``k`` of the two indices (a constant, or launch extents)
    leave ``s * d + k`` of one sign over ``0 <= d < r``: then it is never 0, and one term of
    the difference whose size is at most ``n - 1``, which the mixed radix must force to 0 and
    cannot (``(ty + 1) * bw + tx + 1`` beside ``(ty + 1) * bw`` with ``bw = block_dim.x + 2``:
    ``-tx - 1`` lies in ``-block_dim.x .. -1``, short of a row); else None."""
    if not (offsets.terms or offsets.const) or any(
            not all(positive_atom(x) for x in m) for m, _ in offsets.terms):
        return None
    for d, (ca, cb) in sorted(coefficient.items(), key=lambda t: repr(t[0])):
        if d in forced or ((ca.terms or ca.const) and (cb.terms or cb.const)):
            continue
        c = ca.plus(cb.scaled(-1))  # the one side's coefficient, as the difference has it
        r = ranges.get(d)
        if c.terms or not c.const or r is None or magnitude(r) != r:
            continue
        span = r.plus(const(-1)).scaled(c.const)  # s * (r - 1): d's part at its far end
        low, high = (offsets, offsets.plus(span)) if c.const > 0 else (offsets.plus(span),
                                                                        offsets)
        if nonnegative(low.plus(const(-1))):  # 1 <= s * d + k <= high
            n = high.plus(const(1))
        elif nonnegative(high.scaled(-1).plus(const(-1))):  # low <= s * d + k <= -1
            n = low.scaled(-1).plus(const(1))
        else:
            continue
        if magnitude(n) == n:
            return d, n
    return None


def _folded_offset(coefficient: dict, offsets: Poly, ranges: dict, forced: set):
    """``(d, n)`` where a digit ``d`` of one access only (its coefficient ``s`` a constant,
    its range ``r`` known) and the constant offset ``k`` of the two indices leave ``s * d + k``
    within ``(-n, n)``, ``n`` smaller than ``|s| * r + |k|``: one term of the difference that
    may be 0, but is smaller than the two apart (a vector read's element ``4 * t + e``, ``e``
    in ``[0, 4)``, beside the store ``4 * t' + 1``: ``e - 1`` lies in ``-1 .. 2``, so
    ``4 * (t - t')`` must be 0); else None."""
    if offsets.terms:
        return None
    for d, (ca, cb) in sorted(coefficient.items(), key=lambda t: repr(t[0])):
        if d in forced or ((ca.terms or ca.const) and (cb.terms or cb.const)):
            continue
        c = ca.plus(cb.scaled(-1))
        r = ranges.get(d)
        if c.terms or not c.const or r is None or r.terms or r.const < 1:
            continue
        ends = (offsets.const, offsets.const + c.const * (r.const - 1))
        n = max(-min(ends), max(ends)) + 1
        if n < abs(c.const) * r.const + abs(offsets.const):
            return d, const(n)
    return None


def _apart(offsets: Poly, coefficient: dict, ranges: dict, forced: set,
           fixed=({}, {})) -> bool:
    """Interval disjointness: with constant coefficients and ranges, is the difference of the two
    stores' indices in this dimension never zero?  (A halo column 0 beside centre columns ``tx +
    1``: the difference is ``-(tx + 1) <= -1``.)  Each thread's digits are separate values,
    except those shown equal in both threads; ``fixed``: per store, the one value a digit has in
    a thread that runs it, where a condition leaves one (``if tx == B - 1: s[tx + 2]`` beside
    ``s[tx + 1]``: 33 against 1 to B)."""
    if offsets.terms:
        return False
    lo = hi = offsets.const
    for d, (ca, cb) in coefficient.items():
        if ca.terms or cb.terms:
            return False
        if d in forced:
            sides = [(ca.const - cb.const, None)]
        else:
            sides = [(ca.const, fixed[0].get(d)), (-cb.const, fixed[1].get(d))]
        for c, value in sides:
            if c == 0:
                continue
            if value is not None:
                lo += c * value
                hi += c * value
                continue
            n = ranges.get(d)
            if n is None or n.terms or n.const < 1:
                return False
            top = n.const - 1
            lo += min(0, c * top)
            hi += max(0, c * top)
    return lo > 0 or hi < 0


def _mixed_radix(terms, bounds=(), conditions: list | None = None):
    """``terms`` in an order where each coefficient exceeds what the smaller ones can sum to
    (then ``sum(c * delta) == 0`` with ``|delta| < n`` forces every delta to 0); ``None`` when
    no such order is shown.  ``bounds`` (see :func:`_radix_bounds`) give the most some sets of
    terms can sum to, where a condition bounds their sum (``row * n + col`` under ``if col <
    n:``: the column's digits reach n - 1 together, whatever the grid)."""
    items = []
    for c, n, ds in terms:
        m = magnitude(c)
        if m is None or (m.const == 0 and not m.terms):
            return None
        if n is not None and magnitude(n) is None:
            return None
        items.append((m, n, ds))
    ordered = []
    # Bounds of the largest |sum| of the digits placed so far, each with the condition it
    # rests on ("" for the digits' own ranges).
    reaches: list[tuple[Poly, str]] = [(const(0), "")]
    placed: set | None = set()  # their (digit, coefficient) terms, while each is a digit's
    needed: list[str] = []
    while items:
        by: dict[int, list[str]] = {}  # each item that fits: the reaches it fits under
        for i, (m, _, _) in enumerate(items):
            under = [text for r, text in reaches
                     if nonnegative(m.plus(r.scaled(-1)).plus(const(-1)))]
            if under:
                by[i] = under
        fits = list(by)
        if not fits:
            return None
        # The smallest coefficient goes next (a larger one placed early spends its reach).
        smallest = [i for i in fits if all(nonnegative(o.plus(items[i][0].scaled(-1)))
                                           for o, _, _ in items)]
        chosen = smallest[0] if smallest else fits[0]
        if "" not in by[chosen]:
            needed.append(by[chosen][0])
        m, n, ds = items.pop(chosen)
        ordered.append((m, n, ds))
        if items:
            digits = [d for d in ds if isinstance(d, Digit)]
            if placed is not None and len(ds) == 1 and len(digits) == 1:
                placed.add((digits[0], m))
            else:
                placed = None
            # Only the largest digit may be unbounded, unless a bounded sum covers it.
            reaches = [] if n is None else [(r.plus(mul(m, n.plus(const(-1)))), text)
                                            for r, text in reaches]
            if placed is not None:
                reaches += [(reach, text) for key, reach, text in bounds if key == placed]
            if not reaches:
                return None
    if conditions is not None:
        conditions.extend(needed)
    return ordered
