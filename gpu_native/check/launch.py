"""Expressions the launcher evaluates from the grid and block alone (see
:mod:`gpu_native.runtime.launch_checks`): the trees of its :class:`gpu_native.spec.LaunchCheck`
records."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ..analysis.ranges import is_widening


def launch_tree(e: ir.Expr, specials: tuple[str, ...], arithmetic: tuple[str, ...],
                single_def: Callable[[ir.Var], ir.Expr | None]) -> tuple | None:
    """``e`` as a launch-check tree (see :class:`gpu_native.spec.LaunchCheck`), or ``None`` when
    it depends on anything but constants, the launch indices in ``specials`` and the operators in
    ``arithmetic``.  ``single_def`` gives the value of a local assigned once."""
    if isinstance(e, ir.Const) and isinstance(e.value, (bool, int)):
        return ("c", int(e.value))
    if isinstance(e, ir.Special) and e.name in specials:
        return ("sp", e.name, e.axis)
    if isinstance(e, ir.Cast) and is_widening(e):
        return launch_tree(e.value, specials, arithmetic, single_def)
    if isinstance(e, ir.Local):
        d = single_def(e.var)
        return launch_tree(d, specials, arithmetic, single_def) if d is not None else None
    if isinstance(e, (ir.BinOp, ir.Compare)) and e.op in arithmetic:
        left = launch_tree(e.left, specials, arithmetic, single_def)
        right = launch_tree(e.right, specials, arithmetic, single_def)
        if left is None or right is None:
            return None
        # Arithmetic carries its type, so the launcher wraps as the device would.
        return (e.op, left, right, str(e.ty)) if isinstance(e, ir.BinOp) else (
            e.op, left, right)
    if isinstance(e, ir.BoolOp) and e.op in arithmetic:
        parts = tuple(launch_tree(v, specials, arithmetic, single_def) for v in e.values)
        return None if any(p is None for p in parts) else (e.op, parts)
    if isinstance(e, ir.UnaryOp) and e.op == "not" and "not" in arithmetic:
        inner = launch_tree(e.operand, specials, arithmetic, single_def)
        return None if inner is None else ("not", inner)
    return None
