"""The resolve pass: a function's signature, and the local names its body assigns.

Names in kernel bodies are resolved by :mod:`.scope` (module constants, gpu_native's API, device
functions, other modules); this pass applies it to the signature, before the body is typed.
"""

from __future__ import annotations

from typing import Any

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..lang.spellings import did_you_mean
from ..nodes import node
from .context import FunctionContext
from .scope import PYTHON_BUILTINS, registry_entry


@node(eq=False)
class Declarations:
    """What the resolve pass produces for one function.

    ``params`` in order, also by name in ``param_vars``; ``ret_type`` (``VOID`` for kernels);
    ``assign_counts``: how often each name is assigned (a ``for`` target and an augmented
    assignment count twice: the value changes); ``plain_assigned``: the names assigned other
    than as a ``for`` target; ``unique_params``: the ids of the ``UniqueId`` parameters;
    ``pending_locals``: the local names, which a use before their assignment must not resolve
    to a module-level name; ``const_params``: the values of the ``Const`` parameters (which are
    not in ``params``: they are not passed at run time).
    """

    params: tuple[ir.Var, ...]
    param_vars: dict[str, ir.Var]
    ret_type: ir.Type
    assign_counts: dict[str, int]
    plain_assigned: set[str]
    unique_params: set[int]
    pending_locals: set[str]
    const_params: dict[str, object]


def resolve(ctx: FunctionContext, fn: S.FunctionDef) -> Declarations:
    """The resolve pass (see :class:`Declarations`): type the parameters and the return value,
    and count the assignments of the body."""
    is_kernel = fn.kind == "kernel"
    params: list[ir.Var] = []
    param_vars: dict[str, ir.Var] = {}
    unique_params: set[int] = set()
    const_params: dict[str, object] = {}
    defaults = param_defaults(ctx.resolver, fn)
    for p in fn.params:
        if p.annotation is None:
            example = "CUDASlice[f32]" if is_kernel else "f32"
            raise TranspileError(f"parameter '{p.name}' needs a type annotation, e.g. "
                                 f"`{p.name}: {example}`", p.span)
        ty = annotation(ctx, p.annotation, allow_unique=not is_kernel, allow_array=True,
                        allow_device=not is_kernel, allow_tuple=not is_kernel)
        if ty == "const":
            if p.name in ctx.constants:
                const_params[p.name] = ctx.constants[p.name]
            elif p.name in defaults:
                const_params[p.name] = defaults[p.name]
            else:  # pragma: no cover - call sites and the check of uncalled functions bind it
                raise TranspileError(f"the Const parameter '{p.name}' has no value here", p.span)
            continue
        if p.name in defaults:
            _check_default(p, ty, defaults[p.name])
        unique = ty == "unique"
        if unique:
            ty = ir.I64
        var = ir.Var(p.name, ty, p.span, True)
        param_vars[p.name] = var
        params.append(var)
        if unique:
            unique_params.add(id(var))
    ret_type: ir.Type = ir.VOID
    if fn.returns is not None:
        ret = fn.returns
        returns_none = isinstance(ret, S.Name) and ret.id == "None"
        if is_kernel:
            if not (returns_none or isinstance(ret, S.Num)):
                raise TranspileError("kernels return nothing; drop the return annotation",
                                     ret.span)
        elif not returns_none:  # `-> None` is a device function that returns nothing
            ret_type = annotation(ctx, fn.returns, allow_device=True)
            if not isinstance(ret_type, (ir.ScalarType, ir.VectorType, ir.TupleType,
                                         ir.StructType)):
                raise TranspileError("device functions return a scalar value, a vector, a "
                                     "struct or a tuple of scalars (`-> tuple[f32, i32]`)",
                                     fn.returns.span)
    counts: dict[str, int] = {}
    plain: set[str] = set()
    count_assignments(fn.body, counts, plain)
    for name, var in param_vars.items():
        if counts.get(name) and isinstance(var.ty, ir.ArrayType):
            raise TranspileError(f"the array parameter '{name}' cannot be reassigned",
                                 first_assignment(fn.body, name) or var.span,
                                 f"'{name}' is the array the caller passes; give what you "
                                 "assign a name of its own")
    for p in fn.params:
        if p.name in const_params and counts.get(p.name):
            raise TranspileError(f"the Const parameter '{p.name}' cannot be reassigned",
                                 first_assignment(fn.body, p.name) or p.span)
    return Declarations(tuple(params), param_vars, ret_type, counts, plain, unique_params,
                        set(counts) - set(param_vars) - set(const_params), const_params)


