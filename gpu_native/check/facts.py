"""The facts the bounds and unique-write proofs reason with, and the keys that name values.

* **Keys** name a value structurally (:func:`key`), so that two computations of it match: the
  ``i`` of ``if i < n:`` and the ``i`` of ``a[i]``; widening integer casts are looked through,
  and a local assigned once stands for its value.  A key that reads memory (:class:`LoadKey`) or
  that nothing can match (:class:`OpaqueKey`) names a value that may change between two reads.
* **Facts** are what dominating conditions and bounds checks prove: :class:`Less` for ``i < n``,
  :class:`NonNegative` for ``i >= 0``, :class:`NotEqual` for ``i != j``, and :class:`Pinned` when
  a condition such as ``thread_idx.x == 0`` leaves one thread along a thread coordinate;
  :class:`Unread` marks a condition that differs between threads and that the other facts do
  not capture (``if x[i] > 0.0:``), so that an example of a race can say it did not check it.  An
  assignment to a local assigned more than once gives its value's interval and
  :class:`MultipleOf` (see :meth:`gpu_native.check.bounds.BoundsProofs.assign`).  A check
  that passed is a fact for the rest of the thread, since a failing one ends it.  Bounds checks
  are dropped where facts prove the index in range, e.g. ``a[i + 1]`` after ``a[i]`` where
  ``i != len(a) - 1``, and ``a[i - 1]`` where ``i != 0``.  A set of facts is a plain
  ``frozenset``; the queries below ask each fact what it shows.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import HARDWARE
from ..nodes import fields, node, replace

if TYPE_CHECKING:
    from .classify import Unique

__all__ = [
    "AtMost", "CastKey", "ConstKey", "Equal", "Fact", "Key", "LaneKey", "Less", "LoadKey", "MathKey",
    "MultipleOf", "NonNegative", "NotEqual", "OpKey", "OpaqueKey", "Pinned", "PinnedBy",
    "ResidueKey", "ShapeKey", "SpecialKey", "UidKey", "UnaryKey", "Unread", "VarKey", "cond_facts",
    "inlined_call", "join", "key", "kill", "one_thread", "pinned", "returned_expression",
    "shows_at_least", "shows_below", "shows_within", "split_offset", "stable", "upper_bound",
]


# ---- keys ------------------------------------------------------------------------------------


@node
class Key:
    """A value, named so that two computations of it compare equal (see :func:`key`)."""

    def parts(self) -> tuple[Key, ...]:
        """The keys this one is made of."""
        return ()

    def variables(self) -> Iterator[ir.Var]:
        """The local variables and parameters the value depends on."""
        for part in self.parts():
            yield from part.variables()

    def reads_memory(self) -> bool:
        """Whether the value may differ between two evaluations that no assignment separates (a
        value loaded from memory, which another thread may change, or an unmatched one)."""
        return any(part.reads_memory() for part in self.parts())

    @property
    def integer(self) -> int | None:
        """The value of an integer constant (``bool`` included); ``None`` for anything else."""
        return None


@node
class ConstKey(Key):
    """A literal."""

    value: int | float | bool

    @property
    def integer(self) -> int | None:
        return self.value if isinstance(self.value, int) else None


@node
class VarKey(Key):
    """A local or parameter that is not a single assignment's value."""

    var: ir.Var

    def variables(self) -> Iterator[ir.Var]:
        yield self.var


@node
class ShapeKey(Key):
    """``a.shape[axis]`` (``len(a)`` for axis 0) of an array whose shape comes with the launch."""

    array: ir.Var
    axis: int


@node
class OpKey(Key):
    """A binary operation."""

    op: str
    left: Key
    right: Key

    def parts(self) -> tuple[Key, ...]:
        return (self.left, self.right)


@node
class UnaryKey(Key):
    """A unary operation."""

    op: str
    operand: Key

    def parts(self) -> tuple[Key, ...]:
        return (self.operand,)


@node
class CastKey(Key):
    """A cast that may change the value (narrowing, or to or from a float); ``type`` names the
    target type."""

    type: str
    value: Key

    def parts(self) -> tuple[Key, ...]:
        return (self.value,)


@node
class UidKey(Key):
    """A component of this thread's unique id."""

    scope: str
    axis: int


@node
class SpecialKey(Key):
    """``thread_idx``, ``block_idx``, ``block_dim`` or ``grid_dim`` along ``axis``."""

    name: str
    axis: int


@node
class LaneKey(Key):
    """``lane_id()``."""


