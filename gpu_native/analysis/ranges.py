"""Integer value ranges: intervals, affine forms and the launch limits they start from.

This is the one place the transpiler bounds integer values.  Its pieces:

* :class:`Interval` and :data:`BINARY`: closed integer intervals and the interval rule of each
  integer operator, for values as mathematical integers (a caller that computes in a fixed-width
  type widens a result that leaves the type, see :meth:`ValueRanges.range`).
* :class:`LaunchLimits`: the largest thread, block and grid indices and array extents a value may
  be derived from.  :data:`HARDWARE` holds for every launch the GPU accepts; the 32-bit entry
  point (:mod:`gpu_native.emit.index32`) makes its own, narrower limits, which its launcher
  checks before it runs that entry point.
* :class:`ValueRanges`: sound intervals of IR expressions from those limits and whatever the
  client knows of its variables, by the one set of rules above.  Its clients: the 32-bit entry
  point, which solves its variables' ranges over the whole kernel body
  (:class:`gpu_native.emit.index32.IndexRanges`), and the checker's bounds and no-wrap proofs,
  which narrow each part by the facts that hold where it is used
  (:class:`gpu_native.check.bounds.FactRanges`).  :meth:`ValueRanges.unwrapped` is an
  expression's interval before its own operation wraps: the no-wrap proofs compare it with the
  type's range.
* :class:`Affine`: an integer as ``const + sum(coefficient * symbol)``, the symbols being values
  (thread coordinates, loop counters, launch-uniform strides) whose intervals are known
  separately.  A proof about an index such as ``base + tid + j * B`` reads its coefficients and
  its symbols' intervals (``tid < B``, ``0 <= j``): the form of the uniqueness proofs that extend
  the checker's bounds proofs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .. import ir
from ..nodes import node

# A symbol of an affine form: any hashable value its client chooses (the checker's are tuples
# such as ("tid", "x", "all"), which it takes apart again), so it is not narrowed here.
Symbol = Any

__all__ = [
    "BINARY",
    "HARDWARE",
    "Affine",
    "Interval",
    "LaunchLimits",
    "ValueRanges",
    "affine",
    "constant_value",
    "is_widening",
    "type_interval",
]


class Interval(NamedTuple):
    """The integers ``lo <= x <= hi`` (a tuple, so ``Interval(0, 3) == (0, 3)``)."""

    lo: int
    hi: int

    def union(self, other: Interval) -> Interval:
        """The smallest interval holding both."""
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def within(self, outer: Interval) -> bool:
        """Is every value of this interval in ``outer``?"""
        return outer.lo <= self.lo and self.hi <= outer.hi


def type_interval(ty: ir.Type) -> Interval | None:
    """The values of an integer or bool type; ``None`` for anything else."""
    if not isinstance(ty, ir.ScalarType) or ty.info.kind not in ("int", "uint", "bool"):
        return None
    if ty.info.kind == "bool":
        return Interval(0, 1)
    return Interval(int(ty.info.min), int(ty.info.max))


def is_widening(e: ir.Cast) -> bool:
    """Does the cast ``e`` keep every value of its operand (an integer to a wider or equally
    wide integer of the same signedness, or to a strictly wider one)?"""
    src, dst = e.value.ty, e.ty
    return (isinstance(src, ir.ScalarType) and isinstance(dst, ir.ScalarType)
            and src.info.is_int and dst.info.is_int and dst.info.bits >= src.info.bits
            and (src.info.kind == dst.info.kind or dst.info.bits > src.info.bits))


# ---- the interval rule of each operator ------------------------------------------------------
# Each takes the operands' intervals and returns the result's, or None when nothing better than
# the type's range is known.


def _add(a: Interval, b: Interval) -> Interval:
    return Interval(a.lo + b.lo, a.hi + b.hi)


def _sub(a: Interval, b: Interval) -> Interval:
    return Interval(a.lo - b.hi, a.hi - b.lo)


def _mul(a: Interval, b: Interval) -> Interval:
    p = [x * y for x in a for y in b]
    return Interval(min(p), max(p))


def _floordiv(a: Interval, b: Interval) -> Interval:
    if b.lo > 0 or b.hi < 0:
        q = [x // y for x in a for y in b]
        return Interval(min(q), max(q))
    m = max(abs(a.lo), abs(a.hi))  # |x // y| <= |x| for any nonzero integer y
    return Interval(-m, m)


def _mod(a: Interval, b: Interval) -> Interval:
    # The result has the divisor's sign and is smaller in magnitude.
    if b.lo > 0:
        return Interval(0, min(b.hi - 1, a.hi)) if a.lo >= 0 else Interval(0, b.hi - 1)
    if b.hi < 0:
        return Interval(b.lo + 1, 0)
    m = max(abs(b.lo), abs(b.hi))
    return Interval(-(m - 1), m - 1) if m > 0 else Interval(0, 0)


def _and(a: Interval, b: Interval) -> Interval | None:
    # Two's complement: a nonnegative operand clears the sign bit and every bit above its own.
    if a.lo >= 0 and b.lo >= 0:
        return Interval(0, min(a.hi, b.hi))
    if a.lo >= 0:
        return Interval(0, a.hi)
    if b.lo >= 0:
        return Interval(0, b.hi)
    return None


def _or(a: Interval, b: Interval) -> Interval | None:
    # ``|`` and ``^`` of 0 <= x < 2**p and 0 <= y < 2**q set no bit above max(p, q); of a
    # negative operand, nothing is known here.
    if a.lo >= 0 and b.lo >= 0:
        return Interval(0, (1 << max(a.hi, b.hi).bit_length()) - 1)
    return None


def _shr(a: Interval, b: Interval) -> Interval:
    # A count outside 0..bits-1 gives the sign fill, 0 or -1 (the prelude's gn_shr).
    if a.lo >= 0:
        if b.lo < 0:
            return Interval(0, a.hi)
        # A count of bits or more gives 0, as does a.lo >> b.hi then (a.lo < 2**bits).
        return Interval(a.lo >> b.hi, a.hi >> b.lo)
    return Interval(min(a.lo, 0), max(a.hi, 0))


def _shl(a: Interval, b: Interval) -> Interval | None:
    # Of a nonnegative value by a count within 0..62: a count of the type's bits or more gives
    # 0 (the prelude's gn_shl), where the bound below is past any narrower type (a.hi > 0), so
    # the caller's check that the result fits the type takes the whole type instead.
    if a.lo < 0 or b.lo < 0 or b.hi > 62:
        return None
    return Interval(a.lo << b.lo, a.hi << b.hi)


BINARY: dict[str, Callable[[Interval, Interval], Interval | None]] = {
    "+": _add, "-": _sub, "*": _mul, "//": _floordiv, "%": _mod, "&": _and, "|": _or, "^": _or,
    ">>": _shr, "<<": _shl,
}


# ---- what a launch allows --------------------------------------------------------------------


_BLOCK_DIM = (1024, 1024, 64)
_GRID_DIM = ((1 << 31) - 1, 65535, 65535)


@node
class LaunchLimits:
    """The largest launch indices and array extents a value may be derived from, per axis.

    The defaults are the hardware's: ``blockDim`` at most (1024, 1024, 64) and ``gridDim`` at
    most (2**31 - 1, 65535, 65535).  ``grid_uid`` is the largest grid-unique id along each axis;
    ``extent`` the largest array extent (2**48 bytes is the GPU's whole virtual address space).
    """

    grid_uid: tuple[int, ...]
    extent: int
    thread_idx: tuple[int, ...] = (1023, 1023, 63)
    block_idx: tuple[int, ...] = ((1 << 31) - 2, 65534, 65534)
    block_dim: tuple[int, ...] = _BLOCK_DIM
    grid_dim: tuple[int, ...] = _GRID_DIM

    def special(self, name: str, axis: int) -> Interval:
        """``thread_idx``, ``block_idx``, ``block_dim`` or ``grid_dim`` along ``axis``."""
        low = 1 if name in ("block_dim", "grid_dim") else 0
        return Interval(low, getattr(self, name)[axis])

    def uid(self, scope: str, axis: int) -> Interval:
        """A grid uid (``scope="grid"``) or a block uid (``"block"``) along ``axis``."""
        if scope == "grid":
            return Interval(0, self.grid_uid[axis])
        return Interval(0, self.thread_idx[axis])

    def leaf(self, e: ir.Expr) -> Interval | None:
        """The interval of a launch index, a lane id or an extent; ``None`` for anything else."""
        if isinstance(e, ir.Special):
            return self.special(e.name, e.axis)
        if isinstance(e, ir.UidComponent):
            return self.uid(e.scope, e.axis)
        if isinstance(e, ir.LaneId):
            return Interval(0, 31)
        if isinstance(e, ir.Shape):
            shape = e.array.ty.shape
            if shape is not None and shape[0] >= 0:
                return Interval(shape[e.axis], shape[e.axis])
            return Interval(0, self.extent)
        return None


HARDWARE = LaunchLimits(grid_uid=tuple(g * b - 1 for g, b in zip(_GRID_DIM, _BLOCK_DIM)),
                        extent=1 << 48)


# ---- intervals of expressions ----------------------------------------------------------------


class ValueRanges:
    """Sound intervals of integer (and bool) IR expressions, as the generated code computes them.

    Leaves come from ``limits`` (:class:`LaunchLimits`) and from :meth:`variable`, which a client
    overrides with what it knows of its locals (by default, anything of their type).  A result
    that may leave its type is widened to the type's range: it may have wrapped.  Results are
    memoised per expression node once :attr:`memo` is a dict (``None`` while a client is still
    solving its variables)."""

    def __init__(self, limits: LaunchLimits):
        self.limits = limits
        # By id, with the expression itself: it stays alive, so its id is never reused.
        self.memo: dict[int, tuple[ir.Expr, Interval | None]] | None = {}

    def variable(self, var: ir.Var) -> Interval | None:
        """The values ``var`` may hold (``None``: it is not an integer)."""
        return type_interval(var.ty)

    def range(self, e: ir.Expr) -> Interval | None:
        """Bounds of the integer (or bool) ``e``; ``None`` when it is not one."""
        memo = self.memo
        if memo is not None:
            hit = memo.get(id(e))
            if hit is not None:
                return hit[1]
        full = type_interval(e.ty)
        r = self.unwrapped(e)
        if r is not None and full is not None and not r.within(full):
            r = full  # it may wrap: any value of the type
        if memo is not None:
            memo[id(e)] = (e, r)
        return r

    def unwrapped(self, e: ir.Expr) -> Interval | None:
        """The interval of ``e``'s own operation taken as mathematical integers, its operands as
        the generated code computes them (:meth:`range`): beyond ``e``'s type where ``e`` may
        wrap, which is what the no-wrap proofs ask.  ``None`` when ``e`` is no integer."""
        full = type_interval(e.ty)
        return None if full is None else self._raw(e, full)

    def _raw(self, e: ir.Expr, full: Interval) -> Interval:
        if isinstance(e, ir.Const):
            v = int(e.value)
            return Interval(v, v)
        if isinstance(e, ir.Local):
            return self.variable(e.var) or full
        leaf = self.limits.leaf(e)
        if leaf is not None:
            return leaf
        if isinstance(e, ir.Cast):
            inner = self.range(e.value)
            if inner is None or not inner.within(full):
                return full  # from a float (saturating), or a narrowing integer cast
            return inner
        if isinstance(e, ir.BinOp):
            a, b = self.range(e.left), self.range(e.right)
            rule = BINARY.get(e.op)
            if a is None or b is None or rule is None:
                return full
            return rule(a, b) or full
        if isinstance(e, ir.UnaryOp):
            x = self.range(e.operand)
            if x is None or e.op == "not":
                return Interval(0, 1) if e.op == "not" else full
            if e.op == "-":
                return Interval(-x.hi, -x.lo)
            return Interval(-x.hi - 1, -x.lo - 1)  # ~x == -x - 1
        if isinstance(e, ir.Select):
            a, b = self.range(e.then), self.range(e.orelse)
            if a is None or b is None:
                return full
            return a.union(b)
        if isinstance(e, ir.MathCall) and e.name in ("min", "max", "abs"):
            maybe = [self.range(a) for a in e.args]
            args = [a for a in maybe if a is not None]
            if len(args) != len(maybe):
                return full
            if e.name == "min":
                return Interval(min(a.lo for a in args), min(a.hi for a in args))
            if e.name == "max":
                return Interval(max(a.lo for a in args), max(a.hi for a in args))
            lo, hi = args[0].lo, args[0].hi
            if lo >= 0:
                return Interval(lo, hi)
            if hi <= 0:
                return Interval(-hi, -lo)
            return Interval(0, max(-lo, hi))
        return full


def constant_value(e: ir.Expr):
    """The value of ``e`` if it is a literal, looking through casts (``None`` otherwise)."""
    while isinstance(e, ir.Cast):
        e = e.value
    return e.value if isinstance(e, ir.Const) else None


# ---- affine forms ----------------------------------------------------------------------------


@node
class Affine:
    """The integer ``const + sum(coefficient * symbol for symbol, coefficient in terms)``.

    A symbol is any hashable value that names one integer (the checker's fact keys, say); each
    appears once, with a nonzero coefficient.  Forms are values: ``a.plus(b)`` and ``a.scaled(k)``
    make new ones, and two forms of the same sum are equal."""

    const: int = 0
    terms: frozenset[tuple[Symbol, int]] = frozenset()

    @classmethod
    def of(cls, symbol: Symbol) -> Affine:
        """The form of ``symbol`` alone."""
        return cls(0, frozenset({(symbol, 1)}))

    def coefficient(self, symbol: Symbol) -> int:
        """The coefficient of ``symbol`` (0 when it does not appear)."""
        return dict(self.terms).get(symbol, 0)

    def plus(self, other: Affine) -> Affine:
        total = dict(self.terms)
        for symbol, k in other.terms:
            total[symbol] = total.get(symbol, 0) + k
        return Affine(self.const + other.const,
                      frozenset((s, k) for s, k in total.items() if k))

    def scaled(self, k: int) -> Affine:
        if k == 0:
            return Affine()
        return Affine(self.const * k, frozenset((s, c * k) for s, c in self.terms))

    def interval(self, bounds: Callable[[Symbol], Interval | None]) -> Interval | None:
        """The values of the form when each symbol lies in ``bounds(symbol)`` (``None`` when a
        symbol's interval is unknown)."""
        lo = hi = self.const
        for symbol, k in self.terms:
            b = bounds(symbol)
            if b is None:
                return None
            lo += min(k * b.lo, k * b.hi)
            hi += max(k * b.lo, k * b.hi)
        return Interval(lo, hi)


def affine(e: ir.Expr, symbol: Callable[[ir.Expr], Symbol]) -> Affine:
    """``e`` as an affine form over the integers (``+``, ``-``, negation and products with a
    constant are taken apart, widening casts looked through; any other part becomes the symbol
    ``symbol(part)``).  The form is exact for the values as mathematical integers: where the
    generated code may wrap is for the caller to rule out."""
    if isinstance(e, ir.Cast) and is_widening(e):
        return affine(e.value, symbol)
    if isinstance(e, ir.Const) and isinstance(e.value, int):
        return Affine(int(e.value))
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        right = affine(e.right, symbol)
        return affine(e.left, symbol).plus(right if e.op == "+" else right.scaled(-1))
    if isinstance(e, ir.BinOp) and e.op == "*":
        for a, b in ((e.left, e.right), (e.right, e.left)):
            k = constant_value(b)
            if isinstance(k, int) and not isinstance(k, bool):
                return affine(a, symbol).scaled(k)
    if isinstance(e, ir.UnaryOp) and e.op == "-":
        return affine(e.operand, symbol).scaled(-1)
    return Affine.of(symbol(e))
