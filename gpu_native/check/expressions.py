"""The type pass over expressions: syntax tree → typed IR, one ``visit_X`` per construct (calls
are in :mod:`.calls`; the dispatch tables in :mod:`.checker`)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..lang import registry as R
from ..lang.spellings import did_you_mean, foreign_hint
from ..nodes import node
from . import promote as P
from .checker_base import CheckerBase
from .constarrays import const_array_ref
from .facts import returned_expression
from .scope import PYTHON_BUILTINS, dotted_names


@node
class WeakConst(ir.Const):
    """A literal that has not met a typed operand yet (see :mod:`.promote`).  Never leaves the checker."""


@node
class UidValue(ir.Expr):
    """``FlatLayout2D.uid()`` and friends before a component is taken.  Never leaves the checker."""

    scope: str
    ndim: int


@node
class GeneratorType(ir.Type):
    """The type of a local that holds a random number generator (``rng = philox(...)``): the
    three ``u64`` locals it is made of.  Never leaves the checker: the IR has only those."""

    key: ir.Var
    subsequence: ir.Var
    counter: ir.Var

    def __str__(self) -> str:
        return "a philox generator"


@node
class GeneratorValue(ir.Expr):
    """A generator named in an expression, before a method is called (``rng`` of
    ``rng.uniform()``).  Never leaves the checker."""


@node
class TupleValue(ir.Expr):
    """A tuple before it has a type of its own: a display ``(a, b)``, a constant tuple,
    ``a.shape``, ``divmod(a, b)``.  Its items are checked expressions (weak literals among them,
    so that ``return 1, 2.0`` takes the declared types), evaluated left to right; ``ty`` is
    ``VOID``.  Never leaves the checker: :meth:`~ExpressionChecker.materialize` makes it an
    :class:`~gpu_native.ir.MakeTuple`."""

    items: tuple[ir.Expr, ...]


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
# NumPy's and Numba's array attributes that a kernel's array does not have, and what it has.
_NUMPY_ARRAY_ATTRIBUTES = {
    "dtype": "an array's element type is its annotation's (CUDASlice[f32]); a generic kernel "
             "names it with its TypeVar",
    "strides": "index the array by its logical indices (a[i, j]): the launcher passes the "
               "strides",
    "T": "index the transpose by swapped indices (a[j, i])",
}


class ExpressionChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: operators, names, attributes, subscripts."""

    # ---- helpers shared with statements ------------------------------------------------------

    def error(self, message: str, span: SourceSpan, hint: str | None = None
              ) -> TranspileError:
        return TranspileError(message, span, hint)

    def promoted(self, a: ir.ScalarType, b: ir.ScalarType, span: SourceSpan) -> ir.ScalarType:
        """The common type of two operand types, or an error at ``span`` where there is none
        (``i64`` with ``u64``)."""
        try:
            return P.promote(a, b)
        except P.PromotionError as exc:
            raise self.error(str(exc), span) from None

    def promoted_literal(self, t: ir.ScalarType, literal: int | float | bool,
                         span: SourceSpan) -> ir.ScalarType:
        """The type of ``typed OP literal``, or an error at ``span`` where the literal and the
        typed side have no common type (``-1`` with a ``u64``)."""
        try:
            return P.promote_with_literal(t, literal)
        except P.PromotionError as exc:
            raise self.error(str(exc), span) from None

    def materialize(self, e: ir.Expr) -> ir.Expr:
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
        if isinstance(e, GeneratorValue):
            raise self.error("a random number generator is not a value; draw from it: "
                             "rng.uniform(), rng.normal(), rng.randint(n), rng.random_u32()",
                             e.span)
        if isinstance(e, TupleValue):
            items = tuple(self.materialize(item) for item in e.items)
            elems: list[ir.ScalarType] = []
            for item in items:
                if not isinstance(item.ty, ir.ScalarType):
                    raise self.error(f"a tuple in a kernel holds numbers and bools, not {item.ty}",
                                     item.span, "unpack the inner tuple first")
                elems.append(item.ty)
            return ir.MakeTuple(e.span, ir.TupleType(tuple(elems)), items)
        return e

    def scalar_of(self, e: ir.Expr, what: str = "this") -> ir.ScalarType:
        e = self.materialize(e)
        if not isinstance(e.ty, ir.ScalarType):
            raise self.error(f"{what} must be a scalar value, not {e.ty}", e.span)
        return e.ty

    def coerce(self, e: ir.Expr, ty: ir.ScalarType | ir.VectorType | ir.TupleType | ir.StructType,
               what: str,
               explicit: bool = False) -> ir.Expr:
        """Convert ``e`` to ``ty`` by the assignment rules (``explicit`` for casts); a tuple
        type converts item by item.  A vector converts to nothing else: ``vec3f(v)`` converts
        explicitly."""
        if isinstance(ty, ir.TupleType):
            return self.coerce_tuple(e, ty, what)
        if isinstance(ty, ir.StructType) or isinstance(e.ty, ir.StructType):
            e = self.materialize(e)
            if e.ty == ty:
                return e
            if isinstance(ty, ir.StructType) and isinstance(e.ty, ir.StructType) and \
                    e.ty.info.title == ty.info.title:
                raise self.error(f"{what}: two different structs are called {ty} (from "
                                 f"{e.ty.info.module} and {ty.info.module})", e.span)
            raise self.error(f"{what} must be a {ty}, not {e.ty}", e.span)
        if isinstance(ty, ir.ComplexType):
            return self.complex_coerce(e, ty, what, explicit)
        if isinstance(ty, ir.VectorType):
            e = self.materialize(e)
            if e.ty == ty:
                return e
            if isinstance(e.ty, ir.VectorType) and not isinstance(
                    e.ty, ir.ComplexType) and e.ty.n == ty.n:
                raise self.error(f"{what}: a {e.ty} is not a {ty}", e.span,
                                 f"convert it explicitly: {ty}(v)")
            raise self.error(f"{what} must be a {ty}, not {e.ty}", e.span,
                             f"make one with {ty}({', '.join(ty.info.components)})")
        if isinstance(e, WeakConst):
            if not explicit:
                why = P.literal_fits(e.value, ty)
                if why is not None:
                    raise self.error(f"{what}: {why}", e.span)
            value = e.value
            info = ty.info
            if info.is_int:
                value = _wrap_int(int(value) if not isinstance(value, float) else
                                  float_to_int(value, info), info)
            elif info.kind == "bool":
                value = bool(value)
            else:
                value = self.int_as_float(value, ty, what, e.span)
            return ir.Const(e.span, ty, value)
        e = self.materialize(e)
        if not isinstance(e.ty, ir.ScalarType):
            raise self.error(f"{what} must be a scalar {ty}, not {e.ty}", e.span,
                             "take z.real, z.imag or abs(z)"
                             if isinstance(e.ty, ir.ComplexType) else None)
        if e.ty == ty:
            return e
        if not explicit:
            why = P.implicit_conversion_error(e.ty, ty)
            if why is not None:
                raise self.error(f"{what}: {why}", e.span)
        if isinstance(e, ir.Const) and ty.info.is_float and e.ty.info.is_int:
            return ir.Const(e.span, ty, float(e.value))
        return ir.Cast(e.span, ty, e)

    def int_as_float(self, value: int | float, ty: ir.ScalarType, what: str,
                     span: SourceSpan) -> float:
        """``float(value)``, or the error of an integer past every float's range (Python
        raises OverflowError for it at run time too)."""
        try:
            return float(value)
        except OverflowError:   # only an int overflows float()
            digits = int(int(value).bit_length() * 0.30103) + 1    # str() of it may be refused
            raise self.error(f"{what}: an integer of about {digits} digits is too large for "
                             f"{ty}", span) from None

    def to_bool(self, e: ir.Expr, what: str = "a condition") -> ir.Expr:
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

    def common_type(self, a: ir.Expr, b: ir.Expr, span: SourceSpan
                    ) -> ir.ScalarType | None:
        """The promoted type of two operands, or None when both are weak literals."""
        aw, bw = isinstance(a, WeakConst), isinstance(b, WeakConst)
        try:
            if aw and bw:
                return None
            if isinstance(a, WeakConst):
                return P.promote_with_literal(self.scalar_of(b), a.value)
            if isinstance(b, WeakConst):
                return P.promote_with_literal(self.scalar_of(a), b.value)
            return P.promote(self.scalar_of(a), self.scalar_of(b))
        except P.PromotionError as exc:
            raise self.error(str(exc), span) from None

    # ---- dispatch ------------------------------------------------------------------------------


    def visit_Num(self, e: S.Num) -> ir.Expr:
        if isinstance(e.value, bool):
            return ir.Const(e.span, ir.BOOL, e.value)
        return WeakConst(e.span, ir.I64, e.value)

    def visit_Str(self, e: S.Str) -> ir.Expr:
        raise self.error("strings are only allowed as assert messages and print arguments",
                         e.span)

    def visit_Name(self, e: S.Name) -> ir.Expr:
        bound = self.bound_constant(e.id, e.span)
        if bound is not None:
            return bound
        if e.id in self.unrolled_names:
            raise self.error(f"'{e.id}' is the variable of a loop over a tuple, which is "
                             "unrolled: it has no value after the loop", e.span,
                             "assign what you need to another variable inside the loop")
        var = self.vars.get(e.id)
        if var is not None:
            if e.id not in self.assigned:
                raise self.error(f"local variable '{e.id}' might be used before it is assigned",
                                 e.span, "assign it on every path before this use")
            if isinstance(var.ty, ir.ArrayType):
                return ir.ArrayRef(e.span, var.ty, var)
            if isinstance(var.ty, ir.UidType):
                return UidValue(e.span, var.ty, var.ty.scope, var.ty.ndim)
            if isinstance(var.ty, GeneratorType):
                return GeneratorValue(e.span, var.ty)
            return ir.Local(e.span, var.ty, var)
        if e.id in self.decl.pending_locals:
            raise self.error(f"local variable '{e.id}' is used before it is assigned", e.span)
        sym = self.ctx.resolver.name(e.id, e.span)
        return self.from_symbol(sym, e)

    def from_symbol(self, sym, e: S.Expr) -> ir.Expr:
        if sym.kind == "const":
            value = sym.value
            if isinstance(value, bool):
                return ir.Const(e.span, ir.BOOL, value)
            return self.const_expr(value, e.span)
        if sym.kind == "constarray":
            scan, decl = sym.value
            return const_array_ref(self.ctx.kernel, scan, decl, e.span)
        if sym.kind == "gn" and R.GPU_NATIVE[sym.name].form == "constant":
            entry = R.GPU_NATIVE[sym.name]
            if not entry.result:  # an untyped literal, as a module constant is (warp_size)
                return WeakConst(e.span, ir.I64, entry.value)
            return ir.Const(e.span, ir.scalar(entry.result), entry.value)
        if sym.kind == "undefined" and sym.name in PYTHON_BUILTINS:
            raise self.error(f"{sym.name}() is not supported in a kernel", e.span,
                             "the builtins kernels have are "
                             f"{', '.join(sorted(R.BUILTINS))}; math.* and gpu_native's "
                             "intrinsics cover the rest")
        if sym.kind == "undefined":
            raise self.error(f"name '{sym.name}' is not defined{did_you_mean(sym.name)}", e.span,
                             "kernels can use their parameters, locals, module constants, "
                             "gpu_native names, math functions and @gpu_device functions")
        if sym.kind == "host":
            raise self.host_error(sym, e.span)
        if sym.kind == "module":
            raise self.error(f"the module '{sym.name}' is not a value", e.span)
        if sym.kind == "typevar":
            raise self.error(
                f"'{sym.name}' is a TypeVar: it names a type in annotations and converts when "
                f"called, `{sym.name}(x)`, but is not a value itself", e.span,
                f"to make a {sym.name} value, convert one (`acc = {sym.name}(0)`, "
                f"`{sym.name}(2) * x[i]`) or write the literal where a {sym.name} is expected "
                f"(`out[i] = 0.0`): literals take the type they meet")
        raise self.error(f"'{sym.name}' is not a value here", e.span)

    def visit_BinOp(self, e: S.BinOp) -> ir.Expr:
        left = self.expr(e.left)
        right = self.expr(e.right)
        return self.binop(e.op, left, right, e.span)

    def binop(self, op: str, left: ir.Expr, right: ir.Expr,
              span: SourceSpan) -> ir.Expr:
        if isinstance(left, WeakConst) and isinstance(right, WeakConst):
            return self.fold(op, left.value, right.value, span)
        for side in (left, right):
            if isinstance(side, (UidValue, AtomicHandle)):
                self.materialize(side)  # raises, saying what the value is
        if any(isinstance(side.ty, ir.ComplexType) and not isinstance(side, WeakConst)
               for side in (left, right)):
            return self.complex_binop(op, left, right, span)
        if isinstance(left.ty, ir.VectorType) or isinstance(right.ty, ir.VectorType):
            return self.vector_binop(op, left, right, span)
        for side in (left, right):
            if not isinstance(side.ty, ir.ScalarType):
                side = self.materialize(side)
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
            elif not _launch_extent(rhs):
                zero_check = self.ctx.kernel.new_site("zerodiv", span,
                                                      message=f"integer {op} by zero")
        return ir.BinOp(span, ty, op, lhs, rhs, zero_check)

    def fold(self, op: str, a, b, span: SourceSpan) -> ir.Expr:
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

    def shift(self, op: str, left: ir.Expr, right: ir.Expr,
              span: SourceSpan) -> ir.Expr:
        if isinstance(left, WeakConst):
            lt = self.scalar_of(self.materialize(left))
            if isinstance(right, ir.Expr) and not isinstance(right, WeakConst):
                rt = self.scalar_of(right)
                if rt.info.is_int and P.arithmetic_type(rt).info.bits == 64:
                    lt = self.promoted_literal(P.arithmetic_type(rt), left.value, span)
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

    def power(self, left: ir.Expr, right: ir.Expr, span: SourceSpan) -> ir.Expr:
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
        common = self.common_type(left, right, span)
        assert common is not None
        ty = common
        if ty.info.is_int:
            raise self.error("`**` with an integer base needs a constant, non-negative integer "
                             "exponent", span, "use a float base: f64(x) ** y")
        if ty.info.name in ("f16", "bf16"):
            ty = ir.F32
        return ir.MathCall(span, ty, "pow", (self.coerce(left, ty, "base", explicit=True),
                                             self.coerce(right, ty, "exponent", explicit=True)))

    def visit_UnaryOp(self, e: S.UnaryOp) -> ir.Expr:
        operand = self.expr(e.operand, condition=(e.op == "not"))
        if isinstance(operand, WeakConst):
            if e.op == "not":
                return ir.Const(e.span, ir.BOOL, not operand.value)
            folds: dict[str, Callable] = {"-": operator.neg, "+": operator.pos, "~": operator.invert}
            try:
                value = folds[e.op](operand.value)
            except TypeError:
                raise self.error(f"operator {e.op} cannot be applied to {operand.value!r}",
                                 e.span) from None
            return WeakConst(e.span, ir.I64, value)
        if e.op == "not":
            return ir.UnaryOp(e.span, ir.BOOL, "not", self.to_bool(operand, "the operand of not"))
        if isinstance(operand.ty, ir.ComplexType):
            return self.complex_unary(e.op, operand, e.span)
        if isinstance(operand.ty, ir.VectorType):
            return self.vector_unary(e.op, operand, e.span)
        ty = P.arithmetic_type(self.scalar_of(operand, f"the operand of {e.op}"))
        if e.op == "~" and not ty.info.is_int:
            raise self.error(f"operator ~ needs an integer operand, not {operand.ty}", e.span)
        if self.scalar_of(operand) == ir.BOOL and e.op == "~":
            raise self.error("~ on a bool gives -1 or -2 in Python; use `not`", e.span)
        value = self.coerce(operand, ty, "operand", explicit=True)
        if e.op == "+":
            return value
        return ir.UnaryOp(e.span, ty, e.op, value)

    def visit_BoolOp(self, e: S.BoolOp, condition: bool = False) -> ir.Expr:
        values: list[ir.Expr] = []
        saved = self.bounds.facts
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
                first_checks = set(self.bounds.pending)  # only the first operand always runs
            # Later operands run only where earlier ones allowed it (short-circuit).
            if i + 1 < len(e.values):
                self.bounds.assume(item, e.op == "and")
        assert first_checks is not None  # a BoolOp has two or more operands
        self.bounds.facts, self.bounds.pending = saved, first_checks
        return ir.BoolOp(e.span, ir.BOOL, e.op, tuple(values))

    def visit_Compare(self, e: S.Compare) -> ir.Expr:
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

    def compare(self, op: str, left: ir.Expr, right: ir.Expr,
                span: SourceSpan) -> ir.Expr:
        if isinstance(left, WeakConst) and isinstance(right, WeakConst):
            return ir.Const(span, ir.BOOL, bool(_CMP_FOLD[op](left.value, right.value)))
        if any(isinstance(side.ty, ir.ComplexType) and not isinstance(side, WeakConst)
               for side in (left, right)):
            return self.complex_compare(op, left, right, span)
        for side in (left, right):
            if isinstance(side.ty, ir.StructType):
                raise self.error(f"structs cannot be compared ({side.ty} {op} ...); compare "
                                 "their fields", side.span)
            if isinstance(side.ty, ir.VectorType):
                raise self.error(f"vectors cannot be compared ({side.ty} {op} ...); compare "
                                 "their components, e.g. a.x == b.x", span)
        if all(not isinstance(s, WeakConst) and s.ty == ir.BOOL for s in (left, right)):
            return ir.Compare(span, ir.BOOL, op, left, right)
        ty = self.common_type(left, right, span)
        assert ty is not None
        return ir.Compare(span, ir.BOOL, op, self.coerce(left, ty, "comparison", explicit=True),
                          self.coerce(right, ty, "comparison", explicit=True))

    def visit_IfExp(self, e: S.IfExp) -> ir.Expr:
        cond = self.to_bool(self.expr(e.test, condition=True))
        bounds = self.bounds
        saved, checks = bounds.facts, set(bounds.pending)
        bounds.facts = saved | bounds.facts_from(cond, True)
        then = self.expr(e.body)
        bounds.facts = saved | bounds.facts_from(cond, False)
        orelse = self.expr(e.orelse)
        bounds.facts, bounds.pending = saved, checks
        if isinstance(then, WeakConst) and isinstance(orelse, WeakConst):
            then, orelse = self.materialize(then), self.materialize(orelse)
            if then.ty != orelse.ty:
                ty = self.promoted(self.scalar_of(then), self.scalar_of(orelse), e.span)
                then, orelse = self.coerce(then, ty, "if-expression"), self.coerce(
                    orelse, ty, "if-expression")
            return ir.Select(e.span, then.ty, cond, then, orelse)
        if isinstance(then.ty, ir.StructType) or isinstance(orelse.ty, ir.StructType):
            st = then.ty if isinstance(then.ty, ir.StructType) else orelse.ty
            assert isinstance(st, ir.StructType)
            return ir.Select(e.span, st, cond, self.coerce(then, st, "if-expression"),
                             self.coerce(orelse, st, "if-expression"))
        if any(isinstance(side.ty, ir.ComplexType) and not isinstance(side, WeakConst)
               for side in (then, orelse)):
            cty, then, orelse = self.complex_conditional(then, orelse)
            return ir.Select(e.span, cty, cond, then, orelse)
        if isinstance(then.ty, ir.VectorType) or isinstance(orelse.ty, ir.VectorType):
            vt = then.ty if isinstance(then.ty, ir.VectorType) else orelse.ty
            assert isinstance(vt, ir.VectorType)
            return ir.Select(e.span, vt, cond, self.coerce(then, vt, "if-expression"),
                             self.coerce(orelse, vt, "if-expression"))
        if all(not isinstance(s, WeakConst) and s.ty == ir.BOOL for s in (then, orelse)):
            return ir.Select(e.span, ir.BOOL, cond, then, orelse)
        common = self.common_type(then, orelse, e.span)
        assert common is not None
        ty = common
        return ir.Select(e.span, ty, cond, self.coerce(then, ty, "if-expression", explicit=True),
                         self.coerce(orelse, ty, "if-expression", explicit=True))

    # ---- attributes and subscripts -----------------------------------------------------------

    def visit_Attribute(self, e: S.Attribute) -> ir.Expr:
        sym = self.ctx.resolver.dotted(e.value) if not self.is_local_root(e.value) else None
        if sym is not None and sym.kind == "host":
            self.foreign_attribute(sym, e)
        if sym is not None and sym.kind == "gn" and sym.name in SPECIALS:
            axis = self.axis_of(e.attr, e.span)
            self.traits.note_special(sym.name)
            return ir.Special(e.span, ir.I32, sym.name, axis)
        if sym is not None and sym.kind in ("module", "gn"):
            inner = self.ctx.resolver.attribute(sym, e.attr, e.span)
            return self.from_symbol(inner, e)
        base = self.expr(e.value)
        if isinstance(base.ty, ir.ComplexType) and not isinstance(base, WeakConst):
            return self.complex_attribute(base, e.attr, e.span)
        if isinstance(base.ty, ir.VectorType) and not isinstance(base, WeakConst):
            return self.vector_component(base, e.attr, e.span)
        if isinstance(base.ty, ir.StructType):
            return self.struct_field(base, e.attr, e.span)
        if isinstance(base, UidValue):
            axis = self.axis_of(e.attr, e.span)
            if axis >= base.ndim:
                raise self.error(f"a {base.ndim}-D unique id has no component .{e.attr}", e.span)
            return ir.UidComponent(e.span, ir.I64, base.scope, axis)
        if isinstance(base, ir.ArrayRef) and e.attr == "shape":
            return TupleValue(e.span, ir.VOID, tuple(
                self.shape_of(base, axis, e.span) for axis in range(base.ty.ndim)))
        if isinstance(base, ir.ArrayRef) and e.attr == "ndim":
            return WeakConst(e.span, ir.I64, base.ty.ndim)
        if isinstance(base, ir.ArrayRef) and e.attr == "size":
            return self.size_of(base, e.span)
        if isinstance(base, GeneratorValue) and e.attr in R.GENERATOR_METHODS:
            raise self.error(f"{e.attr} is a method of the generator: call it, "
                             f"{e.value.id if isinstance(e.value, S.Name) else 'rng'}"
                             f".{e.attr}()", e.span)
        if isinstance(base, ir.ArrayRef) and e.attr in _NUMPY_ARRAY_ATTRIBUTES:
            raise self.error(f"attribute .{e.attr} of an array is not supported in kernels",
                             e.span, _NUMPY_ARRAY_ATTRIBUTES[e.attr])
        raise self.error(f"attribute .{e.attr} is not supported here", e.span)

    def foreign_attribute(self, sym, e: S.Attribute) -> None:
        """Raise for ``cuda.threadIdx.x`` (an attribute of another GPU language's module) with
        how gpu_native spells it, where it has a spelling; else return (the base's own error
        follows)."""
        hint = foreign_hint_of(e)
        if hint is not None:
            raise self.host_error(sym, e.span, hint)

    def host_error(self, sym, span: SourceSpan, hint: str | None = None) -> TranspileError:
        """The error for a name of the host (``sym``, of kind ``host``) used in a kernel."""
        return self.error(f"'{sym.name}' cannot be used in a kernel: {sym.value}", span,
                          hint or "kernels can only call gpu_native intrinsics, math functions "
                          "and @gpu_device functions")

    def axis_of(self, attr: str, span: SourceSpan) -> int:
        if attr not in AXES:
            raise self.error(f"expected .x, .y or .z, not .{attr}", span)
        return AXES[attr]

    def is_local_root(self, e: S.Expr) -> bool:
        while isinstance(e, S.Attribute):
            e = e.value
        return isinstance(e, S.Name) and e.id in self.vars

    def visit_Subscript(self, e: S.Subscript) -> ir.Expr:
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
        base = self.expr(e.value)
        if isinstance(base.ty, ir.ComplexType) and not isinstance(base, WeakConst):
            raise self.error(f"a complex number ({base.ty}) cannot be indexed", e.span,
                             "use z.real and z.imag")
        if isinstance(base.ty, ir.VectorType) and len(e.index) == 1:
            return self.vector_index(base, e.index[0], e.span)
        if isinstance(base, TupleValue) or isinstance(base.ty, ir.TupleType):
            return self.tuple_item(base, e.index, e.span)
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"only arrays can be indexed, not {base.ty}", e.value.span)
        indices = self.indices(base, e.index, e.span)
        checks = self.bounds.checks(base, indices, e.span)
        self.unique.note_load(base, indices, e.span, self.unsafe_depth > 0)
        self.tail.note(base, indices)
        return ir.Load(e.span, base.ty.elem, base, indices, checks)

    def size_of(self, base: ir.ArrayRef, span: SourceSpan) -> ir.Expr:
        """``a.size``: the product of the extents, an ``i64`` (NumPy's element count; no
        device array holds 2**63 elements, so the product cannot wrap)."""
        extents = [self.shape_of(base, axis, span) for axis in range(base.ty.ndim)]
        fixed = [x.value for x in extents if isinstance(x, WeakConst)]
        if len(fixed) == len(extents):
            return WeakConst(span, ir.I64, math.prod(fixed))
        typed = [ir.Const(x.span, ir.I64, x.value) if isinstance(x, WeakConst) else x
                 for x in extents]
        size = typed[0]
        for extent in typed[1:]:
            size = ir.BinOp(span, ir.I64, "*", size, extent)
        return size

    def shape_of(self, base: ir.ArrayRef, axis: int, span: SourceSpan
                 ) -> ir.Expr:
        if base.ty.shape is not None and base.ty.shape[0] >= 0:
            return WeakConst(span, ir.I64, base.ty.shape[axis])
        return ir.Shape(span, ir.I64, base, axis)

    def indices(self, base: ir.ArrayRef, raw: tuple[S.Expr, ...],
                span: SourceSpan) -> tuple[ir.Expr, ...]:
        if len(raw) != base.ty.ndim:
            hint = None
            if len(raw) < base.ty.ndim:  # C's XY[i][j], or a row taken as a value
                names = ", ".join("ijk"[:base.ty.ndim])
                hint = (f"index every axis in one subscript, {base.var.name}[{names}] (C's "
                        f"{base.var.name}{''.join(f'[{c}]' for c in 'ijk'[:base.ty.ndim])} is "
                        f"{base.var.name}[{names}] here; a row of an array is not a value)")
            raise self.error(f"{base.var.name} is a {base.ty.ndim}-D array but is indexed with "
                             f"{len(raw)} index{'es' if len(raw) != 1 else ''}", span, hint)
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

    def const_int(self, e: S.Expr, what: str) -> int:
        value = self.expr(e)
        if isinstance(value, (WeakConst, ir.Const)) and isinstance(value.value, int) and not \
                isinstance(value.value, bool):
            return value.value
        raise self.error(f"{what} must be a constant integer", e.span)

    def has_effects(self, e: ir.Expr) -> bool:
        if isinstance(e, ir.Call) and returned_expression(e.function) is not None:
            pass  # arithmetic of its arguments, as if inlined (the arguments are looked at below)
        elif isinstance(e, (ir.Call, ir.Atomic, ir.WarpOp, ir.BarrierVote, ir.RandomDraw)):
            return True
        for value in vars(e).values():
            if isinstance(value, ir.Expr) and self.has_effects(value):
                return True
            if isinstance(value, tuple) and any(
                    isinstance(v, ir.Expr) and self.has_effects(v) for v in value):
                return True
        return False


