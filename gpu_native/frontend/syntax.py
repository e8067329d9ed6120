"""The syntax tree of kernel and device-function bodies, as parsed from libcst.

This is the untyped half of the kernel IR: small frozen records (:func:`~gpu_native.nodes.node`), each carrying the
:class:`~gpu_native.errors.SourceSpan` it came from.  The checker turns it into the typed IR in
:mod:`gpu_native.ir`.  Anything libcst can parse but the kernel language does not support never
reaches this tree: the front end refuses it with a ``TranspileError``.
"""

from __future__ import annotations

from ..errors import SourceSpan
from ..nodes import node

# --------------------------------------------------------------------------------------------
# Expressions


@node
class Expr:
    span: SourceSpan


@node
class Name(Expr):
    id: str


@node
class Num(Expr):
    value: int | float | bool


@node
class Str(Expr):
    value: str


@node
class BinOp(Expr):
    op: str  # "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"
    left: Expr
    right: Expr


@node
class UnaryOp(Expr):
    op: str  # "-", "+", "~", "not"
    operand: Expr


@node
class BoolOp(Expr):
    op: str  # "and", "or"
    values: tuple[Expr, ...]


@node
class Compare(Expr):
    ops: tuple[str, ...]  # "<", "<=", ">", ">=", "==", "!=", "is", "is not"
    operands: tuple[Expr, ...]  # len(ops) + 1


@node
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@node
class Keyword:
    name: str
    value: Expr
    span: SourceSpan


@node
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...] = ()


@node
class Attribute(Expr):
    value: Expr
    attr: str


@node
class Subscript(Expr):
    value: Expr
    index: tuple[Expr, ...]


@node
class Tuple(Expr):
    elts: tuple[Expr, ...]


# --------------------------------------------------------------------------------------------
# Statements


@node
class Stmt:
    span: SourceSpan


@node
class Assign(Stmt):
    targets: tuple[Expr, ...]  # Name, Subscript or Tuple of Names; chained `a = b = v` gives two
    value: Expr


@node
class AnnAssign(Stmt):
    target: Expr
    annotation: Expr
    value: Expr | None


@node
class AugAssign(Stmt):
    target: Expr
    op: str
    value: Expr


@node
class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@node
class While(Stmt):
    test: Expr
    body: tuple[Stmt, ...]


@node
class For(Stmt):
    target: Expr
    iter: Expr
    body: tuple[Stmt, ...]


@node
class Break(Stmt):
    pass


@node
class Continue(Stmt):
    pass


@node
class Return(Stmt):
    value: Expr | None


@node
class ExprStmt(Stmt):
    value: Expr


@node
class Assert(Stmt):
    test: Expr
    msg: Expr | None


@node
class With(Stmt):
    items: tuple[Expr, ...]
    body: tuple[Stmt, ...]


@node
class Pass(Stmt):
    pass


# --------------------------------------------------------------------------------------------
# Functions


@node
class Param:
    name: str
    annotation: Expr | None
    span: SourceSpan
    default: Expr | None = None  # device functions only: a compile-time constant


@node
class FunctionDef:
    """A ``@gpu_kernel`` or ``@gpu_device`` function as written."""

    name: str
    params: tuple[Param, ...]
    returns: Expr | None
    body: tuple[Stmt, ...]
    decorator: Call | Name | Attribute  # the gpu_kernel(...) / gpu_device decorator expression
    kind: str  # "kernel" or "device"
    span: SourceSpan  # the `def` line
    first_line: int  # first line of the first decorator
    last_line: int  # last line of the body
    decorator_line: int  # line of the gpu_native decorator
    docstring: str | None = None
    other_decorators: tuple[Expr, ...] = ()
