"""Type checking of kernel expressions: syntax tree → typed IR (one ``visit_X`` per construct)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..lang import registry as R
from ..nodes import node
from . import promote as P
from .safety import Unique, grid_coords

if TYPE_CHECKING:
    from .checker import FunctionChecker


@node
class WeakConst(ir.Const):
    """A literal that has not met a typed operand yet (see :mod:`.promote`).  Never leaves the checker."""


@node
class UidValue(ir.Expr):
    """``FlatLayout2D.uid()`` and friends before a component is taken.  Never leaves the checker."""

    scope: str
    ndim: int


@node
class AtomicHandle(ir.Expr):
    """``x.atomic_ref(i)`` before its method is called.  Never leaves the checker."""

    array: ir.ArrayRef
    indices: tuple[ir.Expr, ...]


_PY_FOLD: dict[str, Callable] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<<": operator.lshift,
    ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor,
}
_CMP_FOLD: dict[str, Callable] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}

LAYOUTS = {e.name: e.value for e in R.by_form("layout")}  # name -> (scope, ndim)
SPECIALS = tuple(e.name for e in R.by_form("dim3"))
AXES = R.AXES
ATOMIC_METHODS = {name: e.op for name, e in R.ATOMIC_METHODS.items()}


class ExpressionChecker:
    """Mixin of :class:`~.checker.FunctionChecker`: the expression half."""

    # ---- helpers shared with statements ------------------------------------------------------

    def error(self: FunctionChecker, message: str, span: SourceSpan, hint: str | None = None):
        return TranspileError(message, span, hint)

    def materialize(self: FunctionChecker, e: ir.Expr) -> ir.Expr:
        """Give a weak literal its lone-literal type; other expressions are returned as they are."""
        if isinstance(e, WeakConst):
            try:
                ty = P.literal_type(e.value)
            except P.PromotionError as exc:
                raise self.error(str(exc), e.span) from None
            return ir.Const(e.span, ty, e.value)
        if isinstance(e, UidValue):
            raise self.error(
                f"a {e.ndim}-D unique id has no single value; use its components .x, .y"
                f"{', .z' if e.ndim == 3 else ''}", e.span)
        if isinstance(e, AtomicHandle):
            raise self.error("x.atomic_ref(i) must be followed by an operation, e.g. "
                             ".fetch_add(v)", e.span)
        return e

    def scalar_of(self: FunctionChecker, e: ir.Expr, what: str = "this") -> ir.ScalarType:
        e = self.materialize(e)
        if not isinstance(e.ty, ir.ScalarType):
            raise self.error(f"{what} must be a scalar value, not {e.ty}", e.span)
        return e.ty

    def coerce(self: FunctionChecker, e: ir.Expr, ty: ir.ScalarType, what: str,
               explicit: bool = False) -> ir.Expr:
        """Convert ``e`` to ``ty`` by the assignment rules (``explicit`` for casts)."""
        if isinstance(e, WeakConst):
            if not explicit:
                why = P.literal_fits(e.value, ty)
                if why is not None:
                    raise self.error(f"{what}: {why}", e.span)
            value = e.value
            info = ty.info
            if info.is_int:
                value = _wrap_int(int(value) if not isinstance(value, float) else
                                  _float_to_int(value, info), info)
            elif info.kind == "bool":
                value = bool(value)
            else:
                value = float(value)
            return ir.Const(e.span, ty, value)
        e = self.materialize(e)
        if not isinstance(e.ty, ir.ScalarType):
            raise self.error(f"{what} must be a scalar {ty}, not {e.ty}", e.span)
        if e.ty == ty:
            return e
        if not explicit:
            why = P.implicit_conversion_error(e.ty, ty)
            if why is not None:
                raise self.error(f"{what}: {why}", e.span)
        if isinstance(e, ir.Const) and ty.info.is_float and e.ty.info.is_int:
            return ir.Const(e.span, ty, float(e.value))
        return ir.Cast(e.span, ty, e)

    def to_bool(self: FunctionChecker, e: ir.Expr, what: str = "a condition") -> ir.Expr:
        """Python truthiness of a scalar: ``x != 0`` for numbers."""
        if isinstance(e, WeakConst):
            return ir.Const(e.span, ir.BOOL, bool(e.value))
        e = self.materialize(e)
        if not isinstance(e.ty, ir.ScalarType):
            raise self.error(f"{what} must be a bool or a number, not {e.ty}", e.span)
        if e.ty == ir.BOOL:
            return e
        zero = ir.Const(e.span, e.ty, 0.0 if e.ty.info.is_float else 0)
        return ir.Compare(e.span, ir.BOOL, "!=", e, zero)

    def common_type(self: FunctionChecker, a: ir.Expr, b: ir.Expr, span: SourceSpan
                    ) -> ir.ScalarType | None:
        """The promoted type of two operands, or None when both are weak literals."""
        aw, bw = isinstance(a, WeakConst), isinstance(b, WeakConst)
        try:
            if aw and bw:
                return None
            if aw:
                return P.promote_with_literal(self.scalar_of(b), a.value)
            if bw:
                return P.promote_with_literal(self.scalar_of(a), b.value)
            return P.promote(self.scalar_of(a), self.scalar_of(b))
        except P.PromotionError as exc:
            raise self.error(str(exc), span) from None

    # ---- dispatch ------------------------------------------------------------------------------

    def expr(self: FunctionChecker, e: S.Expr, condition: bool = False) -> ir.Expr:
        handler = _EXPR_HANDLERS.get(type(e))
        if handler is None:  # pragma: no cover - the front end refuses other syntax
            raise self.error(f"unsupported expression {type(e).__name__}", e.span)
        if handler is ExpressionChecker.visit_BoolOp:
            return handler(self, e, condition)
        return handler(self, e)

    def visit_Num(self: FunctionChecker, e: S.Num) -> ir.Expr:
        if isinstance(e.value, bool):
            return ir.Const(e.span, ir.BOOL, e.value)
        return WeakConst(e.span, ir.I64, e.value)

    def visit_Str(self: FunctionChecker, e: S.Str) -> ir.Expr:
        raise self.error("strings are only allowed as assert messages and print arguments",
                         e.span)

    def visit_Name(self: FunctionChecker, e: S.Name) -> ir.Expr:
        var = self.vars.get(e.id)
        if var is not None:
            if e.id not in self.assigned:
                raise self.error(f"local variable '{e.id}' might be used before it is assigned",
                                 e.span, "assign it on every path before this use")
            if isinstance(var.ty, ir.ArrayType):
                return ir.ArrayRef(e.span, var.ty, var)
            if isinstance(var.ty, ir.UidType):
                return UidValue(e.span, var.ty, var.ty.scope, var.ty.ndim)
            return ir.Local(e.span, var.ty, var)
        if e.id in self.pending_locals:
            raise self.error(f"local variable '{e.id}' is used before it is assigned", e.span)
        sym = self.ctx.resolver.name(e.id, e.span)
        return self.from_symbol(sym, e)

    def from_symbol(self: FunctionChecker, sym, e: S.Expr) -> ir.Expr:
        if sym.kind == "const":
            value = sym.value
            if isinstance(value, bool):
                return ir.Const(e.span, ir.BOOL, value)
            if isinstance(value, (int, float)):
                return WeakConst(e.span, ir.I64, value)
            raise self.error(f"the constant '{sym.name}' is a tuple; index it or use it as a "
                             "shape", e.span)
        if sym.kind == "gn" and R.GPU_NATIVE[sym.name].form == "constant":
            entry = R.GPU_NATIVE[sym.name]
            return ir.Const(e.span, ir.scalar(entry.result), entry.value)
        if sym.kind == "undefined":
            raise self.error(f"name '{sym.name}' is not defined", e.span,
                             "kernels can use their parameters, locals, module constants, "
                             "gpu_native names, math functions and @gpu_device functions")
        if sym.kind == "host":
            raise self.error(f"'{sym.name}' cannot be used in a kernel: {sym.value}", e.span,
                             "kernels can only call gpu_native intrinsics, math functions and "
                             "@gpu_device functions")
        if sym.kind == "module":
            raise self.error(f"the module '{sym.name}' is not a value", e.span)
        raise self.error(f"'{sym.name}' is not a value here", e.span)

    def visit_BinOp(self: FunctionChecker, e: S.BinOp) -> ir.Expr:
        left = self.expr(e.left)
        right = self.expr(e.right)
        return self.binop(e.op, left, right, e.span)

    def binop(self: FunctionChecker, op: str, left: ir.Expr, right: ir.Expr,
              span: SourceSpan) -> ir.Expr:
        if isinstance(left, WeakConst) and isinstance(right, WeakConst):
            return self.fold(op, left.value, right.value, span)
        for side in (left, right):
            if isinstance(side, (UidValue, AtomicHandle)) or not isinstance(
                    side.ty, ir.ScalarType):
                self.materialize(side)
                raise self.error(f"operator {op} needs scalar operands, not {side.ty}", side.span)
        if op in ("<<", ">>"):
            return self.shift(op, left, right, span)
        if op == "**":
            return self.power(left, right, span)
        if op in ("&", "|", "^") and all(
                not isinstance(s, WeakConst) and s.ty == ir.BOOL for s in (left, right)):
            return ir.BinOp(span, ir.BOOL, op, left, right)
        ty = self.common_type(left, right, span)
        assert ty is not None
        if op == "/" and ty.info.is_int:
            raise self.error(
                "`/` between integers is not supported in kernels (Python would give a float)",
                span, "use `//` for floor division, or cast: f32(a) / f32(b)")
        if op in ("&", "|", "^") and not ty.info.is_int:
            raise self.error(f"operator {op} needs integer (or bool) operands, not {ty}", span)
        if ty.info.name in ("f16", "bf16") and op in ("//", "%"):
            ty = ir.F32
        lhs = self.coerce(left, ty, f"left operand of {op}", explicit=True)
        rhs = self.coerce(right, ty, f"right operand of {op}", explicit=True)
        zero_check = None
        if op in ("//", "%") and ty.info.is_int:
            if isinstance(rhs, ir.Const):
                if rhs.value == 0:
                    raise self.error(f"integer {op} by zero", span)
            else:
                zero_check = self.new_site("zerodiv", span, message=f"integer {op} by zero")
        return ir.BinOp(span, ty, op, lhs, rhs, zero_check)

    def fold(self: FunctionChecker, op: str, a, b, span: SourceSpan) -> ir.Expr:
        """Fold an operator over two literals, with Python's semantics."""
        if op == "/" and isinstance(a, int) and isinstance(b, int):
            raise self.error("`/` between integers is not supported in kernels", span,
                             "use `//` for floor division, or write a float literal (1.0 / 3)")
        try:
            if op in ("<<", "**") and isinstance(b, int) and b > 128:
                raise OverflowError
            value = _PY_FOLD[op](a, b)
        except ZeroDivisionError:
            raise self.error(f"division by zero in a constant expression ({op})", span) from None
        except (OverflowError, ValueError, TypeError):
            raise self.error(f"cannot evaluate the constant expression {a!r} {op} {b!r}",
                             span) from None
        if isinstance(value, complex):
            raise self.error("this constant expression has a complex result", span)
        return WeakConst(span, ir.I64, value)

    def shift(self: FunctionChecker, op: str, left: ir.Expr, right: ir.Expr,
              span: SourceSpan) -> ir.Expr:
        if isinstance(left, WeakConst):
            lt = P.literal_type(left.value)
            if isinstance(right, ir.Expr) and not isinstance(right, WeakConst):
                rt = self.scalar_of(right)
                if rt.info.is_int and P.arithmetic_type(rt).info.bits == 64:
                    lt = P.promote_with_literal(P.arithmetic_type(rt), left.value)
            left = self.coerce(left, lt, "shifted value")
        lt = P.arithmetic_type(self.scalar_of(left))
        if not lt.info.is_int:
            raise self.error(f"operator {op} needs an integer left operand, not {lt}", span)
        rhs = right if not isinstance(right, WeakConst) else self.coerce(right, ir.I32, "shift")
        rt = self.scalar_of(rhs)
        if not P.arithmetic_type(rt).info.is_int:
            raise self.error(f"the shift count must be an integer, not {rt}", span)
        return ir.BinOp(span, lt, op, self.coerce(left, lt, "shifted value", explicit=True),
                        self.coerce(rhs, P.arithmetic_type(rt), "shift count", explicit=True))

    def power(self: FunctionChecker, left: ir.Expr, right: ir.Expr, span: SourceSpan) -> ir.Expr:
        if isinstance(right, WeakConst) and isinstance(right.value, int) and not isinstance(
                left, WeakConst):
            base = self.scalar_of(left)
            if right.value < 0 and base.info.is_int:
                raise self.error("an integer raised to a negative power is a float in Python; "
                                 "cast the base to a float type first", span)
            ty = P.arithmetic_type(base)
            if ty.info.name in ("f16", "bf16") and right.value not in (0, 1, 2):
                # CUDA has no half-precision pow: compute in f32 and round once, like the
                # simulator (a product of 0-2 factors stays in half precision).
                pow32 = self.power(self.coerce(left, ir.F32, "base", explicit=True), right, span)
                return ir.Cast(span, ty, pow32)
            return ir.BinOp(span, ty, "**", self.coerce(left, ty, "base", explicit=True),
                            ir.Const(right.span, ir.I32, right.value))
        ty = self.common_type(left, right, span)
        assert ty is not None
        if ty.info.is_int:
            raise self.error("`**` with an integer base needs a constant, non-negative integer "
                             "exponent", span, "use a float base: f64(x) ** y")
        if ty.info.name in ("f16", "bf16"):
            ty = ir.F32
        return ir.MathCall(span, ty, "pow", (self.coerce(left, ty, "base", explicit=True),
                                             self.coerce(right, ty, "exponent", explicit=True)))

    def visit_UnaryOp(self: FunctionChecker, e: S.UnaryOp) -> ir.Expr:
        operand = self.expr(e.operand, condition=(e.op == "not"))
        if isinstance(operand, WeakConst):
            if e.op == "not":
                return ir.Const(e.span, ir.BOOL, not operand.value)
            try:
                value = {"-": operator.neg, "+": operator.pos, "~": operator.invert}[e.op](
                    operand.value)
            except TypeError:
                raise self.error(f"operator {e.op} cannot be applied to {operand.value!r}",
                                 e.span) from None
            return WeakConst(e.span, ir.I64, value)
        if e.op == "not":
            return ir.UnaryOp(e.span, ir.BOOL, "not", self.to_bool(operand, "the operand of not"))
        ty = P.arithmetic_type(self.scalar_of(operand, f"the operand of {e.op}"))
        if e.op == "~" and not ty.info.is_int:
            raise self.error(f"operator ~ needs an integer operand, not {operand.ty}", e.span)
        if self.scalar_of(operand) == ir.BOOL and e.op == "~":
            raise self.error("~ on a bool gives -1 or -2 in Python; use `not`", e.span)
        value = self.coerce(operand, ty, "operand", explicit=True)
        if e.op == "+":
            return value
        return ir.UnaryOp(e.span, ty, e.op, value)

    def visit_BoolOp(self: FunctionChecker, e: S.BoolOp, condition: bool = False) -> ir.Expr:
        values: list[ir.Expr] = []
        saved = self.facts
        first_checks = None
        for i, v in enumerate(e.values):
            item = self.expr(v, condition=condition)
            if not condition and not (isinstance(item, ir.Const) and item.ty == ir.BOOL) and (
                    isinstance(item, WeakConst) or item.ty != ir.BOOL):
                raise self.error(
                    f"`{e.op}` on non-bool values returns one of the values in Python; kernels "
                    "only use `and`/`or` on bools", item.span,
                    "compare explicitly, e.g. `(x != 0) and (y > 1)`")
            item = self.to_bool(item, f"an operand of `{e.op}`")
            values.append(item)
            if first_checks is None:
                first_checks = set(self.pending)  # only the first operand always runs
            # Later operands run only where earlier ones allowed it (short-circuit).
            if i + 1 < len(e.values):
                self.facts = self.facts | self.facts_from(item, e.op == "and")
        self.facts, self.pending = saved, first_checks
        return ir.BoolOp(e.span, ir.BOOL, e.op, tuple(values))

    def visit_Compare(self: FunctionChecker, e: S.Compare) -> ir.Expr:
        operands = [self.expr(o) for o in e.operands]
        parts: list[ir.Expr] = []
        for i, op in enumerate(e.ops):
            if op in ("is", "is not", "in", "not in"):
                raise self.error(f"`{op}` is not supported in kernels", e.span,
                                 "compare numbers with ==, !=, <, <=, >, >=")
            if i > 0 and self.has_effects(operands[i]):
                raise self.error("a chained comparison evaluates its middle operand twice here; "
                                 "split it with `and`", operands[i].span)
            parts.append(self.compare(op, operands[i], operands[i + 1], e.span))
        if len(parts) == 1:
            return parts[0]
        return ir.BoolOp(e.span, ir.BOOL, "and", tuple(parts))

    def compare(self: FunctionChecker, op: str, left: ir.Expr, right: ir.Expr,
                span: SourceSpan) -> ir.Expr:
        if isinstance(left, WeakConst) and isinstance(right, WeakConst):
            return ir.Const(span, ir.BOOL, bool(_CMP_FOLD[op](left.value, right.value)))
        if all(not isinstance(s, WeakConst) and s.ty == ir.BOOL for s in (left, right)):
            return ir.Compare(span, ir.BOOL, op, left, right)
        ty = self.common_type(left, right, span)
        assert ty is not None
        return ir.Compare(span, ir.BOOL, op, self.coerce(left, ty, "comparison", explicit=True),
                          self.coerce(right, ty, "comparison", explicit=True))

    def visit_IfExp(self: FunctionChecker, e: S.IfExp) -> ir.Expr:
        cond = self.to_bool(self.expr(e.test, condition=True))
        saved, checks = self.facts, set(self.pending)
        self.facts = saved | self.facts_from(cond, True)
        then = self.expr(e.body)
        self.facts = saved | self.facts_from(cond, False)
        orelse = self.expr(e.orelse)
        self.facts, self.pending = saved, checks
        if isinstance(then, WeakConst) and isinstance(orelse, WeakConst):
            then, orelse = self.materialize(then), self.materialize(orelse)
            if then.ty != orelse.ty:
                ty = P.promote(then.ty, orelse.ty)
                then, orelse = self.coerce(then, ty, "if-expression"), self.coerce(
                    orelse, ty, "if-expression")
            return ir.Select(e.span, then.ty, cond, then, orelse)
        if all(not isinstance(s, WeakConst) and s.ty == ir.BOOL for s in (then, orelse)):
            return ir.Select(e.span, ir.BOOL, cond, then, orelse)
        ty = self.common_type(then, orelse, e.span)
        assert ty is not None
        return ir.Select(e.span, ty, cond, self.coerce(then, ty, "if-expression", explicit=True),
                         self.coerce(orelse, ty, "if-expression", explicit=True))

    def visit_Tuple(self: FunctionChecker, e: S.Tuple) -> ir.Expr:
        raise self.error("tuples are only supported on the left of `=` (unpacking) and as "
                         "shapes", e.span)

    # ---- attributes and subscripts -----------------------------------------------------------

    def visit_Attribute(self: FunctionChecker, e: S.Attribute) -> ir.Expr:
        sym = self.ctx.resolver.dotted(e.value) if not self.is_local_root(e.value) else None
        if sym is not None and sym.kind == "gn" and sym.name in SPECIALS:
            axis = self.axis_of(e.attr, e.span)
            self.note_special(sym.name, axis, e.span)
            return ir.Special(e.span, ir.I32, sym.name, axis)
        if sym is not None and sym.kind in ("module", "gn"):
            inner = self.ctx.resolver.attribute(sym, e.attr, e.span)
            return self.from_symbol(inner, e)
        base = self.expr(e.value)
        if isinstance(base, UidValue):
            axis = self.axis_of(e.attr, e.span)
            if axis >= base.ndim:
                raise self.error(f"a {base.ndim}-D unique id has no component .{e.attr}", e.span)
            return ir.UidComponent(e.span, ir.I64, base.scope, axis)
        if isinstance(base, ir.ArrayRef) and e.attr == "shape":
            raise self.error("use a.shape[k] with a constant k (or len(a))", e.span)
        raise self.error(f"attribute .{e.attr} is not supported here", e.span)

    def axis_of(self: FunctionChecker, attr: str, span: SourceSpan) -> int:
        if attr not in AXES:
            raise self.error(f"expected .x, .y or .z, not .{attr}", span)
        return AXES[attr]

    def is_local_root(self: FunctionChecker, e: S.Expr) -> bool:
        while isinstance(e, S.Attribute):
            e = e.value
        return isinstance(e, S.Name) and e.id in self.vars

    def visit_Subscript(self: FunctionChecker, e: S.Subscript) -> ir.Expr:
        if isinstance(e.value, S.Attribute) and e.value.attr == "shape":
            base = self.expr(e.value.value)
            if not isinstance(base, ir.ArrayRef):
                raise self.error(".shape is only defined on arrays", e.value.span)
            if len(e.index) != 1:
                raise self.error("index .shape with one constant", e.span)
            axis = self.const_int(e.index[0], "the .shape index")
            if not 0 <= axis < base.ty.ndim:
                raise self.error(f"axis {axis} is out of range for a {base.ty.ndim}-D array",
                                 e.span)
            return self.shape_of(base, axis, e.span)
        if isinstance(e.value, S.Name) and e.value.id not in self.vars:
            sym = self.ctx.resolver.name(e.value.id, e.value.span)
            if sym.kind == "const" and isinstance(sym.value, tuple):
                k = self.const_int(e.index[0], "the tuple index")
                try:
                    item = sym.value[k]
                except IndexError:
                    raise self.error(f"index {k} is out of range for {e.value.id}", e.span) from None
                return self.from_symbol(type(sym)("const", sym.name, item), e)
        base = self.expr(e.value)
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"only arrays can be indexed, not {base.ty}", e.value.span)
        indices = self.indices(base, e.index, e.span)
        checks = self.bounds_checks(base, indices, e.span)
        self.note_load(base, indices, e.span)
        return ir.Load(e.span, base.ty.elem, base, indices, checks)

    def shape_of(self: FunctionChecker, base: ir.ArrayRef, axis: int, span: SourceSpan
                 ) -> ir.Expr:
        if base.ty.shape is not None and base.ty.shape[0] >= 0:
            return WeakConst(span, ir.I64, base.ty.shape[axis])
        return ir.Shape(span, ir.I64, base, axis)

    def indices(self: FunctionChecker, base: ir.ArrayRef, raw: tuple[S.Expr, ...],
                span: SourceSpan) -> tuple[ir.Expr, ...]:
        if len(raw) != base.ty.ndim:
            raise self.error(f"{base.var.name} is a {base.ty.ndim}-D array but is indexed with "
                             f"{len(raw)} index{'es' if len(raw) != 1 else ''}", span)
        out = []
        for item in raw:
            idx = self.expr(item)
            if isinstance(idx, WeakConst):
                if not isinstance(idx.value, int):
                    raise self.error("array indices must be integers", idx.span)
                idx = self.coerce(idx, ir.I64, "index")
            ty = self.scalar_of(idx, "an index")
            if not ty.info.is_int:
                raise self.error(f"array indices must be integers, not {ty}", idx.span,
                                 "convert with int(x) or i64(x)")
            out.append(idx)
        return tuple(out)

    def const_int(self: FunctionChecker, e: S.Expr, what: str) -> int:
        value = self.expr(e)
        if isinstance(value, (WeakConst, ir.Const)) and isinstance(value.value, int) and not \
                isinstance(value.value, bool):
            return value.value
        raise self.error(f"{what} must be a constant integer", e.span)

    # ---- calls ------------------------------------------------------------------------------

    def visit_Call(self: FunctionChecker, e: S.Call) -> ir.Expr:
        func = e.func
        # Methods: x.atomic_ref(i) and x.atomic_ref(i).fetch_add(v); Layout.uid(); grid_stride.
        if isinstance(func, S.Attribute):
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
                         "can be called in kernels", e.func.span)

    def is_module_path(self: FunctionChecker, e: S.Expr) -> bool:
        if self.is_local_root(e):
            return False
        sym = self.ctx.resolver.dotted(e)
        return sym is not None and sym.kind in ("module", "gn")

    def args(self: FunctionChecker, e: S.Call, names: tuple[str, ...], required: int,
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

    def call_symbol(self: FunctionChecker, sym, e: S.Call) -> ir.Expr:
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
                raise self.error(f"gpu_native.{sym.name} cannot be called in a kernel", e.span)
            return handler(self, sym.name, e)
        if sym.kind == "math":
            return self.call_math(sym.name, e)
        if sym.kind == "builtin":
            handler = _BUILTIN_CALLS.get(sym.name)
            if handler is None:
                raise self.error(f"{sym.name}() is not supported here", e.span)
            return handler(self, e)
        if sym.kind == "device":
            return self.call_device(sym, e)
        return self.from_symbol(sym, e.func)

    def gn_call_handlers(self) -> dict[str, Callable]:
        return _GN_CALLS

    def call_cast(self: FunctionChecker, name: str, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error(f"{name}(x) takes exactly one argument", e.span)
        target = ir.scalar(name)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            v = value.value
            info = target.info
            if info.is_int and isinstance(v, int) and not info.min <= v <= info.max:
                raise self.error(f"{v} does not fit in {name} ({info.min}..{info.max})", e.span)
        if target == ir.BOOL:
            return self.to_bool(value, f"{name}()")
        return self.coerce(value, target, f"{name}()", explicit=True)

    def call_int(self: FunctionChecker, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("int(x) takes exactly one argument", e.span)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            return WeakConst(e.span, ir.I64, int(value.value))
        return self.coerce(value, ir.I64, "int()", explicit=True)

    def call_float(self: FunctionChecker, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("float(x) takes exactly one argument", e.span)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            return WeakConst(e.span, ir.F64, float(value.value))
        return self.coerce(value, ir.F64, "float()", explicit=True)

    def call_bool(self: FunctionChecker, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("bool(x) takes exactly one argument", e.span)
        return self.to_bool(self.expr(e.args[0]), "bool()")

    def call_round(self: FunctionChecker, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("round(x) takes one argument in kernels (no ndigits)", e.span)
        value = self.materialize(self.expr(e.args[0]))
        ty = self.scalar_of(value, "round()'s argument")
        if ty.info.is_int:
            return self.coerce(value, ir.I64, "round()", explicit=True)
        if ty.info.bits < 32:
            value, ty = self.coerce(value, ir.F32, "round()", explicit=True), ir.F32
        return ir.Cast(e.span, ir.I64, ir.MathCall(e.span, ty, "rint", (value,)))

    def call_len(self: FunctionChecker, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("len(a) takes exactly one argument", e.span)
        base = self.expr(e.args[0])
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"len() needs an array, not {base.ty}", e.args[0].span)
        return self.shape_of(base, 0, e.span)

    def call_abs(self: FunctionChecker, e: S.Call) -> ir.Expr:
        if len(e.args) != 1 or e.keywords:
            raise self.error("abs(x) takes exactly one argument", e.span)
        value = self.expr(e.args[0])
        if isinstance(value, WeakConst):
            return WeakConst(e.span, ir.I64, abs(value.value))
        ty = P.arithmetic_type(self.scalar_of(value, "abs()'s argument"))
        value = self.coerce(value, ty, "abs()", explicit=True)
        if ty.info.kind == "uint":
            return value
        return ir.MathCall(e.span, ty, "abs", (value,))

    def call_minmax(self: FunctionChecker, e: S.Call) -> ir.Expr:
        name = e.func.id if isinstance(e.func, S.Name) else "min"
        if len(e.args) < 2 or e.keywords:
            raise self.error(f"{name}() in kernels takes two or more scalar arguments", e.span)
        values = [self.expr(a) for a in e.args]
        if all(isinstance(v, WeakConst) for v in values):
            return WeakConst(e.span, ir.I64, (min if name == "min" else max)(
                v.value for v in values))
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
                ty = P.promote_with_literal(ty, v.value)
        args = tuple(self.coerce(v, ty, f"{name}()", explicit=True) for v in values)
        result = args[0]
        for a in args[1:]:
            result = ir.MathCall(e.span, ty, name, (result, a))
        return result

    def call_math(self: FunctionChecker, name: str, e: S.Call) -> ir.Expr:
        """A math function, typed by its registry entry: its ``float`` operands are promoted
        together (integers compute in ``f64``, half types in ``f32``) and its ``int`` operands
        are ``i32``s; the result is that float type, or ``bool``."""
        entry = R.MATH[name]
        arity = len(entry.params)
        if len(e.args) != arity or e.keywords:
            raise self.error(f"math.{name}() takes {arity} argument{'s' if arity > 1 else ''}",
                             e.span)
        values = [self.expr(a) for a in e.args]
        ty: ir.ScalarType | None = None
        for param, v in zip(entry.params, values):
            if param.type == "float" and not isinstance(v, WeakConst):
                t = self.scalar_of(v, f"math.{name}()'s argument")
                ty = t if ty is None else P.promote(ty, t)
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

    def int32_operand(self: FunctionChecker, v: ir.Expr, what: str) -> ir.Expr:
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

    def call_layout(self: FunctionChecker, layout: str, method: str, e: S.Call) -> ir.Expr:
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
        self.note_uid(scope, e.span)
        if ndim == 1:
            return ir.UidComponent(e.span, ir.I64, scope, 0)
        return UidValue(e.span, ir.UidType(ndim, scope), scope, ndim)

    def require_layout(self: FunctionChecker, layout: str, ndim: int, span: SourceSpan) -> None:
        kernel_ndim = self.ctx.ndim
        if ndim != kernel_ndim:
            raise self.error(
                f"{layout} is a {ndim}-D layout but this is a Kernel{kernel_ndim}D kernel", span,
                f"use {layout[:-2]}{kernel_ndim}D, or declare the kernel @gpu_kernel(Kernel{ndim}D)")

    def call_lane_id(self: FunctionChecker, name: str, e: S.Call) -> ir.Expr:
        if e.args or e.keywords:
            raise self.error(f"{name}() takes no arguments", e.span)
        self.note_special(name, 0, e.span)
        return ir.LaneId(e.span, ir.I32)

    def mask_arg(self: FunctionChecker, got: dict, span: SourceSpan) -> ir.Expr:
        if "mask" not in got:
            return ir.Const(span, ir.U32, R.FULL_MASK)
        return self.coerce(self.expr(got["mask"]), ir.U32, "mask")

    def call_shuffle(self: FunctionChecker, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        lane_arg = entry.params[1].name  # (value, lane, width, mask)
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        value = self.materialize(self.expr(got["value"]))
        ty = self.scalar_of(value, f"{name}()'s value")
        if ty == ir.BOOL:
            raise self.error(f"{name}() moves numbers; use ballot() for bools", value.span)
        lane = self.coerce(self.expr(got[lane_arg]), ir.I32, f"{name}()'s {lane_arg}")
        width = self.coerce(self.expr(got["width"]), ir.I32, "width") if "width" in got else \
            ir.Const(e.span, ir.I32, 32)
        self.note_special("warp", 0, e.span)
        return ir.WarpOp(e.span, ty, name, (value, lane, width), self.mask_arg(got, e.span))

    def call_vote(self: FunctionChecker, name: str, e: S.Call) -> ir.Expr:
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        pred = self.to_bool(self.expr(got["predicate"]), f"{name}()'s predicate")
        self.note_special("warp", 0, e.span)
        ty = ir.BOOL if entry.result == "bool" else ir.scalar(entry.result)
        return ir.WarpOp(e.span, ty, name, (pred,), self.mask_arg(got, e.span))

    # ---- atomics ------------------------------------------------------------------------------

    def call_atomic_ref(self: FunctionChecker, func: S.Attribute, e: S.Call) -> ir.Expr:
        base = self.expr(func.value)
        if not isinstance(base, ir.ArrayRef):
            raise self.error("atomic_ref() is a method of arrays", func.span)
        if e.keywords:
            raise self.error("atomic_ref() takes only the index", e.span)
        indices = self.indices(base, e.args, e.span)
        return AtomicHandle(e.span, base.ty.elem, base, indices)

    def call_atomic(self: FunctionChecker, handle: AtomicHandle, op: str, e: S.Call) -> ir.Expr:
        base = handle.array
        ty = base.ty.elem
        what = f"atomic {op}"
        if not base.ty.mutable:
            raise self.error(f"{base.var.name} is read-only (CUDASlice); atomics need a writable "
                             "array (CUDASliceMut or shared memory)", e.span)
        if base.ty.space == "local":
            raise self.error("atomics on per-thread local arrays are pointless; use plain "
                             "assignment", e.span)
        entry = R.ATOMIC_OPS[op]
        allowed = entry.value  # the element types it accepts
        if ty.name not in allowed:
            raise self.error(f"{what} is not available for {ty} arrays (supported: "
                             f"{', '.join(allowed)})", e.span)
        names = entry.param_names  # the operands, then order
        nreq = entry.required
        got = self.args(e, names, nreq, f".{e.func.attr}()")  # type: ignore[union-attr]
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
        checks = self.bounds_checks(base, handle.indices, e.span)
        result_ty = ir.VOID if op == "store" else ty
        return ir.Atomic(e.span, result_ty, op, base, handle.indices, checks, operands, order)

    # ---- device functions ---------------------------------------------------------------------

    def call_device(self: FunctionChecker, sym, e: S.Call) -> ir.Expr:
        scan, fndef = sym.value
        if e.keywords:
            raise self.error("@gpu_device functions take positional arguments only", e.span)
        if len(e.args) != len(fndef.params):
            raise self.error(
                f"{fndef.name}() takes {len(fndef.params)} argument"
                f"{'s' if len(fndef.params) != 1 else ''} but {len(e.args)} "
                f"{'were' if len(e.args) != 1 else 'was'} given", e.span,
                f"its signature is at {fndef.span}")
        args = [self.expr(a) for a in e.args]
        return self.ctx.program.call_device(self, scan, fndef, args, e.span)

    def has_effects(self: FunctionChecker, e: ir.Expr) -> bool:
        if isinstance(e, (ir.Call, ir.Atomic, ir.WarpOp)):
            return True
        for value in vars(e).values():
            if isinstance(value, ir.Expr) and self.has_effects(value):
                return True
            if isinstance(value, tuple) and any(
                    isinstance(v, ir.Expr) and self.has_effects(v) for v in value):
                return True
        return False

    def classify_unique(self: FunctionChecker, e: ir.Expr) -> Unique | None:
        """Which thread coordinates ``e`` is injective in (see :mod:`.safety`)."""
        if isinstance(e, ir.UidComponent):
            if e.scope == "grid":
                return Unique(grid_coords(e.axis))
            return Unique(frozenset({f"tid{e.axis}"}))
        if isinstance(e, ir.Special):
            if e.name == "thread_idx":
                return Unique(frozenset({f"tid{e.axis}"}))
            if e.name == "block_idx":
                return Unique(frozenset({f"bid{e.axis}"}))
            return None
        if isinstance(e, ir.Local):
            if id(e.var) in self.unique_params:
                return Unique(frozenset({f"param:{e.var.name}"}))
            if id(e.var) in self.grid_stride_vars:
                return Unique(grid_coords(0))
            if id(e.var) in self.range_unique_vars:
                return Unique(self.range_unique_vars[id(e.var)])
            d = self.single_def(e.var)
            return self.classify_unique(d) if d is not None else None
        if isinstance(e, ir.Cast):
            src = e.value.ty
            if isinstance(src, ir.ScalarType) and src.info.is_int and e.ty.info.is_int and \
                    e.ty.info.bits >= src.info.bits:
                return self.classify_unique(e.value)
            return None
        if isinstance(e, ir.BinOp):
            left, right = e.left, e.right
            if e.op == "+":
                grid = _blockwise_uid(left, right) or _blockwise_uid(right, left)
                if grid is not None:
                    return Unique(grid_coords(grid))
                for a, b in ((left, right), (right, left)):
                    u = self.classify_unique(a)
                    if u is None:
                        continue
                    if self.is_uniform(b):
                        return u
                    if u.scale > 1 and self.in_range(b, u.scale):
                        # u*K + j with 0 <= j < K: the blocks of K are disjoint across u, and j
                        # (a thread index, or a per-thread loop counter) never leaves its block.
                        inner = self.classify_unique(b)
                        return Unique(u.coords | (inner.coords if inner else frozenset()))
                return None
            if e.op == "-":
                u = self.classify_unique(left)
                if u is not None and self.is_uniform(right):
                    return u
                return None
            if e.op == "*":
                for a, b in ((left, right), (right, left)):
                    u = self.classify_unique(a)
                    bc = _const_value(b)
                    if u is not None and isinstance(bc, int) and bc != 0:
                        return Unique(u.coords, u.scale * abs(bc))
                return None
        return None

    def in_range(self: FunctionChecker, e: ir.Expr, bound: int) -> bool:
        """Is ``0 <= e < bound`` proven (constant bound)?"""
        c = _const_value(e)
        if isinstance(c, int):
            return 0 <= c < bound
        k = self.key(e)
        if not self.is_nonneg(e):
            return False
        for f in self.facts:
            if f[0] == "lt" and f[1] == k and f[2][0] == "c" and isinstance(f[2][1], int) and \
                    f[2][1] <= bound:
                return True
        inner = e
        while isinstance(inner, ir.Cast):
            inner = inner.value
        if isinstance(inner, ir.Local):
            d = self.single_def(inner.var)
            if d is not None:
                return self.in_range(d, bound)
        return False


def _const_value(e: ir.Expr):
    while isinstance(e, ir.Cast):
        e = e.value
    return e.value if isinstance(e, ir.Const) else None


def _blockwise_uid(a: ir.Expr, b: ir.Expr) -> int | None:
    """Recognise ``block_idx.a * block_dim.a + thread_idx.a``: the grid uid along ``a``."""
    while isinstance(a, ir.Cast):
        a = a.value
    while isinstance(b, ir.Cast):
        b = b.value
    if not (isinstance(b, ir.Special) and b.name == "thread_idx"):
        return None
    if not (isinstance(a, ir.BinOp) and a.op == "*"):
        return None
    parts = []
    for side in (a.left, a.right):
        while isinstance(side, ir.Cast):
            side = side.value
        parts.append(side)
    names = {(p.name, p.axis) for p in parts if isinstance(p, ir.Special)}
    if names == {("block_idx", b.axis), ("block_dim", b.axis)}:
        return b.axis
    return None


def _wrap_int(value: int, info) -> int:
    if info.kind == "bool":
        return 1 if value else 0
    mask = (1 << info.bits) - 1
    value &= mask
    if info.kind == "int" and value > info.max:
        value -= 1 << info.bits
    return value


def _float_to_int(value: float, info) -> int:
    if value != value:
        return 0
    if value in (float("inf"), float("-inf")):
        return int(info.max if value > 0 else info.min)
    return int(max(info.min, min(info.max, int(value))))


_ORDERS = tuple(order.value for order in R.MemoryOrder)

_EXPR_HANDLERS: dict[type, Callable] = {
    S.Num: ExpressionChecker.visit_Num,
    S.Str: ExpressionChecker.visit_Str,
    S.Name: ExpressionChecker.visit_Name,
    S.BinOp: ExpressionChecker.visit_BinOp,
    S.UnaryOp: ExpressionChecker.visit_UnaryOp,
    S.BoolOp: ExpressionChecker.visit_BoolOp,
    S.Compare: ExpressionChecker.visit_Compare,
    S.IfExp: ExpressionChecker.visit_IfExp,
    S.Call: ExpressionChecker.visit_Call,
    S.Attribute: ExpressionChecker.visit_Attribute,
    S.Subscript: ExpressionChecker.visit_Subscript,
    S.Tuple: ExpressionChecker.visit_Tuple,
}

# The handlers of calls, named by the registry (the scalar types are casts).
_GN_CALLS: dict[str, Callable] = {
    e.name: getattr(ExpressionChecker, e.check) for e in R.GPU_NATIVE.values()
    if e.form in ("call", "type") and e.check}

_BUILTIN_CALLS: dict[str, Callable] = {
    e.name: getattr(ExpressionChecker, e.check) for e in R.BUILTINS.values() if e.form == "call"}
