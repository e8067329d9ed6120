"""An example for a refused store: two threads of a small launch that write the same element.

The ownership proofs (:mod:`.ownership`) say *why* a store is not provable; an example says it in
the user's terms ("thread_idx.x = 0 and thread_idx.x = 16 both write s[0]").  The search runs
only for the error message, over a small launch (a block of up to 64 threads along x, two blocks
along x), so it may find nothing even where threads do meet on a larger one.

An example must be real: both threads pass the conditions around their stores (the forms'
:class:`~.ownership.Guard` records, ``if tid % 32 == 0:`` of a flat ``tid``), with a value
every thread shares that the launch does not give (``n`` of ``if i < n:``) taken as large as
the comparison needs.  A condition the example cannot evaluate (a value read from memory, or
such a value compared any other way) is named instead of taken as passed: the pair is then
"threads that meet if both pass the conditions around the store".
"""

from __future__ import annotations

import itertools

from .facts import ConstKey, OpKey, SpecialKey
from .ownership import FOLDED, Guard, StoreForm
from .poly import Digit, Quotient, evaluate
from .splits import derived_value, nested_atoms, nested_digits

__all__ = ["collision"]

_BLOCK = (64, 4, 2)
_GRID = (2, 2, 2)
_LOOP_LIMIT = 8
_THREADS_LIMIT = 4096
_LARGE = 1024  # the first value tried for a parameter or an array's extent


def collision(a: StoreForm, b: StoreForm, required: frozenset[str], ndim: int) -> str | None:
    """Two threads, one running store ``a`` and one ``b``, that write one element; ``None``
    when the small launch has none."""
    block = tuple(_extent(a, b, "block_dim", axis, _BLOCK[axis]) if axis < ndim else 1
                  for axis in range(3))
    grid = tuple(_extent(a, b, "grid_dim", axis, _GRID[axis]) if axis < ndim and
                 f"bid{axis}" in required else 1 for axis in range(3))
    coords = [(f"tid{axis}", block[axis]) for axis in range(3)] + [
        (f"bid{axis}", grid[axis]) for axis in range(3)]
    threads = 1
    for _, n in coords:
        threads *= n
    if threads > _THREADS_LIMIT:
        return None
    sizes = {"block_dim": block, "grid_dim": grid}
    undecided = any(_unchecked(g, form, sizes) for form in (a, b) for g in form.guards)
    unchecked = bool(a.unread_guards or b.unread_guards) or undecided
    # A value every thread shares that the launch does not give is taken large first, then 0:
    # an example that needs `stride == 0` is real, but one that does not is the one to show.
    for unknown in (_LARGE, 0):
        found = _search(a, b, required, coords, {**sizes, "unknown": unknown})
        if found is not None:
            return f"{found}{_unchecked_text(a, b, undecided)}" if unchecked else found
    return None


def _search(a: StoreForm, b: StoreForm, required: frozenset[str], coords: list,
            sizes: dict) -> str | None:
    """The first two threads of the launch ``coords`` that write one element through ``a``
    and ``b``, as the example's text; None where none do."""
    # Two stores: one thread runs each (a store against itself was proven on its own, and the
    # conditions the forms do not model, `if i == 0:` of a flat i, would make up examples).
    seen: dict[tuple, dict[int, list]] = {}
    for values in itertools.product(*(range(n) for _, n in coords)):
        thread = dict(zip((c for c, _ in coords), values))
        for which, form in enumerate((a, b) if a is not b else (a,)):
            if not _runs(form, thread):
                continue
            for element in _elements(form, thread, sizes):
                if not _within(form, element):
                    continue
                key = tuple(thread[c] for c in sorted(required))
                # Per element and store, the first two threads of different keys: one of
                # them differs from any thread that comes later.
                writers = seen.setdefault(element, {})
                meets = [o for w, firsts in writers.items() if a is b or w != which
                         for o in firsts if o[0] != key]
                if meets:
                    other = meets[0]
                    return (f"{_thread_text(other[2], required)} and "
                            f"{_thread_text(thread, required)} both write "
                            f"{form.text.split('[')[0]}[{', '.join(map(str, element))}]")
                firsts = writers.setdefault(which, [])
                if len(firsts) < 2 and all(o[0] != key for o in firsts):
                    firsts.append((key, which, thread))
    return None


def _unchecked_text(a: StoreForm, b: StoreForm, undecided: bool = False) -> str:
    """What an example says of the conditions it could not evaluate (``undecided``: a guard
    it took as passed, whose line it does not know, such as a parity of a loop counter the
    index does not read: then it names none, lest the lines it names seem the only ones)."""
    lines = sorted({n for form in (a, b) for n in form.unread_guards if n})
    if not lines or undecided or any(0 in form.unread_guards for form in (a, b)):
        return (", if both pass the conditions around the store, which this example does not "
                "evaluate")
    where = " and ".join(str(n) for n in lines)
    return (f", if both pass the condition{'s' if len(lines) > 1 else ''} on line"
            f"{'s' if len(lines) > 1 else ''} {where}, which this example does not evaluate")


def _within(form: StoreForm, element: tuple) -> bool:
    """Is ``element`` among the values the store's indices take where it runs (its spans)?"""
    return all(span is None or span[0] <= v <= span[1]
               for v, span in zip(element, form.spans))


