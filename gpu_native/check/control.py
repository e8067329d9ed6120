"""The type pass over control flow: ``if``, ``while``, ``for`` (``range`` and ``grid_stride``) and
``with unsafe():``, moving the bounds proofs' facts along each path."""

from __future__ import annotations

from .. import ir
from ..analysis.ranges import constant_value, is_widening
from ..frontend import syntax as S
from ..lang import registry as R
from ..launchexpr import Arith, Compare, Const, LaunchExpr, ParamValue
from ..nodes import replace
from ..spec import IndexFits, ParamCheck, ShapeAssert
from . import promote as P
from .checker_base import CheckerBase
from .counted import stepped_counter
from .expressions import LAYOUTS, WeakConst
from .facts import ConstKey, Exact, Less, NonNegative, join, kill, stable
from .launch import launch_tree, shape_tree
from .resolve import assigned_names
from .scope import registry_entry as _registered

# The layout methods a `for` loop iterates (FlatLayout1D.grid_stride).
_LOOP_METHODS = frozenset(e.name for e in R.LAYOUT_METHODS.values() if e.form == "loop")


class ControlFlowChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: branches and loops."""

    def visit_If(self, s: S.If):
        cond = self.to_bool(self.expr(s.test, condition=True))
        bounds = self.bounds
        bounds.commit()
        before_facts, before_assigned = bounds.facts, set(self.assigned)
        self.depth += 1
        exact = bounds.exact_facts(cond)  # proven where the condition runs, true in both arms
        bounds.facts = before_facts | bounds.facts_from(cond, True) | exact
        # An `if` every thread of the launch decides alike keeps the rounds of a loop in it
        # apart as the loop's own barriers do (.phases.round_digits).
        uniform = self.unique.is_uniform(cond)
        then, then_exits = self.block(s.body, "if", uniform=uniform)
        then_facts, then_assigned = bounds.facts, self.assigned
        bounds.facts, self.assigned = before_facts | bounds.facts_from(cond, False) | exact, set(
            before_assigned)
        orelse, else_exits = self.block(s.orelse, "if", uniform=uniform)
        else_facts, else_assigned = bounds.facts, self.assigned
        self.depth -= 1
        if then_exits and else_exits:
            bounds.facts, self.assigned = before_facts, before_assigned
        elif then_exits:
            bounds.facts, self.assigned = else_facts, else_assigned
        elif else_exits:
            bounds.facts, self.assigned = then_facts, then_assigned
        else:
            bounds.facts = join(then_facts, else_facts)
            self.assigned = then_assigned & else_assigned
        if isinstance(cond, ir.Const) and not self.has_effects(cond):
            # `if DEBUG:` with a constant folds away (both branches were still checked).
            return list(then if cond.value else orelse), (then_exits if cond.value else else_exits)
        return [ir.If(s.span, cond, then, orelse)], then_exits and else_exits

    def loop_body(self, body: tuple[S.Stmt, ...], entry_facts: frozenset,
                  extra_facts: set, runs_once: bool = False, round: object = None
                  ) -> tuple[tuple[ir.Stmt, ...], bool]:
        """The body of a loop; ``round``: the counter of a ``range()`` loop whose bounds every
        thread shares (see :class:`.phases.Frame`), else None."""
        saved_assigned = set(self.assigned)
        self.bounds.facts = entry_facts | extra_facts
        self.depth += 1
        self.loop_depth += 1
        self.loop_broke.append(False)
        stmts, _ = self.block(body, "loop", runs_once, uniform=round is not None, round=round)
        broke = self.loop_broke.pop()
        self.loop_depth -= 1
        self.depth -= 1
        self.assigned = saved_assigned
        return stmts, broke

    def first_test_holds(self, cond: ir.Expr, facts: frozenset) -> bool:
        """Does a while loop's first test surely pass, by the ``facts`` that hold before the
        loop: a comparison of a value with a constant, or with a local whose value there is one
        (GPU Gems' scan over a runtime ``n``: ``d = n >> 1; while d > 0:`` and ``d = 1; while d <
        n:`` under ``assert n >= 2``)?  The body then surely runs once, and reaches its barrier."""
        if not isinstance(cond, ir.Compare) or cond.op not in _MIRRORED:
            return False
        sides = [(cond.left, cond.op, self.unique.entry_value(cond.right)),
                 (cond.right, _MIRRORED[cond.op], self.unique.entry_value(cond.left))]
        saved, self.bounds.facts = self.bounds.facts, facts
        try:
            return any(isinstance(c, int) and not isinstance(c, bool) and
                       _decided(self.bounds, x, op, c) for x, op, c in sides)
        finally:
            self.bounds.facts = saved

    def visit_While(self, s: S.While):
        bounds = self.bounds
        # A counter the body steps last (`i += block_dim.x * grid_dim.x`): its value on entry,
        # before the loop forgets it.
        stepped = stepped_counter(s)
        counter = self.vars.get(stepped[0]) if stepped is not None else None
        start = self.defs.single_def(counter) if counter is not None else None
        before = bounds.facts
        entry = kill(bounds.facts, self.loop_assigned_vars(s.body))
        bounds.facts = entry
        # The condition runs again after each iteration: it reads the body's assignments too.
        self.defs.enter_loop(self.loop_assigned_vars(s.body))
        cond = self.to_bool(self.expr(s.test, condition=True))
        # The condition (and its checks) ran before every iteration and before a normal exit.
        checked, bounds.pending = stable(bounds.pending), set()
        runs_once = self.unique.entry_value(cond) is True or self.first_test_holds(cond, before)
        self.unique.forget(self.loop_assigned_vars(s.body))
        extra: set = set()
        round = None
        if stepped is not None and counter is not None and start is not None:
            counted = self.counted_while(s, counter, start, stepped[1], cond)
            if counted is not None:
                extra, stop, step = counted
                # Every thread runs the rounds alike where the loop's values are the launch's
                # and nothing else ends it (`phase = 0; while phase < N: ...; phase += 1`): its
                # counter is one value in a round that a barrier ends (.phases.round_digits), as
                # a range()'s is.
                if isinstance(cond, ir.Compare):
                    round = self.unique.round_counter(counter, (start, stop, step))
        body, broke = self.loop_body(s.body, entry,
                                     bounds.facts_from(cond, True) | checked | extra, runs_once,
                                     round)
        if extra:
            assert counter is not None
            self.unique.leave_range_loop(counter)
        bounds.facts = entry if broke else entry | bounds.facts_from(cond, False) | checked
        infinite = isinstance(cond, ir.Const) and cond.value is True and not broke
        return [ir.While(s.span, cond, body)], infinite

    def counted_while(self, s: S.While, var: ir.Var, start: ir.Expr, step_syntax: S.Expr,
                      cond: ir.Expr) -> tuple[set, ir.Expr, ir.Expr] | None:
        """The facts of a counting ``while`` loop's body (see :mod:`.counted`), its ``stop``
        and its ``step``, its counter made the proofs' loop digit
        (:meth:`.unique.UniqueWrites.note_range_loop`); ``None``, and nothing noted, where the
        loop is not one: no ``var < stop`` among the conditions the loop requires, a ``stop``
        or ``start`` the body changes, a step not shown positive, or a step past ``stop`` that
        may wrap the counter around."""
        ty = var.ty
        if not (isinstance(ty, ir.ScalarType) and ty.info.is_int) or var.is_param:
            return None
        changed = {id(v) for v in self.loop_assigned_vars(s.body)}
        bound = _counter_bound(cond, var)
        if bound is None:
            return None
        stop, reach = bound
        if changed & (ir.variables_read(stop) | ir.variables_read(start)):
            return None
        step = self.expr(step_syntax)
        if isinstance(step, WeakConst):
            if not isinstance(step.value, int) or isinstance(step.value, bool):
                return None
            step = ir.Const(step.span, ty, step.value)
        step = self.materialize(step)
        bounds = self.bounds
        if not (isinstance(step.ty, ir.ScalarType) and step.ty.info.is_int) or \
                not self._positive_step(step):
            return None
        within = self._steps_within(var, stop, step, reach, start, s.span)
        if within is None:
            return None
        key = self.defs.key
        local = ir.Local(var.span, ty, var)
        extra = self._exact_loop_facts(local, start, step, stop)
        if bounds.is_nonneg(start):
            extra.add(NonNegative(key(local)))
        # The steps (the last statement, and any before a `continue`) are the loop's own.
        others = assigned_names(s.body) - {var.name}
        step_sign = 1 if isinstance(step, ir.Const) else 0
        self.unique.note_range_loop(var, start, step, step_sign, others, stop)
        return extra | within | {Less(key(local), key(stop))}, stop, step

    def _positive_step(self, step: ir.Expr) -> bool:
        """Is ``step >= 1`` proven: by the facts and the launch's limits, or, for a sum or
        product of positive values (`block_dim.x * grid_dim.x` in i32), once the launcher
        keeps it within its type (the no-wrap proofs' launch check)?"""
        bounds = self.bounds
        if bounds.is_positive(step):
            return True
        while isinstance(step, ir.Local):  # `stride = block_dim.x * grid_dim.x` before it
            value = self.defs.single_def(step.var)
            if value is None:
                return False
            step = value
        if not isinstance(step, ir.BinOp) or step.op not in ("+", "*"):
            return False
        if step.op == "*":
            parts = bounds.is_positive(step.left) and bounds.is_positive(step.right)
        else:
            parts = (bounds.is_positive(step.left) and bounds.is_nonneg(step.right)) or (
                bounds.is_nonneg(step.left) and bounds.is_positive(step.right))
        return parts and bounds.is_nonneg(step)  # nonnegative: it does not wrap

    def _scalar_param(self, e: ir.Expr) -> int | None:
        """The index of the integer parameter ``e`` is (through locals assigned once and
        widening casts), where the kernel never assigns it; else ``None``."""
        while True:
            if isinstance(e, ir.Cast) and is_widening(e):
                e = e.value
            elif isinstance(e, ir.Local) and not e.var.is_param and \
                    (defined := self.defs.single_def(e.var)) is not None:
                e = defined
            else:
                break
        if not (isinstance(e, ir.Local) and e.var.is_param and isinstance(e.ty, ir.ScalarType)
                and e.ty.info.is_int and self.defs.assign_counts.get(e.var.name, 0) == 0):
            return None
        return self.unique.param_index(e.var.name)

    def _steps_within(self, var: ir.Var, stop: ir.Expr, step: ir.Expr, reach: int,
                      start: ir.Expr, span) -> set | None:
        """Does the counter ``var``, from ``start`` and while ``var + reach < stop``, stay
        within its type when ``step`` is added, and ``var + reach`` with it: from their bounds
        (an empty set), or by a check the launcher makes of an array's extent, the launch
        shape's part of ``step`` kept from wrapping by its own, or of a parameter ``stop``'s
        value (the set of what the check then shows: ``stop`` below the type's limit); ``None``
        where neither shows it."""
        ty = var.ty
        assert isinstance(ty, ir.ScalarType) and isinstance(ty.info.max, int)
        bounds = self.bounds
        with bounds.without_facts():
            # The largest values as computed (a stop that may be negative is no larger).
            top, most = bounds.interval(stop).hi, bounds.interval(step).hi
            first = bounds.interval(start).hi
        if first + reach > ty.info.max:
            # `k + 1 < n` from a thread's coordinate k: the launcher keeps the largest k
            # of the launch that far below the limit (or `k + 1` could wrap and pass).
            tree = launch_tree(start, ("thread_idx", "block_idx", "block_dim", "grid_dim"),
                               ("+", "*"), self.defs.single_def) if self.is_kernel else None
            if tree is None:
                return None
            self.ctx.kernel.add_launch_check(IndexFits(
                tree, ty.info.max - reach, str(ty), start.span.line, start.span.col,
                start.span.end_col))
        local = self.defs.key(ir.Local(var.span, ty, var))
        if top - 1 + most + reach <= ty.info.max:
            return {Less(local, ConstKey(top - reach))}
        if not self.is_kernel:
            return None
        fits: list[tuple[LaunchExpr, ir.BinOp]] = []
        stop_tree = shape_tree(stop, self.unique.param_index, self.defs.single_def, fits)
        step_tree = shape_tree(step, self.unique.param_index, self.defs.single_def, fits)
        param = self._scalar_param(stop) if stop_tree is None else None
        if step_tree is None or (stop_tree is None and param is None):
            return None
        self.add_fits_checks(fits)
        if param is not None:
            # `while i < n:` with `n` a parameter, as CUDA C++ writes the grid-stride loop: the
            # launcher checks the value passed (a ValueError naming `n` when the counter
            # would wrap past it).
            total = Arith("+", ParamValue(param), step_tree)
            tree = Compare("<=", Arith("+", total, Const(reach)) if reach else total,
                           Const(ty.info.max + 1))
            self.ctx.kernel.add_launch_check(ParamCheck(tree, param, "", span.line,
                                                        counter=var.name))
        else:
            assert stop_tree is not None  # no parameter: the stop is a shape tree
            site = self.ctx.kernel.new_site(
                "assert", span, message=f"the while loop's counter '{var.name}' ({ty}) would "
                f"wrap around past its bound: an array this long needs an i64 counter "
                f"({var.name} = i64(...), or FlatLayout1D.uid())")
            tree = Compare("<=", Arith("+", Arith("+", stop_tree, step_tree), Const(reach)),
                           Const(ty.info.max + 1))
            self.ctx.kernel.add_launch_check(ShapeAssert(tree, site))
        # Checked before the kernel runs: stop <= max + 1 - step - reach, below the limit, and
        # the counter below stop - reach.
        bounds.launch_facts |= {Less(self.defs.key(stop), ConstKey(ty.info.max + 1 - reach))}
        return {Less(self.defs.key(stop), ConstKey(ty.info.max + 1 - reach)),
                Less(local, ConstKey(ty.info.max - 2 * reach))}

    def _exact_loop_facts(self, var: ir.Local, start: ir.Expr | None, step: ir.Expr | None,
                          stop: ir.Expr) -> set:
        """:class:`~.facts.Exact` facts of a loop's body: the variable (a value of the loop's
        own exact counter where ``start`` and ``step``, if any, are exact) and ``stop``."""
        from .wrapping import exact_value

        checks: list = []

        def exact(e: ir.Expr | None) -> bool:
            return e is None or exact_value(e, self.bounds.no_wrap.proven, self.defs.single_def,
                                            checks)

        out: set = set()
        if exact(start) and exact(step):
            out.add(Exact(self.defs.key(var)))
        if exact(stop):
            out.add(Exact(self.defs.key(stop)))
        for check in checks:
            self.ctx.kernel.add_launch_check(check)
        return out

    def visit_For(self, s: S.For):
        it = s.iter
        if isinstance(it, S.Call):
            if isinstance(it.func, S.Attribute) and it.func.attr in _LOOP_METHODS:
                sym = self.ctx.resolver.dotted(it.func.value) if not self.is_local_root(
                    it.func.value) else None
                if sym is not None and sym.kind == "gn" and sym.name in LAYOUTS:
                    return self.grid_stride(s, sym.name, it)
            sym = None
            if isinstance(it.func, S.Name) and it.func.id not in self.vars and \
                    it.func.id not in self.const_names:
                sym = self.ctx.resolver.name(it.func.id, it.func.span)
            entry = _registered(sym)
            if entry is not None and entry.namespace in ("builtins", "gpu_native") and \
                    entry.form == "loop":
                return getattr(self, f"for_{entry.name}")(s, it)
        return self.for_tuple(s, self.expr(it))

    def for_unroll(self, s: S.For, it: S.Call):
        """``for x in unroll(range(...), factor)``: a ``range`` loop with a hint for the device
        compiler (``#pragma unroll``); the simulator runs the loop as it is."""
        got = self.args(it, ("iterable", "factor"), 1, "unroll()")
        factor = self.const_int(got["factor"], "unroll()'s factor") if "factor" in got else 0
        if factor < 0:
            raise self.error(f"unroll()'s factor must be 1 or more (or left out to unroll "
                             f"fully), not {factor}", got["factor"].span)
        inner = got["iterable"]
        kind = self.range_call(inner)
        if kind is None:
            raise self.error("unroll() takes a range: `for i in unroll(range(n)):`", inner.span)
        assert isinstance(inner, S.Call)
        loop_of = self.for_reversed if kind == "reversed" else self.for_range
        stmts, exits = loop_of(S.For(s.span, s.target, inner, s.body), inner)
        loop = stmts[-1]
        assert isinstance(loop, ir.ForRange)
        if not factor:
            bounds = [b.value for b in (loop.start, loop.stop, loop.step)
                      if isinstance(b, ir.Const) and isinstance(b.value, int)]
            if len(bounds) != 3:
                raise self.error(
                    "unroll() unrolls fully only a loop of constant bounds", inner.span,
                    "give the bounds as constants, or a factor: `unroll(range(n), 4)`")
            trips = len(range(*bounds))
            if trips > R.UNROLL_LIMIT:
                raise self.error(f"unroll() unrolls fully at most {R.UNROLL_LIMIT} iterations, "
                                 f"not {trips}", inner.span,
                                 "give a factor: `unroll(range(n), 4)`")
        stmts[-1] = replace(loop, unroll=factor)
        return stmts, exits

    def range_call(self, e: S.Expr) -> str | None:
        """``"range"`` or ``"reversed"`` where ``e`` calls that builtin, else None."""
        if not isinstance(e, S.Call) or not isinstance(e.func, S.Name) or \
                e.func.id in self.vars or e.func.id in self.const_names:
            return None
        entry = _registered(self.ctx.resolver.name(e.func.id, e.func.span))
        if entry is None or entry.namespace != "builtins" or \
                entry.name not in ("range", "reversed"):
            return None
        return entry.name

    def for_reversed(self, s: S.For, it: S.Call):
        """``for x in reversed(range(...))``: the range's loop, its values last first.  The
        body's facts are the range's, since they say which values ``x`` takes, not in which
        order; the loop counts the values down from the range's length, so a runtime step's
        sign is Python's and no bound near the type's limit wraps."""
        if it.keywords or len(it.args) != 1:
            raise self.error("reversed() takes one argument: `for i in reversed(range(n)):`",
                             it.span)
        inner = it.args[0]
        if self.range_call(inner) != "range":
            raise self.error("reversed() in a kernel reverses a range: "
                             "`for i in reversed(range(n)):`", inner.span,
                             "write the loop over the range's values, last first: "
                             "`for i in reversed(range(start, stop, step)):`")
        assert isinstance(inner, S.Call)
        return self.for_range(S.For(s.span, s.target, inner, s.body), inner, reverse=True)

    def for_range(self, s: S.For, it: S.Call,
                  counter: S.Name | None = None, count_from: int = 0, reverse: bool = False):
        """``for x in range(...)``; with ``counter``, ``for i, x in enumerate(range(...))``:
        ``i`` (an ``i64``) is computed from ``x`` at the top of each iteration; with
        ``reverse``, ``for x in reversed(range(...))``."""
        if not isinstance(s.target, S.Name):
            raise self.error("the variable of a range() loop must be a single name",
                             s.target.span)
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
            ty = t if ty is None else self.promoted(ty, t, v.span)
        for v in values:
            if isinstance(v, WeakConst):
                if not isinstance(v.value, int):
                    raise self.error("range() arguments must be integers", v.span)
                lit = self.scalar_of(self.materialize(v))
                if ty is not None and ty.info.is_int and not ty.info.is_signed and \
                        ty.info.bits == 64 and v.value < 0:
                    raise self.error(
                        f"this range() over {ty} values has the negative bound {v.value}, "
                        f"which no {ty} holds", v.span,
                        "count down with `for i in reversed(range(n))`, or give the loop a "
                        "signed type: `range(i64(n) - 1, -1, -1)`")
                ty = lit if ty is None else self.promoted_literal(ty, v.value, v.span)
        assert ty is not None
        self._refuse_wrapping_countdown(values)
        ty = self._widened_loop_type(s.target.id, ty)
        start, stop, step = (self.coerce(v, ty, "range()", explicit=True) for v in values)
        prelude: list[ir.Stmt] = []
        if counter is not None:
            # The counter is computed from the loop variable: start and step are read again.
            start, step = (v if isinstance(v, ir.Const) else self.temporary(v, prelude)
                           for v in (start, step))
        step_sign = 0
        if isinstance(step, ir.Const):
            if step.value == 0:
                raise self.error("range() step must not be zero", step.span)
            step_sign = 1 if step.value > 0 else -1
        var = self.loop_var(s.target, ty)
        bounds = self.bounds
        bounds.commit()
        entry = kill(bounds.facts, self.loop_assigned_vars(s.body) | {var})
        self.defs.enter_loop(self.loop_assigned_vars(s.body))
        # `for j in range(tid, n, K)` with 0 <= tid < K: threads visit disjoint values.
        # Only the body's own assignments matter: one before the loop does not reach it.
        self.unique.note_range_loop(var, start, step, step_sign, assigned_names(s.body), stop)
        extra: set = set()
        # A step the launch keeps positive (range(tid, n, block_dim.x)) bounds the variable as a
        # positive literal does: the generated loop runs its body only while `var < stop`.
        if step_sign > 0 or (step_sign == 0 and bounds.is_positive(step)):
            key = self.defs.key
            extra.add(Less(key(ir.Local(var.span, var.ty, var)), key(stop)))
            # The generated loop never steps past `stop`: each value the variable takes is
            # start + step * k exactly where those are exact (for the ownership proofs).
            extra |= self._exact_loop_facts(ir.Local(var.span, var.ty, var), start, step, stop)
            if bounds.is_nonneg(start):
                extra.add(NonNegative(key(ir.Local(var.span, var.ty, var))))
            # And below a constant where stop has a known bound, from its definition alone
            # (no fact of the entry, which the body may end): `range(0, steps + 1, 2)` with
            # `steps = (a.shape[1] + 7) // 8` keeps `turn * 8` from wrapping.
            with bounds.without_facts():
                limit = bounds.upper(stop) if bounds.is_nonneg(stop) else None
            if limit is not None:
                # With a constant start and step, the last value the loop reaches: `range(0,
                # 32, 8)` ends at 24, so `ty + j` stays below 32 where `ty < 8`.
                first, stride = constant_value(start), constant_value(step)
                if isinstance(first, int) and isinstance(stride, int) and stride > 1 and \
                        not isinstance(stride, bool) and limit > first:
                    limit = first + (limit - 1 - first) // stride * stride + 1
                extra.add(Less(key(ir.Local(var.span, var.ty, var)), ConstKey(limit)))
        elif step_sign < 0:
            # C's `for (m = B - 1; m >= 0; m--)`: the body runs while `stop < var <= start`,
            # the values start + step * k exactly (the generated counter never wraps).  Each
            # fact names values the body does not change (it holds in every iteration).
            key = self.defs.key
            local = ir.Local(var.span, var.ty, var)
            rebound = {id(v) for v in self.loop_assigned_vars(s.body)}
            if not rebound & ir.variables_read(stop):
                extra.add(Less(key(stop), key(local)))
            extra |= self._exact_loop_facts(local, start, step, stop)
            if bounds.is_nonneg(stop) or (isinstance(stop, ir.Const) and stop.value >= -1):
                extra.add(NonNegative(key(local)))
            with bounds.without_facts():
                highest = bounds.upper(start) if bounds.is_nonneg(start) else None
            if highest is not None:
                extra.add(Less(key(local), ConstKey(highest + 1)))
            if isinstance(start, ir.BinOp) and start.op == "-" and \
                    isinstance(start.right, ir.Const) and start.right.value == 1 and \
                    bounds.is_nonneg(start.left) and not rebound & ir.variables_read(start):
                # `range(len(a) - 1, -1, -1)`: the variable is below `len(a)` (which, being
                # nonnegative, does not wrap when one is taken from it).
                extra.add(Less(key(local), key(start.left)))
        before = set(self.assigned)
        self.assigned.add(var.name)
        head: list[ir.Stmt] = []
        counter_var = None
        if counter is not None:
            head, counter_var = self.enumerate_counter(counter, var, start, step, count_from)
        first, last = self.unique.entry_value(start), self.unique.entry_value(stop)
        runs_once = isinstance(first, int) and isinstance(last, int) and (
            first < last if step_sign > 0 else step_sign < 0 and first > last)
        changed = set(self.loop_assigned_vars(s.body)) | {var}
        if counter_var is not None:
            changed.add(counter_var)
        self.unique.forget(changed)
        # Every thread runs the rounds alike where the bounds are launch-uniform: its counter
        # is then one value in a round that a barrier ends (.phases.round_digits).
        round = self.unique.round_counter(var, (start, stop, step))
        body, _ = self.loop_body(s.body, entry, extra, runs_once, round)
        self.unique.leave_range_loop(var)
        if counter_var is not None:
            self.defs.forget(counter_var)
        self.assigned = before
        bounds.facts = entry
        stmt = ir.ForRange(s.span, var, start, stop, step, step_sign, (*head, *body),
                           counter_fits=bounds.counter_fits(stop, step, ty), reverse=reverse)
        if step_sign == 0:
            site = self.ctx.kernel.new_site("assert", it.span,
                                            message="range() arg 3 must not be zero")
            zero = ir.Const(it.span, ty, 0)
            return [*prelude, ir.Assert(it.span, ir.Compare(it.span, ir.BOOL, "!=", step, zero),
                                        site), stmt], False
        return [*prelude, stmt], False

    def enumerate_counter(self, counter: S.Name, var: ir.Var, start: ir.Expr,
                          step: ir.Expr, count_from: int) -> tuple[list[ir.Stmt], ir.Var]:
        """``i = (x - start) // step + count_from`` in ``i64``, at the top of the body."""
        span = counter.span
        x = self.coerce(ir.Local(span, var.ty, var), ir.I64, "enumerate()", explicit=True)
        first = self.coerce(start, ir.I64, "enumerate()", explicit=True)
        value = x
        if not (isinstance(first, ir.Const) and first.value == 0):
            value = ir.BinOp(span, ir.I64, "-", value, first)
        if not (isinstance(step, ir.Const) and step.value == 1):
            stride = self.coerce(step, ir.I64, "enumerate()", explicit=True)
            value = ir.BinOp(span, ir.I64, "//", value, stride)  # step != 0: checked first
        if count_from:
            value = ir.BinOp(span, ir.I64, "+", value, ir.Const(span, ir.I64, count_from))
        self.loop_var(counter, ir.I64)
        head = self.assign_name_value(counter, value, span)
        counter_var = self.vars[counter.id]
        if value is x:
            # enumerate(range(n)): the counter is the loop variable, for the proofs too.
            self.defs.fix(counter_var, x)
        return head, counter_var

    def for_enumerate(self, s: S.For, it: S.Call):
        got = self.args(it, ("iterable", "start"), 1, "enumerate()")
        count_from = self.const_int(got["start"], "enumerate()'s start") if "start" in got else 0
        target = s.target
        if not isinstance(target, S.Tuple) or len(target.elts) != 2 or not isinstance(
                target.elts[0], S.Name):
            raise self.error("enumerate() yields pairs: write `for i, x in enumerate(...)`",
                             target.span)
        inner = got["iterable"]
        kind = self.range_call(inner)
        if kind == "reversed":
            raise self.error("enumerate() does not count a reversed range in kernels",
                             inner.span, "count in a variable of your own (`k = 0` before the "
                             "loop, `k += 1` at the end of its body)")
        if kind == "range":
            assert isinstance(inner, S.Call)
            return self.for_range(S.For(s.span, target.elts[1], inner, s.body), inner,
                                  target.elts[0], count_from)
        loop = S.For(s.span, target.elts[1], inner, s.body)
        return self.for_tuple(loop, self.expr(inner), target.elts[0], count_from)

    def for_zip(self, s: S.For, it: S.Call):
        if it.keywords:
            raise self.error("zip() takes no keyword arguments in kernels", it.span)
        values = [self.expr(a) for a in it.args]
        for v in values:
            if not self.is_tuple(v):
                raise self.error("zip() in kernels combines tuples (the loop is unrolled)",
                                 v.span, "for ranges, loop over one range and index the rest")
        from .expressions import TupleValue

        out: list[ir.Stmt] = []
        items = [self.tuple_items(self.settle(v, out) if isinstance(v, TupleValue)
                                  else self.temporary(v, out)) for v in values]
        rows = tuple(TupleValue(it.span, ir.VOID, row) for row in zip(*items))
        loop_stmts, exits = self.for_tuple(s, TupleValue(it.span, ir.VOID, rows))
        return [*out, *loop_stmts], exits

    def grid_stride(self, s: S.For, layout: str, it: S.Call):
        if not isinstance(s.target, S.Name):
            raise self.error("the loop variable must be a single name", s.target.span)
        if layout != "FlatLayout1D":
            raise self.error("grid_stride() is defined on FlatLayout1D", it.func.span)
        self.require_layout("FlatLayout1D", 1, it.span)
        if it.keywords or len(it.args) != 1:
            raise self.error("grid_stride(n) takes one argument", it.span)
        stop = self.expr(it.args[0])
        if not isinstance(stop, WeakConst) and self.scalar_of(stop) == ir.U64:
            # The loop counts in i64: a u64 bound past its range (2**63) is as far as it goes,
            # where converting it would wrap to a negative bound and run no iteration.
            top = ir.Const(stop.span, ir.U64, int(ir.I64.info.max))
            stop = ir.MathCall(stop.span, ir.U64, "min", (stop, top))
        stop = self.coerce(stop, ir.I64, "grid_stride(n)", explicit=not isinstance(
            stop, WeakConst))
        if not self.scalar_of(stop).info.is_int:
            raise self.error("grid_stride(n) needs an integer", stop.span)
        var = self.loop_var(s.target, ir.I64)
        self.defs.grid_stride_vars.add(id(var))
        self.traits.note_uid("grid")
        bounds = self.bounds
        bounds.commit()
        entry = kill(bounds.facts, self.loop_assigned_vars(s.body) | {var})
        self.defs.enter_loop(self.loop_assigned_vars(s.body))
        local = ir.Local(var.span, var.ty, var)
        key = self.defs.key
        extra = {Less(key(local), key(stop)), NonNegative(key(local)),
                 *self._exact_loop_facts(local, None, None, stop)}
        before = set(self.assigned)
        self.assigned.add(var.name)
        self.unique.forget(self.loop_assigned_vars(s.body) | {var})
        # For the ownership proofs the variable is uid + k * (grid_dim.x * block_dim.x).
        self.unique.forms.enter_grid_stride(var, var.name in assigned_names(s.body))
        body, _ = self.loop_body(s.body, entry, extra)
        self.unique.leave_range_loop(var)
        self.assigned = before
        bounds.facts = entry
        return [ir.GridStride(s.span, var, stop, body)], False

    def _refuse_wrapping_countdown(self, values: list[ir.Expr]) -> None:
        """``range(n - 1, -1, -1)`` with ``n`` unsigned: at ``n == 0`` the start wraps (to
        4294967295 for a u32) and the loop runs 2**32 times where Python's and C's run none
        (C's `int i = n - 1` is -1).  Refused unless the bounds show ``n >= 1``."""
        start, stop, step = values
        if isinstance(start, WeakConst) or not isinstance(start, ir.BinOp) or \
                start.op != "-" or not isinstance(start.right, ir.Const):
            return
        ty = self.scalar_of(start)
        c = start.right.value
        if not (ty.info.is_int and not ty.info.is_signed) or type(c) is not int or c <= 0:
            return
        negative = [v for v in (stop, step) if isinstance(v, ir.Const) and
                    type(v.value) is int and v.value < 0]
        if not negative or self.bounds.at_least(start.left, c):
            return
        raise self.error(
            f"the start of this range() is a {ty} difference, which wraps where it would be "
            f"negative (0 - {c} is {ty.info.max + 1 - c} in {ty}): the loop would count down "
            "from there where Python's and C's loops run no iteration", start.span,
            "count down with `for i in reversed(range(n))`, or give the loop a signed type: "
            f"`range(i64(n) - {c}, -1, -1)`, or guard it (`if n >= {c}:`)")

    def _widened_loop_type(self, name: str, ty: ir.ScalarType) -> ir.ScalarType:
        """The type a range() of ``ty`` counts in when its variable ``name`` exists already:
        that variable's integer type where it holds every value of ``ty`` (an ``i64`` reused
        by a loop over ``i32`` bounds, as Python reuses the name), else ``ty``."""
        var = self.vars.get(name) or self.decl.param_vars.get(name)
        if var is None or not isinstance(var.ty, ir.ScalarType) or not var.ty.info.is_int:
            return ty
        have, wanted = var.ty.info, ty.info
        return var.ty if have.min <= wanted.min and wanted.max <= have.max else ty

    def loop_var(self, target: S.Name, ty: ir.ScalarType) -> ir.Var:
        self.unbind_constant(target.id)
        var = self.vars.get(target.id) or self.decl.param_vars.get(target.id)
        if var is not None:
            self.defs.forget(var)
        if var is None:
            return self.new_var(target.id, ty, target.span)
        if var.ty != ty:
            raise self.error(f"the loop variable '{target.id}' is {var.ty} but this range() "
                             f"yields {ty}", target.span, "use a new name for this loop")
        return var

    def visit_With(self, s: S.With):
        if len(s.items) != 1 or not isinstance(s.items[0], S.Call) or s.items[0].args:
            raise self.error("the only context manager in kernels is `with unsafe():`", s.span)
        call = s.items[0]
        sym = self.ctx.resolver.dotted(call.func) if isinstance(
            call.func, (S.Name, S.Attribute)) and not self.is_local_root(call.func) else None
        entry = _registered(sym)
        if entry is None or entry.form != "context":
            raise self.error("the only context manager in kernels is `with unsafe():`", s.span)
        self.unsafe_depth += 1
        body, exits = self.block(s.body, "with")
        self.unsafe_depth -= 1
        return list(body), exits


    def loop_assigned_vars(self, body: tuple[S.Stmt, ...]) -> set[ir.Var]:
        """The variables a loop body assigns (what is known of them ends at the loop)."""
        names = assigned_names(body)
        return {v for n, v in {**self.decl.param_vars, **self.vars}.items() if n in names}


def _counter_bound(cond: ir.Expr, var: ir.Var) -> tuple[ir.Expr, int] | None:
    """``(stop, c)`` where ``cond`` requires ``var + c < stop`` (``c`` a nonnegative constant,
    0 for ``var < stop``; ``cond`` itself, or one of the operands of a top-level ``and``),
    ``var`` read as it is or through a widening cast."""
    from ..analysis.ranges import is_widening

    def reach(e: ir.Expr) -> int | None:
        if isinstance(e, ir.Cast) and is_widening(e):
            e = e.value
        if isinstance(e, ir.BinOp) and e.op == "+" and isinstance(e.right, ir.Const) and \
                type(e.right.value) is int and e.right.value >= 0:
            inner = reach(e.left)
            return None if inner is None else inner + e.right.value
        return 0 if isinstance(e, ir.Local) and e.var is var else None

    parts = cond.values if isinstance(cond, ir.BoolOp) and cond.op == "and" else (cond,)
    for part in parts:
        if isinstance(part, ir.Compare):
            if part.op == "<" and (c := reach(part.left)) is not None:
                return part.right, c
            if part.op == ">" and (c := reach(part.right)) is not None:
                return part.left, c
    return None


# A comparison read from its other side: `1 < n` is `n > 1`.
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}


def _decided(bounds, x: ir.Expr, op: str, c: int) -> bool:
    """Is ``x op c`` proven by the facts ``bounds`` holds?"""
    if op in (">", ">="):
        least = c + 1 if op == ">" else c
        return bounds.at_least(x, least) if least >= 1 else bounds.interval(x).lo >= least
    if op in ("<", "<="):
        most = c - 1 if op == "<" else c
        r = bounds.interval(x)
        return r.lo <= r.hi <= most
    r = bounds.interval(x)  # "!="
    return (c == 0 and bounds.at_least(x, 1)) or r.hi < c or r.lo > c
