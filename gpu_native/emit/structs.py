"""The structs a kernel's tuples are in the CUDA C++: one aggregate per tuple type, built with
braces and returned by value (NVRTC inlines device functions and keeps the members in
registers)."""

from __future__ import annotations

from .. import ir


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
