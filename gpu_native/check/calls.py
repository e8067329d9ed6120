"""The type pass over calls: casts, builtins, math functions, layouts, warp operations,
atomics and device functions (each picked by its registry entry's ``check`` name)."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from .. import ir
from ..errors import SourceSpan
from ..frontend import syntax as S
from ..lang import registry as R
from ..lang.types import VECTORS
from . import promote as P
from .checker_base import CheckerBase
from .expressions import (
    ATOMIC_METHODS,
    LAYOUTS,
    AtomicHandle,
    GeneratorType,
    UidValue,
    WeakConst,
    float_to_int,
    foreign_hint_of,
)


class CallChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: every call in a kernel body."""

    # ---- calls ------------------------------------------------------------------------------

    def visit_Call(self, e: S.Call) -> ir.Expr:
        func = e.func
        # Methods: x.atomic_ref(i) and x.atomic_ref(i).fetch_add(v); Layout.uid(); grid_stride.
        if isinstance(func, S.Attribute):
            if isinstance(func.value, S.Name) and isinstance(
                    getattr(self.vars.get(func.value.id), "ty", None), GeneratorType):
                return self.call_generator(func, e)
            if self.is_generator_declaration(func.value):
                self.expr(func.value)  # `philox(...).uniform()`: says to assign it first
            if func.attr in R.COMPLEX_METHODS and not self.is_module_path(func.value):
                value = self.materialize(self.expr(func.value))
                if not isinstance(value.ty, ir.ComplexType):
                    raise self.error(f"{func.attr}() is a method of complex numbers, not of "
                                     f"{value.ty}", func.span)
                return self.call_conjugate(value, e)
            if func.attr == R.ATOMIC_REF.name and not self.is_module_path(func.value):
                return self.call_atomic_ref(func, e)
            if func.attr in ATOMIC_METHODS and isinstance(func.value, S.Call) and isinstance(
                    func.value.func, S.Attribute) and func.value.func.attr == R.ATOMIC_REF.name:
                handle = self.expr(func.value)
                assert isinstance(handle, AtomicHandle)
                return self.call_atomic(handle, ATOMIC_METHODS[func.attr], e)
            sym = self.ctx.resolver.dotted(func.value) if not self.is_local_root(
                func.value) else None
            if sym is not None and sym.kind == "gn" and sym.name in LAYOUTS:
                return self.call_layout(sym.name, func.attr, e)
        if isinstance(func, (S.Name, S.Attribute)) and not (
                isinstance(func, S.Name) and func.id in self.vars) and not self.is_local_root(func):
            sym = self.ctx.resolver.dotted(func)
            if sym is not None:
                return self.call_symbol(sym, e)
        raise self.error("only gpu_native intrinsics, math functions and @gpu_device functions "
                         "can be called in kernels", e.func.span, foreign_hint_of(func))

    def is_module_path(self, e: S.Expr) -> bool:
        if self.is_local_root(e):
            return False
        sym = self.ctx.resolver.dotted(e)
        return sym is not None and sym.kind in ("module", "gn")

    def args(self, e: S.Call, names: tuple[str, ...], required: int,
             what: str) -> dict[str, S.Expr]:
        if len(e.args) > len(names):
            raise self.error(f"{what} takes at most {len(names)} argument"
                             f"{'s' if len(names) != 1 else ''} ({len(e.args)} given)", e.span)
        got: dict[str, S.Expr] = dict(zip(names, e.args))
        for kw in e.keywords:
            if kw.name not in names:
                raise self.error(f"{what} has no parameter '{kw.name}'", kw.span)
            if kw.name in got:
                raise self.error(f"{what} got '{kw.name}' twice", kw.span)
            got[kw.name] = kw.value
        missing = [n for n in names[:required] if n not in got]
        if missing:
            raise self.error(f"{what} is missing argument '{missing[0]}'", e.span)
        return got

    def call_symbol(self, sym, e: S.Call) -> ir.Expr:
        if sym.kind == "gn":
            handler = self.gn_call_handlers().get(sym.name)
            if handler is None:
                form = R.GPU_NATIVE[sym.name].form
                if form == "allocation":
                    raise self.error(f"{sym.name}() can only be assigned to a local variable, "
                                     "e.g. `tile = shared_array(f32, (16, 16))`", e.span)
                if form == "statement":
                    raise self.error(f"{sym.name}() is a statement, not a value", e.span)
                if form == "context":
                    raise self.error(f"{sym.name}() is used as `with {sym.name}():`", e.span)
                if form == "loop":
                    raise self.error(f"{sym.name}() is iterated by a `for` loop: "
                                     f"`for i in {sym.name}(range(n)):`", e.span)
                if form == "generator":
                    raise self.error(f"{sym.name}() makes a random number generator: assign it "
                                     f"to a local, `rng = {sym.name}(seed, uid)`, and draw from "
                                     "it, `rng.uniform()`", e.span)
                raise self.error(f"gpu_native.{sym.name} cannot be called in a kernel", e.span)
            arch = R.GPU_NATIVE[sym.name].arch
            if arch:
                self.traits.note_arch(arch, f"{sym.name} at {e.span.file}:{e.span.line}")
            return getattr(self, handler)(sym.name, e)
        if sym.kind == "math":
            return self.call_math(sym.name, e)
        if sym.kind == "cmath":
            return self.call_cmath(sym.name, e)
        if sym.kind == "builtin":
            builtin = _BUILTIN_CALLS.get(sym.name)
            if builtin is None:
                entry = R.BUILTINS.get(sym.name)
                if entry is not None and entry.form == "loop":
                    raise self.error(f"{sym.name}() is iterated by a `for` loop, not used as a "
                                     "value", e.span, entry.doc)
                raise self.error(f"{sym.name}() is not supported here", e.span)
            return builtin(self, e)
        if sym.kind == "device":
            return self.call_device(sym, e)
        if sym.kind == "struct":
            return self.call_struct_make(sym, e)
        if sym.kind == "typevar":
            return self.call_typevar(sym.name, e)
        return self.from_symbol(sym, e.func)

    def gn_call_handlers(self) -> dict[str, str]:
        """The checker's handler of each callable gpu_native name (a method name)."""
        return _GN_CALLS

    def call_cast(self, name: str, e: S.Call, spelled: str | None = None) -> ir.Expr:
        """``f32(x)``: the conversion to the scalar type ``name``; ``spelled``: the TypeVar the
        call names instead (``T(x)`` where T is ``name`` here), for the messages."""
        here = f" ({spelled} is {name} here)" if spelled else ""
        what = f"{spelled or name}(){here}"
        if len(e.args) != 1 or e.keywords:
            raise self.error(f"{spelled or name}(x) takes exactly one argument{here}", e.span)
        target = ir.scalar(name)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            v = value.value
            info = target.info
            if info.is_int and isinstance(v, int) and not info.min <= v <= info.max:
                raise self.error(f"{v} does not fit in {name} ({info.min}..{info.max}){here}",
                                 e.span)
        if target == ir.BOOL:
            return self.to_bool(value, what)
        return self.coerce(value, target, what, explicit=True)

    def call_typevar(self, name: str, e: S.Call) -> ir.Expr:
        """``T(x)`` for a TypeVar ``T``: exactly the conversion to the type ``T`` stands for in
        the specialisation being checked (``f32(x)`` where T is f32, ``i32(x)`` where it is
        i32), as Numba's ``dtype(0)``."""
        bound = self.ctx.binding.get(name)
        if bound is None:
            raise self.error(f"the TypeVar '{name}' is not bound here", e.func.span,
                             f"{name}(x) converts to the type {name} stands for where a "
                             f"parameter's annotation names {name}")
        return self.call_cast(bound.name, e, spelled=name)

    def call_int(self, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("int(x) takes exactly one argument", e.span)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            # As int(x) of a value computes it: truncated, saturated at i64's range, NaN 0.
            v = value.value
            return WeakConst(e.span, ir.I64, float_to_int(v, ir.I64.info) if isinstance(
                v, float) else int(v))
        return self.coerce(value, ir.I64, "int()", explicit=True)

    def call_float(self, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("float(x) takes exactly one argument", e.span)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            return WeakConst(e.span, ir.F64,
                             self.int_as_float(value.value, ir.F64, "float()", e.span))
        return self.coerce(value, ir.F64, "float()", explicit=True)

    def call_bool(self, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("bool(x) takes exactly one argument", e.span)
        return self.to_bool(self.expr(e.args[0]), "bool()")

    def call_round(self, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("round(x) takes one argument in kernels (no ndigits)", e.span)
        value = self.materialize(self.expr(e.args[0]))
        ty = self.scalar_of(value, "round()'s argument")
        if ty.info.is_int:
            return self.coerce(value, ir.I64, "round()", explicit=True)
        if ty.info.bits < 32:
            value, ty = self.coerce(value, ir.F32, "round()", explicit=True), ir.F32
        return ir.Cast(e.span, ir.I64, ir.MathCall(e.span, ty, "rint", (value,)))

    def call_len(self, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("len(a) takes exactly one argument", e.span)
        base = self.expr(e.args[0])
        if self.is_tuple(base):
            return WeakConst(e.span, ir.I64, self.tuple_length(base))
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"len() needs an array or a tuple, not {base.ty}", e.args[0].span)
        return self.shape_of(base, 0, e.span)

    def call_abs(self, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("abs(x) takes exactly one argument", e.span)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            return WeakConst(e.span, ir.I64, abs(value.value))
        if isinstance(value.ty, ir.ComplexType):
            return self.complex_abs(value, e.span)
        ty = P.arithmetic_type(self.scalar_of(value, "abs()'s argument"))
        value = self.coerce(value, ty, "abs()", explicit=True)
        if ty.info.kind == "uint":
            return value
        return ir.MathCall(e.span, ty, "abs", (value,))

    def call_minmax(self, e: S.Call) -> ir.Expr:
        name = e.func.id if isinstance(e.func, S.Name) else "min"
        if len(e.args) < 2 or e.keywords:
            raise self.error(f"{name}() in kernels takes two or more scalar arguments", e.span)
        values = [self.expr(a) for a in e.args]
        if any(isinstance(v.ty, ir.VectorType) and not isinstance(v, WeakConst) for v in values):
            return self.vector_minmax(name, values, e.span)
        literals = [v.value for v in values if isinstance(v, WeakConst)]
        if len(literals) == len(values):
            return WeakConst(e.span, ir.I64, (min if name == "min" else max)(literals))
        ty: ir.ScalarType | None = None
        for v in values:
            if isinstance(v, WeakConst):
                continue
            t = P.arithmetic_type(self.scalar_of(v, f"{name}()'s argument"))
            ty = t if ty is None else self.common_type(
                ir.Const(v.span, ty, 0), ir.Const(v.span, t, 0), e.span)
        assert ty is not None
        for v in values:
            if isinstance(v, WeakConst):
                ty = self.promoted_literal(ty, v.value, v.span)
        args = tuple(self.coerce(v, ty, f"{name}()", explicit=True) for v in values)
        result = args[0]
        for a in args[1:]:
            result = ir.MathCall(e.span, ty, name, (result, a))
        return result

    def call_math(self, name: str, e: S.Call) -> ir.Expr:
        """A math function, typed by its registry entry: its ``float`` operands are promoted
        together (integers compute in ``f64``, half types in ``f32``) and its ``int`` operands
        are ``i32``s; the result is that float type, or ``bool``."""
        entry = R.MATH[name]
        arity = len(entry.params)
        if len(e.args) != arity or e.keywords:
            raise self.error(f"math.{name}() takes {arity} argument{'s' if arity > 1 else ''}",
                             e.span)
        values = [self.expr(a) for a in e.args]
        for v in values:
            self.refuse_complex(v, f"math.{name}()", f"use cmath.{name}()"
                                if name in R.CMATH else "see the cmath functions")
        ty: ir.ScalarType | None = None
        for param, v in zip(entry.params, values):
            if param.type == "float" and not isinstance(v, WeakConst):
                t = self.scalar_of(v, f"math.{name}()'s argument")
                ty = t if ty is None else self.promoted(ty, t, e.span)
        if ty is None or ty.info.is_int or ty.info.kind == "bool":
            ty = ir.F64 if ty is None or ty.info.is_int or ty.info.kind == "bool" else ty
        if ty.info.bits < 32:
            ty = ir.F32
        args = []
        for param, v in zip(entry.params, values):
            if param.type == "int":
                args.append(self.int32_operand(v, f"math.{name}()'s {param.name}"))
            else:
                args.append(self.coerce(v, ty, f"math.{name}()", explicit=True))
        result_ty = ir.BOOL if entry.result == "bool" else ty
        return ir.MathCall(e.span, result_ty, entry.ir_name, tuple(args))

    def int32_operand(self, v: ir.Expr, what: str) -> ir.Expr:
        """An integer operand that the C function takes as an ``int``: a literal that fits, or
        a value of an integer type that ``i32`` holds (a wider one would be cut silently)."""
        if isinstance(v, WeakConst):
            if not isinstance(v.value, int):
                raise self.error(f"{what} must be an integer, not {v.value!r}", v.span)
            return self.coerce(v, ir.I32, what)
        ty = self.scalar_of(v, what)
        if not ty.info.is_int:
            raise self.error(f"{what} must be an integer, not {ty}", v.span)
        if P.arithmetic_type(ty) != ir.I32:
            raise self.error(f"{what} must be an integer that i32 holds, not {ty}", v.span,
                             "convert it with i32(...)")
        return self.coerce(v, ir.I32, what, explicit=True)

    def call_layout(self, layout: str, method: str, e: S.Call) -> ir.Expr:
        scope, ndim = LAYOUTS[layout]
        entry = R.LAYOUT_METHODS.get(method)
        if entry is not None and entry.form == "loop":
            raise self.error(f"{method}() is used as `for i in FlatLayout1D.{method}(n):`",
                             e.span)
        if entry is None:
            raise self.error(f"{layout}.{method}() does not exist; use {layout}.uid()", e.span)
        if e.args or e.keywords:
            raise self.error(f"{layout}.{method}() takes no arguments", e.span)
        self.require_layout(layout, ndim, e.span)
        self.traits.note_uid(scope)
        if ndim == 1:
            return ir.UidComponent(e.span, ir.I64, scope, 0)
        return UidValue(e.span, ir.UidType(ndim, scope), scope, ndim)

    def require_layout(self, layout: str, ndim: int, span: SourceSpan) -> None:
        kernel_ndim = self.ctx.ndim
        if ndim != kernel_ndim:
            raise self.error(
                f"{layout} is a {ndim}-D layout but this is a Kernel{kernel_ndim}D kernel", span,
                f"use {layout[:-2]}{kernel_ndim}D, or declare the kernel @gpu_kernel(Kernel{ndim}D)")

    def call_lane_id(self, name: str, e: S.Call) -> ir.Expr:
        if e.args or e.keywords:
            raise self.error(f"{name}() takes no arguments", e.span)
        self.traits.note_special(name)
        return ir.LaneId(e.span, ir.I32)

    def mask_arg(self, got: dict, span: SourceSpan) -> ir.Expr:
        if "mask" not in got:
            return ir.Const(span, ir.U32, R.FULL_MASK)
        return self.coerce(self.expr(got["mask"]), ir.U32, "mask")

    def call_shuffle(self, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        lane_arg = entry.params[1].name  # (value, lane, width, mask)
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        value = self.materialize(self.expr(got["value"]))
        ty = self.scalar_of(value, f"{name}()'s value")
        lane = self.coerce(self.expr(got[lane_arg]), ir.I32, f"{name}()'s {lane_arg}")
        width = self.shuffle_width(name, lane_arg, got, e.span)
        self.traits.note_special("warp")
        if ty == ir.BOOL:
            # A bool moves as the 0 or 1 of an i32 (the warp shuffles move 32-bit words).
            moved = ir.WarpOp(e.span, ir.I32, name, (ir.Cast(value.span, ir.I32, value), lane,
                                                     width), self.mask_arg(got, e.span))
            return ir.Compare(e.span, ir.BOOL, "!=", moved, ir.Const(e.span, ir.I32, 0))
        return ir.WarpOp(e.span, ty, name, (value, lane, width), self.mask_arg(got, e.span))

    def shuffle_width(self, name: str, lane_arg: str, got: dict, span: SourceSpan) -> ir.Expr:
        """A shuffle's width: 32 where not given; a literal outside 1..32 is refused with the
        order of the arguments (CUDA's ``__shfl_down_sync`` and Numba's ``shfl_down_sync`` take
        the mask first, so ``shfl_down(v, 1, 0xffffffff)`` passes a mask as the width)."""
        if "width" not in got:
            return ir.Const(span, ir.I32, 32)
        raw = self.expr(got["width"])
        if isinstance(raw, WeakConst) and isinstance(raw.value, int) and \
                not isinstance(raw.value, bool) and not 1 <= raw.value <= 32:
            raise self.error(
                f"{name}()'s width is {raw.value}: a width is the number of lanes of a segment, "
                "a power of two from 1 to 32", raw.span,
                f"the arguments are ({', '.join(p.name for p in R.GPU_NATIVE[name].params)}); "
                f"a mask goes by keyword: {name}(value, {lane_arg}, mask={raw.value:#x})")
        return self.coerce(raw, ir.I32, "width")

    def call_vote(self, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        pred = self.to_bool(self.expr(got["predicate"]), f"{name}()'s predicate")
        self.traits.note_special("warp")
        ty = ir.BOOL if entry.result == "bool" else ir.scalar(entry.result)
        return ir.WarpOp(e.span, ty, name, (pred,), self.mask_arg(got, e.span))

    def call_activemask(self, name: str, e: S.Call) -> ir.Expr:
        if e.args or e.keywords:
            raise self.error(f"{name}() takes no arguments", e.span)
        self.traits.note_special("warp")
        return ir.WarpOp(e.span, ir.U32, name, (), None)

    def call_match(self, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        value = self.materialize(self.expr(got["value"]))
        ty = self.scalar_of(value, f"{name}()'s value")
        if ty.name not in entry.value:
            raise self.error(f"{name}() compares a value of {', '.join(entry.value)}, not {ty}",
                             value.span, "convert it, e.g. i32(x)")
        self.traits.note_special("warp")
        return ir.WarpOp(e.span, ir.U32, name, (value,), self.mask_arg(got, e.span))

    def call_barrier_vote(self, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        pred = self.to_bool(self.expr(got["predicate"]), f"{name}()'s predicate")
        self.traits.note_barrier("block")
        return ir.BarrierVote(e.span, ir.scalar(entry.result) if entry.result != "bool" else
                              ir.BOOL, entry.op, pred)

    # ---- bits ---------------------------------------------------------------------------------

    def call_bits(self, name: str, e: S.Call) -> ir.Expr:
        """``popc``, ``clz``, ``ctz``, ``ffs``, ``brev`` on one 32- or 64-bit integer (the types
        CUDA has them for); ``byte_perm`` and the funnel shifts on 32-bit words."""
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        values = [self.expr(got[p]) for p in entry.param_names]
        if entry.value == ("u32",):
            args = tuple(self.word32_operand(v, f"{name}()'s {p}")
                         for v, p in zip(values, entry.param_names))
            return ir.MathCall(e.span, ir.U32, entry.ir_name, args)
        value = self.materialize(values[0])
        ty = self.scalar_of(value, f"{name}()'s argument")
        if ty.name not in entry.value:
            raise self.error(f"{name}() takes a 32- or 64-bit integer ({', '.join(entry.value)}),"
                             f" not {ty}", value.span,
                             "convert it, e.g. u32(x)" if ty.info.is_int else None)
        result = ty if entry.result == "T" else ir.scalar(entry.result)
        return ir.MathCall(e.span, result, entry.ir_name, (value,))

    def word32_operand(self, v: ir.Expr, what: str) -> ir.Expr:
        """A 32-bit word (CUDA's ``unsigned int``): a literal that ``u32`` holds, or an integer
        of at most 32 bits (an ``i32`` is taken as its bits); a wider one would be cut."""
        if isinstance(v, WeakConst):
            return self.coerce(v, ir.U32, what)
        ty = self.scalar_of(v, what)
        if not ty.info.is_int or ty.info.bits > 32:
            raise self.error(f"{what} must be a 32-bit integer (u32 or i32), not {ty}", v.span,
                             "convert it with u32(...)" if ty.info.is_int else None)
        return self.coerce(v, ir.U32, what, explicit=True)

    def call_bitcast(self, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        target = self.annotation(got["dtype"])
        if not isinstance(target, ir.ScalarType):
            raise self.error(f"{name}()'s dtype must be a scalar type such as u32",
                             got["dtype"].span)
        value = self.materialize(self.expr(got["x"]))
        ty = self.scalar_of(value, f"{name}()'s x")
        if ir.BOOL in (ty, target):
            raise self.error(f"{name}() reinterprets the bits of numbers; bool_ is not one",
                             e.span, "use bool(x) or an integer cast")
        if ty.info.bits != target.info.bits:
            raise self.error(f"{name}() needs two types of one width: {ty} has {ty.info.bits} "
                             f"bits, {target} has {target.info.bits}", e.span,
                             "pair f32 with i32/u32, f64 with i64/u64, f16/bf16 with i16/u16")
        if ty == target:
            return value
        return ir.MathCall(e.span, target, entry.ir_name, (value,))

    # ---- atomics ------------------------------------------------------------------------------

    def call_atomic_ref(self, func: S.Attribute, e: S.Call) -> ir.Expr:
        base = self.expr(func.value)
        if not isinstance(base, ir.ArrayRef):
            raise self.error("atomic_ref() is a method of arrays", func.span)
        if e.keywords:
            raise self.error("atomic_ref() takes only the index", e.span)
        indices = self.indices(base, e.args, e.span)
        return AtomicHandle(e.span, base.ty.elem, base, indices)

    def call_atomic(self, handle: AtomicHandle, op: str, e: S.Call) -> ir.Expr:
        base = handle.array
        ty = base.ty.elem
        what = f"atomic {op}"
        if base.ty.space == "const":
            raise self.error(f"'{base.var.name}' is a constant array (const_array, in constant "
                             "memory): kernels read it but cannot write it, atomically or "
                             "not", e.span)
        if not base.ty.mutable:
            raise self.error(f"{base.var.name} is read-only (CUDASlice); atomics need a writable "
                             "array (CUDASliceMut or shared memory)", e.span)
        if base.ty.space == "local":
            raise self.error("atomics on per-thread local arrays are pointless; use plain "
                             "assignment", e.span)
        entry = R.ATOMIC_OPS[op]
        allowed = entry.value  # the element types it accepts
        if ty.name not in allowed:
            if isinstance(ty, ir.VectorType) and not isinstance(ty, ir.ComplexType):
                raise self.error(*_vector_atomic_refusal(entry, ty, e.span))
            raise self.error(f"{what} is not available for {ty} arrays (supported: "
                             f"{', '.join(t for t in allowed if t not in VECTORS)})",
                             e.span)
        names = entry.param_names  # the operands, then order
        nreq = entry.required
        assert isinstance(e.func, S.Attribute)  # x.atomic_ref(i).op(...)
        got = self.args(e, names, nreq, f".{e.func.attr}()")
        operands = tuple(self.coerce(self.expr(got[n]), ty, f"{what} operand")
                         for n in names[:nreq])
        order = "relaxed"
        if "order" in got:
            sym = self.ctx.resolver.dotted(got["order"])
            if sym is None or sym.kind != "order" or sym.name not in _ORDERS:
                raise self.error("order= must be a MemoryOrder member, e.g. "
                                 "MemoryOrder.ACQ_REL", got["order"].span)
            order = sym.name
        if op == "load" and order in ("release", "acq_rel"):
            raise self.error(f"an atomic load cannot have {order} order", e.span)
        if op == "store" and order in ("acquire", "acq_rel"):
            raise self.error(f"an atomic store cannot have {order} order", e.span)
        checks = self.bounds.checks(base, handle.indices, e.span)
        result_ty = ir.VOID if op == "store" else ty
        atomic = ir.Atomic(e.span, result_ty, op, base, handle.indices, checks, operands, order)
        self.unique.note_atomic(atomic)
        return atomic

    # ---- device functions ---------------------------------------------------------------------

    def call_device(self, sym, e: S.Call) -> ir.Expr:
        scan, fndef = sym.value
        params = fndef.params
        where = f"its signature is at {fndef.span}"
        if len(e.args) > len(params):
            raise self.error(
                f"{fndef.name}() takes {len(params)} argument{'s' if len(params) != 1 else ''} "
                f"but {len(e.args)} {'were' if len(e.args) != 1 else 'was'} given", e.span, where)
        names = [p.name for p in params]
        # Python's order: the positional arguments, then the keywords as written.
        got: dict[str, ir.Expr] = {p.name: self.expr(a) for p, a in zip(params, e.args)}
        for kw in e.keywords:
            if kw.name not in names:
                raise self.error(f"{fndef.name}() has no parameter '{kw.name}'", kw.span, where)
            if kw.name in got:
                raise self.error(f"{fndef.name}() got two values for argument '{kw.name}'",
                                 kw.span, where)
            got[kw.name] = self.expr(kw.value)
        missing = [p.name for p in params if p.name not in got and p.default is None]
        if missing:
            raise self.error(f"{fndef.name}() is missing argument '{missing[0]}'", e.span, where)
        if len(got) < len(params):
            defaults = self.ctx.program.defaults(scan, fndef)
            for p in params:
                if p.name not in got:
                    got[p.name] = self.const_expr(defaults[p.name], e.span)
        args = [got[name] for name in names]
        for arg in args:
            if isinstance(arg, ir.ArrayRef) and arg.ty.swizzle:
                # A device function indexes its array parameters row-major.
                raise self.error(f"'{arg.var.name}' is a swizzled shared array: index it in "
                                 "the kernel that declares it, not in a device function",
                                 arg.span)
            if isinstance(arg, ir.ArrayRef):   # the callee may change it (voids its tickets)
                self.unique.note_passed(arg.var, arg.span)
        call = self.ctx.program.call_device(self, scan, fndef, args, e.span)
        if not isinstance(call, ir.Call):
            return call
        accesses = param_accesses(call.function)
        # The callee's atomics race with the caller's plain reads as the caller's own would,
        # in `unsafe()` or not (as note_atomic counts them).
        for position, at in accesses.updates.items():
            arg = args[position]
            if isinstance(arg, ir.ArrayRef):
                self.unique.note_atomic_at(
                    arg.var, None if at is None else tuple(args[k] for k in at), e.span,
                    f"{fndef.name}()")
        if self.unsafe_depth == 0:
            for table, writes in ((accesses.stores, True), (accesses.reads, False)):
                for position, at in table.items():
                    arg = args[position]
                    if isinstance(arg, ir.ArrayRef):
                        self.unique.note_call_access(
                            arg.var, fndef.name, e.span, writes,
                            None if at is None else tuple(args[k] for k in at), position)
        return call

    def call_divmod(self, e: S.Call) -> ir.Expr:
        """``divmod(a, b)``: ``(a // b, a % b)``, with the language's (Python's) ``//``."""
        if len(e.args) != 2 or e.keywords:
            raise self.error("divmod(a, b) takes exactly two arguments", e.span)
        a, b = (self.expr(x) for x in e.args)
        for v in (a, b):
            if self.has_effects(v):
                raise self.error("divmod()'s arguments are each used twice: this one calls a "
                                 "function or an atomic", v.span, "assign it to a local first")
        from .expressions import TupleValue

        return TupleValue(e.span, ir.VOID, (self.binop("//", a, b, e.span),
                                            self.binop("%", a, b, e.span)))


_ORDERS = tuple(order.value for order in R.MemoryOrder)


def _vector_atomic_refusal(entry: R.Entry, ty: ir.VectorType,
                           span: SourceSpan) -> tuple[str, SourceSpan, str | None]:
    """Why atomic ``entry`` is refused on an array of ``ty``: which atomics its vectors have
    (each component one atomic of the element type), and what to do instead."""
    what = f"atomic {entry.op}"
    ops = [e.name for e in R.ATOMIC_METHODS.values() if ty.name in (e.value or ())]
    names = ", ".join(ops[:-1]) + " and " + ops[-1] if len(ops) > 1 else ops[0]
    has = f"an array of {ty} has {names}, one atomic per component"
    hint: str | None = None
    if entry.op == "sub" and "fetch_add" in ops:
        hint = "add the negated value: .fetch_add(-v)"
    elif ty.elem.name in entry.value:
        hint = (f"no atomic updates a whole {ty}; keep the components in an array of {ty.elem} "
                f"(element {ty.n} * i + c) and use the scalar {entry.name} on each")
    return f"{what} is not available for {ty} arrays ({has})", span, hint


# The handlers of calls, named by the registry (the scalar types are casts, the vector types
# constructors), by name: the handler is a method of FunctionChecker, defined in this mixin or
# another (the vector handlers are in .vectors).
_GN_CALLS: dict[str, str] = {
    e.name: e.check for e in R.GPU_NATIVE.values()
    if e.form in ("call", "type", "vector type", "complex type") and e.check}

_BUILTIN_CALLS: dict[str, Callable] = {
    e.name: getattr(CallChecker, e.check) for e in R.BUILTINS.values() if e.form == "call"}


# param_accesses's memo: a function -> (the body it was computed from, its accesses).  Weak, so
# that a transpiled module's functions go with it.
_ACCESSES: weakref.WeakKeyDictionary[ir.DeviceFunction, tuple[tuple[ir.Stmt, ...], ParamAccesses]] \
    = weakref.WeakKeyDictionary()

# An array parameter's accesses are ``At`` a tuple of parameter positions (one per axis: every
# access indexes the array by those scalar parameters, unchanged) or ``ANYWHERE``.
At = tuple[int, ...]
ANYWHERE = None


class ParamAccesses:
    """How a device function touches its array parameters, for its callers' race checks: by
    parameter position, where it stores (outside ``with unsafe():``), where it reads
    (``ir.Load``, in or out of ``unsafe``: the IR does not mark the reads there) and where its
    atomics change an element (``updates``: every atomic operation but a load), itself or
    through the device functions it passes them to.  Each is an :data:`At` (then a caller
    knows the element from its own arguments for those positions) or :data:`ANYWHERE`."""

    __slots__ = ("reads", "stores", "updates")

    def __init__(self) -> None:
        self.stores: dict[int, At | None] = {}
        self.reads: dict[int, At | None] = {}
        self.updates: dict[int, At | None] = {}

    @staticmethod
    def note(table: dict[int, At | None], position: int, at: At | None) -> None:
        if position in table and table[position] != at:
            at = ANYWHERE
        table[position] = at


def param_accesses(function: ir.DeviceFunction) -> ParamAccesses:
    """:class:`ParamAccesses` of ``function``.

    Only :class:`ir.Store` writes a parameter: ``store_matrix`` and ``warpgroup_store`` are
    refused in a device function outside ``unsafe()`` (which threads form a warp is the
    caller's), and ``cp_async`` and ``tma_load`` write shared arrays, which are no parameters.
    Only :class:`ir.Load` reads one, as in a function's own check of its reads.  Memoised per
    function: each callee is walked once, however many calls reach it (a chain of functions
    that each call the next twice would otherwise cost 2**depth walks).
    """
    memo = _ACCESSES.get(function)
    if memo is not None and memo[0] is function.body:
        return memo[1]
    index = {id(p): k for k, p in enumerate(function.params)}
    changed = {id(n.var) for n in ir.walk(function.body)
               if not isinstance(n, (ir.Local, ir.ArrayRef)) and isinstance(
                   getattr(n, "var", None), ir.Var)}

    def at(indices: tuple[ir.Expr, ...]) -> At | None:
        got = []
        for e in indices:
            if not (isinstance(e, ir.Local) and id(e.var) in index and id(e.var) not in changed):
                return ANYWHERE
            got.append(index[id(e.var)])
        return tuple(got)

    def through(inner: At | None, args: tuple[ir.Expr, ...]) -> At | None:
        return ANYWHERE if inner is ANYWHERE else at(tuple(args[k] for k in inner))

    found = ParamAccesses()
    for node in ir.walk(function.body):
        if isinstance(node, ir.Store) and node.unique != "unsafe" and \
                id(node.array.var) in index:
            found.note(found.stores, index[id(node.array.var)], at(node.indices))
        elif isinstance(node, ir.Load) and id(node.array.var) in index:
            found.note(found.reads, index[id(node.array.var)],
                       at(node.indices) if node.width == 1 else ANYWHERE)
        elif isinstance(node, ir.Atomic) and node.op != "load" and \
                id(node.array.var) in index:
            found.note(found.updates, index[id(node.array.var)], at(node.indices))
        elif isinstance(node, ir.Call):
            inner = param_accesses(node.function)
            for table, mine in ((inner.stores, found.stores), (inner.reads, found.reads),
                                (inner.updates, found.updates)):
                for k, where in table.items():
                    arg = node.args[k]
                    if isinstance(arg, ir.ArrayRef) and id(arg.var) in index:
                        found.note(mine, index[id(arg.var)], through(where, node.args))
    _ACCESSES[function] = (function.body, found)
    return found
