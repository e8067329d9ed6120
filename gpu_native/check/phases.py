"""Barrier phases: when ``sync_threads()`` orders two stores of a block's threads (and when
``grid_sync()`` orders two accesses of a global array by any threads of the grid).

Two stores into a shared array by two threads of one block cannot race when a barrier lies
between them on every path from one to the other.  The checker walks the body once; each
statement list it enters is a :class:`Frame`, and each statement of a list has an index (from
1).  A store's :class:`Position` is its path of (frame, index) pairs from the body down.

For stores ``A`` before ``B`` (in source order), with ``S`` the deepest list holding both:

* **A, then B** (the only order when no loop holds both): a barrier at ``S``'s top level between
  their statements runs between them; so does a barrier that *dominates* ``B`` inside ``B``'s
  statement (at the top level of a list on the way down to ``B``, before the statement that
  holds ``B``).
* **B, then A in a later iteration** (a loop holds both): a barrier before ``A``'s statement at
  ``S``'s top level, or dominating ``A`` inside its statement, runs in that iteration before
  ``A``; so does one after ``B``'s statement at ``S``'s top level that no ``break``,
  ``continue`` or ``return`` can skip (known only once the list has been walked: the reads
  are checked at the end, and a pair of stores that only such a barrier could order is
  proven then if none did, :func:`may_be_ordered_later`).

**Rounds.**  Two threads that run a pair of stores at once are in one barrier interval.  In a
``range()`` loop whose bounds every thread shares (a kernel's, under ``if``s of launch-uniform
conditions only), a barrier at the top level of the body after both stores' statements (or
before both), which no ``break``, ``continue`` or ``return`` can skip and no ``break`` cuts a
round short of, parts the rounds: a thread in round ``k`` has passed ``k`` of those barriers
and not ``k + 1``, so two threads in one interval are in the same round, and the loop's
counter (and anything computed from it and shared values: ``phase & 1``) is the same in both
(:func:`round_digits`; the same for the loops around it, whose rounds it parts too).  This rests
on what CUDA asks of ``__syncthreads()`` anyway: every thread of the block reaches the same
barriers.  The pair proofs then hold the counter equal in both threads (an odd-even
transposition sort's ``s[2 * t + (phase & 1)]`` and ``s[2 * t + (phase & 1) + 1]``); a pair that
only that proves is proven once the loop's end is seen (:func:`open_rounds`).

A barrier inside a loop body counts at the loop statement itself (for the lists around it) only
when the body surely runs once (a constant-true first test) and reaches the barrier before any
``break``, ``continue`` or ``return``; one inside ``with unsafe():`` always does; one inside an
``if`` never does.  Everything else is taken to race: the phases only ever *remove* pairs from
the proofs, and only pairs they show ordered.
"""

from __future__ import annotations

from .. import ir
from ..nodes import node

__all__ = ["Frame", "Phases", "Position", "may_be_ordered_later", "open_rounds", "ordered",
           "ordered_either", "round_digits"]


class Frame:
    """One statement list being checked: its ``kind`` ("body", "loop", "if" or "with"), the index
    of its current statement, the indices of its top-level barriers (``grid_barriers``: those
    that are ``grid_sync()``, which order every thread of the grid, not only a block's), the
    first index that may jump out (break, continue, return) and the first that may return.

    ``uniform``: every thread of the launch that reaches the statement holding the list runs it
    alike (a body, a ``with``, an ``if`` on a launch-uniform condition, a ``range()`` loop of
    launch-uniform bounds); ``round``: such a loop's counter (a :class:`~.poly.Digit`), which
    two threads share in one round where a barrier ends each round (:func:`round_digits`)."""

    def __init__(self, kind: str, uniform: bool | None = None, round: object = None):
        self.kind = kind
        self.is_loop = kind == "loop"
        self.uniform = kind in ("body", "with") if uniform is None else uniform
        self.round = round
        self.breaks = False  # a `break` of this loop (or, for another list, of the loop it is in)
        self.index = 0
        self.barriers: list[int] = []
        self.grid_barriers: list[int] = []
        self.first_jump: int | None = None
        self.first_return: int | None = None

    def barrier_between(self, lo: int, hi: int, grid: bool = False) -> bool:
        return any(lo < b < hi for b in (self.grid_barriers if grid else self.barriers))


@node(frozen=False, eq=False)
class Position:
    """Where a store is: its (frame, statement index) path from the body down."""

    path: tuple


