"""Module scan: find kernels and device functions in a module, without running it.

:func:`scan_module` parses a module once with CPython's parser (see :mod:`.source`) and returns a
:class:`ModuleScan` holding the module's imports, its constants (evaluated statically: a module
that defines kernels is never executed by the transpiler), its ``TypeVar`` declarations, and
every ``@gpu_kernel`` / ``@gpu_device`` function converted to :mod:`.syntax` (by
:mod:`.convert`, which parses just that function with libcst).

The scan looks at the module's statements only, with an explicit stack: host code — a long sum,
a deeply nested literal, whatever CPython accepts — is never walked recursively.
"""

from __future__ import annotations

import ast
import os
import symtable
import sys
from collections.abc import Callable
from typing import Any

from ..errors import SourceSpan
from ..nodes import Factory, node
from . import folding
from . import syntax as S
from .bindings import Binding, after_star, conflicts, module_bindings, pairs_of
from .constarrays import ConstArrayDecl, const_array_decl
from .convert import convert_function, decorated_first_line
from .source import ast_span, check_depth, line_texts, parse_python

# Names under which gpu_native exports the decorators.
KERNEL_DECORATOR = "gpu_kernel"
DEVICE_DECORATOR = "gpu_device"
CONST_ARRAY = "const_array"
STRUCT_DECORATOR = "gpu_struct"
PACKAGE = "gpu_native"
_DECORATORS = frozenset(f"{PACKAGE}.{name}" for name in (
    KERNEL_DECORATOR, DEVICE_DECORATOR, CONST_ARRAY, STRUCT_DECORATOR))

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Statements whose imports count even though they sit in a block (`if TYPE_CHECKING:`, `try:`).
if sys.version_info >= (3, 11):
    _GUARDS = (ast.If, ast.Try, ast.TryStar)
else:
    _GUARDS = (ast.If, ast.Try)
# What a nested kernel may sit in; expressions never hold one, so the search skips them.
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)

# The folds take whatever constants the source holds (Any): an operand the operator does not
# support raises TypeError, which the caller turns into "not a constant".
_UNOPS: dict[type, Callable[[Any], object]] = {
    ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Invert: lambda x: ~x,
    ast.Not: lambda x: not x,
}
_BINOPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^",
}


@node
class ImportedName:
    """A module-level name bound by an import: ``module`` and, for ``from`` imports, ``attr``."""

    module: str
    attr: str | None
    span: SourceSpan


@node
class OuterName:
    """A name a kernel's source uses but does not bind, as the decorator found it at run time.

    ``kind`` is ``const`` (``value``: an int, float, bool or tuple of them), ``import``
    (``value``: ``(module, attr)``, attr None for a module) or ``host`` (``value``: what it is,
    for the error a kernel that uses it gets).
    """

    kind: str
    value: object


@node
class ScanHints:
    """What the decorator knows at run time about a source it transpiles (see
    :func:`scan_module`).

    ``outer``: names bound outside the source (a notebook's earlier cells, the namespace given
    to ``exec``); the source's own definitions take precedence.  ``captured``: the closure of the
    one kernel ``only`` (the line of its first decorator), which takes precedence over the
    module's names as a closure's cells do.  With ``only`` set, the scan holds that kernel alone
    (and every device function); ``variant`` then tells its symbol apart from the same kernel
    made by another call of the function that defines it.
    """

    outer: dict[str, OuterName] = Factory(dict)
    captured: dict[str, OuterName] = Factory(dict)
    only: int | None = None
    variant: str = ""


@node
class StructFieldDecl:
    """One annotated field of a ``@gpu_struct`` class: its annotation as a dotted name (``""``
    when it is anything else), and where it is."""

    name: str
    annotation: str
    span: SourceSpan
    annotation_span: SourceSpan


