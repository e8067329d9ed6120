"""The type pass over the tensor-copy statements ``tma_load`` and ``tma_wait`` (sm_90's tensor
memory accelerator, PTX ``cp.async.bulk.tensor``).

``tma_load(dst, dst_index, src, src_index)`` copies the tile of a 2-D global array whose
top-left element is ``src[src_index]`` into the whole 2-D slice ``dst[dst_index]`` of a
swizzled shared array (``shared_array(T, shape, swizzle=128)``): R x C elements, R the slice's
rows (8 to 256, a multiple of 8) and C its columns, in boxes of 64 columns, which the hardware
writes in the 128-byte swizzle the array is stored in (:func:`gpu_native.emit.spelling.
array_offset`).  The launcher describes each source array to the hardware once per array and
box (a *tensor map*, a hidden ``__grid_constant__`` parameter: :func:`gpu_native.emit.tma.
tensor_maps`).

Completion is tracked per slice: each leading index of a destination (a ring's stage) has an
``mbarrier`` in shared memory, made when the kernel starts, and each thread keeps two bits per
stage in registers: the phase it waits for next and whether it has issued copies into the stage
since its last wait.  ``tma_load`` adds the copy's bytes to the stage's barrier and marks the
stage issued; ``tma_wait`` arrives on the barrier if this thread issued (the barrier expects one
arrival a phase, so a phase cannot complete before its copies are all issued), then waits for the
phase and flips its bit.  Every thread that waits must wait once per fill, in order, which the
simulator checks (it models the barriers exactly).

Proven here: the tile's first and last elements in bounds (the slice is whole by
construction), one element type, a read-only source that is a kernel parameter (the launcher
encodes its map), and that no two threads write one slice (:meth:`.unique.UniqueWrites.
store_box`: issue it under ``if thread_idx.x == 0:``).  Refilling a stage after the other
threads' reads is ordered by a ``sync_threads()`` as for any shared store, which the simulator's
race detector checks.
"""

from __future__ import annotations

import math

from .. import ir
from ..frontend import syntax as S
from ..nodes import Factory, node
from .warpgroup import SWIZZLE_COLS, WarpgroupChecker

#: A slice's rows: a box has at most 256 rows; the swizzle repeats every 8.
TMA_MAX_ROWS = 256
#: The stages of one destination: one bit each in a thread's 32-bit phase and issue masks.
TMA_MAX_STAGES = 32


@node(frozen=False)
class TmaUses:
    """What a kernel's tensor copies need: its tensor maps, as ``(source parameter, rows)`` in
    the order of their hidden parameters, and the destinations loaded and waited (by variable
    id, with the first wait's span)."""

    maps: list = Factory(list)
    loaded: set = Factory(set)
    waited: dict = Factory(dict)


