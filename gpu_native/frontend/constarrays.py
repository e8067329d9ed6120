"""Module-level constant arrays, read statically: ``TAPS = const_array(values, f32, 9)``.

The transpiler never runs a module, yet a kernel that reads ``TAPS`` needs its element type and
shape when it is compiled (the ``__constant__`` declaration, the bounds proofs, the 64 KiB
limit).  :func:`const_array_decl` reads them from the call's source: ``dtype`` and ``shape``
when they are given (``shape`` may use module constants), else from a literal ``values`` (a
nested list or tuple of numbers, possibly inside ``np.array(..., dtype=...)``), typed as NumPy
types such a list.  The values themselves are left to the running module: ``const_array`` copies
them at import and the runtime sets the kernel's constant memory from that copy when it loads
the kernel (see :mod:`gpu_native.lang.constarrays`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..errors import SourceSpan
from ..nodes import node

_PARAMS = ("values", "dtype", "shape")
_ARRAY_FUNCTIONS = ("array", "asarray", "ascontiguousarray")


@node
class ConstArrayDecl:
    """What the source says of one ``NAME = const_array(...)`` at module level.

    ``dtype`` is how the element type is written, for the checker to resolve: the dotted text of
    a name (``"f32"``, ``"np.float32"``, ``"gn.f32"``), ``"'float32'"`` for a string literal, or
    ``"builtin:int"`` / ``"builtin:float"`` / ``"builtin:bool"`` for a literal list without a
    dtype (NumPy makes those ``int64``, ``float64`` and ``bool``).  ``shape`` is the static
    shape.  Where either cannot be read, it is None and ``problem`` says why.
    """

    name: str
    span: SourceSpan
    dtype: str | None
    shape: tuple[int, ...] | None
    problem: str | None = None


def _dotted(expr: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _arguments(call: ast.Call, names: tuple[str, ...]) -> dict[str, ast.expr]:
    got = {name: arg for name, arg in zip(names, call.args)}
    for kw in call.keywords:
        if kw.arg is not None:
            got[kw.arg] = kw.value
    return got


def _dtype_text(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return repr(expr.value)
    if isinstance(expr, ast.Constant) and expr.value is None:
        return None
    return _dotted(expr)


def _literal(expr: ast.expr, evaluate: Callable[[ast.expr], object]
             ) -> tuple[tuple[int, ...], set[type]] | None:
    """The shape of a nested list/tuple literal of numbers and the Python types of its leaves,
    or None when it is not one (ragged, empty, or not literal)."""
    if isinstance(expr, (ast.List, ast.Tuple)):
        if not expr.elts:
            return None
        items = [_literal(e, evaluate) for e in expr.elts]
        if any(item is None for item in items):
            return None
        shapes = {item[0] for item in items if item is not None}
        if len(shapes) != 1:
            return None
        kinds: set[type] = set()
        for item in items:
            assert item is not None
            kinds |= item[1]
        return (len(items), *shapes.pop()), kinds
    value = evaluate(expr)
    if type(value) in (int, float, bool):
        return (), {type(value)}
    return None


def const_array_decl(name: str, span: SourceSpan, call: ast.Call,
                     evaluate: Callable[[ast.expr], object]) -> ConstArrayDecl:
    """Read ``const_array(values, dtype, shape)`` (see the module docstring); ``evaluate``
    folds a constant expression of the module (or returns a non-number)."""
    args = _arguments(call, _PARAMS)
    values = args.get("values")
    dtype = _dtype_text(args["dtype"]) if "dtype" in args else None
    literal = None
    if values is not None:
        inner = values
        if isinstance(values, ast.Call):
            func = _dotted(values.func) or ""
            if func.rsplit(".", 1)[-1] in _ARRAY_FUNCTIONS and values.args:
                inner = values.args[0]
                if dtype is None:
                    given = _arguments(values, ("object", "dtype")).get("dtype")
                    dtype = None if given is None else _dtype_text(given)
        literal = _literal(inner, evaluate)
    if dtype is None and literal is not None:
        kinds = literal[1]
        dtype = ("builtin:float" if float in kinds else "builtin:int" if int in kinds
                 else "builtin:bool")
    shape: tuple[int, ...] | None = None
    if "shape" in args:
        value = evaluate(args["shape"])
        if isinstance(value, int) and not isinstance(value, bool):
            shape = (value,)
        elif isinstance(value, tuple) and value and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            shape = value
        else:
            return ConstArrayDecl(name, span, dtype, None,
                                  "its shape= is not a constant int or tuple of ints")
    elif literal is not None:
        shape = literal[0]
    problems = []
    if dtype is None:
        problems.append("its element type")
    if shape is None:
        problems.append("its shape")
    problem = None
    if problems:
        problem = (f"{' and '.join(problems)} cannot be read from the source without running "
                   "the module")
    return ConstArrayDecl(name, span, dtype, shape, problem)
