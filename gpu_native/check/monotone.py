"""Padded indices: a strictly increasing function of a unique value is unique (rule R10).

Shared-memory code pads its indices to avoid bank conflicts: GPU Gems 3's scan stores
``temp[ai + (ai >> 5)]`` and ``temp[bi + (bi >> 5)]`` (``CONFLICT_FREE_OFFSET``), with ``ai =
tid`` and ``bi = tid + HALF``.  The mixed-radix rule of :mod:`.radix` proves the first alone
(``tid + tid // 32`` is ``33 * (tid // 32) + tid % 32``) but not the pair: ``(tid + HALF) //
32`` is a split of another flat value, whose strides prove nothing.  This module proves such a
pair through the function both indices share.

**The rule.**  An index dimension of the form ``h(u) + R`` with

    h(x) = m * x + sum(c_i * (x // K_i))

(``m`` and ``c_i`` integer constants, each ``K_i`` a constant or launch extent shown ``>= 1``,
``x // K`` written ``x >> s`` too, ``R`` the same in every thread) is recognised where ``u`` is
the never-negative flat value every split term divides.  With floor division, ``(x + 1) // K -
x // K`` is 0 or 1 for ``K >= 1``, so ``h(x + 1) - h(x) >= m + sum(c_i for c_i < 0)``: where that
is at least 1 (or, mirrored, ``h`` decreases by at least 1 a step) ``h`` is strictly monotone over
the integers, hence one-to-one.  Two stores whose dimension is ``h(u_a) + R`` and ``h(u_b) + R``
with the same ``h`` and ``R`` then meet exactly where ``u_a == u_b``: the pair is proven with that
dimension replaced by ``u_a`` and ``u_b`` (:func:`prove_padded`), by the ordinary rules, which
show ``tid`` and ``tid + HALF`` apart under ``tid < HALF``, or ``block_idx.x * block_dim.x +
thread_idx.x`` unique in the grid.

**Soundness.**  The forms hold for exact integers.  A split digit is made only of a flat value
shown never negative (:mod:`.splits`), and the store's own wrapping check
(:func:`.wrapping.index_is_exact`) refuses an index whose ``//`` or ``>>`` operand may wrap; the
outer sum may wrap only where the largest difference of two threads' indices fits its type (the
launcher checks it where it depends on the launch).  A dimension not of this shape is left to the
ordinary rules unchanged: ``u - (u >> 5)`` (``h(31) == h(32)``), ``u + (7 * u) % 32`` (a
remainder wraps around), two stores padded differently (``u >> 5`` and ``u >> 4``) or with
different offsets after the padding are not reduced, and the refusal's hint says which.
"""

from __future__ import annotations

from ..nodes import node, replace
from .ownership import StoreForm
from .poly import Digit, Poly, atom, const, digits_of, is_uniform, ordered_terms, poly_text
from .radix import PairProof, prove_pair
from .splits import nested_digits, shows_positive

__all__ = ["Padded", "padded", "prove_padded"]


@node
class Padded:
    """An index dimension ``m * u + sum(c * (u // K)) + rest`` (``steps``: the ``(K, c)``
    pairs in a fixed order; ``rest`` the same in every thread)."""

    u: Poly
    scale: int
    steps: tuple[tuple[Poly, int], ...]
    rest: Poly

    @property
    def shape(self) -> tuple:
        """What two stores must share for the rule: the function ``h`` and the offset."""
        return (self.scale, self.steps, self.rest)

    def is_strictly_monotone(self) -> bool:
        """``h(x + 1) - h(x)`` is at least 1 for every integer ``x``, or at most -1."""
        rising = self.scale + sum(min(c, 0) for _, c in self.steps)
        falling = self.scale + sum(max(c, 0) for _, c in self.steps)
        return rising >= 1 or falling <= -1

    def text(self) -> str:
        """``h(u)`` as it reads in a message: ``tid + 128 + (tid + 128) // 32``."""
        u = poly_text(self.u)
        inner = f"({u})" if len(self.u.terms) + (1 if self.u.const else 0) > 1 else u
        text = u if self.scale == 1 else f"{self.scale} * {inner}"
        for k, c in self.steps:
            split = f"{inner} // {poly_text(k)}"
            text += f" {'+' if c > 0 else '-'} " + (split if abs(c) == 1 else
                                                    f"{abs(c)} * ({split})")
        return text


