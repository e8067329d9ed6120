"""The bounds proofs: which array indices need a check at run time.

Every index is checked unless the facts that hold where it is used prove it in range: a
dominating ``if i < len(a)`` or ``assert``, a ``range(len(a))`` loop, an earlier check of the
same thread (a failing check ends the thread), or what the launch and the types allow (see
:mod:`gpu_native.analysis.ranges`); into an array of constant shape, also the interval of the
whole index from its parts' (``ty * TM + i`` with ``ty < TY`` and ``i < TM``).  The facts themselves are typed records
(:mod:`.facts`); this module keeps the ones that hold at the statement being checked.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import (
    BINARY,
    HARDWARE,
    Interval,
    ValueRanges,
    constant_value,
    is_widening,
    type_interval,
)
from ..errors import SourceSpan, TranspileError
from ..launchexpr import AddressOf, Arith, Compare, Const
from ..spec import ShapeAssert
from .facts import (
    ConstKey,
    Equal,
    Exact,
    Fact,
    Key,
    Less,
    MultipleOf,
    NonNegative,
    NotEqual,
    OpKey,
    ShapeKey,
    SpecialKey,
    VarKey,
    cond_facts,
    lower_bound,
    shows_at_least,
    shows_below,
    shows_within,
    split_offset,
    stable,
    unread_facts,
    upper_bound,
)
from .facts import kill as kill_facts

if TYPE_CHECKING:
    from .context import Definitions, FunctionContext
    from .nowrap import NoWrapProofs
    from .unique import UniqueWrites


# How many widening casts and single-assignment locals :meth:`BoundsProofs.upper` looks
# through (a longer chain is bounded by what its last link's type allows).
_MAX_CHAIN = 64


class BoundsProofs:
    """The bounds proofs of one function, made as the type pass reaches each index.

    Reads: the type pass's :class:`~.context.Definitions` (keys, single assignments, the
    variables of ``grid_stride`` loops), the kernel's options (``bounds_check``), the no-wrap
    proofs (a sum of nonnegative values is nonnegative only if it does not wrap), and the
    unique-write proofs (an equality with a unique index pins a thread coordinate).
    Produces: the ``checks`` of every ``Load``, ``Store`` and ``Atomic`` (a site id, or
    ``None`` where proven), the error sites of the checks that remain, and a TranspileError for
    a constant index that is out of bounds or negative.

    State (the type pass moves it along the control flow: :meth:`assume` at a condition,
    :meth:`kill` at an assignment, and saving and restoring around branches and loops):

    ``facts``
        What holds at the statement being checked (a frozenset of :class:`~.facts.Fact`).
    ``pending``
        Facts from bounds checks of the statement being checked: they hold once the statement
        has run (a failing check ends the thread), not inside it, where C++ may evaluate the
        operands in any order.  :meth:`commit` moves them into ``facts`` at sequence points.
    """

    def __init__(self, ctx: FunctionContext, defs: Definitions):
        self.ctx = ctx
        self.defs = defs
        self.facts: frozenset[Fact] = frozenset()
        self.pending: set[Fact] = set()
        self.no_wrap: NoWrapProofs  # wired by the type pass
        self.unique: UniqueWrites
        # What the launcher checks at every launch (hoisted shape asserts, see
        # StatementChecker.hoist_shape_assert): true in every thread of every launch that runs.
        self.launch_facts: frozenset[Fact] = frozenset()
        # The launch-shape products and sums of those facts (`grid_dim.y * BM`), each with the
        # maximum of its type, which an IndexFits keeps it within.
        self.launch_limits: dict[Key, int] = {}
        # (array parameter, axis) -> m where a launch fact says `a.shape[axis] % m == 0`.
        self.shape_multiples: dict[tuple[str, int], int] = {}
        # (parameter index, bytes) -> the site of the launch check of its address's alignment.
        self.pointer_sites: dict[tuple[int, int], int] = {}

    # ---- moving the facts along ------------------------------------------------------------

    def facts_from(self, cond: ir.Expr, truth: bool) -> set[Fact]:
        """The facts that hold where ``cond`` evaluated to ``truth``."""
        return cond_facts(cond, truth, self.unique.classify_untied, self.unique.is_uniform,
                          self.defs.key) | self.unique.ticket_facts(cond, truth) | \
            unread_facts(cond, truth, self.unique.is_uniform, self.defs.key)

    def exact_facts(self, cond: ir.Expr) -> set[Fact]:
        """Which integer values ``cond`` compares are exact (:class:`~.facts.Exact`): built
        without arithmetic that may wrap, as :func:`.wrapping.exact_value` shows without
        proving anything new (no flag set, no launch check added but the one it names)."""
        from .wrapping import exact_value, operands_keep_it

        out: set[Fact] = set()
        for node in ir.walk(cond):
            if isinstance(node, ir.Compare):
                for side in (node.left, node.right):
                    ty = side.ty
                    if not (isinstance(ty, ir.ScalarType) and ty.info.is_int):
                        continue
                    checks: list = []
                    if exact_value(side, self.no_wrap.proven, self.defs.single_def, checks,
                                   fits=lambda x: operands_keep_it(x, self)):
                        for check in checks:
                            self.ctx.kernel.add_launch_check(check)
                        out.add(Exact(self.defs.key(side)))
        return out

    def assume(self, cond: ir.Expr, truth: bool) -> None:
        """From here on, ``cond`` evaluated to ``truth``."""
        self.facts = self.facts | self.facts_from(cond, truth)

    def kill(self, variables) -> None:
        """``variables`` are being assigned: forget what was known of them."""
        self.facts = kill_facts(self.facts, variables)

    def assign(self, var: ir.Var, value: ir.Expr) -> None:
        """``var = value`` runs here: forget what was known of ``var``, then, for a local
        assigned more than once (one assigned once stands for its value already), know its
        value's interval and the power of two it is a multiple of until it is assigned again.

        ``col = (ch ^ (r & 7)) * 8`` assigned in two loops is then ``0 <= col <= 120`` and a
        multiple of 8 where it is used.  The value is bounded with the facts that hold before
        the assignment (it is computed from the old values), and the facts name the value
        stored, which no later assignment to another variable changes."""
        facts: set[Fact] = set()
        # Its constant right shifts of nonnegative values are logical shifts, proven here where
        # the value is computed (a use elsewhere proves only what holds without the facts).
        for node in ir.walk(value):
            if isinstance(node, ir.BinOp) and node.op == ">>" and _constant_shift(node):
                self.is_nonneg(node)
        single = not var.is_param and self.defs.assign_counts.get(var.name, 0) == 1
        # Its sums, differences and products are computed here, under these facts (`x = tx + B
        # - m` in a loop over m < B): what keeps one within its type here keeps it wherever
        # the value is read, where the facts are others (the node is this assignment's, so a
        # local assigned again, in Rodinia nw's two wavefronts, keeps each value's own).
        from .wrapping import operands_keep_it

        for node in ir.walk(value):
            if isinstance(node, ir.BinOp) and node.op in ("+", "-", "*") and \
                    operands_keep_it(node, self, here=True):
                self.defs.kept[id(node)] = node
        full = type_interval(var.ty)
        if not single and full is not None and var.ty != ir.BOOL and \
                self.ctx.options.bounds_check:
            k = VarKey(var)
            r = self.interval(value)
            if r.within(full):
                if r.lo >= 0:
                    facts.add(NonNegative(k))
                if r.lo >= 1:  # `d = n >> 1` under `assert n >= 2`: d >= 1 (see at_least)
                    facts.add(NotEqual(k, ConstKey(0)))
                if r.hi < full.hi:
                    facts.add(Less(k, ConstKey(r.hi + 1)))
            for m in (16, 8, 4, 2):
                if self.multiple_of(value, m):
                    facts.add(MultipleOf(k, m))
                    break
        self.facts = kill_facts(self.facts, {var}) | facts

    def commit(self) -> None:
        """Make the facts of the checks run so far hold for what follows (a sequence point)."""
        if self.pending:
            self.facts = self.facts | stable(self.pending)
            self.pending = set()

    @contextlib.contextmanager
    def without_facts(self):
        """Prove something that must hold wherever the value was computed, not only here:
        from the launch facts alone (what the launcher checked before the kernel ran)."""
        saved = self.facts
        self.facts = self.launch_facts
        try:
            yield
        finally:
            self.facts = saved

    # ---- index checks ----------------------------------------------------------------------

    def checks(self, base: ir.ArrayRef, indices, span: SourceSpan) -> tuple[int | None, ...]:
        """The check of each index of ``base[indices]``: an error site, or ``None`` if proven."""
        checks: list[int | None] = []
        for axis, idx in enumerate(indices):
            if self.index_proven(base, axis, idx):
                checks.append(None)
                continue
            checks.append(self.ctx.kernel.new_site("index", span, base.var.name, axis,
                                                   base.ty.ndim))
            k = self.defs.key(idx)
            self.pending.add(NonNegative(k))
            self.pending.add(Less(k, self.bound_key(base, axis, idx)))
        return tuple(checks)

    def vector_checks(self, base: ir.ArrayRef, indices, width: int, span: SourceSpan,
                      what: str = "load_vec4()") -> tuple[tuple[int | None, ...], int | None]:
        """The checks of ``load_vec4(base, *indices)`` (``width`` elements from the last index
        on): each axis's site or ``None``, and the site of the alignment check or ``None``.

        The last axis is proven only where the interval of its index leaves room for the whole
        vector in an array of constant shape; its check compares against the extent less
        ``width - 1``.  The address is aligned to ``width`` elements where the array is a
        shared one (which starts on a 16-byte boundary), every row stride is a multiple of
        ``width`` and the last index a visible multiple of it; a global array's pointer is
        known only at run time, so its alignment is checked there."""
        *lead, last = indices
        checks = list(self.checks(base, tuple(lead), span))
        axis = len(lead)
        shape = base.ty.shape
        static = shape is not None and shape[0] >= 0
        if not self.ctx.options.bounds_check:
            return (*checks, None), None
        if static:
            assert shape is not None
            n = shape[axis]
            c = constant_value(last)
            if isinstance(c, int) and not 0 <= c <= n - width:
                raise TranspileError(f"{width} elements from index {c} are out of bounds for "
                                     f"axis {axis} of '{base.var.name}' with size {n}",
                                     last.span)
        if (shape is not None and static and self.interval(last).within(
                Interval(0, shape[axis] - width))) or (
                not static and self.vector_fits(base, axis, last, width)):
            checks.append(None)
        else:
            checks.append(self.ctx.kernel.new_site("vector", span, base.var.name, axis,
                                                   base.ty.ndim))
            k = self.defs.key(last)
            self.pending.add(NonNegative(k))
            self.pending.add(Less(k, self.bound_key(base, axis, last)))
        aligned = self.aligned(base, indices, width) or self.launch_aligned(
            base, indices, width, span, what)
        align = None if aligned else self.ctx.kernel.new_site("align", span, base.var.name,
                                                              axis, base.ty.ndim)
        return tuple(checks), align

    def vector_fits(self, base: ir.ArrayRef, axis: int, last: ir.Expr, width: int) -> bool:
        """Do ``width`` elements from ``last`` lie inside axis ``axis`` of the array parameter
        ``base``?  Where ``last`` is a proven index of it and a multiple of ``width``, as its
        extent is by a launch fact (``assert a.shape[1] % 4 == 0``): then so is the extent less
        the index, which is positive, so at least ``width``."""
        var = base.var
        return (var.is_param and not base.ty.strided
                and self.shape_multiples.get((var.name, axis), 1) % width == 0
                and self.multiple_of(last, width) and self.index_proven(base, axis, last))

    def multiple_of(self, e: ir.Expr, k: int) -> bool:
        """Is the integer ``e`` a multiple of ``k`` as computed (wrapping modulo 2**bits keeps
        a power of two's multiples)?  From its form: a constant, a product with a multiple, a
        sum or difference of multiples, a shift left by enough bits, a local assigned once."""
        c = constant_value(e)
        if isinstance(c, int):
            return c % k == 0
        while isinstance(e, ir.Cast) and isinstance(e.value.ty, ir.ScalarType) and \
                e.value.ty.info.is_int:
            e = e.value
        if isinstance(e, ir.BinOp):
            if e.op == "*":
                return self.multiple_of(e.left, k) or self.multiple_of(e.right, k)
            if e.op in ("+", "-"):
                return self.multiple_of(e.left, k) and self.multiple_of(e.right, k)
            if e.op == "<<":
                shift = constant_value(e.right)
                return (isinstance(shift, int) and 0 <= shift < 32 and (1 << shift) % k == 0) \
                    or self.multiple_of(e.left, k)
            return False
        if isinstance(e, ir.Local):
            d = self.defs.single_def(e.var)
            if d is not None:
                return self.multiple_of(d, k)
            return any(isinstance(f, MultipleOf) and f.value == VarKey(e.var) and f.k % k == 0
                       for f in self.facts)
        return False

    def aligned(self, base: ir.ArrayRef, indices, width: int) -> bool:
        """Is ``&base[indices]`` proven aligned to ``width`` elements (a power of two, at most
        16 bytes)?  Where ``base`` is a shared array of constant shape (which starts on a 16-byte
        boundary), its last extent a multiple of ``width`` (so every row stride is) and the last
        index a multiple of it: ``(c ^ s) * 8`` into rows of 32 halves."""
        shape = base.ty.shape
        return (base.ty.space == "shared" and shape is not None and shape[0] >= 0
                and shape[-1] % width == 0 and self.multiple_of(indices[-1], width))

    def note_shape_multiples(self, cond: ir.Expr) -> None:
        """Record the ``a.shape[axis] % m == 0`` conjuncts of the launch-checked ``cond``, and
        the ``a.shape[axis] == grid_dim.x * BN`` ones with a visible multiple of a power of two
        (exact: the launcher keeps the product from wrapping), in :attr:`shape_multiples`, for
        :meth:`launch_aligned`."""
        if isinstance(cond, ir.BoolOp) and cond.op == "and":
            for v in cond.values:
                self.note_shape_multiples(v)
            return
        if not isinstance(cond, ir.Compare) or cond.op != "==":
            return
        for a, b in ((cond.left, cond.right), (cond.right, cond.left)):
            shape = _uncast(a, self.defs.single_def)
            if isinstance(shape, ir.Shape) and shape.array.var.is_param:
                m = next((m for m in (16, 8, 4, 2) if self.multiple_of(b, m)), None)
                if m is not None:
                    where = (shape.array.var.name, shape.axis)
                    self.shape_multiples[where] = max(m, self.shape_multiples.get(where, 1))
            a = _uncast(a, self.defs.single_def)
            m = constant_value(a.right) if isinstance(a, ir.BinOp) and a.op == "%" else None
            if constant_value(b) != 0 or not isinstance(m, int) or m <= 0:
                continue
            assert isinstance(a, ir.BinOp)
            shape = _uncast(a.left, self.defs.single_def)
            if isinstance(shape, ir.Shape) and shape.array.var.is_param:
                where = (shape.array.var.name, shape.axis)
                self.shape_multiples[where] = max(m, self.shape_multiples.get(where, 1))

    def launch_aligned(self, base: ir.ArrayRef, indices, width: int, span: SourceSpan,
                       what: str) -> bool:
        """Is ``&base[indices]`` of a global array parameter aligned to ``width`` elements
        once the launcher has checked the parameter's address (which it is then asked to, at
        every launch)?  Where the array is row-major, its last extent (its only one, 1-D) a
        multiple of ``width`` by a launch fact (``assert a.shape[1] % 8 == 0``; every row stride is then one) and the
        last index a multiple of it.  ``what`` names the access in the launch check's error."""
        var = base.var
        index = self.unique.param_index(var.name) if var.is_param else None
        if (index is None or base.ty.space != "global" or base.ty.strided
                or not self.ctx.options.bounds_check
                or not self.multiple_of(indices[-1], width)):
            return False
        # Needless for a 1-D array's own alignment, the fact is asked of it too: a kernel opts
        # in by stating its contract, and one without keeps the per-thread check (and its
        # KernelIndexError).
        if self.shape_multiples.get((var.name, base.ty.ndim - 1), 1) % width:
            return False
        elem = base.ty.elem
        if not isinstance(elem, ir.ScalarType):
            return False
        nbytes = width * elem.info.itemsize
        site = self.pointer_sites.get((index, nbytes))
        if site is None:
            site = self.ctx.kernel.new_site(
                "assert", span, message=f"{what}: the address of array '{var.name}' is not "
                f"aligned to {nbytes} bytes (the kernel's alignment proof assumes it)")
            self.pointer_sites[(index, nbytes)] = site
            tree = Compare("==", Arith("%", AddressOf(index), Const(nbytes)), Const(0))
            self.ctx.kernel.add_launch_check(ShapeAssert(tree, site))
        return True

    def bound_key(self, base: ir.ArrayRef, axis: int, idx: ir.Expr) -> Key:
        shape = base.ty.shape
        if shape is not None and shape[0] >= 0:
            return ConstKey(shape[axis])
        return self.defs.key(ir.Shape(idx.span, ir.I64, base, axis))

    def index_proven(self, base: ir.ArrayRef, axis: int, idx: ir.Expr) -> bool:
        shape = base.ty.shape
        static = shape is not None and shape[0] >= 0
        c = constant_value(idx)
        if static:
            assert shape is not None
            n = shape[axis]
            if isinstance(c, int):
                if 0 <= c < n:
                    return True
                raise TranspileError(f"index {c} is out of bounds for axis {axis} of "
                                     f"'{base.var.name}' with size {n}", idx.span)
        elif isinstance(c, int) and c < 0:
            raise TranspileError(f"negative index {c}: kernels do not wrap negative indices",
                                 idx.span, "index from the start, e.g. a[len(a) - 1]")
        bound_key = self.bound_key(base, axis, idx)
        if not self.ctx.options.bounds_check:
            return True
        # First, for what it marks: the arithmetic it proves never wraps is emitted plainly.
        nonneg = self.is_nonneg(idx)
        if static and self.interval(idx).within(Interval(0, n - 1)):
            # `ty * TM + i` under `assert block_dim.y == TY` and `i in range(TM)`: an interval
            # of the whole sum, from its parts' (not one fact about the index itself).
            return True
        if not static and self.tiles_below(idx, bound_key, nonneg):
            return True
        if not nonneg:
            return False
        if static and _fits_unsigned(idx, n):
            return True
        return self.below(idx, bound_key, static)

    # ---- what the facts show ---------------------------------------------------------------

    def below(self, idx: ir.Expr, bound_key: Key, static: bool) -> bool:
        """Is ``idx < bound_key`` proven (``static``: the bound is a constant)?"""
        k = self.defs.key(idx)
        if any(shows_below(self.facts, k, b, static) for b in self.equal_extents(bound_key)):
            return True
        limit = bound_key.integer
        e = idx
        while isinstance(e, ir.Cast):
            e = e.value
        if isinstance(e, ir.BinOp) and e.op == "%" and self.defs.key(e.right) == bound_key:
            return True
        if isinstance(e, ir.BinOp) and e.op == "%" and static and isinstance(
                constant_value(e.right), int) and 0 < constant_value(e.right) <= limit:
            return True
        if isinstance(e, ir.BinOp) and e.op == "&" and static:
            assert limit is not None  # a static bound is an integer constant
            for side in (e.left, e.right):
                cv = constant_value(side)
                if isinstance(cv, int) and 0 <= cv < limit:
                    return True
        split = split_offset(e)
        if split is not None:
            base, c = split
            if c < 0:
                # a - m with a >= m cannot wrap, and stays below whatever bounds a.
                return self.at_least(base, -c) and self.below(base, bound_key, static)
            if static:
                assert limit is not None
                return c < limit and self.below(
                    base, ConstKey(limit - c), static)
            if isinstance(e.ty, ir.ScalarType) and e.ty.info.bits == 64:
                # a + c < n from a < n - c, or (c == 1) from a < n and a != n - 1.  64-bit
                # only: a narrower sum could wrap before it reaches a 64-bit extent.
                less = OpKey("-", bound_key, ConstKey(c))
                kb = self.defs.key(base)
                if Less(kb, less) in self.facts:
                    return True
                if c == 1 and NotEqual(kb, less) in self.facts and self.below(
                        base, bound_key, static):
                    return True
        if isinstance(e, ir.Local):
            d = self.defs.single_def(e.var)
            if d is not None:
                return self.below(d, bound_key, static)
        return False

    def tiles_below(self, idx: ir.Expr, bound: Key, no_wrap: bool = False) -> bool:
        """Is ``0 <= idx < bound`` (an extent) proven, ``idx`` being a tile's element: ``x * c +
        rest`` with ``x >= 0``, ``0 <= rest < c`` (a sum of parts) and ``x < q`` where ``q * c
        <= bound``?  Then ``idx <= (q - 1) * c + c - 1 < bound``.

        ``q * c <= bound`` from the launch facts (shape asserts the launcher checks at every
        launch, see :attr:`launch_facts`): ``x < bound // c`` holds here (``nxt < ktiles`` with
        ``ktiles = a.shape[1] // BK``), or ``x`` is ``block_idx`` along an axis where ``bound
        == grid_dim * c`` was asserted; ``bound`` may be another extent asserted equal to it (through a chain).
        Nothing wraps where ``no_wrap`` (``idx >= 0`` was proven, which proves it), or where
        every part is nonnegative and every partial sum below ``bound``, which is at most the
        maximum of each sum's and the product's type (an extent is below 2**48; ``grid_dim * c``
        within the type an :class:`~gpu_native.spec.IndexFits` held it to)."""
        sums: list[ir.BinOp] = []
        terms = self._terms(idx, sums)
        for i, term in enumerate(terms):
            scaled = self._scaled(term)
            if scaled is None:
                continue
            x, c = scaled
            lo = hi = 0
            for other in terms[:i] + terms[i + 1:]:
                r = self.interval(other)
                lo, hi = lo + r.lo, hi + r.hi
            if lo < 0 or hi >= c or not self.is_nonneg(x):
                continue
            inner: list[ir.Expr] = []
            largest = self._tiles_within(x, c, bound, inner)
            if largest is None:
                continue
            assert isinstance(term, ir.BinOp)
            if no_wrap or all(isinstance(e.ty, ir.ScalarType) and e.ty.info.is_int and
                   largest <= e.ty.info.max for e in (*sums, *inner, term)):
                return True
        return False

    def _terms(self, e: ir.Expr, sums: list[ir.BinOp]) -> list[ir.Expr]:
        """The summands of ``e`` (through widening casts and locals assigned once); the sums
        taken apart are appended to ``sums``."""
        while True:
            if isinstance(e, ir.Cast) and is_widening(e):
                e = e.value
            elif isinstance(e, ir.Local) and self.defs.single_def(e.var) is not None:
                d = self.defs.single_def(e.var)
                assert d is not None
                e = d
            else:
                break
        if isinstance(e, ir.BinOp) and e.op == "+":
            sums.append(e)
            return self._terms(e.left, sums) + self._terms(e.right, sums)
        return [e]

    def _scaled(self, e: ir.Expr) -> tuple[ir.Expr, int] | None:
        """``(x, c)`` when ``e`` is ``x * c`` with ``c`` a positive constant."""
        if not (isinstance(e, ir.BinOp) and e.op == "*"):
            return None
        for x, c in ((e.left, e.right), (e.right, e.left)):
            value = constant_value(c)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return x, value
        return None

    def _tiles_within(self, x: ir.Expr, c: int, bound: Key,
                      inner: list[ir.Expr]) -> int | None:
        """The largest value ``bound`` may take where ``x < q`` is proven for some ``q`` with
        ``q * c <= bound`` (see :meth:`tiles_below`); ``None`` where it is not.  ``q`` is a
        launch count (:meth:`block_counts`) where the launch facts assert ``bound == q * c``;
        the sums and products inside ``x`` are appended to ``inner`` (they must not wrap)."""
        kx = self.defs.key(x)
        counts = self.block_counts(x, inner)
        for n in self.equal_extents(bound):
            if isinstance(n, ShapeKey) and Less(kx, OpKey("//", n, ConstKey(c))) in self.facts:
                return HARDWARE.extent
            for count in counts:
                for product in (OpKey("*", count, ConstKey(c)), OpKey("*", ConstKey(c), count)):
                    if Equal(n, product) in self.launch_facts or \
                            Equal(product, n) in self.launch_facts:
                        limit = self.launch_limits.get(product)
                        if limit is not None:
                            return limit
        return None

    def block_counts(self, x: ir.Expr, inner: list[ir.Expr]) -> list[Key]:
        """Launch-uniform counts ``q`` (as the keys a shape assert may name them by) with ``0
        <= x < q``: ``grid_dim.a`` for ``block_idx.a``, and for a block's index over several
        axes, ``y * s + w`` with ``y < q_y`` and ``0 <= w < s`` (``block_idx.x`` under ``s =
        grid_dim.x``, or ``w`` within a constant ``s``), ``q_y * s`` (both orders): ``y * s +
        w <= (q_y - 1) * s + s - 1``.  A grouped block order (``block_idx.z * grid_dim.x +
        block_idx.x`` for the block row) is such an index.  The sums and products taken
        apart are appended to ``inner``."""
        kx = self.defs.key(x)
        if isinstance(kx, SpecialKey) and kx.name == "block_idx":
            return [SpecialKey("grid_dim", kx.axis)]
        sums: list[ir.BinOp] = []
        terms = self._terms(x, sums)
        if len(terms) != 2:
            return []
        counts: list[Key] = []
        for hi, lo in (terms, terms[::-1]):
            if not (isinstance(hi, ir.BinOp) and hi.op == "*") or not self.is_nonneg(lo):
                continue
            for y, s in ((hi.left, hi.right), (hi.right, hi.left)):
                ks = self.defs.key(s)
                kl = self.defs.key(lo)
                size = constant_value(s)
                if isinstance(size, int) and not isinstance(size, bool):
                    if size <= 0 or not self.interval(lo).within(Interval(0, size - 1)):
                        continue
                elif not (isinstance(ks, SpecialKey) and ks.name == "grid_dim" and
                          kl == SpecialKey("block_idx", ks.axis)):
                    continue
                below: list[ir.Expr] = []
                for qy in self.block_counts(y, below):
                    counts += [OpKey("*", qy, ks), OpKey("*", ks, qy)]
                if counts and not inner:
                    inner += [*sums, hi, *below]
        return counts

    def equal_extents(self, bound: Key) -> set[Key]:
        """``bound`` and the values the launch facts assert equal to it, through any chain of
        equalities (``assert b.shape[1] == c.shape[1]``: a guard ``col < b.shape[1]`` bounds an
        index of ``c``'s axis 1 too)."""
        extents = {bound}
        grown = True
        while grown:
            grown = False
            for f in self.launch_facts:
                if isinstance(f, Equal) and (f.left in extents) != (f.right in extents):
                    extents |= {f.left, f.right}
                    grown = True
        return extents

    def at_least(self, e: ir.Expr, m: int) -> bool:
        """Is the integer ``e >= m`` proven (``m >= 1``)?"""
        c = constant_value(e)
        if isinstance(c, int):
            return c >= m
        k = self.defs.key(e)
        if shows_at_least(self.facts, k, m):
            return True
        if m == 1 and NotEqual(k, ConstKey(0)) in self.facts and self.is_nonneg(e):
            return True
        inner = e
        while isinstance(inner, ir.Cast) and is_widening(inner):
            inner = inner.value
        if isinstance(inner, ir.Local):
            d = self.defs.single_def(inner.var)
            if d is not None and self.at_least(d, m):
                return True
        # `a.shape[1] + BK` (in i64): from the intervals of its parts, as computed.
        return self.interval(e).lo >= m

    def is_positive(self, e: ir.Expr) -> bool:
        """Is the integer ``e >= 1`` proven, by the facts or by the launch's limits
        (``block_dim.x``, ``block_dim.x * 4`` in a type it cannot leave)?"""
        if self.at_least(e, 1):
            return True
        while isinstance(e, ir.Local):
            d = self.defs.single_def(e.var)
            if d is None:
                return False
            e = d
        r = ValueRanges(HARDWARE).range(e)
        return r is not None and r.lo >= 1

    def in_range(self, e: ir.Expr, bound: int) -> bool:
        """Is ``0 <= e < bound`` proven (constant bound)?"""
        c = constant_value(e)
        if isinstance(c, int):
            return 0 <= c < bound
        k = self.defs.key(e)
        if not self.is_nonneg(e):
            return False
        if shows_within(self.facts, k, bound):
            return True
        inner = e
        while isinstance(inner, ir.Cast):
            inner = inner.value
        if isinstance(inner, ir.Local):
            d = self.defs.single_def(inner.var)
            if d is not None:
                return self.in_range(d, bound)
        return False

    def is_nonneg(self, e: ir.Expr) -> bool:
        """Is ``e >= 0`` proven?"""
        ty = e.ty
        if isinstance(ty, ir.ScalarType) and ty.info.kind in ("uint", "bool"):
            return True
        if isinstance(e, ir.Const):
            return e.value >= 0
        if isinstance(e, (ir.UidComponent, ir.Special, ir.LaneId, ir.Shape)):
            return True
        if NonNegative(self.defs.key(e)) in self.facts:
            return True
        if isinstance(e, ir.Local):
            if id(e.var) in self.defs.grid_stride_vars:
                return True
            d = self.defs.single_def(e.var)
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
                    self.no_wrap.prove(e, lambda e: self.at_least(split[0], -split[1]))
                    return True
                return False
            if e.op in ("+", "*"):
                # Signed arithmetic wraps: the sum or product of nonnegative values is only
                # nonnegative when it provably stays below the type's maximum.
                return (self.is_nonneg(e.left) and self.is_nonneg(e.right)
                        and self.no_wrap.holds(e))
            if e.op in ("//", ">>"):
                if not (self.is_nonneg(e.left) and self.is_nonneg(e.right)):
                    return False
                if e.op == ">>" and _constant_shift(e):
                    # x >> n of a nonnegative x is the logical shift: plain C (see
                    # gn_asr32 for what the arithmetic one costs).
                    self.no_wrap.prove(e, lambda e: self.is_nonneg(e.left))
                return True
            if e.op == "%":
                return self.is_nonneg(e.right)
            if e.op == "&":
                return self.is_nonneg(e.left) or self.is_nonneg(e.right)
            if e.op in ("|", "^"):
                # The sign bit is clear in both (two negative operands' ``^`` is not negative
                # either, but is not taken apart here).
                return self.is_nonneg(e.left) and self.is_nonneg(e.right)
        if isinstance(e, ir.MathCall):
            if e.name == "min":
                return all(self.is_nonneg(a) for a in e.args)
            if e.name == "max":
                return any(self.is_nonneg(a) for a in e.args)
        return False

    def interval(self, e: ir.Expr) -> Interval:
        """The values the integer ``e`` may take here, as the generated code computes it (a
        part that may wrap makes it the whole type), from the launch's limits and the facts."""
        r = FactRanges(self).range(e)
        return r if r is not None else Interval(1, 0)  # not an integer: nothing is within it

    def upper(self, e: ir.Expr, operation: bool = False) -> int | None:
        """An upper bound of the nonnegative integer ``e`` as a mathematical integer (before its
        own operation wraps), from the launch's limits and the facts; ``None`` when ``e`` is no
        integer.  Widening casts and locals assigned once are looked through (``x = n * 4``:
        ``x``'s bound is the product's), so the caller learns whether that operation wraps.

        ``operation``: the question is whether ``e``'s own operation wraps (the no-wrap proofs),
        so the facts about ``e``'s value are not used: they hold of the value computed, wrapped
        or not (``if m * 4 < 100`` holds for an ``m * 4`` that wrapped to 4)."""
        known: int | None = None  # the least bound the facts give on the way down
        top = e
        for _ in range(_MAX_CHAIN):
            fact = self.block_tile_limit(top) if operation else self._known_upper(top)
            if fact is not None:
                known = fact if known is None else min(known, fact)
            if isinstance(top, ir.Cast) and is_widening(top):
                top = top.value
            elif isinstance(top, ir.Local) and (d := self.defs.single_def(top.var)) is not None:
                top = d
            else:
                break
        ranges = FactRanges(self)
        if isinstance(top, ir.BinOp) and top.op in ("+", "*"):
            # The premise: ``e >= 0``, which of a sum or a product the callers have shown of
            # both operands (:meth:`is_nonneg`), so their intervals start at 0.
            a, b = ranges.range(top.left), ranges.range(top.right)
            if a is None or b is None:
                return None
            r = BINARY[top.op](Interval(max(a.lo, 0), max(a.hi, 0)),
                               Interval(max(b.lo, 0), max(b.hi, 0)))
        else:
            r = ranges.unwrapped(top)
        if r is None:
            return None
        return r.hi if known is None else min(r.hi, known)

    def _known_upper(self, e: ir.Expr) -> int | None:
        tile = self.block_tile_limit(e)
        known = upper_bound(self.facts, self.defs.key(e))
        return tile if known is None else known if tile is None else min(tile, known)

    def block_tile_limit(self, e: ir.Expr) -> int | None:
        """The largest ``block_idx.x * BN`` where the launcher keeps ``grid_dim.x * BN`` within
        its type (an :class:`~gpu_native.spec.IndexFits` of a hoisted shape assert such as
        ``assert grid_dim.x * BN >= c.shape[1]``): that limit less ``BN``, reached without
        wrapping, so a tile's element ``block_idx.x * BN + i`` (``i < BN``) cannot wrap either.
        ``None`` for any other ``e``."""
        if not (isinstance(e, ir.BinOp) and e.op == "*"):
            return None
        k = self.defs.key(e)
        if not isinstance(k, OpKey):
            return None
        full = type_interval(e.ty)
        for x, c in ((k.left, k.right), (k.right, k.left)):
            n = c.integer
            if isinstance(x, SpecialKey) and x.name == "block_idx" and n is not None and n > 0:
                grid = SpecialKey("grid_dim", x.axis)
                limit = self.launch_limits.get(OpKey("*", grid, c),
                                               self.launch_limits.get(OpKey("*", c, grid)))
                # (A limit of a wider type than e's, as keys see through widening casts, says
                # nothing of e's own arithmetic.)
                if limit is not None and full is not None and limit <= full.hi:
                    return limit - n
        return None

    def counter_fits(self, stop: ir.Expr, step: ir.Expr, ty: ir.ScalarType) -> bool:
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