@node
class LoadKey(Key):
    """``array[indices]``: memory, never a stable value."""

    array: ir.Var
    indices: tuple[Key, ...]

    def parts(self) -> tuple[Key, ...]:
        return self.indices

    def reads_memory(self) -> bool:
        return True


@node
class MathKey(Key):
    """A math-library call."""

    name: str
    args: tuple[Key, ...]

    def parts(self) -> tuple[Key, ...]:
        return self.args


@node
class ResidueKey(Key):
    """The elements ``q * modulus + digit`` for every ``q``: an owner index that a thread owns by
    the residue of its digit (:meth:`.classify.IndexClasses.owner_key`), never a value."""

    modulus: int
    digit: Key

    def parts(self) -> tuple[Key, ...]:
        return (self.digit,)


@node
class OpaqueKey(Key):
    """Any other expression, matched by identity only (``node`` is its ``id``)."""

    node: int

    def reads_memory(self) -> bool:
        return True


def key(e: ir.Expr, resolve: Callable[[ir.Var], ir.Expr | None] | None = None) -> Key:
    """The key of ``e`` (widening integer casts stripped).

    ``resolve`` maps a local assigned exactly once to its defining expression, so that
    ``n = a.shape[1]; ... i < n`` proves ``a[_, i]`` in range.
    """
    if isinstance(e, ir.Cast):
        src, dst = e.value.ty, e.ty
        if (isinstance(src, ir.ScalarType) and isinstance(dst, ir.ScalarType)
                and src.info.is_int and dst.info.is_int and dst.info.bits >= src.info.bits):
            return key(e.value, resolve)
        return CastKey(str(e.ty), key(e.value, resolve))
    if isinstance(e, ir.Local):
        if resolve is not None:
            d = resolve(e.var)
            if d is not None:
                return key(d, resolve)
        return VarKey(e.var)
    if isinstance(e, ir.Const):
        return ConstKey(e.value)
    if isinstance(e, ir.Shape):
        return ShapeKey(e.array.var, e.axis)
    if isinstance(e, ir.BinOp):
        left, right = key(e.left, resolve), key(e.right, resolve)
        folded = _folded(e, left, right)
        return folded if folded is not None else OpKey(e.op, left, right)
    if isinstance(e, ir.UnaryOp):
        return UnaryKey(e.op, key(e.operand, resolve))
    if isinstance(e, ir.UidComponent):
        return UidKey(e.scope, e.axis)
    if isinstance(e, ir.Special):
        return SpecialKey(e.name, e.axis)
    if isinstance(e, ir.LaneId):
        return LaneKey()
    if isinstance(e, ir.Load):
        return LoadKey(e.array.var, tuple(key(i, resolve) for i in e.indices))
    if isinstance(e, ir.MathCall):
        return MathKey(e.name, tuple(key(a, resolve) for a in e.args))
    if isinstance(e, ir.Call):
        # A device function that only returns an expression of its parameters
        # (`def offset(n): return n >> 5`) is that expression of the arguments, as inlined.
        inlined = inlined_call(e)
        if inlined is not None:
            return key(inlined, resolve)
    if isinstance(e, ir.TupleItem):
        # `t = a.shape; t[0]`: an item of a tuple built in sight is that item's value.
        value = e.value
        if isinstance(value, ir.Local) and resolve is not None:
            value = resolve(value.var) or value
        if isinstance(value, ir.MakeTuple):
            return key(value.items[e.index], resolve)
    return OpaqueKey(id(e))


_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
    "%": operator.mod, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    ">>": operator.rshift, "<<": operator.lshift,
}


def _folded(e: ir.BinOp, left: Key, right: Key) -> ConstKey | None:
    """The value of integer arithmetic on two constants (``n // 2`` where a local ``n = N``
    holds a module constant), as the operation computes it (``//`` and ``%`` floor, as
    Python's): None where it is not that, divides by zero, or leaves the type (and wraps)."""
    if not (isinstance(left, ConstKey) and isinstance(right, ConstKey)
            and isinstance(e.ty, ir.ScalarType) and e.ty.info.is_int and e.op in _INT_OPS):
        return None
    a, b = left.value, right.value
    if type(a) is not int or type(b) is not int:
        return None
    if (e.op in ("//", "%") and b == 0) or (e.op in (">>", "<<") and not 0 <= b < e.ty.info.bits):
        return None
    value = _INT_OPS[e.op](a, b)
    return ConstKey(value) if e.ty.info.min <= value <= e.ty.info.max else None


