"""The expressions of launch checks: what a :class:`~gpu_native.spec.LaunchCheck` computes from
the launch shape (and, for some, the arguments) before a kernel runs.

A tree is made of the immutable nodes below: leaves (:class:`Const`, :class:`LaunchIndex`,
:class:`ParamValue`, :class:`ShapeOf`, :class:`AddressOf`) under :class:`Arith`,
:class:`Compare`, :class:`AllOf`, :class:`AnyOf` and :class:`Not`.  The checker builds them, the
runtime evaluates them (:mod:`gpu_native.runtime.launch_checks`), the host emitter spells them in
the generated launcher and ``gpu-native expand`` prints them.  Every operation on a tree is a
function here, each one ``match``-ing on the node's class: :func:`evaluate`,
:func:`largest_value`, :func:`tree_text`, :func:`launcher_text`, :func:`subtrees`, and the
literal form, :func:`to_literal` and :func:`from_literal`.

The literal form is the compact tagged tuple that rewritten modules embed (in the spec literal,
:mod:`gpu_native.spec`, and in the encoded IR, :mod:`gpu_native.ircodec`): ``("c", value)``,
``("sp", name, axis)``, ``("param", index)``, ``("shape", param, axis)``, ``("ptr", param)``,
``(op, left, right)`` (a comparison, or exact arithmetic), ``(op, left, right, type)``
(arithmetic that wraps in ``type``), ``("and" | "or", parts)`` and ``("not", tree)``.  It is
the layout these trees had before they were typed, so the bytes a rewrite embeds did not change
with them.  This module imports nothing but :mod:`gpu_native.nodes`: the runtime reads it on
every cold launch shape, the transpiler on every kernel.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence

from .nodes import node

__all__ = [
    "AddressOf",
    "AllOf",
    "AnyOf",
    "Arith",
    "Compare",
    "Const",
    "LaunchExpr",
    "LaunchIndex",
    "Not",
    "ParamValue",
    "ShapeOf",
    "evaluate",
    "from_literal",
    "largest_value",
    "launcher_text",
    "subtrees",
    "to_literal",
    "tree_text",
]

class LaunchExpr:
    """A node of a launch-check tree: the type every node below has (it has no fields)."""

    __slots__ = ()


@node
class Const(LaunchExpr):
    """An integer constant (a ``bool`` of the kernel's source is its ``int``)."""

    value: int


@node
class LaunchIndex(LaunchExpr):
    """A launch index: ``thread_idx``, ``block_idx``, ``block_dim`` or ``grid_dim`` along
    ``axis`` (0, 1, 2 for x, y, z), or the launch's dynamic ``shared_mem_bytes`` (axis 0)."""

    name: str
    axis: int


@node
class ParamValue(LaunchExpr):
    """The value of the kernel's ``index``-th parameter, a scalar (a
    :class:`~gpu_native.spec.ParamCheck`'s trees only)."""

    index: int


@node
class ShapeOf(LaunchExpr):
    """The extent along ``axis`` of the array passed as the kernel's ``param``-th parameter (a
    :class:`~gpu_native.spec.ShapeAssert`'s or a :class:`~gpu_native.spec.ParamCheck`'s trees
    only)."""

    param: int
    axis: int


@node
class AddressOf(LaunchExpr):
    """The address, in bytes, of the array passed as the kernel's ``param``-th parameter (the
    alignment facts a :class:`~gpu_native.spec.ShapeAssert` states: ``address(a) % 16 ==
    0``)."""

    param: int


@node
class Arith(LaunchExpr):
    """``left op right`` for ``op`` one of ``+ - * // %`` (``//`` and ``%`` floor, as Python's).
    ``type`` is the integer type the device computes it in, whose wrap-around the launcher
    reproduces (``"i32"``); ``""`` where the arithmetic is exact."""

    op: str
    left: LaunchExpr
    right: LaunchExpr
    type: str = ""


@node
class Compare(LaunchExpr):
    """``left op right`` for ``op`` one of ``== != < <= > >=``: 1 where it holds, else 0."""

    op: str
    left: LaunchExpr
    right: LaunchExpr


@node
class AllOf(LaunchExpr):
    """``parts[0] and parts[1] and ...``: 1 where every part is nonzero, else 0."""

    parts: tuple[LaunchExpr, ...]


@node
class AnyOf(LaunchExpr):
    """``parts[0] or parts[1] or ...``: 1 where some part is nonzero, else 0."""

    parts: tuple[LaunchExpr, ...]


@node
class Not(LaunchExpr):
    """``not operand``: 1 where the operand is zero, else 0."""

    operand: LaunchExpr


# ---- evaluation --------------------------------------------------------------------------------

_BITS = {"i8": (8, True), "i16": (16, True), "i32": (32, True), "i64": (64, True),
         "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
         "bool": (1, False)}


def _wrap(value: int, ty: str) -> int:
    bits, signed = _BITS.get(ty, (64, True))
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


# Python's floor division and modulo, as the kernel language's; by 0, ZeroDivisionError.
_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
    "%": operator.mod}