class FactRanges(ValueRanges):
    """:class:`~gpu_native.analysis.ranges.ValueRanges` narrowed by the facts that hold where
    the proofs are: each part's interval is cut by the facts about its value (``i < TM`` from
    ``range(TM)``, ``thread_idx.y < TY`` from ``assert block_dim.y == TY``), and a local
    assigned once has its value's interval.  Facts name computed values, and ValueRanges
    widens a result that may wrap to its whole type, so every interval holds of the value the
    generated code computes.  One is made per question: its memo holds while the facts do."""

    def __init__(self, proofs: BoundsProofs):
        super().__init__(HARDWARE)
        self.proofs = proofs
        self.open: set[int] = set()  # the locals being resolved, against any cycle

    def variable(self, var: ir.Var) -> Interval | None:
        d = self.proofs.defs.single_def(var)
        if d is None or id(var) in self.open:
            return super().variable(var)
        self.open.add(id(var))
        try:
            return self.range(d)
        finally:
            self.open.discard(id(var))

    def range(self, e: ir.Expr) -> Interval | None:
        tile = self._block_tile(e)
        if tile is not None:
            return tile
        r = super().range(e)
        if r is None:
            return None
        k = self.proofs.defs.key(e)
        facts = self.proofs.facts
        lo, hi = r
        if lo < 0 and NonNegative(k) in facts:
            lo = 0
        low = lower_bound(facts, k)
        if low is not None and low > lo:
            lo = low
        if lo == 0 and NotEqual(k, ConstKey(0)) in facts:
            lo = 1
        known = upper_bound(facts, k)
        if known is not None and known < hi:
            hi = known
        # Contradictory facts mean the code is unreachable; keep a well-formed interval.
        return Interval(lo, max(lo, hi))


    def _block_tile(self, e: ir.Expr) -> Interval | None:
        limit = self.proofs.block_tile_limit(e)
        return None if limit is None else Interval(0, limit)


def _constant_shift(e: ir.BinOp) -> bool:
    """Is ``e``'s shift amount a constant within its type's width?"""
    n = constant_value(e.right)
    return (isinstance(n, int) and isinstance(e.ty, ir.ScalarType) and e.ty.info.is_int
            and 0 <= n < e.ty.info.bits)


def _fits_unsigned(e: ir.Expr, n: int) -> bool:
    """A value of a narrow unsigned type (a u8 pixel, say) is below 2**bits."""
    while isinstance(e, ir.Cast) and isinstance(e.value.ty, ir.ScalarType) and \
            e.value.ty.info.is_int and e.ty.info.bits >= e.value.ty.info.bits:
        e = e.value
    ty = e.ty
    return isinstance(ty, ir.ScalarType) and ty.info.kind == "uint" and (1 << ty.info.bits) <= n


def _uncast(e: ir.Expr, single_def) -> ir.Expr:
    """``e`` through widening casts and locals assigned once."""
    while True:
        if isinstance(e, ir.Cast) and is_widening(e):
            e = e.value
        elif isinstance(e, ir.Local) and single_def(e.var) is not None:
            e = single_def(e.var)
        else:
            return e
