"""The 32-bit index entry point ``<symbol>_i32`` of a kernel.

Indices, extents and uids are 64-bit in the language, and the main entry point computes them so.
On the GPU that costs: a 64-bit compare or multiply is two to four instructions where a 32-bit one
is one, and a memory-bound kernel such as a stencil spends its issue slots on index arithmetic.
Yet almost every launch has arrays of fewer than 2**31 elements and a grid of fewer than 2**31
threads along each axis.  Under those two conditions, with a margin (``abi.INDEX32_MAX_ELEMENTS``,
2**31 - 2**20: the launcher checks both and otherwise runs the main entry point), much of a
kernel's integer work provably stays within 32 bits; the margin lets a loop up to an extent count
in 32 bits too, in steps of up to 2**20.

:class:`IndexRanges` bounds every integer variable and expression of the kernel by the interval
arithmetic of :mod:`gpu_native.analysis.ranges` under these launch limits (a local's range is the
union over all its assignments; anything that may wrap is widened to its type's range), and :class:`Index32Emitter` emits an ``i64`` variable as ``int``,
and an ``i64`` expression in ``int`` arithmetic, only where those bounds show the value is the
same.  Array offsets are computed in ``int`` when every index fits: an index in bounds (checked,
or proven by the checker) gives an offset below the array's size, below 2**31.  The result is
exactly the main entry point's behaviour, error reports included.
"""

from __future__ import annotations

from .. import abi, ir
from ..analysis.ranges import Interval, LaunchLimits, ValueRanges, type_interval
from .cnames import cname, extent_name
from .cuda import _EXPR, _XYZ, CudaEmitter
from .entry_points import ENTRY_POINTS
from .spelling import array_offset

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
I32 = Interval(I32_MIN, I32_MAX)
# What the launcher guarantees before it runs ``_i32``: every array argument has at most
# INDEX32_MAX_ELEMENTS elements, and grid * block stays within it along every axis.
INDEX32_MAX_ELEMENTS = abi.INDEX32_MAX_ELEMENTS
assert INDEX32_MAX_ELEMENTS <= I32_MAX
INDEX32_LIMITS = LaunchLimits(grid_uid=(INDEX32_MAX_ELEMENTS - 1,) * 3,
                              extent=INDEX32_MAX_ELEMENTS)


def _fits32(r: Interval | None) -> bool:
    return r is not None and r.within(I32)


def _events(stmts, out: list) -> None:
    """Every statement that assigns a local, nested bodies included."""
    for s in stmts:
        if isinstance(s, (ir.Assign, ir.ForRange, ir.GridStride)):
            out.append(s)
        if isinstance(s, ir.If):
            _events(s.then, out)
            _events(s.orelse, out)
        elif isinstance(s, (ir.While, ir.ForRange, ir.GridStride)):
            _events(s.body, out)


class IndexRanges(ValueRanges):
    """Sound bounds on the integer values of one kernel body, as the main entry point computes
    them, for launches the 32-bit entry point is run for (:data:`INDEX32_LIMITS`): a local's
    range is the union over all its assignments, solved over the whole body."""

    def __init__(self, kernel: ir.Kernel):
        super().__init__(INDEX32_LIMITS)
        self.vars: dict[int, Interval] = {}
        self.memo = None
        events: list = []
        _events(kernel.body, events)
        self._solve(events)
        self.memo = {}

    def _solve(self, events: list) -> None:
        # Ranges only grow.  A variable still growing after a few rounds (a loop-carried
        # `i += 1`) is widened to its type's range, which cannot grow, so this ends.
        for round_ in range(64):
            changed: set[int] = set()
            for s in events:
                var = s.var
                r = self.assigned_range(s)
                if r is None:
                    continue
                old = self.var_range(var)
                if old is None:
                    continue
                new = old.union(r)
                if new != old:
                    self.vars[id(var)] = new
                    changed.add(id(var))
            if not changed:
                return
            if round_ >= 4:
                for s in events:
                    if id(s.var) in changed:
                        widest = type_interval(s.var.ty)
                        assert widest is not None  # only integer variables change
                        self.vars[id(s.var)] = widest
        raise AssertionError("index ranges did not settle")  # pragma: no cover

    def assigned_range(self, s) -> Interval | None:
        """The values statement ``s`` may store into its variable (``None``: none, or not an
        integer)."""
        full = type_interval(s.var.ty)
        if full is None:
            return None
        if isinstance(s, ir.Assign):
            return self.range(s.value)
        if isinstance(s, ir.GridStride):
            # Its 64-bit counter stays, as in the main entry point: a 32-bit one either may wrap
            # (signed) or, unsigned, keeps the optimiser from unrolling the loop (a block
            # reduction ran at 0.6x).  The variable is the counter, so it stays 64-bit too.
            return full
        start, stop, step = self.range(s.start), self.range(s.stop), self.range(s.step)
        if not loop_counter_fits(s.step_sign, start, stop, step):
            # The counter is 64-bit: so is the variable (a 32-bit copy of it would hide the
            # induction variable from the optimiser, SGEMM's tile loop ran at 0.9x).
            return full
        assert start is not None and stop is not None
        if s.step_sign > 0:  # start <= var < stop
            return Interval(start.lo, stop.hi - 1) if start.lo <= stop.hi - 1 else None
        if s.step_sign < 0:  # stop < var <= start
            return Interval(stop.lo + 1, start.hi) if stop.lo + 1 <= start.hi else None
        return Interval(min(start.lo, stop.lo + 1), max(start.hi, stop.hi - 1))

    def var_range(self, var: ir.Var) -> Interval | None:
        full = type_interval(var.ty)
        if full is None or var.is_param:
            return full
        return self.vars.get(id(var), Interval(0, 0))  # locals start as zero (`T x{};`)

    def variable(self, var: ir.Var) -> Interval | None:
        return self.var_range(var)


