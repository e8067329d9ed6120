"""Typed IR → CUDA C++ for the warpgroup statements (:mod:`gpu_native.check.warpgroup`):
``wgmma`` inline PTX from shared-memory descriptors, the accumulator store written out per
thread, and the fences.  A mixin of :class:`~gpu_native.emit.cuda.CudaEmitter`.

``warpgroup_mma`` is one ``asm volatile`` whose ``n / 2`` ``"+f"`` operands are the accumulator's
elements by constant index (generated here, as tools/_bench_hgemm.py's ``_wgmma_asm`` writes
them), so the accumulator stays in registers.  Its scale-d operand is a predicate set from an
input that is always 1 (accumulate).  ``warpgroup_wait(0)`` also fences the function's
accumulators as operands (an empty ``asm volatile`` reading and writing each, as CUTLASS's
``warpgroup_fence_operand``): the asynchronous MMA writes them behind the compiler's back, so no
read or copy of them may move above the wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from .cnames import cname
from .matrices import PAIRS, MatrixEmitter
from .spelling import row_major

if TYPE_CHECKING:
    from collections.abc import Callable

SWIZZLE_GROUP_BYTES = 1024  # 8 rows of 128 bytes: a descriptor's stride byte offset


def wgmma_accumulators(body) -> list[ir.Var]:
    """The accumulators of the ``warpgroup_mma`` statements of a body, in order of first use."""
    out: dict[int, ir.Var] = {}
    for n in ir.walk(body):
        if isinstance(n, ir.MatrixOp) and n.op == "warpgroup_mma":
            var = n.operands[0].array.var
            out.setdefault(id(var), var)
    return list(out.values())


def wgmma_asm(dtype: str, n: int, acc: str) -> str:
    """The statement of one ``wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype}`` (B
    N-major: its transpose bit set) accumulating into ``acc[0 .. n/2)`` from the descriptors
    ``__gn_da`` and ``__gn_db``."""
    count = n // 2
    regs = ", ".join(f"%{i}" for i in range(count))
    outs = ", ".join(f'"+f"({acc}[{i}])' for i in range(count))
    return (f'asm volatile("{{ .reg .pred p; setp.ne.b32 p, %{count + 2}, 0; '
            f'wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype} '
            f'{{{regs}}}, %{count}, %{count + 1}, p, 1, 1, 0, 1; }}" : {outs} '
            f': "l"(__gn_da), "l"(__gn_db), "r"(1));')


class WarpgroupEmitter(MatrixEmitter):
    """The warpgroup :class:`~gpu_native.ir.MatrixOp` statements of the CUDA emitter."""

    if TYPE_CHECKING:
        line: Callable[[str], None]

    wg_accumulators: list[ir.Var] = []  # of the function being emitted

    def fence_accumulators(self) -> None:
        for var in self.wg_accumulators:
            ty = var.ty
            assert isinstance(ty, ir.ArrayType) and ty.shape is not None
            name = cname(var)
            self.line("#pragma unroll")
            self.line(f"for (int __gn_i = 0; __gn_i < {ty.shape[0]}; ++__gn_i) "
                      f'asm volatile("" : "+f"({name}[__gn_i]) :: "memory");')

    def wg_check(self, cond: str, site: int) -> None:
        if site >= 0:
            h = self.helpers
            self.line(f"{h.assert_}(__gn_err, {cond}, {site}u{h.origin});")

    def matrix_warpgroup_mma(self, s: ir.MatrixOp) -> None:
        acc, a, b = s.operands
        n, _shape_site, align_site = s.params
        elem = a.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        b_shape = b.array.ty.shape
        assert b_shape is not None
        self.line("{")
        pa = self.operand_address(a)
        pb = self.operand_address(b)
        self.line(f"const unsigned __gn_a = (unsigned)__cvta_generic_to_shared({pa});")
        self.line(f"const unsigned __gn_b = (unsigned)__cvta_generic_to_shared({pb});")
        # A starts on an 8-row group at a 16-column step (the first 128 bytes of 1024, at a
        # multiple of 32); B on an 8-row group of a 64-column block (1024-aligned).
        self.wg_check("(__gn_a & 1023u) < 128u && (__gn_a & 31u) == 0 && (__gn_b & 1023u) == 0",
                      align_site)
        # B's column blocks lie one block of rows apart: the leading byte offset.
        lbo = b_shape[-2] * 128
        self.line(f"const unsigned long long __gn_da = gn_wgmma_desc(__gn_a, 16u, "
                  f"{SWIZZLE_GROUP_BYTES}u);")
        self.line(f"const unsigned long long __gn_db = gn_wgmma_desc(__gn_b, {lbo}u, "
                  f"{SWIZZLE_GROUP_BYTES}u);")
        self.line(wgmma_asm(elem.name, n, cname(acc.array.var)))
        self.line("}")

    def matrix_warpgroup_store(self, s: ir.MatrixOp) -> None:
        if len(s.operands) == 3:
            self.staged_warpgroup_store(s)
            return
        dst, acc = s.operands
        n = s.params[0]
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        ld = self.extent(dst.array, 1)
        self.line("{")
        p = self.operand_address(dst)
        ct = elem.info.c_name
        a = cname(acc.array.var)
        self.line(f"{ct}* __gn_p = {p};")
        self.line("const int __gn_t = gn_warpgroup_thread();")
        self.line(f"__gn_p += (gn_i64)((__gn_t >> 5) * 16 + ((__gn_t & 31) >> 2)) * {ld} "
                  "+ 2 * (__gn_t & 3);")
        self.line("#pragma unroll")
        self.line(f"for (int __gn_j = 0; __gn_j < {n // 8}; ++__gn_j) {{")
        self.store_pairs(elem, ld, f"{a}[4 * __gn_j + {{k}}]", "8 * __gn_j")
        self.line("}")
        self.line("}")

    def staged_warpgroup_store(self, s: ir.MatrixOp) -> None:
        """``warpgroup_store`` through a swizzled shared region: each thread's pairs into the
        region (the swizzle spreads a warp's eight rows over all banks), a barrier of the
        warpgroup's own 128 threads, then 16-byte row chunks from the region to ``dst``, a warp
        writing whole rows (element by element where ``dst`` is not 16-byte aligned), and the
        barrier again, so that the region is free when the statement ends."""
        dst, acc, staging = s.operands
        n = s.params[0]
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        pair_t, pack = PAIRS[elem.name]
        ld = self.extent(dst.array, 1)
        ref = staging.array
        extents = [self.extent(ref, axis) for axis in range(ref.ty.ndim)]
        a = cname(acc.array.var)
        ct = elem.info.c_name
        chunks = n // 8        # 16-byte chunks in a row of the tile
        self.line("{")
        self.line(f"(void){self.operand_address(staging)};")
        self.line(f"{ct}* __gn_p = {self.operand_address(dst)};")
        parts = [f"(int)({self.expr(i)})" for i in staging.indices]
        lead = row_major(parts[:-2], extents[:-2]) if len(parts) > 2 else "0"
        self.line(f"const int __gn_sl = {lead};")
        self.line(f"const int __gn_sr = {parts[-2]};")
        self.line(f"const int __gn_sc = {parts[-1]};")
        s_name = cname(ref.var)

        def at(row: str, col: str) -> str:
            return (f"{s_name}[gn_swz128<{extents[-2]}, {extents[-1]}>(__gn_sl, __gn_sr + {row}, "
                    f"__gn_sc + {col})]")

        self.line("const int __gn_t = gn_warpgroup_thread();")
        self.line("const int __gn_r = (__gn_t >> 5) * 16 + ((__gn_t & 31) >> 2);")
        self.line("#pragma unroll")
        self.line(f"for (int __gn_j = 0; __gn_j < {chunks}; ++__gn_j) {{")
        self.line("const int __gn_c = 8 * __gn_j + 2 * (__gn_t & 3);")
        for k, row in enumerate(("__gn_r", "__gn_r + 8")):
            self.line(f"*({pair_t}*)&{at(row, '__gn_c')} = "
                      f"{pack}({a}[4 * __gn_j + {2 * k}], {a}[4 * __gn_j + {2 * k + 1}]);")
        self.line("}")
        self.line("gn_warpgroup_barrier();")
        self.line(f"if ((((unsigned long long)__gn_p) & 15) == 0 && ({ld} & 7) == 0) {{")
        self.line("#pragma unroll")
        self.line(f"for (int __gn_q = 0; __gn_q < {n // 16}; ++__gn_q) {{")
        self.line("const int __gn_k = __gn_t + 128 * __gn_q;")
        self.line(f"const int __gn_row = __gn_k / {chunks}, __gn_col = (__gn_k % {chunks}) * 8;")
        self.line(f"*(uint4*)&__gn_p[(gn_i64)__gn_row * {ld} + __gn_col] = "
                  f"*(const uint4*)&{at('__gn_row', '__gn_col')};")
        self.line("}")
        self.line("} else {")
        self.line(f"for (int __gn_q = 0; __gn_q < {n // 16}; ++__gn_q) {{")
        self.line("const int __gn_k = __gn_t + 128 * __gn_q;")
        self.line(f"const int __gn_row = __gn_k / {chunks}, __gn_col = (__gn_k % {chunks}) * 8;")
        self.line("#pragma unroll")
        self.line("for (int __gn_e = 0; __gn_e < 8; ++__gn_e) {")
        self.line(f"__gn_p[(gn_i64)__gn_row * {ld} + __gn_col + __gn_e] = "
                  f"{at('__gn_row', '__gn_col + __gn_e')};")
        self.line("}")
        self.line("}")
        self.line("}")
        self.line("gn_warpgroup_barrier();")
        self.line("}")

    def matrix_warpgroup_arrive(self, s: ir.MatrixOp) -> None:
        self.line("gn_wgmma_fence();")

    def matrix_warpgroup_commit(self, s: ir.MatrixOp) -> None:
        self.line("gn_wgmma_commit();")

    def matrix_warpgroup_wait(self, s: ir.MatrixOp) -> None:
        self.line(f"gn_wgmma_wait<{s.params[0]}>();")
        if s.params[0] == 0:
            # Only with nothing in flight: fencing a register a running wgmma still writes
            # makes ptxas wait for every group (and serialize the wgmma).
            self.fence_accumulators()


__all__ = ["WarpgroupEmitter", "wgmma_accumulators", "wgmma_asm"]
