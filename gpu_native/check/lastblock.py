"""The last ticket (R7): a condition on the value an atomic ticket returned leaves one thread.

``drawn = ctr.atomic_ref(0).fetch_add(1)`` returns another value to every draw while nothing
else changes ``ctr`` (:func:`.classify.is_ticket`), so ``drawn == C`` with ``C`` launch-uniform
holds in at most one thread of the grid: under it every thread coordinate is *pinned*.  The
cuda-samples ``threadFenceReduction`` kernel carries that one winner to its whole block through
shared memory and lets it reset the counter for the next launch::

    if tid == 0:                                      # one thread of each block
        drawn = ticket.atomic_ref(0).fetch_add(1)     # the draw D, once per block
        is_last[0] = 1 if drawn == grid_dim.x - 1 else 0
    sync_threads()
    if is_last[0] == 1:                               # at most one block of the grid
        ...
        if tid == 0:
            out[0] = total                            # one thread of the grid
            ticket[0] = 0                             # the reset

The checker makes the pins as it meets the conditions (:class:`TicketPinned` facts, see
:func:`ticket_facts`) and proves, once the body is known (:func:`check_ticket_pins`), what they
rely on.  A store that needs such a pin is refused, with the reason, unless all of this holds.

**The counter.**  Every change of the counter cell is a draw (an atomic add of a positive
constant), or a *reset*: a plain store of 0 to the draw's cell, accepted under a pin of the same
draw (so by the thread whose draw won, after its draw, or by one thread of its block after the
barrier).  No other atomic, store or device call touches the counter array.

**No wrap-around.**  The draws are distinct modulo ``2**bits`` while the increments they add up
to stay below ``2**bits``.  A draw outside loops under ``thread_idx == c`` for every thread axis
runs at most once per block; a 1-D grid has fewer than ``2**31`` blocks.  Otherwise a draw runs
at most once per thread outside loops (1024 threads in a block), and without a bound in a loop
or a device function.  A 64-bit counter is taken not to wrap in one launch (``2**64`` atomic
operations on one address take centuries); a 32-bit one must be shown not to.

**The reset.**  Take a 1-D grid of ``N`` blocks, one draw site ``D`` that adds 1, runs at most
once per block, and ``P`` = ``drawn == grid_dim.x - 1`` (or ``drawn + 1 == grid_dim.x``).  Let
``w1`` be the first draw (in the counter's modification order) for which ``P`` holds and ``w2``
a second.  Only winners reset, after their own draw, so before ``w2`` the only reset can be
``w1``'s.  If ``w1``'s reset comes after ``w2`` in that order, the draws up to ``w2`` are
consecutive increments from the launch's start value: at most ``N < 2**32`` of them, distinct
modulo ``2**32``, so ``w2`` does not return ``w1``'s value.  If it comes before, ``w2`` returns
the number of draws between that reset and ``w2``; they exclude ``w1`` and ``w2``, so there are at
most ``N - 2``, and ``w2`` returns at most ``N - 2 < N - 1``: ``P`` fails.  So ``P`` holds for one
draw at most, whatever the counter held before the launch.  With a larger step, several draw
sites, another ``C`` or a shared counter the arithmetic does not close, and a reset is refused.

**The flag.**  ``if F[0] == k:`` (``k`` a nonzero constant, or ``F[0] != 0``) pins the block
where ``F`` is a one-element shared array written by exactly one store in the kernel, and that
store is ``F[0] = 1 if P else 0`` (or ``P``) with ``P`` a ticket comparison whose draw is the
value of a local assigned just before, in the same statement list; the store runs in every
block exactly once (its only conditions are ``thread_idx == 0`` along every thread axis, no
loop holds it, no ``return`` comes before it: shared memory starts undefined, so a block that
skipped it would read garbage), and a ``sync_threads()`` separates it from the read (see
:func:`.phases.ordered`) that comes after it.  Then ``F[0]`` is nonzero in a block exactly when
its thread 0 drew the winning value, which happens in one block at most, and every thread of the
block reads the same value.  A thread that ends early by a failed bounds check or assert makes
the launch fail anyway; such a launch is not covered.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import HARDWARE, constant_value
from ..errors import SourceSpan, TranspileError
from ..nodes import node
from .facts import ConstKey, Fact, OpKey, Pinned, SpecialKey
from .phases import Position, ordered

if TYPE_CHECKING:
    from .unique import UniqueWrites

__all__ = ["FlagRead", "TicketCompare", "TicketPinned", "TicketUse", "check_ticket_pins",
           "ticket_facts"]

_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
# Threads in a block, at most (every GPU the language targets).
_BLOCK_THREADS = 1024
_HINT = ("see the last-ticket rule (R7) in docs/gallery.md; or wrap the store in "
         "`with unsafe():` if you know it is race-free")


@node(frozen=False, eq=False)
class TicketCompare:
    """``drawn == value``: ``drawn`` computed from the ticket draw ``draw`` (one-to-one),
    ``value`` launch-uniform."""

    draw: ir.Atomic
    compare: ir.Compare
    drawn: ir.Expr
    value: ir.Expr

    def __repr__(self) -> str:
        return f"TicketCompare(line {self.compare.span.line})"


@node(frozen=False, eq=False)
class FlagRead:
    """A read ``F[0]`` of a one-element shared array in a condition that holds where the element
    is nonzero; ``position`` is where the condition is (the barrier phases')."""

    array: ir.ArrayRef
    load: ir.Load
    position: Position

    def __repr__(self) -> str:
        return f"FlagRead({self.array.var.name}, line {self.load.span.line})"


@node
class TicketPinned(Pinned):
    """Only one thread runs here along ``coord``, because of a ticket comparison or a flag
    that carries one (``source``): true only if :func:`check_ticket_pins` says so."""

    source: TicketCompare | FlagRead


@node(frozen=False, eq=False)
class TicketUse:
    """A store (``base``; ``None`` for a ``UniqueId`` argument) at ``span`` that needs the pins
    of ``sources`` to be race-free."""

    sources: tuple[TicketCompare | FlagRead, ...]
    span: SourceSpan
    base: ir.ArrayRef | None


# ---- the pins, as the type pass meets conditions ------------------------------------------------


def ticket_facts(cond: ir.Expr, truth: bool, unique: UniqueWrites) -> set[Fact]:
    """The :class:`TicketPinned` facts that hold where ``cond`` evaluated to ``truth``."""
    if isinstance(cond, ir.UnaryOp) and cond.op == "not":
        return ticket_facts(cond.operand, not truth, unique)
    if isinstance(cond, ir.BoolOp):
        out: set[Fact] = set()
        if (cond.op == "and") == truth:
            for v in cond.values:
                out |= ticket_facts(v, truth, unique)
        return out
    if not isinstance(cond, ir.Compare):
        flag = _flag_load(cond) if truth else None
        return _flag_facts(flag, unique) if flag is not None else set()
    op = cond.op if truth else _NEGATE[cond.op]
    if op == "==":
        for a, b in ((cond.left, cond.right), (cond.right, cond.left)):
            draws = unique.ticket_draws(a)
            if len(draws) == 1 and unique.is_uniform(b):
                u = unique.classify(a)
                if u is not None:
                    source = TicketCompare(draws[0], cond, a, b)
                    return {TicketPinned(c, source) for c in u.coords}
    for a, b in ((cond.left, cond.right), (cond.right, cond.left)):
        flag = _flag_load(a)
        k = constant_value(b)
        if flag is not None and isinstance(k, (int, bool)) and (
                (op == "==" and k != 0) or (op == "!=" and k == 0)):
            return _flag_facts(flag, unique)
    return set()


def _flag_facts(flag: ir.Load, unique: UniqueWrites) -> set[Fact]:
    source = FlagRead(flag.array, flag, unique.phases.position())
    return {TicketPinned(f"bid{axis}", source) for axis in range(3)}


def _flag_load(e: ir.Expr) -> ir.Load | None:
    """``F[0]`` of a one-element shared array of integers or bools (through casts), or None."""
    while isinstance(e, ir.Cast):
        e = e.value
    if not isinstance(e, ir.Load) or e.array.ty.space != "shared" or e.array.ty.shape != (1,):
        return None
    elem = e.array.ty.elem
    if not (isinstance(elem, ir.ScalarType) and (elem.info.is_int or elem == ir.BOOL)):
        return None
    return e if [constant_value(i) for i in e.indices] == [0] else None


# ---- where each statement is ------------------------------------------------------------------


@node(frozen=False, eq=False)
class _Place:
    """A statement of the body: the list that holds it and its index there, the conditions
    around it (with the branch taken), whether a loop holds it, and its order in the source."""

    stmt: ir.Stmt
    siblings: tuple[ir.Stmt, ...]
    index: int
    conds: tuple[tuple[ir.Expr, bool], ...]
    in_loop: bool
    order: int


class _Body:
    """The places of a body's statements, and of every expression by the statement it is in."""

    def __init__(self, body: tuple[ir.Stmt, ...]):
        self.places: list[_Place] = []
        self.by_expr: dict[int, _Place] = {}
        self._visit(body, (), False)

    def _visit(self, stmts, conds, in_loop: bool) -> None:
        for index, s in enumerate(stmts):
            place = _Place(s, stmts, index, conds, in_loop, len(self.places))
            self.places.append(place)
            for value in vars(s).values():
                for e in _own_exprs(value):
                    for n in ir.walk(e):
                        self.by_expr[id(n)] = place
            if isinstance(s, ir.If):
                self._visit(s.then, (*conds, (s.cond, True)), in_loop)
                self._visit(s.orelse, (*conds, (s.cond, False)), in_loop)
            elif isinstance(s, (ir.While, ir.ForRange, ir.GridStride)):
                self._visit(s.body, conds, True)

    def nodes(self) -> Iterator[tuple[ir.Expr | ir.Stmt, _Place]]:
        """Every statement and expression node with its place."""
        for place in self.places:
            yield place.stmt, place
        for place in self.places:
            for value in vars(place.stmt).values():
                for e in _own_exprs(value):
                    for n in ir.walk(e):
                        yield n, place


def _own_exprs(value) -> Iterator[ir.Expr]:
    if isinstance(value, ir.Expr):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            if isinstance(item, ir.Expr):
                yield item


# ---- the end check --------------------------------------------------------------------------------


def check_ticket_pins(unique: UniqueWrites, body: tuple[ir.Stmt, ...]) -> None:
    """Once the body is known: every pin a store needed (``unique.ticket_pins``) holds, or the
    store is refused with the reason (see the module docstring)."""
    if not unique.ticket_pins:
        return
    check = _Check(unique, body)
    for use in unique.ticket_pins:
        for source in use.sources:
            what = (f"store into '{use.base.var.name}'" if use.base is not None
                    else "this UniqueId argument")
            check.source(source, use, what)


class _Check:
    def __init__(self, unique: UniqueWrites, body: tuple[ir.Stmt, ...]):
        self.unique = unique
        self.body = _Body(body)
        self.ndim = unique.ctx.ndim
        self.done: set[int] = set()

    def refuse(self, what: str, why: str, span: SourceSpan, hint: str = _HINT):
        raise TranspileError(f"{what} is left to one thread by a ticket's value, but {why}",
                             span, hint)

    def source(self, source: TicketCompare | FlagRead, use: TicketUse, what: str) -> None:
        compare = self.flag(source, use, what) if isinstance(source, FlagRead) else source
        if id(compare.draw) not in self.done:
            self.counter(compare, use, what)
            self.done.add(id(compare.draw))

    # -- the flag --

    def flag(self, read: FlagRead, use: TicketUse, what: str) -> TicketCompare:
        var = read.array.var
        name = f"the flag '{var.name}' (read at line {read.load.span.line})"
        stores: list[tuple[ir.Store, _Place]] = []
        for n, place in self.body.nodes():
            if isinstance(n, ir.Store) and n.array.var is var:
                stores.append((n, place))
            elif isinstance(n, ir.Atomic) and n.array.var is var and n.op != "load":
                self.refuse(what, f"{name} is changed by an atomic {n.op} at line "
                            f"{n.span.line}: one store must write it", use.span)
            elif isinstance(n, ir.Call) and any(
                    isinstance(a, ir.ArrayRef) and a.var is var for a in n.args):
                self.refuse(what, f"{name} is passed to a device function at line "
                            f"{n.span.line}: one store must write it", use.span)
        if len(stores) != 1:
            lines = ", ".join(str(s.span.line) for s, _ in stores)
            self.refuse(what, f"{name} is written elsewhere (lines {lines}): one store "
                        "must write it" if stores else f"{name} is never written", use.span)
        store, place = stores[0]
        at = f"{name} is written at line {store.span.line}"
        compare = self._flag_value(store.value)
        if compare is None:
            self.refuse(what, f"{at} with a value that is not `1 if drawn == C else 0` (nonzero "
                        "exactly when a ticket drawn by that thread equals a launch-uniform C)",
                        use.span)
        assert compare is not None
        if compare.draw.array.ty.space != "global":
            self.refuse(what, f"{at} from a ticket of the shared array "
                        f"'{compare.draw.array.var.name}', which each block draws apart",
                        use.span)
        if not self.unique.is_kernel or store.unique == "unsafe" or place.in_loop or \
                not self._pins_threads(place.conds, zero_only=True):
            self.refuse(what, f"{at}, not once in every block: write it by thread 0 alone "
                        "(`if thread_idx.x == 0:` and nothing else, outside loops), so that no "
                        "block reads what its shared memory held before", use.span)
        early = next((p for p in self.body.places[:place.order]
                      if isinstance(p.stmt, ir.Return)), None)
        if early is not None:
            self.refuse(what, f"{at} after a return (line {early.stmt.span.line}) that may "
                        "leave it unwritten in some blocks", use.span)
        drawn = self._drawn_before(compare, place)
        if not drawn:
            self.refuse(what, f"{at} from a ticket not drawn just before it by the same thread "
                        "(`drawn = ctr.atomic_ref(0).fetch_add(1)` in the same block of "
                        "statements)", use.span)
        written = self.unique.flag_positions.get(id(store.array))
        if written is None or not _before(written, read.position) or \
                not ordered(written, read.position):
            self.refuse(what, f"{at}, and no sync_threads() between that store and this read "
                        "shows every thread of the block the value", use.span,
                        "call sync_threads() after the flag's store and before its read, in "
                        "the kernel's body (not inside a branch)")
        return compare

    def _flag_value(self, value: ir.Expr) -> TicketCompare | None:
        """``1 if P else 0`` (or ``P``) with ``P`` a ticket comparison."""
        while isinstance(value, ir.Cast):
            value = value.value
        if isinstance(value, ir.Select):
            then, orelse = constant_value(value.then), constant_value(value.orelse)
            if not (isinstance(then, (int, bool)) and then != 0 and orelse == 0):
                return None
            value = value.cond
        if not isinstance(value, ir.Compare):
            return None
        facts = ticket_facts(value, True, self.unique)
        sources = {f.source for f in facts if isinstance(f, TicketPinned)}
        (source,) = sources if len(sources) == 1 else (None,)
        return source if isinstance(source, TicketCompare) else None

    def _drawn_before(self, compare: TicketCompare, place: _Place) -> bool:
        """Is ``compare``'s draw the value of a local assigned once, by a statement before
        ``place`` in its list (so by the same thread, once each time ``place`` runs)?"""
        e = compare.drawn
        while isinstance(e, (ir.Cast, ir.BinOp)):
            e = e.value if isinstance(e, ir.Cast) else (
                e.left if self.unique.ticket_draws(e.left) else e.right)
        if not isinstance(e, ir.Local) or \
                self.unique.defs.assign_counts.get(e.var.name, 0) != 1:
            return False
        for s in place.siblings[:place.index]:
            if isinstance(s, ir.Assign) and s.var is e.var:
                value = s.value
                while isinstance(value, ir.Cast):
                    value = value.value
                return value is compare.draw
        return False

    def _pins_threads(self, conds, zero_only: bool) -> bool:
        """Do ``conds`` leave one thread of each block (``thread_idx == c`` along every thread
        axis, ``c`` launch-uniform)?  ``zero_only``: and nothing else, with ``c`` 0 (thread 0
        exists in every block)."""
        axes: set[int] = set()
        for cond, truth in conds:
            terms = _conjuncts(cond) if truth else [cond]
            for term in terms:
                axis = self._thread_pin(term, zero_only) if truth else None
                if axis is not None:
                    axes.add(axis)
                elif zero_only:
                    return False
        return set(range(self.ndim)) <= axes

    def _thread_pin(self, e: ir.Expr, zero_only: bool) -> int | None:
        if not (isinstance(e, ir.Compare) and e.op == "=="):
            return None
        for a, b in ((e.left, e.right), (e.right, e.left)):
            axis = self._thread_axis(a)
            if axis is None:
                continue
            if constant_value(b) == 0 if zero_only else self.unique.is_uniform(b):
                return axis
        return None

    def _thread_axis(self, e: ir.Expr, depth: int = 0) -> int | None:
        while isinstance(e, ir.Cast):
            e = e.value
        if isinstance(e, ir.Local) and depth < 16 and \
                self.unique.defs.assign_counts.get(e.var.name, 0) == 1:
            d = self.unique.defs.single_def(e.var)
            return self._thread_axis(d, depth + 1) if d is not None else None
        if isinstance(e, ir.Special) and e.name == "thread_idx":
            return e.axis
        if isinstance(e, ir.UidComponent) and e.scope == "block":
            return e.axis
        return None

    # -- the counter --

    def counter(self, compare: TicketCompare, use: TicketUse, what: str) -> None:
        draw = compare.draw
        var = draw.array.var
        name = f"the counter '{var.name}' (drawn at line {draw.span.line})"
        draws: list[tuple[ir.Atomic, _Place]] = []
        resets: list[ir.Store] = []
        for n, place in self.body.nodes():
            if isinstance(n, ir.Atomic) and n.array.var is var and n.op != "load":
                if n.op != "add" or not _positive_step(n):
                    self.refuse(what, f"{name} is changed by an atomic {n.op} at line "
                                f"{n.span.line}, and then two draws can return one value",
                                use.span)
                draws.append((n, place))
            elif isinstance(n, ir.Call) and any(
                    isinstance(a, ir.ArrayRef) and a.var is var for a in n.args):
                self.refuse(what, f"{name} is passed to a device function at line "
                            f"{n.span.line}, which may change it", use.span)
            elif isinstance(n, ir.Store) and n.array.var is var:
                if not self._is_reset(n, draw):
                    self.refuse(what, f"{name} is written elsewhere (line {n.span.line}): the "
                                "only store allowed is the reset `ctr[i] = 0` of the draw's "
                                "element by the thread the winning draw leaves, under that "
                                "condition", use.span)
                resets.append(n)
        self._no_wrap(draws, var, name, use, what)
        if resets:
            self._reset(compare, draws, resets[0], name, use, what)

    def _is_reset(self, store: ir.Store, draw: ir.Atomic) -> bool:
        if store.unique == "unsafe" or constant_value(store.value) != 0:
            return False
        if [constant_value(i) for i in store.indices] != [constant_value(i)
                                                          for i in draw.indices]:
            return False
        for use in self.unique.ticket_pins:
            if use.base is store.array and any(
                    self._draw_of(s) is draw for s in use.sources):
                return True
        return False

    def _draw_of(self, source: TicketCompare | FlagRead) -> ir.Atomic | None:
        if isinstance(source, TicketCompare):
            return source.draw
        for n, _ in self.body.nodes():
            if isinstance(n, ir.Store) and n.array.var is source.array.var:
                compare = self._flag_value(n.value)
                return compare.draw if compare is not None else None
        return None

    def _no_wrap(self, draws, var: ir.Var, name: str, use: TicketUse, what: str) -> None:
        elem = var.ty.elem if isinstance(var.ty, ir.ArrayType) else None
        if not isinstance(elem, ir.ScalarType) or elem.info.bits >= 64:
            return
        total = 0
        for atomic, place in draws:
            step = constant_value(atomic.operands[0])
            assert isinstance(step, int)
            if place.in_loop or not self.unique.is_kernel:
                total = -1
                break
            once = self._pins_threads(place.conds, zero_only=False)
            if atomic.array.ty.space == "shared":
                runs = 1 if once else _BLOCK_THREADS
            elif self.ndim == 1:
                runs = HARDWARE.grid_dim[0] * (1 if once else _BLOCK_THREADS)
            else:
                total = -1
                break
            total += step * runs
        if total < 0 or total > 1 << elem.info.bits:
            self.refuse(what, f"{name} is {elem} and its draws may wrap around in one launch, "
                        "and then two draws return one value", use.span,
                        "draw once per block (under `if thread_idx.x == 0:`, outside loops, "
                        "in a 1-D launch) or use a 64-bit counter")

    def _reset(self, compare: TicketCompare, draws, reset: ir.Store, name: str,
               use: TicketUse, what: str) -> None:
        at = f"{name} is reset at line {reset.span.line}"
        if len(draws) != 1:
            other = next(a for a, _ in draws if a is not compare.draw)
            self.refuse(what, f"{at} and drawn again at line {other.span.line}: with a reset, "
                        "one draw site alone keeps the draws from repeating the winning value",
                        use.span)
        atomic, place = draws[0]
        if constant_value(atomic.operands[0]) != 1:
            self.refuse(what, f"{at}, and its draw adds more than 1: after the reset a later "
                        "draw can return the winning value again", use.span)
        if atomic.array.ty.space != "global" or self.ndim != 1 or place.in_loop or \
                not self.unique.is_kernel or not self._pins_threads(place.conds, False):
            self.refuse(what, f"{at}, and its draw may run more than once per block (draw "
                        "under `if thread_idx.x == 0:`, outside loops, in a 1-D kernel): "
                        "after the reset a later draw can return the winning value again",
                        use.span)
        if not self._is_last(compare):
            self.refuse(what, f"{at}, and the winning value is not the last one "
                        "(`drawn == grid_dim.x - 1`): after the reset a later draw can return "
                        "it again", use.span)

    def _is_last(self, compare: TicketCompare) -> bool:
        """``drawn == grid_dim.x - 1`` or ``drawn + 1 == grid_dim.x``, ``drawn`` the draw's
        local (through widening casts)."""
        key = self.unique.defs.key
        grid = SpecialKey("grid_dim", 0)
        drawn, value = compare.drawn, compare.value
        while isinstance(drawn, ir.Cast):
            drawn = drawn.value
        if isinstance(drawn, ir.BinOp) and drawn.op == "+" and \
                constant_value(drawn.right) == 1:
            drawn, last = drawn.left, key(value) == grid
        else:
            last = key(value) == OpKey("-", grid, ConstKey(1))
        while isinstance(drawn, (ir.Cast, ir.Local)):
            if isinstance(drawn, ir.Local):
                d = self.unique.defs.single_def(drawn.var)
                if d is None or self.unique.defs.assign_counts.get(drawn.var.name, 0) != 1:
                    return False
                drawn = d
            else:
                drawn = drawn.value
        return last and drawn is compare.draw


def _positive_step(e: ir.Atomic) -> bool:
    k = constant_value(e.operands[0]) if e.operands else None
    return isinstance(k, int) and not isinstance(k, bool) and k > 0


def _conjuncts(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.BoolOp) and e.op == "and":
        return [t for v in e.values for t in _conjuncts(v)]
    return [e]


def _before(a: Position, b: Position) -> bool:
    """Is the statement at ``a`` before the one at ``b`` in the source (not inside it)?"""
    for (fa, ia), (fb, ib) in zip(a.path, b.path):
        if fa is not fb:
            return False
        if ia != ib:
            return ia < ib
    return False