def returned_expression(fn: ir.DeviceFunction) -> ir.Expr | None:
    """What ``fn`` returns when its body is that one ``return`` of arithmetic over its scalar
    parameters, constants and the thread's coordinates (``return n + (n >> 5)``).

    Nothing else is looked through: the keys of the body's other nodes (an opaque value, a
    load from an array parameter) would be the same for every call, though each call's value
    is its own."""
    if len(fn.body) != 1 or not isinstance(fn.body[0], ir.Return) or fn.local_arrays:
        return None
    value = fn.body[0].value
    if value is None or not isinstance(value.ty, ir.ScalarType):
        return None
    params = {id(p) for p in fn.params}
    return value if _arithmetic_of(value, params) else None


def inlined_call(e: ir.Call) -> ir.Expr | None:
    """The value of the call ``e`` as the expression its function returns, with the arguments
    in place of the parameters (new nodes), where :func:`returned_expression` gives one: what
    every proof that looks at an index's arithmetic sees, as if the call were written out."""
    returned = returned_expression(e.function)
    if returned is None:
        return None
    return _substituted(returned, {id(p): a for p, a in zip(e.function.params, e.args)})


def _substituted(e: ir.Expr, args: dict[int, ir.Expr]) -> ir.Expr:
    if isinstance(e, ir.Local) and id(e.var) in args:
        return args[id(e.var)]
    changes: dict[str, object] = {}
    for name in fields(e):
        old = getattr(e, name)
        if isinstance(old, ir.Expr):
            changes[name] = _substituted(old, args)
        elif isinstance(old, tuple) and any(isinstance(x, ir.Expr) for x in old):
            changes[name] = tuple(_substituted(x, args) if isinstance(x, ir.Expr) else x
                                  for x in old)
    return replace(e, **changes) if changes else e


def _arithmetic_of(e: ir.Expr, params: set[int]) -> bool:
    if isinstance(e, ir.Local):
        return id(e.var) in params and isinstance(e.ty, ir.ScalarType)
    if isinstance(e, (ir.Const, ir.Special, ir.LaneId, ir.UidComponent)):
        return True
    if isinstance(e, ir.BinOp):
        return _arithmetic_of(e.left, params) and _arithmetic_of(e.right, params)
    if isinstance(e, (ir.UnaryOp, ir.Cast)):
        inner = e.operand if isinstance(e, ir.UnaryOp) else e.value
        return _arithmetic_of(inner, params)
    if isinstance(e, ir.MathCall):
        return all(_arithmetic_of(a, params) for a in e.args)
    if isinstance(e, ir.Call):  # another such function, of such values
        return returned_expression(e.function) is not None and all(_arithmetic_of(a, params)
                                                          for a in e.args)
    return False


# ---- facts -----------------------------------------------------------------------------------


@node
class Fact:
    """Something true of the values where it is known (see the module docstring)."""

    def keys(self) -> tuple[Key, ...]:
        """The values the fact is about."""
        return ()

    def variables(self) -> set[ir.Var]:
        """The variables it depends on: an assignment to one of them ends it."""
        return {var for k in self.keys() for var in k.variables()}

    def is_stable(self) -> bool:
        """Whether it holds until one of its variables is assigned (not so for a fact about
        a value read from memory)."""
        return not any(k.reads_memory() for k in self.keys())


@node
class Less(Fact):
    """``left < right``."""

    left: Key
    right: Key

    def keys(self) -> tuple[Key, ...]:
        return (self.left, self.right)

    def shows_below(self, value: Key, bound: Key, static: bool) -> bool:
        """Does this fact show ``value < bound``?  With ``static`` (``bound`` is a constant),
        ``value`` below a smaller constant does too."""
        if self.left != value:
            return False
        if self.right == bound:
            return True
        limit = self.right.integer
        if not static or limit is None:
            return False
        assert bound.integer is not None  # a static bound is an integer constant
        return limit <= bound.integer

    def shows_within(self, value: Key, bound: int) -> bool:
        """Does this fact show ``value < c`` for a constant ``c <= bound``?"""
        limit = self.right.integer
        return self.left == value and limit is not None and limit <= bound

    def upper_bound(self, value: Key) -> int | None:
        """The largest ``value`` this fact allows, or ``None`` (not about ``value``, or not
        below a constant or an extent)."""
        if self.left != value:
            return None
        limit = self.right.integer
        if limit is not None:
            return limit - 1
        if isinstance(self.right, ShapeKey):
            return HARDWARE.extent - 1
        right = self.right
        if isinstance(right, OpKey) and right.op == "//" and isinstance(right.left, ShapeKey):
            # `kt < a.shape[1] // BK`: below the largest extent's share.
            c = right.right.integer
            if c is not None and c > 0:
                return HARDWARE.extent // c - 1
        return None

    def shows_at_least(self, value: Key, m: int) -> bool:
        """Does this fact show ``value >= m`` (``c < value`` with ``c >= m - 1``)?"""
        low = self.left.integer
        return self.right == value and low is not None and low >= m - 1


