"""The type pass over the Hopper warpgroup statements (``warpgroup_arrive``, ``warpgroup_mma``,
``warpgroup_commit``, ``warpgroup_wait``, ``warpgroup_store``) and the swizzled shared arrays
they read (``shared_array(T, shape, swizzle=128)``).

A *warpgroup* is four consecutive warps (128 threads) of a block; ``warpgroup_mma`` issues one
PTX ``wgmma.mma_async.m64nNk16`` for it: ``acc += A @ B`` with A a 64 x 16 slice of a swizzled
shared array read along its rows (K-major) and B a 16 x N slice of another read along its columns
(N-major, the descriptor's transpose bit).  Both are addressed by shared-memory descriptors that
the CUDA emitter builds from the slices' first elements; the hardware reads them in the 128-byte
swizzle (a 128-byte row's 16-byte chunk ``c`` at chunk ``c ^ (row & 7)``), which is how a
swizzled array stores its logical elements (:func:`gpu_native.emit.cuda.array_offset`), in
column blocks of 64 elements.  The indices stay logical everywhere else: bounds checks, the
alignment proofs of ``cp_async`` and the unique-write proofs reason on them unchanged.

The accumulator is a ``local_array(f32, (N // 2,))``: thread ``t`` of the warpgroup holds rows
``16 * (t // 32) + (t % 32) // 4`` (elements ``4j``, ``4j + 1``) and that row + 8 (``4j + 2``,
``4j + 3``) at columns ``8j + 2 * (t % 4)`` and the next.  The statements are warp-collective (no
grid-tail exit, no uid striding) and make the kernel an sm_90a one (:func:`gpu_native.build.
wgmma_arch`).
"""

from __future__ import annotations

import math

from .. import ir
from ..frontend import syntax as S
from ..launchexpr import Arith, Compare, Const, LaunchIndex
from ..spec import LaunchAssert
from .matrices import MatrixChecker

SWIZZLE_BYTES = 128
_HALF = ("f16", "bf16")
_OUT_TYPES = ("f32", "f16", "bf16")
WGMMA_M, WGMMA_K = 64, 16
SWIZZLE_COLS = 64  # 16-bit elements in one 128-byte swizzled row: a column block's width


