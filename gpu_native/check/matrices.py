"""The type pass over the warp matrix statements and asynchronous copies (``ldmatrix``,
``mma_sync``, ``store_matrix``, ``cp_async``, ``cp_async_commit``, ``cp_async_wait``).

A *fragment* is the last axis of a ``local_array``: its element type and extent are the
fragment's type (an ``f16``/``bf16`` A operand of ``mma.m16n8k16`` holds 8 elements per lane, a B
operand 4, an ``f32`` accumulator 4; ``f32`` A and B operands, multiplied as tf32 by
``mma.m16n8k8``, hold 4 and 2), and the indices before it pick one fragment of an array of
them.  So fragments need no type of their own: they are registers when every index is a constant
after unrolling, which the device compiler sees, and the simulator reads them like any local.

Every operand is bounds checked like an element access: the first element of its footprint and
the last one (a row of 8 for ``ldmatrix``, ``nbytes`` for ``cp_async``, the 16 x 8 tile's corner
for ``store_matrix``), each proven or checked by :mod:`.bounds`; so is the 16-byte alignment of
an ``ldmatrix`` row and of a ``cp_async`` destination in shared memory.  A fragment's own axis is whole
by construction (its extent is checked here), so only its leading indices are checked.  A write
into shared or global memory covers several elements per thread.  ``cp_async``'s run of
``nbytes`` along the last axis is proven like a store whose last index is ``index + e``, ``e`` in
``[0, width)`` (:meth:`.unique.UniqueWrites.store_span`): a swizzled tile ``(s, ra, (ka ^ ((ra >>
1) & 3)) * 8)`` with ``(ra, ka)`` a split of ``tid + q * THREADS`` is (see :mod:`.splits`).
``store_matrix`` writes a 16 x 8 tile through the lanes of a warp: lane ``4g + t`` writes rows
``r + g``, ``r + g + 8`` at columns ``c + 2t``, ``c + 2t + 1``.  It is proven like a store at ``(r +
8h + g, c + 2t + e)``, ``h`` and ``e`` counters in ``[0, 2)``, from an origin ``(r, c)`` the same
in every lane of the warp (:meth:`.unique.UniqueWrites.store_tile`, :mod:`.warptiles`): tiles
whose origins step by 16 rows or 8 columns between warps and iterations are apart.
"""

from __future__ import annotations

from .. import ir
from ..frontend import syntax as S
from ..lang import registry as R
from .checker_base import CheckerBase
from .expressions import WeakConst

# The fragment extents (last axis of the local array) of mma.m16n8k16, by operand; f32 inputs
# multiply as tf32 in mma.m16n8k8, whose A and B fragments hold half as many elements.
A_FRAGMENT, B_FRAGMENT, ACC_FRAGMENT = 8, 4, 4
TF32_A_FRAGMENT, TF32_B_FRAGMENT = 4, 2
_HALF_TYPES = ("f16", "bf16")
_MMA_TYPES = ("f16", "bf16", "f32")
_CP_ASYNC_BYTES = (4, 8, 16)


def _plus(index: ir.Expr, n: int) -> ir.Expr:
    """``index + n`` in the index's own integer type (a footprint's far end)."""
    ty = index.ty
    assert isinstance(ty, ir.ScalarType)  # the checker's indices are integers
    return ir.BinOp(index.span, ty, "+", index, ir.Const(index.span, ty, n))


class MatrixChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: the ``matrix_op`` entries of the registry."""

    def matrix_op(self, name: str, call: S.Call) -> ir.Stmt:
        entry = R.GPU_NATIVE[name]
        got = self.args(call, entry.param_names, entry.required, f"{name}()")
        # Every lane of a warp takes part: no grid-tail exit, no uid striding.
        self.traits.note_barrier("warp")
        assert isinstance(entry.sim, str)  # the IR's name of the operation
        return getattr(self, "matrix_" + entry.sim)(call, got)

    # ---- operands ------------------------------------------------------------------------------

    def _array(self, e: S.Expr, what: str) -> ir.ArrayRef:
        base = self.expr(e)
        if not isinstance(base, ir.ArrayRef):
            raise self.error(f"{what} must be an array", e.span)
        if not isinstance(base.ty.elem, ir.ScalarType):
            raise self.error(f"{what} must be an array of scalars, not of {base.ty.elem}",
                             e.span)
        return base

    def _index_list(self, e: S.Expr | None) -> tuple[S.Expr, ...]:
        if e is None:
            return ()
        return tuple(e.elts) if isinstance(e, S.Tuple) else (e,)

    def _const(self, e: S.Expr | None, default: int, what: str) -> int:
        if e is None:
            return default
        value = self.expr(e)
        if isinstance(value, (WeakConst, ir.Const)) and isinstance(value.value, (int, bool)):
            return int(value.value)
        raise self.error(f"{what} must be a constant", e.span)

    def _pure_indices(self, base: ir.ArrayRef, raw: tuple[S.Expr, ...], span
                      ) -> tuple[ir.Expr, ...]:
        indices = self.indices(base, raw, span)
        if any(self.has_effects(i) for i in indices):
            raise self.error("an index of a warp matrix operand is read twice (for both ends "
                             "of its footprint); compute it into a local first", span)
        return indices

    def fragment(self, e: S.Expr, index: S.Expr | None, types: tuple[str, ...], extent: int,
                 what: str, span, *, at_least: bool = False) -> ir.Operand:
        """A fragment operand: a local array of ``types`` whose last axis holds ``extent``
        elements (at least that many where ``at_least``), at the leading ``index``."""
        base = self._array(e, what)
        elem = base.ty.elem
        assert isinstance(elem, ir.ScalarType)
        if base.ty.space != "local":
            raise self.error(f"{what} must be a local_array (a fragment lives in registers), "
                             f"not a {base.ty.space} array", e.span)
        if elem.name not in types:
            raise self.error(f"{what} must hold {' or '.join(types)} elements, not {elem}",
                             e.span)
        shape = base.ty.shape
        assert shape is not None  # local arrays have a constant shape
        last = shape[-1]
        # ldmatrix may fill several consecutive fragments of an array of them (x4.trans loads
        # two B fragments of 4 elements): its footprint then reaches along the axis before.
        spread = extent // last if at_least and last < extent and extent % last == 0 else 1
        if spread > 1 and base.ty.ndim < 2:
            spread = 0
        if not (last == extent or (at_least and last >= extent) or spread > 1):
            raise self.error(
                f"the last axis of {what} '{base.var.name}' has {last} elements; this fragment "
                f"takes {'at least ' if at_least else ''}{extent}", e.span,
                f"declare it local_array({elem}, (..., {extent}))")
        raw = self._index_list(index)
        if len(raw) != base.ty.ndim - 1:
            raise self.error(f"{what} '{base.var.name}' is a {base.ty.ndim}-D array: its "
                             f"fragment index needs {base.ty.ndim - 1} "
                             f"ind{'ex' if base.ty.ndim == 2 else 'ices'} (the last axis is "
                             "the fragment)", index.span if index is not None else span)
        zero = S.Num(span, 0)
        indices = self._pure_indices(base, (*raw, zero), span)
        checks = self.bounds.checks(base, indices, span)
        if spread <= 1:
            return ir.Operand(base, indices, checks)
        last_indices = (*indices[:-2], _plus(indices[-2], spread - 1), indices[-1])
        return ir.Operand(base, indices, checks, last_indices,
                          self.bounds.checks(base, last_indices, span))

    def alignment_site(self, span, what: str, proven: bool = False) -> int:
        """The site that reports a misaligned address (-1 where bounds checks are off or the
        address is ``proven`` aligned)."""
        if not self.ctx.options.bounds_check or proven:
            return -1
        return self.ctx.kernel.new_site("assert", span, message=what)

    def span_operand(self, e: S.Expr, index: S.Expr, width: tuple[int, ...], what: str, span,
                     space: str) -> ir.Operand:
        """A memory operand whose footprint reaches ``width[k] - 1`` past the index on axis
        ``k`` (the trailing axes; the leading ones reach nothing)."""
        base = self._array(e, what)
        if space == "shared" and base.ty.space != "shared":
            raise self.error(f"{what} must be a shared_array, not a {base.ty.space} array",
                             e.span)
        if space == "global" and base.ty.space not in ("global", "const"):
            raise self.error(f"{what} must be a global array (a kernel parameter), not a "
                             f"{base.ty.space} array", e.span)
        indices = self._pure_indices(base, self._index_list(index), span)
        checks = self.bounds.checks(base, indices, span)
        pad = (0,) * (len(indices) - len(width)) + width
        last = tuple(i if w <= 1 else _plus(i, w - 1) for i, w in zip(indices, pad))
        last_checks = self.bounds.checks(base, last, span)
        return ir.Operand(base, indices, checks, last, last_checks)

    def _writable(self, op: ir.Operand, what: str, span, width: int = 0,
                  tile: bool = False, group_cols: int = 0) -> tuple[str, str]:
        """How a write through ``op`` is race-free, and the rule that proved it: ``unsafe``, or
        ``uid`` where the unique-write proofs show each thread's elements its own: (``width``) a
        run of that many along the last axis, as ``cp_async`` writes (see
        :meth:`.unique.UniqueWrites.store_span`), or (``tile``) ``store_matrix``'s 16 x 8 tile
        from a warp-uniform origin (:meth:`.unique.UniqueWrites.store_tile`), or
        (``group_cols``) ``warpgroup_store``'s 64 x ``group_cols`` tile from a
        warpgroup-uniform origin."""
        base = op.array
        if not base.ty.mutable or base.ty.space == "const":
            raise self.error(f"{what} '{base.var.name}' is read-only", span)
        if width and self.unsafe_depth == 0:
            return "uid", self.unique.store_span(base, op.indices, width, span,
                                                 what.split("'")[0])
        if (tile or group_cols) and self.unsafe_depth == 0:
            return "uid", self.unique.store_tile(base, op.indices, span, group_cols)
        if self.unsafe_depth == 0:
            raise self.error(
                f"{what} '{base.var.name}' is written several elements per thread, which the "
                "uniqueness rules do not follow", span,
                "put the statement inside `with unsafe():` and say in a comment why no two "
                "threads write one element (the simulator's race detector checks it)")
        return "unsafe", ""

    # ---- the statements -----------------------------------------------------------------------

    def matrix_ldmatrix(self, call: S.Call, got: dict) -> ir.Stmt:
        num = self._const(got.get("num"), 4, "ldmatrix()'s num")
        trans = self._const(got.get("trans"), 0, "ldmatrix()'s trans")
        if num not in (1, 2, 4):
            raise self.error(f"ldmatrix() loads 1, 2 or 4 matrices, not {num}", call.span)
        src = self.span_operand(got["src"], got["src_index"], (8,), "ldmatrix()'s src",
                                call.span, "shared")
        elem = src.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        if elem.name not in _HALF_TYPES:
            raise self.error(f"ldmatrix() loads 16-bit elements (f16, bf16), not {elem}",
                             call.span)
        frag = self.fragment(got["frag"], got["frag_index"], (elem.name,), 2 * num,
                             "ldmatrix()'s frag", call.span, at_least=True)
        # Each lane's row of 8 elements: 16 bytes.
        align = self.alignment_site(call.span, "ldmatrix(): a row address is not 16-byte aligned",
                                    self.bounds.aligned(src.array, src.indices, 8))
        return ir.MatrixOp(call.span, "ldmatrix", (frag, src), (num, trans, align))

    def matrix_mma(self, call: S.Call, got: dict) -> ir.Stmt:
        # The A fragment's element type picks the shape: f16/bf16 m16n8k16, f32 (as tf32)
        # m16n8k8; its extent is checked once the type is known.
        a_base = self._array(got["a"], "mma_sync()'s a")
        a_elem = a_base.ty.elem
        assert isinstance(a_elem, ir.ScalarType)
        if a_elem.name not in _MMA_TYPES:
            raise self.error(f"mma_sync()'s a must hold f16, bf16 or f32 (tf32) elements, not "
                             f"{a_elem}", got["a"].span)
        tf32 = a_elem.name == "f32"
        a = self.fragment(got["a"], got["a_index"], (a_elem.name,),
                          TF32_A_FRAGMENT if tf32 else A_FRAGMENT, "mma_sync()'s a", call.span)
        b = self.fragment(got["b"], got["b_index"], (a_elem.name,),
                          TF32_B_FRAGMENT if tf32 else B_FRAGMENT, "mma_sync()'s b", call.span)
        acc = self.fragment(got["acc"], got["acc_index"], ("f32",), ACC_FRAGMENT,
                            "mma_sync()'s acc", call.span)
        return ir.MatrixOp(call.span, "mma", (acc, a, b))

    def matrix_store_matrix(self, call: S.Call, got: dict) -> ir.Stmt:
        acc = self.fragment(got["acc"], got["acc_index"], ("f32",), ACC_FRAGMENT,
                            "store_matrix()'s acc", call.span)
        dst = self.span_operand(got["dst"], got["dst_index"], (16, 8), "store_matrix()'s dst",
                                call.span, "any")
        if dst.array.ty.ndim != 2:
            raise self.error("store_matrix() writes a 2-D array", call.span)
        if dst.array.ty.space == "local":
            raise self.error("store_matrix() writes a shared or global array", call.span)
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        if elem.name not in ("f16", "bf16", "f32"):
            raise self.error(f"store_matrix() writes f16, bf16 or f32 arrays, not {elem}",
                             call.span)
        unique, proof = self._writable(dst, "store_matrix()'s dst", call.span, tile=True)
        return ir.MatrixOp(call.span, "store_matrix", (dst, acc), (), unique, proof)

    def matrix_cp_async(self, call: S.Call, got: dict) -> ir.Stmt:
        nbytes = self._const(got["nbytes"], 0, "cp_async()'s nbytes")
        if nbytes not in _CP_ASYNC_BYTES:
            raise self.error(f"cp_async() copies 4, 8 or 16 bytes, not {nbytes}", call.span)
        src = self._array(got["src"], "cp_async()'s src")
        dst = self._array(got["dst"], "cp_async()'s dst")
        if src.ty.elem != dst.ty.elem:
            raise self.error(f"cp_async() copies between arrays of one element type, not "
                             f"{src.ty.elem} and {dst.ty.elem}", call.span)
        elem = src.ty.elem
        assert isinstance(elem, ir.ScalarType)
        size = elem.info.itemsize
        if nbytes % size:
            raise self.error(f"{nbytes} bytes is not a whole number of {elem} elements",
                             call.span)
        width = (nbytes // size,)
        d = self.span_operand(got["dst"], got["dst_index"], width, "cp_async()'s dst",
                              call.span, "shared")
        s = self.span_operand(got["src"], got["src_index"], width, "cp_async()'s src",
                              call.span, "global")
        unique, proof = self._writable(d, "cp_async()'s dst", call.span, width[0])
        what = f"cp_async(): an address is not aligned to {nbytes} bytes"
        # The shared destination's alignment may be proven; a global source's too, from a
        # launch fact on its row length and the address the launcher then checks.
        dst_align = self.alignment_site(call.span, what,
                                        self.bounds.aligned(d.array, d.indices, width[0]))
        src_align = self.alignment_site(call.span, what, self.bounds.launch_aligned(
            s.array, s.indices, width[0], call.span, "cp_async()"))
        return ir.MatrixOp(call.span, "cp_async", (d, s), (nbytes, dst_align, src_align),
                           unique, proof)

    def matrix_cp_async_commit(self, call: S.Call, got: dict) -> ir.Stmt:
        return ir.MatrixOp(call.span, "cp_async_commit")

    def matrix_cp_async_wait(self, call: S.Call, got: dict) -> ir.Stmt:
        n = self._const(got.get("n"), 0, "cp_async_wait()'s n")
        if not 0 <= n <= 7:
            raise self.error(f"cp_async_wait() takes 0 to 7 pending groups, not {n}", call.span)
        return ir.MatrixOp(call.span, "cp_async_wait", (), (n,))
