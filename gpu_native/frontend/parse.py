"""libcst → syntax tree: find kernels and device functions in a module, without running it.

:func:`scan_module` parses a module's source once and returns a :class:`ModuleScan` holding the
module's imports, its constants (evaluated statically: a module that defines kernels is never
executed by the transpiler), its ``TypeVar`` declarations, and every ``@gpu_kernel`` /
``@gpu_device`` function converted to :mod:`.syntax`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..errors import SourceSpan, TranspileError
from ..nodes import Factory, node
from . import syntax as S

# Names under which gpu_native exports the decorators.
KERNEL_DECORATOR = "gpu_kernel"
DEVICE_DECORATOR = "gpu_device"
PACKAGE = "gpu_native"

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

_UNSUPPORTED_EXPR: dict[type, str] = {
    cst.Lambda: "lambda expressions",
    cst.List: "list displays",
    cst.Dict: "dict displays",
    cst.Set: "set displays",
    cst.ListComp: "list comprehensions",
    cst.SetComp: "set comprehensions",
    cst.DictComp: "dict comprehensions",
    cst.GeneratorExp: "generator expressions",
    cst.Await: "await",
    cst.Yield: "yield",
    cst.NamedExpr: "assignment expressions (:=)",
    cst.FormattedString: "f-strings",
    cst.Ellipsis: "`...`",
    cst.Imaginary: "complex numbers",
    cst.StarredElement: "starred expressions",
}

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


@node
class ImportedName:
    """A module-level name bound by an import: ``module`` and, for ``from`` imports, ``attr``."""

    module: str
    attr: str | None
    span: SourceSpan


@node(frozen=False)
class ModuleScan:
    """What the transpiler knows about one module, found without executing it."""

    path: str
    module_name: str
    source: str
    lines: list[str]
    imports: dict[str, ImportedName] = Factory(dict)
    constants: dict[str, object] = Factory(dict)
    constant_spans: dict[str, SourceSpan] = Factory(dict)
    typevars: dict[str, tuple[str, ...]] = Factory(dict)
    functions: list[S.FunctionDef] = Factory(list)
    host_names: dict[str, str] = Factory(dict)  # name -> "function" / "class" / ...
    reassigned: set[str] = Factory(set)
    hinted: set[str] = Factory(set)  # seeded from outside; the source may redefine

    def function(self, name: str) -> S.FunctionDef | None:
        for fn in self.functions:
            if fn.name == name:
                return fn
        return None


def module_name_for_path(path: str) -> str:
    """Guess the dotted module name of a file by walking up through packages (``__init__.py``)."""
    path = os.path.abspath(path)
    directory, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.exists(os.path.join(directory, "__init__.py")):
        directory, pkg = os.path.split(directory)
        parts.insert(0, pkg)
    return ".".join(parts) or stem


def resolve_relative(module_name: str, is_package: bool, level: int, target: str | None) -> str:
    """Resolve ``from ..x import y`` inside ``module_name`` to an absolute module name."""
    if level == 0:
        return target or ""
    parts = module_name.split(".")
    base = parts if is_package else parts[:-1]
    if level - 1 > len(base):
        return target or ""
    base = base[: len(base) - (level - 1)]
    if target:
        base = [*base, target]
    return ".".join(base)


class _Converter:
    """Converts libcst nodes of one module to the syntax tree, with source spans."""

    def __init__(self, path: str, lines: list[str], positions):
        self.path = path
        self.lines = lines
        self.positions = positions
        self.allow_lists = False  # decorator options may use lists: specializations=[f32, f64]

    # ---- spans

    def span(self, node: cst.CSTNode) -> SourceSpan:
        rng = self.positions.get(node)
        if rng is None:
            return SourceSpan(self.path, 0, 0)
        line = rng.start.line
        end_col = rng.end.column if rng.end.line == line else None
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceSpan(self.path, line, rng.start.column, end_col, text)

    def fail(self, node: cst.CSTNode, message: str, hint: str | None = None) -> TranspileError:
        return TranspileError(message, self.span(node), hint)

    # ---- expressions

    def expr(self, node: cst.BaseExpression) -> S.Expr:
        if isinstance(node, cst.List) and self.allow_lists:
            return S.Tuple(self.span(node), tuple(self.expr(e.value) for e in node.elements))
        handler = self._expr_handlers.get(type(node))
        if handler is None:
            what = _UNSUPPORTED_EXPR.get(type(node), f"`{type(node).__name__}` expressions")
            raise self.fail(node, f"{what} are not supported in kernels", _SUPPORTED_HINT)
        return handler(self, node)

    def _name(self, node: cst.Name) -> S.Expr:
        if node.value in ("True", "False"):
            return S.Num(self.span(node), node.value == "True")
        return S.Name(self.span(node), node.value)

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
                keywords.append(S.Keyword(arg.keyword.value, self.expr(arg.value), self.span(arg)))
            else:
                if keywords:
                    raise self.fail(arg, "positional argument after keyword argument")
                args.append(self.expr(arg.value))
        return S.Call(self.span(node), self.expr(node.func), tuple(args), tuple(keywords))

    def _attribute(self, node: cst.Attribute) -> S.Expr:
        return S.Attribute(self.span(node), self.expr(node.value), node.attr.value)

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
            raise self.fail(node, f"{what} are not supported in kernels", _SUPPORTED_HINT)
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


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


class _Scanner:
    """Walks a module's top level and every function body for gpu_native decorators."""

    def __init__(self, scan: ModuleScan, conv: _Converter, is_package: bool):
        self.scan = scan
        self.conv = conv
        self.is_package = is_package

    def run(self, module: cst.Module) -> None:
        for stmt in module.body:
            self.top_level(stmt)
        # Kernels may also be defined inside functions (a test defining its kernel, say).
        for stmt in module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and not self._gn_decorator(stmt):
                self.nested(stmt.body)
            elif isinstance(stmt, (cst.If, cst.Try, cst.With)):
                self.nested(stmt)

    def nested(self, node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, cst.FunctionDef) and self._gn_decorator(child):
                self.function(child)
            elif isinstance(child, cst.CSTNode):
                self.nested(child)

    # ---- what a decorator refers to

    def resolves_to(self, node: cst.BaseExpression, name: str) -> bool:
        dotted = _dotted(node)
        if dotted is None:
            return False
        head, _, rest = dotted.partition(".")
        imported = self.scan.imports.get(head)
        if imported is None:
            return False
        if not rest:
            return imported.module == PACKAGE and imported.attr == name
        if imported.attr is None:
            full = f"{imported.module}.{rest}"
        else:
            full = f"{imported.module}.{imported.attr}.{rest}"
        return full == f"{PACKAGE}.{name}"

    def _gn_decorator(self, fn: cst.FunctionDef) -> tuple[str, cst.Decorator] | None:
        for dec in fn.decorators:
            expr = dec.decorator
            callee = expr.func if isinstance(expr, cst.Call) else expr
            if self.resolves_to(callee, KERNEL_DECORATOR):
                return "kernel", dec
            if self.resolves_to(callee, DEVICE_DECORATOR):
                return "device", dec
        return None

    # ---- top level

    def top_level(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.small(small)
        elif isinstance(stmt, cst.FunctionDef):
            self._bind(stmt.name.value, "function", stmt)
            if self._gn_decorator(stmt):
                self.function(stmt)
        elif isinstance(stmt, cst.ClassDef):
            self._bind(stmt.name.value, "class", stmt)
        elif isinstance(stmt, (cst.If, cst.Try)):
            # Imports under `if TYPE_CHECKING:` or `try:` still tell us what names mean.
            for child in stmt.children:
                if isinstance(child, cst.BaseSuite):
                    for inner in getattr(child, "body", ()):
                        if isinstance(inner, cst.SimpleStatementLine):
                            for small in inner.body:
                                if isinstance(small, (cst.Import, cst.ImportFrom)):
                                    self.small(small)

    def _bind(self, name: str, kind: str, node: cst.CSTNode) -> None:
        if name in self.scan.hinted:
            self.scan.hinted.discard(name)
            self.scan.constants.pop(name, None)
            self.scan.imports.pop(name, None)
        elif name in self.scan.host_names or name in self.scan.constants:
            self.scan.reassigned.add(name)
        self.scan.host_names.setdefault(name, kind)

    def small(self, node: cst.BaseSmallStatement) -> None:
        scan = self.scan
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _dotted(alias.name) or ""
                if alias.asname is not None:
                    local = _dotted(alias.asname.name) or full
                    scan.imports[local] = ImportedName(full, None, self.conv.span(alias))
                else:
                    head = full.split(".")[0]
                    scan.imports[head] = ImportedName(head, None, self.conv.span(alias))
        elif isinstance(node, cst.ImportFrom):
            target = _dotted(node.module) if node.module is not None else None
            module = resolve_relative(scan.module_name, self.is_package, len(node.relative), target)
            if isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                attr = _dotted(alias.name) or ""
                local = attr
                if alias.asname is not None:
                    local = _dotted(alias.asname.name) or attr
                scan.imports[local] = ImportedName(module, attr, self.conv.span(alias))
        elif isinstance(node, (cst.Assign, cst.AnnAssign)):
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            else:
                targets = [node.target]
            value = node.value
            for target in targets:
                if not isinstance(target, cst.Name):
                    continue
                name = target.value
                if name in scan.hinted:
                    scan.hinted.discard(name)
                    scan.constants.pop(name, None)
                    scan.imports.pop(name, None)
                elif name in scan.constants or name in scan.host_names or name in scan.typevars:
                    scan.reassigned.add(name)
                if value is None:
                    continue
                tv = self._typevar(value)
                if tv is not None:
                    scan.typevars[name] = tv
                    continue
                const = _static_value(value, scan.constants)
                if const is not _NOT_CONSTANT:
                    scan.constants[name] = const
                    scan.constant_spans[name] = self.conv.span(target)
                else:
                    scan.host_names.setdefault(name, "variable")
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            scan.reassigned.add(node.target.value)

    def _typevar(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        if not isinstance(value, cst.Call):
            return None
        callee = _dotted(value.func)
        if callee is None:
            return None
        head, _, rest = callee.partition(".")
        imported = self.scan.imports.get(head)
        if imported is None or imported.module != "typing":
            return None
        from_import = not rest and imported.attr == "TypeVar"
        module_import = rest == "TypeVar" and imported.attr is None
        if not (from_import or module_import):
            return None
        names: list[str] = []
        for arg in value.args[1:]:
            if arg.keyword is not None:
                continue
            dotted = _dotted(arg.value)
            if dotted is None:
                continue
            names.append(dotted.split(".")[-1])
        return tuple(names)

    # ---- functions

    def function(self, node: cst.FunctionDef) -> None:
        found = self._gn_decorator(node)
        assert found is not None
        kind, dec = found
        conv = self.conv
        if node.asynchronous is not None:
            raise conv.fail(node, "a kernel cannot be `async`")
        params: list[S.Param] = []
        p = node.params
        if p.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or p.star_kwarg is not None:
            raise conv.fail(node.name, f"{kind} functions cannot take *args or **kwargs")
        if p.kwonly_params or p.posonly_params:
            raise conv.fail(node.name, f"{kind} functions take plain positional parameters only")
        for param in p.params:
            if param.default is not None:
                raise conv.fail(param, "parameters of kernels cannot have default values")
            annotation = param.annotation.annotation if param.annotation is not None else None
            params.append(S.Param(param.name.value,
                                  conv.expr(annotation) if annotation is not None else None,
                                  conv.span(param)))
        body_nodes = list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else None
        docstring = node.get_docstring(clean=True)
        if body_nodes is not None and docstring is not None:
            # Skip the docstring statement: it documents, it does not run.
            body = conv.block(node.body.with_changes(body=body_nodes[1:]))
        else:
            body = conv.block(node.body)
        returns = conv.expr(node.returns.annotation) if node.returns is not None else None
        positions = conv.positions
        first = positions[node.decorators[0]].start.line if node.decorators else positions[node].start.line
        conv.allow_lists = True
        try:
            dec_expr = conv.expr(dec.decorator)
        finally:
            conv.allow_lists = False
        others = tuple(conv.expr(d.decorator) for d in node.decorators if d is not dec)
        fn = S.FunctionDef(
            name=node.name.value,
            params=tuple(params),
            returns=returns,
            body=body,
            decorator=dec_expr,  # type: ignore[arg-type]
            kind=kind,
            span=conv.span(node.name),
            first_line=first,
            last_line=positions[node].end.line,
            decorator_line=positions[dec].start.line,
            docstring=docstring,
            other_decorators=others,
        )
        if others:
            raise TranspileError(
                f"{kind} function '{fn.name}' has other decorators besides @{'gpu_kernel' if kind == 'kernel' else 'gpu_device'}",
                others[0].span, "remove them: the kernel is replaced by its launcher",
            )
        self.scan.functions.append(fn)


class _NotConstant:
    pass


_NOT_CONSTANT = _NotConstant()


def _static_value(node: cst.BaseExpression, env: dict[str, object]) -> object:
    """Evaluate a module-level constant expression without running anything; or _NOT_CONSTANT."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Float):
        return float(node.evaluated_value)
    if isinstance(node, cst.Name):
        if node.value in ("True", "False"):
            return node.value == "True"
        return env.get(node.value, _NOT_CONSTANT)
    if isinstance(node, cst.UnaryOperation):
        v = _static_value(node.expression, env)
        if isinstance(v, (_NotConstant, tuple)):
            return _NOT_CONSTANT
        op = _UNOPS[type(node.operator)]
        try:
            return {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x,
                    "not": lambda x: not x}[op](v)
        except TypeError:
            return _NOT_CONSTANT
    if isinstance(node, cst.BinaryOperation):
        a = _static_value(node.left, env)
        b = _static_value(node.right, env)
        if isinstance(a, (_NotConstant, tuple)) or isinstance(b, (_NotConstant, tuple)):
            return _NOT_CONSTANT
        # Kernel constants fit 64 bits: refuse to fold huge integers (hostile source could
        # otherwise make the transpiler compute numbers with billions of digits).
        if any(isinstance(v, int) and v.bit_length() > 128 for v in (a, b)):
            return _NOT_CONSTANT
        op = _BINOPS[type(node.operator)]
        try:
            if op == "**" and isinstance(b, int) and abs(b) > 256:
                return _NOT_CONSTANT
            if op in ("<<",) and isinstance(b, int) and b > 256:
                return _NOT_CONSTANT
            return _FOLD[op](a, b)
        except (ArithmeticError, TypeError, ValueError):
            return _NOT_CONSTANT
    if isinstance(node, cst.Tuple):
        values = tuple(_static_value(e.value, env) for e in node.elements
                       if isinstance(e, cst.Element))
        if any(isinstance(v, _NotConstant) for v in values):
            return _NOT_CONSTANT
        return values
    return _NOT_CONSTANT


_FOLD: dict[str, Callable[[object, object], object]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}


def parse_module_source(source: str, path: str) -> tuple[cst.Module, dict]:
    """Parse ``source`` with libcst; raise ``TranspileError`` (with a location) on syntax errors."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        lines = source.splitlines()
        line = exc.raw_line
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        raise TranspileError(f"syntax error: {exc.message}",
                             SourceSpan(path, line, exc.raw_column, None, text)) from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return module, positions


def scan_module(source: str, path: str, module_name: str | None = None,
                hints: dict | None = None) -> ModuleScan:
    """Parse a module and collect everything the transpiler needs from it (see :class:`ModuleScan`).

    ``hints`` seeds names defined outside this source (a notebook's earlier cells):
    ``{"imports": {name: (module, attr)}, "constants": {name: value}}``; the source's own
    definitions take precedence.
    """
    module, positions = parse_module_source(source, path)
    is_package = os.path.basename(path) == "__init__.py"
    if module_name is None:
        module_name = module_name_for_path(path)
    lines = source.splitlines()
    scan = ModuleScan(path=path, module_name=module_name, source=source, lines=lines)
    if hints:
        span = SourceSpan(path, 0)
        for name, (mod, attr) in hints.get("imports", {}).items():
            scan.imports[name] = ImportedName(mod, attr, span)
        scan.constants.update(hints.get("constants", {}))
        scan.hinted = set(hints.get("imports", {})) | set(hints.get("constants", {}))
    conv = _Converter(path, lines, positions)
    _Scanner(scan, conv, is_package).run(module)
    return scan


def has_gpu_decorators(source: str | bytes) -> bool:
    """The hook's cheap test: could this source define kernels?  (A byte search, no parsing.)"""
    if isinstance(source, str):
        return KERNEL_DECORATOR in source or DEVICE_DECORATOR in source
    return KERNEL_DECORATOR.encode() in source or DEVICE_DECORATOR.encode() in source