@node
class StructDecl:
    """A ``@gpu_struct`` class of a module, as written: its fields in order, and the first
    statement of its body that is not a field (``problem``: what is wrong, and where), which
    the checker reports when a kernel uses the struct."""

    name: str
    span: SourceSpan
    fields: tuple[StructFieldDecl, ...]
    problem: tuple[str, SourceSpan] | None = None


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
    const_arrays: dict[str, ConstArrayDecl] = Factory(dict)
    structs: dict[str, StructDecl] = Factory(dict)
    struct_types: dict = Factory(dict)  # the checker's memo: struct name -> its ir.StructType
    functions: list[S.FunctionDef] = Factory(list)
    host_names: dict[str, str] = Factory(dict)  # name -> "function" / "class" / ...
    # Host variables whose value raised when folded (`X = math.log(0.0)`): name -> Python's
    # error, with the line of the assignment.
    failed: dict[str, str] = Factory(dict)
    # Names the module binds more than once (see .bindings): every place it binds them.
    reassigned: dict[str, tuple[Binding, ...]] = Factory(dict)
    # Names the module binds once, but not by a statement the scan reads as a definition
    # (`N, M = 9, 1`, `for N in ...`, an assignment in a try block): where.
    unfoldable: dict[str, Binding] = Factory(dict)
    hinted: set[str] = Factory(set)  # seeded from outside; the source may redefine
    # Names bound outside the source to host values: name -> what it is (see OuterName).
    described: dict[str, str] = Factory(dict)
    # Kernels that use variables of the function they are defined in: transpiled by their
    # decorator when that function runs, with the values it captured.  (name, first line).
    deferred: list[tuple[str, int]] = Factory(list)
    variant: str = ""  # appended to kernel symbols (ScanHints.variant)

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


def _dotted(expr: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):  # a loop: attribute chains can be long
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