def _split_of(a) -> tuple[str, Poly, Poly] | None:
    """``(op, flat, K)`` for a split digit: ``tid // 32`` (a thread coordinate's high part),
    ``f // K`` or ``f % K`` of a flat value (:mod:`.splits`); ``None`` for any other atom."""
    if not isinstance(a, Digit):
        return None
    if a.of is not None:
        if a.of.op in ("hi", "lo"):
            return a.of.op, a.of.flat, a.of.other
        return None
    if a.is_thread and a.part in ("hi", "lo"):
        return a.part, atom(Digit(a.coord)), const(a.radix)
    return None


def padded(p: Poly) -> Padded | str | None:
    """``p`` as a padded index (:class:`Padded`), the reason it falls short where it splits a
    value it also holds (``u - u // 32``, ``u + (7 * u) % 32``: a sentence), or ``None`` where
    it is no such index at all."""
    splits: list[tuple[Digit, str, Poly, Poly, int]] = []
    rest = const(p.const)
    for mono, k in ordered_terms(p.terms):
        part = _split_of(mono[0]) if len(mono) == 1 else None
        if part is None:
            rest = rest.plus(Poly(0, frozenset({(mono, k)})))
            continue
        op, flat, radix = part
        splits.append((mono[0], op, flat, radix, k))
    if not splits or is_uniform(rest):
        return None
    flats = {flat for _, _, flat, _, _ in splits}
    held = digits_of(rest)
    if not any(held & nested_digits(f) for f in flats):
        return None  # splits of other values than the index holds: not a padding
    if len(flats) > 1:
        return "it adds parts of two different values (" + ", ".join(
            sorted(poly_text(f) for f in flats)) + ")"
    (u,) = flats
    for digit, op, _, radix, _ in splits:
        if op == "lo":
            return (f"{digit.text()} is no monotone function of {poly_text(u)}: a remainder "
                    "wraps around to 0")
        if not shows_positive(radix):
            return f"the divisor {poly_text(radix)} of {poly_text(u)} is not shown to be >= 1"
    scale = _multiple(rest, u)
    if scale is None:
        return (f"the rest of the index, {poly_text(rest)}, is not a constant multiple of "
                f"{poly_text(u)} plus a value every thread shares")
    steps: dict[Poly, int] = {}
    for _, _, _, radix, k in splits:
        steps[radix] = steps.get(radix, 0) + k
    out = Padded(u, scale, tuple(sorted(((r, c) for r, c in steps.items() if c),
                                        key=lambda t: poly_text(t[0]))),
                 rest.plus(u.scaled(-scale)))
    if not out.steps:
        return None
    if not out.is_strictly_monotone():
        return (f"{out.text()} is not strictly increasing in {poly_text(u)} (each step of "
                f"{poly_text(u)} must add at least 1, as in u + (u >> 5), so that two values of "
                "it never give one index)")
    return out


def _multiple(rest: Poly, u: Poly) -> int | None:
    """The integer ``m`` with ``rest - m * u`` uniform, or ``None``."""
    for mono, k in ordered_terms(u.terms):
        if not any(isinstance(a, Digit) for a in mono):
            continue
        r = rest.coefficient(mono)
        if r % k:
            return None
        m = r // k
        return m if m and is_uniform(rest.plus(u.scaled(-m))) else None
    return None


