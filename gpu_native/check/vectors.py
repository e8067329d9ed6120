"""The type pass over small vectors (``vec3f`` ...): constructors, components, elementwise
operators and the vector functions (``dot``, ``cross``, ``length``, ``length_sq``,
``normalize``, elementwise ``min``/``max``).

The rules, as a Warp or NumPy user expects them:

* ``+ - * /`` are elementwise between two vectors of one type; a scalar operand is broadcast to
  every component.  A scalar must promote to the vector's element type (a literal always does,
  ``vec3f * i32`` computes in ``f32``; ``vec3f * f64`` is refused rather than silently rounded
  or silently widened); ``/`` on integer vectors is refused as it is for integers.
* Vectors of different types never mix: ``vec3f + vec3d`` and ``vec3f + vec3i`` are refused;
  ``vec3f(v)`` converts (component by component, as the scalar casts do).
* The packed pairs ``vec2h`` and ``vec2bf`` (CUDA's ``__half2``, ``__nv_bfloat162``) take
  ``+ - * /``, unary ``-``, ``fma(a, b, c)`` and ``min``/``max``; the sums of lanes (``dot``,
  ``length`` ...) are refused, since they would round in 16 bits: convert to ``vec2f`` first.
  A scalar operand must be of the element type (or a literal): ``vec2h * f32`` is refused.
* A vector operand that must be used several times is evaluated once (the broadcast scalar too):
  the emitters compute each operand into a value before taking its components.
"""

from __future__ import annotations

from .. import ir
from ..errors import SourceSpan
from ..frontend import syntax as S
from ..lang import registry as R
from ..lang.types import HALF_VECTORS
from . import promote as P
from .checker_base import CheckerBase
from .expressions import WeakConst

_OPERATORS = ("+", "-", "*", "/")
_FLOAT_ONLY = ("length", "normalize")  # a length of an integer vector is no integer


def _components(ty: ir.VectorType) -> str:
    return ", ".join(f".{c}" for c in ty.info.components)


class VectorChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: every construct on vector values."""

    def vector_binop(self, op: str, left: ir.Expr, right: ir.Expr, span: SourceSpan) -> ir.Expr:
        """``left op right`` where at least one side is a vector."""
        lt, rt = left.ty, right.ty
        lv = lt if isinstance(lt, ir.VectorType) and not isinstance(left, WeakConst) else None
        rv = rt if isinstance(rt, ir.VectorType) and not isinstance(right, WeakConst) else None
        ty = lv or rv
        assert ty is not None  # the caller found a vector operand
        if op not in _OPERATORS:
            raise self.error(f"operator {op} is not defined on vectors ({ty}); + - * / are, "
                             "component by component", span)
        if lv is not None and rv is not None and lv != rv:
            hint = f"convert one side, e.g. {lv}(b)" if lv.n == rv.n else None
            raise self.error(f"operator {op} needs two vectors of one type, not {lv} and {rv}",
                             span, hint)
        if op == "/" and ty.elem.info.is_int:
            raise self.error(f"`/` between integer vectors ({ty}) is not supported in kernels "
                             "(Python would give floats)", span,
                             f"convert to a float vector first, e.g. vec{ty.n}f(v)")
        lhs = left if lv is not None else self.broadcast_operand(left, ty, op, "left")
        rhs = right if rv is not None else self.broadcast_operand(right, ty, op, "right")
        return ir.VecBinOp(span, ty, op, lhs, rhs)

    def broadcast_operand(self, e: ir.Expr, ty: ir.VectorType, op: str, side: str) -> ir.Expr:
        """The scalar operand of a vector operator, as the vector's element type."""
        elem = ty.elem
        what = f"the {side} operand of {op} with a {ty}"
        if isinstance(e, WeakConst):
            return self.coerce(e, elem, what)
        st = self.scalar_of(e, what)
        try:
            common: ir.ScalarType | None = P.promote(st, elem)
        except P.PromotionError:
            common = None
        if st == ir.BOOL or common != elem:
            wider = ir.vector_of(common, ty.n) if common is not None else None
            raise self.error(
                f"{what} is {st}, which does not promote to {elem}: a vector keeps its element "
                "type", e.span, f"convert the scalar, e.g. {elem}(x)"
                + (f", or the vector, e.g. {wider}(v)" if wider is not None else ""))
        return self.coerce(e, elem, what, explicit=True)

    def vector_unary(self, op: str, operand: ir.Expr, span: SourceSpan) -> ir.Expr:
        ty = operand.ty
        assert isinstance(ty, ir.VectorType)
        if op == "+":
            return operand
        if op != "-":
            raise self.error(f"operator {op} is not defined on vectors ({ty}); unary - is",
                             span)
        return ir.VecUnary(span, ty, "-", operand)

    def vector_component(self, value: ir.Expr, attr: str, span: SourceSpan) -> ir.Expr:
        """``v.x`` (``attr``: the component's name)."""
        ty = value.ty
        assert isinstance(ty, ir.VectorType)
        index = R.VECTOR_COMPONENTS.get(attr)
        if index is None or index >= ty.n:
            raise self.error(f"a {ty} has no component .{attr}; it has {_components(ty)}", span)
        return ir.VecComponent(span, ty.elem, value, index)

    def vector_index(self, value: ir.Expr, index: S.Expr, span: SourceSpan) -> ir.Expr:
        """``v[k]`` with a constant ``k``: the component ``k``."""
        ty = value.ty
        assert isinstance(ty, ir.VectorType) and not isinstance(ty, ir.ComplexType)
        k = self.component_index(ty, index, span)
        return ir.VecComponent(span, ty.elem, value, k)

    def component_index(self, ty: ir.VectorType, index: S.Expr, span: SourceSpan) -> int:
        """The constant ``k`` of ``v[k]`` for a vector of type ``ty``, in range."""
        k = self.expr(index)
        if not (isinstance(k, ir.Const) and isinstance(k.value, int)
                and not isinstance(k.value, bool)):
            components = ", ".join(str(c) for c in range(ty.n))
            raise self.error(f"the index of a {ty} must be a constant integer (its components "
                             "are registers, not memory)", index.span,
                             f"loop over the components' indices as a tuple, which is unrolled "
                             f"(`for c in ({components}):`), or name them "
                             f"({_components(ty)})")
        if not 0 <= k.value < ty.n:
            raise self.error(f"index {k.value} is out of range for a {ty} (0..{ty.n - 1})",
                             span)
        return k.value

    def item_target(self, target: S.Subscript) -> tuple[ir.Var, int] | None:
        """The local vector and component that ``v[k] = ...`` assigns (None: not a vector)."""
        base = target.value
        if not isinstance(base, S.Name) or base.id not in self.vars:
            return None
        var = self.vars[base.id]
        if not isinstance(var.ty, ir.VectorType) or isinstance(var.ty, ir.ComplexType):
            return None
        if len(target.index) != 1:
            raise self.error(f"a {var.ty} takes one index", target.span)
        if base.id not in self.assigned:
            raise self.error(f"local variable '{base.id}' might be used before it is assigned",
                             base.span, "assign the whole vector first")
        return var, self.component_index(var.ty, target.index[0], target.span)

    def component_target(self, target: S.Attribute) -> tuple[ir.Var, int] | None:
        """The local vector and component that ``v.x = ...`` assigns (None: not a vector)."""
        base = target.value
        if not isinstance(base, S.Name) or base.id not in self.vars:
            return None
        var = self.vars[base.id]
        if isinstance(var.ty, ir.ComplexType):
            raise self.error(f"the parts of a complex number cannot be assigned ('{base.id}' is "
                             f"a {var.ty}; complex numbers are immutable, as in Python)",
                             target.span, f"make a new one: {base.id} = {var.ty}(re, im)")
        if not isinstance(var.ty, ir.VectorType):
            return None
        if base.id not in self.assigned:
            raise self.error(f"local variable '{base.id}' might be used before it is assigned",
                             base.span, "assign the whole vector first")
        index = R.VECTOR_COMPONENTS.get(target.attr)
        if index is None or index >= var.ty.n:
            raise self.error(f"a {var.ty} has no component .{target.attr}; it has "
                             f"{_components(var.ty)}", target.span)
        return var, index

    # ---- calls ----------------------------------------------------------------------------

    def call_vector_make(self, name: str, e: S.Call) -> ir.Expr:
        """``vec3f()``, ``vec3f(s)``, ``vec3f(v)``, ``vec3f(x, y, z)``."""
        ty = ir.vector(name)
        n = ty.n
        if e.keywords:
            raise self.error(f"{name}() takes positional arguments only", e.keywords[0].span)
        if len(e.args) not in (0, 1, n):
            raise self.error(f"{name}() takes 0, 1 or {n} arguments ({len(e.args)} given)",
                             e.span, f"{name}({', '.join(ty.info.components)}), {name}(s) "
                             f"for every component s, or {name}(v) to convert a vector")
        elem = ty.elem
        if not e.args:
            zero = 0.0 if elem.info.is_float else 0
            return ir.VecMake(e.span, ty, tuple(ir.Const(e.span, elem, zero) for _ in range(n)))
        values = [self.expr(a) for a in e.args]
        if len(values) == 1:
            value = values[0]
            vt = value.ty
            if isinstance(vt, ir.ComplexType):
                raise self.error(f"{name}() does not take a complex number ({vt})", value.span,
                                 f"{name}(z.real, z.imag)" if n == 2 else None)
            if isinstance(vt, ir.VectorType) and not isinstance(value, WeakConst):
                if vt.n != n:
                    raise self.error(f"{name}() converts a {n}-vector, not a {vt}", value.span)
                return value if vt == ty else ir.VecCall(e.span, ty, "convert", (value,))
            item = self.coerce(value, elem, f"{name}()'s argument")
            if isinstance(item, ir.Const):
                return ir.VecMake(e.span, ty, (item,) * n)
            return ir.VecCall(e.span, ty, "splat", (item,))
        items = tuple(self.coerce(v, elem, f"component {c} of {name}()")
                      for v, c in zip(values, ty.info.components))
        return ir.VecMake(e.span, ty, items)

    def call_vector(self, name: str, e: S.Call) -> ir.Expr:
        """``dot``, ``cross``, ``length``, ``length_sq``, ``normalize`` (see their entries)."""
        entry = R.GPU_NATIVE[name]
        got = self.args(e, entry.param_names, entry.required, f"{name}()")
        args = [self.vector_arg(got[p], f"{name}()'s {p}") for p in entry.param_names]
        ty = args[0].ty
        assert isinstance(ty, ir.VectorType)
        for a in args[1:]:
            if a.ty != ty:
                raise self.error(f"{name}() needs two vectors of one type, not {ty} and {a.ty}",
                                 e.span)
        packed = ty.info.name in HALF_VECTORS
        if name == "fma" and not packed:
            raise self.error(f"fma() takes packed 16-bit pairs (vec2h, vec2bf), not {ty}", e.span,
                             "use math.fma on the components")
        if name != "fma" and packed:
            raise self.error(f"{name}() does not take the packed {ty}: it computes + - * fma "
                             "lane by lane, and a sum of its lanes rounds in 16 bits", e.span,
                             "convert it to f32 first, e.g. vec2f(v)")
        if name == "cross" and ty.n != 3:
            raise self.error(f"cross() takes 3-vectors, not {ty}", e.span)
        if name in _FLOAT_ONLY and not ty.elem.info.is_float:
            raise self.error(f"{name}() takes a float vector, not {ty}", e.span,
                             f"convert it, e.g. vec{ty.n}f(v)")
        result: ir.Type = ty if entry.result == "vector" else ty.elem
        return ir.VecCall(e.span, result, name, tuple(args))

    def vector_arg(self, syntax: S.Expr, what: str) -> ir.Expr:
        value = self.materialize(self.expr(syntax))
        if not isinstance(value.ty, ir.VectorType) or isinstance(value.ty, ir.ComplexType):
            raise self.error(f"{what} must be a vector, not {value.ty}", value.span)
        return value

    def vector_minmax(self, name: str, values: list[ir.Expr], span: SourceSpan) -> ir.Expr:
        """``min(a, b, ...)`` / ``max`` of vectors of one type, component by component."""
        ty = None
        for v in values:
            vt = v.ty
            if isinstance(vt, ir.ComplexType) and not isinstance(v, WeakConst):
                raise self.error(f"complex numbers are not ordered: {name}() does not take a "
                                 f"{vt}", v.span, "compare abs(z), z.real or z.imag")
            if isinstance(v, WeakConst) or not isinstance(vt, ir.VectorType):
                raise self.error(f"{name}() of vectors takes vectors only, not {vt}", v.span,
                                 "broadcast a scalar explicitly, e.g. vec3f(s)")
            if ty is not None and vt != ty:
                raise self.error(f"{name}() needs vectors of one type, not {ty} and {vt}", span)
            ty = vt
        assert ty is not None
        result = values[0]
        for v in values[1:]:
            result = ir.VecCall(span, ty, name, (result, v))
        return result

    def call_load_vec(self, name: str, e: S.Call) -> ir.Expr:
        """``load_vec4(x, i, ..., j)``: four consecutive elements of the last axis as one
        vector load (see its entry); the bounds and alignment proofs are :mod:`.bounds`'."""
        entry = R.GPU_NATIVE[name]
        width = entry.value
        if e.keywords:
            raise self.error(f"{name}() takes the array and its indices, without keywords",
                             e.span)
        if not e.args:
            raise self.error(f"{name}() is missing argument 'x'", e.span)
        base = self.expr(e.args[0])
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"{name}()'s x must be an array, not {base.ty}", e.args[0].span)
        elem = base.ty.elem
        ty = ir.vector_of(elem, width) if isinstance(elem, ir.ScalarType) else None
        takes = (ir.F32, ir.I32) if width == 4 else (ir.F16, ir.BF16)
        if ty is None or elem not in takes:
            raise self.error(f"{name}() reads arrays of {' or '.join(map(str, takes))}, not of "
                             f"{elem}", e.span, "index an array of vectors directly: v[i]")
        if base.ty.space not in ("global", "shared"):
            raise self.error(f"{name}() reads global or shared arrays, not a {base.ty.space} "
                             "array", e.span, "index the per-thread array element by element")
        if base.ty.strided:
            # Its last axis may have any stride: the elements need not be consecutive.
            raise self.error(f"{name}() reads {width} consecutive elements, and the Strided "
                             f"array '{base.var.name}' need not hold them consecutively", e.span,
                             "index it element by element, or take a contiguous parameter")
        if base.ty.space == "global" and base.ty.mutable and self.unsafe_depth == 0:
            raise self.error(
                f"{name}() of the writable array '{base.var.name}' reads {width} elements, and "
                "the unique-write rules follow reads of one element: another thread may be "
                "writing one of them", e.span,
                "read it from a read-only parameter (CUDASlice), or use `with unsafe():`")
        indices = self.indices(base, tuple(e.args[1:]), e.span)
        checks, align = self.bounds.vector_checks(base, indices, width, e.span, f"{name}()")
        self.unique.note_load(base, indices, e.span, self.unsafe_depth > 0, width)
        self.traits.note_vector_load()
        return ir.Load(e.span, ty, base, indices, checks, width, align)
