"""Promotion and conversion rules of the kernel language (documented in ``docs/language.md``).

The rules are CUDA C++'s, with the surprises removed:

* Integer literals and float literals are *weak*: they take the type of the typed operand they
  meet (``x * 2`` with ``x: f32`` is f32).  A literal on its own is ``i32`` if it fits, else
  ``i64``; a float literal on its own is ``f64`` (Python's float).
* Integers narrower than 32 bits (and ``bool_``) are promoted to ``i32`` before arithmetic.
* Two integers of one signedness give the wider type.  Mixed signedness gives the smallest signed
  type that holds both (``i32 + u32 -> i64``); ``u64`` mixed with a signed type is refused,
  unlike C, which would silently compare ``-1 > 0u``.
* An integer meets a float: the float type.  Two floats: the wider; ``f16`` with ``bf16`` is f32.
* Assignment (to a typed local, an array element, a parameter) converts implicitly between
  floats, between integers (wrapping) and from integer to float; float to integer needs a cast.
"""

from __future__ import annotations

from ..ir import BOOL, F32, F64, I32, I64, ScalarType, scalar


class PromotionError(Exception):
    """Raised with a user-facing sentence when two types cannot be combined."""


def default_int_type(value: int) -> ScalarType:
    """The type a lone integer literal gets: i32 if it fits, else i64 (else an error)."""
    if -(1 << 31) <= value < (1 << 31):
        return I32
    if -(1 << 63) <= value < (1 << 63):
        return I64
    if 0 <= value < (1 << 64):
        return scalar("u64")
    raise PromotionError(f"the integer literal {value} does not fit in 64 bits")


def arithmetic_type(t: ScalarType) -> ScalarType:
    """Integer promotion: bool and integers narrower than 32 bits compute as i32."""
    info = t.info
    if info.kind == "bool" or (info.is_int and info.bits < 32):
        return I32
    return t


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """The common type of two typed (non-literal) operands of an arithmetic operator."""
    a = arithmetic_type(a)
    b = arithmetic_type(b)
    if a == b:
        return a
    ai, bi = a.info, b.info
    if ai.is_float and bi.is_float:
        if {ai.name, bi.name} == {"f16", "bf16"}:
            return F32
        return a if ai.bits >= bi.bits else b
    if ai.is_float:
        return a
    if bi.is_float:
        return b
    # Both integers, at least 32 bits each.
    if ai.is_signed == bi.is_signed:
        return a if ai.bits >= bi.bits else b
    signed, unsigned = (a, b) if ai.is_signed else (b, a)
    if signed.info.bits > unsigned.info.bits:
        return signed
    if unsigned.info.bits < 64:
        return I64
    raise PromotionError(
        f"mixing {signed} and {unsigned} has no common integer type; cast one side, e.g. "
        f"i64(x) or u64(x)"
    )


def promote_with_literal(t: ScalarType, literal: int | float | bool) -> ScalarType:
    """The type of ``typed OP literal``: the literal adopts the typed side where it can."""
    t_arith = arithmetic_type(t)
    if isinstance(literal, bool):
        return t_arith
    if isinstance(literal, float):
        return t_arith if t_arith.info.is_float else F64
    # Integer literal.
    if t_arith.info.is_float:
        return t_arith
    info = t_arith.info
    if info.min <= literal <= info.max:
        return t_arith
    # Too big for the typed side: widen the way C would give the literal a wider type.
    wider = default_int_type(literal)
    return promote(t_arith, wider)


def literal_type(literal: int | float | bool) -> ScalarType:
    """The type a lone literal materialises to."""
    if isinstance(literal, bool):
        return BOOL
    if isinstance(literal, float):
        return F64
    return default_int_type(literal)


def implicit_conversion_error(src: ScalarType, dst: ScalarType) -> str | None:
    """Why ``src`` cannot be assigned to ``dst`` without a cast, or None when it can."""
    if src == dst:
        return None
    s, d = src.info, dst.info
    if d.kind == "bool" and s.kind != "bool":
        return f"a {src} value is not a bool_; compare it explicitly (e.g. `x != 0`)"
    if s.is_float and d.is_int:
        return (f"assigning a {src} value to {dst} would truncate it; "
                f"cast explicitly with {dst.name}(value) or int(value)")
    return None


def literal_fits(value: int | float | bool, dst: ScalarType) -> str | None:
    """Why a literal cannot be stored into ``dst``, or None when it can."""
    info = dst.info
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if info.is_int:
            return f"the float literal {value!r} cannot be assigned to {dst} without a cast"
        return None
    if info.is_float or info.kind == "bool":
        if info.kind == "bool":
            return f"the integer literal {value} is not a bool_; use True or False"
        return None
    if not (info.min <= value <= info.max):
        return f"the literal {value} does not fit in {dst} ({info.min}..{info.max})"
    return None


__all__ = [
    "PromotionError",
    "arithmetic_type",
    "default_int_type",
    "implicit_conversion_error",
    "literal_fits",
    "literal_type",
    "promote",
    "promote_with_literal",
]