class WarpgroupChecker(MatrixChecker):
    """Mixin of :class:`~.checker.FunctionChecker`: the warpgroup statements and swizzled shared
    arrays."""

    # ---- swizzled shared arrays ---------------------------------------------------------------

    def swizzle_of(self, got: dict, elem, shape: tuple[int, ...], call: S.Call) -> int:
        """The ``swizzle=`` of a ``shared_array`` declaration (0 without one), refused where the
        array cannot hold the 128-byte swizzle."""
        dynamic = shape == (0,)
        swizzled_before = any(d.ty.swizzle for d in self.shared)
        if "swizzle" not in got:
            if dynamic and swizzled_before:
                raise self.error("a kernel with swizzled shared arrays cannot also have the "
                                 "dynamic shared array `shared_array(T, 0)`: the swizzled arrays "
                                 "occupy the dynamic shared memory", call.span)
            return 0
        e = got["swizzle"]
        swizzle = self.const_int(e, "shared_array()'s swizzle")
        if swizzle == 0:
            return 0
        if swizzle != SWIZZLE_BYTES:
            raise self.error(f"shared_array()'s swizzle must be {SWIZZLE_BYTES} (the 128-byte "
                             f"swizzle) or 0, not {swizzle}", e.span)
        if not isinstance(elem, ir.ScalarType) or elem.name not in _HALF:
            raise self.error(f"a swizzled shared array holds f16 or bf16 elements, not {elem}",
                             call.span)
        if dynamic:
            raise self.error("a swizzled shared array has a constant shape (it is placed in the "
                             "dynamic shared memory for you)", call.span)
        if any(d.dynamic for d in self.shared):
            raise self.error("a kernel with the dynamic shared array `shared_array(T, 0)` cannot "
                             "also have swizzled shared arrays: they occupy the dynamic shared "
                             "memory", call.span)
        if len(shape) < 2 or shape[-1] % SWIZZLE_COLS or shape[-2] % 8:
            raise self.error(
                f"a swizzled shared array's rows are 128 bytes ({SWIZZLE_COLS} {elem} elements, "
                "or column blocks of that many) in groups of 8: its last axis must be a multiple "
                f"of {SWIZZLE_COLS} and the one before a multiple of 8; got shape {shape}",
                call.span, f"e.g. shared_array({elem}, (STAGES, 128, 64), swizzle=128)")
        return swizzle

    def note_swizzled(self, name: str, call: S.Call) -> None:
        """A swizzled array lives in the dynamic shared memory, after the ones declared before
        it, from a 1024-byte aligned start: the launch's ``shared_mem_bytes`` must cover them
        (the launcher checks it once per launch shape)."""
        decl, offset = ir.swizzled_layout(self.shared)[-1]
        end = offset + decl.ty.elem.info.itemsize * math.prod(decl.shape)
        need = end + ir.SWIZZLE_ALIGN
        site = self.ctx.kernel.new_site(
            "assert", call.span,
            message=f"the swizzled shared arrays up to '{name}' take {end} bytes of dynamic "
                    f"shared memory, plus {ir.SWIZZLE_ALIGN} to align them: launch with "
                    f"shared_mem_bytes >= {need}")
        tree = Compare(">=", LaunchIndex("shared_mem_bytes", 0), Const(need))
        self.ctx.kernel.add_launch_check(LaunchAssert(tree, site))

    # ---- the statements -----------------------------------------------------------------------

    def _swizzled(self, e: S.Expr, index: S.Expr, width: tuple[int, int], what: str, span
                  ) -> ir.Operand:
        op = self.span_operand(e, index, width, what, span, "shared")
        ty = op.array.ty
        if not ty.swizzle:
            raise self.error(f"{what} must be a swizzled shared array, declared "
                             "`shared_array(T, shape, swizzle=128)`", e.span)
        return op

    def whole_warpgroups(self, span) -> int:
        """The site of the launch check that a block's threads are whole warpgroups (a
        multiple of 128), which the launcher makes once per launch shape."""
        site = self.ctx.kernel.new_site(
            "assert", span, message="warpgroup_mma(): a block's threads must be a multiple of "
            "128 (whole warpgroups of 4 warps)")
        dim = [LaunchIndex("block_dim", axis) for axis in range(3)]
        threads = Arith("*", Arith("*", dim[0], dim[1], "i64"), dim[2], "i64")
        tree = Compare("==", Arith("%", threads, Const(128), "i64"), Const(0))
        self.ctx.kernel.add_launch_check(LaunchAssert(tree, site))
        return site

    def matrix_warpgroup_mma(self, call: S.Call, got: dict) -> ir.Stmt:
        self.traits.note_wgmma()
        n = self._const(got["n"], 0, "warpgroup_mma()'s n")
        if not (8 <= n <= 256 and n % 8 == 0):
            raise self.error(f"warpgroup_mma()'s n must be a multiple of 8 from 8 to 256 (PTX "
                             f"wgmma m64nNk16), not {n}", got["n"].span)
        if n % SWIZZLE_COLS:
            raise self.error(f"warpgroup_mma()'s n must be 64, 128, 192 or 256, not {n}: B is "
                             "read N-major from 128-byte swizzled rows, whole 64-column blocks "
                             "of them", got["n"].span)
        a = self._swizzled(got["a"], got["a_index"], (WGMMA_M, WGMMA_K), "warpgroup_mma()'s a",
                           call.span)
        b = self._swizzled(got["b"], got["b_index"], (WGMMA_K, n), "warpgroup_mma()'s b",
                           call.span)
        if a.array.ty.elem != b.array.ty.elem:
            raise self.error(f"warpgroup_mma()'s a and b hold one element type, not "
                             f"{a.array.ty.elem} and {b.array.ty.elem}", call.span)
        acc = self.fragment(got["acc"], None, ("f32",), n // 2, "warpgroup_mma()'s acc",
                            call.span)
        shape_site = self.whole_warpgroups(call.span)
        # The slices' origins, proven on swizzle row groups where their indices visibly are
        # multiples (`wg * 64`, `kk * 16`); otherwise checked with the bounds checks (a branch
        # between the wgmma of one group makes ptxas serialize them).
        ai, bi = a.indices, b.indices
        proven = (self.bounds.multiple_of(ai[-2], 8) and self.bounds.multiple_of(ai[-1], 16)
                  and self.bounds.multiple_of(bi[-2], 8) and self.bounds.multiple_of(bi[-1], 64))
        align_site = self.alignment_site(
            call.span, "warpgroup_mma(): a slice must start on a swizzle row group: a_index's "
            "row a multiple of 8 and column of 16, b_index's row a multiple of 8 and column of "
            "64", proven)
        return ir.MatrixOp(call.span, "warpgroup_mma", (acc, a, b), (n, shape_site, align_site))

    def matrix_warpgroup_store(self, call: S.Call, got: dict) -> ir.Stmt:
        self.traits.note_wgmma()
        base = self._array(got["acc"], "warpgroup_store()'s acc")
        shape = base.ty.shape or (0,)
        n = 2 * shape[-1]
        if base.ty.ndim != 1 or not (SWIZZLE_COLS <= n <= 256 and n % SWIZZLE_COLS == 0):
            raise self.error(
                f"warpgroup_store()'s acc must be a warpgroup_mma accumulator, "
                "local_array(f32, (n // 2,)) with n 64, 128, 192 or 256, not "
                f"{base.ty}", got["acc"].span)
        acc = self.fragment(got["acc"], None, ("f32",), n // 2, "warpgroup_store()'s acc",
                            call.span)
        dst = self.span_operand(got["dst"], got["dst_index"], (WGMMA_M, n),
                                "warpgroup_store()'s dst", call.span, "global")
        if dst.array.ty.ndim != 2:
            raise self.error("warpgroup_store() writes a 2-D array", call.span)
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        if elem.name not in _OUT_TYPES:
            raise self.error(f"warpgroup_store() writes f32, f16 or bf16 arrays, not {elem}",
                             call.span, "store to an f32 array and convert in a second pass")
        unique, proof = self._writable(dst, "warpgroup_store()'s dst", call.span, group_cols=n)
        operands: tuple[ir.Operand, ...] = (dst, acc)
        if _given(got, "staging") is not None:
            staging = self._staging(got, dst, n, call.span)
            how, rule = self._writable(staging, "warpgroup_store()'s staging", call.span,
                                       group_cols=n)
            operands += (staging,)
            if unique == "uid" and how == "uid":
                proof = f"{proof}; its staging tile in '{staging.array.var.name}': {rule}"
            else:
                unique = "unsafe"
        return ir.MatrixOp(call.span, "warpgroup_store", operands, (n,), unique, proof)

    def _staging(self, got: dict, dst: ir.Operand, n: int, span) -> ir.Operand:
        """``warpgroup_store``'s ``staging``: the 64 x n region of a swizzled shared array of
        the destination's 16-bit type the tile passes through on its way to a coalesced
        store."""
        if _given(got, "staging_index") is None:
            raise self.error("warpgroup_store()'s staging needs its staging_index, the "
                             "region's top-left element", span)
        elem = dst.array.ty.elem
        assert isinstance(elem, ir.ScalarType)
        if elem.name == "f32":
            raise self.error("warpgroup_store()'s staging is for f16 and bf16 outputs (the "
                             "swizzled shared arrays hold 16-bit elements); store an f32 tile "
                             "without it", got["staging"].span)
        staging = self._swizzled(got["staging"], got["staging_index"], (WGMMA_M, n),
                                 "warpgroup_store()'s staging", span)
        if staging.array.ty.elem != elem:
            raise self.error(f"warpgroup_store()'s staging holds {staging.array.ty.elem}, not "
                             f"dst's {elem}", got["staging"].span)
        if not self.bounds.multiple_of(staging.indices[-1], 8):
            raise self.error("warpgroup_store()'s staging_index must start its column on a "
                             "16-byte chunk (a multiple of 8, visibly: a constant, or `k * 64`)",
                             got["staging_index"].span)
        return staging

    def matrix_warpgroup_arrive(self, call: S.Call, got: dict) -> ir.Stmt:
        self.traits.note_wgmma()
        return ir.MatrixOp(call.span, "warpgroup_arrive")

    def matrix_warpgroup_commit(self, call: S.Call, got: dict) -> ir.Stmt:
        self.traits.note_wgmma()
        return ir.MatrixOp(call.span, "warpgroup_commit")

    def matrix_warpgroup_wait(self, call: S.Call, got: dict) -> ir.Stmt:
        self.traits.note_wgmma()
        n = self._const(got.get("n"), 0, "warpgroup_wait()'s n")
        if not 0 <= n <= 7:
            raise self.error(f"warpgroup_wait() takes 0 to 7 pending groups, not {n}", call.span)
        return ir.MatrixOp(call.span, "warpgroup_wait", (), (n,))


def _given(got: dict, name: str) -> S.Expr | None:
    """The argument ``name`` of a call, or None where it is left out or written ``None`` (the
    default the signature shows)."""
    e = got.get(name)
    return None if e is None or (isinstance(e, S.Name) and e.id == "None") else e
