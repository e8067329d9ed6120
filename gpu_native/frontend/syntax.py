"""The syntax tree of kernel and device-function bodies, as parsed from libcst.

This is the untyped half of the kernel IR: small frozen dataclasses, each carrying the
:class:`~gpu_native.errors.SourceSpan` it came from.  The checker turns it into the typed IR in
:mod:`gpu_native.ir`.  Anything libcst can parse but the kernel language does not support never
reaches this tree: the front end refuses it with a ``TranspileError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import SourceSpan

# --------------------------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class Expr:
    span: SourceSpan


@dataclass(frozen=True)
class Name(Expr):
    id: str


@dataclass(frozen=True)
class Num(Expr):
    value: int | float | bool


@dataclass(frozen=True)
class Str(Expr):
    value: str


@dataclass(frozen=True)
class BinOp(Expr):
    op: str  # "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp(Expr):
    op: str  # "-", "+", "~", "not"
    operand: Expr


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # "and", "or"
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Compare(Expr):
    ops: tuple[str, ...]  # "<", "<=", ">", ">=", "==", "!=", "is", "is not"
    operands: tuple[Expr, ...]  # len(ops) + 1


@dataclass(frozen=True)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Keyword:
    name: str
    value: Expr
    span: SourceSpan


@dataclass(frozen=True)
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...] = ()


@dataclass(frozen=True)
class Attribute(Expr):
    value: Expr
    attr: str


@dataclass(frozen=True)
class Subscript(Expr):
    value: Expr
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class Tuple(Expr):
    elts: tuple[Expr, ...]


# --------------------------------------------------------------------------------------------
# Statements


@dataclass(frozen=True)
class Stmt:
    span: SourceSpan


@dataclass(frozen=True)
class Assign(Stmt):
    targets: tuple[Expr, ...]  # Name, Subscript or Tuple of Names; chained `a = b = v` gives two
    value: Expr


@dataclass(frozen=True)
class AnnAssign(Stmt):
    target: Expr
    annotation: Expr
    value: Expr | None


@dataclass(frozen=True)
class AugAssign(Stmt):
    target: Expr
    op: str
    value: Expr


@dataclass(frozen=True)
class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class While(Stmt):
    test: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Stmt):
    target: Expr
    iter: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break(Stmt):
    pass


@dataclass(frozen=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True)
class Return(Stmt):
    value: Expr | None


@dataclass(frozen=True)
class ExprStmt(Stmt):
    value: Expr


@dataclass(frozen=True)
class Assert(Stmt):
    test: Expr
    msg: Expr | None


@dataclass(frozen=True)
class With(Stmt):
    items: tuple[Expr, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Pass(Stmt):
    pass


# --------------------------------------------------------------------------------------------
# Functions


@dataclass(frozen=True)
class Param:
    name: str
    annotation: Expr | None
    span: SourceSpan


@dataclass(frozen=True)
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
    other_decorators: tuple[Expr, ...] = field(default=())