def _wrap_int(value: int, info) -> int:
    if info.kind == "bool":
        return 1 if value else 0
    mask = (1 << info.bits) - 1
    value &= mask
    if info.kind == "int" and value > info.max:
        value -= 1 << info.bits
    return value


def float_to_int(value: float, info) -> int:
    """A float converted to an integer type as the GPU converts it: truncated, saturated, NaN
    0."""
    if value != value:
        return 0
    if value in (float("inf"), float("-inf")):
        return int(info.max if value > 0 else info.min)
    return int(max(info.min, min(info.max, int(value))))


def foreign_hint_of(e: S.Expr) -> str | None:
    """How gpu_native spells ``e``, an attribute of another GPU language's module reached from a
    name (``cuda.syncthreads``, ``cuda.atomic.add``): :func:`~gpu_native.lang.spellings.
    foreign_hint` of its dotted names, or None."""
    if not isinstance(e, S.Attribute):
        return None
    names = dotted_names(e)
    return foreign_hint(names) if names else None


def _launch_extent(e: ir.Expr) -> bool:
    """Is ``e`` a launch extent (``grid_dim.x``, ``block_dim.y``), at least 1 on every launch, in
    a type of 32 bits or more (which keeps it at least 1)?  A division by it needs no check."""
    while isinstance(e, ir.Cast) and e.ty.info.is_int and e.ty.info.bits >= 32:
        e = e.value
    return isinstance(e, ir.Special) and e.name in ("block_dim", "grid_dim")
