"""Stores into a shared array scaled by a loop variable the whole block shares (rule R3 for loop
variables).

The tree-indexed stores of a scan or a sorting network scale the thread's index by a value that
a loop doubles or halves (``temp[offset * (2 * tid + 2) - 1]``, ``s[2 * tid - (tid & (stride -
1))]``).  The affine forms of :mod:`.ownership` have no atom for such a variable: it is assigned
more than once, so it is no launch-uniform value, and a product of it with a digit is not
affine in anything the forms know.  This module proves those stores once the whole kernel body
is known, from what the block's threads all do.

**The block's trace.**  The kernel body is run once on the *uniform* values alone
(:class:`Trace`): integer locals whose values every thread of the block computes alike
(constants and the arithmetic of such values), through ``if``/``while``/``range`` whose
conditions are such values.  A condition that may differ between threads (``if tid < d:``)
runs both branches as *divergent* code: a variable one assigns differs between threads after
it.  Each ``sync_threads()`` on the uniform path begins a new *barrier interval*.  For every
store into a shared array, the trace records the intervals it runs in and, for each, the
values of the variables its index and conditions read.  The trace gives up (and every store it
was to prove is refused) where it cannot follow the block: a barrier under a condition or a
loop that is not uniform and known, a ``break``/``continue``/``return`` under a thread-dependent
condition, a call of a device function, too many steps.

**The proof.**  Two threads of a block can write one element at once only in one barrier
interval.  For every interval in which a store scaled by a traced variable and another store of
the array (or itself) both run, and every value each may see there, both stores' indices are
written with those values as constants and proven apart with :func:`.radix.prove_pair`:
``offset * (2 * tid + 2) - 1`` with ``offset == 4`` is the affine ``8 * tid + 7``.  A value of
``0`` for a scale (``offset`` starting at 0, or halved once too often) leaves the index the
same in every thread, and the proof fails; a ``stride`` that is not a power of two leaves
``tid & (stride - 1)`` a mask that is no split of ``tid``, and the proof fails.  The values of
one interval are proven against each other in every combination, so a loop with no barrier in
it is proven for a thread in one iteration against another thread in any other.

Stores checked by the ordinary rules are not proven again; a store of the array that needs no
trace is paired with the traced one by its own form (which holds for every value of its loop
counters), with the conditions around it that read a traced variable written with the values
the trace gives them there (``if (t ^ j) > t: s[t] = ...``).  Besides the ordinary rules, a pair
is proven by an XOR that pairs its elements up (:mod:`.xorpairs`: a bitonic network's ``s[t]``
and ``s[t ^ j]`` under ``if (t ^ j) > t:``, ``j`` one value in each barrier interval).  Writes of the array by anything but a plain store (an atomic, a matrix operation)
refuse the proof, as does a store inside ``with unsafe():`` (it is not modelled at all, as in
the ordinary rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .. import ir
from ..analysis.ranges import Affine
from ..errors import SourceSpan, TranspileError
from ..launchexpr import LaunchExpr, LaunchIndex, subtrees
from ..nodes import fields, node, replace
from ..spec import IndexFits
from .facts import (
    AtMost,
    ConstKey,
    Exact,
    Key,
    Less,
    OpKey,
    VarKey,
    inlined_call,
    returned_expression,
)
from .ownership import Forms, StoreForm
from .poly import Digit
from .radix import PairProof
from .refusals import wrap_message
from .wrapping import digit_terms, fits_check, fits_in_i32, largest_difference

__all__ = ["READ_RACE_HINT", "ScaledStores", "Trace", "read_footprint", "scale_vars",
           "substitute_keys"]

UNIFORM = "U"  # the same in every thread of the block, value not known
THREAD = "T"  # may differ between threads
_MAX_STEPS = 200_000  # statements the trace runs before it gives up
_MAX_PAIRS = 20_000  # pair proofs one kernel may ask for
_MAX_READ_PAIRS = 2_000  # read-store proofs: past them, the rest is left to the simulator
_MAX_ROUNDS = 80  # rounds of a loop of unknown trip count before its values must repeat


class _Abort(Exception):
    """The trace cannot follow the block here: ``reason`` says why."""

    def __init__(self, reason: str, span: SourceSpan | None = None, hint: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.span = span
        self.hint = hint  # what would let the trace follow, where known


class _Jump(Exception):
    def __init__(self, kind: str, level: int):
        super().__init__(kind)
        self.kind = kind
        self.level = level


def _wrap(value: int, ty) -> int | str:
    if not isinstance(ty, ir.ScalarType):
        return UNIFORM
    info = ty.info
    if info.kind == "bool":
        return int(bool(value))
    if info.kind not in ("int", "uint"):
        return UNIFORM
    value &= (1 << info.bits) - 1
    if info.kind == "int" and value >= 1 << (info.bits - 1):
        value -= 1 << info.bits
    return value


def _arith(op: str, a: int, b: int) -> int | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("//", "%"):
        if b == 0:
            return None
        return a // b if op == "//" else a % b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return a << b if 0 <= b < 64 else None
    if op == ">>":
        return a >> b if 0 <= b < 64 else None
    return None


_COMPARE = {"<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__,
            "==": int.__eq__, "!=": int.__ne__}


class Trace:
    """One run of a kernel body on the values every thread of a block shares (see the module
    docstring).  ``watch`` maps the ``id`` of a store's index tuple to the variables whose values
    it needs; after :meth:`run`, ``seen`` maps it to the set of ``(interval, values)`` it ran
    with, and ``aborted`` is ``None`` or why the trace gave up."""

    def __init__(self, watch: dict[int, tuple[ir.Var, ...]], launch: dict | None = None):
        self.watch = watch
        self.launch = launch or {}
        self.env: dict[int, object] = {}
        self.interval = 0
        self.level = 0  # how many thread-dependent conditions hold the statement being run
        self.steps = 0
        self.seen: dict[int, set[tuple[int, tuple]]] = {}
        self.aborted: _Abort | None = None
        self.done = 0  # how many of the body's statements the trace followed to their end
        # The intervals an interval may be (see :meth:`loop_maybe`): the one after a loop whose
        # rounds the block cannot count is the last interval of whichever round ended it.
        self.aliases: dict[int, frozenset[int]] = {}
        self.uncounted: set[int] = set()  # the watched stores that ran in such a loop
        self.thread_loops: set[int] = set()  # counters of loops whose values differ by thread
        self.maybe = 0  # how many such loops hold the statement being run
        self.loads: dict[int, tuple] = {}  # a statement's watched reads (see reads())

    def run(self, body: tuple[ir.Stmt, ...]) -> None:
        try:
            for n in ir.walk(body):
                if isinstance(n, ir.Call) and returned_expression(n.function) is None:
                    raise _Abort("it calls a device function (which may hold a barrier)",
                                 n.span)
            for i, stmt in enumerate(body):
                self.done = i  # the statements before this one ran to their end
                self.statement(stmt)
            self.done = len(body)
        except _Jump as jump:
            if jump.kind != "return":
                self.aborted = _Abort(f"a `{jump.kind}` outside any loop the trace follows")
        except _Abort as abort:
            self.aborted = abort

    # -- values --

    def value(self, e: ir.Expr) -> object:
        if isinstance(e, ir.Const):
            v = e.value
            return int(v) if isinstance(v, (bool, int)) else UNIFORM
        if isinstance(e, ir.Local):
            got = self.env.get(id(e.var))
            if got is not None:
                return got
            return UNIFORM if e.var.is_param else THREAD
        if isinstance(e, ir.Special):
            if e.name == "thread_idx":
                return THREAD
            if e.name in ("block_dim", "grid_dim"):
                return self.launch.get((e.name, e.axis), UNIFORM)
            return UNIFORM  # block_idx: one value in a block
        if isinstance(e, ir.Shape):
            return UNIFORM
        parts: list[object]
        if isinstance(e, ir.BinOp):
            parts = [self.value(e.left), self.value(e.right)]
            done = _combine(parts)
            if done is not None:
                return done
            r = _arith(e.op, *_known(parts))
            return UNIFORM if r is None else _wrap(r, e.ty)
        if isinstance(e, ir.Compare):
            parts = [self.value(e.left), self.value(e.right)]
            done = _combine(parts)
            if done is not None:
                return done
            return int(_COMPARE[e.op](*_known(parts)))
        if isinstance(e, ir.BoolOp):
            parts = [self.value(v) for v in e.values]
            done = _combine(parts)
            if done is not None:
                return done
            truth = [bool(p) for p in parts]
            return int(all(truth) if e.op == "and" else any(truth))
        if isinstance(e, ir.UnaryOp):
            inner = self.value(e.operand)
            if not isinstance(inner, int):
                return inner
            if e.op == "not":
                return int(not inner)
            return _wrap(-inner if e.op == "-" else ~inner, e.ty)
        if isinstance(e, ir.Cast):
            inner = self.value(e.value)
            return _wrap(inner, e.ty) if isinstance(inner, int) else inner
        if isinstance(e, ir.Select):
            parts = [self.value(e.cond), self.value(e.then), self.value(e.orelse)]
            done = _combine(parts)
            if done is not None:
                return done
            return parts[1] if parts[0] else parts[2]
        if isinstance(e, ir.Call):  # arithmetic of its arguments (facts.inlined_call)
            inlined = inlined_call(e)
            return THREAD if inlined is None else self.value(inlined)
        if isinstance(e, ir.Load) and (e.array.ty.space == "shared" or (
                e.array.ty.space == "global" and not e.array.ty.mutable)):
            # One element for the whole block (`is_last[0]`): in one barrier interval every
            # thread reads the value no thread writes there (a store that could is refused as
            # a race by the read proofs), so the block shares it, unknown.
            index = _combine([self.value(i) for i in e.indices])
            return THREAD if index == THREAD else UNIFORM
        return THREAD  # memory, atomics, random draws, lane ids, uids

    # -- statements --

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            self.statement(s)

    def record(self, indices: tuple) -> None:
        """A watched access runs here: with the values of the variables it needs."""
        wanted = self.watch.get(id(indices))
        if wanted is None:
            return
        values = tuple(self.env.get(id(v), UNIFORM if v.is_param else THREAD) for v in wanted)
        self.seen.setdefault(id(indices), set()).add((self.interval, values))
        if self.maybe:
            self.uncounted.add(id(indices))

    def reads(self, s: ir.Stmt | ir.Expr) -> None:
        """The watched reads of the statement's own expressions (not of the statements in its
        bodies), or of one expression: they run in the interval the statement starts in."""
        found = self.loads.get(id(s))
        if found is None:
            parts = [s] if isinstance(s, ir.Expr) else [
                v for v in vars(s).values()
                if isinstance(v, ir.Expr) or (isinstance(v, tuple) and not any(
                    isinstance(x, ir.Stmt) for x in v))]
            found = self.loads[id(s)] = tuple(
                n.indices for n in ir.walk(parts)
                if isinstance(n, ir.Load) and id(n.indices) in self.watch)
        for indices in found:
            self.record(indices)

    def statement(self, s: ir.Stmt) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Abort(f"the block runs more than {_MAX_STEPS} statements", s.span)
        self.reads(s)
        if isinstance(s, ir.Assign):
            self.env[id(s.var)] = self.value(s.value)
        elif isinstance(s, ir.Store):
            self.record(s.indices)
        elif isinstance(s, ir.Barrier):
            if s.scope in ("block", "grid"):
                if self.level:
                    raise _Abort("a barrier under a condition that may differ between threads",
                                 s.span)
                self.interval += 1
        elif isinstance(s, ir.If):
            cond = self.value(s.cond)
            if isinstance(cond, int):
                self.block(s.then if cond else s.orelse)
            elif cond == UNIFORM and not self.level and _barrier_in((s.then, s.orelse)) is not None:
                self.alternatives((s.then, s.orelse))
            else:
                self.diverge((s.then, s.orelse))
        elif isinstance(s, ir.While):
            self.loop_while(s)
        elif isinstance(s, ir.ForRange):
            self.loop_range(s)
        elif isinstance(s, ir.GridStride):
            self.unknown_loop(s.body, s.var)
        elif isinstance(s, (ir.Break, ir.Continue, ir.Return)):
            kind = type(s).__name__.lower()
            if self.level and kind == "return":
                raise _Abort("a `return` under a condition that may differ between threads",
                             s.span)
            raise _Jump(kind, self.level)
        elif hasattr(s, "body") or hasattr(s, "then"):
            raise _Abort(f"a {type(s).__name__} statement", s.span)

    def alternatives(self, branches) -> None:
        """Branches the whole block takes alike, on a condition the trace does not know (``if
        is_last[0] == 1:`` after a barrier), with a barrier in one: each is followed from the
        values and the interval before it, the second's later intervals fresh ones (its first
        is the one before the ``if``, which both branches start in).  After them each variable
        keeps the value both agree on (else it is :data:`UNIFORM`: one value in the block), and
        the interval runs on from the last of either branch (:attr:`aliases`), as after a loop
        of unknown trip count."""
        for n in ir.walk(branches):
            if isinstance(n, (ir.Break, ir.Continue, ir.Return)):
                raise _Abort(f"a `{type(n).__name__.lower()}` in a branch with a barrier",
                             n.span)
        before, start = dict(self.env), self.interval
        exits: list[tuple[dict, int]] = []
        for k, branch in enumerate(branches):
            self.env = dict(before)
            if k:  # a fresh interval, the same as the one before the `if`
                self.interval = self._fresh()
                self.aliases[self.interval] = frozenset({start}) | self.aliases.get(
                    start, frozenset())
            self.block(branch)
            exits.append((self.env, self.interval))
        envs = [env for env, _ in exits]
        self.env = dict(before)
        for v in set().union(*envs):
            values = {env.get(v, THREAD) for env in envs}
            self.env[v] = values.pop() if len(values) == 1 else (
                THREAD if THREAD in values else UNIFORM)
        ends = {interval for _, interval in exits}
        self.interval = self._fresh()
        self.aliases[self.interval] = frozenset().union(
            *({e} | self.aliases.get(e, frozenset()) for e in ends))

    def _fresh(self) -> int:
        """An interval number no access was recorded in, nor aliased."""
        used = [self.interval, *self.aliases, *(i for s in self.aliases.values() for i in s)]
        used += [i for seen in self.seen.values() for i, _ in seen]
        return max(used) + 1

    def diverge(self, branches) -> None:
        """Branches some threads take and others do not: each runs from the values before, and
        a variable either assigns differs between threads after them."""
        before = dict(self.env)
        assigned: set[int] = set()
        self.level += 1
        try:
            for branch in branches:
                self.env = dict(before)
                self.block(branch)
                assigned |= _assigned(branch)
        finally:
            self.level -= 1
        self.env = before
        for v in assigned:
            self.env[v] = THREAD

    def loop_while(self, s: ir.While) -> None:
        if self.level:
            self.unknown_loop(s.body)
            return
        while True:
            cond = self.value(s.cond)
            if not isinstance(cond, int):
                bound = self.unknown_extents(s.cond, cond, s.span)
                if cond == UNIFORM and not bound:
                    self.loop_maybe(s)
                else:
                    self.unknown_loop(s.body, bound=bound)
                return
            if not cond:
                return
            if self.iteration(s.body):
                return
            self.reads(s.cond)  # tested again, in the interval the round ended in

    def loop_maybe(self, s: ir.While) -> None:
        """A ``while`` loop whose condition every thread of the block evaluates alike, but to a
        value the trace does not know (``while offset < n:``, ``n`` a parameter): the block
        runs some number of its rounds, the same in every thread.  Each round is followed, and
        the loop may end before any of them; once the variables the body assigns come back to
        values they had at the top of an earlier round (a scale that doubled until it wrapped
        to 0, a parity that alternates), that round is followed once more (it runs on from the
        round before it, with no barrier between: its first interval meets that round's last,
        a pair no earlier round showed), and the rounds after it repeat those before, pairs of
        intervals included.  After the loop
        each variable keeps the value every exit agrees on (else it is :data:`UNIFORM`), and
        the interval it runs in may be the last of any round (:attr:`aliases`)."""
        assigned = sorted(_assigned(s.body))
        seen: set[tuple] = set()
        exits: list[tuple[dict, int]] = []
        cond: object = UNIFORM
        for _ in range(_MAX_ROUNDS):
            if not isinstance(cond, int):
                exits.append((dict(self.env), self.interval))  # it may end here
            elif not cond:
                exits.append((dict(self.env), self.interval))
                break
            state = tuple(self.env.get(v) for v in assigned)
            repeated = state in seen
            seen.add(state)
            self.maybe += 1
            try:
                broke = self.iteration(s.body)
            finally:
                self.maybe -= 1
            if broke or repeated:
                exits.append((dict(self.env), self.interval))
                break
            cond = self.value(s.cond)
            self.reads(s.cond)
            if cond == THREAD:
                raise _Abort("a loop whose trip count may differ between threads", s.span)
        else:
            raise _Abort(f"a loop whose rounds the trace cannot count, whose variables take "
                         f"new values for more than {_MAX_ROUNDS} rounds", s.span, _UNKNOWN_HINT)
        envs = [env for env, _ in exits]
        for v in set().union(*envs):
            values = {env.get(v, THREAD) for env in envs}
            self.env[v] = values.pop() if len(values) == 1 else (
                THREAD if THREAD in values else UNIFORM)
        ends = {interval for _, interval in exits}
        if len(ends) > 1:
            self.interval += 1
            self.aliases[self.interval] = frozenset().union(
                *({e} | self.aliases.get(e, frozenset()) for e in ends))
        else:
            self.interval = ends.pop()

    def loop_range(self, s: ir.ForRange) -> None:
        start, stop, step = (self.value(e) for e in (s.start, s.stop, s.step))
        if self.level or not all(isinstance(v, int) for v in (start, stop, step)) or step == 0:
            uniform = UNIFORM if THREAD not in (start, stop, step) else THREAD
            self.unknown_loop(s.body, s.var, self.unknown_extents(
                (s.start, s.stop, s.step), uniform, s.span))
            return
        assert isinstance(start, int) and isinstance(stop, int) and isinstance(step, int)
        values = range(start, stop, step)
        for v in reversed(values) if s.reverse else values:
            self.env[id(s.var)] = v
            if self.iteration(s.body):
                break
            self.steps += 1
            if self.steps > _MAX_STEPS:
                raise _Abort(f"the block runs more than {_MAX_STEPS} statements", s.span)
        self.env[id(s.var)] = THREAD

    def iteration(self, body) -> bool:
        """One iteration of a uniform loop; True when it breaks out."""
        try:
            self.block(body)
        except _Jump as jump:
            if jump.kind == "return":
                raise
            if jump.level != self.level:
                raise _Abort(f"a `{jump.kind}` under a condition that may differ between "
                             "threads") from None
            return jump.kind == "break"
        return False

    def unknown_extents(self, bounds, value: object, span: SourceSpan) -> str:
        """Where a loop the whole block runs alike (``value`` uniform) is bounded by a block
        extent no assert fixes (``while s < block_dim.x:``): the hint to assert it."""
        if self.level or value != UNIFORM:
            return ""
        names = dict.fromkeys(f"block_dim.{'xyz'[n.axis]}" for n in ir.walk(bounds)
                              if isinstance(n, ir.Special) and n.name == "block_dim"
                              and (n.name, n.axis) not in self.launch)
        if not names:
            return ""
        asserts = " and ".join(f"{n} == 128" for n in names)
        return (f"the loop at line {span.line} is bounded by {' and '.join(names)}, which the "
                f"trace does not know: assert the block's size (`assert {asserts}` at the top "
                "of the kernel, with the size you launch; checked once per launch), and the "
                "trace follows every round; or use `with unsafe():` if you know the store is "
                "race-free")

    def unknown_loop(self, body, var: ir.Var | None = None, bound: str = "") -> None:
        """A loop whose trip count may differ between threads or is not known: its variables
        differ between threads; a barrier in it cannot be followed (``bound``: the hint that
        would make it known, where there is one)."""
        barrier = _barrier_in(body)
        if barrier is not None:
            raise _Abort("a barrier in a loop whose trip count the trace does not know",
                         barrier.span, bound)
        assigned = _assigned(body) | ({id(var)} if var is not None else set())
        if var is not None:
            self.thread_loops.add(id(var))
        for v in assigned:
            self.env[v] = THREAD
        self.level += 1
        try:
            self.block(body)
        except _Jump as jump:
            if jump.kind == "return":
                raise _Abort("a `return` in a loop the trace does not follow") from None
        finally:
            self.level -= 1
        for v in assigned:
            self.env[v] = THREAD


def _combine(parts: list[object]) -> object | None:
    if any(p == THREAD for p in parts):
        return THREAD
    if any(p == UNIFORM for p in parts):
        return UNIFORM
    return None


def _known(parts: list[object]) -> tuple[int, int]:
    """The two values :func:`_combine` left: both known integers."""
    a, b = parts
    assert isinstance(a, int) and isinstance(b, int), parts
    return a, b


def _barrier_in(body) -> ir.Barrier | None:
    """The first block or grid barrier in ``body``, or ``None``."""
    return next((n for n in ir.walk(body) if isinstance(n, ir.Barrier)
                 and n.scope in ("block", "grid")), None)


def _assigned(body) -> set[int]:
    return {id(n.var) for n in ir.walk(body) if isinstance(n, (ir.Assign, ir.ForRange,
                                                               ir.GridStride))}


# ---- keys with known values ---------------------------------------------------------------


def substitute_keys(x, values: dict[int, int]):
    """A key or fact with each :class:`~.facts.VarKey` whose variable ``values`` holds (by id)
    written as that constant, and the integer operations of constants folded."""
    if isinstance(x, VarKey):
        v = values.get(id(x.var))
        return x if v is None else ConstKey(v)
    if isinstance(x, tuple):
        return tuple(substitute_keys(i, values) for i in x)
    if not hasattr(type(x), "__node_fields__"):
        return x
    changes = {}
    for name in fields(x):
        old = getattr(x, name)
        if isinstance(old, (Key, tuple)) or hasattr(type(old), "__node_fields__"):
            new = substitute_keys(old, values)
            if new is not old:
                changes[name] = new
    out = replace(x, **changes) if changes else x
    if isinstance(out, OpKey):
        a, b = out.left.integer, out.right.integer
        if isinstance(out.left, ConstKey) and isinstance(out.right, ConstKey) and \
                a is not None and b is not None:
            r = _arith(out.op, a, b)
            if r is not None:
                return ConstKey(r)
        # x & 0 and x % 1 are 0, x // 1 is x: a mask of a stride of 1 keeps nothing.
        if (out.op == "&" and b == 0 and isinstance(out.right, ConstKey)) or (
                out.op == "%" and b == 1 and isinstance(out.right, ConstKey)):
            return ConstKey(0)
        if out.op == "//" and b == 1 and isinstance(out.right, ConstKey):
            return out.left
    return out


def _var_keys(x) -> Iterator[ir.Var]:
    if isinstance(x, VarKey):
        yield x.var
    elif isinstance(x, tuple):
        for i in x:
            yield from _var_keys(i)
    elif hasattr(type(x), "__node_fields__"):
        for name in fields(x):
            yield from _var_keys(getattr(x, name))


def scale_vars(keys, facts, is_uniform: Callable[[ir.Var], bool]) -> tuple[ir.Var, ...]:
    """The locals (not launch-uniform parameters) a store's index keys and facts read as
    variables assigned more than once: the values the trace must give it."""
    found: dict[int, ir.Var] = {}
    for var in _var_keys((tuple(keys), tuple(facts))):
        if not is_uniform(var):
            found.setdefault(id(var), var)
    return tuple(found.values())


# ---- the records and the proof ----------------------------------------------------------------


@node(frozen=False, eq=False)
class _Recorded:
    """A store into a shared array (or a read of one, in :attr:`ScaledStores.reads`): what its
    proof needs, and (``traced``) whether it waits for the trace (its form needs the values of
    ``needs``)."""

    array: ir.Var
    indices: tuple
    keys: tuple
    facts: tuple
    span: SourceSpan
    text: str
    exact: tuple  # per index: True, "ring" or False (see wrapping.index_is_exact)
    form: object = None  # its form where it needs no trace
    needs: tuple = ()
    traced: bool = False
    width: int = 1  # a read of this many elements along the last axis (``load_vec4``)
    position: Any = None  # a traced read's barrier position (.phases.Position)


class ScaledStores:
    """The stores of a kernel's shared arrays, for the proofs of the ones scaled by a traced
    variable (:meth:`defer`), made at the end by :meth:`check`."""

    def __init__(self) -> None:
        self.stores: list[_Recorded] = []
        # Where the trace could not run (the reason) and the reads that needed it, for
        # :meth:`.unique.UniqueWrites.check_scaled`.
        self.unproven: tuple[_Abort, list[_Recorded], int | None] | None = None
        self.reads: list[_Recorded] = []  # plain reads, proven against the stores at the end
        self.deferred: set[int] = set()  # ids of the index tuples of deferred stores
        self.other_writes: dict[int, SourceSpan] = {}
        self.uncounted: set[int] = set()  # Trace.uncounted, once the trace has run
        self.thread_loops: set[int] = set()  # Trace.thread_loops

    def note(self, array: ir.Var, indices, keys, facts, span: SourceSpan, text: str,
             exact: tuple, form: object, read_width: int = 0) -> _Recorded:
        """A store, or (``read_width`` elements along the last axis) a plain read."""
        rec = _Recorded(array, tuple(indices) if not isinstance(indices, tuple) else indices,
                        tuple(keys), tuple(facts), span, text, exact, form,
                        width=max(read_width, 1))
        (self.reads if read_width else self.stores).append(rec)
        return rec

    def defer(self, rec: _Recorded, needs: tuple[ir.Var, ...]) -> None:
        rec.traced, rec.needs = True, needs
        self.deferred.add(id(rec.indices))

    def is_deferred(self, indices) -> bool:
        return id(indices) in self.deferred

    def check(self, body: tuple[ir.Stmt, ...], forms: Forms,
              prove: Callable[[StoreForm, StoreForm], PairProof],
              add_check: Callable[[IndexFits], None]) -> None:
        """Prove every deferred store against every store of its array that runs in one barrier
        interval with it (see the module docstring); a TranspileError for the first that fails."""
        traced = [r for r in self.stores if r.traced]
        arrays = {id(r.array) for r in traced}
        # The reads proven here: those that need the trace, and any of an array that a traced
        # store writes (the others are :meth:`.unique.UniqueWrites.check_shared_reads`').
        reads = [r for r in self.reads if r.traced or id(r.array) in arrays]
        if not traced and not reads:
            return
        for n in ir.walk(body) if traced else ():
            array = getattr(n, "array", None)
            if isinstance(array, ir.ArrayRef) and id(array.var) in arrays and not isinstance(
                    n, (ir.Store, ir.Load)) and not (isinstance(n, ir.Atomic) and n.op == "load"):
                raise TranspileError(
                    f"store into '{array.var.name}' scaled by a loop variable: the array is "
                    f"also written by {type(n).__name__.lower()} here, which the proof of "
                    "those stores does not model", traced[0].span,
                    "write the array through plain stores only, or use `with unsafe():`; " +
                    _WHILE_HINT)
        read_arrays = {id(r.array) for r in reads}
        ours = [r for r in self.stores if id(r.array) in arrays]
        written = [r for r in self.stores if id(r.array) in arrays | read_arrays]
        watch = {id(r.indices): r.needs for r in written + reads}
        launch = _launch_values(body)
        trace = Trace(watch, launch)
        trace.run(body)
        self.uncounted = trace.uncounted
        self.thread_loops = trace.thread_loops
        if trace.aborted is not None and not traced:
            # Reads only.  Those of the statements the trace followed to their end (before the
            # one it gave up in, from line `cut` on) are proven against the stores there with
            # the values it saw; the caller proves every read apart from the other stores by
            # the barriers between them (:meth:`.unique.UniqueWrites.check_scaled`), or
            # refuses it.
            cut = body[trace.done].span.line if trace.done < len(body) else None

            def followed(rec: _Recorded) -> bool:
                return cut is not None and rec.span.line < cut

            self._check_reads([r for r in reads if r.traced and followed(r)],
                              [b for b in written if followed(b)], trace, forms, prove,
                              add_check, launch, {})
            self.unproven = (trace.aborted, [r for r in reads if r.traced], cut)
            return
        if trace.aborted is not None:
            where = f" (line {trace.aborted.span.line})" if trace.aborted.span else ""
            rec = traced[0]
            raise TranspileError(
                f"store into '{rec.array.name}' through an index scaled by "
                f"{_names(rec.needs)}, which is not one affine function of the thread: the "
                f"values it takes in each barrier interval are not known, because of "
                f"{trace.aborted.reason}{where}", rec.span, trace.aborted.hint or _HINT)
        pairs = 0
        cache: dict[tuple, StoreForm | str] = {}
        for a in traced:
            for b in ours:
                if b.traced and ours.index(b) < ours.index(a):
                    continue  # that pair was proven from b's side
                for va, vb in _meetings(trace.seen.get(id(a.indices), set()),
                                        trace.seen.get(id(b.indices), set()), trace.aliases):
                    pairs += 1
                    if pairs > _MAX_PAIRS:
                        raise TranspileError(
                            f"store into '{a.array.name}': too many cases ({_MAX_PAIRS}) to "
                            "prove it apart from the array's other stores", a.span, _HINT)
                    fa = self.form(a, va, forms, cache, add_check, launch)
                    fb = self.form(b, vb, forms, cache, add_check, launch)
                    outcome = prove(fa, fb)
                    if not outcome.ok:
                        values = ", ".join(f"{v.name} = {x}" for v, x in zip(a.needs, va))
                        theirs = ", ".join(f"{v.name} = {x}" for v, x in zip(b.needs, vb)
                                           if isinstance(x, int))
                        if theirs and (vb != va or b.needs != a.needs):
                            values += f" in one thread and {theirs} in the other,"
                        other = "itself in another thread" if a is b else \
                            f"the store at line {b.span.line}"
                        hint = outcome.hint or _HINT
                        if id(a.indices) in self.uncounted or id(b.indices) in self.uncounted:
                            # The values came from a round the block may or may not run.
                            hint = f"{_UNKNOWN_HINT}; else {hint}"
                        raise TranspileError(
                            f"store into '{a.array.name}' may meet {other} in one barrier "
                            f"interval: with {values} {outcome.text}", a.span, hint)
        self._check_reads(reads, written, trace, forms, prove, add_check, launch, cache)

    def _check_reads(self, reads: list[_Recorded], written: list[_Recorded], trace: Trace,
                     forms: Forms, prove: Callable[[StoreForm, StoreForm], PairProof],
                     add_check: Callable[[IndexFits], None], launch: dict, cache: dict
                     ) -> None:
        """Each read against each store of its array that runs in one barrier interval with
        it, where either needs the trace: proven apart (for two threads) with the values each
        has there, as a pair of stores is, or refused (the missing ``sync_threads()`` of a
        reduction that halves ``s`` with no barrier in its loop).  A read whose form the values
        do not make affine, and the reads past :data:`_MAX_READ_PAIRS` proofs, are left to the
        simulator's race detector."""
        def ignore(_: IndexFits) -> None:
            return None  # a read's index need not be shown exact for the proof: none is added

        pairs = 0
        for r in reads:
            for b in written:
                if b.array is not r.array or not (r.traced or b.traced):
                    continue
                for va, vb in _meetings(trace.seen.get(id(r.indices), set()),
                                        trace.seen.get(id(b.indices), set()), trace.aliases):
                    pairs += 1
                    if pairs > _MAX_READ_PAIRS:
                        return  # a long kernel's reads: the simulator's race detector checks
                    try:
                        fr = self.form(r, va, forms, cache, ignore, launch)
                        fb = self.form(b, vb, forms, cache, add_check, launch)
                    except TranspileError:
                        break
                    outcome = prove(fr, fb)
                    if outcome.ok:
                        continue
                    mine = ", ".join(f"{v.name} = {x}" for v, x in zip(r.needs, va)
                                     if isinstance(x, int))
                    theirs = ", ".join(f"{v.name} = {x}" for v, x in zip(b.needs, vb)
                                       if isinstance(x, int))
                    values = " and ".join(
                        t for t in (mine and f"{mine} at the read",
                                    theirs and f"{theirs} at the store") if t)
                    raise TranspileError(
                        f"'{r.array.name}' is read here, and the store at line {b.span.line} "
                        f"may write the same element from another thread of the block in "
                        f"the same barrier interval{f' (with {values})' if values else ''}: "
                        f"{outcome.text}", r.span, READ_RACE_HINT)

    def form(self, rec: _Recorded, values: tuple, forms: Forms, cache: dict,
             add_check: Callable[[IndexFits], None], launch: dict) -> StoreForm:
        if not rec.traced:
            if not isinstance(rec.form, StoreForm):
                raise TranspileError(
                    f"store into '{rec.array.name}' cannot be shown apart from the stores "
                    f"scaled by a loop variable: its index {rec.form}", rec.span, _HINT)
            return self._with_values(rec, values, forms, cache, launch)
        got = cache.get((id(rec), values))
        if got is not None:
            assert isinstance(got, StoreForm)
            return got
        known = {}
        unknown = set()  # the same in every thread, but not known: conditions reading it drop
        in_index = {id(v) for v in _var_keys(rec.keys)}
        for var, v in zip(rec.needs, values):
            if v == UNIFORM and id(var) not in in_index:
                unknown.add(id(var))
                continue
            if v == UNIFORM:
                raise TranspileError(
                    f"store into '{rec.array.name}' through an index that reads '{var.name}', "
                    "whose value the block's threads share but the checker does not know in "
                    "each round (it comes from a parameter or from memory), so nothing shows "
                    "which thread writes which element", rec.span, _UNKNOWN_HINT)
            if not isinstance(v, int) and id(var) in self.thread_loops:
                raise TranspileError(
                    f"store into '{rec.array.name}' through an index that reads '{var.name}', "
                    "the counter of a loop whose values differ between the threads of the block "
                    "(a block-stride loop), beside a value the block's rounds change: such a "
                    "store is proven from the values the block's threads share in each round "
                    "and from thread_idx itself, not from a counter that differs between "
                    "threads", rec.span,
                    "give each thread its element of the round from its index (`pos = "
                    "thread_idx.x`, with `assert block_dim.x == N // 2` for N // 2 butterflies "
                    "a round), or use `with unsafe():` if you know the store is race-free")
            if not isinstance(v, int):
                raise TranspileError(
                    f"store into '{rec.array.name}' through an index that reads '{var.name}', "
                    "which may differ between the threads of the block (it is assigned under a "
                    "condition, in a loop whose trip count is not known, or from a thread's "
                    "own values), so nothing shows which thread writes which element",
                    rec.span, f"{_WHILE_HINT}; else {_HINT}")
            known[id(var)] = v
        keys = substitute_keys(rec.keys, known)
        # A condition that reads a value not known here says nothing the proof can use: it is
        # left out, which only takes knowledge away.
        kept = tuple(f for f in rec.facts if not {id(v) for v in _var_keys(f)} & unknown)
        facts = _with_exact(substitute_keys(kept, known), launch)
        form = forms.store(keys, facts, "shared", rec.span.line, rec.text)
        if isinstance(form, str):
            what = ", ".join(f"{v.name} = {x}" for v, x in zip(rec.needs, values))
            raise TranspileError(f"store into '{rec.array.name}' with {what}: its index {form}",
                                 rec.span, _HINT)
        shown = []  # each index exact with these values (StoreForm.exact)
        for position, exact in enumerate(rec.exact):
            shown.append(exact is True or fits_in_i32(keys[position], launch))
            if shown[-1]:
                # With the values the block's variables take here, no step of the index wraps
                # (a padded index's split needs its operand exact: ``bi + (bi >> 5)``).
                continue
            tree = largest_difference(digit_terms(form.dims[position], form.ranges)) \
                if exact == "ring" else None
            idx = rec.indices[position]
            check = fits_check(tree, idx.ty, rec.span) if tree is not None else None
            if tree is None or (check is not None and _constant(tree)):
                hint = "compute the index in i64, or keep the scale small enough"
                if id(rec.indices) in self.uncounted:
                    # Its scale took every value the loop's rounds could give it.
                    hint = f"{hint}: {_UNKNOWN_HINT}"
                raise TranspileError(wrap_message(rec.array.name, idx.ty), idx.span, hint)
            if check is not None:
                add_check(check)
        form.exact = tuple(shown)
        if rec.width > 1:
            form = read_footprint(form, rec.width, rec.span)
        cache[(id(rec), values)] = form
        return form

    @staticmethod
    def _with_values(rec: _Recorded, values: tuple, forms: Forms, cache: dict,
                     launch: dict) -> StoreForm:
        """The form of a store (or read) checked by the ordinary rules, with the facts around it
        that read traced variables (``needs``) written with the values they take where it runs
        (``if (t ^ j) > t:`` with ``j == 4``): its index is the same, the conditions say
        more."""
        assert isinstance(rec.form, StoreForm)
        if not any(isinstance(v, int) for v in values):
            return rec.form  # it holds for every value of the variables
        got = cache.get((id(rec), values))
        if got is None:
            known = {id(var): v for var, v in zip(rec.needs, values) if isinstance(v, int)}
            # A condition that reads a variable with no known value here (``j``, loaded from
            # memory, beside ``stride``) is left out: that only takes knowledge away.
            unknown = {id(var) for var, v in zip(rec.needs, values) if not isinstance(v, int)}
            kept = tuple(f for f in rec.facts if not {id(v) for v in _var_keys(f)} & unknown)
            made = forms.store(rec.keys, _with_exact(substitute_keys(kept, known), launch),
                               "shared", rec.span.line, rec.text)
            # (The same index, or the loops it reads have ended: the form made at the store.)
            got = rec.form
            if isinstance(made, StoreForm) and made.dims == rec.form.dims:
                made.spans, made.exact, made.exact_checks = (rec.form.spans, rec.form.exact,
                                                             rec.form.exact_checks)
                got = made
            cache[(id(rec), values)] = got
        assert isinstance(got, StoreForm)
        return got


