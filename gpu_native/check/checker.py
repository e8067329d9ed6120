"""Checks one kernel or device function: syntax tree in, typed and safety-checked IR out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..errors import SourceSpan
from ..frontend import syntax as S
from ..nodes import Factory, node
from .expressions import ExpressionChecker, WeakConst, _const_value
from .safety import key, split_offset, stable_facts
from .scope import Resolver, registry_entry
from .statements import StatementChecker, count_assignments

if TYPE_CHECKING:
    from .program import Program

_TRAIT_DEFAULTS = {
    "uid_only": True, "uses_barriers": False, "uses_shared": False,
    "uses_dynamic_shared": False, "uses_warp": False, "uses_print": False,
}


@node(frozen=False)
class KernelContext:
    """What every function checked for one kernel specialisation shares."""

    program: Program
    ndim: int
    options: ir.KernelOptions
    sites: list[ir.Site] = Factory(list)
    devices: dict = Factory(dict)  # (path, name, binding) -> DeviceFunction
    device_checkers: dict = Factory(dict)
    stack: list = Factory(list)
    launch_checks: list = Factory(list)


@node(frozen=False)
class FunctionContext:
    """The per-function view the mixins use as ``self.ctx``."""

    kernel: KernelContext
    resolver: Resolver
    binding: dict[str, ir.ScalarType]

    @property
    def ndim(self) -> int:
        return self.kernel.ndim

    @property
    def program(self) -> Program:
        return self.kernel.program

    @property
    def options(self) -> ir.KernelOptions:
        return self.kernel.options


class FunctionChecker(StatementChecker, ExpressionChecker):
    """Type-checks one function body and applies the safety rules (see :mod:`.safety`)."""

    def __init__(self, ctx: FunctionContext, fn: S.FunctionDef):
        self.ctx = ctx
        self.fn = fn
        self.is_kernel = fn.kind == "kernel"
        self.vars: dict[str, ir.Var] = {}
        self.vars_params: dict[str, ir.Var] = {}
        self.params: list[ir.Var] = []
        self.locals: list[ir.Var] = []
        self.shared: list[ir.SharedDecl] = []
        self.local_arrays: list[ir.LocalArrayDecl] = []
        self.assign_counts: dict[str, int] = {}
        self.loop_assigned: set[str] = set()
        self.defs: dict[int, ir.Expr] = {}
        self.facts: frozenset = frozenset()
        # Facts from bounds checks of the statement being checked: they hold once the statement
        # has run (a failing check ends the thread), not inside it, where C++ may evaluate the
        # operands in any order.  `commit_checks` moves them into `facts` at sequence points.
        self.pending: set = set()
        self.assigned: set[str] = set()
        self.depth = 0
        self.loop_depth = 0
        self.unsafe_depth = 0
        self.loop_broke: list[bool] = []
        self.temp_counter = 0
        self.traits = dict(_TRAIT_DEFAULTS)
        self.unique_params: set[int] = set()
        self.unique_param_uses: dict[str, set[str]] = {}
        self.grid_stride_vars: set[int] = set()
        self.range_unique_vars: dict[int, frozenset] = {}
        self.plain_assigned: set[str] = set()
        self.store_keys: dict[int, tuple] = {}
        self.mutable_loads: list[tuple] = []
        self.tail: dict[int, tuple[ir.ArrayRef, tuple[int, ...]]] = {}
        self.tail_blocked = False
        self.callees: list[ir.DeviceFunction] = []
        self.ret_type: ir.Type = ir.VOID
        self.pending_locals: set[str] = set()
        # Integer BinOps the proofs showed never wrap (by id; the values keep them alive), and
        # the BinOps inside the values of single-assignment locals (see `prove_no_wrap`).
        self.no_wrap_ops: dict[int, ir.BinOp] = {}
        self.def_nodes: set[int] = set()

    # ---- declarations ---------------------------------------------------------------------

    def annotation(self, e: S.Expr, allow_unique: bool = False, allow_array: bool = False):
        """Evaluate a type annotation: a ScalarType, an ArrayType, or "unique" (UniqueId)."""
        if isinstance(e, S.Subscript):
            sym = self.ctx.resolver.dotted(e.value)
            array = registry_entry(sym)
            if array is None or array.form != "array type":
                raise self.error("unsupported annotation; use CUDASlice[T], CUDASliceMut[T], "
                                 "their 2D/3D forms, or a scalar type", e.span)
            if not allow_array:
                raise self.error(f"{array.name}[...] is only valid as a parameter annotation",
                                 e.span)
            if len(e.index) != 1:
                raise self.error(f"{array.name}[T] takes one element type", e.span)
            elem = self.annotation(e.index[0])
            if not isinstance(elem, ir.ScalarType):
                raise self.error("the element type must be a scalar type such as f32",
                                 e.index[0].span)
            ndim, mutable = array.value
            return ir.ArrayType(elem, ndim, mutable)
        sym = self.ctx.resolver.dotted(e) if isinstance(e, (S.Name, S.Attribute)) else None
        if sym is None:
            raise self.error("unsupported annotation", e.span)
        entry = registry_entry(sym)
        if sym.kind == "gn" and entry is not None:
            if entry.form == "type":
                return ir.scalar(sym.name)
            if entry.form == "index type":
                if not allow_unique:
                    raise self.error("UniqueId is not a valid annotation here", e.span,
                                     "kernel parameters are arrays or scalars")
                return "unique"
            if entry.form == "array type":
                raise self.error(f"{sym.name} needs an element type: {sym.name}[f32]", e.span)
        if sym.kind == "builtin" and entry is not None and entry.value is not None:
            return ir.scalar(entry.value)  # int, float and bool as annotations
        if sym.kind == "typevar":
            bound = self.ctx.binding.get(sym.name)
            if bound is None:
                raise self.error(f"the TypeVar '{sym.name}' is not bound here", e.span)
            return bound
        if sym.kind == "undefined":
            raise self.error(f"name '{sym.name}' is not defined", e.span)
        raise self.error(f"'{sym.name}' is not a kernel type", e.span,
                         "use f32, i32, ..., CUDASlice[T], CUDASliceMut[T] or UniqueId")

    def new_var(self, name: str, ty: ir.Type, span: SourceSpan, register: bool = True,
                is_param: bool = False) -> ir.Var:
        var = ir.Var(name, ty, span, is_param)
        if is_param:
            self.vars_params[name] = var
        self.vars[name] = var
        if register and not is_param:
            self.locals.append(var)
        return var

    def new_site(self, kind: str, span: SourceSpan, array: str = "", axis: int = 0,
                 ndim: int = 1, message: str = "") -> int:
        sites = self.ctx.kernel.sites
        site = ir.Site(len(sites), kind, span, array, axis, ndim, message)
        sites.append(site)
        return site.id

    def key(self, e: ir.Expr):
        """The fact-matching key of ``e``, looking through locals assigned once."""
        return key(e, self.single_def)

    def single_def(self, var: ir.Var) -> ir.Expr | None:
        if var.is_param or self.assign_counts.get(var.name, 0) != 1:
            return None
        return self.defs.get(id(var))

    # ---- proofs ---------------------------------------------------------------------------

    def bounds_checks(self, base: ir.ArrayRef, indices, span: SourceSpan):
        checks = []
        for axis, idx in enumerate(indices):
            if self.index_proven(base, axis, idx):
                checks.append(None)
                continue
            checks.append(self.new_site("index", span, base.var.name, axis, base.ty.ndim))
            k = self.key(idx)
            self.pending.add(("ge0", k))
            self.pending.add(("lt", k, self.bound_key(base, axis, idx)))
        return tuple(checks)

    def commit_checks(self) -> None:
        """Make the facts of the checks run so far hold for what follows (a sequence point)."""
        if self.pending:
            self.facts = self.facts | stable_facts(self.pending)
            self.pending = set()

    def bound_key(self, base: ir.ArrayRef, axis: int, idx: ir.Expr):
        shape = base.ty.shape
        if shape is not None and shape[0] >= 0:
            return ("c", shape[axis])
        return self.key(ir.Shape(idx.span, ir.I64, base, axis))

    def index_proven(self, base: ir.ArrayRef, axis: int, idx: ir.Expr) -> bool:
        shape = base.ty.shape
        static = shape is not None and shape[0] >= 0
        c = _const_value(idx)
        if static:
            n = shape[axis]
            if isinstance(c, int):
                if 0 <= c < n:
                    return True
                raise self.error(f"index {c} is out of bounds for axis {axis} of "
                                 f"'{base.var.name}' with size {n}", idx.span)
        elif isinstance(c, int) and c < 0:
            raise self.error(f"negative index {c}: kernels do not wrap negative indices",
                             idx.span, "index from the start, e.g. a[len(a) - 1]")
        bound_key = self.bound_key(base, axis, idx)
        if not self.ctx.options.bounds_check:
            return True
        if not self.is_nonneg(idx):
            return False
        if static and _fits_unsigned(idx, bound_key[1]):
            return True
        return self.below(idx, bound_key, static)

    def below(self, idx: ir.Expr, bound_key, static: bool) -> bool:
        k = self.key(idx)
        for f in self.facts:
            if f[0] == "lt" and f[1] == k:
                if f[2] == bound_key:
                    return True
                if static and f[2][0] == "c" and isinstance(f[2][1], int) and \
                        f[2][1] <= bound_key[1]:
                    return True
        e = idx
        while isinstance(e, ir.Cast):
            e = e.value
        if isinstance(e, ir.BinOp) and e.op == "%" and self.key(e.right) == bound_key:
            return True
        if isinstance(e, ir.BinOp) and e.op == "%" and static and isinstance(
                _const_value(e.right), int) and 0 < _const_value(e.right) <= bound_key[1]:
            return True
        if isinstance(e, ir.BinOp) and e.op == "&" and static:
            for side in (e.left, e.right):
                cv = _const_value(side)
                if isinstance(cv, int) and 0 <= cv < bound_key[1]:
                    return True
        split = split_offset(e)
        if split is not None:
            base, c = split
            if c < 0:
                # a - m with a >= m cannot wrap, and stays below whatever bounds a.
                return self.at_least(base, -c) and self.below(base, bound_key, static)
            if static:
                return c < bound_key[1] and self.below(base, ("c", bound_key[1] - c), static)
            if isinstance(e.ty, ir.ScalarType) and e.ty.info.bits == 64:
                # a + c < n from a < n - c, or (c == 1) from a < n and a != n - 1.  64-bit
                # only: a narrower sum could wrap before it reaches a 64-bit extent.
                less = ("op", "-", bound_key, ("c", c))
                k = self.key(base)
                if ("lt", k, less) in self.facts:
                    return True
                if c == 1 and ("ne", k, less) in self.facts and self.below(
                        base, bound_key, static):
                    return True
        if isinstance(e, ir.Local):
            d = self.single_def(e.var)
            if d is not None:
                return self.below(d, bound_key, static)
        return False

    def no_wrap(self, e: ir.BinOp) -> bool:
        """Does ``e`` (a ``+`` or ``*`` of nonnegative integers) stay within its type?

        When only the hardware's largest grid could make it wrap, and it is built from launch
        indices alone (``block_idx.x * 32 + thread_idx.x`` in i32), the answer is yes *for the
        launches the launcher lets through*: the expression is recorded as a launch check, and a
        launch whose grid would make it wrap is refused before it runs."""
        if not self.fits(e):
            return False
        self.prove_no_wrap(e, self.fits)
        return True

    def fits(self, e: ir.BinOp) -> bool:
        if not isinstance(e.ty, ir.ScalarType):
            return False
        bound = self.upper(e)
        if bound is not None and bound <= e.ty.info.max:
            return True
        tree = self.launch_tree(e, ("thread_idx", "block_idx", "block_dim", "grid_dim"),
                                arithmetic=("+", "*"))
        if tree is None:
            return False
        span = e.span
        self.add_launch_check(("fits", tree, e.ty.info.max, str(e.ty), span.line, span.col,
                               span.end_col))
        return True

    def prove_no_wrap(self, e: ir.BinOp, proof) -> None:
        """Mark ``e`` to be emitted as plain signed arithmetic, ``proof(e)`` having just held.

        A proof holds where it is made: the facts are those of the current statement.  ``e`` is
        evaluated there, unless it was reached through the value of a single-assignment local
        (``j = i + 1`` earlier, ``a[j]`` here under ``if i < n - 1``): that value was computed
        on every path, so it is marked only if the proof also holds with no facts at all."""
        if id(e) in self.no_wrap_ops:
            return
        if id(e) in self.def_nodes:
            saved = self.facts
            self.facts = frozenset()
            try:
                if not proof(e):
                    return
            finally:
                self.facts = saved
        self.no_wrap_ops[id(e)] = e

    def add_launch_check(self, check: tuple) -> None:
        checks = self.ctx.kernel.launch_checks
        if check not in checks:
            checks.append(check)

    def launch_tree(self, e: ir.Expr, specials: tuple[str, ...],
                    arithmetic: tuple[str, ...]) -> tuple | None:
        """``e`` as a plain tuple the launcher can evaluate from the grid and block alone, or
        ``None`` when it depends on anything else."""
        if isinstance(e, ir.Const) and isinstance(e.value, (bool, int)):
            return ("c", int(e.value))
        if isinstance(e, ir.Special) and e.name in specials:
            return ("sp", e.name, e.axis)
        if isinstance(e, ir.Cast) and self.is_widening(e):
            return self.launch_tree(e.value, specials, arithmetic)
        if isinstance(e, ir.Local):
            d = self.single_def(e.var)
            return self.launch_tree(d, specials, arithmetic) if d is not None else None
        if isinstance(e, (ir.BinOp, ir.Compare)) and e.op in arithmetic:
            left = self.launch_tree(e.left, specials, arithmetic)
            right = self.launch_tree(e.right, specials, arithmetic)
            if left is None or right is None:
                return None
            # Arithmetic carries its type, so the launcher wraps as the device would.
            return (e.op, left, right, str(e.ty)) if isinstance(e, ir.BinOp) else (
                e.op, left, right)
        if isinstance(e, ir.BoolOp) and e.op in arithmetic:
            parts = tuple(self.launch_tree(v, specials, arithmetic) for v in e.values)
            return None if any(p is None for p in parts) else (e.op, parts)
        if isinstance(e, ir.UnaryOp) and e.op == "not" and "not" in arithmetic:
            inner = self.launch_tree(e.operand, specials, arithmetic)
            return None if inner is None else ("not", inner)
        return None

    def upper(self, e: ir.Expr, depth: int = 0) -> int | None:
        """An upper bound of the nonnegative integer ``e`` as a mathematical integer (before any
        wrap), from what the hardware and the facts limit it to; ``None`` when unknown."""
        if depth > 32:
            return None
        ty = e.ty
        type_max = ty.info.max if isinstance(ty, ir.ScalarType) and ty.info.is_int else None
        if isinstance(e, ir.Const):
            return e.value if isinstance(e.value, int) else None
        if isinstance(e, ir.Special):
            return _SPECIAL_MAX[e.name][e.axis]
        if isinstance(e, ir.LaneId):
            return 31
        if isinstance(e, ir.UidComponent):
            if e.scope == "block":
                return _SPECIAL_MAX["thread_idx"][e.axis]
            return (_SPECIAL_MAX["grid_dim"][e.axis] * _SPECIAL_MAX["block_dim"][e.axis]) - 1
        if isinstance(e, ir.Shape):
            return _MAX_EXTENT
        best = None
        k = self.key(e)
        for f in self.facts:
            if f[0] != "lt" or f[1] != k:
                continue
            if f[2][0] == "c" and isinstance(f[2][1], int):
                bound = f[2][1] - 1
            elif f[2][0] == "shape":
                bound = _MAX_EXTENT - 1
            else:
                continue
            best = bound if best is None else min(best, bound)
        computed = None
        if isinstance(e, ir.Local):
            d = self.single_def(e.var)
            computed = self.upper(d, depth + 1) if d is not None else type_max
        elif isinstance(e, ir.Cast):
            computed = self.upper(e.value, depth + 1) if self.is_widening(e) else type_max
        elif isinstance(e, ir.BinOp):
            left = self.upper(e.left, depth + 1)
            right = self.upper(e.right, depth + 1)
            rc = _const_value(e.right)
            if e.op == "+" and left is not None and right is not None:
                computed = left + right
            elif e.op == "*" and left is not None and right is not None:
                computed = left * right
            elif e.op in ("//", ">>") and left is not None:
                computed = left
            elif e.op == "%" and isinstance(rc, int) and rc > 0:
                computed = rc - 1
            elif e.op == "&":
                known = [b for b in (left, right) if b is not None]
                computed = min(known) if known else type_max
            else:
                computed = type_max
        elif isinstance(e, ir.MathCall) and e.name in ("min", "max"):
            bounds = [self.upper(a, depth + 1) for a in e.args]
            known = [b for b in bounds if b is not None]
            if e.name == "min":
                computed = min(known) if known else type_max
            else:
                computed = max(bounds) if known and len(known) == len(bounds) else type_max
        else:
            computed = type_max
        if best is None:
            return computed
        return best if computed is None else min(best, computed)

    def at_least(self, e: ir.Expr, m: int) -> bool:
        """Is the integer ``e >= m`` proven (``m >= 1``)?"""
        c = _const_value(e)
        if isinstance(c, int):
            return c >= m
        k = self.key(e)
        for f in self.facts:
            # ("lt", k0, e): e > k0, so e >= k0 + 1.
            if f[0] == "lt" and f[2] == k and f[1][0] == "c" and isinstance(f[1][1], int) \
                    and f[1][1] >= m - 1:
                return True
        if m == 1 and ("ne", k, ("c", 0)) in self.facts and self.is_nonneg(e):
            return True
        inner = e
        while isinstance(inner, ir.Cast) and self.is_widening(inner):
            inner = inner.value
        if isinstance(inner, ir.Local):
            d = self.single_def(inner.var)
            if d is not None:
                return self.at_least(d, m)
        return False

    @staticmethod
    def is_widening(e: ir.Cast) -> bool:
        src, dst = e.value.ty, e.ty
        return (isinstance(src, ir.ScalarType) and isinstance(dst, ir.ScalarType)
                and src.info.is_int and dst.info.is_int and dst.info.bits >= src.info.bits
                and (src.info.kind == dst.info.kind or dst.info.bits > src.info.bits))

    def is_nonneg(self, e: ir.Expr) -> bool:
        ty = e.ty
        if isinstance(ty, ir.ScalarType) and ty.info.kind in ("uint", "bool"):
            return True
        if isinstance(e, ir.Const):
            return e.value >= 0
        if isinstance(e, (ir.UidComponent, ir.Special, ir.LaneId, ir.Shape)):
            return True
        if ("ge0", self.key(e)) in self.facts:
            return True
        if isinstance(e, ir.Local):
            if id(e.var) in self.grid_stride_vars:
                return True
            d = self.single_def(e.var)
            return d is not None and self.is_nonneg(d)
        if isinstance(e, ir.Cast):
            src = e.value.ty
            if isinstance(src, ir.ScalarType) and src.info.is_int and e.ty.info.is_int:
                if src.info.kind == "uint":
                    return e.ty.info.bits > src.info.bits  # u32 -> i32 can turn negative
                if e.ty.info.bits >= src.info.bits:
                    return self.is_nonneg(e.value)
            return False
        if isinstance(e, ir.BinOp):
            split = split_offset(e)
            if split is not None and split[1] < 0:
                if self.at_least(split[0], -split[1]):
                    # a - c with a >= c: no wrap
                    self.prove_no_wrap(e, lambda e: self.at_least(split[0], -split[1]))
                    return True
                return False
            if e.op in ("+", "*"):
                # Signed arithmetic wraps: the sum or product of nonnegative values is only
                # nonnegative when it provably stays below the type's maximum.
                return (self.is_nonneg(e.left) and self.is_nonneg(e.right)
                        and self.no_wrap(e))
            if e.op in ("//", ">>"):
                return self.is_nonneg(e.left) and self.is_nonneg(e.right)
            if e.op == "%":
                return self.is_nonneg(e.right)
            if e.op == "&":
                return self.is_nonneg(e.left) or self.is_nonneg(e.right)
        if isinstance(e, ir.MathCall):
            if e.name == "min":
                return all(self.is_nonneg(a) for a in e.args)
            if e.name == "max":
                return any(self.is_nonneg(a) for a in e.args)
        return False

    def is_uniform(self, e: ir.Expr) -> bool:
        """Is ``e`` the same for every thread of the launch, for the whole kernel?"""
        if isinstance(e, ir.Const):
            return True
        if isinstance(e, ir.Local):
            var = e.var
            if var.is_param:
                return self.assign_counts.get(var.name, 0) == 0 and id(var) not in \
                    self.unique_params
            d = self.single_def(var)
            return d is not None and self.is_uniform(d)
        if isinstance(e, ir.Shape):
            return e.array.ty.space == "global" or e.array.ty.shape is not None
        if isinstance(e, ir.Special):
            return e.name in ("block_dim", "grid_dim")
        if isinstance(e, ir.Load):
            return (e.array.ty.space == "global" and not e.array.ty.mutable
                    and all(self.is_uniform(i) for i in e.indices))
        if isinstance(e, (ir.BinOp, ir.UnaryOp, ir.Cast, ir.Compare, ir.Select, ir.MathCall,
                          ir.BoolOp)):
            for value in vars(e).values():
                if isinstance(value, ir.Expr) and not self.is_uniform(value):
                    return False
                if isinstance(value, tuple) and not all(
                        self.is_uniform(v) for v in value if isinstance(v, ir.Expr)):
                    return False
            return True
        return False

    # ---- notes collected while checking -----------------------------------------------------

    def note_special(self, name: str, axis: int, span: SourceSpan) -> None:
        self.traits["uid_only"] = False
        if name in ("warp", "lane_id"):
            self.traits["uses_warp"] = True

    def note_uid(self, scope: str, span: SourceSpan) -> None:
        if scope == "block":
            self.traits["uid_only"] = False

    def bare_uid_axis(self, e: ir.Expr) -> int | None:
        while isinstance(e, ir.Cast) and e.ty.info.is_int:
            e = e.value
        if isinstance(e, ir.UidComponent) and e.scope == "grid":
            return e.axis
        if isinstance(e, ir.Local):
            d = self.single_def(e.var)
            if d is not None:
                return self.bare_uid_axis(d)
        return None

    def note_tail(self, base: ir.ArrayRef, indices) -> None:
        if not self.is_kernel or base.ty.space != "global":
            return
        axes = tuple(self.bare_uid_axis(i) for i in indices)
        used = [a for a in axes if a is not None]
        if used and len(set(used)) == len(used):
            self.tail.setdefault(id(base.var), (base, axes))  # type: ignore[arg-type]

    def note_load(self, base: ir.ArrayRef, indices, span: SourceSpan) -> None:
        if base.ty.space == "global" and base.ty.mutable:
            self.mutable_loads.append((base.var, tuple(self.key(i) for i in indices), span,
                                       self.unsafe_depth > 0))
        self.note_tail(base, indices)

    def note_store(self, base: ir.ArrayRef, indices, span: SourceSpan, unique: str,
                   owners: tuple[int, ...] = ()) -> None:
        if unique == "uid" and base.ty.space != "local":
            # Only the owner positions must agree: a thread may write any element of its own
            # rows (acc[i, 0], acc[i, 1], ...), never through a different row index.
            k = (owners, tuple(self.key(indices[p]) for p in owners))
            prev = self.store_keys.get(id(base.var))
            if prev is None:
                self.store_keys[id(base.var)] = (k, span)
            elif prev[0] != k:
                raise self.error(
                    f"'{base.var.name}' is written through two different indices (here and at "
                    f"{prev[1]}); one thread's second index can be another thread's first, so "
                    "the writes could race", span,
                    "write each element through one unique index, or use `with unsafe():`")
        self.note_tail(base, indices)

    def merge_callee(self, callee: FunctionChecker, function: ir.DeviceFunction) -> None:
        for name in ("uses_barriers", "uses_warp", "uses_print", "uses_shared"):
            self.traits[name] = self.traits[name] or callee.traits[name]
        self.traits["uid_only"] = self.traits["uid_only"] and callee.traits["uid_only"]
        if function not in self.callees:
            self.callees.append(function)

    # ---- whole function -------------------------------------------------------------------

    def check_params(self) -> None:
        for p in self.fn.params:
            if p.annotation is None:
                example = "CUDASlice[f32]" if self.is_kernel else "f32"
                raise self.error(f"parameter '{p.name}' needs a type annotation, e.g. "
                                 f"`{p.name}: {example}`", p.span)
            ty = self.annotation(p.annotation, allow_unique=not self.is_kernel, allow_array=True)
            unique = ty == "unique"
            if unique:
                ty = ir.I64
            var = self.new_var(p.name, ty, p.span, is_param=True)
            self.params.append(var)
            self.assigned.add(p.name)
            if unique:
                self.unique_params.add(id(var))
        if self.fn.returns is not None:
            if self.is_kernel:
                ret = self.fn.returns
                if not (isinstance(ret, S.Num) or (isinstance(ret, S.Name) and ret.id == "None")):
                    raise self.error("kernels return nothing; drop the return annotation",
                                     ret.span)
            else:
                ret = self.annotation(self.fn.returns)
                if not isinstance(ret, ir.ScalarType):
                    raise self.error("device functions return a scalar value", self.fn.returns.span)
                self.ret_type = ret

    def check_body(self) -> tuple[ir.Stmt, ...]:
        count_assignments(self.fn.body, self.assign_counts, self.loop_assigned,
                          plain=self.plain_assigned)
        for name in self.vars_params:
            if self.assign_counts.get(name) and isinstance(self.vars_params[name].ty,
                                                           ir.ArrayType):
                raise self.error(f"the array parameter '{name}' cannot be reassigned",
                                 self.vars_params[name].span)
        self.pending_locals = set(self.assign_counts) - set(self.vars_params)
        body, exits = self.block(self.fn.body)
        if not self.is_kernel and self.ret_type != ir.VOID and not exits:
            raise self.error(f"{self.fn.name} can reach its end without returning a "
                             f"{self.ret_type}", self.fn.span, "add a return at the end")
        for var, k, span, unsafe in self.mutable_loads:
            prev = self.store_keys.get(id(var))
            if prev is None or unsafe:
                continue
            owners, owned = prev[0]
            if tuple(k[p] for p in owners) != owned:
                raise self.error(
                    f"'{var.name}' is read here at another index than it is written at "
                    f"({prev[1]}): another thread may be writing that element", span,
                    "read from a separate input array, or use `with unsafe():`")
        if self.no_wrap_ops:
            body = ir.mark_no_wrap(body, self.no_wrap_ops)
        return body

    def kernel_tail(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        t = self.traits
        if not self.tail or t["uses_barriers"] or t["uses_warp"] or t["uses_shared"]:
            return body
        extents = tuple(self.tail.values())
        return (ir.TailExit(self.fn.span, extents), *body)


# What the hardware allows: blockDim (1024, 1024, 64), gridDim (2**31 - 1, 65535, 65535).
_SPECIAL_MAX = {
    "thread_idx": (1023, 1023, 63),
    "block_dim": (1024, 1024, 64),
    "block_idx": ((1 << 31) - 2, 65534, 65534),
    "grid_dim": ((1 << 31) - 1, 65535, 65535),
}
# No array extent reaches 2**48: that is the GPU's whole virtual address space in bytes.
_MAX_EXTENT = 1 << 48


def _fits_unsigned(e: ir.Expr, n: int) -> bool:
    """A value of a narrow unsigned type (a u8 pixel, say) is below 2**bits."""
    while isinstance(e, ir.Cast) and isinstance(e.value.ty, ir.ScalarType) and \
            e.value.ty.info.is_int and e.ty.info.bits >= e.value.ty.info.bits:
        e = e.value
    ty = e.ty
    return isinstance(ty, ir.ScalarType) and ty.info.kind == "uint" and (1 << ty.info.bits) <= n


def uses_half(node) -> bool:
    """Does a kernel or device function touch f16/bf16 anywhere (it then needs the CUDA headers)?"""
    seen: set[int] = set()

    def walk(x) -> bool:
        if id(x) in seen:
            return False
        seen.add(id(x))
        if isinstance(x, ir.ScalarType):
            return x.info.name in ("f16", "bf16")
        if isinstance(x, (ir.ArrayType,)):
            return walk(x.elem)
        if isinstance(x, (tuple, list)):
            return any(walk(i) for i in x)
        if isinstance(x, (ir.Expr, ir.Stmt, ir.Var, ir.SharedDecl, ir.LocalArrayDecl)):
            return any(walk(v) for v in vars(x).values())
        if isinstance(x, (ir.DeviceFunction, ir.Kernel)):
            return any(walk(v) for v in (x.params, x.locals, x.body, getattr(x, "shared", ()),
                                         x.local_arrays, getattr(x, "ret", ir.VOID)))
        return False

    return walk(node)


__all__ = ["FunctionChecker", "FunctionContext", "KernelContext", "WeakConst", "uses_half"]
