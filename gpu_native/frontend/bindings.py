"""Every place a module binds a name in its global scope, found without running it.

A kernel folds a module constant into its code when it is transpiled, so the constant must hold
one value for as long as the module lives: ``N = 4`` and nothing else that binds ``N`` at module
level.  Python binds a global name in many ways besides ``=`` — tuple unpacking, a ``for`` or
``with`` target, ``:=`` (also inside a module-level comprehension), ``import ... as N``, ``def`` and
``class``, an ``except ... as N`` clause, a ``match`` capture, ``del N``, and any function or class
body that declares ``global N`` and assigns it — and any one of them after ``N = 4`` would leave the
kernel with a value Python no longer has.  :func:`module_bindings` finds them all, so that the scan
can refuse such a name (:class:`~gpu_native.frontend.parse.ModuleScan`'s ``reassigned``) or say why a
name bound only in one of those ways is no constant (``unfoldable``).

What no reading of the source can see — ``globals()["N"] = 9``, ``exec("N = 9")``, an assignment
to the module's attribute from another module — stays out of reach; ``docs/language.md`` says so.

The walk uses an explicit stack, as the rest of the scan does: host code of any depth costs no
recursion.
"""

from __future__ import annotations

import ast
import sys

from ..errors import SourceSpan
from ..nodes import node
from .source import ast_span

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
if sys.version_info >= (3, 11):
    _TRIES: tuple[type, ...] = (ast.Try, ast.TryStar)
else:
    _TRIES = (ast.Try,)
# The module-level blocks a binding may sit in, as the message names them.
_BLOCK_NAMES: dict[type, str] = {
    ast.If: "an if block", ast.For: "a for loop", ast.AsyncFor: "a for loop",
    ast.While: "a while loop", ast.With: "a with block", ast.AsyncWith: "a with block",
    ast.Match: "a match statement", **{t: "a try block" for t in _TRIES},
}


@node
class Binding:
    """One place a module binds ``name`` in its global scope.

    ``how`` completes "it is ...": ``assigned``, ``bound by a for loop in an if block``,
    ``assigned in function reset, which declares it global``.  ``plain``: a statement the scan
    reads as a definition (a top-level ``N = v`` or ``N: T = v``, ``def``, ``class``, or an
    import at the top level or in an ``if``/``try`` body).  ``imported``: for an import, what it
    imports as written, so that the same import twice is one binding.
    """

    name: str
    how: str
    span: SourceSpan
    plain: bool = False
    imported: tuple | None = None

    def described(self) -> str:
        """``how``, with its line: ``bound by a for loop (line 7)``."""
        return f"{self.how} (line {self.span.line})"


@node
class _Scope:
    """Where a binding lands: the module, or a function or class body (whose names are its own
    unless it declares them ``global``), or a comprehension (whose ``:=`` binds in ``parent``)."""

    kind: str  # "module", "function", "class" or "comprehension"
    name: str = ""
    declared_global: frozenset[str] = frozenset()
    parent: _Scope | None = None


_MODULE = _Scope("module")


def pairs_of(target: ast.expr, value: ast.expr) -> list[tuple[ast.Name, ast.expr]] | None:
    """``(name, value)`` for each name of ``a, b = x, y`` (a tuple or list of plain names
    unpacking a literal tuple or list of as many items, none starred); None for any other
    assignment."""
    if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(value, (ast.Tuple,
                                                                               ast.List)):
        return None
    if len(target.elts) != len(value.elts) or not all(
            isinstance(t, ast.Name) for t in target.elts) or any(
            isinstance(v, ast.Starred) for v in value.elts):
        return None
    names = [t.id for t in target.elts if isinstance(t, ast.Name)]
    if len(set(names)) != len(names):  # `a, a = 1, 2`: the name is bound twice
        return None
    return [(t, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name)]