@node
class NonNegative(Fact):
    """``value >= 0``."""

    value: Key

    def keys(self) -> tuple[Key, ...]:
        return (self.value,)


@node
class Exact(Fact):
    """``value``'s arithmetic does not wrap: its machine value is its mathematical one (a side
    of a comparison that :func:`.wrapping.index_is_exact` proves; the ownership proofs, which
    reason about mathematical values, use a comparison's bound only with this)."""

    value: Key

    def keys(self) -> tuple[Key, ...]:
        return (self.value,)


@node
class MultipleOf(Fact):
    """``value`` is a multiple of ``k`` (a local assigned ``(c ^ s) * 8``: the alignment proofs
    of ``ldmatrix`` and ``cp_async`` read it where the value's form is out of sight)."""

    value: Key
    k: int

    def keys(self) -> tuple[Key, ...]:
        return (self.value,)


@node
class NotEqual(Fact):
    """``left != right``."""

    left: Key
    right: Key

    def keys(self) -> tuple[Key, ...]:
        return (self.left, self.right)


@node
class AtMost(Fact):
    """``left <= right`` of two values that are not constants (``if t >= offset:``): read only
    where the values of the block's rounds are known (:mod:`.strides`), which makes it a
    :class:`Less` once one side is a constant."""

    left: Key
    right: Key

    def keys(self) -> tuple[Key, ...]:
        return (self.left, self.right)


@node
class Equal(Fact):
    """``left == right`` (read by the ownership proofs: ``lane == 0`` leaves one thread of each
    warp, ``block_dim.x == 256`` fixes the block size)."""

    left: Key
    right: Key

    def keys(self) -> tuple[Key, ...]:
        return (self.left, self.right)


@node
class Pinned(Fact):
    """Only one thread runs here along the thread coordinate ``coord`` (``"tid0"``, ...)."""

    coord: str


@node
class PinnedBy(Fact):
    """Which one: ``coord`` is pinned by ``thread == value``, ``thread`` a value that tells the
    threads apart along it and ``value`` the same in every thread for the whole kernel, so two
    stores pinned by one such equality along every coordinate are one thread's
    (:func:`one_thread`).  Like :class:`Pinned`, no assignment ends it: neither side is
    assigned again."""

    coord: str
    thread: Key
    value: Key


def one_thread(a: Iterable[Fact], b: Iterable[Fact], required: frozenset[str]) -> bool:
    """Do the facts at two places leave both to the same single thread: along each of the
    ``required`` coordinates, one equality that pins both?"""
    shared = {f for f in a if isinstance(f, PinnedBy)} & {f for f in b if isinstance(f, PinnedBy)}
    return bool(required) and required <= {f.coord for f in shared}


@node
class Unread(Fact):
    """A condition on ``line`` that may differ between threads holds here, and the facts
    above do not say all of it (a comparison of a value read from memory, a flag, an ``or``):
    only the examples of :mod:`.witness` read it, to say that they did not check it."""

    line: int


def shows_below(facts: Iterable[Fact], value: Key, bound: Key, static: bool) -> bool:
    """Does one of ``facts`` show ``value < bound`` (see :meth:`Less.shows_below`)?"""
    return any(isinstance(f, Less) and f.shows_below(value, bound, static) for f in facts)


def shows_within(facts: Iterable[Fact], value: Key, bound: int) -> bool:
    """Does one of ``facts`` show ``value`` below a constant ``<= bound``?"""
    return any(isinstance(f, Less) and f.shows_within(value, bound) for f in facts)


def shows_at_least(facts: Iterable[Fact], value: Key, m: int) -> bool:
    """Does one of ``facts`` show ``value >= m``?"""
    return any(isinstance(f, Less) and f.shows_at_least(value, m) for f in facts)


