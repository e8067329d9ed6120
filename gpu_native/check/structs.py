"""The type pass over structs: ``@gpu_struct`` types, constructors, field reads and field writes.

A struct type is resolved once per module scan (:func:`struct_type`) from the class's source: its
fields' annotations resolve in the module that declares it, as a device function's names do.
A struct value is a whole: locals, parameters, device function arguments and results, array
elements.  ``p.x = v`` on a local assigns ``p`` a copy with one field replaced
(:class:`~gpu_native.ir.StructWith`, which the CUDA emitter writes back as ``p.x = v;``), so the
proofs see an ordinary assignment of ``p``; ``a[i].x = v`` is a :class:`~gpu_native.ir.Store` of
one field of element ``i``, checked (bounds, unique writes) as a store of the element.
"""

from __future__ import annotations

from typing import Any

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..frontend.parse import ModuleScan, StructDecl
from ..lang import registry as R
from ..lang.structs import c_layout
from .checker_base import CheckerBase
from .scope import ModuleLocator, Resolver, registry_entry

_IN_PROGRESS = object()
_FIELD_TYPES = ("a scalar type (bool_, i8 ... u64, f16, f32, f64), a vector type (vec3f ...) or "
                "another @gpu_struct class")


def _dotted_syntax(text: str, span: SourceSpan) -> S.Expr:
    parts = text.split(".")
    out: S.Expr = S.Name(span, parts[0])
    for attr in parts[1:]:
        out = S.Attribute(span, out, attr)
    return out


def struct_type(scan: ModuleScan, decl: StructDecl, locator: ModuleLocator,
                use: SourceSpan) -> ir.StructType:
    """The IR type of the ``@gpu_struct`` class ``decl`` of ``scan`` (resolved once, then
    remembered in ``scan.struct_types``).

    Raises ``TranspileError`` at the class's own lines for a field of an unsupported type, a
    struct that contains itself, or a class body with more than fields.
    """
    done = scan.struct_types.get(decl.name)
    if isinstance(done, ir.StructType):
        return done
    if done is _IN_PROGRESS:
        raise TranspileError(f"struct {decl.name} contains itself; a struct cannot hold a field "
                             "of its own type, directly or through another struct", use,
                             "hold an index into an array of them instead")
    if decl.problem is not None:
        raise TranspileError(decl.problem[0], decl.problem[1])
    if not decl.fields:
        raise TranspileError(f"struct {decl.name} declares no fields (annotate them: `x: f32`)",
                             decl.span)
    scan.struct_types[decl.name] = _IN_PROGRESS
    try:
        resolver = Resolver(scan, locator)
        infos = []
        for f in decl.fields:
            what = f"field '{f.name}' of struct {decl.name}"
            if not f.annotation:
                raise TranspileError(f"{what} must be annotated with {_FIELD_TYPES}",
                                     f.annotation_span)
            sym = resolver.dotted(_dotted_syntax(f.annotation, f.annotation_span))
            entry = registry_entry(sym)
            ty: ir.Type | None = None
            if sym is not None and sym.kind == "struct":
                pair: Any = sym.value  # a struct's (ModuleScan, StructDecl)
                other_scan, other = pair
                ty = struct_type(other_scan, other, locator, f.annotation_span)
            elif sym is not None and sym.kind == "gn" and entry is not None:
                if entry.form == "type" and sym.name != "bf16":
                    ty = ir.scalar(sym.name)
                elif entry.form == "vector type":
                    ty = ir.vector(sym.name)
            elif sym is not None and sym.kind == "builtin" and entry is not None and \
                    entry.value is not None and entry.form != "tuple type":
                ty = ir.scalar(entry.value)  # int, float and bool, as annotations mean them
            if ty is None:
                why = "bf16, which NumPy has no dtype for" if sym is not None and \
                    sym.name == "bf16" else f"'{f.annotation}'"
                raise TranspileError(f"{what} has type {why}; a struct field is {_FIELD_TYPES}",
                                     f.annotation_span)
            assert isinstance(ty, (ir.ScalarType, ir.VectorType, ir.StructType))
            infos.append((f.name, ty.info))
        result = ir.StructType(c_layout(decl.name, scan.module_name, infos))
        # The generated C++ names a struct by its class name: two of one name cannot meet.
        seen = locator.struct_names.setdefault(result.info.c_name, result.info)
        if seen != result.info:
            raise TranspileError(
                f"two different structs are called {decl.name} (one in {seen.module}, one in "
                f"{scan.module_name}); kernels checked together cannot use both", use,
                "rename one of them")
    except BaseException:
        scan.struct_types.pop(decl.name, None)
        raise
    scan.struct_types[decl.name] = result
    return result


class StructChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: struct constructors, fields and stores."""

    def struct_of(self, sym, span: SourceSpan) -> ir.StructType:
        scan, decl = sym.value
        return struct_type(scan, decl, self.ctx.resolver.locator, span)

    def call_struct_make(self, sym, e: S.Call) -> ir.Expr:
        """``P()``, ``P(x, v)``, ``P(x=..., v=...)``: unset fields are zero."""
        ty = self.struct_of(sym, e.span)
        fields = ty.info.fields
        title = ty.info.title
        if len(e.args) > len(fields):
            raise self.error(f"{title}() takes at most {len(fields)} field values "
                             f"({len(e.args)} given)", e.span)
        given: dict[str, S.Expr] = {f.name: a for f, a in zip(fields, e.args)}
        for kw in e.keywords:
            if ty.info.field(kw.name) is None:
                raise self.error(f"struct {title} has no field '{kw.name}'; it has "
                                 f"{', '.join(f.name for f in fields)}", kw.span)
            if kw.name in given:
                raise self.error(f"{title}() got field '{kw.name}' twice", kw.span)
            given[kw.name] = kw.value
        # Evaluated in the order written (Python's), then placed in field order.
        values: dict[str, ir.Expr] = {}
        for name, syntax in given.items():
            k = next(i for i, f in enumerate(fields) if f.name == name)
            values[name] = self.coerce(self.expr(syntax), ty.field_type(k),
                                       f"field '{name}' of {title}()")
        items = tuple(values[f.name] if f.name in values else self.zero_value(
            ty.field_type(k), e.span) for k, f in enumerate(fields))
        if any(self.has_effects(v) for v in values.values()) and \
                list(given) != [f.name for f in fields if f.name in given]:
            raise self.error(f"{title}() names its fields in another order than the struct "
                             "declares them, and computing them has effects (a call, an atomic): "
                             "compute them into locals first", e.span)
        return ir.StructMake(e.span, ty, items)

    def zero_value(self, ty: ir.Type, span: SourceSpan) -> ir.Expr:
        """The zero of a scalar, vector or struct type."""
        if isinstance(ty, ir.ScalarType):
            return ir.Const(span, ty, False if ty == ir.BOOL else
                            0.0 if ty.info.is_float else 0)
        if isinstance(ty, ir.VectorType):
            return ir.VecMake(span, ty, tuple(self.zero_value(ty.elem, span)
                                              for _ in range(ty.n)))
        assert isinstance(ty, ir.StructType)
        return ir.StructMake(span, ty, tuple(self.zero_value(ty.field_type(k), span)
                                             for k in range(len(ty.info.fields))))

    def field_index(self, ty: ir.StructType, attr: str, span: SourceSpan) -> int:
        for k, f in enumerate(ty.info.fields):
            if f.name == attr:
                return k
        raise self.error(f"struct {ty.info.title} has no field '{attr}'; it has "
                         f"{', '.join(f.name for f in ty.info.fields)}", span)

    def struct_field(self, value: ir.Expr, attr: str, span: SourceSpan) -> ir.Expr:
        """``value.attr`` of a struct value."""
        ty = value.ty
        assert isinstance(ty, ir.StructType)
        k = self.field_index(ty, attr, span)
        return ir.FieldGet(span, ty.field_type(k), value, k)

    def field_path(self, target: S.Attribute) -> tuple[S.Expr, list[S.Attribute]]:
        """The root of ``root.a.b.c`` and the attributes from the innermost out."""
        chain: list[S.Attribute] = []
        e: S.Expr = target
        while isinstance(e, S.Attribute):
            chain.append(e)
            e = e.value
        chain.reverse()
        return e, chain

    def assign_field(self, target: S.Attribute, value_syntax: S.Expr, span,
                     augmented: bool) -> list[ir.Stmt] | None:
        """``p.x = v`` (a local struct) or ``a[i].x = v`` (a field of an array element); None
        when ``target`` is neither."""
        root, chain = self.field_path(target)
        if isinstance(root, S.Name) and root.id in self.vars and isinstance(
                self.vars[root.id].ty, ir.StructType):
            var = self.vars[root.id]
            if root.id not in self.assigned:
                raise self.error(f"local variable '{root.id}' might be used before it is "
                                 "assigned", root.span, f"assign the whole struct first: "
                                 f"{root.id} = {var.ty}()")
            old: ir.Expr = ir.Local(root.span, var.ty, var)
            path = self.struct_path(var.ty, chain)
            item = self.coerce(self.expr(value_syntax), path[-1][1],
                               f"field '{self.path_text(chain)}' of '{root.id}'")
            new = self.rebuild(old, path, item, span)
            self.bounds.commit()
            self.bounds.kill({var})
            self.defs.record(var, new)
            self.unique.note_assign(var, new)
            return [ir.Assign(span, var, new)]
        if isinstance(root, S.Subscript):
            base = self.expr(root.value)
            if isinstance(base, ir.ArrayRef) and isinstance(base.ty.elem, ir.StructType):
                path = self.struct_path(base.ty.elem, chain)
                value = self.coerce(self.expr(value_syntax), path[-1][1],
                                    f"field '{self.path_text(chain)}' of an element of "
                                    f"'{base.var.name}'")
                return [self.store(root, None, span, augmented, value,
                                   tuple(k for k, _ in path))]
        return None

    def struct_path(self, ty: ir.Type, chain: list[S.Attribute]
                    ) -> list[tuple[int, Any]]:
        """Each field index and type along ``.a.b`` of a value of type ``ty``, checked (the
        last step may be a component of a vector field: ``p.vel.x``)."""
        out: list[tuple[int, Any]] = []  # (index, its scalar, vector or struct type)
        for n, attr in enumerate(chain):
            if isinstance(ty, ir.VectorType) and n == len(chain) - 1 and n > 0:
                k = R.VECTOR_COMPONENTS.get(attr.attr)
                if k is None or k >= ty.n:
                    raise self.error(f"a {ty} has no component .{attr.attr}", attr.span)
                ty = ty.elem
                out.append((k, ty))
                continue
            if not isinstance(ty, ir.StructType):
                raise self.error(f"a {ty} has no fields to assign (.{attr.attr})", attr.span,
                                 "assign the whole value, or a component of a local vector")
            k = self.field_index(ty, attr.attr, attr.span)
            ty = ty.field_type(k)
            out.append((k, ty))
        return out

    @staticmethod
    def path_text(chain: list[S.Attribute]) -> str:
        return ".".join(a.attr for a in chain)

    def rebuild(self, old: ir.Expr, path: list[tuple[int, Any]], item: ir.Expr,
                span: SourceSpan) -> ir.Expr:
        """``old`` with the field at ``path`` replaced by ``item``."""
        k = path[0][0]
        ty = old.ty
        if isinstance(ty, ir.VectorType):  # the component of a vector field
            return ir.VecMake(span, ty, tuple(
                item if j == k else ir.VecComponent(span, ty.elem, old, j) for j in range(ty.n)))
        assert isinstance(ty, ir.StructType)
        if len(path) > 1:
            inner = ir.FieldGet(span, ty.field_type(k), old, k)
            item = self.rebuild(inner, path[1:], item, span)
        return ir.StructWith(span, ty, old, k, item)
