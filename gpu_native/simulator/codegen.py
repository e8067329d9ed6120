"""Typed IR → vectorised Python (one function per kernel and per device function).

Every local variable of the kernel becomes a Python local of the same name holding a NumPy scalar
or lane vector (a ``vec3f`` ...: a tuple of such values, one per component, see :mod:`.vectors`); ``_gn_m`` is the mask of executing lanes (see :mod:`.machine`); ``_gn`` is the
chunk.  The generated code's own names all start with ``_gn`` (see :meth:`FunctionEmitter.name`
for how a kernel's names are kept apart from them).  Control flow becomes mask arithmetic: both sides of an ``if`` run under complementary
masks, loops run while any lane is still in them, ``break``/``continue``/``return`` move lanes out
of the mask.  Short-circuit ``and``/``or`` and conditional expressions evaluate their later
operands only on the lanes that need them when those operands can fail or have effects.

The source is generated as text with one user :class:`~gpu_native.errors.SourceSpan` per line,
parsed with :mod:`ast`, and every node is given the user's line and columns before it is compiled
under the user's file name, so tracebacks, ``pdb`` breakpoints (``b mykernels.py:12``) and
coverage see the kernel's own lines.  That compile step, and the namespace of helpers and bound
constants the generated functions share, are :class:`~.builder.ProgramBuilder`'s; this module
writes the functions' text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .. import ir
from ..errors import SourceSpan
from ..lang import registry
from ..lang.entry import spelling
from ..nodes import fields
from . import philox
from .builder import ProgramBuilder

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
# The barriers by scope ("block", "warp", "grid"), as the IR's Barrier names them.
_BARRIERS = {e.value: e for e in registry.by_form("statement") if e.check == "barrier"}
# sync_threads_count / _and / _or by the IR's BarrierVote.op ("count", "and", "or").
_BARRIER_VOTES = {e.op: e for e in registry.by_form("call") if e.check == "call_barrier_vote"}
# The types of the values a local holds (arrays, unique ids and generators are not values).
_VALUES = (ir.ScalarType, ir.VectorType, ir.TupleType, ir.StructType)


# A loop that writes no memory and has run this many rounds is watched for a round that leaves
# everything as it was (Machine.spin_check): with memory unchanged it would run forever.
_SPIN_AFTER = 1024
# What such a loop may hold: values computed from locals and memory, with no effect.
_PURE_EXPRS = (ir.Const, ir.Local, ir.BinOp, ir.UnaryOp, ir.Compare, ir.BoolOp, ir.Select,
               ir.Cast, ir.ArrayRef, ir.Load, ir.Shape, ir.Special, ir.LaneId, ir.UidComponent,
               ir.MathCall)
_PURE_STMTS = (ir.Assign, ir.ExprStmt, ir.If, ir.Break, ir.Continue, ir.Fence)


def _spin_state(s: ir.While) -> tuple[ir.Var, ...] | None:
    """The variables of a ``while`` loop that writes no memory and has no other effect (a
    thread's wait on a flag: ``while flag.atomic_ref(0).load() == 0: pass``): its state, which
    with the memory it reads decides every round; None for any other loop.  In the simulator,
    where the threads of a chunk run in lockstep and the blocks one chunk after another, no
    other thread runs while it waits, so a round that leaves that state as it was repeats
    forever (on the GPU, another thread may end the wait)."""
    assigned: dict[int, ir.Var] = {}
    for node in walk(s):
        if node is s:
            continue
        if isinstance(node, ir.Atomic):
            if node.op != "load":
                return None
            continue
        if isinstance(node, ir.Stmt):
            if not isinstance(node, _PURE_STMTS):
                return None
            if isinstance(node, ir.Assign):
                if not isinstance(node.var.ty, ir.ScalarType):
                    return None
                assigned[id(node.var)] = node.var
        elif not isinstance(node, _PURE_EXPRS):
            return None
    return tuple(assigned.values())


def children(node):
    """The expressions and statements directly inside an IR node (not a callee's body)."""
    for name in fields(node):
        v = getattr(node, name)
        if isinstance(v, (ir.Expr, ir.Stmt)):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, (ir.Expr, ir.Stmt)):
                    yield x
                elif isinstance(x, ir.Operand):
                    yield x.array
                    yield from (*x.indices, *x.last)
                elif isinstance(x, tuple):
                    yield from (y for y in x if isinstance(y, (ir.Expr, ir.Stmt)))


def walk(node):
    yield node
    for c in children(node):
        yield from walk(c)


def _contains(node, types) -> bool:
    return any(isinstance(n, types) for n in walk(node))


def is_pure(e: ir.Expr) -> bool:
    """Can ``e`` be evaluated on every lane (no memory access, failure or effect)?"""
    for n in walk(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.Call, ir.WarpOp, ir.BarrierVote, ir.RandomDraw)):
            return False
        if isinstance(n, ir.BinOp) and n.zero_check is not None:
            return False
    return True


