"""Typed IR → CUDA C++ for the warp matrix statements and asynchronous copies
(:class:`~gpu_native.ir.MatrixOp`): calls of the prelude's ``gn_ldmatrix``, ``gn_mma_m16n8k16``,
``gn_cp_async`` (inline PTX), and the accumulator store written out per lane.

Each operand is addressed as ``&array[first element]`` with that element's bounds checks, and the
last element of its footprint is checked the same way (``(void)&array[last]``: the address is
never dereferenced, the checks are what remains).  A mixin of
:class:`~gpu_native.emit.cuda.CudaEmitter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from .spelling import convert

#: The pair type of each output element type of a fragment store, and how two floats make one.
PAIRS = {"f32": ("float2", "make_float2"), "f16": ("__half2", "__floats2half2_rn"),
         "bf16": ("__nv_bfloat162", "__floats2bfloat162_rn")}

if TYPE_CHECKING:
    from collections.abc import Callable

    from .entry_points import ErrorHelpers


def fragment_arrays(body) -> set[int]:
    """The ids of the local arrays a body uses as fragments (declared 16-byte aligned, so that
    their 16-bit elements pair into the 32-bit registers of the PTX instructions)."""
    out: set[int] = set()
    for n in ir.walk(body):
        if isinstance(n, ir.MatrixOp):
            out.update(id(o.array.var) for o in n.operands if o.array.ty.space == "local")
    return out


class MatrixEmitter:
    """The :class:`~gpu_native.ir.MatrixOp` statements of the CUDA emitter."""

    if TYPE_CHECKING:
        expr: Callable[[ir.Expr], str]
        line: Callable[[str], None]
        element: Callable[..., str]
        extent: Callable[[ir.ArrayRef, int], str]
        helpers: ErrorHelpers

    fragments: set[int] = set()  # the fragment arrays of the function being emitted

    def unroll_for_fragments(self, s: ir.ForRange) -> bool:
        """Whether to unroll a loop fully: one of constant bounds that indexes a fragment (so
        that every index into it is a constant and the fragments stay in registers, not in
        local memory, also where the device compiler would not unroll a long body)."""
        if not self.fragments or not all(
                isinstance(x, ir.Const) for x in (s.start, s.stop, s.step)):
            return False
        return any(isinstance(n, ir.ArrayRef) and id(n.var) in self.fragments
                   for n in ir.walk(s.body))

    def operand_address(self, o: ir.Operand) -> str:
        """``&first element``, after checking the footprint's last element."""
        if o.last:
            self.line(f"(void)&{self.element(o.array, o.last, o.last_checks)};")
        return f"&{self.element(o.array, o.indices, o.checks)}"

    def check_aligned(self, pointer: str, nbytes: int, site: int) -> None:
        if site >= 0:
            h = self.helpers
            self.line(f"{h.assert_}(__gn_err, gn_aligned({pointer}, {nbytes - 1}u), "
                      f"{site}u{h.origin});")

    def emit_MatrixOp(self, s: ir.MatrixOp) -> None:
        getattr(self, "matrix_" + s.op)(s)

    def matrix_ldmatrix(self, s: ir.MatrixOp) -> None:
        frag, src = s.operands
        num, trans, align = s.params
        self.line("{")
        f = self.operand_address(frag)
        p = self.operand_address(src)
        self.line(f"const void* __gn_src = {p};")
        self.check_aligned("__gn_src", 16, align)
        self.line(f"gn_ldmatrix<{num}, {'true' if trans else 'false'}>({f}, __gn_src);")
        self.line("}")

    def matrix_mma(self, s: ir.MatrixOp) -> None:
        acc, a, b = s.operands
        elem = a.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        operands = (f"({self.operand_address(acc)}, {self.operand_address(a)}, "
                    f"{self.operand_address(b)});")
        if elem.name == "f32":
            self.line("gn_mma_m16n8k8_tf32" + operands)
            return
        bf16 = "true" if elem.name == "bf16" else "false"
        self.line(f"gn_mma_m16n8k16<{bf16}>" + operands)

    def matrix_store_matrix(self, s: ir.MatrixOp) -> None:
        dst, acc = s.operands
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        ld = self.extent(dst.array, 1)
        self.line("{")
        p = self.operand_address(dst)
        a = self.operand_address(acc)
        ct = elem.info.c_name
        self.line(f"{ct}* __gn_p = {p};")
        self.line(f"const float* __gn_a = {a};")
        self.line("const int __gn_lane = gn_lane_id();")
        self.line(f"__gn_p += (gn_i64)(__gn_lane >> 2) * {ld} + 2 * (__gn_lane & 3);")
        self.store_pairs(elem, ld, "__gn_a[{k}]", "0")
        self.line("}")

    def store_pairs(self, elem: ir.ScalarType, ld: str, value: str, column: str) -> None:
        """Store an accumulator fragment's four elements of one thread (``value`` with ``{k}``
        for element k: two column pairs, the second 8 rows down) from ``__gn_p + column``: by
        pairs (one store of two) where ``__gn_p`` is aligned to a pair and the rows are an even
        number of elements apart, else one by one.  The pairs halve the stores; for a 16-bit
        output of ``warpgroup_store`` they also keep ptxas from serializing the wgmma (C7514:
        converted one at a time, the accumulators are "read by non-wgmma instructions")."""
        pair_t, pack = PAIRS.get(elem.name, (None, None))
        if pair_t is not None:
            mask = 2 * elem.info.itemsize - 1
            self.line(f"if ((((unsigned long long)__gn_p) & {mask}) == 0 && ({ld} & 1) == 0) {{")
            for k, offset in enumerate(("0", f"8 * (gn_i64){ld}")):
                self.line(f"*({pair_t}*)&__gn_p[{column} + {offset}] = "
                          f"{pack}({value.format(k=2 * k)}, {value.format(k=2 * k + 1)});")
            self.line("} else {")
        for k, offset in enumerate(("0", "1", f"8 * (gn_i64){ld}", f"8 * (gn_i64){ld} + 1")):
            self.line(f"__gn_p[{column} + {offset}] = "
                      f"{convert(value.format(k=k), ir.F32, elem)};")
        if pair_t is not None:
            self.line("}")

    def matrix_cp_async(self, s: ir.MatrixOp) -> None:
        dst, src = s.operands
        nbytes, dst_align, src_align = s.params
        self.line("{")
        d = self.operand_address(dst)
        p = self.operand_address(src)
        self.line(f"void* __gn_dst = {d};")
        self.line(f"const void* __gn_src = {p};")
        self.check_aligned("__gn_dst", nbytes, dst_align)
        self.check_aligned("__gn_src", nbytes, src_align)
        self.line(f"gn_cp_async<{nbytes}>(__gn_dst, __gn_src);")
        self.line("}")

    def matrix_cp_async_commit(self, s: ir.MatrixOp) -> None:
        self.line("gn_cp_async_commit();")

    def matrix_cp_async_wait(self, s: ir.MatrixOp) -> None:
        self.line(f"gn_cp_async_wait<{s.params[0]}>();")


__all__ = ["MatrixEmitter", "fragment_arrays"]
