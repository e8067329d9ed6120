"""Expressions the launcher evaluates from the grid and block alone (see
:mod:`gpu_native.runtime.launch_checks`): the trees of its :class:`gpu_native.spec.LaunchCheck`
records, made of the nodes of :mod:`gpu_native.launchexpr`."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ..analysis.ranges import is_widening
from ..launchexpr import (
    AllOf,
    AnyOf,
    Arith,
    Compare,
    Const,
    LaunchExpr,
    LaunchIndex,
    Not,
    ShapeOf,
    subtrees,
)


def launch_tree(e: ir.Expr, specials: tuple[str, ...], arithmetic: tuple[str, ...],
                single_def: Callable[[ir.Var], ir.Expr | None]) -> LaunchExpr | None:
    """``e`` as a launch-check tree (see :class:`gpu_native.spec.LaunchCheck`), or ``None`` when
    it depends on anything but constants, the launch indices in ``specials`` and the operators in
    ``arithmetic``.  ``single_def`` gives the value of a local assigned once."""
    if isinstance(e, ir.Const) and isinstance(e.value, (bool, int)):
        return Const(int(e.value))
    if isinstance(e, ir.Special) and e.name in specials:
        return LaunchIndex(e.name, e.axis)
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
        return Arith(e.op, left, right, str(e.ty)) if isinstance(e, ir.BinOp) else Compare(
            e.op, left, right)
    if isinstance(e, ir.BoolOp) and e.op in arithmetic:
        parts = tuple(launch_tree(v, specials, arithmetic, single_def) for v in e.values)
        return None if any(p is None for p in parts) else _bool_op(e.op, parts)
    if isinstance(e, ir.UnaryOp) and e.op == "not" and "not" in arithmetic:
        inner = launch_tree(e.operand, specials, arithmetic, single_def)
        return None if inner is None else Not(inner)
    return None


def _bool_op(op: str, parts: tuple) -> LaunchExpr:
    return AllOf(parts) if op == "and" else AnyOf(parts)


def shape_tree(e: ir.Expr, param_index: Callable[[str], int | None],
               single_def: Callable[[ir.Var], ir.Expr | None],
               fits: list[tuple[LaunchExpr, ir.BinOp]]) -> LaunchExpr | None:
    """``e`` as a :class:`gpu_native.spec.ShapeAssert` tree, or ``None``: constants, the launch
    shape (``block_dim``, ``grid_dim``) and the shapes of array parameters
    (:class:`~gpu_native.launchexpr.ShapeOf`, ``param_index`` giving a parameter's index),
    combined by comparisons, ``and``, ``or``, ``not``, ``%`` and ``//`` by a positive constant,
    and ``+``/``*`` of the launch shape alone.  The launcher evaluates the tree in exact
    integers, which is what the device computes only where nothing wraps: shapes are below
    2**48 and ``%``/``//`` by a positive constant cannot wrap; each ``+``/``*`` is appended to
    ``fits`` (its tree and its expression) for an :class:`~gpu_native.spec.IndexFits` that
    refuses a launch shape making it wrap."""
    if isinstance(e, ir.Const) and isinstance(e.value, (bool, int)):
        return Const(int(e.value))
    if isinstance(e, ir.Special) and e.name in ("block_dim", "grid_dim"):
        return LaunchIndex(e.name, e.axis)
    if isinstance(e, ir.Shape):
        var = e.array.var
        index = param_index(var.name) if var.is_param else None
        return None if index is None else ShapeOf(index, e.axis)
    if isinstance(e, ir.Cast) and is_widening(e):
        return shape_tree(e.value, param_index, single_def, fits)
    if isinstance(e, ir.Local):
        d = single_def(e.var)
        return shape_tree(d, param_index, single_def, fits) if d is not None else None
    if isinstance(e, ir.Compare):
        left = shape_tree(e.left, param_index, single_def, fits)
        right = shape_tree(e.right, param_index, single_def, fits)
        return None if left is None or right is None else Compare(e.op, left, right)
    if isinstance(e, ir.BinOp) and e.op in ("%", "//"):
        right = shape_tree(e.right, param_index, single_def, fits)
        if not isinstance(right, Const) or right.value <= 0:
            return None
        left = shape_tree(e.left, param_index, single_def, fits)
        return None if left is None else Arith(e.op, left, right)
    if isinstance(e, ir.BinOp) and e.op in ("+", "*"):
        launch = launch_tree(e, ("block_dim", "grid_dim"), ("+", "*"), single_def)
        if launch is None or not isinstance(e.ty, ir.ScalarType) or not e.ty.info.is_int:
            return None
        tree = _exact(launch)
        fits.append((tree, e))
        return tree
    if isinstance(e, ir.BoolOp) and e.op in ("and", "or"):
        parts = tuple(shape_tree(v, param_index, single_def, fits) for v in e.values)
        return None if any(p is None for p in parts) else _bool_op(e.op, parts)
    if isinstance(e, ir.UnaryOp) and e.op == "not":
        inner = shape_tree(e.operand, param_index, single_def, fits)
        return None if inner is None else Not(inner)
    return None


def has_shape(tree: LaunchExpr) -> bool:
    """Does the tree read an array's shape?"""
    return any(isinstance(t, ShapeOf) for t in subtrees(tree))


def _exact(tree: LaunchExpr) -> LaunchExpr:
    """A launch tree of ``+`` and ``*`` without its arithmetic's types (exact, as a
    ShapeAssert's is)."""
    if isinstance(tree, Arith):
        return Arith(tree.op, _exact(tree.left), _exact(tree.right))
    return tree


def fixed_divisor(tree: LaunchExpr) -> bool:
    """Is ``tree`` a divisor whose value every launch fixes and keeps at least 1: a launch extent
    (``grid_dim.y``) or a positive constant?  A ``//`` or ``%`` by one has a largest value the
    launcher can compute (``_largest`` in :mod:`gpu_native.runtime.launch_checks`)."""
    return (isinstance(tree, Const) and tree.value >= 1) or (
        isinstance(tree, LaunchIndex) and tree.name in ("block_dim", "grid_dim"))
