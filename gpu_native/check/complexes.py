"""The type pass over complex numbers (``complex64``, ``complex128``): constructors, operators,
``.real`` / ``.imag``, ``z.conjugate()``, ``abs(z)`` and the ``cmath`` functions.

The rules, as a Numba or NumPy user expects them:

* ``+ - * /`` between complex numbers of one type keep it; ``complex64`` with ``complex128`` is
  ``complex128``.  A real operand is promoted to complex, as NumPy promotes it: ``f16``,
  ``bf16``, ``f32`` and integers of up to 16 bits into ``complex64``, ``f64`` and 32-bit
  integers into ``complex128``; a literal takes the complex operand's type.  ``i64`` and ``u64``
  are refused: no complex type holds every one of their values (NumPy would round them
  silently); convert them explicitly.
* ``==`` and ``!=`` compare both parts (after the same promotion); complex numbers are not
  ordered, so ``<`` and friends are refused, as Python refuses them.
* Assignment (to a local, an array element, a parameter, a result) widens ``complex64`` to
  ``complex128`` and a real value to the complex type that holds it, but never narrows:
  ``complex128`` into ``complex64`` and ``f64`` into ``complex64`` need ``complex64(z)``.
* A complex value has no truth value, no ordering, no atomics and no components other than
  ``.real`` and ``.imag``, which are read only (Python's complex numbers are immutable).

The arithmetic itself (``mul``, ``div``, the ``cmath`` functions) is :class:`ir.ComplexCall`,
computed by one algorithm written out twice: the prelude's ``gn_c*`` functions and
:mod:`gpu_native.simulator.complexes`.
"""

from __future__ import annotations

from .. import ir
from ..errors import SourceSpan
from ..frontend import syntax as S
from ..lang import registry as R
from .checker_base import CheckerBase
from .expressions import TupleValue, WeakConst

_OPERATORS = ("+", "-", "*", "/")
_C64, _C128 = ir.complex_type("complex64"), ir.complex_type("complex128")


def real_into(ty: ir.ScalarType) -> ir.ComplexType | None:
    """The smallest complex type whose parts hold every value of the real type ``ty`` exactly
    (None for ``i64`` and ``u64``, which none holds)."""
    info = ty.info
    if info.is_float:
        return _C128 if info.bits == 64 else _C64
    if info.kind == "bool" or info.bits <= 16:
        return _C64
    if info.bits == 32:
        return _C128
    return None


def _wider(a: ir.ComplexType, b: ir.ComplexType) -> ir.ComplexType:
    return a if a.elem.info.bits >= b.elem.info.bits else b


class ComplexChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: every construct on complex values."""

    def complex_operand_type(self, e: ir.Expr, what: str) -> ir.ComplexType | None:
        """The complex type an operand of a complex operation brings (None for a literal)."""
        if isinstance(e, WeakConst):
            return None
        e = self.materialize(e)
        ty = e.ty
        if isinstance(ty, ir.ComplexType):
            return ty
        if isinstance(ty, ir.VectorType):
            raise self.error(f"{what}: a vector ({ty}) and a complex number do not mix", e.span)
        st = self.scalar_of(e, what)
        into = real_into(st)
        if into is None:
            raise self.error(f"{what}: a {st} operand does not promote to a complex number "
                             f"(complex128's f64 parts cannot hold every {st} exactly)", e.span,
                             "convert it explicitly, e.g. f64(n)")
        return into

    def complex_common(self, values: list[ir.Expr], what: str) -> ir.ComplexType:
        """The complex type operands of one complex operation compute in."""
        found: ir.ComplexType | None = None
        for v in values:
            ty = self.complex_operand_type(v, what)
            if ty is not None:
                found = ty if found is None else _wider(found, ty)
        return found or _C128

    def to_complex(self, e: ir.Expr, ty: ir.ComplexType, what: str) -> ir.Expr:
        """``e`` (a complex number, a real number or a literal) as a ``ty``, converted
        explicitly (the caller has checked that the conversion is allowed)."""
        if isinstance(e, WeakConst) or not isinstance(e.ty, ir.ComplexType):
            part = self.coerce(e, ty.elem, what, explicit=True)
            zero = ir.Const(e.span, ty.elem, 0.0)
            return ir.VecMake(e.span, ty, (part, zero))
        if e.ty == ty:
            return e
        return ir.VecCall(e.span, ty, "convert", (e,))

    def complex_coerce(self, e: ir.Expr, ty: ir.ComplexType, what: str,
                       explicit: bool = False) -> ir.Expr:
        """``e`` converted to the complex type ``ty`` by the assignment rules: widening only,
        unless ``explicit``."""
        if not isinstance(e, WeakConst):
            e = self.materialize(e)
        if not explicit and not isinstance(e, WeakConst):
            src = self.complex_operand_type(e, what)
            if src is not None and src.elem.info.bits > ty.elem.info.bits:
                raise self.error(f"{what}: a {e.ty} value does not fit a {ty} without rounding",
                                 e.span, f"convert it explicitly: {ty}(z)")
        return self.to_complex(e, ty, what)

    def complex_binop(self, op: str, left: ir.Expr, right: ir.Expr, span: SourceSpan
                      ) -> ir.Expr:
        """``left op right`` where at least one side is complex."""
        if op not in _OPERATORS:
            hint = ("multiply it out, or use cmath.exp(w * cmath.log(z))" if op == "**"
                    else None)
            raise self.error(f"operator {op} is not defined on complex numbers; + - * / are",
                             span, hint)
        what = f"operator {op}"
        ty = self.complex_common([left, right], what)
        lhs, rhs = self.to_complex(left, ty, what), self.to_complex(right, ty, what)
        if op in ("+", "-"):  # part by part, as a vec2's
            return ir.VecBinOp(span, ty, op, lhs, rhs)
        return ir.ComplexCall(span, ty, "mul" if op == "*" else "div", (lhs, rhs))

    def complex_unary(self, op: str, operand: ir.Expr, span: SourceSpan) -> ir.Expr:
        ty = operand.ty
        assert isinstance(ty, ir.ComplexType)
        if op == "+":
            return operand
        if op != "-":
            raise self.error(f"operator {op} is not defined on complex numbers; unary - is",
                             span)
        return ir.VecUnary(span, ty, "-", operand)

    def complex_compare(self, op: str, left: ir.Expr, right: ir.Expr, span: SourceSpan
                        ) -> ir.Expr:
        if op not in ("==", "!="):
            raise self.error(f"complex numbers are not ordered ({op}); == and != compare them",
                             span, "compare abs(z), z.real or z.imag")
        what = f"comparison {op}"
        ty = self.complex_common([left, right], what)
        return ir.ComplexCall(span, ir.BOOL, "eq" if op == "==" else "ne",
                              (self.to_complex(left, ty, what), self.to_complex(right, ty, what)))

    def complex_attribute(self, value: ir.Expr, attr: str, span: SourceSpan) -> ir.Expr:
        """``z.real``, ``z.imag``."""
        ty = value.ty
        assert isinstance(ty, ir.ComplexType)
        index = R.COMPLEX_ATTRIBUTES.get(attr)
        if index is None:
            hint = "call it: z.conjugate()" if attr in R.COMPLEX_METHODS else None
            raise self.error(f"a {ty} has no attribute .{attr}; it has .real and .imag", span,
                             hint)
        return ir.VecComponent(span, ty.elem, value, index)

    def complex_abs(self, value: ir.Expr, span: SourceSpan) -> ir.Expr:
        """``abs(z)``: the modulus, ``hypot(re, im)``, of the part type."""
        ty = value.ty
        assert isinstance(ty, ir.ComplexType)
        return ir.ComplexCall(span, ty.elem, "abs", (value,))

    def complex_conditional(self, then: ir.Expr, orelse: ir.Expr
                            ) -> tuple[ir.ComplexType, ir.Expr, ir.Expr]:
        """The two arms of an if-expression of which one is complex, in their common type."""
        what = "if-expression"
        ty = self.complex_common([then, orelse], what)
        return ty, self.to_complex(then, ty, what), self.to_complex(orelse, ty, what)

    def refuse_complex(self, value: ir.Expr, what: str, hint: str | None = None) -> None:
        """Raise the error for a complex value where ``what`` does not take one."""
        if isinstance(value.ty, ir.ComplexType) and not isinstance(value, WeakConst):
            raise self.error(f"{what} does not take a complex number ({value.ty})", value.span,
                             hint)

    # ---- calls ----------------------------------------------------------------------------

    def call_complex_make(self, name: str, e: S.Call) -> ir.Expr:
        """``complex64()``, ``complex64(x)`` (a real or complex number), ``complex64(re, im)``."""
        ty = ir.complex_type(name)
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, 0, f"{name}()")
        values = {p: self.expr(a) for p, a in got.items()}
        real, imag = values.get("real"), values.get("imag")
        zero = ir.Const(e.span, ty.elem, 0.0)
        if real is None and imag is None:
            return ir.VecMake(e.span, ty, (zero, zero))
        if imag is None:
            assert real is not None
            return self.to_complex(real, ty, f"{name}()'s argument")
        parts: list[ir.Expr] = []
        for part, v in (("real", real), ("imag", imag)):
            if v is None:
                parts.append(zero)
                continue
            self.refuse_complex(v, f"{name}()'s {part} part",
                                f"take its .{part}, or write {name}(a) + {name}(b) * 1j as "
                                f"{name}(a.real - b.imag, a.imag + b.real)")
            parts.append(self.coerce(v, ty.elem, f"{name}()'s {part} part", explicit=True))
        return ir.VecMake(e.span, ty, tuple(parts))

    def call_conjugate(self, value: ir.Expr, e: S.Call) -> ir.Expr:
        """``z.conjugate()``."""
        if e.args or e.keywords:
            raise self.error("conjugate() takes no arguments", e.span)
        ty = value.ty
        assert isinstance(ty, ir.ComplexType)
        return ir.ComplexCall(e.span, ty, "conj", (value,))

    def call_cmath(self, name: str, e: S.Call) -> ir.Expr:
        """A ``cmath`` function, typed by its registry entry: a complex argument (a real one is
        promoted, a literal gives ``complex128`` as Python's ``complex`` is double), or, for
        ``rect``, two real ones."""
        entry = R.CMATH[name]
        arity = len(entry.params)
        if len(e.args) != arity or e.keywords:
            raise self.error(f"cmath.{name}() takes {arity} argument{'s' if arity > 1 else ''}",
                             e.span)
        values = [self.expr(a) for a in e.args]
        what = f"cmath.{name}()'s argument"
        if name == "rect":
            for v in values:
                self.refuse_complex(v, what)
            ty = self.float_operands(values, what)
            args = tuple(self.coerce(v, ty, f"cmath.{name}()", explicit=True) for v in values)
            return ir.ComplexCall(e.span, ir.complex_of(ty), name, args)
        cty = self.complex_common(values, what)
        z = self.to_complex(values[0], cty, what)
        if name == "polar":
            if self.has_effects(z):
                raise self.error("cmath.polar()'s argument is used twice: this one calls a "
                                 "function or an atomic", z.span, "assign it to a local first")
            return TupleValue(e.span, ir.VOID, (ir.ComplexCall(e.span, cty.elem, "abs", (z,)),
                                                ir.ComplexCall(e.span, cty.elem, "phase", (z,))))
        result: ir.Type = {"complex": cty, "float": cty.elem, "bool": ir.BOOL}[entry.result]
        return ir.ComplexCall(e.span, result, name, (z,))

    def float_operands(self, values: list[ir.Expr], what: str) -> ir.ScalarType:
        """The float type real operands compute in, as the math functions type them (integers
        in ``f64``, half types in ``f32``, literals alone in ``f64``)."""
        ty: ir.ScalarType | None = None
        for v in values:
            if not isinstance(v, WeakConst):
                t = self.scalar_of(v, what)
                ty = t if ty is None else self.promoted(ty, t, v.span)
        if ty is None or not ty.info.is_float:
            return ir.F64
        return ir.F32 if ty.info.bits < 32 else ty