class _Scanner:
    """Walks a module's statements for imports, constants and gpu_native decorators."""

    def __init__(self, scan: ModuleScan, is_package: bool, only: int | None = None,
                 captured: frozenset[str] = frozenset(), bound_once: frozenset[str] = frozenset()):
        self.scan = scan
        self.is_package = is_package
        self.only = only
        self.captured = captured
        # Module names bound exactly once (see .bindings): only such a name can stand for a
        # decorator (`kern = gn.gpu_kernel`), as it holds the same value wherever it is used.
        self.bound_once = bound_once
        self.aliases: dict[str, str] = {}  # name -> the gpu_native decorator it holds
        self._symbols: symtable.SymbolTable | None = None

    def run(self, module: ast.Module) -> None:
        for stmt in module.body:
            self.top_level(stmt)
        # Kernels may also be defined inside functions, classes and blocks (a test defining its
        # kernel, say).  An explicit stack over statements, in source order.
        top = [stmt for stmt in reversed(module.body)
               if not (isinstance(stmt, _FUNCTIONS) and self._gn_decorator(stmt))]
        stack = [child for stmt in top for child in reversed(self._blocks(stmt))]
        closures: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, int, set[str]]] = []
        while stack:
            item = stack.pop()
            if isinstance(item, _FUNCTIONS):
                found = self._gn_decorator(item)
                if found is not None:
                    frees = self._frees(item)
                    if frees:
                        closures.append((item, *found, frees))
                    else:
                        self.function(item, *found)
                    continue
            stack.extend(reversed(self._blocks(item)))
        self._closures(closures)

    def _closures(self, closures: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, int,
                                             set[str]]]) -> None:
        """Functions that use variables of the function around them (a factory's parameter,
        say), themselves or through a device function defined there.  Until that function runs
        there is no value for them: the decorator transpiles such a kernel then, with the values
        it captured (:attr:`captured`).  A device function defined beside it is no such
        variable: the scan has it."""
        devices = {fn.name for fn in self.scan.functions if fn.kind == "device"}
        devices.update(item.name for item, kind, _, _ in closures if kind == "device")
        device_frees = {item.name: frees for item, kind, _, frees in closures if kind == "device"}
        for item, kind, decorator, frees in closures:
            seen, todo = set(), list(frees)
            while todo:
                name = todo.pop()
                if name not in seen:
                    seen.add(name)
                    todo.extend(device_frees.get(name, ()))
            known = not (seen - devices - self.captured)
            if known or (kind == "kernel" and self.only is not None):
                self.function(item, kind, decorator)  # `only` keeps one kernel of these
            elif kind == "kernel":
                self.scan.deferred.append((item.name, self._first_line(item)))

    def _first_line(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
        return decorated_first_line(fn, self.scan.lines)

    def _frees(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The variables ``fn`` takes from the functions and classes around it: its closure, and
        the names its annotations and decorators read there (``CUDASlice[T]`` in a factory of
        ``T``), which Python evaluates in the enclosing scope."""
        if self._symbols is None:
            try:
                self._symbols = symtable.symtable(self.scan.source, self.scan.path, "exec")
            except (SyntaxError, ValueError):  # Python refuses it too: its import fails first
                return set()
        tables: list[tuple[symtable.SymbolTable, tuple[symtable.SymbolTable, ...]]] = [
            (self._symbols, ())]
        while tables:
            table, around = tables.pop()
            if table.get_type() == "function" and table.get_name() == fn.name and \
                    table.get_lineno() == fn.lineno:
                assert isinstance(table, symtable.Function)  # a table of type "function" is one
                return set(table.get_frees()) | self._outer_reads(fn, around)
            tables.extend((child, (*around, table)) for child in table.get_children())
        return set()

    @staticmethod
    def _outer_reads(fn: ast.FunctionDef | ast.AsyncFunctionDef,
                     around: tuple[symtable.SymbolTable, ...]) -> set[str]:
        """The names ``fn``'s annotations and decorators read from the functions and classes
        around it (not the module's)."""
        exprs: list[ast.AST] = [*fn.decorator_list]
        if fn.returns is not None:
            exprs.append(fn.returns)
        exprs.extend(a.annotation for a in (*fn.args.posonlyargs, *fn.args.args,
                                            *fn.args.kwonlyargs) if a.annotation is not None)
        names = {n.id for e in exprs for n in ast.walk(e) if isinstance(n, ast.Name)}
        found = set()
        for table in around:
            if table.get_type() == "module":
                continue
            for name in names:
                try:
                    symbol = table.lookup(name)
                except KeyError:
                    continue
                if symbol.is_local() or symbol.is_parameter() or symbol.is_free():
                    found.add(name)
        return found

    @staticmethod
    def _blocks(stmt: ast.AST) -> list[ast.AST]:
        return [c for c in ast.iter_child_nodes(stmt) if isinstance(c, _BLOCKS)]

    def span(self, node: ast.AST) -> SourceSpan:
        return ast_span(node, self.scan.path, self.scan.lines)

    # ---- what a decorator refers to

    def resolves_to(self, expr: ast.expr, name: str) -> bool:
        return self.full_name(expr) == f"{PACKAGE}.{name}"

    def full_name(self, expr: ast.expr) -> str | None:
        """What a (dotted) name refers to through the module's imports and decorator aliases:
        ``gn.gpu_kernel`` after ``import gpu_native as gn`` is ``gpu_native.gpu_kernel``."""
        dotted = _dotted(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head)
        if base is None:
            imported = self.scan.imports.get(head)
            if imported is None:
                return None
            base = imported.module if imported.attr is None else \
                f"{imported.module}.{imported.attr}"
        return f"{base}.{rest}" if rest else base

    def _gn_decorator(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, int] | None:
        """("kernel" or "device", the decorator's index) for a gpu_native function."""
        for index, expr in enumerate(fn.decorator_list):
            callee = expr.func if isinstance(expr, ast.Call) else expr
            if self.resolves_to(callee, KERNEL_DECORATOR):
                return "kernel", index
            if self.resolves_to(callee, DEVICE_DECORATOR):
                return "device", index
        return None

    # ---- top level

    def top_level(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, _FUNCTIONS):
            self._bind(stmt.name, "function")
            found = self._gn_decorator(stmt)
            if found is not None:
                self.function(stmt, *found)
        elif isinstance(stmt, ast.ClassDef):
            self._bind(stmt.name, "class")
            if any(self.resolves_to(d, STRUCT_DECORATOR) for d in stmt.decorator_list):
                self.scan.structs[stmt.name] = self.struct(stmt)
        elif isinstance(stmt, _GUARDS):
            # Imports under `if TYPE_CHECKING:` or `try:` still tell us what names mean.
            for inner in stmt.body:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    self.small(inner)
        else:
            self.small(stmt)

    def _bind(self, name: str, kind: str) -> None:
        if name in self.scan.hinted:
            self.scan.hinted.discard(name)
            self.scan.constants.pop(name, None)
            self.scan.imports.pop(name, None)
            self.scan.described.pop(name, None)
        self.scan.host_names.setdefault(name, kind)

    def small(self, node: ast.stmt) -> None:
        scan = self.scan
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    scan.imports[alias.asname] = ImportedName(alias.name, None, self.span(alias))
                else:
                    head = alias.name.split(".")[0]
                    scan.imports[head] = ImportedName(head, None, self.span(alias))
        elif isinstance(node, ast.ImportFrom):
            module = resolve_relative(scan.module_name, self.is_package, node.level or 0,
                                      node.module)
            for alias in node.names:
                if alias.name == "*":
                    self.star_import(module, alias)
                    continue
                local = alias.asname or alias.name
                scan.imports[local] = ImportedName(module, alias.name, self.span(alias))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and \
                    targets[0].id in self.bound_once and node.value is not None:
                full = self.full_name(node.value)
                if full in _DECORATORS:
                    self.aliases[targets[0].id] = full
            for target in targets:
                if isinstance(target, ast.Name):
                    self.assign(target, node.value)
                elif node.value is not None and pairs_of(target, node.value) is not None:
                    self.assign_pairs(pairs_of(target, node.value) or [])

    def assign_pairs(self, pairs: list[tuple[ast.Name, ast.expr]]) -> None:
        """``a, b = x, y``: the values are taken first, from the constants before the
        statement (as Python evaluates the right side first), then each name assigned."""
        before = dict(self.scan.constants)
        for target, value in pairs:
            const = _static_value(value, before, self.library)
            unknown = isinstance(const, _NotConstant)
            self.assign(target, None if unknown else value)
            if unknown:
                self.scan.host_names.setdefault(target.id, "variable")

    def star_import(self, module: str, alias: ast.alias) -> None:
        """``from gpu_native import *`` binds every name of ``gpu_native.__all__``, as Python
        does; a star import from any other module binds nothing the transpiler can know."""
        if module != PACKAGE:
            return
        from .. import __all__ as public

        span = self.span(alias)
        for name in public:
            self.scan.imports[name] = ImportedName(PACKAGE, name, span)

    def assign(self, target: ast.Name, value: ast.expr | None) -> None:
        scan = self.scan
        name = target.id
        if name in scan.hinted:
            scan.hinted.discard(name)
            scan.constants.pop(name, None)
            scan.imports.pop(name, None)
            scan.described.pop(name, None)
        if value is None:
            return
        if isinstance(value, ast.Call) and self.resolves_to(value.func, CONST_ARRAY):
            scan.const_arrays[name] = const_array_decl(
                name, self.span(target), value,
                lambda e: _static_value(e, scan.constants, self.library))
            return
        tv = self._typevar(value)
        if tv is not None:
            scan.typevars[name] = tv
            return
        dotted = _dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        where = self.library(dotted) if dotted is not None else None
        if where is not None and where[0] == PACKAGE and name in self.bound_once:
            # `DT = f32` (Numba code names its dtype once): another name for gpu_native's.
            scan.imports[name] = ImportedName(PACKAGE, where[1], self.span(target))
            return
        const = _static_value(value, scan.constants, self.library)
        if not isinstance(const, _NotConstant):
            scan.constants[name] = const
            scan.constant_spans[name] = self.span(target)
        else:
            scan.host_names.setdefault(name, "variable")
            if const.why:
                scan.failed[name] = f"{const.why} (line {target.lineno})"

    def library(self, dotted: str) -> tuple[str, str] | None:
        """The module attribute a dotted name in a constant's value refers to here, as
        ``(module, name)`` (``np.pi`` after ``import numpy as np``, ``pi`` after ``from math
        import pi``, ``min`` where the module has not bound it: a builtin); ``None`` for
        anything else.  The module's own bindings so far are Python's at this point."""
        scan = self.scan
        head, _, rest = dotted.partition(".")
        imported = scan.imports.get(head)
        if imported is not None:
            if imported.attr is None:
                return (imported.module, rest) if rest and "." not in rest else None
            return None if rest else (imported.module, imported.attr)
        bound = (scan.constants, scan.host_names, scan.const_arrays, scan.typevars,
                 scan.structs, scan.described)
        if rest or any(head in names for names in bound) or scan.function(head) is not None:
            return None
        return ("builtins", head)

    def _typevar(self, value: ast.expr) -> tuple[str, ...] | None:
        if not isinstance(value, ast.Call):
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
            dotted = _dotted(arg)
            if dotted is None:
                continue
            names.append(dotted.split(".")[-1])
        return tuple(names)

    def struct(self, cls: ast.ClassDef) -> StructDecl:
        """The fields of a ``@gpu_struct`` class (annotated names, in order)."""
        fields: list[StructFieldDecl] = []
        problem = None
        for k, stmt in enumerate(cls.body):
            if k == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # the docstring
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if stmt.value is not None and problem is None:
                    problem = (f"field '{stmt.target.id}' of struct {cls.name} has a default "
                               f"value; struct fields have none ({cls.name}() sets every "
                               "field to zero)", self.span(stmt.value))
                fields.append(StructFieldDecl(stmt.target.id, _dotted(stmt.annotation) or "",
                                              self.span(stmt.target),
                                              self.span(stmt.annotation)))
            elif problem is None:
                problem = (f"struct {cls.name} may only declare fields (`x: f32`); methods, "
                           "assignments and other statements are not supported in a "
                           "@gpu_struct class", self.span(stmt))
        return StructDecl(cls.name, self.span(cls), tuple(fields), problem)

    # ---- functions

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, kind: str,
                 decorator: int) -> None:
        if kind == "kernel" and self.only is not None and self._first_line(fn) != self.only:
            return  # the decorator transpiles one kernel (and the device functions it may call)
        # Bounded before libcst parses it: every pass after this recurses per nesting level.
        check_depth(fn, self.scan.path, self.scan.lines)
        self.scan.functions.append(
            convert_function(fn, kind, decorator, self.scan.path, self.scan.lines))


class _NotConstant:
    """No constant; ``why`` says so where computing it raised (``math.log(0.0)``), for the
    refusal of a kernel that reads it."""

    __slots__ = ("why",)

    def __init__(self, why: str = "") -> None:
        self.why = why


_NOT_CONSTANT = _NotConstant()


def _not_constant(*operands: object) -> _NotConstant:
    """What an expression over ``operands`` is when one of them is no constant: the first that
    says why, so that a failure deep in a sum still reaches the refusal."""
    for v in operands:
        if isinstance(v, _NotConstant) and v.why:
            return v
    return _NOT_CONSTANT


def _static_value(root: ast.expr, env: dict[str, object],
                  library: Callable[[str], tuple[str, str] | None] | None = None) -> object:
    """Evaluate a module-level constant expression without running anything; or _NOT_CONSTANT.

    ``library`` says which module attribute a dotted name refers to (``np.pi`` is ``("numpy",
    "pi")``, ``min`` is ``("builtins", "min")``), where the constant may read one: the values
    and functions of :mod:`.folding`.  Host code may hold sums of hundreds of terms (generated
    code): evaluated with an explicit stack, they cost no recursion.
    """
    todo: list[tuple[ast.expr, bool]] = [(root, False)]
    values: list[object] = []
    while todo:
        expr, operands_done = todo.pop()
        if operands_done:
            if isinstance(expr, ast.UnaryOp):
                values.append(_unary(expr.op, values.pop()))
            elif isinstance(expr, ast.BinOp):
                right = values.pop()
                values.append(_binary(expr.op, values.pop(), right))
            elif isinstance(expr, ast.Call):
                args = values[len(values) - len(expr.args):]
                del values[len(values) - len(expr.args):]
                values.append(_call(expr, args, library))
            else:
                assert isinstance(expr, ast.Tuple)
                items = tuple(values[len(values) - len(expr.elts):])
                del values[len(values) - len(expr.elts):]
                constant = not any(isinstance(v, _NotConstant) for v in items)
                values.append(items if constant else _not_constant(*items))
        elif isinstance(expr, ast.Constant):
            value = expr.value
            values.append(value if type(value) in (int, float, bool) else _NOT_CONSTANT)
        elif isinstance(expr, ast.Name) and expr.id in env:
            values.append(env[expr.id])
        elif isinstance(expr, (ast.Name, ast.Attribute)):
            where = library(_dotted(expr) or "") if library is not None else None
            values.append(folding.CONSTANTS.get(where, _NOT_CONSTANT) if where else
                          _NOT_CONSTANT)
        elif isinstance(expr, ast.Call) and library is not None and not expr.keywords and \
                not any(isinstance(a, ast.Starred) for a in expr.args):
            todo.append((expr, True))
            todo += [(e, False) for e in reversed(expr.args)]
        elif isinstance(expr, (ast.UnaryOp, ast.BinOp, ast.Tuple)):
            todo.append((expr, True))
            if isinstance(expr, ast.UnaryOp):
                todo.append((expr.operand, False))
            elif isinstance(expr, ast.BinOp):
                todo += [(expr.right, False), (expr.left, False)]
            else:
                todo += [(e, False) for e in reversed(expr.elts)]
        else:
            values.append(_NOT_CONSTANT)
    return values[0]


def _call(expr: ast.Call, args: list[object],
          library: Callable[[str], tuple[str, str] | None] | None) -> object:
    """A call of one of :mod:`.folding`'s functions on constants, or _NOT_CONSTANT."""
    if any(isinstance(a, (_NotConstant, tuple)) for a in args):
        return _not_constant(*args)
    dotted = _dotted(expr.func)
    where = library(dotted) if library is not None and dotted is not None else None
    fn = folding.function(*where) if where is not None else None
    try:
        result = folding.call(fn, args) if fn is not None else None
    except folding.CallFailed as e:
        shown = ", ".join(repr(a) for a in args)
        return _NotConstant(f"{dotted}({shown:.80}) raises {e}")
    return _NOT_CONSTANT if result is None else result


def _unary(op: ast.unaryop, v: object) -> object:
    if isinstance(v, (_NotConstant, tuple)):
        return _not_constant(v)
    try:
        return _UNOPS[type(op)](v)
    except TypeError:
        return _NOT_CONSTANT


def _binary(operator: ast.operator, a: object, b: object) -> object:
    if isinstance(a, (_NotConstant, tuple)) or isinstance(b, (_NotConstant, tuple)):
        return _not_constant(a, b)
    op = _BINOPS.get(type(operator))
    if op is None:  # @
        return _NOT_CONSTANT
    # Kernel constants fit 64 bits: refuse to fold huge integers (hostile source could
    # otherwise make the transpiler compute numbers with billions of digits).
    if any(isinstance(v, int) and v.bit_length() > 128 for v in (a, b)):
        return _NOT_CONSTANT
    try:
        if op == "**" and isinstance(b, int) and abs(b) > 256:
            return _NOT_CONSTANT
        if op in ("<<",) and isinstance(b, int) and b > 256:
            return _NOT_CONSTANT
        result = _FOLD[op](a, b)
    except (ArithmeticError, ValueError) as e:  # 1 / 0, 2.0 ** 5000, 1 << -1
        return _NotConstant(f"{a!r} {op} {b!r} raises {type(e).__name__}: {e}")
    except TypeError:
        return _NOT_CONSTANT
    # A negative number to a fractional power is complex in Python: no kernel constant.
    return result if type(result) in (int, float, bool) else _NOT_CONSTANT


_FOLD: dict[str, Callable[[Any, Any], object]] = {  # Any: as _UNOPS
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}


def scan_module(source: str, path: str, module_name: str | None = None,
                hints: ScanHints | None = None) -> ModuleScan:
    """Parse a module and collect everything the transpiler needs from it (see :class:`ModuleScan`).

    Raises ``TranspileError`` at CPython's location when CPython's parser rejects the source.
    ``hints`` (given by the decorator, which transpiles where no import hook ran) says what names
    the source does not bind refer to, and may limit the scan to one kernel (see
    :class:`ScanHints`).
    """
    tree = parse_python(source, path)
    is_package = os.path.basename(path) == "__init__.py"
    if module_name is None:
        module_name = module_name_for_path(path)
    scan = ModuleScan(path=path, module_name=module_name, source=source,
                      lines=line_texts(source))
    if hints is not None:
        for name, outer in hints.outer.items():
            _seed(scan, name, outer)
        scan.hinted = set(hints.outer)
        scan.variant = hints.variant
    bindings = {}
    shadowed_stars = {}  # name -> the star import's site, where the module binds it again
    for name, sites in module_bindings(tree, path, scan.lines).items():
        bindings[name], star = after_star(conflicts(sites))
        if star is not None:
            shadowed_stars[name] = star.span
    once = frozenset(name for name, sites in bindings.items() if len(sites) == 1)
    if hints is None:
        _Scanner(scan, is_package, bound_once=once).run(tree)
    else:
        _Scanner(scan, is_package, hints.only, frozenset(hints.captured), once).run(tree)
    for name, span in shadowed_stars.items():
        imported = scan.imports.get(name)
        if imported is not None and (imported.span.line, imported.span.col) == (
                span.line, span.col):
            del scan.imports[name]  # still the star import's: the later binding wins
    for name, sites in bindings.items():
        if len(sites) > 1:
            scan.reassigned[name] = tuple(sites)
        elif not sites[0].plain:
            scan.unfoldable[name] = sites[0]
    if hints is not None:
        for name, outer in hints.captured.items():  # a closure's cells hide the module's names
            for table in (scan.constants, scan.imports, scan.const_arrays, scan.typevars,
                          scan.host_names, scan.failed, scan.described):
                table.pop(name, None)
            scan.reassigned.pop(name, None)
            scan.unfoldable.pop(name, None)
            _seed(scan, name, outer)
    return scan


def _seed(scan: ModuleScan, name: str, outer: OuterName) -> None:
    if outer.kind == "const":
        scan.constants[name] = outer.value
    elif outer.kind == "import":
        assert isinstance(outer.value, tuple)  # an import's value is (module, attr)
        module, attr = outer.value
        scan.imports[name] = ImportedName(str(module), attr, SourceSpan(scan.path, 0))
    else:
        scan.described[name] = str(outer.value)


def has_gpu_decorators(source: str | bytes) -> bool:
    """The hook's cheap test: could this source define kernels?  (A byte search, no parsing.)"""
    if isinstance(source, str):
        return KERNEL_DECORATOR in source or DEVICE_DECORATOR in source
    return KERNEL_DECORATOR.encode() in source or DEVICE_DECORATOR.encode() in source
