"""The facts behind the safety rules: unique indices, uniform values and bounds proofs.

* **Unique indices.**  An index expression is *unique* over a set of thread coordinates when two
  threads that differ in one of those coordinates can never produce the same value.  Coordinates are
  ``tid0..2`` (thread index in the block) and ``bid0..2`` (block index).  A grid uid covers both of
  its axis; a block uid covers ``tid``; ``block_idx`` covers ``bid``.  Adding a launch-uniform
  value, multiplying by a nonzero constant, and widening casts keep uniqueness; ``u * K + j`` with
  ``0 <= j < K`` proven does too.
* **Facts** are what dominating conditions and bounds checks prove: ``("lt", i, n)`` for
  ``i < n``, ``("ge0", i)`` for ``i >= 0``, ``("ne", i, j)`` for ``i != j``, and ``("pin", coord)``
  when a condition such as ``thread_idx.x == 0`` leaves one thread along that coordinate.  A check
  that passed is a fact for the rest of the thread, since a failing one ends it.  Bounds checks
  are dropped where facts prove the index in range, e.g. ``a[i + 1]`` after ``a[i]`` where
  ``i != len(a) - 1``, and ``a[i - 1]`` where ``i != 0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .. import ir
from ..nodes import node

Fact = tuple
Key = tuple


def key(e: ir.Expr, resolve: Callable[[ir.Var], ir.Expr | None] | None = None) -> Key:
    """A structural key for an expression (widening casts stripped) used to match facts.

    ``resolve`` maps a local assigned exactly once to its defining expression, so that
    ``n = a.shape[1]; ... i < n`` proves ``a[_, i]`` in range.
    """
    if isinstance(e, ir.Cast):
        src, dst = e.value.ty, e.ty
        if (isinstance(src, ir.ScalarType) and isinstance(dst, ir.ScalarType)
                and src.info.is_int and dst.info.is_int and dst.info.bits >= src.info.bits):
            return key(e.value, resolve)
        return ("cast", str(e.ty), key(e.value, resolve))
    if isinstance(e, ir.Local):
        if resolve is not None:
            d = resolve(e.var)
            if d is not None:
                return key(d, resolve)
        return ("v", id(e.var))
    if isinstance(e, ir.Const):
        return ("c", e.value)
    if isinstance(e, ir.Shape):
        return ("shape", id(e.array.var), e.axis)
    if isinstance(e, ir.BinOp):
        return ("op", e.op, key(e.left, resolve), key(e.right, resolve))
    if isinstance(e, ir.UnaryOp):
        return ("un", e.op, key(e.operand, resolve))
    if isinstance(e, ir.UidComponent):
        return ("uid", e.scope, e.axis)
    if isinstance(e, ir.Special):
        return ("sp", e.name, e.axis)
    if isinstance(e, ir.LaneId):
        return ("lane",)
    if isinstance(e, ir.Load):
        return ("load", id(e.array.var), tuple(key(i, resolve) for i in e.indices))
    if isinstance(e, ir.MathCall):
        return ("math", e.name, tuple(key(a, resolve) for a in e.args))
    return ("opaque", id(e))


def key_vars(k: Key) -> set[int]:
    """The ids of the variables a key mentions."""
    out: set[int] = set()

    def walk(x):
        if isinstance(x, tuple):
            if len(x) == 2 and x[0] == "v":
                out.add(x[1])
            for item in x:
                walk(item)

    walk(k)
    return out


def fact_vars(f: Fact) -> set[int]:
    out: set[int] = set()
    for part in f[1:]:
        if isinstance(part, tuple):
            out |= key_vars(part)
    return out


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


def _mentions_load(k) -> bool:
    if isinstance(k, tuple):
        if k and k[0] in ("load", "opaque"):
            return True
        return any(_mentions_load(part) for part in k)
    return False


def stable_facts(facts: Iterable[Fact]) -> set[Fact]:
    """The facts that stay true while nothing is reassigned: not those about a value loaded from
    memory, which another thread (or this one) may change before the next load."""
    return {f for f in facts if not _mentions_load(f[1:])}


def kill(facts: frozenset, var_ids: Iterable[int]) -> frozenset:
    """Drop every fact that mentions one of ``var_ids`` (they are being reassigned)."""
    ids = set(var_ids)
    if not ids:
        return facts
    return frozenset(f for f in facts if not (fact_vars(f) & ids))


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
    """Facts that hold where ``cond`` evaluated to ``truth``."""
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
        return stable_facts(_compare_facts(op, cond.left, cond.right, classify, uniform, key))
    return set()


def _compare_facts(op: str, left: ir.Expr, right: ir.Expr, classify, uniform, key) -> set[Fact]:
    out: set[Fact] = set()
    if op in (">", ">="):
        op = "<" if op == ">" else "<="
        left, right = right, left
    if op == "<":
        out.add(("lt", key(left), key(right)))
        if _is_const(left, -1):
            out.add(("ge0", key(right)))
        c = _strip_cast(left)
        if isinstance(c, ir.Const) and isinstance(c.value, int) and c.value >= -1:
            out.add(("ge0", key(right)))
    elif op == "<=":
        r = _strip_cast(right)
        if isinstance(r, ir.BinOp) and r.op == "-" and _is_const(r.right, 1):
            out.add(("lt", key(left), key(r.left)))
        c = _strip_cast(left)
        if isinstance(c, ir.Const) and isinstance(c.value, int):
            out.add(("lt", ("c", c.value - 1), key(right)))
            if c.value >= 0:
                out.add(("ge0", key(right)))
        rc = _strip_cast(right)
        if isinstance(rc, ir.Const) and isinstance(rc.value, int):
            out.add(("lt", key(left), ("c", rc.value + 1)))
    elif op == "!=":
        out.add(("ne", key(left), key(right)))
        out.add(("ne", key(right), key(left)))
    elif op == "==":
        for a, b in ((left, right), (right, left)):
            u = classify(a)
            if u is not None and uniform(b):
                for coord in u.coords:
                    out.add(("pin", coord))
            # `block_dim.x == 32` bounds every thread index along x by 32.
            sa, sb = _strip_cast(a), _strip_cast(b)
            if isinstance(sa, ir.Special) and sa.name == "block_dim" and isinstance(
                    sb, ir.Const) and isinstance(sb.value, int):
                tid = ir.Special(sa.span, sa.ty, "thread_idx", sa.axis)
                out.add(("lt", key(tid), ("c", sb.value)))
                out.add(("lt", key(ir.UidComponent(sa.span, ir.I64, "block", sa.axis)),
                         ("c", sb.value)))
    return out


@node
class Unique:
    """An index that is injective in the thread coordinates ``coords``; ``scale`` is its stride."""

    coords: frozenset[str]
    scale: int = 1


def grid_coords(axis: int) -> frozenset[str]:
    return frozenset({f"tid{axis}", f"bid{axis}"})


def required_coords(ndim: int, space: str) -> frozenset[str]:
    """Coordinates a store must be unique in: every thread of the grid (global) or block (shared)."""
    coords = {f"tid{a}" for a in range(ndim)}
    if space == "global":
        coords |= {f"bid{a}" for a in range(ndim)}
    return frozenset(coords)


def pinned(facts: frozenset) -> frozenset[str]:
    return frozenset(f[1] for f in facts if f[0] == "pin")
