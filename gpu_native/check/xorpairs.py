"""Two stores that an XOR with a shared value pairs up: the compare-and-swap of a bitonic sort.

A step of the global bitonic sort, as every tutorial writes it::

    i = FlatLayout1D.uid()
    ixj = i ^ j
    if ixj > i and ixj < len(a):
        ...
        a[i] = y
        a[ixj] = x

writes ``a[u]`` and ``a[u ^ p]`` with ``u`` the thread's index and ``p`` a value every thread
shares (the parameter ``j``).  The mixed-radix rule (:mod:`.radix`) sees each store alone
(``u ^ p`` is one-to-one in ``u``: :mod:`.splits`), but not the pair: thread ``i``'s second
element is thread ``i ^ j``'s first.

**The rule.**  ``x -> x ^ p`` is an involution: ``(x ^ p) ^ p == x``.  Let store ``A`` write
``U`` and store ``B`` write ``U ^ P`` (in one index dimension; ``U`` the same polynomial in both,
``P`` the same value in both threads), each under a condition ``U < U ^ P`` (``(u ^ p) > u``, or
``u < u ^ p``).  If thread ``T`` runs ``A`` and thread ``T'`` runs ``B`` and they write one
element, then ``U(T) == U(T') ^ P``, so ``U(T) ^ P == U(T')``; ``T``'s condition says ``U(T) <
U(T) ^ P == U(T')`` and ``T'``'s says ``U(T') < U(T') ^ P == U(T)``: both cannot hold.  So the two
stores never meet, whichever threads run them (the same one included: ``U == U ^ P`` only for
``P == 0``, which fails the condition).  The same holds with ``U ^ P < U`` around both (the
higher partner writes); with one order at one store and the other at the other, it does not.  Each store against itself is the ordinary rules' (a
unique ``U``).  The values are the mathematical ones: both indices must be exact at both stores
(:attr:`.ownership.StoreForm.exact`), and the condition is a relation only where its sides are
(:attr:`.ownership.StoreForm.relations`); XOR itself never wraps.

``P`` may hold the counter of a loop whose rounds a barrier separates (``same``: the pair is in
one round, where every thread has the same counter; see :func:`.phases.round_digits`).  A
condition ``>=`` (``U <= U ^ P`` holds for ``P == 0`` in every thread, but also lets nothing
through that ``>`` would not: it is refused as no relation), a condition around one store only,
a ``P`` that differs between threads (``i ^ (i & 3)``), or an index not of that shape leaves the
pair to the other rules, which refuse it.
"""

from __future__ import annotations

from .ownership import StoreForm
from .poly import Digit, Poly, poly_text, unassume
from .splits import nested_digits

__all__ = ["xor_apart", "xor_hint"]


def xor_apart(a: StoreForm, b: StoreForm, same: frozenset = frozenset()) -> str | None:
    """The rule's text where ``a`` and ``b`` are an XOR-paired pair under their conditions (see
    the module docstring); else None.  ``same``: digits equal in both threads (a round's
    counter)."""
    if a is b or len(a.dims) != len(b.dims):
        return None
    for k, (pa, pb) in enumerate(zip(a.dims, b.dims)):
        if not (_exact(a, k) and _exact(b, k)):
            continue
        for u, x, mine in ((pa, pb, True), (pb, pa, False)):
            p = _partner(u, x, same)
            if p is None:
                continue
            # The same order at both stores: the thread whose own index is the lower (or, as
            # well, the higher) of the two writes.
            if _guarded(a, u, x) and _guarded(b, u, x):
                rising = True
            elif _guarded(a, x, u) and _guarded(b, x, u):
                rising = False
            else:
                continue
            u_text, p_text = _text(u), _text(p)
            pair = f"{u_text} ^ {p_text}"
            at = (f"{u_text} here, {pair} at line {b.line}" if mine else
                  f"{pair} here, {u_text} at line {b.line}")
            axis = "" if len(a.dims) == 1 else f" (index {k})"
            order = f"{u_text} < {pair}" if rising else f"{pair} < {u_text}"
            return (f"the stores pair elements by an XOR with a value every thread shares{axis}: "
                    f"{at}, and {order} around both, so of two partners only one writes")
    return None


def xor_hint(a: StoreForm, b: StoreForm) -> str | None:
    """What would prove a pair whose indices are ``u`` and ``u ^ p`` but that the rule refused
    (see the module docstring); None for any other pair."""
    if a is b or len(a.dims) != len(b.dims):
        return None
    for pa, pb in zip(a.dims, b.dims):
        for u, x in ((pa, pb), (pb, pa)):
            p = _partner(u, x, frozenset(d for d in nested_digits(x) if d.of is None))
            if p is None:
                continue
            u_text, pair = _text(u), f"{_text(u)} ^ {_text(p)}"
            return (f"the stores pair elements by an XOR ({u_text} and {pair}): that is proven "
                    f"race-free where {_text(p)} is the same in every thread (a parameter, a "
                    f"launch value) and one strict comparison `{pair} > {u_text}` (or `<`) is "
                    "around both stores, so that of two partners only one writes (`if ixj > "
                    "i:` with `ixj = i ^ j`); else use `with unsafe():`")
    return None


def _text(p: Poly) -> str:
    text = poly_text(unassume(p))
    return f"({text})" if len(p.terms) + (1 if p.const else 0) > 1 else text


def _exact(form: StoreForm, k: int) -> bool:
    return len(form.exact) > k and form.exact[k] is True


def _partner(u: Poly, x: Poly, same: frozenset) -> Poly | None:
    """``P`` where ``x`` is the digit ``u ^ P`` (or ``P ^ u``) with ``P`` the same in both threads
    of a pair; else None."""
    if x.const or len(x.terms) != 1:
        return None
    (mono, k), = x.terms
    if k != 1 or len(mono) != 1 or not isinstance(mono[0], Digit):
        return None
    d = mono[0].of
    if d is None or d.op != "xor":
        return None
    for side, rest in ((d.flat, d.other), (d.other, d.flat)):
        if side == u and _shared(rest, same):
            return rest
    return None


def _shared(p: Poly, same: frozenset) -> bool:
    """Is ``p`` the same in both threads: computed from no digit but those of ``same``?"""
    return all(d in same for d in nested_digits(p) if d.of is None)


def _guarded(form: StoreForm, low: Poly, high: Poly) -> bool:
    """Does a strict comparison around ``form`` say ``low < high`` (a relation ``Q < V`` with
    ``Q - V == low - high``)?"""
    diff = low.plus(high.scaled(-1))
    return any(q.plus(v.scaled(-1)) == diff for q, v in form.relations)