def module_bindings(tree: ast.Module, path: str, lines: list[str]) -> dict[str, list[Binding]]:
    """Every binding of a global name in ``tree``, by name, in source order.

    A star import from gpu_native binds each name of ``gpu_native.__all__`` (as Python does); one
    from another module binds names the source does not show and is left out, as is what only
    runs as a string (``exec``, ``globals()``).
    """
    found: dict[str, list[Binding]] = {}
    guarded: set[int] = set()  # the statements of a top-level if or try body

    def bind(name: str, how: str, at: ast.AST, scope: _Scope, where: str,
             plain: bool = False, imported: tuple | None = None) -> None:
        if scope.kind == "comprehension":  # only `:=` gets here: it binds around the comprehension
            while scope.kind == "comprehension" and scope.parent is not None:
                scope = scope.parent
        if scope.kind != "module":
            if name not in scope.declared_global:
                return
            kind = "function" if scope.kind == "function" else "class"
            where = f" in {kind} {scope.name}, which declares it global"
        found.setdefault(name, []).append(
            Binding(name, how + where, ast_span(at, path, lines), plain and not where, imported))

    # (node, scope, where: the module-level block it sits in, how: what a Name stored here is)
    stack: list[tuple[ast.AST, _Scope, str, str | None]] = [
        (stmt, _MODULE, "", None) for stmt in reversed(tree.body)]
    while stack:
        item, scope, where, how = stack.pop()
        todo: list[tuple[ast.AST, _Scope, str, str | None]] = []
        inner = where
        if scope.kind == "module" and type(item) in _BLOCK_NAMES:
            inner = f" in {_BLOCK_NAMES[type(item)]}"
        if isinstance(item, ast.Name):
            # Stored with no `how`: a comprehension's own target (only its := reach out).
            if isinstance(item.ctx, (ast.Store, ast.Del)) and how is not None:
                bind(item.id, how, item, scope, where)
            continue
        if isinstance(item, ast.NamedExpr):
            assert isinstance(item.target, ast.Name)  # the grammar allows nothing else
            bind(item.target.id, "assigned by an assignment expression (:=)", item.target,
                 scope, where)
            todo.append((item.value, scope, where, None))
        elif isinstance(item, ast.Assign):
            for target in item.targets:
                if isinstance(target, ast.Name):
                    bind(target.id, "assigned", target, scope, where, plain=True)
                elif pairs_of(target, item.value) is not None:
                    # `BX, BY = 16, 8`: each name is assigned its own value, as `BX = 16` is.
                    for unpacked, _ in pairs_of(target, item.value) or ():
                        bind(unpacked.id, "assigned by unpacking", unpacked, scope, where,
                             plain=True)
                else:
                    todo.append((target, scope, where, "assigned by unpacking"))
            todo.append((item.value, scope, where, None))
        elif isinstance(item, ast.AnnAssign):
            if item.value is not None:  # `N: int` alone binds nothing
                if isinstance(item.target, ast.Name):
                    bind(item.target.id, "assigned", item.target, scope, where, plain=True)
                else:
                    todo.append((item.target, scope, where, "assigned"))
                todo.append((item.value, scope, where, None))
            todo.append((item.annotation, scope, where, None))
        elif isinstance(item, ast.AugAssign):
            todo += [(item.target, scope, where, "changed by an augmented assignment"),
                     (item.value, scope, where, None)]
        elif isinstance(item, ast.Delete):
            todo += [(t, scope, where, "deleted by a del statement") for t in item.targets]
        elif isinstance(item, (ast.For, ast.AsyncFor)):
            todo += [(item.target, scope, where, "bound by a for loop"),
                     (item.iter, scope, where, None)]
            todo += [(s, scope, inner, None) for s in (*item.body, *item.orelse)]
        elif isinstance(item, (ast.With, ast.AsyncWith)):
            for with_item in item.items:
                todo.append((with_item.context_expr, scope, where, None))
                if with_item.optional_vars is not None:
                    todo.append((with_item.optional_vars, scope, where,
                                 "bound by a with statement"))
            todo += [(s, scope, inner, None) for s in item.body]
        elif isinstance(item, ast.ExceptHandler):
            if item.name is not None:
                bind(item.name, "bound by an except clause", item, scope, where)
            if item.type is not None:
                todo.append((item.type, scope, where, None))
            todo += [(s, scope, where, None) for s in item.body]
        elif isinstance(item, (ast.Import, ast.ImportFrom)):
            guard = id(item) in guarded  # the scan reads these imports
            for alias in item.names:
                if alias.name == "*":
                    if isinstance(item, ast.ImportFrom) and item.level == 0 and \
                            item.module == "gpu_native":
                        # Every public name, as Python binds them (see :func:`after_star`).
                        from .. import __all__ as public

                        for public_name in public:
                            bind(public_name, STAR_IMPORT, alias, scope, "" if guard else where,
                                 plain=True, imported=("from", 0, "gpu_native", public_name))
                    continue
                if isinstance(item, ast.Import):
                    local = alias.asname or alias.name.split(".")[0]
                    what: tuple = ("import", alias.name if alias.asname else local, local)
                else:
                    local = alias.asname or alias.name
                    what = ("from", item.level, item.module, alias.name)
                bind(local, "imported", alias, scope, "" if guard else where, plain=True,
                     imported=what)
        elif isinstance(item, _FUNCTIONS + (ast.ClassDef,)):
            word = "class" if isinstance(item, ast.ClassDef) else "def"
            bind(item.name, f"defined by a {word} statement", item, scope, where, plain=True)
            # Decorators, defaults, annotations and bases run in the scope around the body.
            outer: list[ast.AST] = list(item.decorator_list)
            if isinstance(item, ast.ClassDef):
                outer += [*item.bases, *item.keywords]
            else:
                outer += _signature_parts(item.args)
                if item.returns is not None:
                    outer.append(item.returns)
            todo += [(e, scope, where, None) for e in outer]
            body = _Scope("class" if word == "class" else "function", item.name,
                          _declared_global(item.body), scope)
            todo += [(s, body, where, None) for s in item.body]
        elif isinstance(item, ast.Lambda):
            todo += [(e, scope, where, None) for e in _signature_parts(item.args)]
            todo.append((item.body, _Scope("function", "<lambda>", frozenset(), scope), where,
                         None))
        elif isinstance(item, _COMPREHENSIONS):
            # The first iterable runs in the scope around; the rest in the comprehension's own.
            own = _Scope("comprehension", parent=scope)
            first, *rest = item.generators
            todo.append((first.iter, scope, where, None))
            parts: list[ast.AST] = [first.target, *first.ifs]
            for generator in rest:
                parts += [generator.target, generator.iter, *generator.ifs]
            parts += [item.key, item.value] if isinstance(item, ast.DictComp) else [item.elt]
            todo += [(e, own, where, None) for e in parts]
        elif isinstance(item, (ast.MatchAs, ast.MatchStar, ast.MatchMapping)):
            captured = item.rest if isinstance(item, ast.MatchMapping) else item.name
            if captured is not None:
                bind(captured, "bound by a match pattern", item, scope, where)
            todo += [(c, scope, where, None) for c in ast.iter_child_nodes(item)]
        elif type(item).__name__ == "TypeAlias":  # `type N = ...` (Python 3.12)
            name = getattr(item, "name", None)
            if isinstance(name, ast.Name):
                bind(name.id, "defined by a type statement", name, scope, where)
        else:
            # Targets keep what binds them (a Tuple or Starred of names); a block's statements
            # sit in it; anything else is an expression whose stored names are :=.
            keep = how if isinstance(item, (ast.Tuple, ast.List, ast.Starred)) else None
            todo += [(c, scope, inner if isinstance(c, _BLOCKS) else where, keep)
                     for c in ast.iter_child_nodes(item)]
            if scope.kind == "module" and not where and isinstance(item, (ast.If, *_TRIES)):
                guarded.update(id(s) for s in item.body)
        stack.extend(reversed(todo))
    return found


