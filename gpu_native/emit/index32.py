"""The 32-bit index entry point ``<symbol>_i32`` of a kernel.

Indices, extents and uids are 64-bit in the language, and the main entry point computes them so.
On the GPU that costs: a 64-bit compare or multiply is two to four instructions where a 32-bit one
is one, and a memory-bound kernel such as a stencil spends its issue slots on index arithmetic.
Yet almost every launch has arrays of fewer than 2**31 elements and a grid of fewer than 2**31
threads along each axis.  Under those two conditions, with a margin (``abi.INDEX32_MAX_ELEMENTS``,
2**31 - 2**20: the launcher checks both and otherwise runs the main entry point), much of a
kernel's integer work provably stays within 32 bits; the margin lets a loop up to an extent count
in 32 bits too, in steps of up to 2**20.

:class:`IndexRanges` bounds every integer variable and expression of the kernel by interval
arithmetic (a local's range is the union over all its assignments; anything that may wrap is
widened to its type's range), and :class:`Index32Emitter` emits an ``i64`` variable as ``int``,
and an ``i64`` expression in ``int`` arithmetic, only where those bounds show the value is the
same.  Array offsets are computed in ``int`` when every index fits: an index in bounds (checked,
or proven by the checker) gives an offset below the array's size, below 2**31.  The result is
exactly the main entry point's behaviour, error reports included.
"""

from __future__ import annotations

from .. import abi, ir
from .cnames import cname, extent_name
from .cuda import _EXPR, _XYZ, CudaEmitter, row_major

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
# What the launcher guarantees before it runs ``_i32``: every array argument has at most
# INDEX32_MAX_ELEMENTS elements, and grid * block stays within it along every axis.
INDEX32_MAX_ELEMENTS = abi.INDEX32_MAX_ELEMENTS
assert INDEX32_MAX_ELEMENTS <= I32_MAX
_UID_MAX = INDEX32_MAX_ELEMENTS - 1  # grid * block is at most INDEX32_MAX_ELEMENTS along an axis
_SPECIAL_MAX = {
    "thread_idx": (1023, 1023, 63),
    "block_idx": ((1 << 31) - 2, 65534, 65534),
    "block_dim": (1024, 1024, 64),
    "grid_dim": ((1 << 31) - 1, 65535, 65535),
}

Range = tuple[int, int]


def type_range(ty: ir.Type) -> Range | None:
    """The values of an integer or bool type; ``None`` for anything else."""
    if not isinstance(ty, ir.ScalarType) or ty.info.kind not in ("int", "uint", "bool"):
        return None
    if ty.info.kind == "bool":
        return (0, 1)
    return (int(ty.info.min), int(ty.info.max))


def _fits32(r: Range | None) -> bool:
    return r is not None and r[0] >= I32_MIN and r[1] <= I32_MAX


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