@node
class _Unpadded:
    """A pair of stores with each padded dimension replaced by its value ``u`` (``a``, ``b``),
    the rule's text for them, and why a dimension that looks padded was not reduced."""

    a: StoreForm
    b: StoreForm
    texts: tuple[str, ...]
    reasons: tuple[str, ...]


def unpad(a: StoreForm, b: StoreForm) -> _Unpadded:
    """The pair ``(a, b)`` with every dimension padded the same way in both reduced to the
    padded values (see the module docstring)."""
    dims_a, dims_b = list(a.dims), list(b.dims)
    texts: list[str] = []
    reasons: list[str] = []
    for i, (pa, pb) in enumerate(zip(a.dims, b.dims)):
        fa, fb = padded(pa), padded(pb)
        if fa is None and fb is None:
            continue
        if isinstance(fa, Padded) and isinstance(fb, Padded):
            if fa.shape == fb.shape:
                dims_a[i], dims_b[i] = fa.u, fb.u
                texts.append(f"the padded index {fa.text()}" if fa.u == fb.u else
                             f"the padded indices {fa.text()} and {fb.text()}")
            elif fa.shape[:2] == fb.shape[:2]:
                reasons.append(f"{fa.text()} and {fb.text()} are padded alike but add "
                               f"different offsets ({poly_text(fa.rest)} and "
                               f"{poly_text(fb.rest)})")
            else:
                reasons.append(f"the two stores pad their indices differently ({fa.text()} "
                               f"and {fb.text()})")
            continue
        why = [f for f in (fa, fb) if isinstance(f, str)]
        reasons += why or ["only one of the two stores pads its index"]
    if not texts:
        return _Unpadded(a, b, (), tuple(dict.fromkeys(reasons)))
    return _Unpadded(_reduced(a, dims_a), _reduced(b, dims_b), tuple(texts),
                     tuple(dict.fromkeys(reasons)))


def _reduced(f: StoreForm, dims: list[Poly]) -> StoreForm:
    """``f`` with ``dims``: the split digits no dimension or pin holds any more are dropped
    from its ranges (a thread coordinate's part left there would be a digit to tell apart)."""
    held = set(f.pins)
    for p in dims:
        held |= nested_digits(p)
    ranges = {d: n for d, n in f.ranges.items()
              if d in held or _split_of(d) is None}
    return replace(f, dims=tuple(dims), ranges=ranges)


_HINT = ("a padded index u + (u >> 5) is proven where both stores pad the same way (the same "
         "shifts or divisors, the same offset after them) a value u that is unique itself and "
         "whose values in the two stores cannot meet (tid and tid + HALF with `assert "
         "block_dim.x == HALF`); here {reason}; otherwise use `with unsafe():`")


def prove_padded(a: StoreForm, b: StoreForm, required: frozenset[str],
                 same: frozenset = frozenset()) -> PairProof:
    """:func:`.radix.prove_pair`, first with the padded dimensions of the two stores
    reduced to their values (R10); where neither proves the pair, the failure of the reduced
    pair (which names the threads whose values meet), with a hint that says what the padding
    rule lacks.  ``same``: loop counters the two threads share (see ``prove_pair``)."""
    pair = unpad(a, b)
    if pair.texts:
        reduced = prove_pair(pair.a, pair.b, required, same)
        if reduced.ok:
            return PairProof(True, f"{reduced.text}, through {' and '.join(pair.texts)} "
                                   "(strictly increasing: R10, padding)")
    plain = prove_pair(a, b, required, same)
    if plain.ok:
        return plain
    if pair.texts:
        reason = pair.reasons[0] if pair.reasons else \
            f"{' and '.join(pair.texts)} are one-to-one, but their values may meet"
        return PairProof(False, f"{reduced.text} (through {' and '.join(pair.texts)})",
                         reduced.missing, _HINT.format(reason=reason))
    if pair.reasons:
        return PairProof(False, plain.text, plain.missing,
                         _HINT.format(reason=pair.reasons[0]))
    return plain
