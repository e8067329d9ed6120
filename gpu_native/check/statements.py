"""Type and safety checking of kernel statements (one ``visit_X`` per statement kind)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..frontend import syntax as S
from ..lang import registry as R
from . import promote as P
from .expressions import LAYOUTS, UidValue, WeakConst
from .safety import cond_facts, kill, pinned, required_coords, stable_facts
from .scope import registry_entry as _registered

if TYPE_CHECKING:
    from .checker import FunctionChecker

_UNIQUE_HINT = (
    "index with a unique id (idx = FlatLayout1D.uid(); c[idx] = ...), use c.atomic_ref(i) for "
    "read-modify-write, or wrap the store in `with unsafe():` if you know it is race-free"
)


# The layout methods a `for` loop iterates (FlatLayout1D.grid_stride).
_LOOP_METHODS = frozenset(e.name for e in R.LAYOUT_METHODS.values() if e.form == "loop")
_LAUNCH_OPS = ("+", "-", "*", "//", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or", "not")


class StatementChecker:
    """Mixin of :class:`~.checker.FunctionChecker`: the statement half."""

    def block(self: FunctionChecker, stmts: tuple[S.Stmt, ...]) -> tuple[tuple[ir.Stmt, ...], bool]:
        """Check a block; return its IR and whether control never falls off its end."""
        out: list[ir.Stmt] = []
        exits = False
        for s in stmts:
            if exits:
                # Unreachable code is still checked (its errors are real), but not emitted.
                saved = (self.facts, set(self.assigned))
                self.statement(s)
                self.facts, self.assigned, self.pending = saved[0], saved[1], set()
                continue
            result, exits = self.statement(s)
            self.commit_checks()
            out.extend(result)
        return tuple(out), exits

    def statement(self: FunctionChecker, s: S.Stmt) -> tuple[list[ir.Stmt], bool]:
        handler = _STMT_HANDLERS[type(s)]
        return handler(self, s)

    # ---- simple statements --------------------------------------------------------------------

    def visit_Pass(self: FunctionChecker, s: S.Pass):
        return [], False

    def visit_Break(self: FunctionChecker, s: S.Break):
        if self.loop_depth == 0:
            raise self.error("`break` outside a loop", s.span)
        self.loop_broke[-1] = True
        return [ir.Break(s.span)], True

    def visit_Continue(self: FunctionChecker, s: S.Continue):
        if self.loop_depth == 0:
            raise self.error("`continue` outside a loop", s.span)
        return [ir.Continue(s.span)], True

    def visit_Return(self: FunctionChecker, s: S.Return):
        if self.is_kernel:
            if s.value is not None:
                raise self.error("kernels cannot return a value; write results into a "
                                 "CUDASliceMut parameter", s.value.span)
            return [ir.Return(s.span, None)], True
        if s.value is None:
            if self.ret_type != ir.VOID:
                raise self.error(f"{self.fn.name} must return a {self.ret_type} value", s.span)
            return [ir.Return(s.span, None)], True
        if self.ret_type == ir.VOID:
            raise self.error(f"{self.fn.name} has no return annotation, so it cannot return a "
                             "value", s.value.span, "annotate it, e.g. `-> f32`")
        value = self.coerce(self.expr(s.value), self.ret_type, "the returned value")
        return [ir.Return(s.span, value)], True

    def visit_Assert(self: FunctionChecker, s: S.Assert):
        cond = self.to_bool(self.expr(s.test, condition=True), "an assert condition")
        message = ""
        if s.msg is not None:
            if not isinstance(s.msg, S.Str):
                raise self.error("an assert message in a kernel must be a string literal",
                                 s.msg.span)
            message = s.msg.value
        site = self.new_site("assert", s.span, message=message)
        self.facts = self.facts | self.facts_from(cond, True)
        # `assert block_dim.x == TILE` is the same for every thread of a launch: the launcher
        # checks it once per launch shape, and the kernel does not spend instructions on it.
        tree = None
        if self.is_kernel and self.depth == 0:
            tree = self.launch_tree(cond, ("block_dim", "grid_dim"), _LAUNCH_OPS)
        if tree is not None:
            self.add_launch_check(("assert", site, tree))
        return [ir.Assert(s.span, cond, site, at_launch=tree is not None)], False

    def visit_ExprStmt(self: FunctionChecker, s: S.ExprStmt):
        value = s.value
        if isinstance(value, S.Str):
            return [], False  # a string statement is a comment
        if isinstance(value, S.Call):
            sym = None
            if isinstance(value.func, (S.Name, S.Attribute)) and not self.is_local_root(value.func):
                sym = self.ctx.resolver.dotted(value.func)
            entry = _registered(sym)
            if entry is not None and entry.form == "statement":
                return [getattr(self, entry.check)(entry.name, value)], False
        expr = self.expr(value)
        if isinstance(expr, WeakConst):
            return [], False
        expr = self.materialize(expr)
        return [ir.ExprStmt(s.span, expr)], False

    def barrier(self: FunctionChecker, name: str, call: S.Call) -> ir.Stmt:
        entry = R.GPU_NATIVE[name]
        if entry.value == "block":
            if call.args or call.keywords:
                raise self.error(f"{name}() takes no arguments", call.span)
            self.traits["uses_barriers"] = True
            self.traits["uid_only"] = False
            return ir.Barrier(call.span, "block")
        got = self.args(call, entry.param_names, entry.required, f"{name}()")
        self.traits["uses_warp"] = True
        self.traits["uid_only"] = False
        return ir.Barrier(call.span, "warp", self.mask_arg(got, call.span))

    def print_stmt(self: FunctionChecker, name: str, call: S.Call) -> ir.Stmt:
        if call.keywords:
            raise self.error("print() in kernels takes no keyword arguments", call.span)
        items: list[str | ir.Expr] = []
        for a in call.args:
            if isinstance(a, S.Str):
                items.append(a.value)
                continue
            value = self.materialize(self.expr(a))
            self.scalar_of(value, "a print() argument")
            items.append(value)
        self.traits["uses_print"] = True
        return ir.Print(call.span, tuple(items))

    # ---- assignment ---------------------------------------------------------------------------

    def visit_Assign(self: FunctionChecker, s: S.Assign):
        if len(s.targets) == 1:
            return self.assign_target(s.targets[0], s.value, s.span, None), False
        if not all(isinstance(t, S.Name) for t in s.targets):
            raise self.error("chained assignment is only supported to plain names", s.span)
        first = s.targets[-1]
        out = self.assign_target(first, s.value, s.span, None)
        for t in s.targets[:-1]:
            out += self.assign_target(t, first, s.span, None)
        return out, False

    def visit_AnnAssign(self: FunctionChecker, s: S.AnnAssign):
        if not isinstance(s.target, S.Name):
            raise self.error("only names can be annotated", s.target.span)
        if s.value is None:
            raise self.error(f"declare '{s.target.id}' with a value, e.g. "
                             f"`{s.target.id}: f32 = 0.0`", s.span)
        ann = self.annotation(s.annotation, allow_unique=True)
        return self.assign_target(s.target, s.value, s.span, ann), False

    def visit_AugAssign(self: FunctionChecker, s: S.AugAssign):
        target = s.target
        if isinstance(target, S.Name):
            value = S.BinOp(s.span, s.op, target, s.value)
            return self.assign_target(target, value, s.span, None), False
        if isinstance(target, S.Subscript):
            value = S.BinOp(s.span, s.op, target, s.value)
            return self.assign_target(target, value, s.span, None, augmented=True), False
        raise self.error("augmented assignment needs a name or an array element", target.span)

    def assign_target(self: FunctionChecker, target: S.Expr, value_syntax: S.Expr, span,
                      annotation, augmented: bool = False) -> list[ir.Stmt]:
        if isinstance(target, S.Name):
            return self.assign_name(target, value_syntax, span, annotation)
        if isinstance(target, S.Subscript):
            return [self.store(target, value_syntax, span, augmented)]
        if isinstance(target, S.Tuple):
            return self.unpack(target, value_syntax, span)
        if isinstance(target, S.Attribute):
            raise self.error("attributes cannot be assigned in kernels", target.span)
        raise self.error("cannot assign to this expression", target.span)

    def array_declaration(self: FunctionChecker, value: S.Expr):
        if not isinstance(value, S.Call) or not isinstance(value.func, (S.Name, S.Attribute)):
            return None
        if self.is_local_root(value.func):
            return None
        sym = self.ctx.resolver.dotted(value.func)
        entry = _registered(sym)
        if entry is not None and entry.form == "allocation":
            return entry.name
        return None

    def assign_name(self: FunctionChecker, target: S.Name, value_syntax: S.Expr, span,
                    annotation) -> list[ir.Stmt]:
        name = target.id
        decl = self.array_declaration(value_syntax)
        if decl is not None:
            self.declare_array(name, decl, value_syntax, span)  # type: ignore[arg-type]
            return []
        value = self.expr(value_syntax)
        if isinstance(value, ir.ArrayRef):
            raise self.error("arrays cannot be assigned to local variables; use the array "
                             "directly", value.span)
        var = self.vars.get(name)
        if isinstance(value, UidValue):
            if var is not None or self.assign_counts.get(name, 0) != 1:
                raise self.error(f"'{name}' holds a unique id and must be assigned exactly once",
                                 target.span)
            if annotation not in (None, "unique"):
                raise self.error(f"'{name}' is annotated {annotation} but holds a unique id",
                                 target.span)
            var = self.new_var(name, ir.UidType(value.ndim, value.scope), target.span,
                               register=False)  # components are recomputed where used
            self.assigned.add(name)
            return []
        if annotation == "unique":
            if self.classify_unique(self.materialize(value)) is None:
                raise self.error(f"'{name}' is annotated UniqueId but its value is not a unique "
                                 "id", value.span, "use FlatLayout1D.uid() or BlockLayout1D.uid()")
            annotation = ir.I64
        if var is None:
            if name in self.vars_params:
                var = self.vars_params[name]
            else:
                ty = annotation if annotation is not None else self.scalar_of(
                    self.materialize(value), f"the value assigned to '{name}'")
                var = self.new_var(name, ty, target.span)
        elif annotation is not None and annotation != var.ty:
            raise self.error(f"'{name}' was declared {var.ty} at {var.span}; it cannot be "
                             f"re-declared {annotation}", target.span)
        if isinstance(var.ty, (ir.ArrayType, ir.UidType)):
            raise self.error(f"'{name}' is an array or unique id and cannot be reassigned",
                             target.span)
        assert isinstance(var.ty, ir.ScalarType)
        converted = self.coerce(value, var.ty, f"assignment to '{name}'")
        self.commit_checks()
        self.facts = kill(self.facts, {id(var)})
        self.assigned.add(name)
        if self.assign_counts.get(name, 0) == 1 and not var.is_param:
            self.defs[id(var)] = converted
            self.def_nodes.update(id(n) for n in ir.walk(converted) if isinstance(n, ir.BinOp))
        self.vars[name] = var
        return [ir.Assign(span, var, converted)]

    def declare_array(self: FunctionChecker, name: str, which: str, call: S.Call, span) -> None:
        if name in self.vars or self.assign_counts.get(name, 0) != 1:
            raise self.error(f"'{name}' holds an array and must be assigned exactly once",
                             call.span)
        got = self.args(call, ("dtype", "shape"), 2, f"{which}()")
        elem = self.annotation(got["dtype"])
        if not isinstance(elem, ir.ScalarType):
            raise self.error(f"{which}()'s dtype must be a scalar type such as f32",
                             got["dtype"].span)
        shape = self.static_shape(got["shape"], which)
        dynamic = shape == (0,)
        if dynamic and which != "shared_array":
            raise self.error("local arrays need a positive constant shape", got["shape"].span)
        if which == "shared_array":
            if self.loop_depth or self.depth:
                raise self.error("declare shared arrays at the top level of the kernel body",
                                 call.span)
            if not self.is_kernel:
                raise self.error("shared arrays are declared in kernels; pass them to device "
                                 "functions as parameters", call.span)
            if dynamic and any(d.dynamic for d in self.shared):
                raise self.error("a kernel has one dynamic shared array", call.span)
            ty = ir.ArrayType(elem, len(shape), True, "shared", (-1,) if dynamic else shape)
            var = self.new_var(name, ty, call.span, register=False)
            self.shared.append(ir.SharedDecl(var, dynamic))
            if not dynamic:
                self.check_static_shared(name, call)
            self.traits["uses_shared"] = True
            self.traits["uses_dynamic_shared"] = self.traits["uses_dynamic_shared"] or dynamic
            self.traits["uid_only"] = False
        else:
            ty = ir.ArrayType(elem, len(shape), True, "local", shape)
            var = self.new_var(name, ty, call.span, register=False)
            self.local_arrays.append(ir.LocalArrayDecl(var))
        self.assigned.add(name)

    def check_static_shared(self: FunctionChecker, name: str, call: S.Call) -> None:
        """The static shared arrays declared so far must fit CUDA's 48 KiB; checked here, at the
        array that passes the limit, so both backends refuse the kernel alike (ptxas would fail
        on generated code, and the simulator would run it)."""
        total = ir.static_shared_bytes(self.shared)
        limit = ir.STATIC_SHARED_LIMIT
        if total <= limit:
            return
        ty = self.shared[-1].var.ty
        size = ir.static_shared_bytes(self.shared[-1:])
        others = len([d for d in self.shared if not d.dynamic]) - 1
        before = (f" (with the {others} shared array{'s' if others > 1 else ''} declared before "
                  "it)" if others else "")
        dims = ty.shape[0] if len(ty.shape) == 1 else tuple(ty.shape)
        raise self.error(
            f"shared array '{name}' ({ty.elem} x {dims}, {size} bytes) brings the kernel's "
            f"static shared memory to {total} bytes{before}, more than the {limit} bytes "
            "(48 KiB) CUDA allows per block", call.span,
            f"large buffers go in the dynamic shared array, `{name} = shared_array({ty.elem}, 0)`,"
            " sized at launch by shared_mem_bytes (up to the device's opt-in limit, 227 KiB on "
            "an H100 or H200); a kernel has one")

    def static_shape(self: FunctionChecker, e: S.Expr, which: str) -> tuple[int, ...]:
        if isinstance(e, S.Tuple):
            items = e.elts
        else:
            if isinstance(e, S.Name) and e.id not in self.vars:
                sym = self.ctx.resolver.name(e.id, e.span)
                if sym.kind == "const" and isinstance(sym.value, tuple):
                    return self._checked_shape(sym.value, e, which)
            items = (e,)
        dims = tuple(self.const_int(item, f"{which}()'s shape") for item in items)
        return self._checked_shape(dims, e, which)

    def _checked_shape(self: FunctionChecker, dims, e: S.Expr, which: str) -> tuple[int, ...]:
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) for d in dims):
            raise self.error(f"{which}()'s shape must be 1 to 3 constant integers", e.span)
        if dims == (0,) and which == "shared_array":
            return dims
        if any(d <= 0 for d in dims):
            raise self.error(f"{which}()'s shape must be positive (0 alone declares the dynamic "
                             "shared array)", e.span)
        return tuple(dims)

    def unpack(self: FunctionChecker, target: S.Tuple, value_syntax: S.Expr, span) -> list[ir.Stmt]:
        if not all(isinstance(t, S.Name) for t in target.elts):
            raise self.error("only names can be unpacked into", target.span)
        if isinstance(value_syntax, S.Tuple):
            if len(value_syntax.elts) != len(target.elts):
                raise self.error(f"cannot unpack {len(value_syntax.elts)} values into "
                                 f"{len(target.elts)} names", span)
            out: list[ir.Stmt] = []
            temps = []
            # Evaluate every right-hand value first, as Python does (`a, b = b, a` swaps).
            for i, v in enumerate(value_syntax.elts):
                value = self.materialize(self.expr(v))
                ty = self.scalar_of(value, "an unpacked value")
                temp = self.new_var(f"{ir.TEMP_PREFIX}t{self.temp_counter}", ty, v.span)
                self.temp_counter += 1
                out.append(ir.Assign(v.span, temp, value))
                temps.append((target.elts[i], temp))
            for name_syntax, temp in temps:
                self.assigned.add(temp.name)
                out += self.assign_name_value(name_syntax, ir.Local(temp.span, temp.ty, temp), span)
            return out
        value = self.expr(value_syntax)
        if isinstance(value, UidValue):
            if len(target.elts) != value.ndim:
                raise self.error(f"a {value.ndim}-D unique id unpacks into {value.ndim} names "
                                 "(x, y[, z])", span)
            out = []
            for axis, name_syntax in enumerate(target.elts):
                comp = ir.UidComponent(value.span, ir.I64, value.scope, axis)
                out += self.assign_name_value(name_syntax, comp, span)
            return out
        raise self.error("only tuples and multi-dimensional unique ids can be unpacked", span)

    def assign_name_value(self: FunctionChecker, target: S.Name, value: ir.Expr, span
                          ) -> list[ir.Stmt]:
        name = target.id
        var = self.vars.get(name) or self.vars_params.get(name)
        if var is None:
            var = self.new_var(name, self.scalar_of(value), target.span)
        converted = self.coerce(value, var.ty, f"assignment to '{name}'")
        self.commit_checks()
        self.facts = kill(self.facts, {id(var)})
        self.assigned.add(name)
        if self.assign_counts.get(name, 0) == 1 and not var.is_param:
            self.defs[id(var)] = converted
            self.def_nodes.update(id(n) for n in ir.walk(converted) if isinstance(n, ir.BinOp))
        self.vars[name] = var
        return [ir.Assign(span, var, converted)]

    def store(self: FunctionChecker, target: S.Subscript, value_syntax: S.Expr, span,
              augmented: bool) -> ir.Stmt:
        base = self.expr(target.value)
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"only arrays can be assigned by index, not {base.ty}",
                             target.value.span)
        if not base.ty.mutable:
            raise self.error(
                f"'{base.var.name}' is read-only ({base.ty}); declare the parameter "
                f"CUDASliceMut{'' if base.ty.ndim == 1 else f'{base.ty.ndim}D'}[{base.ty.elem}] "
                "to write it", target.span)
        indices = self.indices(base, target.index, target.span)
        if augmented and any(self.has_effects(i) for i in indices):
            raise self.error("an augmented assignment evaluates this index twice; compute it "
                             "into a local first", target.span)
        value = self.coerce(self.expr(value_syntax), base.ty.elem,
                            f"the value stored into '{base.var.name}'")
        unique, owners = self.store_uniqueness(base, indices, target.span)
        checks = self.bounds_checks(base, indices, target.span)
        self.note_store(base, indices, target.span, unique, owners)
        return ir.Store(span, base, indices, checks, value, unique)

    def store_uniqueness(self: FunctionChecker, base: ir.ArrayRef, indices, span
                         ) -> tuple[str, tuple[int, ...]]:
        """How a store is race-free, and which index positions make it so (its *owner*
        positions: a thread owns every element with those index values, whatever the rest)."""
        if base.ty.space == "local":
            return "uid", ()
        if self.unsafe_depth:
            return "unsafe", ()
        required = required_coords(self.ctx.ndim, "global" if base.ty.space == "global"
                                   else "shared") - pinned(self.facts)
        covered: set[str] = set()
        owners: list[int] = []
        for position, idx in enumerate(indices):
            u = self.classify_unique(idx)
            if u is not None:
                covered |= u.coords
                owners.append(position)
        param_coords = {c for c in covered if c.startswith("param:")}
        if not required:
            return "single", ()
        if required <= covered:
            return "uid", tuple(owners)
        if param_coords and not self.is_kernel:
            for c in param_coords:
                self.unique_param_uses.setdefault(c[6:], set()).add(
                    "global" if base.ty.space == "global" else "shared")
            return "uid", tuple(owners)
        what = "grid" if base.ty.space == "global" else "block"
        raise self.error(
            f"store into '{base.var.name}' through an index that is not provably unique: two "
            f"threads of the {what} could write the same element", span, _UNIQUE_HINT)

    # ---- control flow -------------------------------------------------------------------------

    def visit_If(self: FunctionChecker, s: S.If):
        cond = self.to_bool(self.expr(s.test, condition=True))
        self.commit_checks()
        before_facts, before_assigned = self.facts, set(self.assigned)
        self.depth += 1
        self.facts = before_facts | self.facts_from(cond, True)
        then, then_exits = self.block(s.body)
        then_facts, then_assigned = self.facts, self.assigned
        self.facts, self.assigned = before_facts | self.facts_from(cond, False), set(
            before_assigned)
        orelse, else_exits = self.block(s.orelse)
        else_facts, else_assigned = self.facts, self.assigned
        self.depth -= 1
        if then_exits and else_exits:
            self.facts, self.assigned = before_facts, before_assigned
        elif then_exits:
            self.facts, self.assigned = else_facts, else_assigned
        elif else_exits:
            self.facts, self.assigned = then_facts, then_assigned
        else:
            self.facts = then_facts & else_facts
            self.assigned = then_assigned & else_assigned
        if isinstance(cond, ir.Const) and not self.has_effects(cond):
            # `if DEBUG:` with a constant folds away (both branches were still checked).
            return list(then if cond.value else orelse), (then_exits if cond.value else else_exits)
        return [ir.If(s.span, cond, then, orelse)], then_exits and else_exits

    def loop_body(self: FunctionChecker, body: tuple[S.Stmt, ...], entry_facts: frozenset,
                  extra_facts: set) -> tuple[tuple[ir.Stmt, ...], bool]:
        saved_assigned = set(self.assigned)
        self.facts = entry_facts | extra_facts
        self.depth += 1
        self.loop_depth += 1
        self.loop_broke.append(False)
        stmts, _ = self.block(body)
        broke = self.loop_broke.pop()
        self.loop_depth -= 1
        self.depth -= 1
        self.assigned = saved_assigned
        return stmts, broke

    def visit_While(self: FunctionChecker, s: S.While):
        entry = kill(self.facts, self.loop_assigned_ids(s.body))
        self.facts = entry
        cond = self.to_bool(self.expr(s.test, condition=True))
        # The condition (and its checks) ran before every iteration and before a normal exit.
        checked, self.pending = stable_facts(self.pending), set()
        body, broke = self.loop_body(s.body, entry, self.facts_from(cond, True) | checked)
        self.facts = entry if broke else entry | self.facts_from(cond, False) | checked
        infinite = isinstance(cond, ir.Const) and cond.value is True and not broke
        return [ir.While(s.span, cond, body)], infinite

    def visit_For(self: FunctionChecker, s: S.For):
        if not isinstance(s.target, S.Name):
            raise self.error("the loop variable must be a single name", s.target.span)
        it = s.iter
        if not isinstance(it, S.Call):
            raise self.error("kernels loop over range(...) or FlatLayout1D.grid_stride(n)",
                             it.span)
        if isinstance(it.func, S.Attribute) and it.func.attr in _LOOP_METHODS:
            sym = self.ctx.resolver.dotted(it.func.value) if not self.is_local_root(
                it.func.value) else None
            if sym is not None and sym.kind == "gn" and sym.name in LAYOUTS:
                return self.grid_stride(s, sym.name, it)
        sym = None
        if isinstance(it.func, S.Name) and it.func.id not in self.vars:
            sym = self.ctx.resolver.name(it.func.id, it.func.span)
        entry = _registered(sym)
        if entry is None or entry.namespace != "builtins" or entry.form != "loop":
            raise self.error("kernels loop over range(...) or FlatLayout1D.grid_stride(n)",
                             it.span)
        return self.for_range(s, it)

    def for_range(self: FunctionChecker, s: S.For, it: S.Call):
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error("range() takes 1 to 3 positional arguments", it.span)
        values = [self.expr(a) for a in it.args]
        if len(values) == 1:
            values = [WeakConst(it.span, ir.I64, 0), values[0]]
        if len(values) == 2:
            values.append(WeakConst(it.span, ir.I64, 1))
        typed = [v for v in values if not isinstance(v, WeakConst)]
        ty: ir.ScalarType | None = None
        for v in typed:
            t = P.arithmetic_type(self.scalar_of(v, "a range() argument"))
            if not t.info.is_int:
                raise self.error(f"range() arguments must be integers, not {t}", v.span)
            ty = t if ty is None else P.promote(ty, t)
        for v in values:
            if isinstance(v, WeakConst):
                if not isinstance(v.value, int):
                    raise self.error("range() arguments must be integers", v.span)
                lit = P.literal_type(v.value)
                ty = lit if ty is None else P.promote_with_literal(ty, v.value)
        assert ty is not None
        start, stop, step = (self.coerce(v, ty, "range()", explicit=True) for v in values)
        step_sign = 0
        if isinstance(step, ir.Const):
            if step.value == 0:
                raise self.error("range() step must not be zero", step.span)
            step_sign = 1 if step.value > 0 else -1
        var = self.loop_var(s.target, ty)
        self.commit_checks()
        entry = kill(self.facts, self.loop_assigned_ids(s.body) | {id(var)})
        # `for j in range(tid, n, K)` with 0 <= tid < K: threads visit disjoint values.
        start_unique = self.classify_unique(start)
        self.range_unique_vars.pop(id(var), None)
        if (start_unique is not None and step_sign > 0 and isinstance(step.value, int)
                and self.in_range(start, step.value) and var.name not in self.plain_assigned):
            self.range_unique_vars[id(var)] = start_unique.coords
        extra: set = set()
        if step_sign > 0:
            extra.add(("lt", self.key(ir.Local(var.span, var.ty, var)), self.key(stop)))
            if self.is_nonneg(start):
                extra.add(("ge0", self.key(ir.Local(var.span, var.ty, var))))
        before = set(self.assigned)
        self.assigned.add(var.name)
        body, _ = self.loop_body(s.body, entry, extra)
        self.assigned = before
        self.facts = entry
        stmt = ir.ForRange(s.span, var, start, stop, step, step_sign, body,
                           counter_fits=self.counter_fits(stop, step, ty))
        if step_sign == 0:
            site = self.new_site("assert", it.span, message="range() arg 3 must not be zero")
            zero = ir.Const(it.span, ty, 0)
            return [ir.Assert(it.span, ir.Compare(it.span, ir.BOOL, "!=", step, zero), site),
                    stmt], False
        return [stmt], False

    def grid_stride(self: FunctionChecker, s: S.For, layout: str, it: S.Call):
        if layout != "FlatLayout1D":
            raise self.error("grid_stride() is defined on FlatLayout1D", it.func.span)
        self.require_layout("FlatLayout1D", 1, it.span)
        if it.keywords or len(it.args) != 1:
            raise self.error("grid_stride(n) takes one argument", it.span)
        stop = self.expr(it.args[0])
        stop = self.coerce(stop, ir.I64, "grid_stride(n)", explicit=not isinstance(
            stop, WeakConst))
        if not self.scalar_of(stop).info.is_int:
            raise self.error("grid_stride(n) needs an integer", stop.span)
        var = self.loop_var(s.target, ir.I64)
        self.grid_stride_vars.add(id(var))
        self.note_uid("grid", it.span)
        self.commit_checks()
        entry = kill(self.facts, self.loop_assigned_ids(s.body) | {id(var)})
        local = ir.Local(var.span, var.ty, var)
        extra = {("lt", self.key(local), self.key(stop)), ("ge0", self.key(local))}
        before = set(self.assigned)
        self.assigned.add(var.name)
        body, _ = self.loop_body(s.body, entry, extra)
        self.assigned = before
        self.facts = entry
        return [ir.GridStride(s.span, var, stop, body)], False

    def counter_fits(self: FunctionChecker, stop: ir.Expr, step: ir.Expr,
                     ty: ir.ScalarType) -> bool:
        """Can a range() counter step past ``stop`` without leaving ``ty``?  The step must be
        a constant; then either ``stop`` is one too, or ``stop >= 0`` and: going down the counter
        ends at ``stop + 1 + step`` at the least (in range), going up at ``stop - 1 + step`` at
        the most, which the upper bound of ``stop`` must leave room for (an array extent is
        below 2**48)."""
        if not (isinstance(step, ir.Const) and isinstance(step.value, int)):
            return False
        if isinstance(stop, ir.Const) and isinstance(stop.value, int):
            return ty.info.min <= stop.value + step.value <= ty.info.max
        if not self.is_nonneg(stop):
            return False
        if step.value < 0:
            return True
        bound = self.upper(stop)
        return bound is not None and bound - 1 + step.value <= ty.info.max

    def loop_var(self: FunctionChecker, target: S.Name, ty: ir.ScalarType) -> ir.Var:
        var = self.vars.get(target.id) or self.vars_params.get(target.id)
        if var is None:
            return self.new_var(target.id, ty, target.span)
        if var.ty != ty:
            raise self.error(f"the loop variable '{target.id}' is {var.ty} but this range() "
                             f"yields {ty}", target.span, "use a new name for this loop")
        return var

    def visit_With(self: FunctionChecker, s: S.With):
        if len(s.items) != 1 or not isinstance(s.items[0], S.Call) or s.items[0].args:
            raise self.error("the only context manager in kernels is `with unsafe():`", s.span)
        call = s.items[0]
        sym = self.ctx.resolver.dotted(call.func) if isinstance(
            call.func, (S.Name, S.Attribute)) and not self.is_local_root(call.func) else None
        entry = _registered(sym)
        if entry is None or entry.form != "context":
            raise self.error("the only context manager in kernels is `with unsafe():`", s.span)
        self.unsafe_depth += 1
        body, exits = self.block(s.body)
        self.unsafe_depth -= 1
        return list(body), exits

    # ---- facts --------------------------------------------------------------------------------

    def facts_from(self: FunctionChecker, cond: ir.Expr, truth: bool) -> set:
        return cond_facts(cond, truth, self.classify_unique, self.is_uniform, self.key)

    def loop_assigned_ids(self: FunctionChecker, body: tuple[S.Stmt, ...]) -> set[int]:
        names = _assigned_names(body)
        return {id(v) for n, v in {**self.vars_params, **self.vars}.items() if n in names}


def _assigned_names(stmts) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, (S.Assign,)):
            for t in s.targets:
                out |= _target_names(t)
        elif isinstance(s, (S.AnnAssign, S.AugAssign)):
            out |= _target_names(s.target)
        elif isinstance(s, S.For):
            out |= _target_names(s.target)
            out |= _assigned_names(s.body)
        elif isinstance(s, (S.While, S.With)):
            out |= _assigned_names(s.body)
        elif isinstance(s, S.If):
            out |= _assigned_names(s.body) | _assigned_names(s.orelse)
    return out


def _target_names(t: S.Expr) -> set[str]:
    if isinstance(t, S.Name):
        return {t.id}
    if isinstance(t, S.Tuple):
        out: set[str] = set()
        for e in t.elts:
            out |= _target_names(e)
        return out
    return set()


def count_assignments(stmts, counts: dict[str, int], in_loop: set[str], depth: int = 0,
                      loop: bool = False, plain: set[str] | None = None) -> None:
    """Count assignments per local name (a loop target counts as assigned in a loop);
    ``plain`` collects the names assigned other than as a ``for`` target."""
    plain = plain if plain is not None else set()
    for s in stmts:
        if isinstance(s, (S.Assign, S.AnnAssign, S.AugAssign)):
            targets = s.targets if isinstance(s, S.Assign) else (s.target,)
            for t in targets:
                for n in _target_names(t):
                    counts[n] = counts.get(n, 0) + (2 if isinstance(s, S.AugAssign) else 1)
                    plain.add(n)
                    if loop:
                        in_loop.add(n)
        elif isinstance(s, S.For):
            for n in _target_names(s.target):
                counts[n] = counts.get(n, 0) + 2
                in_loop.add(n)
            count_assignments(s.body, counts, in_loop, depth + 1, True, plain)
        elif isinstance(s, S.While):
            count_assignments(s.body, counts, in_loop, depth + 1, True, plain)
        elif isinstance(s, S.With):
            count_assignments(s.body, counts, in_loop, depth, loop, plain)
        elif isinstance(s, S.If):
            count_assignments(s.body, counts, in_loop, depth + 1, loop, plain)
            count_assignments(s.orelse, counts, in_loop, depth + 1, loop, plain)


_STMT_HANDLERS: dict[type, Callable] = {
    S.Pass: StatementChecker.visit_Pass,
    S.Break: StatementChecker.visit_Break,
    S.Continue: StatementChecker.visit_Continue,
    S.Return: StatementChecker.visit_Return,
    S.Assert: StatementChecker.visit_Assert,
    S.ExprStmt: StatementChecker.visit_ExprStmt,
    S.Assign: StatementChecker.visit_Assign,
    S.AnnAssign: StatementChecker.visit_AnnAssign,
    S.AugAssign: StatementChecker.visit_AugAssign,
    S.If: StatementChecker.visit_If,
    S.While: StatementChecker.visit_While,
    S.For: StatementChecker.visit_For,
    S.With: StatementChecker.visit_With,
}
