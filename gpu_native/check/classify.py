"""What an index is unique in, for the unique-write proofs' classic rule (see :mod:`.unique`):
the thread coordinates that an index expression tells apart (:meth:`IndexClasses.classify`), and
whether a value is the same in every thread of the launch (:meth:`IndexClasses.is_uniform`).

:class:`IndexClasses` is a base of :class:`.unique.UniqueWrites`: it reads an index, the
function's definitions and the facts that hold there, never the stores.  The bounds proofs read
it back: an equality with a unique index pins a coordinate (:meth:`IndexClasses.classify_untied`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import constant_value, is_widening
from ..nodes import node
from .facts import Equal, LaneKey, LoadKey, OpKey, ResidueKey, SpecialKey, UidKey, split_offset
from .wrapping import index_is_exact, operands_keep_it

if TYPE_CHECKING:
    from .bounds import BoundsProofs
    from .context import Definitions, FunctionContext
    from .facts import Key

__all__ = ["IndexClasses", "Unique", "adds_a_positive_constant", "grid_coords", "is_ticket",
           "required_coords"]


@node
class Unique:
    """An index that is injective in the thread coordinates ``coords``; ``scale`` is its stride.
    ``pins``: the facts it is injective under, where only the threads a condition lets through
    are told apart (a quotient under a pinned remainder, ``if tid % 32 == 0: y[tid // 32]``):
    another store through the same index under another condition may meet it.  ``modulus``:
    ``K`` where the index is ``q * K + j`` told apart by ``j`` alone (any ``q``; ``0 <= j <
    K``), so a thread owns every element of ``j``'s residue class (:meth:`IndexClasses.owner_key`)."""

    coords: frozenset[str]
    scale: int = 1
    pins: frozenset = frozenset()
    modulus: int = 0


def is_ticket(e: ir.Atomic) -> bool:
    """Is ``e`` a ticket draw, ``count.atomic_ref(0).fetch_add(1)``: an atomic add of a positive
    constant to one element (constant indices) of an array parameter (or shared array)?  Each
    draw returns another value where nothing else changes the array (checked at the end,
    :meth:`.unique.UniqueWrites.check_tickets`)."""
    return (adds_a_positive_constant(e)
            and (e.array.var.is_param or e.array.ty.space == "shared")
            and all(isinstance(constant_value(i), int) for i in e.indices))


def adds_a_positive_constant(e: ir.Atomic) -> bool:
    """Does ``e`` add a positive integer constant (a draw, were its indices constant)?"""
    k = constant_value(e.operands[0]) if e.op == "add" and e.operands else None
    return isinstance(k, int) and not isinstance(k, bool) and k > 0


def grid_coords(axis: int) -> frozenset[str]:
    return frozenset({f"tid{axis}", f"bid{axis}"})


def required_coords(ndim: int, space: str) -> frozenset[str]:
    """Coordinates a store must be unique in: every thread of the grid (global) or block (shared)."""
    coords = {f"tid{a}" for a in range(ndim)}
    if space == "global":
        coords |= {f"bid{a}" for a in range(ndim)}
    return frozenset(coords)


class IndexClasses:
    """What an index is unique in, and whether a value is launch-uniform: the part of
    :class:`.unique.UniqueWrites` that reads an index, not the stores.

    It adds nothing at run time: the attributes below are set by
    :meth:`UniqueWrites.__init__ <.unique.UniqueWrites>` (documented there).
    """

    ctx: FunctionContext
    defs: Definitions
    is_kernel: bool
    bounds: BoundsProofs
    range_unique_vars: dict[int, frozenset]

    def classify(self, e: ir.Expr) -> Unique | None:
        """Which thread coordinates ``e`` is injective in (see :mod:`.unique`)."""
        if isinstance(e, ir.UidComponent):
            if e.scope == "grid":
                return Unique(grid_coords(e.axis))
            return Unique(frozenset({f"tid{e.axis}"}))
        if isinstance(e, ir.Special):
            if e.name == "thread_idx":
                return Unique(frozenset({f"tid{e.axis}"}))
            if e.name == "block_idx":
                return Unique(frozenset({f"bid{e.axis}"}))
            return None
        if isinstance(e, ir.Local):
            if id(e.var) in self.defs.unique_params:
                return Unique(frozenset({f"param:{e.var.name}"}))
            if id(e.var) in self.defs.grid_stride_vars:
                return Unique(grid_coords(0))
            if id(e.var) in self.range_unique_vars:
                return Unique(self.range_unique_vars[id(e.var)])
            d = self.defs.single_def(e.var)
            return self.classify(d) if d is not None else None
        if isinstance(e, ir.Cast):
            src = e.value.ty
            if isinstance(src, ir.ScalarType) and src.info.is_int and e.ty.info.is_int and \
                    e.ty.info.bits >= src.info.bits:
                return self.classify(e.value)
            return None
        if isinstance(e, ir.Atomic):
            if not is_ticket(e):
                return None
            # Every draw returns another value (see is_ticket): unique over the whole grid, or
            # over the block for a counter in shared memory.
            return Unique(required_coords(3, "global" if e.array.ty.space == "global"
                                          else "shared"))
        if isinstance(e, ir.BinOp):
            left, right = e.left, e.right
            if e.op == "+":
                grid = _blockwise_uid(left, right, self._resolved)
                if grid is None:
                    grid = _blockwise_uid(right, left, self._resolved)
                if grid is not None:
                    return Unique(grid_coords(grid))
                for a, b in ((left, right), (right, left)):
                    u = self.classify(a)
                    if u is None:
                        continue
                    if self.is_uniform(b):
                        return u
                    if u.scale > 1 and self.bounds.in_range(b, u.scale):
                        # u*K + j with 0 <= j < K: the blocks of K are disjoint across u, and j
                        # (a thread index, or a per-thread loop counter) never leaves its block.
                        inner = self.classify(b)
                        return Unique(u.coords | (inner.coords if inner else frozenset()),
                                      pins=u.pins | (inner.pins if inner else frozenset()))
                residue = self._residue(left, right)
                if residue is not None:
                    # q*K + j with 0 <= j < K and j unique: any q at all (a value the thread
                    # loads, histogram64's `s[bin * THREADS + tid]`) keeps j's residue modulo
                    # K, so two threads with equal sums have equal j (exact integers: the
                    # store's wrap check covers the index).
                    inner = self.classify(residue[1])
                    assert inner is not None  # (_residue classified it)
                    if self.classify(residue[2]) is not None:
                        # u*K + j with u unique too: left to the ownership proofs, which tell
                        # the blocks of K apart as well (and say how in `expand --proofs`).
                        return None
                    return Unique(inner.coords, pins=inner.pins, modulus=residue[0])
                return self._bit_fields(e)
            if e.op == "-":
                u = self.classify(left)
                if u is not None and self.is_uniform(right):
                    return u
                return None
            if e.op == "*":
                for a, b in ((left, right), (right, left)):
                    u = self.classify(a)
                    bc = constant_value(b)
                    if u is not None and isinstance(bc, int) and bc != 0:
                        return Unique(u.coords, u.scale * abs(bc), u.pins)
                return None
            if e.op in ("//", ">>"):
                return self._pinned_quotient(left, right, e.op)
            if e.op in ("|", "^"):
                return self._bit_fields(e)
        return None

    def _bit_fields(self, e: ir.Expr) -> Unique | None:
        """A permutation of ``u``'s bits: ``(u & M1) << s1 | (u & M2) >> s2 | ...`` (``+`` or
        ``^`` for ``|`` too), cuda-samples histogram64's bank-spreading ``threadPos``.  Over
        ``0 <= u < 2**n``, where the masks cover all ``n`` bits, no right shift drops one and
        the shifted fields do not overlap, each field can be read back from the value, so equal
        values mean equal ``u``."""
        terms = _bit_terms(self._resolved(e), self._resolved)
        if terms is None:
            return None
        u, fields = terms[0][0], []
        ukey = self.defs.key(u)
        for x, mask, shift in terms:
            if self.defs.key(x) != ukey:
                return None
            fields.append((mask, shift))
        lo, hi = self.bounds.interval(u)
        unique = self.classify(u)
        if unique is None or lo < 0 or hi < lo or hi >= 1 << 30:
            return None
        width = (1 << hi.bit_length()) - 1  # every bit u may set
        covered = taken = 0
        for mask, shift in fields:
            field = mask & width
            if shift < 0 and field & ((1 << -shift) - 1):
                return None  # a right shift drops a bit
            moved = field << shift if shift >= 0 else field >> -shift
            if moved & taken or moved >= 1 << 31:
                return None
            covered |= field
            taken |= moved
        if covered != width:
            return None
        return Unique(unique.coords, pins=unique.pins)

    def _residue(self, left: ir.Expr, right: ir.Expr) -> tuple[int, ir.Expr, ir.Expr] | None:
        """``(K, j, q * K)`` where ``left + right`` is ``q * K + j`` (either way round) with
        ``j`` unique and ``0 <= j < K`` proven here; else ``None``."""
        for a, b in ((left, right), (right, left)):
            k = self._multiple(a)
            if k is not None and self.classify(b) is not None and self._below(b, k):
                return k, b, a
        return None

    def residue_hint(self, indices) -> str | None:
        """Why an index of the form ``q * K + j`` is not unique by its residue (see
        :meth:`_residue`), for a refusal; ``None`` where no index has that form."""
        for idx in indices:
            e = _strip_exact_casts(self._resolved(idx))
            if not (isinstance(e, ir.BinOp) and e.op == "+"):
                continue
            for a, b in ((e.left, e.right), (e.right, e.left)):
                k = self._multiple(a)
                if k is None:
                    continue
                if self.classify(b) is None:
                    if _bit_terms(self._resolved(b), self._resolved) is None:
                        continue
                    return (f"the index is a multiple of {k} plus a rearrangement of a "
                            "thread's bits that is not a permutation of them: the masks must "
                            "cover every bit the value may set, no right shift may drop a "
                            "bit, and the shifted fields must not overlap (`(t & 15) << 2 | "
                            "(t & 48) >> 4` for t < 64); or use `with unsafe():`")
                if not self._below(b, k):
                    return (f"the index is a multiple of {k} plus a value that tells the "
                            f"threads apart but is not shown to stay below {k}: with it below "
                            f"{k} (`assert block_dim.x == {k}` for thread_idx.x), each thread "
                            f"writes only the elements of its own residue modulo {k}, whatever "
                            "the multiple (a bin loaded from memory, as histogram64's "
                            "per-thread counters); or use `with unsafe():`")
        return None

    def _below(self, e: ir.Expr, k: int) -> bool:
        """Is ``0 <= e < k`` proven, from the facts or from ``e``'s interval (the bits a
        permutation of ``thread_idx.x`` under ``assert block_dim.x == 64`` may set)?"""
        if self.bounds.in_range(e, k):
            return True
        lo, hi = self.bounds.interval(e)
        return 0 <= lo <= hi < k

    def _residue_sum(self, e: ir.Expr) -> tuple[ir.BinOp, tuple[int, ir.Expr, ir.Expr]] | None:
        """Where ``e`` is unique by its residue alone (:attr:`Unique.modulus`): the sum it is
        and its ``(K, j, q * K)`` (:meth:`_residue`); else ``None``."""
        u = self.classify(e)
        resolved = _strip_exact_casts(self._resolved(e))
        if u is None or not u.modulus or not (isinstance(resolved, ir.BinOp)
                                              and resolved.op == "+"):
            return None
        residue = self._residue(resolved.left, resolved.right)
        return None if residue is None else (resolved, residue)

    def residue_reads_memory(self, e: ir.Expr) -> bool | None:
        """Where ``e`` is unique by its residue alone: whether its ``q`` is computed from a
        read of memory (a bin loaded from the data, which no trace of the block's rounds can
        know); ``None`` where ``e`` is not such an index."""
        found = self._residue_sum(e)
        return None if found is None else _loads(self.defs.key(found[1][2]))

    def residue_exact(self, e: ir.Expr) -> bool:
        """Is ``e``, unique by its residue alone, computed without wrapping from what its row
        ``q`` holds?  ``q`` may be anything (a hash that wraps on its way, masked to the
        table's rows): only ``q * K`` and the sum must stay within their type for the values
        the operands take, and the digit ``j`` must be exact, as its uniqueness is of its
        mathematical value."""
        found = self._residue_sum(e)
        if found is None:
            return False
        total, (_, digit, product) = found
        multiple = _strip_exact_casts(self._resolved(product))
        return (isinstance(multiple, ir.BinOp) and operands_keep_it(multiple, self.bounds)
                and operands_keep_it(total, self.bounds)
                and index_is_exact(digit, self.bounds, self.defs.single_def) is True)

    def owner_key(self, e: ir.Expr, store: bool = False) -> Key:
        """The key that names which thread owns the element ``e`` indexes, for comparing a
        store's owner index with another access's: ``e``'s own key, but for an exact ``q * K +
        j`` unique by ``j`` alone (:attr:`Unique.modulus`) the residue class of ``j``, which
        only one thread writes, whatever ``q`` each access has.  A ``store``'s index that may
        wrap is refused for that, after this."""
        found = self._residue_sum(e)
        if found is not None and (store or index_is_exact(
                e, self.bounds, self.defs.single_def) is True or self.residue_exact(e)):
            modulus, digit, _ = found[1]
            return ResidueKey(modulus, self.defs.key(digit))
        return self.defs.key(e)

    def _multiple(self, e: ir.Expr) -> int | None:
        """The positive constant ``K`` where ``e`` is ``q * K`` (``K * q``, ``q << s``) for some
        integer ``q``, through locals assigned once and widening casts; else ``None``."""
        e = _strip_exact_casts(self._resolved(e))
        if not (isinstance(e, ir.BinOp) and isinstance(e.ty, ir.ScalarType)
                and e.ty.info.is_int):
            return None
        if e.op == "<<":
            s = constant_value(e.right)
            ok = isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 62
            return 1 << s if ok else None
        if e.op != "*":
            return None
        for side in (e.left, e.right):
            k = constant_value(side)
            if isinstance(k, int) and not isinstance(k, bool) and k != 0:
                return abs(k)
        return None

    def _pinned_quotient(self, left: ir.Expr, right: ir.Expr, op: str) -> Unique | None:
        """``u // K`` (``u >> s``: K = 2**s) where a condition pins ``u % M`` to a constant, K
        dividing M (``if tid % 32 == 0: y[tid // 32]``; ``lane = tid & 31``): floor division
        gives ``u == K * (u // K) + u % K``, and ``u % K`` is fixed, so equal quotients mean
        equal ``u``.  ``u`` may carry a constant offset, ``(u - c) // K``, whose remainder is
        then fixed too (exact integers: the store's wrap check covers the index).  With ``u``
        the flat id ``block_idx.a * block_dim.a + thread_idx.a`` and the block a known multiple
        of M along ``a`` (an assert), a pin of ``thread_idx.a % M`` pins ``u % M``: the block's
        offset is a multiple of M."""
        k = constant_value(right)
        if not isinstance(k, int) or isinstance(k, bool):
            return None
        if op == ">>":
            k = 1 << k if 0 <= k < 63 else 0
        if k <= 0:
            return None
        base = left
        candidates = [left]
        while True:  # (u - c) // K: the pin may be on u
            defined = self.defs.single_def(base.var) if isinstance(base, ir.Local) else None
            if defined is not None:
                base = defined
                continue
            offset = split_offset(base)
            if offset is None:
                break
            base = offset[0]
            candidates.append(base)
        u = self.classify(left)
        if u is None:
            return None
        keys = {self.defs.key(c) for c in candidates}
        # u = block_idx.a * block_dim.a + thread_idx.a: where the block is a multiple of M along
        # a, u % M == thread_idx.a % M, so a pin of the thread's lane pins u's.
        axes = (self._flat_axis(c) for c in candidates)
        block_multiple = {ax: self._block_multiple(ax) for ax in axes if ax is not None}
        thread_axes = {c.axis for c in keys if isinstance(c, SpecialKey)
                       and c.name == "thread_idx"}
        pinned: Key  # a fact fixes pinned % m
        m: int | None
        for f in self.bounds.facts:
            if type(f) is not Equal:
                continue
            for a, b in ((f.left, f.right), (f.right, f.left)):
                if b.integer is None:
                    continue
                if isinstance(a, LaneKey):
                    # lane_id() is thread_idx.x % 32 where blocks are one-dimensional.
                    if not (self.is_kernel and self.ctx.ndim == 1):
                        continue
                    pinned, m = SpecialKey("thread_idx", 0), 32
                elif isinstance(a, OpKey):
                    pinned, m = a.left, a.right.integer
                    if m is None or m <= 0:
                        continue
                    if a.op == "&" and m & (m + 1) == 0:
                        m += 1
                    elif a.op != "%":
                        continue
                else:
                    continue
                if pinned not in keys and not (
                        isinstance(pinned, SpecialKey) and pinned.name == "thread_idx"
                        and pinned.axis in block_multiple
                        and block_multiple[pinned.axis] % m == 0) and not (
                        # thread_idx.a // K under a pin of the grid's lane, u % M with u
                        # the flat id along a: the same remainder, where the block is a
                        # multiple of M along a (cuda-samples shfl_scan's `id % warpSize`).
                        (axis := _flat_key_axis(pinned)) is not None and axis in thread_axes
                        and self._block_multiple(axis) % m == 0):
                    continue
                if m % k == 0:
                    return Unique(u.coords, pins=u.pins | {f})
        return None

    def _flat_axis(self, e: ir.Expr) -> int | None:
        """The axis ``a`` where ``e`` is ``block_idx.a * block_dim.a + thread_idx.a`` (through
        locals assigned once; a grid uid's component is that sum), or ``None``."""
        e = self._resolved(e)
        if isinstance(e, ir.UidComponent):
            # (A kernel that reads thread_idx or lane_id(), as a pin of the lane does, is
            # never launched with its uids remapped.)
            return e.axis if e.scope == "grid" else None
        if not (isinstance(e, ir.BinOp) and e.op == "+"):
            return None
        axis = _blockwise_uid(e.left, e.right, self._resolved)
        return axis if axis is not None else _blockwise_uid(e.right, e.left, self._resolved)

    def index_pins(self, indices) -> frozenset:
        """The pins the indices are unique under (:attr:`Unique.pins`), together."""
        return frozenset().union(*(u.pins for u in map(self.classify, indices) if u is not None))

    def _resolved(self, e: ir.Expr) -> ir.Expr:
        """``e`` through the locals assigned once (``tid = thread_idx.x``: ``tid`` is
        ``thread_idx.x``)."""
        while isinstance(e, ir.Local):
            d = self.defs.single_def(e.var)
            if d is None:
                break
            e = d
        return e

    def _block_multiple(self, axis: int) -> int:
        """A number the block's extent along ``axis`` is a known multiple of, from the asserts
        that hold here: ``block_dim.x % 32 == 0`` (or ``block_dim.x & 31 == 0``) gives 32,
        ``block_dim.x == 96`` gives 96; 1 where none says more."""
        extent = SpecialKey("block_dim", axis)
        multiple = 1
        for f in self.bounds.facts:
            if type(f) is not Equal:
                continue
            for a, b in ((f.left, f.right), (f.right, f.left)):
                if a == extent and b.integer is not None and b.integer > 0:
                    multiple = math.lcm(multiple, b.integer)
                if not (isinstance(a, OpKey) and a.left == extent and b.integer == 0):
                    continue
                m = a.right.integer
                if m is not None and m > 0 and a.op == "%":
                    multiple = math.lcm(multiple, m)
                elif m is not None and m > 0 and a.op == "&" and m & (m + 1) == 0:
                    multiple = math.lcm(multiple, m + 1)
        return multiple

    def classify_untied(self, e: ir.Expr) -> Unique | None:
        """:meth:`classify`, but ``None`` for a value computed from a ticket draw: an equality
        with one pins threads only while the draws cannot repeat, which
        :meth:`.unique.UniqueWrites.ticket_facts` leaves to the end of the body to prove.  An
        equality pins threads (:func:`.facts.cond_facts`) only where ``e`` is exact too: ``col == 5`` holds in two threads where ``col`` wraps
        around (an i32 ``block_idx.x * block_dim.x + thread_idx.x`` past 2**31, ``thread_idx.x *
        2**30``), so a value that may wrap pins nothing."""
        if self._tickets(e):
            return None
        u = self.classify(e)
        if u is None or index_is_exact(e, self.bounds, self.defs.single_def) is not True:
            return None
        return u

    def _tickets(self, e: ir.Expr) -> list[ir.Atomic]:
        """The ticket draws whose value the index ``e`` is computed from (as :meth:`classify`
        follows it: locals assigned once, widening casts, arithmetic)."""
        if isinstance(e, ir.Atomic):
            return [e] if is_ticket(e) else []
        if isinstance(e, ir.Local):
            d = self.defs.single_def(e.var)
            return self._tickets(d) if d is not None else []
        if isinstance(e, ir.Cast):
            return self._tickets(e.value)
        if isinstance(e, ir.BinOp):
            return self._tickets(e.left) + self._tickets(e.right)
        return []

    def is_uniform(self, e: ir.Expr) -> bool:
        """Is ``e`` the same for every thread of the launch, for the whole kernel?"""
        if isinstance(e, ir.Const):
            return True
        if isinstance(e, ir.Local):
            var = e.var
            if var.is_param:
                # A device function's parameter is whatever each caller passes: a value of
                # the thread's, maybe (`f(out, FlatLayout1D.uid())`).
                return self.is_kernel and self.defs.assign_counts.get(var.name, 0) == 0 and \
                    id(var) not in self.defs.unique_params
            d = self.defs.single_def(var)
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


def _loads(k: Key) -> bool:
    """Is the value ``k`` computed from a read of memory?"""
    return isinstance(k, LoadKey) or k.reads_memory() or any(map(_loads, k.parts()))


def _bit_terms(e: ir.Expr, resolve: Callable[[ir.Expr], ir.Expr]
               ) -> list[tuple[ir.Expr, int, int]] | None:
    """``[(u, M, s), ...]`` where ``e`` is a ``|``, ``^`` or ``+`` of terms ``(u & M) << s``
    (``>>`` as a negative ``s``; ``u & M`` alone, ``M & u`` too; ``(u >> s) & M`` and ``(u <<
    s) & M`` as the same fields), ``M`` an integer constant; ``None`` for anything else."""
    e = _strip_exact_casts(resolve(e))
    if isinstance(e, ir.BinOp) and e.op in ("|", "^", "+"):
        left = _bit_terms(e.left, resolve)
        right = _bit_terms(e.right, resolve) if left is not None else None
        return None if left is None or right is None else left + right
    shift = 0
    if isinstance(e, ir.BinOp) and e.op in ("<<", ">>"):
        s = constant_value(e.right)
        if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 31:
            return None
        shift = s if e.op == "<<" else -s
        e = _strip_exact_casts(resolve(e.left))
    if not (isinstance(e, ir.BinOp) and e.op == "&"):
        return None
    for x, m in ((e.left, e.right), (e.right, e.left)):
        mask = constant_value(m)
        if not isinstance(mask, int) or isinstance(mask, bool):
            continue
        x = _strip_exact_casts(resolve(x))
        inner = constant_value(x.right) if isinstance(x, ir.BinOp) and x.op in (
            "<<", ">>") else None
        if shift == 0 and mask >= 0 and isinstance(inner, int) and not isinstance(
                inner, bool) and 0 <= inner < 31:
            # (u >> s) & M is (u & (M << s)) >> s; (u << s) & M is (u & (M >> s)) << s.
            assert isinstance(x, ir.BinOp)
            if x.op == ">>":
                return [(x.left, mask << inner, -inner)]
            return [(x.left, mask >> inner, inner)]
        return [(x, mask, shift)]
    return None


def _blockwise_uid(a: ir.Expr, b: ir.Expr,
                   resolve: Callable[[ir.Expr], ir.Expr] | None = None) -> int | None:
    """Recognise ``block_idx.a * block_dim.a + thread_idx.a``: the grid uid along ``a`` (each
    part looked up through ``resolve``, where given: locals assigned once).  Only casts that
    keep every value are looked through (``i32(u8(thread_idx.y))`` repeats every 256 threads of
    a block 512 tall)."""
    def part(x: ir.Expr) -> ir.Expr:
        x = _strip_exact_casts(x)
        if resolve is not None:
            x = _strip_exact_casts(resolve(x))
        return x

    a, b = part(a), part(b)
    if not (isinstance(b, ir.Special) and b.name == "thread_idx"):
        return None
    if not (isinstance(a, ir.BinOp) and a.op == "*"):
        return None
    parts = [part(side) for side in (a.left, a.right)]
    names = {(p.name, p.axis) for p in parts if isinstance(p, ir.Special)}
    if names == {("block_idx", b.axis), ("block_dim", b.axis)}:
        return b.axis
    return None


def _flat_key_axis(k: Key) -> int | None:
    """The axis ``a`` where the key ``k`` is the grid uid ``block_idx.a * block_dim.a +
    thread_idx.a`` (in either order), else ``None``."""
    if isinstance(k, UidKey):
        return k.axis if k.scope == "grid" else None
    if not (isinstance(k, OpKey) and k.op == "+"):
        return None
    for product, thread in ((k.left, k.right), (k.right, k.left)):
        if not (isinstance(thread, SpecialKey) and thread.name == "thread_idx"
                and isinstance(product, OpKey) and product.op == "*"):
            continue
        names = {(p.name, p.axis) for p in (product.left, product.right)
                 if isinstance(p, SpecialKey)}
        if names == {("block_idx", thread.axis), ("block_dim", thread.axis)}:
            return thread.axis
    return None


def _strip_exact_casts(e: ir.Expr) -> ir.Expr:
    """``e`` without the casts that keep its value: widening ones, and a launch coordinate (never
    negative, below 2**31) cast to an integer type of 32 bits or more."""
    while isinstance(e, ir.Cast):
        keeps = is_widening(e) or (
            isinstance(e.value, ir.Special) and isinstance(e.ty, ir.ScalarType)
            and e.ty.info.is_int and e.ty.info.bits >= 32)
        if not keeps:
            break
        e = e.value
    return e
