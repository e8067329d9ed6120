"""Two rules for a pair of stores beside the ownership proof (:mod:`.ownership`): a store that
only its own thread reaches through the other, and two stores whose index ranges never meet."""

from __future__ import annotations

from .ownership import StoreForm
from .poly import Digit, digits_of, evaluate

__all__ = ["only_its_thread", "span_text", "spans_apart"]


def only_its_thread(single: StoreForm, other: StoreForm, required: frozenset[str]) -> bool:
    """Does only ``single``'s own thread reach its element through ``other``?  True when the
    conditions around ``single`` leave one known thread (``if tid == 0 and block_idx.x == 0:
    out[0]``), that thread satisfies ``other``'s pins and, put into ``other``'s index, names the
    same element: ``other`` was proven to give different threads different elements, so no
    other thread writes it (``out[block_idx.x]`` under ``if tid == 0:``)."""
    values: dict[str, int] = {}
    for digit, pin in single.pins.items():
        if digit.part != "all" or pin.value is None:
            return False
        values[digit.coord] = pin.value
    if not required <= set(values):
        return False

    def value(d) -> int | None:
        if not isinstance(d, Digit) or d.coord not in values:
            return None
        v = values[d.coord]
        return v if d.part == "all" else v % d.radix if d.part == "lo" else v // d.radix

    def known(d) -> int:  # (every atom of the index has a value: checked before each use)
        v = value(d)
        assert v is not None
        return v

    for digit, pin in other.pins.items():
        if value(digit) != pin.value or pin.value is None:
            return False
    # That thread must run ``other`` too: a condition around it (``if tid < 1:``) that leaves
    # it out leaves the element to another thread.
    whole = [(Digit(c), n) for c, n in (other.whole or {}).items()]
    for digit, n in list(other.ranges.items()) + whole:
        v = value(digit)
        if v is not None and n is not None and not n.terms and not 0 <= v < n.const:
            return False
    for mine, theirs in zip(single.dims, other.dims):
        if digits_of(mine) or any(value(a) is None for m, _ in theirs.terms for a in m):
            return False
        if mine.terms or evaluate(theirs, known) != mine.const:
            return False
    return True


def spans_apart(a: StoreForm, b: StoreForm) -> str | None:
    """Two stores whose values of one index never meet write different elements, whichever
    threads run them (``if i == 0: out[0] = x`` beside ``elif i < n: out[i] = y``); the rule's
    text, or None."""
    for axis, (p, q) in enumerate(zip(a.spans, b.spans)):
        if p is None or q is None or not (p[1] < q[0] or q[1] < p[0]):
            continue
        where = f"index {axis}: " if len(a.spans) > 1 else ""
        return (f"the stores' index ranges do not meet ({where}{span_text(p)} here, "
                f"{span_text(q)} at line {b.line})")
    return None


def span_text(span: tuple[int, int]) -> str:
    lo, hi = span
    return str(lo) if lo == hi else f"{lo} to {hi}"