class Phases:
    """The frames of the body being checked (see the module docstring)."""

    def __init__(self) -> None:
        self.stack: list[Frame] = []

    def enter(self, kind: str, uniform: bool | None = None, round: object = None) -> None:
        self.stack.append(Frame(kind, uniform, round))

    def leave(self, runs_once: bool = False) -> None:
        """The list ends; ``runs_once``: a loop body that surely runs once."""
        frame = self.stack.pop()
        always = frame.kind == "with"  # runs whenever the statement holding it does
        if not self.stack:
            return
        parent = self.stack[-1]
        # A break or continue leaves the loop it is in, never the list around the loop: out
        # of a loop's body only a return jumps on.
        escapes = frame.first_return if frame.is_loop else frame.first_jump
        if escapes is not None and parent.first_jump is None:
            parent.first_jump = parent.index
        if frame.first_return is not None and parent.first_return is None:
            parent.first_return = parent.index
        if frame.breaks and not frame.is_loop:
            parent.breaks = True
        for mine, theirs in ((frame.barriers, parent.barriers),
                             (frame.grid_barriers, parent.grid_barriers)):
            if (runs_once or always) and any(
                    frame.first_jump is None or b < frame.first_jump for b in mine):
                theirs.append(parent.index)

    def statement(self) -> None:
        if self.stack:
            self.stack[-1].index += 1

    def barrier(self, grid: bool = False) -> None:
        """A barrier at the current statement; ``grid``: a ``grid_sync()`` (also a block's)."""
        if self.stack:
            frame = self.stack[-1]
            frame.barriers.append(frame.index)
            if grid:
                frame.grid_barriers.append(frame.index)

    def jump(self, kind: str = "return") -> None:
        """A ``break``, ``continue`` or ``return`` (``kind``) at the current statement."""
        if self.stack:
            frame = self.stack[-1]
            if frame.first_jump is None:
                frame.first_jump = frame.index
            if kind == "return" and frame.first_return is None:
                frame.first_return = frame.index
            if kind == "break":
                frame.breaks = True

    @property
    def in_branch(self) -> bool:
        """Is the statement being checked inside an ``if`` (it may not run on every path)?"""
        return any(f.kind == "if" for f in self.stack)

    def position(self) -> Position:
        return Position(tuple((f, f.index) for f in self.stack))


def _common(a: Position, b: Position) -> int:
    """How many lists, from the body down, hold both ``a`` and ``b``."""
    common = 0
    while (common < len(a.path) and common < len(b.path)
           and a.path[common][0] is b.path[common][0]):
        common += 1
    return common


def ordered(a: Position, b: Position, grid: bool = False) -> bool:
    """Does a barrier separate every execution of the store at ``a`` from every execution of the
    store at ``b`` (``a`` the earlier in source order) in another thread of the block (``grid``:
    a ``grid_sync()``, in any other thread of the grid)?"""
    common = _common(a, b)
    if common == 0:
        return False
    frame, index_a = a.path[common - 1]
    index_b = b.path[common - 1][1]
    if index_a == index_b:
        return False  # one statement holds both (an if and its else, say): no order shown

    def dominated(path) -> bool:
        return any(f.barrier_between(0, i, grid) for f, i in path[common:])

    forward = frame.barrier_between(index_a, index_b, grid) or dominated(b.path) or \
        _followed(a.path[common:], grid)
    if not forward:
        return False
    in_loop = any(f.is_loop for f, _ in a.path[:common])
    if not in_loop or frame.barrier_between(0, index_a, grid) or dominated(a.path) or \
            _followed(b.path[common:], grid):
        return True
    # B, then A in a later iteration: a barrier after B's statement in the same list, which
    # every run of the list that ran B reaches first (no break, continue or return before it).
    stop = frame.first_jump
    return any(index_b < b and (stop is None or b < stop)
               for b in (frame.grid_barriers if grid else frame.barriers))


def _followed(path: tuple, grid: bool) -> bool:
    """Does a barrier run after the access at the end of ``path`` (its lists below the ones it
    shares with the other access, all walked already) on every way out of them: one at the top
    level of one of those lists after the statement that holds the access, before any
    ``break``, ``continue`` or ``return`` of that list (one anywhere in a statement that holds
    the access counts at that statement)?  The store of a reduction's round, ``if tid < s:
    cache[tid] += ...`` followed by ``sync_threads()`` in the loop's body, is so ordered
    before every read after the loop."""
    for frame, index in path:
        stop = frame.first_jump
        if any(index < b and (stop is None or b < stop)
               for b in (frame.grid_barriers if grid else frame.barriers)):
            return True
    return False