def loop_counter_fits(step_sign: int, start: Interval | None, stop: Interval | None,
                      step: Interval | None) -> bool:
    """Can a ``range`` loop count in ``int``: bounds and step within 32 bits, and the counter's
    one step past ``stop`` too?"""
    if not (_fits32(start) and _fits32(stop) and _fits32(step)):
        return False
    assert stop is not None and step is not None
    if step_sign >= 0 and stop[1] - 1 + step[1] > I32_MAX:
        return False
    return not (step_sign <= 0 and stop[0] + 1 + step[0] < I32_MIN)


def wants_index32(kernel: ir.Kernel) -> bool:
    """Does the kernel get a ``_i32`` entry point?  Kernels run over their logical uids (see
    :mod:`.uid_stride`) do not: the launcher never runs their main entry point."""
    if kernel.traits.uid_only:
        return False
    return any(isinstance(p.ty, ir.ArrayType) for p in kernel.params)


class Index32Emitter(CudaEmitter):
    """Emits ``<symbol>_i32``: the kernel with its integer work in 32 bits where that is exact.

    Invariant: ``expr(e)`` is C++ of ``e``'s own type, as in the main entry point; ``expr32(e)``
    is ``int`` C++ for an ``e`` whose range fits in 32 bits."""

    helpers = ENTRY_POINTS["i32"]

    def __init__(self, kernel: ir.Kernel, display_file: str):
        super().__init__(kernel, display_file)
        self.ranges = IndexRanges(kernel)
        self.narrow_vars = {id(v) for v in kernel.locals
                            if v.ty == ir.I64 and _fits32(self.ranges.var_range(v))}

    def function(self) -> str:
        note = ("// The same kernel with 32-bit index arithmetic, where it gives the same values: "
                "the launcher runs it when no array has more than 2**31 - 2**20 elements and the "
                "grid no more threads along any axis.\n")
        return note + self.kernel_function(self.kernel.symbol + abi.INDEX32_SUFFIX)

    def fits(self, e: ir.Expr) -> bool:
        return _fits32(self.ranges.range(e))

    def var_ctype(self, var: ir.Var) -> str:
        return "int" if id(var) in self.narrow_vars else super().var_ctype(var)

    # ---- expressions -----------------------------------------------------------------------

    def narrow_here(self, e: ir.Expr) -> bool:
        """Is the i64 ``e`` computed in 32 bits (it fits, and so does what it is made of)?"""
        if not self.fits(e):
            return False
        if isinstance(e, ir.Local):
            return id(e.var) in self.narrow_vars
        if isinstance(e, ir.UidComponent):
            return True
        if isinstance(e, ir.BinOp):
            if e.op == ">>":
                return self.fits(e.left)
            return e.op in ("+", "-", "*", "//", "%", "&", "|", "^") and self.fits(
                e.left) and self.fits(e.right)
        if isinstance(e, ir.UnaryOp):
            return e.op in ("-", "~") and self.fits(e.operand)
        if isinstance(e, ir.MathCall):
            return e.name in ("min", "max", "abs") and all(self.fits(a) for a in e.args)
        return False

    def expr(self, e: ir.Expr) -> str:
        if e.ty == ir.I64 and self.narrow_here(e):
            return f"((gn_i64){self.expr32(e)})"
        return super().expr(e)

    def wide_expr(self, e: ir.Expr) -> str:
        """``e`` as the main entry point computes it (its operands may still be narrowed)."""
        return getattr(self, _EXPR[type(e)])(e)

    def expr32(self, e: ir.Expr) -> str:
        """``int`` C++ for ``e``, whose range fits in 32 bits."""
        assert self.fits(e), e
        if isinstance(e, ir.Const):
            v = int(e.value)
            return "(-2147483647 - 1)" if v == I32_MIN else str(v)
        if e.ty == ir.I32:
            return self.expr(e)
        if isinstance(e, ir.Local):
            name = cname(e.var)
            return name if id(e.var) in self.narrow_vars else f"((int){name})"
        if isinstance(e, ir.UidComponent):
            return self.uid32(e.axis) if e.scope == "grid" else f"((int)threadIdx.{_XYZ[e.axis]})"
        if isinstance(e, ir.Shape):
            return self.extent32(e.array, e.axis)
        if isinstance(e, ir.Cast) and e.value.ty in (ir.I32, ir.I64):
            return self.expr32(e.value)
        if e.ty == ir.I64 and self.narrow_here(e):
            return self.arith32(e)
        return f"((int)({self.wide_expr(e)}))"

    def arith32(self, e: ir.Expr) -> str:
        if isinstance(e, ir.BinOp):
            left, op = self.expr32(e.left), e.op
            if op == ">>":
                if e.no_wrap:   # a nonnegative value, a constant shift (see emit_BinOp)
                    return f"((int)((unsigned int)({left}) >> {self.expr(e.right)}))"
                return f"gn_shr<int>({left}, (gn_i64)({self.expr(e.right)}))"
            right = self.expr32(e.right)
            if op in ("//", "%"):
                fn = "gn_floordiv" if op == "//" else "gn_mod"
                if e.zero_check is not None:
                    helpers = self.helpers
                    return (f"{fn}{helpers.divide}<int>(__gn_err, {left}, {right}, "
                            f"{e.zero_check}u{helpers.origin})")
                return f"{fn}<int>({left}, {right})"
            return f"({left} {op} {right})"
        if isinstance(e, ir.UnaryOp):
            return f"({e.op}({self.expr32(e.operand)}))"
        assert isinstance(e, ir.MathCall)
        args = [self.expr32(a) for a in e.args]
        if e.name == "abs":
            return f"gn_iabs<int>({args[0]})"
        return f"gn_{e.name}<int>({', '.join(args)})"

    def uid(self, axis: int) -> str:
        return f"((gn_i64){self.uid32(axis)})"

    @staticmethod
    def uid32(axis: int) -> str:
        a = _XYZ[axis]
        return f"((int)(blockIdx.{a} * blockDim.{a} + threadIdx.{a}))"

    def extent32(self, ref: ir.ArrayRef, axis: int) -> str:
        shape = ref.ty.shape
        if shape is not None and shape[0] >= 0:
            return str(shape[axis])
        return f"((int){extent_name(ref.var, axis)})"

    def emit_Compare(self, e: ir.Compare) -> str:
        if e.left.ty == ir.I64 and self.fits(e.left) and self.fits(e.right):
            return f"({self.expr32(e.left)} {e.op} {self.expr32(e.right)})"
        return super().emit_Compare(e)

    def element(self, ref: ir.ArrayRef, indices, checks, width: int = 1) -> str:
        # A strided view's offsets are not bounded by its element count: 64-bit, as in main.
        if ref.ty.strided or not all(self.fits(i) for i in indices) or (
                width > 1 and any(c is not None for c in checks)):
            # The 64-bit form (a vector's check of its last axis has no 32-bit helper).
            return super().element(ref, indices, checks, width)
        static = ref.ty.shape is not None and ref.ty.shape[0] >= 0
        codes = [self.expr32(i) for i in indices]
        extents = [self.extent32(ref, axis) for axis in range(len(indices))]
        name = cname(ref.var)
        helpers = self.helpers
        if not static and len(indices) == 2 and None not in checks:
            return (f"{name}[{helpers.check2_32}(__gn_err, {codes[0]}, {extents[0]}, "
                    f"{checks[0]}u, {codes[1]}, {extents[1]}, {checks[1]}u{helpers.origin})]")
        parts = [code if site is None else
                 f"{helpers.check32}(__gn_err, {code}, {n}, {site}u{helpers.origin})"
                 for code, n, site in zip(codes, extents, checks)]
        # In bounds, the offset is below the array's size: below 2**31 here.
        return f"{name}[{array_offset(ref, parts, extents)}]"

    # ---- statements ------------------------------------------------------------------------

    def emit_Assign(self, s: ir.Assign) -> None:
        if id(s.var) in self.narrow_vars:
            self.line(f"{cname(s.var)} = {self.expr32(s.value)};")
        else:
            super().emit_Assign(s)

    def loop32(self, s: ir.ForRange) -> tuple[str, str, str] | None:
        if id(s.var) not in self.narrow_vars:
            return None
        rng = self.ranges.range
        # The variable's range fits only where the counter does (IndexRanges.assigned_range).
        assert loop_counter_fits(s.step_sign, rng(s.start), rng(s.stop), rng(s.step))
        return self.expr32(s.start), self.expr32(s.stop), self.expr32(s.step)

    def outside_extent(self, axis: int, ref: ir.ArrayRef, dim: int) -> str:
        return f"{self.uid32(axis)} >= {self.extent32(ref, dim)}"


def emit_index32(kernel: ir.Kernel, display_file: str) -> str:
    """The ``<symbol>_i32`` entry point of a kernel (see :func:`wants_index32`)."""
    return Index32Emitter(kernel, display_file).function()


__all__ = ["INDEX32_LIMITS", "Index32Emitter", "IndexRanges", "emit_index32",
           "loop_counter_fits", "wants_index32"]