def param_defaults(resolver, fn: S.FunctionDef) -> dict[str, object]:
    """The values of ``fn``'s parameter defaults (compile-time constants, evaluated in its
    module)."""
    from .tuples import constant_value

    return {p.name: constant_value(resolver, p.default, f"the default of parameter '{p.name}'")
            for p in fn.params if p.default is not None}


def _check_default(p: S.Param, ty, value) -> None:
    """A default must suit its parameter's type, as an argument would."""
    from . import promote as P

    assert p.default is not None
    if isinstance(ty, ir.ArrayType) or ty == "unique":
        raise TranspileError(f"the array or unique id parameter '{p.name}' cannot have a "
                             "default", p.default.span)
    types = ty.elems if isinstance(ty, ir.TupleType) else (ty,)
    values = value if isinstance(value, tuple) else (value,)
    if isinstance(ty, ir.TupleType) != isinstance(value, tuple) or len(types) != len(values):
        raise TranspileError(f"the default of parameter '{p.name}' must be a {ty}",
                             p.default.span)
    for t, v in zip(types, values):
        why = None if t == ir.BOOL and isinstance(v, bool) else (
            "a tuple cannot be an item" if isinstance(v, tuple) else P.literal_fits(v, t))
        if why is not None:
            raise TranspileError(f"the default of parameter '{p.name}': {why}", p.default.span)


def annotation(ctx: FunctionContext, e: S.Expr, allow_unique: bool = False,
               allow_array: bool = False, allow_device: bool = False, allow_tuple: bool = True):
    """Evaluate a type annotation: a ScalarType, a VectorType, an ArrayType, a TupleType,
    "unique" (UniqueId) or "const" (Const, where ``allow_device``: a device function's
    parameter)."""
    if isinstance(e, S.Subscript):
        sym = ctx.resolver.dotted(e.value)
        array = registry_entry(sym)
        if array is not None and array.form == "tuple type":
            return _tuple_annotation(ctx, e, allow_tuple)
        if array is None or array.form != "array type":
            raise TranspileError("unsupported annotation; use CUDASlice[T], CUDASliceMut[T], "
                                 "their 2D/3D forms, or a scalar type", e.span)
        if not allow_array:
            raise TranspileError(f"{array.name}[...] is only valid as a parameter annotation",
                                 e.span)
        strided = False
        if len(e.index) == 2:
            layout = e.index[1]
            marker = registry_entry(ctx.resolver.dotted(layout) if isinstance(
                layout, (S.Name, S.Attribute)) else None)
            if marker is None or marker.form != "array layout":
                raise TranspileError(f"the second argument of {array.name}[T, ...] is the "
                                     "layout: only Strided (from gpu_native) is supported",
                                     layout.span)
            strided = True
        elif len(e.index) != 1:
            raise TranspileError(f"{array.name}[T] takes one element type (and optionally "
                                 f"Strided: {array.name}[T, Strided])", e.span)
        elem = annotation(ctx, e.index[0])
        if not isinstance(elem, (ir.ScalarType, ir.VectorType, ir.StructType)):
            raise TranspileError("the element type must be a scalar type such as f32, a "
                                 "vector type such as vec3f, a complex type or a @gpu_struct "
                                 "class", e.index[0].span)
        ndim, mutable = array.value
        return ir.ArrayType(elem, ndim, mutable, strided=strided)
    sym = ctx.resolver.dotted(e) if isinstance(e, (S.Name, S.Attribute)) else None
    if sym is None:
        raise TranspileError("unsupported annotation", e.span)
    entry = registry_entry(sym)
    if sym.kind == "gn" and entry is not None:
        if entry.form == "type":
            return ir.scalar(sym.name)
        if entry.form == "vector type":
            return ir.vector(sym.name)
        if entry.form == "complex type":
            return ir.complex_type(sym.name)
        if entry.form == "index type":
            if not allow_unique:
                raise TranspileError("UniqueId is not a valid annotation here", e.span,
                                     "kernel parameters are arrays or scalars")
            return "unique"
        if entry.form == "array type":
            raise TranspileError(f"{sym.name} needs an element type: {sym.name}[f32]", e.span)
        if entry.form == "const type":
            if not allow_device:
                raise TranspileError("Const is the annotation of a @gpu_device function's "
                                     "parameter", e.span, "a kernel takes compile-time "
                                     "constants from module-level constants (OFFSETS = (16, 8))")
            return "const"
    if sym.kind == "builtin" and entry is not None and entry.form == "tuple type":
        raise TranspileError("tuple needs its item types: tuple[f32, i32]", e.span)
    if sym.kind == "builtin" and entry is not None and entry.value is not None:
        return ir.scalar(entry.value)  # int, float and bool as annotations
    if sym.kind == "struct":
        from .structs import struct_type

        pair: Any = sym.value  # a struct's (ModuleScan, StructDecl)
        scan, decl = pair
        return struct_type(scan, decl, ctx.resolver.locator, e.span)
    if sym.kind == "typevar":
        bound = ctx.binding.get(sym.name)
        if bound is None:
            raise TranspileError(f"the TypeVar '{sym.name}' is not bound here", e.span)
        return bound
    if sym.kind == "undefined" and sym.name not in PYTHON_BUILTINS:  # str: not a kernel type
        raise TranspileError(f"name '{sym.name}' is not defined{did_you_mean(sym.name)}",
                             e.span)
    raise TranspileError(f"'{sym.name}' is not a kernel type", e.span,
                         "use f32, i32, ..., CUDASlice[T], CUDASliceMut[T] or UniqueId")