def _signature_parts(args: ast.arguments) -> list[ast.AST]:
    """What a function's signature evaluates where it is defined: defaults and annotations."""
    parts: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None and arg.annotation is not None:
            parts.append(arg.annotation)
    return parts


def _declared_global(body: list[ast.stmt]) -> frozenset[str]:
    """The names a function or class body declares ``global`` (in any of its blocks, not in the
    functions and classes it defines)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Global):
            names.update(stmt.names)
        elif not isinstance(stmt, _FUNCTIONS + (ast.ClassDef,)):
            stack.extend(c for c in ast.iter_child_nodes(stmt) if isinstance(c, _BLOCKS))
    return frozenset(names)


#: How a name bound by ``from gpu_native import *`` is bound (:attr:`Binding.how`).
STAR_IMPORT = "imported by `from gpu_native import *`"


def after_star(sites: list[Binding]) -> tuple[list[Binding], Binding | None]:
    """``sites`` (in source order) without a first one that is ``from gpu_native import *``
    where the module binds the name again after it, and that star import's site (else None):
    the later binding is the name's value, as in Python (a ``@gpu_device def dot`` beside the
    star import's ``dot``, or ``f32 = f64``, which is then refused as a module variable)."""
    if len(sites) > 1 and sites[0].how == STAR_IMPORT and all(
            (s.span.line, s.span.col) > (sites[0].span.line, sites[0].span.col)
            for s in sites[1:]):
        return sites[1:], sites[0]
    return sites, None


def conflicts(sites: list[Binding]) -> list[Binding]:
    """``sites`` without repeats of one import (``import math`` twice binds one module)."""
    seen: set[tuple] = set()
    kept = []
    for site in sites:
        if site.imported is not None:
            if site.imported in seen:
                continue
            seen.add(site.imported)
        kept.append(site)
    return kept
