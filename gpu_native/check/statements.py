"""The type pass over simple statements and assignments: one ``visit_X`` per statement kind
(control flow is in :mod:`.control`; the dispatch table in :mod:`.checker`)."""

from __future__ import annotations

from .. import ir
from ..errors import TranspileError
from ..frontend import syntax as S
from ..lang import registry as R
from ..launchexpr import LaunchExpr
from ..spec import IndexFits, LaunchAssert, ShapeAssert
from .checker_base import CheckerBase
from .expressions import GeneratorType, UidValue, WeakConst
from .launch import has_shape, launch_tree, shape_tree
from .scope import registry_entry as _registered
from .tuples import NOT_CONSTANT

# What a launch-checked assert may use besides block_dim and grid_dim.
_SIZED_AT_LAUNCH = ("a block-sized buffer is either constant (BLOCK = 256; assert block_dim.x == "
                    "BLOCK; shared_array(f32, BLOCK)) or the dynamic shared array, "
                    "shared_array(f32, 0), sized by the launch's shared-memory bytes")
_LAUNCH_OPS = ("+", "-", "*", "//", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or", "not")


class StatementChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: blocks, simple statements, assignments and
    stores."""

    def block(self, stmts: tuple[S.Stmt, ...], kind: str = "body",
              runs_once: bool = False, uniform: bool | None = None,
              round: object = None) -> tuple[tuple[ir.Stmt, ...], bool]:
        """Check a block; return its IR and whether control never falls off its end.  ``kind``
        ("body", "loop", "if", "with"), ``runs_once`` (a loop body that surely runs),
        ``uniform`` and ``round`` are what the barrier phases need to know of it
        (:class:`.phases.Frame`)."""
        phases = self.unique.phases
        phases.enter(kind, uniform, round)
        reaching = self.defs.enter_block()
        out: list[ir.Stmt] = []
        exits = False
        for s in stmts:
            phases.statement()
            if exits:
                # Unreachable code is still checked (its errors are real), but not emitted.
                saved = (self.bounds.facts, set(self.assigned))
                self.statement(s)
                self.bounds.facts, self.assigned, self.bounds.pending = saved[0], saved[1], set()
                continue
            result, exits = self.statement(s)
            if self.draws_random:
                self.check_draw_order(result)
            self.bounds.commit()
            out.extend(result)
        phases.leave(runs_once)
        self.defs.leave_block(reaching)
        return tuple(out), exits

    # ---- simple statements --------------------------------------------------------------------

    def visit_Pass(self, s: S.Pass):
        return [], False

    def visit_Break(self, s: S.Break):
        self.unique.phases.jump("break")
        self.not_in_unrolled_loop("break", s)
        if self.loop_depth == 0:
            raise self.error("`break` outside a loop", s.span)
        self.loop_broke[-1] = True
        return [ir.Break(s.span)], True

    def visit_Continue(self, s: S.Continue):
        self.unique.phases.jump("continue")
        self.not_in_unrolled_loop("continue", s)
        if self.loop_depth == 0:
            raise self.error("`continue` outside a loop", s.span)
        return [ir.Continue(s.span)], True

    def not_in_unrolled_loop(self, what: str, s: S.Stmt) -> None:
        if self.unrolled_loops and self.unrolled_loops[-1] == self.loop_depth:
            raise self.error(f"`{what}` in a loop over a tuple: the loop is unrolled, so there "
                             "is no loop to leave", s.span,
                             "use an if around the rest of the body, or loop over range(...)")

    def visit_Return(self, s: S.Return):
        self.unique.phases.jump()
        if self.is_kernel:
            if s.value is not None:
                raise self.error("kernels cannot return a value; write results into a "
                                 "CUDASliceMut parameter", s.value.span)
            return [ir.Return(s.span, None)], True
        ret_type = self.decl.ret_type
        if s.value is None:
            if ret_type != ir.VOID:
                raise self.error(f"{self.fn.name} must return a {ret_type} value", s.span)
            return [ir.Return(s.span, None)], True
        if ret_type == ir.VOID:
            value = self.expr(s.value)
            example = "f32"
            if self.is_tuple(value):
                example = f"tuple[{', '.join(['f32'] * self.tuple_length(value))}]"
            if self.fn.returns is None:
                raise self.error(f"{self.fn.name} has no return annotation, so it cannot return "
                                 "a value", s.value.span, f"annotate it, e.g. `-> {example}`")
            raise self.error(f"{self.fn.name} is declared `-> None`, so it cannot return a "
                             "value", s.value.span,
                             f"declare the type it returns instead, e.g. `-> {example}`, or "
                             "write a bare `return`")
        # resolve.py checked it
        assert isinstance(ret_type, (ir.ScalarType, ir.VectorType, ir.TupleType, ir.StructType))
        value = self.coerce(self.expr(s.value), ret_type, "the returned value")
        return [ir.Return(s.span, value)], True

    def visit_Assert(self, s: S.Assert):
        cond = self.to_bool(self.expr(s.test, condition=True), "an assert condition")
        message = ""
        if s.msg is not None:
            if not isinstance(s.msg, S.Str):
                raise self.error("an assert message in a kernel must be a string literal",
                                 s.msg.span)
            message = s.msg.value
        site = self.ctx.kernel.new_site("assert", s.span, message=message)
        self.bounds.assume(cond, True)
        # `assert block_dim.x == TILE` is the same for every thread of a launch: the launcher
        # checks it once per launch shape, and the kernel does not spend instructions on it.
        tree = None
        if self.is_kernel and self.depth == 0:
            tree = launch_tree(cond, ("block_dim", "grid_dim"), _LAUNCH_OPS,
                               self.defs.single_def)
        if tree is not None:
            self.ctx.kernel.add_launch_check(LaunchAssert(tree, site))
            # True in every thread of every launch that runs, before this line too.
            self.bounds.launch_facts |= self.bounds.facts_from(cond, True)
        elif self.is_kernel and self.depth == 0 and self.hoist_shape_assert(cond, site):
            return [ir.Assert(s.span, cond, site, at_launch=True)], False
        return [ir.Assert(s.span, cond, site, at_launch=tree is not None)], False

    def hoist_shape_assert(self, cond: ir.Expr, site: int) -> bool:
        """``assert a.shape[0] == grid_dim.y * BM``, uniform over the launch and known to the
        launcher, which checks it at every launch (a :class:`~gpu_native.spec.ShapeAssert`)
        instead of every thread; what it says is then a launch fact the bounds proofs may use
        (:attr:`~.bounds.BoundsProofs.launch_facts`).  False where it cannot be hoisted."""
        fits: list[tuple[LaunchExpr, ir.BinOp]] = []
        tree = shape_tree(cond, self.unique.param_index, self.defs.single_def, fits)
        if tree is None or not has_shape(tree):
            return False
        for e, limit in self.add_fits_checks(fits):
            self.bounds.launch_limits[self.defs.key(e)] = limit
        self.ctx.kernel.add_launch_check(ShapeAssert(tree, site))
        self.bounds.launch_facts |= self.bounds.facts_from(cond, True)
        self.bounds.note_shape_multiples(cond)
        return True

    def add_fits_checks(self, fits: list[tuple[LaunchExpr, ir.BinOp]]
                        ) -> list[tuple[ir.BinOp, int]]:
        """An :class:`~gpu_native.spec.IndexFits` launch check for each ``+``/``*`` a
        :func:`.launch.shape_tree` left in ``fits``; each expression with its type's maximum."""
        out = []
        for sub, e in fits:
            ty = e.ty
            assert isinstance(ty, ir.ScalarType) and isinstance(ty.info.max, int)
            self.ctx.kernel.add_launch_check(IndexFits(sub, ty.info.max, str(ty), e.span.line,
                                                       e.span.col, e.span.end_col))
            out.append((e, ty.info.max))
        return out

    def visit_ExprStmt(self, s: S.ExprStmt):
        value = s.value
        if isinstance(value, S.Str):
            return [], False  # a string statement is a comment
        if isinstance(value, S.Call):
            sym = None
            if isinstance(value.func, (S.Name, S.Attribute)) and not self.is_local_root(value.func):
                sym = self.ctx.resolver.dotted(value.func)
            entry = _registered(sym)
            if entry is not None and entry.form == "statement":
                if entry.arch:
                    self.traits.note_arch(entry.arch, f"{entry.name} at {value.span.file}:"
                                                      f"{value.span.line}")
                return [getattr(self, entry.check)(entry.name, value)], False
        expr = self.expr(value)
        if isinstance(expr, WeakConst):
            return [], False
        expr = self.materialize(expr)
        self.note_vote_barrier(value)
        return [ir.ExprStmt(s.span, expr)], False

    def note_vote_barrier(self, value: S.Expr) -> None:
        """A statement whose whole value is a block vote (``n = sync_threads_count(p)``): a
        barrier of the block's threads at this statement, as ``sync_threads()`` is.  (A vote
        inside an expression, which a condition of it may skip, is not taken as one: refusing
        more is sound.)"""
        if not (isinstance(value, S.Call) and isinstance(value.func, (S.Name, S.Attribute))
                and not self.is_local_root(value.func)):
            return
        entry = _registered(self.ctx.resolver.dotted(value.func))
        if entry is not None and entry.check == "call_barrier_vote":
            self.unique.phases.barrier()

    def barrier(self, name: str, call: S.Call) -> ir.Stmt:
        entry = R.GPU_NATIVE[name]
        if entry.value in ("block", "grid"):
            if call.args or call.keywords:
                raise self.error(f"{name}() takes no arguments", call.span)
            if entry.value == "grid" and not self.ctx.options.cooperative:
                raise self.error(
                    f"{name}() is a barrier for the whole grid, which only a cooperative kernel "
                    "has (every block resident at once); declare the kernel with "
                    "@gpu_kernel(..., cooperative=True)", call.span)
            self.traits.note_barrier(entry.value)
            # A grid barrier orders the threads of each block too.  (A block vote whose value a
            # statement takes whole is a barrier too: note_vote_barrier.)
            self.unique.phases.barrier(grid=entry.value == "grid")
            return ir.Barrier(call.span, entry.value)
        got = self.args(call, entry.param_names, entry.required, f"{name}()")
        self.traits.note_barrier("warp")
        self.unique.warp_barriers = True
        return ir.Barrier(call.span, "warp", self.mask_arg(got, call.span))

    def fence(self, name: str, call: S.Call) -> ir.Stmt:
        if call.args or call.keywords:
            raise self.error(f"{name}() takes no arguments", call.span)
        return ir.Fence(call.span, R.GPU_NATIVE[name].value)

    def print_stmt(self, name: str, call: S.Call) -> ir.Stmt:
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
        self.traits.note_print()
        return ir.Print(call.span, tuple(items))

    # ---- assignment ---------------------------------------------------------------------------

    def visit_Assign(self, s: S.Assign):
        if len(s.targets) == 1:
            out = self.assign_target(s.targets[0], s.value, s.span, None)
            if isinstance(s.targets[0], S.Name):
                self.note_vote_barrier(s.value)
            return out, False
        if not all(isinstance(t, S.Name) for t in s.targets):
            return self.assign_chain(s), False
        first = s.targets[-1]
        out = self.assign_target(first, s.value, s.span, None)
        for t in s.targets[:-1]:
            out += self.assign_target(t, first, s.span, None)
        return out, False

    def assign_chain(self, s: S.Assign) -> list[ir.Stmt]:
        """``sdata[tid] = total = total + sdata[tid + step]`` (every reduction after Harris's):
        as in Python, the value is computed once and then assigned to each target from left
        to right, names, array elements and tuples alike."""
        for t in s.targets:
            if not isinstance(t, (S.Name, S.Subscript, S.Tuple)):
                raise self.error("chained assignment assigns names, array elements and tuples "
                                 "of them", t.span, "write one assignment per target")
        value = self.expr(s.value)
        if isinstance(value, (UidValue, ir.ArrayRef)):
            raise self.error("a unique id or an array can be assigned to one name, not chained "
                             "into array elements", s.value.span)
        out: list[ir.Stmt] = []
        # The targets' indices are evaluated after the value, and may read a name the chain
        # assigns first (`a[i] = i = 5` stores at the old i): a value that is no constant
        # goes to a temporary, so each target reads what Python's would.
        if self.constant_of(value) is NOT_CONSTANT and not self.is_tuple(value):
            value = self.temporary(self.materialize(value), out)
        for t in s.targets:
            if isinstance(t, S.Name):
                out += self.assign_name_value(t, value, s.span)
            elif isinstance(t, S.Subscript):
                out.append(self.store(t, None, s.span, False, value=value))
            else:
                assert isinstance(t, S.Tuple)
                out += self.unpack_value(t, value, s.span)
        return out

    def visit_AnnAssign(self, s: S.AnnAssign):
        if not isinstance(s.target, S.Name):
            raise self.error("only names can be annotated", s.target.span)
        if s.value is None:
            raise self.error(f"declare '{s.target.id}' with a value, e.g. "
                             f"`{s.target.id}: f32 = 0.0`", s.span)
        ann = self.annotation(s.annotation, allow_unique=True)
        out = self.assign_target(s.target, s.value, s.span, ann)
        self.note_vote_barrier(s.value)
        return out, False

    def visit_AugAssign(self, s: S.AugAssign):
        target = s.target
        if isinstance(target, S.Name):
            value = S.BinOp(s.span, s.op, target, s.value)
            return self.assign_target(target, value, s.span, None), False
        if isinstance(target, S.Subscript):
            value = S.BinOp(s.span, s.op, target, s.value)
            return self.assign_target(target, value, s.span, None, augmented=True), False
        if isinstance(target, S.Attribute):
            value = S.BinOp(s.span, s.op, target, s.value)
            return self.assign_target(target, value, s.span, None, augmented=True), False
        raise self.error("augmented assignment needs a name, an array element or a vector's "
                         "component", target.span)

    def assign_target(self, target: S.Expr, value_syntax: S.Expr, span,
                      annotation, augmented: bool = False) -> list[ir.Stmt]:
        if isinstance(target, S.Name):
            return self.assign_name(target, value_syntax, span, annotation)
        if isinstance(target, S.Subscript):
            item = self.item_target(target)
            if item is not None:  # `v[0] = x` of a local vector, as `v.x = x`
                return self.replace_component(*item, value_syntax, span, target.span)
            return [self.store(target, value_syntax, span, augmented)]
        if isinstance(target, S.Tuple):
            return self.unpack(target, value_syntax, span)
        if isinstance(target, S.Attribute):
            stores = self.assign_field(target, value_syntax, span, augmented)
            if stores is not None:
                return stores
            return self.assign_component(target, value_syntax, span)
        raise self.error("cannot assign to this expression", target.span)

    def assign_component(self, target: S.Attribute, value_syntax: S.Expr, span
                         ) -> list[ir.Stmt]:
        """``v.x = value`` for a local vector ``v``: ``v`` gets a new vector with that one
        component replaced."""
        found = self.component_target(target)
        if found is None:
            if isinstance(target.value, S.Subscript):
                raise self.error("a component of an array element cannot be assigned; assign "
                                 "the whole element", target.span,
                                 "v = a[i]; v.x = ...; a[i] = v")
            raise self.error("attributes cannot be assigned in kernels (only the components "
                             "of a local vector and the fields of a struct)", target.span)
        return self.replace_component(*found, value_syntax, span, target.span)

    def replace_component(self, var: ir.Var, index: int, value_syntax: S.Expr, span,
                          target_span) -> list[ir.Stmt]:
        """``var`` gets a new vector with component ``index`` replaced by the value."""
        ty = var.ty
        assert isinstance(ty, ir.VectorType)
        value = self.coerce(self.expr(value_syntax), ty.elem,
                            f"component .{ty.info.components[index]} of '{var.name}'")
        old = ir.Local(target_span, ty, var)
        items = tuple(value if k == index else ir.VecComponent(target_span, ty.elem, old, k)
                      for k in range(ty.n))
        new = ir.VecMake(span, ty, items)
        self.bounds.commit()
        self.bounds.kill({var})
        self.defs.record(var, new)
        return [ir.Assign(span, var, new)]

    def array_declaration(self, value: S.Expr):
        if not isinstance(value, S.Call) or not isinstance(value.func, (S.Name, S.Attribute)):
            return None
        if self.is_local_root(value.func):
            return None
        sym = self.ctx.resolver.dotted(value.func)
        entry = _registered(sym)
        if entry is not None and entry.form == "allocation":
            return entry.name
        return None

    def assign_name(self, target: S.Name, value_syntax: S.Expr, span,
                    annotation) -> list[ir.Stmt]:
        name = target.id
        if self.is_generator_declaration(value_syntax):
            return self.declare_generator(target, value_syntax, span, annotation)
        decl = self.array_declaration(value_syntax)
        if decl is not None:
            assert isinstance(value_syntax, S.Call)  # array_declaration found a call
            self.declare_array(name, decl, value_syntax, span)
            return []
        value = self.expr(value_syntax)
        if isinstance(value, ir.ArrayRef):
            raise self.error("arrays cannot be assigned to local variables; use the array "
                             "directly", value.span)
        self.unbind_constant(name)
        var = self.vars.get(name)
        if isinstance(value, UidValue):
            if var is not None or self.decl.assign_counts.get(name, 0) != 1:
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
            if self.unique.classify(self.materialize(value)) is None:
                raise self.error(f"'{name}' is annotated UniqueId but its value is not a unique "
                                 "id", value.span, "use FlatLayout1D.uid() or BlockLayout1D.uid()")
            annotation = ir.I64
        if var is None:
            if name in self.decl.param_vars:
                var = self.decl.param_vars[name]
            else:
                ty = annotation if annotation is not None else self.value_type(
                    value, f"the value assigned to '{name}'")
                var = self.new_var(name, ty, target.span)
        elif annotation is not None and annotation != var.ty:
            raise self.error(f"'{name}' was declared {var.ty} at {var.span}; it cannot be "
                             f"re-declared {annotation}", target.span)
        if isinstance(var.ty, (ir.ArrayType, ir.UidType)):
            raise self.error(f"'{name}' is an array or unique id and cannot be reassigned",
                             target.span)
        if isinstance(var.ty, GeneratorType):
            raise self.error(f"'{name}' holds a random number generator; only philox(...) can "
                             "be assigned to it", target.span)
        assert isinstance(var.ty, (ir.ScalarType, ir.VectorType, ir.TupleType, ir.StructType))
        converted = self.coerce_assigned(value, var, name)
        self.bounds.commit()
        self.bounds.assign(var, converted)
        self.assigned.add(name)
        self.defs.record(var, converted)
        self.unique.note_assign(var, converted)
        self.vars[name] = var
        return [ir.Assign(span, var, converted)]

    def declare_array(self, name: str, which: str, call: S.Call, span) -> None:
        if name in self.vars or self.decl.assign_counts.get(name, 0) != 1:
            raise self.error(f"'{name}' holds an array and must be assigned exactly once",
                             call.span)
        got = self.args(call, ("dtype", "shape", "swizzle"), 2, f"{which}()")
        elem = self.annotation(got["dtype"])
        if not isinstance(elem, (ir.ScalarType, ir.VectorType, ir.StructType)):
            raise self.error(f"{which}()'s dtype must be a scalar type such as f32, a vector "
                             "type such as vec3f or a @gpu_struct class", got["dtype"].span)
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
            swizzle = self.swizzle_of(got, elem, shape, call)
            ty = ir.ArrayType(elem, len(shape), True, "shared", (-1,) if dynamic else shape,
                              swizzle=swizzle)
            var = self.new_var(name, ty, call.span, register=False)
            self.shared.append(ir.SharedDecl(var, dynamic))
            if swizzle:
                self.note_swizzled(name, call)
            elif not dynamic:
                self.check_static_shared(name, call)
            self.traits.note_shared(dynamic)
        else:
            if "swizzle" in got:
                raise self.error("only shared arrays are swizzled", got["swizzle"].span)
            ty = ir.ArrayType(elem, len(shape), True, "local", shape)
            var = self.new_var(name, ty, call.span, register=False)
            self.local_arrays.append(ir.LocalArrayDecl(var))
            self.check_local_memory(name, call)
        self.assigned.add(name)

    def check_static_shared(self, name: str, call: S.Call) -> None:
        """The static shared arrays declared so far must fit CUDA's 48 KiB; checked here, at the
        array that passes the limit, so both backends refuse the kernel alike (ptxas would fail
        on generated code, and the simulator would run it)."""
        total = ir.static_shared_bytes(self.shared)
        limit = ir.STATIC_SHARED_LIMIT
        if total <= limit:
            return
        decl = self.shared[-1]
        self.refuse_past_limit(
            name, call, "shared", decl.ty.elem, decl.shape, ir.static_shared_bytes([decl]),
            total, len([d for d in self.shared if not d.dynamic]) - 1,
            f"the kernel's static shared memory to {total} bytes",
            f"the {limit} bytes (48 KiB) CUDA allows per block",
            f"large buffers go in the dynamic shared array, `{name} = shared_array("
            f"{decl.ty.elem}, 0)`, sized at launch by shared_mem_bytes (up to the device's "
            "opt-in limit, 227 KiB on an H100 or H200); a kernel has one")

    def check_local_memory(self, name: str, call: S.Call) -> None:
        """The local arrays declared so far must fit CUDA's 512 KiB of local memory per thread;
        checked at the array that passes the limit (the device compiler would refuse the
        generated code, and the simulator would try to allocate it for every thread)."""
        total = ir.local_array_bytes(self.local_arrays)
        limit = ir.LOCAL_MEMORY_LIMIT
        if total <= limit:
            return
        decl = self.local_arrays[-1]
        self.refuse_past_limit(
            name, call, "local", decl.ty.elem, decl.shape, ir.local_array_bytes([decl]),
            total, len(self.local_arrays) - 1, f"this thread's local arrays to {total} bytes",
            f"the {limit} bytes (512 KiB) of local memory CUDA allows per thread",
            "a large buffer belongs in global memory: pass a CUDASliceMut to the kernel and "
            "index it by the thread's unique id")

    def refuse_past_limit(self, name: str, call: S.Call, space: str, elem, shape, size: int,
                          total: int, others: int, brings: str, limit: str, hint: str) -> None:
        """Refuse the ``space`` array ``name`` that takes its kind of memory past ``limit``."""
        before = (f" (with the {others} {space} array{'s' if others > 1 else ''} declared "
                  "before it)" if others else "")
        dims = shape[0] if len(shape) == 1 else tuple(shape)
        raise self.error(f"{space} array '{name}' ({elem} x {dims}, {size} bytes) brings "
                         f"{brings}{before}, more than {limit}", call.span, hint)

    def static_shape(self, e: S.Expr, which: str) -> tuple[int, ...]:
        if isinstance(e, S.Tuple):
            dims = tuple(self.const_int(item, f"{which}()'s shape") for item in e.elts)
            return self._checked_shape(dims, e, which)
        value = self.expr(e)
        values = self.constant_of(value)
        if not isinstance(values, tuple):
            values = (values,)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise self.error(f"{which}()'s shape must be a constant integer or a tuple of them",
                             e.span, _SIZED_AT_LAUNCH if which == "shared_array" else None)
        return self._checked_shape(values, e, which)

    def _checked_shape(self, dims, e: S.Expr, which: str) -> tuple[int, ...]:
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) for d in dims):
            raise self.error(f"{which}()'s shape must be 1 to 3 constant integers", e.span)
        if dims == (0,) and which == "shared_array":
            return dims
        if any(d <= 0 for d in dims):
            raise self.error(f"{which}()'s shape must be positive (0 alone declares the dynamic "
                             "shared array)", e.span)
        return tuple(dims)

    def coerce_assigned(self, value: ir.Expr, var: ir.Var, name: str) -> ir.Expr:
        """``value`` converted to ``var``'s type for ``name = value``; a float refused for an
        integer variable says where the variable got its type (Numba's ``acc = 0`` before
        ``acc += a[i]`` makes ``acc`` an integer here, as C's ``int acc = 0`` would)."""
        assert isinstance(var.ty, (ir.ScalarType, ir.VectorType, ir.TupleType, ir.StructType))
        try:
            return self.coerce(value, var.ty, f"assignment to '{name}'")
        except TranspileError as exc:
            src, dst = value.ty, var.ty
            if exc.hint is not None or not (
                    isinstance(src, ir.ScalarType) and src.info.is_float and
                    isinstance(dst, ir.ScalarType) and dst.info.is_int):
                raise
            raise self.error(exc.message, exc.span or value.span, (
                f"'{name}' is {dst} from its first assignment (line {var.span.line}): a "
                f"variable keeps one type; for a {src} sum start it as one, `{name} = "
                f"{src}(0)` or `{name}: {src} = 0`"
            )) from None

    def assign_name_value(self, target: S.Name, value: ir.Expr, span
                          ) -> list[ir.Stmt]:
        name = target.id
        self.unbind_constant(name)
        var = self.vars.get(name) or self.decl.param_vars.get(name)
        if var is None:
            var = self.new_var(name, self.value_type(value, f"the value assigned to '{name}'"),
                               target.span)
        if isinstance(var.ty, (ir.ArrayType, ir.UidType)):
            raise self.error(f"'{name}' is an array or unique id and cannot be reassigned",
                             target.span)
        if isinstance(var.ty, GeneratorType):
            raise self.error(f"'{name}' holds a random number generator; only philox(...) can "
                             "be assigned to it", target.span)
        assert isinstance(var.ty, (ir.ScalarType, ir.VectorType, ir.TupleType, ir.StructType))
        converted = self.coerce_assigned(value, var, name)
        self.bounds.commit()
        self.bounds.assign(var, converted)
        self.assigned.add(name)
        self.defs.record(var, converted)
        self.unique.note_assign(var, converted)
        self.vars[name] = var
        return [ir.Assign(span, var, converted)]

    def store(self, target: S.Subscript, value_syntax: S.Expr | None, span,
              augmented: bool, value: ir.Expr | None = None,
              field: tuple[int, ...] = ()) -> ir.Stmt:
        """``target = value`` (``value_syntax`` unless the value is checked already; ``field``:
        the path of a struct element's field that ``value``, converted already, is stored to)."""
        base = self.expr(target.value)
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"only arrays can be assigned by index, not {base.ty}",
                             target.value.span)
        if base.ty.space == "const":
            raise self.error(
                f"'{base.var.name}' is a constant array (const_array, in constant memory): "
                "kernels read it but cannot write it", target.span,
                "copy what you need to change into a local_array or shared_array")
        if not base.ty.mutable:
            raise self.error(
                f"'{base.var.name}' is read-only ({base.ty}); declare the parameter "
                f"CUDASliceMut{'' if base.ty.ndim == 1 else f'{base.ty.ndim}D'}[{base.ty.elem}] "
                "to write it", target.span)
        indices = self.indices(base, target.index, target.span)
        if augmented and any(self.has_effects(i) for i in indices):
            raise self.error("an augmented assignment evaluates this index twice; compute it "
                             "into a local first", target.span)
        if value is None:
            assert value_syntax is not None
            value = self.expr(value_syntax)
        if not field:
            value = self.coerce(value, base.ty.elem, f"the value stored into '{base.var.name}'")
        unique, owners, proof = self.unique.store(base, indices, target.span,
                                                  self.unsafe_depth > 0)
        checks = self.bounds.checks(base, indices, target.span)
        proof = self.unique.note_store(base, indices, target.span, unique, owners) or proof
        self.tail.note(base, indices)
        return ir.Store(span, base, indices, checks, value, unique, proof, field)