class TmaChecker(WarpgroupChecker):
    """Mixin of :class:`~.checker.FunctionChecker`: ``tma_load`` and ``tma_wait``."""

    tma: TmaUses  # the kernel's maps and destinations (set by FunctionChecker)

    def _tma_slice(self, e: S.Expr, index: S.Expr | None, what: str, span) -> ir.Operand:
        """The whole 2-D slice ``dst[index]`` of a swizzled shared array."""
        base = self._array(e, what)
        ty = base.ty
        if ty.space != "shared" or not ty.swizzle:
            raise self.error(f"{what} must be a swizzled shared array, declared "
                             "`shared_array(T, shape, swizzle=128)`", e.span)
        shape = _shape(base)
        raw = self._index_list(index)
        if len(raw) != len(shape) - 2:
            raise self.error(
                f"{what} '{base.var.name}' has shape {shape}: its index names the "
                f"{len(shape) - 2} leading ind{'ex' if len(shape) == 3 else 'ices'} of a 2-D "
                f"slice ({'()' if len(shape) == 2 else 'e.g. (stage,)'}), which the copy fills "
                "whole", index.span if index is not None else span)
        rows, cols = shape[-2], shape[-1]
        if rows > TMA_MAX_ROWS:
            raise self.error(f"{what} '{base.var.name}': a tensor copy fills at most "
                             f"{TMA_MAX_ROWS} rows, and its slices have {rows}", e.span,
                             "split the rows over more leading indices")
        stages = math.prod(shape[:-2])
        if stages > TMA_MAX_STAGES:
            raise self.error(f"{what} '{base.var.name}' has {stages} slices; a tensor-copy "
                             f"destination has at most {TMA_MAX_STAGES}", e.span)
        zero = S.Num(span, 0)
        indices = self._pure_indices(base, (*raw, zero, zero), span)
        checks = self.bounds.checks(base, indices, span)
        last = (*indices[:-2], ir.Const(span, ir.I64, rows - 1), ir.Const(span, ir.I64, cols - 1))
        return ir.Operand(base, indices, checks, last, self.bounds.checks(base, last, span))

    def matrix_tma_load(self, call: S.Call, got: dict) -> ir.Stmt:
        if not self.is_kernel:
            raise self.error("tma_load() is issued in the kernel itself (its source is a kernel "
                             "parameter, which the launcher describes to the hardware), not in "
                             "a device function", call.span)
        dst = self._tma_slice(got["dst"], got["dst_index"], "tma_load()'s dst", call.span)
        src = self._array(got["src"], "tma_load()'s src")
        if src.ty.space != "global" or src.ty.ndim != 2 or not src.var.is_param:
            raise self.error("tma_load()'s src must be a 2-D array parameter of the kernel "
                             "(the launcher describes it to the hardware)", got["src"].span)
        if src.ty.mutable:
            raise self.error(f"tma_load()'s src '{src.var.name}' is writable: the copy reads "
                             "it behind the kernel's stores, so it must be a read-only "
                             "parameter (CUDASlice2D)", got["src"].span)
        if src.ty.strided:
            raise self.error(f"tma_load()'s src '{src.var.name}' is Strided: a tensor copy "
                             "reads contiguous rows", got["src"].span)
        if src.ty.elem != dst.array.ty.elem:
            raise self.error(f"tma_load() copies between arrays of one element type, not "
                             f"{src.ty.elem} and {dst.array.ty.elem}", call.span)
        rows, cols = _shape(dst.array)[-2:]
        s = self.span_operand(got["src"], got["src_index"], (rows, cols), "tma_load()'s src",
                              call.span, "global")
        if len(s.indices) != 2:
            raise self.error("tma_load()'s src_index is the (row, column) of the tile's "
                             "top-left element", got["src_index"].span)
        if self.unsafe_depth:
            unique, proof = "unsafe", ""
        else:
            unique = "uid"
            proof = self.unique.store_box(dst.array, dst.indices, (rows, cols), call.span)
        uses = self.tma
        key = (id(src.var), rows)
        slots = [(id(v), r) for v, r in uses.maps]
        if key not in slots:
            uses.maps.append((src.var, rows))
            slots.append(key)
        uses.loaded.add(id(dst.array.var))
        stages = math.prod(_shape(dst.array)[:-2])
        return ir.MatrixOp(call.span, "tma_load", (dst, s),
                           (slots.index(key), rows, cols // SWIZZLE_COLS, stages), unique, proof)

    def matrix_tma_wait(self, call: S.Call, got: dict) -> ir.Stmt:
        if not self.is_kernel:
            raise self.error("tma_wait() waits in the kernel itself, not in a device function",
                             call.span)
        dst = self._tma_slice(got["dst"], got["dst_index"], "tma_wait()'s dst", call.span)
        self.tma.waited.setdefault(id(dst.array.var), (dst.array.var.name, call.span))
        stages = math.prod(_shape(dst.array)[:-2])
        return ir.MatrixOp(call.span, "tma_wait", (dst,), (stages,))

    def check_tma(self) -> None:
        """Once the body is known: a waited destination must be loaded somewhere (its barrier
        would never complete)."""
        for var_id, (name, span) in self.tma.waited.items():
            if var_id not in self.tma.loaded:
                raise self.error(f"tma_wait() waits for copies into '{name}', but no tma_load() "
                                 "of this kernel writes it: the wait would never return", span)



def _shape(ref: ir.ArrayRef) -> tuple[int, ...]:
    shape = ref.ty.shape
    assert shape is not None  # a shared array has a constant shape
    return shape


__all__ = ["TMA_MAX_ROWS", "TMA_MAX_STAGES", "TmaChecker", "TmaUses"]