READ_RACE_HINT = ("put a sync_threads() between the store and the read (where every thread of "
                  "the block reaches it), read the thread's own element, or use `with "
                  "unsafe():`")
# A block-stride while loop whose counter the index rules do not follow (stepped before the
# body's end) reaches the loop-variable proofs, which need a uniform scale; stepped last, or as
# a range() loop, the index rules prove it (.counted).
_WHILE_HINT = ("if the index is stepped by a while loop, end its body with the step (b = "
               "thread_idx.x; while b < N: ...; b += block_dim.x, assigning b nowhere else), "
               "or write the loop as `for b in range(thread_idx.x, N, block_dim.x):`: the index "
               "rules prove the stores of both")
_UNKNOWN_HINT = ("bound the loop by constants, so that each round's values are known (`d = N >> "
                 "1; while d > 0:` with N a module constant, the data padded to N, `if i < n` "
                 "around its loads), or use `with unsafe():` if you know the store is race-free")
_HINT = ("a scale must be the same in every thread of the block (assigned outside any "
         "thread-dependent condition, from constants and launch values) and never 0 where the "
         "store runs; separate the stores with sync_threads(), or use `with unsafe():` if you "
         "know the store is race-free")


def read_footprint(form: StoreForm, width: int, span: SourceSpan) -> StoreForm:
    """``form`` of a read of ``width`` elements along the last axis (``load_vec4``), widened
    to all of them: its last index plus a counter in ``[0, width)`` (changed in place)."""
    footprint = Digit(f"loop:read footprint@{span.line}:{span.col}")
    form.dims = form.dims[:-1] + (form.dims[-1].plus(Affine.of((footprint,))),)
    form.ranges[footprint] = Affine(width)
    return form


