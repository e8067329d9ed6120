"""libcst → syntax tree, for one kernel or device function at a time.

:func:`convert_function` is handed a function that CPython has already parsed (see
:mod:`.source`) and :func:`~.source.check_depth` has bounded.  It parses just that function's
lines with libcst — the module's host code never reaches libcst — and converts it to
:mod:`.syntax`, every node with its span in the module's own lines and columns.
"""

from __future__ import annotations

import ast
import unicodedata
from collections.abc import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..errors import SourceSpan, TranspileError
from ..nodes import replace
from . import syntax as S
from .source import ast_span, too_deep

_BINOPS: dict[type, str] = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.LeftShift: "<<", cst.RightShift: ">>",
    cst.BitAnd: "&", cst.BitOr: "|", cst.BitXor: "^", cst.MatrixMultiply: "@",
}
_AUGOPS: dict[type, str] = {
    cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
    cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
    cst.LeftShiftAssign: "<<", cst.RightShiftAssign: ">>", cst.BitAndAssign: "&",
    cst.BitOrAssign: "|", cst.BitXorAssign: "^", cst.MatrixMultiplyAssign: "@",
}
_UNOPS: dict[type, str] = {cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~", cst.Not: "not"}
_CMPOPS: dict[type, str] = {
    cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
    cst.Equal: "==", cst.NotEqual: "!=", cst.Is: "is", cst.IsNot: "is not", cst.In: "in",
    cst.NotIn: "not in",
}

_SUPPORTED_HINT = (
    "kernels support assignments, augmented assignments, if/elif/else, while, "
    "for ... in range(...) or grid_stride(...), break, continue, return, assert, "
    "`with unsafe():` and calls of gpu_native intrinsics, math functions and @gpu_device functions"
)

# What each expression kernels refuse is called in the error, and what to write instead.
_UNSUPPORTED_EXPR: dict[type, tuple[str, str | None]] = {
    cst.Lambda: ("lambda expressions", "define a @gpu_device function and call it"),
    cst.List: ("list displays", "a per-thread array is local_array(T, n); a constant "
               "sequence is a tuple: for off in (16, 8, 4, 2, 1)"),
    cst.Dict: ("dict displays", None),
    cst.Set: ("set displays", None),
    cst.ListComp: ("list comprehensions", "fill a local_array(T, n) in a for loop"),
    cst.SetComp: ("set comprehensions", None),
    cst.DictComp: ("dict comprehensions", None),
    cst.GeneratorExp: ("generator expressions", "accumulate in a for loop over range()"),
    cst.Await: ("await expressions", None),
    cst.Yield: ("yield expressions", None),
    cst.NamedExpr: ("assignment expressions (:=)", "assign the value on its own line first"),
    cst.FormattedString: ("f-strings", "print() takes the values as arguments: "
                          "print(\"x =\", x)"),
    cst.Ellipsis: ("`...`", "an empty body is `pass`"),
    cst.Imaginary: ("imaginary literals (`1j`)", "the imaginary unit is complex64(0, 1) (or "
                    "complex128(0, 1))"),
    cst.StarredElement: ("starred expressions", None),
}

_NESTED_DEF_HINT = ("define it at module level as a @gpu_device function (it may take the "
                    "values it needs as parameters) and call it from the kernel")

_UNSUPPORTED_STMT: dict[type, str] = {
    cst.Try: "try statements",
    cst.ClassDef: "class definitions",
    cst.FunctionDef: "nested function definitions",
    cst.Raise: "raise (use `assert cond, \"message\"`)",
    cst.Import: "import statements",
    cst.ImportFrom: "import statements",
    cst.Global: "global statements",
    cst.Nonlocal: "nonlocal statements",
    cst.Del: "del statements",
    cst.Match: "match statements",
}



class _Converter:
    """Converts libcst nodes of one module to the syntax tree, with source spans."""

    def __init__(self, path: str, lines: list[str], positions, line_offset: int = 0):
        self.path = path
        self.lines = lines
        self.positions = positions
        self.line_offset = line_offset  # the parsed snippet's line 1 is the module's line_offset + 1
        self.allow_lists = False  # decorator options may use lists: specializations=[f32, f64]

    # ---- spans

    def span(self, node: cst.CSTNode) -> SourceSpan:
        rng = self.positions.get(node)
        if rng is None:
            return SourceSpan(self.path, 0, 0)
        end_col = rng.end.column if rng.end.line == rng.start.line else None
        line = rng.start.line + self.line_offset
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceSpan(self.path, line, rng.start.column, end_col, text)

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        """The module line where ``node`` starts (or ends)."""
        rng = self.positions[node]
        return (rng.end if end else rng.start).line + self.line_offset

    def fail(self, node: cst.CSTNode, message: str, hint: str | None = None) -> TranspileError:
        return TranspileError(message, self.span(node), hint)

    # ---- expressions

    def expr(self, node: cst.BaseExpression) -> S.Expr:
        if isinstance(node, cst.List) and self.allow_lists:
            return S.Tuple(self.span(node), tuple(self.expr(e.value) for e in node.elements))
        handler = self._expr_handlers.get(type(node))
        if handler is None:
            what, hint = _UNSUPPORTED_EXPR.get(
                type(node), (f"`{type(node).__name__}` expressions", _SUPPORTED_HINT))
            raise self.fail(node, f"{what} are not supported in kernels", hint)
        return handler(self, node)

    def _name(self, node: cst.Name) -> S.Expr:
        if node.value in ("True", "False"):
            return S.Num(self.span(node), node.value == "True")
        return S.Name(self.span(node), identifier(node))

    def _integer(self, node: cst.Integer) -> S.Expr:
        return S.Num(self.span(node), int(node.evaluated_value))

    def _float(self, node: cst.Float) -> S.Expr:
        return S.Num(self.span(node), float(node.evaluated_value))

    def _string(self, node: cst.SimpleString | cst.ConcatenatedString) -> S.Expr:
        value = node.evaluated_value
        if not isinstance(value, str):
            raise self.fail(node, "bytes literals are not supported in kernels")
        return S.Str(self.span(node), value)

    def _binop(self, node: cst.BinaryOperation) -> S.Expr:
        op = _BINOPS[type(node.operator)]
        if op == "@":
            raise self.fail(node, "the matrix-multiply operator @ is not supported in kernels")
        return S.BinOp(self.span(node), op, self.expr(node.left), self.expr(node.right))

    def _unop(self, node: cst.UnaryOperation) -> S.Expr:
        return S.UnaryOp(self.span(node), _UNOPS[type(node.operator)], self.expr(node.expression))

    def _boolop(self, node: cst.BooleanOperation) -> S.Expr:
        op = "and" if isinstance(node.operator, cst.And) else "or"
        values: list[S.Expr] = []
        for side in (node.left, node.right):
            converted = self.expr(side)
            # Flatten `a and b and c` (libcst nests them) unless parenthesised differently.
            if isinstance(converted, S.BoolOp) and converted.op == op and not side.lpar:
                values.extend(converted.values)
            else:
                values.append(converted)
        return S.BoolOp(self.span(node), op, tuple(values))

    def _compare(self, node: cst.Comparison) -> S.Expr:
        ops = []
        operands = [self.expr(node.left)]
        for target in node.comparisons:
            ops.append(_CMPOPS[type(target.operator)])
            operands.append(self.expr(target.comparator))
        return S.Compare(self.span(node), tuple(ops), tuple(operands))

    def _ifexp(self, node: cst.IfExp) -> S.Expr:
        return S.IfExp(self.span(node), self.expr(node.test), self.expr(node.body),
                       self.expr(node.orelse))

    def _call(self, node: cst.Call) -> S.Expr:
        args: list[S.Expr] = []
        keywords: list[S.Keyword] = []
        for arg in node.args:
            if arg.star:
                raise self.fail(arg, f"`{arg.star}` arguments are not supported in kernels")
            if arg.keyword is not None:
                keywords.append(S.Keyword(identifier(arg.keyword), self.expr(arg.value),
                                          self.span(arg)))
            else:
                if keywords:
                    raise self.fail(arg, "positional argument after keyword argument")
                args.append(self.expr(arg.value))
        return S.Call(self.span(node), self.expr(node.func), tuple(args), tuple(keywords))

    def _attribute(self, node: cst.Attribute) -> S.Expr:
        return S.Attribute(self.span(node), self.expr(node.value), identifier(node.attr))

    def _subscript(self, node: cst.Subscript) -> S.Expr:
        index: list[S.Expr] = []
        for element in node.slice:
            if not isinstance(element.slice, cst.Index):
                raise self.fail(
                    element, "slices (a[i:j]) are not supported inside kernels",
                    "index one element at a time, e.g. a[i]; slice arrays on the host before the launch",
                )
            value = element.slice.value
            if isinstance(value, cst.Tuple) and len(node.slice) == 1:
                index.extend(self.expr(e.value) for e in value.elements)
            else:
                index.append(self.expr(value))
        return S.Subscript(self.span(node), self.expr(node.value), tuple(index))

    def _tuple(self, node: cst.Tuple) -> S.Expr:
        elts = []
        for element in node.elements:
            if isinstance(element, cst.StarredElement):
                raise self.fail(element, "starred expressions are not supported in kernels")
            elts.append(self.expr(element.value))
        return S.Tuple(self.span(node), tuple(elts))

    _expr_handlers: dict[type, Callable] = {
        cst.Name: _name,
        cst.Integer: _integer,
        cst.Float: _float,
        cst.SimpleString: _string,
        cst.ConcatenatedString: _string,
        cst.BinaryOperation: _binop,
        cst.UnaryOperation: _unop,
        cst.BooleanOperation: _boolop,
        cst.Comparison: _compare,
        cst.IfExp: _ifexp,
        cst.Call: _call,
        cst.Attribute: _attribute,
        cst.Subscript: _subscript,
        cst.Tuple: _tuple,
    }

    # ---- statements

    def block(self, node: cst.BaseSuite) -> tuple[S.Stmt, ...]:
        out: list[S.Stmt] = []
        if isinstance(node, cst.SimpleStatementSuite):
            for small in node.body:
                out.extend(self.small_stmt(small))
            return tuple(out)
        assert isinstance(node, cst.IndentedBlock)  # libcst's other suite
        for stmt in node.body:
            out.extend(self.stmt(stmt))
        return tuple(out)

    def stmt(self, node: cst.BaseStatement) -> list[S.Stmt]:
        if isinstance(node, cst.SimpleStatementLine):
            out: list[S.Stmt] = []
            for small in node.body:
                out.extend(self.small_stmt(small))
            return out
        handler = self._compound_handlers.get(type(node))
        if handler is None:
            what = _UNSUPPORTED_STMT.get(type(node), f"`{type(node).__name__}` statements")
            raise self.fail(node, f"{what} are not supported in kernels",
                            _NESTED_DEF_HINT if isinstance(node, cst.FunctionDef)
                            else _SUPPORTED_HINT)
        return [handler(self, node)]

    def _if(self, node: cst.If) -> S.Stmt:
        orelse: tuple[S.Stmt, ...] = ()
        if isinstance(node.orelse, cst.If):
            orelse = (self._if(node.orelse),)
        elif isinstance(node.orelse, cst.Else):
            orelse = self.block(node.orelse.body)
        return S.If(self.span(node), self.expr(node.test), self.block(node.body), orelse)

    def _while(self, node: cst.While) -> S.Stmt:
        if node.orelse is not None:
            raise self.fail(node.orelse, "`while ... else` is not supported in kernels")
        return S.While(self.span(node), self.expr(node.test), self.block(node.body))

    def _for(self, node: cst.For) -> S.Stmt:
        if node.orelse is not None:
            raise self.fail(node.orelse, "`for ... else` is not supported in kernels")
        if node.asynchronous is not None:
            raise self.fail(node, "`async for` is not supported in kernels")
        return S.For(self.span(node), self.expr(node.target), self.expr(node.iter),
                     self.block(node.body))

    def _with(self, node: cst.With) -> S.Stmt:
        if node.asynchronous is not None:
            raise self.fail(node, "`async with` is not supported in kernels")
        items = []
        for item in node.items:
            if item.asname is not None:
                raise self.fail(item, "`with ... as name` is not supported in kernels",
                                "write `with unsafe():`")
            items.append(self.expr(item.item))
        return S.With(self.span(node), tuple(items), self.block(node.body))

    _compound_handlers: dict[type, Callable] = {
        cst.If: _if,
        cst.While: _while,
        cst.For: _for,
        cst.With: _with,
    }

    def small_stmt(self, node: cst.BaseSmallStatement) -> list[S.Stmt]:
        span = self.span(node)
        if isinstance(node, cst.Assign):
            targets = tuple(self.expr(t.target) for t in node.targets)
            return [S.Assign(span, targets, self.expr(node.value))]
        if isinstance(node, cst.AnnAssign):
            value = self.expr(node.value) if node.value is not None else None
            return [S.AnnAssign(span, self.expr(node.target),
                                self.expr(node.annotation.annotation), value)]
        if isinstance(node, cst.AugAssign):
            op = _AUGOPS[type(node.operator)]
            if op == "@":
                raise self.fail(node, "the matrix-multiply operator @ is not supported in kernels")
            return [S.AugAssign(span, self.expr(node.target), op, self.expr(node.value))]
        if isinstance(node, cst.Expr):
            return [S.ExprStmt(span, self.expr(node.value))]
        if isinstance(node, cst.Return):
            return [S.Return(span, self.expr(node.value) if node.value is not None else None)]
        if isinstance(node, cst.Break):
            return [S.Break(span)]
        if isinstance(node, cst.Continue):
            return [S.Continue(span)]
        if isinstance(node, cst.Pass):
            return [S.Pass(span)]
        if isinstance(node, cst.Assert):
            msg = self.expr(node.msg) if node.msg is not None else None
            return [S.Assert(span, self.expr(node.test), msg)]
        what = _UNSUPPORTED_STMT.get(type(node), f"`{type(node).__name__}` statements")
        raise self.fail(node, f"{what} are not supported in kernels", _SUPPORTED_HINT)




def identifier(name: cst.Name) -> str:
    """A name as Python reads it: CPython folds identifiers to NFKC (``ｘ`` and ``x``, ``ﬁ``
    and ``fi`` are one name), and so does the module scan, which reads CPython's tree; libcst
    keeps the spelling, so a kernel would otherwise see two variables where Python sees one."""
    text = name.value
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def convert_function(fn: ast.FunctionDef | ast.AsyncFunctionDef, kind: str, decorator: int,
                     path: str, lines: list[str]) -> S.FunctionDef:
    """Convert the ``kind`` ("kernel" or "device") function ``fn`` of a module.

    ``fn`` is CPython's tree of it, ``decorator`` the index of its gpu_native decorator and
    ``lines`` the module's lines (without line endings).  Only the function's own lines are
    parsed with libcst; an indented (nested) function is parsed under an ``if 1:`` line so
    that every column stays the module's.
    """
    first = decorated_first_line(fn, lines)
    last = fn.end_lineno or fn.lineno
    body = "\n".join(lines[first - 1:last]) + "\n"
    indented = lines[first - 1][:1] in (" ", "\t", "\f")
    text = "if 1:\n" + body if indented else body
    offset = first - 2 if indented else first - 1
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # CPython accepted this function; libcst does not know its syntax yet.
        line = exc.raw_line + offset
        shown = lines[line - 1] if 0 < line <= len(lines) else ""
        raise TranspileError(f"syntax error: {exc.message}",
                             SourceSpan(path, line, exc.raw_column, None, shown)) from None
    node: cst.CSTNode = module.body[0]
    if indented:
        assert isinstance(node, cst.If) and isinstance(node.body, cst.IndentedBlock), node
        node = node.body.body[0]  # the function under the `if 1:` line
    assert isinstance(node, cst.FunctionDef), node
    try:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        conv = _Converter(path, lines, positions, offset)
        return _function(conv, node, kind, node.decorators[decorator])
    except RecursionError:  # check_depth bounds this; a backstop, never a traceback
        raise too_deep(f"{kind} function '{fn.name}'", ast_span(fn, path, lines)) from None


def decorated_first_line(fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    """The line of a function's first ``@`` (CPython's tree places a decorator at its
    expression, which a backslash may have moved to a later line), or of its ``def``."""
    if not fn.decorator_list:
        return fn.lineno
    dec = fn.decorator_list[0]
    line = dec.lineno
    text = lines[line - 1].encode("utf-8")[:dec.col_offset].decode("utf-8", errors="replace")
    while True:
        stripped = text.rstrip(" \t\f")
        if stripped.endswith("@") or line <= 1 or stripped:
            return line
        previous = lines[line - 2]
        if not previous.endswith("\\"):
            return line
        line -= 1
        text = previous[:-1]


def _first_character(span: SourceSpan) -> SourceSpan:
    """``span`` narrowed to its first character (the `*` of a ParamStar, which owns its comma)."""
    return replace(span, end_col=span.col + 1)


def _function(conv: _Converter, node: cst.FunctionDef, kind: str,
              dec: cst.Decorator) -> S.FunctionDef:
    if node.asynchronous is not None:
        raise conv.fail(node, "a kernel cannot be `async`")
    params: list[S.Param] = []
    p = node.params
    passed = "a kernel's parameters are passed by position" if kind == "kernel" else \
        "a call may still pass any parameter by keyword"
    if isinstance(p.star_arg, cst.ParamStar):  # a bare `*`: the parameters after it
        raise TranspileError(f"keyword-only parameters are not supported in {kind} functions",
                             _first_character(conv.span(p.star_arg)),
                             f"drop the `*`: {passed}")
    if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
        star = p.star_arg if isinstance(p.star_arg, cst.Param) else p.star_kwarg
        assert star is not None  # one of the two is there
        raise conv.fail(star, f"{kind} functions cannot take *args or **kwargs")
    if p.posonly_ind is not None and not isinstance(p.posonly_ind, cst.MaybeSentinel):
        raise TranspileError(f"positional-only parameters (`/`) are not supported in {kind} "
                             "functions", _first_character(conv.span(p.posonly_ind)),
                             f"drop the `/`: {passed}")
    for param in p.params:
        if param.default is not None and kind == "kernel":
            raise conv.fail(param, "parameters of kernels cannot have default values",
                            "device functions can: `def f(x: f32, scale: f32 = 2.0)`")
        annotation = param.annotation.annotation if param.annotation is not None else None
        default = conv.expr(param.default) if param.default is not None else None
        params.append(S.Param(identifier(param.name),
                              conv.expr(annotation) if annotation is not None else None,
                              conv.span(param), default))
    body_nodes = list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else None
    docstring = node.get_docstring(clean=True)
    if body_nodes is not None and docstring is not None:
        # Skip the docstring statement: it documents, it does not run.
        body = conv.block(node.body.with_changes(body=body_nodes[1:]))
    else:
        body = conv.block(node.body)
    returns = conv.expr(node.returns.annotation) if node.returns is not None else None
    first = conv.line(node.decorators[0]) if node.decorators else conv.line(node)
    conv.allow_lists = True
    try:
        dec_expr = conv.expr(dec.decorator)
    finally:
        conv.allow_lists = False
    # The scan found this decorator to name gpu_kernel / gpu_device: a (dotted) name or a call.
    assert isinstance(dec_expr, (S.Call, S.Name, S.Attribute)), dec_expr
    others = tuple(conv.expr(d.decorator) for d in node.decorators if d is not dec)
    if kind == "kernel":
        # A kernel in a class body may be a staticmethod: a kernel object is no descriptor, so
        # the class and its instances give the same kernel with or without it, and the rewrite
        # drops it with the other decorator lines.
        others = tuple(o for o in others
                       if not (isinstance(o, S.Name) and o.id == "staticmethod"))
    fn = S.FunctionDef(
        name=identifier(node.name),
        params=tuple(params),
        returns=returns,
        body=body,
        decorator=dec_expr,
        kind=kind,
        span=conv.span(node.name),
        first_line=first,
        last_line=conv.line(node, end=True),
        decorator_line=conv.line(dec),
        docstring=docstring,
        other_decorators=others,
    )
    if others:
        raise TranspileError(
            f"{kind} function '{fn.name}' has other decorators besides "
            f"@{'gpu_kernel' if kind == 'kernel' else 'gpu_device'}",
            others[0].span, "remove them: the kernel is replaced by its launcher"
            + (" (@staticmethod is allowed)" if kind == "kernel" else ""),
        )
    return fn