def _tuple_annotation(ctx: FunctionContext, e: S.Subscript, allow_tuple: bool) -> ir.TupleType:
    if not allow_tuple:
        raise TranspileError("kernel parameters cannot be tuples", e.span,
                             "pass each value as a parameter of its own, or use a module-level "
                             "constant tuple")
    elems = []
    for item in e.index:
        ty = annotation(ctx, item)
        if not isinstance(ty, ir.ScalarType):
            raise TranspileError("a tuple in a kernel holds scalars: each item's type is one "
                                 "such as f32", item.span)
        elems.append(ty)
    return ir.TupleType(tuple(elems))


# ---- the names a body assigns ----------------------------------------------------------------


def assigned_names(stmts) -> set[str]:
    """The names assigned anywhere in ``stmts`` (nested bodies included)."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, (S.Assign,)):
            for t in s.targets:
                out |= _target_names(t)
        elif isinstance(s, (S.AnnAssign, S.AugAssign)):
            out |= _target_names(s.target)
        elif isinstance(s, S.For):
            out |= _target_names(s.target)
            out |= assigned_names(s.body)
        elif isinstance(s, (S.While, S.With)):
            out |= assigned_names(s.body)
        elif isinstance(s, S.If):
            out |= assigned_names(s.body) | assigned_names(s.orelse)
    return out


def first_assignment(stmts, name: str) -> SourceSpan | None:
    """Where ``stmts`` first assign ``name`` (an assignment's or a ``for`` loop's target), in
    source order; ``None`` where they do not."""
    for s in stmts:
        targets: tuple = ()
        inner: tuple = ()
        if isinstance(s, S.Assign):
            targets = s.targets
        elif isinstance(s, (S.AnnAssign, S.AugAssign)):
            targets = (s.target,)
        elif isinstance(s, S.For):
            targets, inner = (s.target,), (s.body,)
        elif isinstance(s, (S.While, S.With)):
            inner = (s.body,)
        elif isinstance(s, S.If):
            inner = (s.body, s.orelse)
        for t in targets:
            for e in (t.elts if isinstance(t, S.Tuple) else (t,)):
                if name in _target_names(e):
                    return e.span
        for body in inner:
            found = first_assignment(body, name)
            if found is not None:
                return found
    return None


def _target_names(t: S.Expr) -> set[str]:
    if isinstance(t, S.Name):
        return {t.id}
    if isinstance(t, S.Attribute) and isinstance(t.value, S.Name):
        return {t.value.id}  # `v.x = ...` assigns the local vector v
    if isinstance(t, S.Tuple):
        out: set[str] = set()
        for e in t.elts:
            out |= _target_names(e)
        return out
    return set()


def count_assignments(stmts, counts: dict[str, int], plain: set[str]) -> None:
    """Count assignments per local name (a loop target and an augmented assignment count as
    two); ``plain`` collects the names assigned other than as a ``for`` target."""
    for s in stmts:
        if isinstance(s, (S.Assign, S.AnnAssign, S.AugAssign)):
            targets = s.targets if isinstance(s, S.Assign) else (s.target,)
            for t in targets:
                for n in _target_names(t):
                    counts[n] = counts.get(n, 0) + (2 if isinstance(s, S.AugAssign) else 1)
                    plain.add(n)
        elif isinstance(s, S.For):
            for n in _target_names(s.target):
                counts[n] = counts.get(n, 0) + 2
            count_assignments(s.body, counts, plain)
        elif isinstance(s, (S.While, S.With)):
            count_assignments(s.body, counts, plain)
        elif isinstance(s, S.If):
            count_assignments(s.body, counts, plain)
            count_assignments(s.orelse, counts, plain)