def _with_exact(facts: tuple, launch: dict) -> tuple:
    """``facts`` (written with the values the block's variables take) and an
    :class:`~.facts.Exact` for each side of a comparison that no step of which can wrap with
    those values (:func:`.wrapping.fits_in_i32`: ``t ^ 4`` of ``t ^ j``, whose ``j = (1 << p) >>
    q`` the checker could not show exact for every ``p``)."""
    facts = tuple(_at_most(f) for f in facts)
    extra = [Exact(side) for f in facts if isinstance(f, Less) for side in (f.left, f.right)
             if fits_in_i32(side, launch)]
    return tuple(facts) + tuple(extra)


def _at_most(f):
    """An :class:`~.facts.AtMost` with a constant side, as the :class:`~.facts.Less` the
    proofs read (``offset <= t`` with ``offset == 2``: ``1 < t``); any other fact as it is."""
    if isinstance(f, AtMost):
        if isinstance(f.left, ConstKey) and f.left.integer is not None:
            return Less(ConstKey(f.left.integer - 1), f.right)
        if isinstance(f.right, ConstKey) and f.right.integer is not None:
            return Less(f.left, ConstKey(f.right.integer + 1))
    return f


def _names(variables) -> str:
    return " and ".join(f"'{v.name}'" for v in variables) or "a local"