_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge}


def evaluate(tree: LaunchExpr, launch: Callable[[str, int], int], args: Sequence = ()) -> int:
    """The value of ``tree``, ``launch(name, axis)`` giving the launch indices and ``args`` the
    arguments in parameter order (a scalar's converted value; an array's ``DeviceArray``, for
    its shape and address).  Typed arithmetic wraps as the device's would; a division by zero
    raises ``ZeroDivisionError``."""
    match tree:
        case Const():
            return tree.value
        case LaunchIndex():
            return launch(tree.name, tree.axis)
        case Arith():
            value = _ARITHMETIC[tree.op](evaluate(tree.left, launch, args),
                                         evaluate(tree.right, launch, args))
            return _wrap(value, tree.type) if tree.type else value
        case Compare():
            return int(_COMPARE[tree.op](evaluate(tree.left, launch, args),
                                         evaluate(tree.right, launch, args)))
        case AllOf():
            return int(all(evaluate(t, launch, args) for t in tree.parts))
        case AnyOf():
            return int(any(evaluate(t, launch, args) for t in tree.parts))
        case Not():
            return int(not evaluate(tree.operand, launch, args))
        case ParamValue():
            return args[tree.index]
        case ShapeOf():
            return args[tree.param].shape[tree.axis]
        case AddressOf():
            return args[tree.param].ptr
    raise TypeError(f"not a launch-check node: {tree!r:.60}")


def largest_value(tree: LaunchExpr, extent: Callable[[str, int], tuple[int, int]]) -> int:
    """The largest value of an :class:`~gpu_native.spec.IndexFits` tree (``+``, ``*`` of
    nonnegative launch indices and constants, ``//`` and ``%`` by a launch extent or a positive
    constant), each :class:`LaunchIndex` taking the values ``extent(name, axis)`` gives, least
    and largest: the launch's own at launch, the hardware's in the proofs.  Every operand is
    nonnegative, so the largest inputs give the largest value; ``a // k`` is at most ``max(a)
    // min(k)``, ``a % k`` at most ``max(k) - 1``."""
    match tree:
        case Const():
            return tree.value
        case LaunchIndex():
            return extent(tree.name, tree.axis)[1]
        case Arith(op="//", right=Const() as k):
            return largest_value(tree.left, extent) // max(k.value, 1)
        case Arith(op="//", right=LaunchIndex() as k):
            return largest_value(tree.left, extent) // max(extent(k.name, k.axis)[0], 1)
        case Arith(op="%"):
            return min(largest_value(tree.left, extent), largest_value(tree.right, extent) - 1)
        case Arith(op="+"):
            return largest_value(tree.left, extent) + largest_value(tree.right, extent)
        case Arith(op="*"):
            return largest_value(tree.left, extent) * largest_value(tree.right, extent)
    raise ValueError(f"no largest value for the launch-check tree {tree_text(tree)}")


def subtrees(tree: LaunchExpr) -> Iterator[LaunchExpr]:
    """``tree`` and every node under it, parents before children."""
    yield tree
    match tree:
        case Arith() | Compare():
            yield from subtrees(tree.left)
            yield from subtrees(tree.right)
        case AllOf() | AnyOf():
            for part in tree.parts:
                yield from subtrees(part)
        case Not():
            yield from subtrees(tree.operand)


# ---- text --------------------------------------------------------------------------------------

_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4,
               "+": 5, "-": 5, "*": 6, "//": 6, "%": 6}


def _param_name(index: int, names: tuple[str, ...]) -> str:
    return names[index] if index < len(names) else f"parameter {index}"


def tree_text(tree: LaunchExpr, outer: int = 0, names: tuple[str, ...] = ()) -> str:
    """``tree`` as the Python expression it came from (``block_dim.x == 8``); ``names`` are the
    kernel's parameter names, for :class:`ParamValue`, :class:`ShapeOf` and
    :class:`AddressOf`; ``outer`` is the precedence of the operator around it (0: none)."""
    match tree:
        case Const():
            return repr(tree.value)
        case LaunchIndex(name="shared_mem_bytes"):
            return "shared_mem_bytes"
        case LaunchIndex():
            return f"{tree.name}.{'xyz'[tree.axis]}"
        case ParamValue():
            return _param_name(tree.index, names)
        case ShapeOf():
            return f"{_param_name(tree.param, names)}.shape[{tree.axis}]"
        case AddressOf():
            return f"address({_param_name(tree.param, names)})"
        case AllOf() | AnyOf():
            op = "and" if isinstance(tree, AllOf) else "or"
            prec = _PRECEDENCE[op]
            text = f" {op} ".join(tree_text(t, prec + 1, names) for t in tree.parts)
        case Not():
            prec = _PRECEDENCE["not"]
            text = f"not {tree_text(tree.operand, prec, names)}"
        case Arith() | Compare():
            prec = _PRECEDENCE[tree.op]
            text = (f"{tree_text(tree.left, prec, names)} {tree.op} "
                    f"{tree_text(tree.right, prec + 1, names)}")
        case _:
            raise TypeError(f"not a launch-check node: {tree!r:.60}")
    return f"({text})" if prec < outer else text


