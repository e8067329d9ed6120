"""The structs of a kernel's CUDA C++: one aggregate per tuple type, built with braces and
returned by value (NVRTC inlines device functions and keeps the members in registers), and one
per ``@gpu_struct`` type (``gn_struct_Particle``), laid out as its NumPy dtype."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..lang.structs import StructInfo
from ..lang.types import VectorInfo
from .cnames import c_identifier

if TYPE_CHECKING:
    from collections.abc import Callable


def tuple_name(ty: ir.TupleType) -> str:
    """The struct of a tuple type: ``gn_tuple_f32_i32`` for ``tuple[f32, i32]``."""
    return "gn_tuple_" + "_".join(e.name for e in ty.elems)


def tuple_struct(ty: ir.TupleType) -> str:
    """Its definition: ``struct gn_tuple_f32_i32 { float v0; int v1; };``."""
    members = " ".join(f"{e.info.c_name} v{k};" for k, e in enumerate(ty.elems))
    return f"struct {tuple_name(ty)} {{ {members} }};"


def tuple_types(kernel: ir.Kernel) -> list[ir.TupleType]:
    """The tuple types a kernel's code uses (results, parameters, locals, values), in the order
    first seen."""
    found: dict[str, ir.TupleType] = {}

    def note(ty) -> None:
        if isinstance(ty, ir.TupleType):
            found.setdefault(tuple_name(ty), ty)

    functions: tuple[ir.DeviceFunction | ir.Kernel, ...] = (*kernel.device_functions, kernel)
    for fn in functions:
        note(getattr(fn, "ret", None))
        for var in (*fn.params, *fn.locals):
            note(var.ty)
        for n in ir.walk(fn.body):
            if isinstance(n, ir.Expr):
                note(n.ty)
    return list(found.values())


# ---- @gpu_struct types -----------------------------------------------------------------------


def struct_infos(kernel: ir.Kernel) -> list[StructInfo]:
    """The struct types a kernel's code uses, each after the structs its fields hold (C++
    needs a member's type complete).  (Two different structs of one name never meet: the
    checker refuses the second, see :func:`gpu_native.check.structs.struct_type`.)"""
    found: dict[str, StructInfo] = {}

    def note(ty) -> None:
        if isinstance(ty, ir.ArrayType):
            ty = ty.elem
        if not isinstance(ty, ir.StructType):
            return
        info = ty.info
        for k in range(len(info.fields)):
            note(ty.field_type(k))
        found.setdefault(info.c_name, info)

    functions: tuple[ir.DeviceFunction | ir.Kernel, ...] = (*kernel.device_functions, kernel)
    for fn in functions:
        note(getattr(fn, "ret", None))
        for var in (*fn.params, *fn.locals):
            note(var.ty)
        for decl in (*getattr(fn, "shared", ()), *fn.local_arrays):
            note(decl.var.ty)
        for n in ir.walk(fn.body):
            if isinstance(n, ir.Expr):
                note(n.ty)
    return list(found.values())


def struct_definition(info: StructInfo) -> str:
    """The C++ struct of a ``@gpu_struct`` type, its members in field order, with compile-time
    checks that NVRTC lays it out as the NumPy dtype does (size and alignment; the offsets too
    where NVRTC has ``__builtin_offsetof``)."""
    name = info.c_name
    members = "".join(f"    {f.info.c_name} {field_name(f.name)};\n" for f in info.fields)
    checks = [f"static_assert(sizeof({name}) == {info.itemsize} && alignof({name}) == "
              f"{info.align}, \"{info.title}: layout differs from its NumPy dtype\");"]
    # The offsets are checked where NVRTC knows __builtin_offsetof (13.5 does; 12.x and 13.0
    # have no offsetof at all without a C++ standard library), the size and alignment always.
    checks += ["#if defined(__has_builtin)", "#if __has_builtin(__builtin_offsetof)"]
    checks += [f"static_assert(__builtin_offsetof({name}, {field_name(f.name)}) == {f.offset}, "
               f"\"{info.title}.{f.name}: offset differs from its NumPy dtype\");"
               for f in info.fields]
    checks += ["#endif", "#endif"]
    return f"struct {name} {{\n{members}}};\n" + "\n".join(checks)


def field_name(name: str) -> str:
    """The C++ name of a struct field (see :func:`.cnames.c_identifier`)."""
    return c_identifier(name)


def leaf_names(info: StructInfo, prefix: str) -> list[tuple[str, str]]:
    """(C type, parameter name) of each scalar of a struct kernel parameter, in
    :meth:`~gpu_native.lang.structs.StructInfo.leaves` order (see :mod:`gpu_native.abi`)."""
    return [(leaf.c_name, f"{prefix}_s{k}") for k, leaf in enumerate(info.leaves())]


def gather(info: StructInfo, names: list[str]) -> str:
    """The braced initialiser of a struct from its scalars (consumed from ``names``)."""
    parts = []
    for f in info.fields:
        if isinstance(f.info, StructInfo):
            parts.append(gather(f.info, names))
        elif isinstance(f.info, VectorInfo):
            parts.append("{" + ", ".join(names.pop(0) for _ in range(f.info.n)) + "}")
        else:
            parts.append(names.pop(0))
    return "{" + ", ".join(parts) + "}"


class StructEmitter:
    """The struct expressions of :class:`~gpu_native.emit.cuda.CudaEmitter`."""

    if TYPE_CHECKING:
        expr: Callable[[ir.Expr], str]

    def emit_StructMake(self, e: ir.StructMake) -> str:
        # A braced list evaluates its items left to right, as the simulator does.
        return f"{e.ty.info.c_name}{{{', '.join(self.expr(i) for i in e.items)}}}"

    def emit_FieldGet(self, e: ir.FieldGet) -> str:
        ty = e.value.ty
        assert isinstance(ty, ir.StructType)
        return f"({self.expr(e.value)}).{field_name(ty.info.fields[e.index].name)}"

    def emit_StructWith(self, e: ir.StructWith) -> str:
        # Only the checker's `p.x = v` makes one, which emit_Assign writes as that; anywhere
        # else, a copy with the field replaced.
        name = field_name(e.ty.info.fields[e.index].name)
        return (f"([&]() {{ {e.ty.info.c_name} __gn_s = {self.expr(e.value)}; "
                f"__gn_s.{name} = {self.expr(e.item)}; return __gn_s; }}())")

    def field_assignment(self, at: ir.Expr, value: ir.Expr) -> tuple[str, ir.Expr] | None:
        """``.a.x`` and the value, where ``value`` is what the checker made of ``p.a.x = v`` for
        the place ``at`` (``p``): the place with that one field (or a vector field's component)
        replaced.  None for any other value."""
        if isinstance(value, ir.StructWith) and _same_place(value.value, at):
            name = f".{field_name(value.ty.info.fields[value.index].name)}"
            inner = ir.FieldGet(value.span, value.ty.field_type(value.index), at, value.index)
            deeper = self.field_assignment(inner, value.item)
            return (name + deeper[0], deeper[1]) if deeper else (name, value.item)
        if isinstance(value, ir.VecMake) and isinstance(at, ir.FieldGet):
            others = [k for k, item in enumerate(value.items) if not (
                isinstance(item, ir.VecComponent) and item.index == k and
                _same_place(item.value, at))]
            if len(others) == 1:
                return f".{'xyzw'[others[0]]}", value.items[others[0]]
        return None

    def field_path(self, ty: ir.Type, path: tuple[int, ...]) -> str:
        """``.a.x`` of a store into field ``path`` of an element of type ``ty``."""
        out = ""
        for k in path:
            if isinstance(ty, ir.StructType):
                out += f".{field_name(ty.info.fields[k].name)}"
                ty = ty.field_type(k)
            else:  # a component of a vector field
                out += f".{'xyzw'[k]}"
        return out


def _same_place(a: ir.Expr, b: ir.Expr) -> bool:
    """Do ``a`` and ``b`` name the same local or the same field of it (``p``, ``p.a``)?"""
    if isinstance(a, ir.Local) and isinstance(b, ir.Local):
        return a.var is b.var
    if isinstance(a, ir.FieldGet) and isinstance(b, ir.FieldGet):
        return a.index == b.index and _same_place(a.value, b.value)
    return False