def _extent(a: StoreForm, b: StoreForm, name: str, axis: int, default: int) -> int:
    # An extent an assert fixed (`assert block_dim.y == 1`) first: an example must be a launch
    # the kernel accepts.
    for form in (a, b):
        n = form.launch.get(SpecialKey(name, axis))
        if n is not None and not n.terms and n.const > 0:
            return min(n.const, default * 4)
        if n is not None and len(n.terms) == 1 and not n.const:
            (_, k), = n.terms  # `assert block_dim.x % 32 == 0`: a multiple of 32
            return k * max(1, default // k)
    for form in (a, b):
        n = form.ranges.get(Digit(("tid" if name == "block_dim" else "bid") + str(axis)))
        if n is not None and not n.terms and 0 < n.const <= default * 4:
            return min(n.const, default * 4)
    return default


def _digit(d: Digit, thread: dict) -> int:
    v = thread[d.coord]
    if d.part == "lo":
        return v % d.radix
    if d.part == "hi":
        return v // d.radix
    return v


def _runs(form: StoreForm, thread: dict) -> bool:
    """Does ``thread`` pass the form's pins (one to an unknown value is taken as 0; one to a
    value of loop counters, ``t % 2 == phase % 2``, holds in some round, which is not the other
    thread's where the pair is refused)?"""
    return all(_digit(d, thread) == (pin.value or 0)
               for d, pin in form.pins.items() if d.is_thread and not pin.rounds)


def _elements(form: StoreForm, thread: dict, sizes: dict):
    """The elements ``thread`` writes through ``form``, in the iterations that pass its
    guards."""
    loops = sorted({a for p in form.dims for a in nested_digits(p)
                    if not a.is_thread and a.of is None}, key=repr)
    trips = []
    for d in loops:
        n = form.ranges.get(d)
        trips.append(min(n.const, _LOOP_LIMIT) if n is not None and not n.terms else _LOOP_LIMIT)
    for ks in itertools.product(*(range(t) for t in trips)):
        counters = dict(zip(loops, ks))

        def value(atom, c: dict = counters):
            return _value(atom, c, thread, sizes)

        if all(_passes(g, value, counters, sizes) for g in form.guards):
            yield tuple(evaluate(p, value) for p in form.dims)


def _unknown(p, sizes: dict, counters=None) -> bool:
    """Does ``p`` hold an atom the example gives no value: a uniform value the launch does
    not give (a parameter, an array's extent), or a loop counter the store's index does not
    enumerate (``counters``, where given)?"""
    for mono, _ in p.terms:
        for a in nested_atoms(mono):
            if isinstance(a, Digit):
                if not a.is_thread and a.of is None and counters is not None and \
                        a not in counters:
                    return True
            elif _launch_value(a, sizes) is None:
                return True
    return False


def _large(g: Guard, sizes: dict) -> bool:
    """``x < U`` with ``U`` uniform and unknown (``if i < n:``): a launch with ``U`` large
    enough passes it, whatever the thread."""
    return g.op == "<" and not nested_digits(g.right) and _unknown(g.right, sizes)


def _unchecked(g: Guard, form: StoreForm, sizes: dict) -> bool:
    """Is ``g`` a condition the example cannot decide (see the module docstring)?"""
    loops = {a for p in form.dims for a in nested_digits(p) if not a.is_thread and a.of is None}
    if _large(g, sizes) and not _unknown(g.left, sizes, loops):
        # Taken large only where the index does not read it (there it is taken as 0).
        read = {a for p in form.dims for m, _ in p.terms for a in nested_atoms(m)}
        return any(a in read for m, _ in g.right.terms for a in nested_atoms(m))
    return _unknown(g.left, sizes, loops) or _unknown(g.right, sizes, loops)


def _passes(g: Guard, value, counters: dict, sizes: dict) -> bool:
    """Does the thread (with these loop counters) pass ``g``?  An undecidable guard counts as
    passed (the example then says so, see :func:`collision`)."""
    if _large(g, sizes):
        return True
    if _unknown(g.left, sizes, counters) or _unknown(g.right, sizes, counters):
        return True
    left, right = evaluate(g.left, value), evaluate(g.right, value)
    return {"==": left == right, "!=": left != right, "<": left < right,
            ">=": left >= right}[g.op]


def _value(atom, counters: dict, thread: dict, sizes: dict) -> int:
    """An atom's value in the example (uniform values other than the launch's are
    ``sizes["unknown"]``: 1024, then 0)."""
    if isinstance(atom, Digit) and atom.of is not None:  # a split or an XOR (.splits)
        return derived_value(atom.of, lambda a: _value(a, counters, thread, sizes))
    if isinstance(atom, Digit):
        return _digit(atom, thread) if atom.is_thread else counters[atom]
    launch = _launch_value(atom, sizes)
    return sizes.get("unknown", 0) if launch is None else launch


def _launch_value(k, sizes: dict) -> int | None:
    """The value of a uniform atom computed from the launch alone (``block_dim.x // 32``, the
    :class:`~.poly.Quotient` of an assert), or ``None``."""
    if isinstance(k, Quotient):
        k = OpKey("//", k.extent, ConstKey(k.k))
    if isinstance(k, SpecialKey) and k.name in sizes:
        return sizes[k.name][k.axis]
    if isinstance(k, ConstKey):
        return k.integer
    if isinstance(k, OpKey) and k.op in FOLDED:
        a, b = _launch_value(k.left, sizes), _launch_value(k.right, sizes)
        return None if a is None or b is None else FOLDED[k.op](a, b)
    return None


def _thread_text(thread: dict, required: frozenset[str]) -> str:
    parts = []
    for coord in sorted(required, key=lambda c: (c[0] != "t", c)):
        name = "thread_idx" if coord.startswith("tid") else "block_idx"
        parts.append(f"{name}.{'xyz'[int(coord[3])]} = {thread[coord]}")
    return "(" + ", ".join(parts) + ")" if len(parts) > 1 else parts[0]
