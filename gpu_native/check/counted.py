"""``while`` loops that count: the grid-stride loop as CUDA C++ writes it,

    i = block_idx.x * block_dim.x + thread_idx.x
    while i < n:
        y[i] = a * x[i] + y[i]
        i += block_dim.x * grid_dim.x

(CUDA by Example's, and every port of one).  Its counter takes the values ``start + step * k``
(``k = 0, 1, ...``) below ``stop``, as ``for i in range(start, n, step)`` does, where the body's
last statement steps it by a value the loop does not change and nothing else in the body
assigns it; the proofs then see the counter as the range's variable (:mod:`.ownership`).  Unlike
a range, the counter is the user's: stepping past ``stop`` must not wrap around in its type, so
``stop - 1 + step`` is shown to fit it, from the bounds of both or, for an array's extent and the
launch shape, by a check the launcher makes (a ``KernelAssertionError`` at launch when an array
is too long for an ``i32`` counter).

This module reads the loop's syntax; the type pass (:mod:`.control`) does the rest.
"""

from __future__ import annotations

from ..frontend import syntax as S
from .resolve import assigned_names

__all__ = ["stepped_counter"]


def stepped_counter(s: S.While) -> tuple[str, S.Expr] | None:
    """``(name, step)`` where the body of ``s`` ends by stepping the local ``name`` up by
    ``step`` (``name += step`` or ``name = name + step``), nothing before that assigns ``name``,
    and ``step`` is arithmetic of names and attributes that the body does not assign (the
    launch shape, constants, parameters); else ``None``."""
    if not s.body:
        return None
    last = s.body[-1]
    name: str | None = None
    step: S.Expr | None = None
    if isinstance(last, S.AugAssign) and last.op == "+" and isinstance(last.target, S.Name):
        name, step = last.target.id, last.value
    elif isinstance(last, S.Assign) and len(last.targets) == 1 and \
            isinstance(last.targets[0], S.Name) and isinstance(last.value, S.BinOp) and \
            last.value.op == "+":
        name = last.targets[0].id
        left, right = last.value.left, last.value.right
        if isinstance(left, S.Name) and left.id == name:
            step = right
        elif isinstance(right, S.Name) and right.id == name:
            step = left
    if name is None or step is None:
        return None
    assigned = assigned_names(s.body)
    if not _invariant(step, assigned | {name}) or not _steps_before_continue(
            s.body[:-1], name, last):
        return None
    return name, step


def _steps_before_continue(stmts, name: str, step: S.Stmt) -> bool:
    """Does ``stmts`` assign ``name`` only by the loop's own ``step`` right before a
    ``continue`` (``if skip: i += stride; continue``), outside any loop nested in the body?
    Then every value the counter holds where the body runs is still ``start + step * k``."""
    for k, s in enumerate(stmts):
        if isinstance(s, (S.Assign, S.AugAssign, S.AnnAssign)) and name in assigned_names((s,)):
            following = stmts[k + 1] if k + 1 < len(stmts) else None
            if not _same(s, step) or not isinstance(following, S.Continue):
                return False
        elif isinstance(s, (S.For, S.While)):
            if name in assigned_names((s,)):  # its body, or a for loop's own target
                return False
        elif isinstance(s, S.If):
            if not (_steps_before_continue(s.body, name, step)
                    and _steps_before_continue(s.orelse, name, step)):
                return False
        elif isinstance(s, S.With) and not _steps_before_continue(s.body, name, step):
            return False
    return True


def _same(a: object, b: object) -> bool:
    """Are two syntax trees the same statement, wherever each is written?"""
    from ..nodes import fields

    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if not hasattr(a, "span"):
        return a == b
    return all(_same(getattr(a, f), getattr(b, f)) for f in fields(a) if f != "span")


def _invariant(e: S.Expr, assigned: set[str]) -> bool:
    """Is ``e`` plain arithmetic (``+``, ``*``) of constants, attributes and names none of
    which is in ``assigned``?"""
    if isinstance(e, S.Num):
        return isinstance(e.value, int) and not isinstance(e.value, bool)
    if isinstance(e, S.Name):
        return e.id not in assigned
    if isinstance(e, S.Attribute):
        return _invariant(e.value, assigned)
    if isinstance(e, S.BinOp) and e.op in ("+", "*"):
        return _invariant(e.left, assigned) and _invariant(e.right, assigned)
    return False