def _constant(tree: LaunchExpr) -> bool:
    """Does ``tree`` (a :func:`.wrapping.largest_difference`) read no launch index?"""
    return not any(isinstance(t, LaunchIndex) for t in subtrees(tree))


def _meetings(sa: set, sb: set, aliases: dict | None = None) -> Iterator[tuple[tuple, tuple]]:
    """The pairs of values two stores run with in one barrier interval, in a fixed order; an
    interval meets those ``aliases`` says it may be (:meth:`Trace.loop_maybe`)."""
    aliases = aliases or {}
    by_interval: dict[int, list[tuple]] = {}
    for interval, values in sb:
        by_interval.setdefault(interval, []).append(values)
        for other in aliases.get(interval, ()):
            by_interval.setdefault(other, []).append(values)
    done = set()
    for interval, va in sorted(sa, key=repr):
        near = {interval} | aliases.get(interval, frozenset())
        for vb in sorted({v for i in near for v in by_interval.get(i, ())}, key=repr):
            if (va, vb) not in done:
                done.add((va, vb))
                yield va, vb


def _launch_values(body) -> dict:
    """``assert block_dim.x == 256`` (checked by the launcher): the launch extents it fixes."""
    out: dict = {}
    for s in body:
        if isinstance(s, ir.Assert) and isinstance(s.cond, ir.Compare) and s.cond.op == "==":
            for a, b in ((s.cond.left, s.cond.right), (s.cond.right, s.cond.left)):
                if isinstance(a, ir.Special) and a.name in ("block_dim", "grid_dim") and \
                        isinstance(b, ir.Const) and isinstance(b.value, int):
                    out[(a.name, a.axis)] = b.value
    return out