class IndexRanges:
    """Sound bounds on the integer values of one kernel body, as the main entry point computes
    them, for launches the 32-bit entry point is run for."""

    def __init__(self, kernel: ir.Kernel):
        self.vars: dict[int, Range] = {}
        self.memo: dict[int, Range | None] | None = None
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
                new = (min(old[0], r[0]), max(old[1], r[1]))
                if new != old:
                    self.vars[id(var)] = new
                    changed.add(id(var))
            if not changed:
                return
            if round_ >= 4:
                for s in events:
                    if id(s.var) in changed:
                        widest = type_range(s.var.ty)
                        assert widest is not None  # only integer variables change
                        self.vars[id(s.var)] = widest
        raise AssertionError("index ranges did not settle")  # pragma: no cover

    def assigned_range(self, s) -> Range | None:
        """The values statement ``s`` may store into its variable (``None``: none, or not an
        integer)."""
        full = type_range(s.var.ty)
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
            return (start[0], stop[1] - 1) if start[0] <= stop[1] - 1 else None
        if s.step_sign < 0:  # stop < var <= start
            return (stop[0] + 1, start[1]) if stop[0] + 1 <= start[1] else None
        return (min(start[0], stop[0] + 1), max(start[1], stop[1] - 1))

    def var_range(self, var: ir.Var) -> Range | None:
        full = type_range(var.ty)
        if full is None or var.is_param:
            return full
        return self.vars.get(id(var), (0, 0))  # locals start as zero (`T x{};`)

    def range(self, e: ir.Expr) -> Range | None:
        """Bounds of the integer (or bool) ``e``; ``None`` when it is not one."""
        memo = self.memo
        if memo is not None and id(e) in memo:
            return memo[id(e)]
        full = type_range(e.ty)
        r = None if full is None else self._raw(e, full)
        if r is not None and full is not None and (r[0] < full[0] or r[1] > full[1]):
            r = full  # it may wrap: any value of the type
        if memo is not None:
            memo[id(e)] = r
        return r

    def _raw(self, e: ir.Expr, full: Range) -> Range:
        if isinstance(e, ir.Const):
            v = int(e.value)
            return (v, v)
        if isinstance(e, ir.Local):
            return self.var_range(e.var) or full
        if isinstance(e, ir.UidComponent):
            if e.scope == "grid":
                return (0, _UID_MAX)
            return (0, _SPECIAL_MAX["thread_idx"][e.axis])
        if isinstance(e, ir.Special):
            low = 1 if e.name in ("block_dim", "grid_dim") else 0
            return (low, _SPECIAL_MAX[e.name][e.axis])
        if isinstance(e, ir.LaneId):
            return (0, 31)
        if isinstance(e, ir.Shape):
            shape = e.array.ty.shape
            if shape is not None and shape[0] >= 0:
                return (shape[e.axis], shape[e.axis])
            return (0, INDEX32_MAX_ELEMENTS)
        if isinstance(e, ir.Cast):
            inner = self.range(e.value)
            if inner is None or not (full[0] <= inner[0] and inner[1] <= full[1]):
                return full  # from a float (saturating), or a narrowing integer cast
            return inner
        if isinstance(e, ir.BinOp):
            return self._binop(e, full)
        if isinstance(e, ir.UnaryOp):
            x = self.range(e.operand)
            if x is None or e.op == "not":
                return (0, 1) if e.op == "not" else full
            if e.op == "-":
                return (-x[1], -x[0])
            return (-x[1] - 1, -x[0] - 1)  # ~x == -x - 1
        if isinstance(e, ir.Select):
            a, b = self.range(e.then), self.range(e.orelse)
            if a is None or b is None:
                return full
            return (min(a[0], b[0]), max(a[1], b[1]))
        if isinstance(e, ir.MathCall) and e.name in ("min", "max", "abs"):
            args = [r for r in (self.range(a) for a in e.args) if r is not None]
            if len(args) != len(e.args):
                return full
            if e.name == "min":
                return (min(a[0] for a in args), min(a[1] for a in args))
            if e.name == "max":
                return (max(a[0] for a in args), max(a[1] for a in args))
            lo, hi = args[0]
            if lo >= 0:
                return (lo, hi)
            if hi <= 0:
                return (-hi, -lo)
            return (0, max(-lo, hi))
        return full

    def _binop(self, e: ir.BinOp, full: Range) -> Range:
        a, b = self.range(e.left), self.range(e.right)
        if a is None or b is None:
            return full
        op = e.op
        if op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if op == "*":
            p = [x * y for x in a for y in b]
            return (min(p), max(p))
        if op == "//":
            if b[0] > 0 or b[1] < 0:
                q = [x // y for x in a for y in b]
                return (min(q), max(q))
            m = max(abs(a[0]), abs(a[1]))  # |x // y| <= |x| for any nonzero integer y
            return (-m, m)
        if op == "%":  # the result has the divisor's sign and is smaller in magnitude
            if b[0] > 0:
                return (0, min(b[1] - 1, a[1])) if a[0] >= 0 else (0, b[1] - 1)
            if b[1] < 0:
                return (b[0] + 1, 0)
            m = max(abs(b[0]), abs(b[1]))
            return (-(m - 1), m - 1) if m > 0 else (0, 0)
        if op == "&":
            if a[0] >= 0 and b[0] >= 0:
                return (0, min(a[1], b[1]))
            if a[0] >= 0:
                return (0, a[1])
            if b[0] >= 0:
                return (0, b[1])
            return full
        if op in ("|", "^"):
            if a[0] >= 0 and b[0] >= 0:
                return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
            return full
        if op == ">>":  # a count outside 0..bits-1 gives the sign fill, 0 or -1
            return (min(a[0], 0), max(a[1], 0))
        return full


def loop_counter_fits(step_sign: int, start: Range | None, stop: Range | None,
                      step: Range | None) -> bool:
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
                return f"gn_shr<int>({left}, (gn_i64)({self.expr(e.right)}))"
            right = self.expr32(e.right)
            if op in ("//", "%"):
                fn = "gn_floordiv" if op == "//" else "gn_mod"
                if e.zero_check is not None:
                    return f"{fn}_chk<int>(__gn_err, {left}, {right}, {e.zero_check}u)"
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

    def element(self, ref: ir.ArrayRef, indices, checks) -> str:
        if not all(self.fits(i) for i in indices):
            return super().element(ref, indices, checks)
        static = ref.ty.shape is not None and ref.ty.shape[0] >= 0
        codes = [self.expr32(i) for i in indices]
        extents = [self.extent32(ref, axis) for axis in range(len(indices))]
        name = cname(ref.var)
        if not static and len(indices) == 2 and None not in checks:
            return (f"{name}[gn_at2_32(__gn_err, {codes[0]}, {extents[0]}, {checks[0]}u, "
                    f"{codes[1]}, {extents[1]}, {checks[1]}u)]")
        parts = [code if site is None else f"gn_chk32(__gn_err, {code}, {n}, {site}u)"
                 for code, n, site in zip(codes, extents, checks)]
        # In bounds, the offset is below the array's size: below 2**31 here.
        return f"{name}[{row_major(parts, extents)}]"

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


__all__ = ["Index32Emitter", "IndexRanges", "emit_index32", "loop_counter_fits",
           "type_range", "wants_index32"]