def launcher_text(tree: LaunchExpr, names: tuple[str, ...], prefix: str, used: set[str]) -> str:
    """``tree`` (a :class:`~gpu_native.spec.ParamCheck`'s or a
    :class:`~gpu_native.spec.ShapeAssert`'s) as the generated launcher tests it: a Python
    expression of the launcher's parameters (``names``) and of the launch shape's names
    (``{prefix}block_dim_x``, each name added to ``used``), in exact integers, every operation
    parenthesised."""
    match tree:
        case Const():
            return repr(tree.value)
        case ParamValue():
            return names[tree.index]
        case ShapeOf():
            # Read only after the argument's own test: a DeviceArray, whose shape is a tuple.
            return f"{names[tree.param]}.shape[{tree.axis}]"
        case AddressOf():
            # Likewise: the DeviceArray's address (a slot, not the property).
            return f"{names[tree.param]}.launch_ptr"
        case LaunchIndex():
            used.add(tree.name)
            return f"{prefix}{tree.name}_{'xyz'[tree.axis]}"
        case AllOf() | AnyOf():
            op = " and " if isinstance(tree, AllOf) else " or "
            return "(" + op.join(launcher_text(t, names, prefix, used) for t in tree.parts) + ")"
        case Not():
            return f"(not {launcher_text(tree.operand, names, prefix, used)})"
        case Arith() | Compare():
            return (f"({launcher_text(tree.left, names, prefix, used)} {tree.op} "
                    f"{launcher_text(tree.right, names, prefix, used)})")
    raise TypeError(f"not a launch-check node: {tree!r:.60}")


# ---- the literal form --------------------------------------------------------------------------


def to_literal(tree: LaunchExpr) -> tuple:
    """``tree`` in the literal form (see the module docstring)."""
    match tree:
        case Const():
            return ("c", tree.value)
        case LaunchIndex():
            return ("sp", tree.name, tree.axis)
        case ParamValue():
            return ("param", tree.index)
        case ShapeOf():
            return ("shape", tree.param, tree.axis)
        case AddressOf():
            return ("ptr", tree.param)
        case Arith() if tree.type:
            return (tree.op, to_literal(tree.left), to_literal(tree.right), tree.type)
        case Arith() | Compare():
            return (tree.op, to_literal(tree.left), to_literal(tree.right))
        case AllOf():
            return ("and", tuple(to_literal(t) for t in tree.parts))
        case AnyOf():
            return ("or", tuple(to_literal(t) for t in tree.parts))
        case Not():
            return ("not", to_literal(tree.operand))
    raise TypeError(f"not a launch-check node: {tree!r:.60}")


def _index(value) -> bool:
    return type(value) is int and value >= 0


def from_literal(value, params: bool = False) -> LaunchExpr:
    """The tree whose literal form is ``value``, checked as it is read: ``TypeError`` where it
    is no tuple, ``ValueError`` naming the node where a node is malformed or unknown.  The
    leaves that read arguments (``("param", i)``, ``("shape", i, axis)``, ``("ptr", i)``) are
    accepted only where ``params`` (the trees of a :class:`~gpu_native.spec.ParamCheck` or a
    :class:`~gpu_native.spec.ShapeAssert`)."""
    if type(value) is not tuple or not value:
        raise TypeError("a launch-check tree is not a tuple")
    n = len(value)
    match value:
        case ("c", int() as c) if type(c) is int:
            return Const(c)
        case ("sp", str() as name, int() as axis) if type(name) is str and type(axis) is int:
            return LaunchIndex(name, axis)
        case ("param", index) if params and _index(index):
            return ParamValue(index)
        case ("ptr", index) if params and _index(index):
            return AddressOf(index)
        case ("shape", index, axis) if params and _index(index) and _index(axis):
            return ShapeOf(index, axis)
        case ("and" | "or" as op, tuple() as parts) if type(parts) is tuple:
            read = tuple(from_literal(p, params) for p in parts)
            return AllOf(read) if op == "and" else AnyOf(read)
        case ("not", operand):
            return Not(from_literal(operand, params))
        case (str() as op, left, right) if op in _COMPARE:
            return Compare(op, from_literal(left, params), from_literal(right, params))
        case (str() as op, left, right, *rest) if op in _ARITHMETIC and (
                not rest or (n == 4 and type(rest[0]) is str and rest[0])):
            return Arith(op, from_literal(left, params), from_literal(right, params),
                         rest[0] if rest else "")
    raise ValueError(f"unknown launch-check node {value!r:.60}")