def upper_bound(facts: Iterable[Fact], value: Key) -> int | None:
    """The smallest upper bound of ``value`` the facts give, or ``None``."""
    best = None
    for f in facts:
        if isinstance(f, Less):
            bound = f.upper_bound(value)
            if bound is not None:
                best = bound if best is None else min(best, bound)
    return best


def lower_bound(facts: Iterable[Fact], value: Key) -> int | None:
    """The largest lower bound of ``value`` the facts give (``c < value``: ``c + 1``), or
    ``None``."""
    best = None
    for f in facts:
        if isinstance(f, Less) and f.right == value and f.left.integer is not None:
            bound = f.left.integer + 1
            best = bound if best is None else max(best, bound)
    return best


def pinned(facts: Iterable[Fact]) -> frozenset[str]:
    """The thread coordinates along which only one thread runs here."""
    return frozenset(f.coord for f in facts if isinstance(f, Pinned))


def stable(facts: Iterable[Fact]) -> set[Fact]:
    """The facts that stay true while nothing is reassigned (see :meth:`Fact.is_stable`)."""
    return {f for f in facts if f.is_stable()}


def join(a: frozenset, b: frozenset) -> frozenset:
    """The facts that hold after two branches that held ``a`` and ``b``: those of both, and
    ``x < max(c, d)`` where one showed ``x < c`` and the other ``x < d`` (``c = t & 7`` in one,
    ``c = t & 15`` in the other), and ``MultipleOf(x, gcd)`` likewise."""
    out = set(a & b)
    less_b: dict[Key, int] = {}
    multiple_b: dict[Key, int] = {}
    for f in b - a:
        if isinstance(f, Less) and f.right.integer is not None:
            less_b[f.left] = min(less_b.get(f.left, f.right.integer), f.right.integer)
        elif isinstance(f, MultipleOf):
            multiple_b[f.value] = max(multiple_b.get(f.value, f.k), f.k)
    for f in a - b:
        if isinstance(f, Less) and f.right.integer is not None and f.left in less_b:
            out.add(Less(f.left, ConstKey(max(f.right.integer, less_b[f.left]))))
        elif isinstance(f, MultipleOf) and f.value in multiple_b:
            out.add(MultipleOf(f.value, math.gcd(f.k, multiple_b[f.value])))
    return frozenset(out)


def kill(facts: frozenset, variables: Iterable[ir.Var]) -> frozenset:
    """Drop every fact that depends on one of ``variables`` (they are being reassigned)."""
    gone = set(variables)
    if not gone:
        return facts
    return frozenset(f for f in facts if not (f.variables() & gone))


def split_offset(e: ir.Expr) -> tuple[ir.Expr, int] | None:
    """``(a, c)`` when the integer ``e`` is ``a + c`` or ``a - c`` with ``c`` a nonzero constant."""
    if not (isinstance(e, ir.BinOp) and e.op in ("+", "-")):
        return None
    if not (isinstance(e.ty, ir.ScalarType) and e.ty.info.is_int):
        return None
    info = e.ty.info

    def constant(side: ir.Expr) -> int | None:
        side = _strip_cast(side)
        if isinstance(side, ir.Const) and isinstance(side.value, int) and side.value != 0 \
                and info.min <= side.value <= info.max:
            return side.value
        return None

    c = constant(e.right)
    if c is not None:
        return e.left, c if e.op == "+" else -c
    c = constant(e.left) if e.op == "+" else None
    return (e.right, c) if c is not None else None


# ---- the facts a condition proves ------------------------------------------------------------

_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def _strip_cast(e: ir.Expr) -> ir.Expr:
    while isinstance(e, ir.Cast):
        e = e.value
    return e


def _is_const(e: ir.Expr, value=None) -> bool:
    e = _strip_cast(e)
    return isinstance(e, ir.Const) and (value is None or e.value == value)


def cond_facts(cond: ir.Expr, truth: bool, classify: Callable[[ir.Expr], Unique | None],
               uniform: Callable[[ir.Expr], bool], key: Callable[[ir.Expr], Key] = key
               ) -> set[Fact]:
    """Facts that hold where ``cond`` evaluated to ``truth``.  ``classify`` tells which thread
    coordinates an expression is unique in, ``uniform`` whether it is the same for every thread
    (an equality of the two pins those coordinates)."""
    if isinstance(cond, ir.UnaryOp) and cond.op == "not":
        return cond_facts(cond.operand, not truth, classify, uniform, key)
    if isinstance(cond, ir.BoolOp):
        if (cond.op == "and") == truth:
            out: set[Fact] = set()
            for v in cond.values:
                out |= cond_facts(v, truth, classify, uniform, key)
            return out
        return set()
    if isinstance(cond, ir.Compare):
        op = cond.op if truth else _NEGATE[cond.op]
        return stable(_compare_facts(op, cond.left, cond.right, classify, uniform, key))
    return set()