def may_be_ordered_later(a: Position, b: Position, phases: Phases) -> bool:
    """Whether :func:`ordered` of ``a`` and ``b`` (a block's barrier), false now, may hold once
    the walk has left the list that holds both: a barrier between them runs in each iteration,
    and the one that would order ``b`` before ``a`` of the next iteration may still come after
    ``b`` in that list, which is still being walked (a phase that ends with ``sync_threads()``
    in a loop)."""
    common = _common(a, b)
    if common == 0 or a.path[common - 1][1] == b.path[common - 1][1]:
        return False
    frame = a.path[common - 1][0]
    if not any(frame is f for f in phases.stack) or frame.first_jump is not None:
        return False
    if not any(f.is_loop for f, _ in a.path[:common]):
        return False
    index_a, index_b = a.path[common - 1][1], b.path[common - 1][1]
    return frame.barrier_between(index_a, index_b) or any(
        f.barrier_between(0, i) for f, i in b.path[common:])


def round_digits(a: Position, b: Position) -> frozenset:
    """The counters of the loops that hold both stores and in one round of which the two
    threads of a pair that is not ordered must be (see the module docstring, "Rounds").

    From the kernel's body down the lists that hold both, each list must be ``uniform`` and
    free of jumps before the statement that leads on (a ``return`` in the body only ends the
    thread, which then meets no barrier); the deepest loop among them with a barrier at its
    top level after both stores' statements (or before both), before any ``break``,
    ``continue`` or ``return``, parts each of its rounds from the next with the stores on one
    side, and with them each round of the loops around it: the counters of those loops (their
    ``round``) are the same in both threads."""
    common = _common(a, b)
    deepest = 0  # how many of the common lists down to the deepest loop so ended
    for depth in range(common):
        frame, index = a.path[depth]
        first, last = min(index, b.path[depth][1]), max(index, b.path[depth][1])
        if not frame.uniform or frame.breaks:  # (a break: threads may run more rounds)
            break
        if frame.is_loop:
            stop = frame.first_jump
            # After both stores, or before both (between them it orders one round's pair, and
            # the later store of one round meets the earlier of the next).
            if any((last < m or m < first) and (stop is None or m < stop)
                   for m in frame.barriers):
                deepest = depth + 1
        # Further down only where no thread leaves this list before it gets there: a break
        # or continue there could make two threads run the loops below a different number
        # of times.
        if frame.first_jump is not None and frame.first_jump <= last and frame.kind != "body":
            break
        if depth + 1 < common and a.path[depth][1] != b.path[depth][1]:
            break
    return frozenset(f.round for f, _ in a.path[:deepest] if f.is_loop and f.round is not None)


def open_rounds(a: Position, b: Position, phases: Phases) -> list:
    """The counters of the loops that hold both ``a`` and ``b``, count their rounds and are
    still being walked (outermost first)."""
    common = _common(a, b)
    return [f.round for f, _ in a.path[:common]
            if f.is_loop and f.round is not None and any(f is g for g in phases.stack)]


def ordered_either(a: Position, b: Position, grid: bool = False) -> bool:
    """:func:`ordered` for two accesses in either source order (a read and a store, say)."""
    for (fa, ia), (fb, ib) in zip(a.path, b.path):
        if fa is not fb:
            break
        if ia != ib:
            return ordered(a, b, grid) if ia < ib else ordered(b, a, grid)
    return False  # one statement holds both, or they share no list: no order shown


def entry_value(e: ir.Expr, known: dict) -> object:
    """The value of ``e`` on entry to a loop, from constants and the variables ``known`` to hold
    one (by id); ``None`` when it is not known."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Cast):
        return entry_value(e.value, known)
    if isinstance(e, ir.Local):
        return known.get(id(e.var))
    if isinstance(e, ir.UnaryOp) and e.op == "not":
        v = entry_value(e.operand, known)
        return None if v is None else not v
    if isinstance(e, (ir.BinOp, ir.Compare)):
        left, right = entry_value(e.left, known), entry_value(e.right, known)
        if not isinstance(left, int) or not isinstance(right, int):
            return None
        if e.op not in _OPS or (e.op in ("//", "%") and (left < 0 or right <= 0)) or (
                e.op in (">>", "<<") and not 0 <= right < 32):
            return None
        value = _OPS[e.op](left, right)
        return value if isinstance(value, bool) or abs(value) < 1 << 31 else None
    if isinstance(e, ir.BoolOp):
        values = [entry_value(v, known) for v in e.values]
        if any(v is None for v in values):
            return None
        return all(values) if e.op == "and" else any(values)
    return None


_OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, ">>": lambda a, b: a >> b,
    "<<": lambda a, b: a << b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}
