"""Typed IR → CUDA C++ for the small vector types: the expressions on ``vec3f`` and friends,
spelt with the prelude's ``gn_vec*`` structs, their operators and functions (``gn_dot`` ...),
and for the complex types (``gn_complex64`` ..., whose ``+ -`` are vector expressions and whose
other operations are the prelude's ``gn_c*`` functions).

A mixin of :class:`~gpu_native.emit.cuda.CudaEmitter` (whose dispatch table names these
methods); every other construct on vectors (locals, loads, stores, calls, selects) is the
emitter's own, the struct being a C++ value like a scalar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..lang.types import HALF_VECTORS
from .operands import scale_by_power_of_two
from .spelling import const_code, convert, ctype

_PACKED_OPS = {"+": "gn_padd", "-": "gn_psub", "*": "gn_pmul", "/": "gn_pdiv"}

if TYPE_CHECKING:
    from collections.abc import Callable


class VectorEmitter:
    """The vector expressions of :class:`~gpu_native.emit.cuda.CudaEmitter`."""

    if TYPE_CHECKING:
        expr: Callable[[ir.Expr], str]

    def emit_VecMake(self, e: ir.VecMake) -> str:
        # A braced list evaluates its items left to right, as the simulator does.
        return f"{ctype(e.ty)}{{{', '.join(self.expr(i) for i in e.items)}}}"

    def emit_VecComponent(self, e: ir.VecComponent) -> str:
        return f"({self.expr(e.value)}).{'xyzw'[e.index]}"

    def emit_VecBinOp(self, e: ir.VecBinOp) -> str:
        if e.ty.info.name in HALF_VECTORS:
            # The prelude's gn_padd ... on __half2 / __nv_bfloat162, a scalar operand splat.
            args = ", ".join(self.expr(x) if isinstance(x.ty, ir.VectorType)
                             else f"gn_psplat({self.expr(x)})" for x in (e.left, e.right))
            return f"{_PACKED_OPS[e.op]}({args})"
        if e.op in ("*", "/") and e.ty.elem == ir.F32:
            scaled = scale_by_power_of_two(e)
            if scaled is not None and isinstance(getattr(e, scaled[0]).ty, ir.VectorType):
                # ptxas would fold the scale into the multiplies that made the components.
                vector = self.expr(getattr(e, scaled[0]))
                return f"gn_fscale({vector}, {const_code(scaled[1], ir.F32)})"
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def emit_VecUnary(self, e: ir.VecUnary) -> str:
        if e.ty.info.name in HALF_VECTORS:
            return f"gn_pneg({self.expr(e.operand)})"
        return f"(-{self.expr(e.operand)})"

    def emit_VecCall(self, e: ir.VecCall) -> str:
        args = [self.expr(a) for a in e.args]
        if e.name == "splat" and isinstance(e.ty, ir.VectorType) and (
                e.ty.info.name in HALF_VECTORS):
            return f"gn_psplat({args[0]})"  # __half2half2, __bfloat162bfloat162
        if e.name in ("convert", "splat"):
            # Each component converted (or the scalar repeated) once the argument is evaluated.
            ty = e.ty
            assert isinstance(ty, ir.VectorType)
            src = e.args[0].ty
            if isinstance(src, ir.VectorType):
                items = ", ".join(convert(f"__gn_v.{c}", src.elem, ty.elem)
                                  for c in src.info.components)
            else:
                items = ", ".join("__gn_v" for _ in range(ty.n))
            return (f"([](const {ctype(src)} __gn_v) {{ return {ctype(ty)}{{{items}}}; }}"
                    f"({args[0]}))")
        if e.name == "fma":
            return f"gn_pfma({', '.join(args)})"
        return f"gn_{e.name}({', '.join(args)})"

    def emit_ComplexCall(self, e: ir.ComplexCall) -> str:
        # The prelude's gn_cmul, gn_cdiv, gn_cexp ..., overloaded on the two complex types.
        return f"gn_c{e.name}({', '.join(self.expr(a) for a in e.args)})"

