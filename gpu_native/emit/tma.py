"""Typed IR → CUDA C++ for the tensor copies ``tma_load`` and ``tma_wait`` (see
:mod:`gpu_native.check.tma` for the protocol): the hidden tensor-map parameters, each
destination's barriers and per-thread phase and issue masks, and the calls of the prelude's
``gn_mbar_*`` and ``gn_tma_load_2d``.  A mixin of :class:`~gpu_native.emit.cuda.CudaEmitter`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import ir
from .spelling import row_major

if TYPE_CHECKING:
    from collections.abc import Callable

#: The columns of one box: a 128-byte row of 16-bit elements (the swizzle's width).
BOX_COLS = 64


def tensor_maps(body) -> list[tuple[ir.Var, int, int]]:
    """The tensor maps a kernel's ``tma_load`` statements use, in the order of their hidden
    parameters: (source parameter, box rows, box columns)."""
    found: dict[int, tuple[ir.Var, int, int]] = {}
    for n in ir.walk(body):
        if isinstance(n, ir.MatrixOp) and n.op == "tma_load":
            found.setdefault(n.params[0], (n.operands[1].array.var, n.params[1], BOX_COLS))
    return [found[i] for i in sorted(found)]


def tma_destinations(body) -> list[ir.Var]:
    """The shared arrays that ``tma_load`` writes or ``tma_wait`` waits for, in body order."""
    out: dict[int, ir.Var] = {}
    for n in ir.walk(body):
        if isinstance(n, ir.MatrixOp) and n.op in ("tma_load", "tma_wait"):
            var = n.operands[0].array.var
            out.setdefault(id(var), var)
    return list(out.values())


def slices(var: ir.Var) -> tuple[int, ...]:
    """A destination's leading extents (its slices are the rest: 2-D)."""
    ty = var.ty
    assert isinstance(ty, ir.ArrayType) and ty.shape is not None  # a swizzled shared array
    return ty.shape[:-2]


def map_param(index: int) -> str:
    return f"__gn_tma_map{index}"


class TmaEmitter:
    """The tensor-copy statements of the CUDA emitter."""

    if TYPE_CHECKING:
        line: Callable[[str], None]
        expr: Callable[[ir.Expr], str]
        operand_address: Callable[[ir.Operand], str]

    tma_dsts: list[ir.Var]  # the kernel's destinations (tma_destinations), numbered in order
    tma_names: dict[int, int]  # destination variable id -> its number

    def tma_params(self, body) -> list[str]:
        """The kernel's tensor maps: 128-byte ``__grid_constant__`` parameters, after the
        user's and before the error record (the runtime's argument buffer's order)."""
        return [f"const __grid_constant__ gn_tma_map {map_param(i)}"
                for i in range(len(tensor_maps(body)))]

    def tma_setup(self) -> None:
        """Each destination's barriers (one a slice) and this thread's masks, the barriers
        initialised by one thread and made visible to the block (and to the copy engine)
        before the kernel's own statements."""
        dsts = self.tma_dsts
        if not dsts:
            return
        for k, var in enumerate(dsts):
            self.line(f"__shared__ __align__(8) unsigned long long __gn_tma{k}_bar"
                      f"[{math.prod(slices(var))}];")
            self.line(f"unsigned __gn_tma{k}_phase = 0u, __gn_tma{k}_issued = 0u;")
        self.line("if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {")
        for k, var in enumerate(dsts):
            n = math.prod(slices(var))
            self.line(f"    for (int __gn_s = 0; __gn_s < {n}; ++__gn_s) "
                      f"gn_mbar_init(gn_smem_addr(&__gn_tma{k}_bar[__gn_s]), 1u);")
        self.line("    gn_mbar_init_fence();")
        self.line("}")
        self.line("__syncthreads();")

    def _stage(self, o: ir.Operand) -> tuple[int, str]:
        """The destination's number and the flat index of the operand's slice."""
        k = self.tma_names[id(o.array.var)]
        lead = o.indices[:-2]
        if not lead:
            return k, "0"
        return k, "(int)(" + row_major([self.expr(i) for i in lead],
                                       [str(d) for d in slices(o.array.var)]) + ")"

    def matrix_tma_load(self, s: ir.MatrixOp) -> None:
        dst, src = s.operands
        index, rows, boxes, _stages = s.params
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        self.line("{")
        self.line(f"(void){self.operand_address(src)};")
        d = self.operand_address(dst)
        k, stage = self._stage(dst)
        self.line(f"const unsigned __gn_dst = gn_smem_addr({d});")
        self.line(f"const int __gn_stage = {stage};")
        self.line(f"const unsigned __gn_bar = gn_smem_addr(&__gn_tma{k}_bar[__gn_stage]);")
        nbytes = rows * boxes * BOX_COLS * elem.info.itemsize
        self.line(f"gn_mbar_expect_tx(__gn_bar, {nbytes}u);")
        row, col = (self.expr(i) for i in src.indices)
        self.line(f"const int __gn_row = (int)({row}), __gn_col = (int)({col});")
        box_bytes = rows * BOX_COLS * elem.info.itemsize
        for j in range(boxes):
            self.line(f"gn_tma_load_2d(__gn_dst + {j * box_bytes}u, &{map_param(index)}, "
                      f"__gn_bar, __gn_col + {j * BOX_COLS}, __gn_row);")
        self.line(f"__gn_tma{k}_issued |= 1u << __gn_stage;")
        self.line("}")

    def matrix_tma_wait(self, s: ir.MatrixOp) -> None:
        (dst,) = s.operands
        self.line("{")
        self.line(f"(void){self.operand_address(dst)};")
        k, stage = self._stage(dst)
        self.line(f"const int __gn_stage = {stage};")
        self.line(f"const unsigned __gn_bar = gn_smem_addr(&__gn_tma{k}_bar[__gn_stage]);")
        # The issuing thread's arrival closes the phase: its copies are all issued.
        self.line(f"if ((__gn_tma{k}_issued >> __gn_stage) & 1u) {{")
        self.line("    gn_mbar_arrive(__gn_bar);")
        self.line(f"    __gn_tma{k}_issued &= ~(1u << __gn_stage);")
        self.line("}")
        self.line(f"gn_mbar_wait(__gn_bar, (__gn_tma{k}_phase >> __gn_stage) & 1u, __gn_err);")
        self.line(f"__gn_tma{k}_phase ^= 1u << __gn_stage;")
        self.line("}")


__all__ = ["BOX_COLS", "TmaEmitter", "map_param", "tensor_maps", "tma_destinations"]