def _may_shrink(s: ir.Stmt) -> bool:
    """Can executing ``s`` take lanes out of the mask (at the kernel's top level)?"""
    for n in walk(s):
        if isinstance(n, (ir.Return, ir.TailExit, ir.Assert, ir.Call, ir.Break, ir.Continue)):
            return True
        if isinstance(n, (ir.Load, ir.Store, ir.Atomic)) and any(
                c is not None for c in n.checks):
            return True
        if isinstance(n, ir.BinOp) and n.zero_check is not None:
            return True
        if isinstance(n, ir.RandomDraw) and n.check is not None:
            return True
    return False


def _may_empty(s: ir.Stmt) -> bool:
    """Can ``s`` leave no lane executing (so the rest of its block should be skipped)?"""
    return isinstance(s, (ir.If, ir.While, ir.ForRange, ir.GridStride)) and _contains(
        s, (ir.Break, ir.Continue, ir.Return))


class FunctionEmitter:
    """Emits one kernel or device function as Python source lines, each with its user span."""

    def __init__(self, prog: ProgramBuilder, fn, is_kernel: bool, pyname: str):
        self.prog = prog
        self.fn = fn
        self.is_kernel = is_kernel
        self.pyname = pyname
        self.span: SourceSpan = fn.span or prog.kernel.span
        self.file = self.span.file
        self.lines: list[tuple[int, str, SourceSpan]] = []
        self.indent = 1
        self.counter = 0
        self.loops: list[tuple[str, str]] = []
        self.names: dict[int, str] = {}
        self.used: set[str] = set()

    # ---- plumbing ----

    def line(self, text: str, span: SourceSpan | None) -> None:
        self.lines.append((self.indent, text, span or self.span))

    def tmp(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"_gn_{prefix}{self.counter}"

    def name(self, var: ir.Var) -> str:
        """The Python name of a variable.  Every name the generated code and its namespace
        introduce is ``_gn`` or starts with ``_gn_``; a kernel's names that start with ``_gn``
        become ``_gnu_<name>`` and the checker's temporaries ``$t<N>`` become ``_gnc_t<N>``, so
        no kernel name can meet one of them."""
        n = self.names.get(id(var))
        if n is None:
            base = var.name
            if base.startswith(ir.TEMP_PREFIX):
                base = "_gnc_" + base[len(ir.TEMP_PREFIX):]
            elif base.startswith("_gn"):
                base = "_gnu_" + base
            n, k = base, 1
            while n in self.used:
                k += 1
                n = f"{base}_{k}"
            self.used.add(n)
            self.names[id(var)] = n
        return n

    def simple(self, text: str, span: SourceSpan, prefix: str = "v") -> str:
        """``text`` as a name (assigned to a temporary unless it is one already)."""
        if _IDENT.match(text):
            return text
        t = self.tmp(prefix)
        self.line(f"{t} = {text}", span)
        return t

    def render(self) -> tuple[str, list[SourceSpan]]:
        params = ["_gn"] if self.is_kernel else ["_gn", "_gn_m"]
        params += [self.name(p) for p in self.fn.params]
        out = [f"def {self.pyname}({', '.join(params)}):"]
        spans = [self.span]
        for indent, text, span in self.lines:
            out.append("    " * indent + text)
            spans.append(span)
        return "\n".join(out) + "\n", spans

    # ---- functions ----

    def emit_function(self) -> None:
        fn = self.fn
        sp = self.span
        for p in fn.params:
            self.name(p)
        if self.is_kernel:
            self.line("_gn_m = None", sp)
        else:
            self.line("if _gn_m is False:", sp)
            self.line(f"    return {self.prog.zero(fn.ret)}", sp)
            if fn.ret != ir.VOID:
                self.line(f"_gn_r = {self.prog.zero(fn.ret)}", sp)
        for var in fn.locals:
            if isinstance(var.ty, _VALUES) and not var.is_param:
                self.line(f"{self.name(var)} = {self.prog.zero(var.ty)}", var.span)
        if self.is_kernel:
            for k, decl in enumerate(fn.shared):
                self.line(f"{self.name(decl.var)} = _gn.shared[{k}]", decl.var.span)
        for decl in fn.local_arrays:
            var = decl.var
            spec = self.prog.bind("la", ("local", id(var)),
                                  (var.name, var.ty.elem.info, tuple(var.ty.shape)))
            self.line(f"{self.name(var)} = _gn.new_local({spec}, {self.is_kernel})", var.span)
        if self.is_kernel:
            self.top_level(fn.body)
        else:
            self.block(fn.body)
            if fn.ret != ir.VOID:
                self.line("return _gn_r", sp)

    def top_level(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """The kernel body: after a statement that may drop lanes, compact the chunk."""
        values = [self.name(v) for v in (*self.fn.params, *self.fn.locals)
                  if isinstance(v.ty, _VALUES)]
        for k, s in enumerate(stmts):
            self.statement(s)
            if k + 1 < len(stmts) and _may_shrink(s):
                sp = s.span
                self.line("if _gn_m is not None:", sp)
                self.line("    if _gn_m is False:", sp)
                self.line("        return", sp)
                targets = ", ".join(["_gn_m", *values])
                self.line(f"    {targets}, = _gn.compact({targets})", sp)

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        if not stmts:
            self.line("pass", self.span)
            return
        opened = 0
        for k, s in enumerate(stmts):
            self.statement(s)
            if k + 1 < len(stmts) and _may_empty(s):
                self.line("if _gn_m is not False:", s.span)
                self.indent += 1
                opened += 1
        self.indent -= opened

    def nested(self, stmts: tuple[ir.Stmt, ...]) -> None:
        self.indent += 1
        self.block(stmts)
        self.indent -= 1

    def statement(self, s: ir.Stmt) -> None:
        _STMT[type(s)](self, s)

    # ---- statements ----

    def emit_Assign(self, s: ir.Assign) -> None:
        v = self.expr(s.value, "_gn_m")
        n = self.name(s.var)
        self.line(f"{n} = {_where(s.var.ty)}(_gn_m, {v}, {n})", s.span)

    def array(self, ref: ir.ArrayRef) -> str:
        if isinstance(ref.var, ir.ConstVar):  # a module-level constant array: the launch's
            return f"_gn.consts[{self.prog.const_index[id(ref.var)]}]"
        return self.name(ref.var)

    def emit_Store(self, s: ir.Store) -> None:
        v = self.expr(s.value, "_gn_m")
        if not is_pure(s.value) or any(not is_pure(i) for i in s.indices):
            v = self.simple(v, s.span)
        idx = [self.expr(i, "_gn_m") for i in s.indices]
        loc = self.prog.location(s.span)
        field = f", {s.field!r}" if s.field else ""
        self.line(f"_gn_m = _gn.store({self.array(s.array)}, ({', '.join(idx)},), "
                  f"{s.checks!r}, {v}, _gn_m, {loc}{field})", s.span)

    def emit_ExprStmt(self, s: ir.ExprStmt) -> None:
        self.expr(s.value, "_gn_m")

    def emit_MatrixOp(self, s: ir.MatrixOp) -> None:
        # Each operand travels as (array, indices, checks, last indices, last checks).
        parts = []
        for o in s.operands:
            idx = [self.simple(self.expr(i, "_gn_m"), s.span) for i in o.indices]
            last = [self.simple(self.expr(i, "_gn_m"), s.span) for i in o.last]
            parts.append(f"({self.array(o.array)}, ({''.join(i + ', ' for i in idx)}), "
                         f"{o.checks!r}, ({''.join(i + ', ' for i in last)}), "
                         f"{o.last_checks!r})")
        loc = self.prog.location(s.span)
        self.line(f"_gn_m = _gn.matrix({s.op!r}, ({''.join(p + ', ' for p in parts)}), "
                  f"{s.params!r}, _gn_m, {loc})", s.span)

    def emit_If(self, s: ir.If) -> None:
        c = self.simple(self.expr(s.cond, "_gn_m"), s.span, "c")
        saved = self.tmp("s")
        self.line(f"{saved} = _gn_m", s.span)
        self.line(f"_gn_m = _gn_and({saved}, {c})", s.span)
        self.line("if _gn_m is not False:", s.span)
        self.nested(s.then)
        if s.orelse:
            then = self.tmp("s")
            self.line(f"{then} = _gn_m", s.span)
            self.line(f"_gn_m = _gn_andnot({saved}, {c})", s.span)
            self.line("if _gn_m is not False:", s.span)
            self.nested(s.orelse)
            self.line(f"_gn_m = _gn_or({then}, _gn_m)", s.span)
        else:
            self.line(f"_gn_m = _gn_or(_gn_m, _gn_andnot({saved}, {c}))", s.span)

    def loop(self, span: SourceSpan, cond: Callable[[], str], before_body: Callable[[], None],
             body: tuple[ir.Stmt, ...], after_body: Callable[[], None] | None = None,
             watch: tuple[ir.Var, ...] | None = None) -> None:
        """A loop; ``watch``: the variables of a loop that writes no memory (see
        :func:`_spin_state`), whose rounds are compared once it has run long enough."""
        lm, out, cont = self.tmp("lm"), self.tmp("x"), self.tmp("k")
        it, snap = self.tmp("it"), self.tmp("snap")
        state = f"({''.join(self.name(v) + ', ' for v in watch or ())})"
        self.line(f"{lm} = _gn_m", span)
        self.line(f"{out} = False", span)
        if watch is not None:
            self.line(f"{it} = 0", span)
        self.line("while True:", span)
        self.indent += 1
        self.line(f"_gn_m = {lm}", span)
        c = self.simple(cond(), span, "c")
        self.line(f"{out} = _gn_or({out}, _gn_andnot(_gn_m, {c}))", span)
        self.line(f"_gn_m = _gn_and(_gn_m, {c})", span)
        self.line("if _gn_m is False:", span)
        self.line("    break", span)
        self.line(f"{cont} = False", span)
        if watch is not None:
            self.line(f"{it} += 1", span)
            self.line(f"{snap} = _gn.spin_state({lm}, {state}) if {it} > {_SPIN_AFTER} else None",
                      span)
        before_body()
        self.loops.append((out, cont))
        self.block(body)
        self.loops.pop()
        self.line(f"{lm} = _gn_or(_gn_m, {cont})", span)
        if watch is not None:
            loc = self.prog.location(span)
            self.line(f"if {snap} is not None:", span)
            self.line(f"    {lm} = _gn.spin_check({snap}, {lm}, {state}, {loc})", span)
        if after_body is not None:
            after_body()
        self.indent -= 1
        self.line(f"_gn_m = {out}", span)

    def emit_While(self, s: ir.While) -> None:
        self.loop(s.span, lambda: self.expr(s.cond, "_gn_m"), lambda: None, s.body,
                  watch=_spin_state(s))

    def emit_ForRange(self, s: ir.ForRange) -> None:
        # The trip count is computed exactly up front and the variable derived from the
        # iteration number, so a range next to its type's limit never wraps (Python's range).
        # A reversed range takes its values from the last one back.
        sp = s.span
        stop, step, start = self.tmp("stop"), self.tmp("step"), self.tmp("start")
        count, k = self.tmp("n"), self.tmp("i")
        self.line(f"{stop} = {self.expr(s.stop, '_gn_m')}", sp)
        self.line(f"{step} = {self.expr(s.step, '_gn_m')}", sp)
        self.line(f"{start} = {self.expr(s.start, '_gn_m')}", sp)
        self.line(f"{count} = _gn_range_count({start}, {stop}, {step})", sp)
        self.line(f"{k} = _gn_u64(0)", sp)
        var = self.name(s.var)
        value = (f"_gn_range_value_back({start}, {step}, {count}, {k})" if s.reverse
                 else f"_gn_range_value({start}, {step}, {k})")
        self.loop(sp, lambda: f"({k} < {count})",
                  lambda: self.line(f"{var} = _gn_where(_gn_m, {value}, {var})", sp), s.body,
                  lambda: self.line(f"{k} = {k} + _gn_u64(1)", sp))

    def emit_GridStride(self, s: ir.GridStride) -> None:
        sp = s.span
        stop, stride, i = self.tmp("stop"), self.tmp("step"), self.tmp("i")
        self.line(f"{stop} = {self.expr(s.stop, '_gn_m')}", sp)
        self.line(f"{stride} = _gn_i64(_gn.gdim[0]) * _gn_i64(_gn.bdim[0])", sp)
        self.line(f"{i} = _gn.uid(0)", sp)
        var = self.name(s.var)
        self.loop(sp, lambda: f"({i} < {stop})",
                  lambda: self.line(f"{var} = _gn_where(_gn_m, {i}, {var})", sp), s.body,
                  lambda: self.line(f"{i} = {i} + {stride}", sp))

    def emit_Break(self, s: ir.Break) -> None:
        out, _ = self.loops[-1]
        self.line(f"{out} = _gn_or({out}, _gn_m)", s.span)
        self.line("_gn_m = False", s.span)

    def emit_Continue(self, s: ir.Continue) -> None:
        _, cont = self.loops[-1]
        self.line(f"{cont} = _gn_or({cont}, _gn_m)", s.span)
        self.line("_gn_m = False", s.span)

    def emit_Return(self, s: ir.Return) -> None:
        if self.is_kernel:
            self.line("_gn.exit(_gn_m)", s.span)
        elif s.value is not None:
            v = self.expr(s.value, "_gn_m")
            self.line(f"_gn_r = {_where(s.value.ty)}(_gn_m, {v}, _gn_r)", s.span)
        self.line("_gn_m = False", s.span)

    def emit_Assert(self, s: ir.Assert) -> None:
        if s.at_launch:
            return  # the launcher checks it, on every backend
        c = self.expr(s.cond, "_gn_m")
        self.line(f"_gn_m = _gn.check_assert(_gn_m, {c}, {s.site})", s.span)

    def emit_Barrier(self, s: ir.Barrier) -> None:
        loc = self.prog.location(s.span)
        op = _BARRIERS[s.scope].sim
        if s.scope != "warp":
            self.line(f"_gn.{op}(_gn_m, {loc})", s.span)
        else:
            mask = self.expr(s.mask, "_gn_m") if s.mask is not None else "0xFFFFFFFF"
            self.line(f"_gn.{op}(_gn_m, {mask}, {loc})", s.span)

    def emit_Fence(self, s: ir.Fence) -> None:
        # Every access of the simulator is in program order, seen at once by every thread
        # (sequentially consistent): a fence has nothing to order.
        self.line("pass", s.span)

    def emit_Print(self, s: ir.Print) -> None:
        kinds, items = [], []
        for item in s.items:
            if isinstance(item, str):
                kinds.append("s")
                items.append(repr(item))
                continue
            ty = item.ty
            assert isinstance(ty, ir.ScalarType)  # the checker prints strings and scalars only
            info = ty.info
            kinds.append({"bool": "b", "int": "i", "uint": "u"}.get(info.kind, "f"))
            items.append(self.expr(item, "_gn_m"))
        self.line(f"_gn.print(_gn_m, {''.join(kinds)!r}{''.join(', ' + i for i in items)})",
                  s.span)

    def emit_TailExit(self, s: ir.TailExit) -> None:
        parts = [f"({self.array(ref)}, {axes!r})" for ref, axes in s.extents]
        self.line(f"_gn_m = _gn.tail_exit(_gn_m, ({', '.join(parts)},))", s.span)

    # ---- expressions ----

    def expr(self, e: ir.Expr, m: str) -> str:
        return _EXPR[type(e)](self, e, m)

    def emit_Const(self, e: ir.Const, m: str) -> str:
        return self.prog.const(e.value, e.ty)

    def emit_Local(self, e: ir.Local, m: str) -> str:
        return self.name(e.var)

    def emit_BinOp(self, e: ir.BinOp, m: str) -> str:
        info = e.ty.info
        left, right = self.expr(e.left, m), self.expr(e.right, m)
        op = e.op
        if e.zero_check is not None:
            left, right = self.simple(left, e.span), self.simple(right, e.span)
            self.line(f"{m} = _gn.zerodiv({m}, {right}, {left}, {e.zero_check})", e.span)
        if op in ("+", "-", "*", "/"):
            code = f"({left} {op} {right})"
            return f"_gn_bf{code}" if info.name == "bf16" else code
        if op in ("//", "%"):
            if info.is_int:
                fn = "_gn_ifloordiv" if op == "//" else "_gn_imod"
            else:
                fn = "_gn_ffloordiv" if op == "//" else "_gn_fmod"
            return f"{fn}({left}, {right})"
        if op == "**":
            exponent = e.right
            assert isinstance(exponent, ir.Const)  # the checker keeps ** for a literal exponent
            n = int(exponent.value)
            if info.is_int:
                return f"_gn_ipow({left}, {n})"
            return f"{'_gn_bfpow' if info.name == 'bf16' else '_gn_fpow'}({left}, {n})"
        if op == "<<":
            return f"_gn_shl({left}, {right})"
        if op == ">>":
            return f"_gn_shr({left}, {right})"
        return f"({left} {op} {right})"

    def emit_UnaryOp(self, e: ir.UnaryOp, m: str) -> str:
        x = self.expr(e.operand, m)
        if e.op == "not":
            return f"_gn_not({x})"
        return f"({e.op}{x})"

    def emit_Compare(self, e: ir.Compare, m: str) -> str:
        return f"({self.expr(e.left, m)} {e.op} {self.expr(e.right, m)})"

    def emit_BoolOp(self, e: ir.BoolOp, m: str) -> str:
        is_and = e.op == "and"
        acc = self.expr(e.values[0], m)
        for v in e.values[1:]:
            if is_pure(v):
                acc = f"({acc} {'&' if is_and else '|'} {self.expr(v, m)})"
                continue
            b = self.tmp("b")
            self.line(f"{b} = {acc}", v.span)
            need = self.tmp("n")
            self.line(f"{need} = {'_gn_and' if is_and else '_gn_andnot'}({m}, {b})", v.span)
            self.line(f"if {need} is not False:", v.span)
            self.indent += 1
            d = self.tmp("d")
            self.line(f"{d} = _gn.deaths", v.span)
            x = self.expr(v, need)
            self.line(f"{b} = _gn_where({need}, {x}, {b})", v.span)
            self.line(f"{m} = _gn.prune({m}, {d})", v.span)
            self.indent -= 1
            acc = b
        return acc

    def emit_Select(self, e: ir.Select, m: str) -> str:
        c = self.expr(e.cond, m)
        where = _where(e.ty)
        if is_pure(e.then) and is_pure(e.orelse):
            return f"{where}({c}, {self.expr(e.then, m)}, {self.expr(e.orelse, m)})"
        c = self.simple(c, e.span, "c")
        r, d = self.tmp("r"), self.tmp("d")
        self.line(f"{r} = {self.prog.zero(e.ty)}", e.span)
        self.line(f"{d} = _gn.deaths", e.span)
        # The statement's own mask, for a race's advice: a barrier may go before a statement
        # whose conditional expression only is divergent (Machine._divergence).
        self.line(f"_gn.outer.append({m})", e.span)
        for branch, fn in ((e.then, "_gn_and"), (e.orelse, "_gn_andnot")):
            need = self.tmp("n")
            self.line(f"{need} = {fn}({m}, {c})", branch.span)
            self.line(f"if {need} is not False:", branch.span)
            self.indent += 1
            x = self.expr(branch, need)
            self.line(f"{r} = {where}({need}, {x}, {r})", branch.span)
            self.indent -= 1
        self.line("_gn.outer.pop()", e.span)
        self.line(f"{m} = _gn.prune({m}, {d})", e.span)
        return r

    def emit_Cast(self, e: ir.Cast, m: str) -> str:
        src = e.value.ty
        assert isinstance(src, ir.ScalarType)  # the checker converts scalars only
        fn = self.prog.cast(src, e.ty)
        return f"{fn}({self.expr(e.value, m)})"

    def emit_ArrayRef(self, e: ir.ArrayRef, m: str) -> str:
        return self.array(e)

    def emit_Load(self, e: ir.Load, m: str) -> str:
        idx = [self.expr(i, m) for i in e.indices]
        t = self.tmp()
        loc = self.prog.location(e.span)
        if e.width > 1:
            self.line(f"{t}, {m} = _gn.load_vec({self.array(e.array)}, ({', '.join(idx)},), "
                      f"{e.checks!r}, {e.width}, {e.align!r}, {m}, {loc})", e.span)
            return t
        self.line(f"{t}, {m} = _gn.load({self.array(e.array)}, ({', '.join(idx)},), "
                  f"{e.checks!r}, {m}, {loc})", e.span)
        return t

    def emit_Shape(self, e: ir.Shape, m: str) -> str:
        return f"{self.array(e.array)}.shape[{e.axis}]"

    def emit_Special(self, e: ir.Special, m: str) -> str:
        template = registry.GPU_NATIVE[e.name].sim  # e.g. "_gn.tid({a})"
        assert isinstance(template, str)
        return template.format(a=e.axis)

    def emit_LaneId(self, e: ir.LaneId, m: str) -> str:
        return f"_gn.{registry.GPU_NATIVE['lane_id'].sim}()"

    def emit_UidComponent(self, e: ir.UidComponent, m: str) -> str:
        return f"_gn.{'uid' if e.scope == 'grid' else 'tuid'}({e.axis})"

    def emit_MathCall(self, e: ir.MathCall, m: str) -> str:
        ty = e.args[0].ty
        assert isinstance(ty, ir.ScalarType)  # math functions take scalars only
        fn = self.prog.math(e.name, ty, e.ty)
        return f"{fn}({', '.join(self.expr(a, m) for a in e.args)})"

    def emit_Call(self, e: ir.Call, m: str) -> str:
        args = []
        for param, arg in zip(e.function.params, e.args):
            if isinstance(param.ty, ir.ArrayType):
                assert isinstance(arg, ir.ArrayRef)  # the checker passes arrays as themselves
                args.append(self.array(arg))
            else:
                args.append(self.expr(arg, m))
        d = self.tmp("d")
        self.line(f"{d} = _gn.deaths", e.span)
        t = self.tmp()
        symbol = self.prog.named[("device", id(e.function))]
        self.line(f"{t} = {symbol}(_gn, {m}{''.join(', ' + a for a in args)})", e.span)
        self.line(f"{m} = _gn.prune({m}, {d})", e.span)
        return t

    def emit_MakeTuple(self, e: ir.MakeTuple, m: str) -> str:
        return "(" + "".join(f"{self.expr(i, m)}, " for i in e.items) + ")"

    def emit_TupleItem(self, e: ir.TupleItem, m: str) -> str:
        return f"{self.expr(e.value, m)}[{e.index}]"

    def emit_WarpOp(self, e: ir.WarpOp, m: str) -> str:
        args = [self.expr(a, m) for a in e.args]
        mask = self.expr(e.mask, m) if e.mask is not None else "None"
        loc = self.prog.location(e.span)
        t = self.tmp()
        op = registry.GPU_NATIVE[e.op].sim  # the machine's shfl, vote, match or activemask
        self.line(f"{t} = _gn.{op}({', '.join([repr(e.op), m, *args, mask, str(loc)])})",
                  e.span)
        return t

    def emit_BarrierVote(self, e: ir.BarrierVote, m: str) -> str:
        pred = self.expr(e.predicate, m)
        loc = self.prog.location(e.span)
        t = self.tmp()
        op = _BARRIER_VOTES[e.op]  # the machine's barrier_vote
        self.line(f"{t} = _gn.{op.sim}({e.op!r}, {op.name + '()'!r}, {m}, {pred}, {loc})",
                  e.span)
        return t

    def emit_RandomDraw(self, e: ir.RandomDraw, m: str) -> str:
        # The draw returns its value (a tuple of components for uniform4 and normal4) and the
        # advanced counter, which the executing lanes keep.
        ty = e.ty
        assert isinstance(ty, (ir.ScalarType, ir.VectorType))
        entry = registry.GENERATOR_METHODS[e.method]
        fn = self.prog.bind("rng", ("rng", e.method, ty.info.name),
                            getattr(philox, spelling(entry.sim, ty.info)))
        key, sub, counter = (self.name(local.var) for local in e.state)
        args = [self.simple(self.expr(a, m), e.span) for a in e.args]
        if e.check is not None:
            ok = self.prog.bind("rng", "randint_ok", philox.randint_ok)
            self.line(f"{m} = _gn.check_assert({m}, {ok}({args[0]}), {e.check})", e.span)
        t, c = self.tmp(), self.tmp("c")
        self.line(f"{t}, {c} = {fn}({key}, {sub}, {counter}{''.join(', ' + a for a in args)})",
                  e.span)
        self.line(f"{counter} = _gn_where({m}, {c}, {counter})", e.span)
        if e.method == "randint":  # the u64 result, as the bound's type
            assert isinstance(ty, ir.ScalarType)
            return f"{self.prog.cast(ir.U64, ty)}({t})"
        return t

    def emit_Atomic(self, e: ir.Atomic, m: str) -> str:
        idx = [self.expr(i, m) for i in e.indices]
        loc = self.prog.location(e.span)
        off = self.tmp("o")
        self.line(f"{off}, {m} = _gn.offset({self.array(e.array)}, ({', '.join(idx)},), "
                  f"{e.checks!r}, {m}, {loc})", e.span)
        operands = [self.expr(o, m) for o in e.operands]
        t = self.tmp()
        op = registry.ATOMIC_OPS[e.op].sim  # the machine's atomic
        self.line(f"{t} = _gn.{op}({e.op!r}, {self.array(e.array)}, {off}, "
                  f"({''.join(o + ', ' for o in operands)}), {m}, {loc})", e.span)
        return t


    # ---- vectors: tuples of components, computed as the prelude computes them ----

    def components(self, e: ir.Expr, m: str) -> list[str]:
        """Code for each component of the vector ``e`` (evaluated once, into a name)."""
        ty = e.ty
        assert isinstance(ty, ir.VectorType)
        v = self.simple(self.expr(e, m), e.span)
        return [f"{v}[{k}]" for k in range(ty.n)]

    def operand(self, e: ir.Expr, n: int, m: str) -> list[str]:
        """A vector operator's operand as ``n`` components (a scalar repeated)."""
        if isinstance(e.ty, ir.VectorType):
            return self.components(e, m)
        return [self.simple(self.expr(e, m), e.span)] * n

    def emit_VecMake(self, e: ir.VecMake, m: str) -> str:
        return f"({''.join(self.expr(i, m) + ', ' for i in e.items)})"

    def emit_VecComponent(self, e: ir.VecComponent, m: str) -> str:
        return f"({self.expr(e.value, m)})[{e.index}]"

    def emit_VecBinOp(self, e: ir.VecBinOp, m: str) -> str:
        n = e.ty.n
        left, right = self.operand(e.left, n, m), self.operand(e.right, n, m)
        # bf16 lanes compute in f32 and round once, as scalar bf16 operations do.
        bf = "_gn_bf" if e.ty.elem.info.name == "bf16" else ""
        return f"({''.join(f'{bf}({a} {e.op} {b}), ' for a, b in zip(left, right))})"

    def emit_VecUnary(self, e: ir.VecUnary, m: str) -> str:
        return f"({''.join(f'(-{x}), ' for x in self.components(e.operand, m))})"

    def emit_VecCall(self, e: ir.VecCall, m: str) -> str:
        if e.name == "splat":
            ty = e.ty
            assert isinstance(ty, ir.VectorType)
            x = self.simple(self.expr(e.args[0], m), e.span)
            return f"({f'{x}, ' * ty.n})"
        if e.name == "convert":
            src, dst = e.args[0].ty, e.ty
            assert isinstance(src, ir.VectorType) and isinstance(dst, ir.VectorType)
            fn = self.prog.cast(src.elem, dst.elem)
            return f"({''.join(f'{fn}({x}), ' for x in self.components(e.args[0], m))})"
        fn = self.prog.vector_function(e.name)
        return f"{fn}({', '.join(self.expr(a, m) for a in e.args)})"

    def emit_ComplexCall(self, e: ir.ComplexCall, m: str) -> str:
        fn = self.prog.complex_function(e.name)
        return f"{fn}({', '.join(self.expr(a, m) for a in e.args)})"

    # ---- structs: tuples of fields (see .structs) ----

    def emit_StructMake(self, e: ir.StructMake, m: str) -> str:
        return f"({''.join(self.expr(i, m) + ', ' for i in e.items)})"

    def emit_FieldGet(self, e: ir.FieldGet, m: str) -> str:
        return f"({self.expr(e.value, m)})[{e.index}]"

    def emit_StructWith(self, e: ir.StructWith, m: str) -> str:
        return f"_gn_swith({self.expr(e.value, m)}, {e.index}, {self.expr(e.item, m)})"


def _where(ty: ir.Type) -> str:
    """The lane select for values of type ``ty`` (component by component for a vector, item by
    item for a tuple, field by field through a struct)."""
    if isinstance(ty, ir.StructType):
        return "_gn_swhere"
    if isinstance(ty, ir.VectorType):
        return "_gn_vwhere"
    return "_gn_twhere" if isinstance(ty, ir.TupleType) else "_gn_where"


_STMT: dict[type, Callable] = {
    ir.Assign: FunctionEmitter.emit_Assign,
    ir.Store: FunctionEmitter.emit_Store,
    ir.ExprStmt: FunctionEmitter.emit_ExprStmt,
    ir.If: FunctionEmitter.emit_If,
    ir.While: FunctionEmitter.emit_While,
    ir.ForRange: FunctionEmitter.emit_ForRange,
    ir.GridStride: FunctionEmitter.emit_GridStride,
    ir.Break: FunctionEmitter.emit_Break,
    ir.Continue: FunctionEmitter.emit_Continue,
    ir.Return: FunctionEmitter.emit_Return,
    ir.Assert: FunctionEmitter.emit_Assert,
    ir.Barrier: FunctionEmitter.emit_Barrier,
    ir.Fence: FunctionEmitter.emit_Fence,
    ir.Print: FunctionEmitter.emit_Print,
    ir.TailExit: FunctionEmitter.emit_TailExit,
    ir.MatrixOp: FunctionEmitter.emit_MatrixOp,
}

_EXPR: dict[type, Callable] = {
    ir.Const: FunctionEmitter.emit_Const,
    ir.Local: FunctionEmitter.emit_Local,
    ir.BinOp: FunctionEmitter.emit_BinOp,
    ir.UnaryOp: FunctionEmitter.emit_UnaryOp,
    ir.Compare: FunctionEmitter.emit_Compare,
    ir.BoolOp: FunctionEmitter.emit_BoolOp,
    ir.Select: FunctionEmitter.emit_Select,
    ir.Cast: FunctionEmitter.emit_Cast,
    ir.ArrayRef: FunctionEmitter.emit_ArrayRef,
    ir.Load: FunctionEmitter.emit_Load,
    ir.Shape: FunctionEmitter.emit_Shape,
    ir.Special: FunctionEmitter.emit_Special,
    ir.LaneId: FunctionEmitter.emit_LaneId,
    ir.UidComponent: FunctionEmitter.emit_UidComponent,
    ir.MathCall: FunctionEmitter.emit_MathCall,
    ir.Call: FunctionEmitter.emit_Call,
    ir.MakeTuple: FunctionEmitter.emit_MakeTuple,
    ir.TupleItem: FunctionEmitter.emit_TupleItem,
    ir.WarpOp: FunctionEmitter.emit_WarpOp,
    ir.BarrierVote: FunctionEmitter.emit_BarrierVote,
    ir.Atomic: FunctionEmitter.emit_Atomic,
    ir.VecMake: FunctionEmitter.emit_VecMake,
    ir.VecComponent: FunctionEmitter.emit_VecComponent,
    ir.VecBinOp: FunctionEmitter.emit_VecBinOp,
    ir.VecUnary: FunctionEmitter.emit_VecUnary,
    ir.VecCall: FunctionEmitter.emit_VecCall,
    ir.ComplexCall: FunctionEmitter.emit_ComplexCall,
    ir.RandomDraw: FunctionEmitter.emit_RandomDraw,
    ir.StructMake: FunctionEmitter.emit_StructMake,
    ir.FieldGet: FunctionEmitter.emit_FieldGet,
    ir.StructWith: FunctionEmitter.emit_StructWith,
}


def build(kernel: ir.Kernel) -> tuple[ProgramBuilder, Callable]:
    """Generate and compile the Python for ``kernel``; return the builder and the kernel function."""
    prog = ProgramBuilder(kernel)
    for fn in kernel.device_functions:  # callees first
        symbol = prog.bind("dev", ("device", id(fn)), None)
        emitter = FunctionEmitter(prog, fn, False, _pyname(fn.name))
        emitter.emit_function()
        prog.ns[symbol] = prog.compile_function(emitter)
    emitter = FunctionEmitter(prog, kernel, True, _pyname(kernel.name))
    emitter.emit_function()
    return prog, prog.compile_function(emitter)


def _pyname(name: str) -> str:
    return name if _IDENT.match(name) and not name.startswith("_gn") else "_gn_fn"
