"""What the emitter knows of an operand from its expression alone: whether it is a literal or an
expression of literals, which sign a constant may have, and what the device compiler (ptxas) may
take an expression to be (a product it folds a scale into, a value it assumes is >= 0).  The
emitter picks the cheaper of two spellings where these show it safe.
"""

from __future__ import annotations

import math

from .. import ir
from ..lang import registry
from ..nodes import fields, is_node


def nonpositive(e: ir.Expr) -> bool:
    """A constant that may be <= 0 (-0.0 included): a literal <= 0, or any expression of literals
    alone (``abs(-5) * -1.0``), which the device compiler folds but we do not evaluate."""
    return constant_may_be(e, lambda v: v <= 0)


def nonnegative(e: ir.Expr) -> bool:
    """A constant that may be >= 0: a literal >= 0, or any expression of literals alone."""
    return constant_may_be(e, lambda v: v >= 0)


def constant_may_be(e: ir.Expr, sign) -> bool:
    if isinstance(e, ir.Const):
        return not isinstance(e.value, bool) and sign(e.value)
    return constant(e)


def constant(e: ir.Expr) -> bool:
    if isinstance(e, ir.Const):
        return True
    if not isinstance(e, (ir.BinOp, ir.UnaryOp, ir.Cast, ir.MathCall)):
        return False
    children = [getattr(e, name) for name in fields(e)]
    flat = [c for x in children for c in (x if isinstance(x, tuple) else (x,))]
    return all(constant(c) for c in flat if isinstance(c, ir.Expr))

# Float functions whose result ptxas may take to be >= 0 although it can be NaN (the registry's
# `nonnegative` entries, by the IR's name).
TAKEN_NONNEGATIVE = frozenset(name for name, e in registry.MATH_OPS.items() if e.nonnegative)


def taken_nonnegative(e: ir.Expr) -> bool:
    """``fabs(x)``, ``x * x``, ``exp2(x)`` and the like: >= 0 unless NaN."""
    if isinstance(e, ir.MathCall):
        return e.name in TAKEN_NONNEGATIVE
    if isinstance(e, ir.VecCall):  # a square root, or a sum of squares
        return e.name in ("length", "length_sq") or (
            e.name == "dot" and same_value(e.args[0], e.args[1]))
    if isinstance(e, ir.BinOp):
        if e.op == "**":
            return isinstance(e.right, ir.Const) and e.right.value % 2 == 0
        return e.op == "*" and same_value(e.left, e.right)
    return False


def taken_nonpositive(e: ir.Expr) -> bool:
    """The negation of an expression ptxas takes to be >= 0 (``-fabs(x)``)."""
    return isinstance(e, ir.UnaryOp) and e.op == "-" and taken_nonnegative(e.operand)


def same_value(a: object, b: object) -> bool:
    """The same expression, wherever it was written (spans and check sites aside)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple) and isinstance(b, tuple):  # both or neither: the types are one
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if not is_node(a):
        return a == b
    return all(same_value(getattr(a, name), getattr(b, name))
               for name in fields(a) if name not in ("span", "checks"))


def constant_int(e: ir.Expr) -> int:
    """The integer literal ``e`` (through casts), which the checker proved it is."""
    while isinstance(e, ir.Cast):
        e = e.value
    assert isinstance(e, ir.Const) and isinstance(e.value, int), e
    return e.value


def sext_may_widen(e: ir.Expr) -> bool:
    """Signed 32-bit (or narrower) arithmetic whose result may have wrapped (not proven in
    range): its sign extension to 64 bits must stay after the wrap (see gn_sext32)."""
    ty = e.ty
    if not (isinstance(ty, ir.ScalarType) and ty.info.is_signed and ty.info.bits <= 32):
        return False
    if isinstance(e, ir.BinOp):
        return e.op in ("+", "-", "*", "<<") and not e.no_wrap
    return isinstance(e, ir.UnaryOp) and e.op == "-"


def scale_by_power_of_two(e: ir.BinOp | ir.VecBinOp) -> tuple[str, float] | None:
    """For ``x * c``, ``c * x`` or ``x / c`` in f32 with a literal ``c = ±2**k``, 1 <= |k| <= 3:
    which operand ``x`` is (``"left"`` or ``"right"``) and the factor (``1 / c`` for a division,
    which is exact).  See gn_fscale in the prelude."""
    def factor(c: ir.Expr) -> float | None:
        if not isinstance(c, ir.Const) or isinstance(c.value, bool) or not c.value:
            return None
        mantissa, exponent = math.frexp(abs(float(c.value)))
        return float(c.value) if mantissa == 0.5 and 1 <= abs(exponent - 1) <= 3 else None

    if e.op == "/":
        f = factor(e.right)
        return None if f is None else ("left", 1.0 / f)
    if e.op == "*":
        f = factor(e.right)
        if f is not None:
            return "left", f
        f = factor(e.left)
        if f is not None:
            return "right", f
    return None


def product_locals(bodies) -> set[int]:
    """The ids of the variables that may hold the result of a multiply (see may_be_product)."""
    assigns = [(id(n.var), n.value) for body in bodies for n in ir.walk(body)
               if isinstance(n, ir.Assign)]
    found: set[int] = set()
    while True:
        more = {var for var, value in assigns if var not in found
                and may_be_product(value, found)}
        if not more:
            return found
        found |= more


def may_be_product(e: ir.Expr, product_locals: set[int]) -> bool:
    """Whether ``e`` may reach ptxas as the result of a plain FMUL, through negation, abs,
    a select or a variable: what it folds a power-of-two scale into (see gn_fscale)."""
    if isinstance(e, ir.BinOp):
        return e.op in ("*", "**")
    if isinstance(e, ir.UnaryOp):
        return e.op == "-" and may_be_product(e.operand, product_locals)
    if isinstance(e, ir.Cast):
        return e.ty == e.value.ty and may_be_product(e.value, product_locals)
    if isinstance(e, ir.Select):
        return any(may_be_product(x, product_locals) for x in (e.then, e.orelse))
    if isinstance(e, ir.MathCall):
        return e.name in ("abs", "fabs", "min", "max") and any(
            may_be_product(x, product_locals) for x in e.args)
    if isinstance(e, ir.Local):
        return id(e.var) in product_locals
    if isinstance(e, ir.Load):
        # A per-thread array indexed by constants lives in registers: it may hold a product.
        return e.array.ty.space == "local"
    # A vector's component may be a product made inside a prelude function.
    return isinstance(e, (ir.Call, ir.TupleItem, ir.VecComponent, ir.VecCall, ir.ComplexCall))