def unread_facts(cond: ir.Expr, truth: bool, uniform: Callable[[ir.Expr], bool],
                 key: Callable[[ir.Expr], Key] = key) -> set[Fact]:
    """An :class:`Unread` for each part of ``cond`` (where it evaluated to ``truth``) that
    differs between threads and that :func:`cond_facts` does not capture whole: anything but
    an ``and`` of integer comparisons ``<``, ``==``, ``!=`` (or against a constant) of values
    that are not read from memory."""
    if uniform(cond):
        return set()
    if isinstance(cond, ir.UnaryOp) and cond.op == "not":
        return unread_facts(cond.operand, not truth, uniform, key)
    if isinstance(cond, ir.BoolOp) and (cond.op == "and") == truth:
        out: set[Fact] = set()
        for v in cond.values:
            out |= unread_facts(v, truth, uniform, key)
        return out
    if isinstance(cond, ir.Compare) and all(
            isinstance(side.ty, ir.ScalarType) and side.ty.info.is_int
            and not key(side).reads_memory() for side in (cond.left, cond.right)):
        op = cond.op if truth else _NEGATE[cond.op]
        if op in ("<", ">", "==", "!=") or _is_const(cond.left) or _is_const(cond.right):
            return set()
    return {Unread(cond.span.line)}


def _compare_facts(op: str, left: ir.Expr, right: ir.Expr, classify, uniform, key) -> set[Fact]:
    out: set[Fact] = set()
    if op in (">", ">="):
        op = "<" if op == ">" else "<="
        left, right = right, left
    if op == "<":
        out.add(Less(key(left), key(right)))
        if _is_const(left, -1):
            out.add(NonNegative(key(right)))
        c = _strip_cast(left)
        if isinstance(c, ir.Const) and isinstance(c.value, int) and c.value >= -1:
            out.add(NonNegative(key(right)))
    elif op == "<=":
        r = _strip_cast(right)
        if isinstance(r, ir.BinOp) and r.op == "-" and _is_const(r.right, 1):
            out.add(Less(key(left), key(r.left)))
        c = _strip_cast(left)
        if isinstance(c, ir.Const) and isinstance(c.value, int):
            out.add(Less(ConstKey(c.value - 1), key(right)))
            if c.value >= 0:
                out.add(NonNegative(key(right)))
        rc = _strip_cast(right)
        if isinstance(rc, ir.Const) and isinstance(rc.value, int):
            out.add(Less(key(left), ConstKey(rc.value + 1)))
        elif not isinstance(c, ir.Const):
            out.add(AtMost(key(left), key(right)))
    elif op == "!=":
        out.add(NotEqual(key(left), key(right)))
        out.add(NotEqual(key(right), key(left)))
    elif op == "==":
        out.add(Equal(key(left), key(right)))
        for a, b in ((left, right), (right, left)):
            u = classify(a)
            if u is not None and uniform(b):
                thread = key(a)
                # Only a value of the thread's coordinates and the kernel's parameters names
                # the same thread wherever it is compared (a loop's `j` may be another loop's).
                # Nor a value unique only under a condition (`tid // 32` under `tid % 32 ==
                # 0`): under `tid % 32 == 1` the same equality names another thread.
                fixed = not u.pins and not thread.reads_memory() and all(
                    v.is_param for v in thread.variables())
                for coord in u.coords:
                    out.add(Pinned(coord))
                    if fixed:
                        out.add(PinnedBy(coord, thread, key(b)))
            # `block_dim.x == 32` bounds every thread index along x by 32.
            sa, sb = _strip_cast(a), _strip_cast(b)
            if isinstance(sa, ir.Special) and sa.name == "block_dim" and isinstance(
                    sb, ir.Const) and isinstance(sb.value, int):
                tid = ir.Special(sa.span, sa.ty, "thread_idx", sa.axis)
                out.add(Less(key(tid), ConstKey(sb.value)))
                out.add(Less(key(ir.UidComponent(sa.span, ir.I64, "block", sa.axis)),
                             ConstKey(sb.value)))
    return out
