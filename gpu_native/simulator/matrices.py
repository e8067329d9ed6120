"""Warp matrix statements and asynchronous copies on the simulator, mirroring the prelude's
``gn_ldmatrix``, ``gn_mma_m16n8k16``, the accumulator store and ``gn_cp_async``
(gpu_native/include/gpu_native/prelude.cuh).

The lanes of one warp are gathered by their warp slot and lane (as the shuffles of
:mod:`.warp` are): ``ldmatrix`` hands lane 4g + t the elements PTX names from the rows the lanes
addressed; ``mma`` builds each warp's 16 x 16 A, 16 x 8 B and 16 x 8 accumulator from the
fragments in PTX's ``m16n8k16`` layout (16 x 8 A and 8 x 8 B in ``m16n8k8``'s for f32
fragments, each element first rounded to tf32 as ``cvt.rna.tf32.f32`` rounds it), computes
``C + A @ B`` in float64 and rounds once to f32.  Products of f16 or bf16 numbers are exact in f32 and a sum of 16 of them and C is exact
or nearly so in float64, so the simulator's result is the correctly rounded one; the tensor
cores add in an unspecified order with truncated alignment, so the GPU may differ from it by a
few f32 ulps of the largest term per ``mma`` (tests compare against float64 with a relative
tolerance).  A lane that does not execute the statement contributes zeros.

``cp_async`` reads its source when issued and writes its destination when a
``cp_async_wait`` lets its group complete (per thread: the group a copy joins is the number of
commits that thread made before it), so code that reads a destination before waiting sees the
old contents, as it may on the GPU.  The tensor copies (``tma_load``, ``tma_wait``) are
:mod:`.tma`'s.
"""

from __future__ import annotations

import numpy as np

from . import ops
from .tma import OPS as TMA_OPS
from .warpgroup import OPS as WARPGROUP_OPS
from .warpgroup import operand_offset

I64 = np.dtype(np.int64)

# Lane 4g + t's elements of each fragment: (row, column) in the warp's matrix, by element.
_LANE = np.arange(32)
_G, _T = _LANE // 4, _LANE % 4
_A_ROW = np.stack([_G, _G, _G + 8, _G + 8, _G, _G, _G + 8, _G + 8], axis=1)
_A_COL = np.stack([2 * _T, 2 * _T + 1] * 2 + [2 * _T + 8, 2 * _T + 9] * 2, axis=1)
_B_ROW = np.stack([2 * _T, 2 * _T + 1, 2 * _T + 8, 2 * _T + 9], axis=1)
_B_COL = np.stack([_G] * 4, axis=1)
_C_ROW = np.stack([_G, _G, _G + 8, _G + 8], axis=1)
_C_COL = np.stack([2 * _T, 2 * _T + 1] * 2, axis=1)
# mma.m16n8k8 with tf32 inputs: A is 16 x 8, B 8 x 8, the accumulator as above.
_TF32_A_ROW = np.stack([_G, _G + 8, _G, _G + 8], axis=1)
_TF32_A_COL = np.stack([_T, _T, _T + 4, _T + 4], axis=1)
_TF32_B_ROW = np.stack([_T, _T + 4], axis=1)
_TF32_B_COL = np.stack([_G, _G], axis=1)


def _mask(chunk, m) -> np.ndarray:
    return np.ones(chunk.L, bool) if m is None else np.asarray(m, bool)


def _floats(array, raw: np.ndarray) -> np.ndarray:
    """Memory words of ``array``'s element type as float64."""
    if array.is_bf16:
        return ops.bits_to_bf16(raw).astype(np.float64)
    return raw.astype(np.float64)


def tf32(values: np.ndarray) -> np.ndarray:
    """f32 ``values`` rounded to tf32 as ``cvt.rna.tf32.f32`` does: to the nearest value with 10
    fraction bits, ties away from zero, the low 13 bits of the f32 word cleared (infinities and
    NaNs pass unchanged; a value that rounds past the largest finite one becomes infinite)."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    # Adding half a tf32 ulp to the magnitude rounds ties away from zero; a carry out of the
    # fraction moves into the exponent, which is the correct rounding too.
    rounded = np.where(finite, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000), bits)
    return rounded.astype(np.uint32).view(np.float32)


def _slots(chunk) -> tuple[np.ndarray, np.ndarray, int]:
    return chunk._info("wslot"), chunk._info("laneid").astype(I64), chunk.B * chunk.W


def ldmatrix(chunk, operands, params, m, loc: int):
    (frag_op, src_op), (num, trans, _align) = operands, params
    foff, m = operand_offset(chunk, frag_op, m, loc)
    soff, m = operand_offset(chunk, src_op, m, loc)
    if m is False:
        return False
    frag, src = frag_op[0], src_op[0]
    live = _mask(chunk, m)
    base = src.base(chunk)
    addr = soff + (0 if base is None else base)
    rows = src.data.take(np.clip(addr[:, None] + np.arange(8), 0, len(src.data) - 1), axis=0)
    wslot, lane, nslots = _slots(chunk)
    table = np.zeros((nslots * 32, 8), src.data.dtype)
    table[(wslot * 32 + lane)[live]] = rows[live]
    g, t = lane // 4, lane % 4
    per = frag.per_lane()
    for j in range(num):
        for h in range(2):
            if trans:
                got = table[wslot * 32 + j * 8 + 2 * t + h, g]
            else:
                got = table[wslot * 32 + j * 8 + g, 2 * t + h]
            col = foff + 2 * j + h
            per[np.flatnonzero(live), col[live]] = got[live]
    return m


# The shapes of mma by input type: K, and each fragment's (row, column) by element.
_SHAPES = {"half": (16, (_A_ROW, _A_COL), (_B_ROW, _B_COL)),
           "tf32": (8, (_TF32_A_ROW, _TF32_A_COL), (_TF32_B_ROW, _TF32_B_COL))}


def mma(chunk, operands, params, m, loc: int):
    acc_op, a_op, b_op = operands
    coff, m = operand_offset(chunk, acc_op, m, loc)
    aoff, m = operand_offset(chunk, a_op, m, loc)
    boff, m = operand_offset(chunk, b_op, m, loc)
    if m is False:
        return False
    acc, a, b = acc_op[0], a_op[0], b_op[0]
    live = _mask(chunk, m)
    # f32 fragments multiply as tf32 (mma.m16n8k8): each input rounded as cvt.rna rounds it;
    # products of tf32 (11-bit significands) or f16/bf16 numbers are exact in float64.
    is_tf32 = a.info.name == "f32"
    k, (a_rows, a_cols), (b_rows, b_cols) = _SHAPES["tf32" if is_tf32 else "half"]
    lanes = np.arange(chunk.L)
    araw = a.per_lane()[lanes[:, None], aoff[:, None] + np.arange(a_rows.shape[1])]
    braw = b.per_lane()[lanes[:, None], boff[:, None] + np.arange(b_rows.shape[1])]
    if is_tf32:
        av, bv = tf32(araw).astype(np.float64), tf32(braw).astype(np.float64)
    else:
        av, bv = _floats(a, araw), _floats(b, braw)
    cper = acc.per_lane()
    ccols = coff[:, None] + np.arange(4)
    cv = cper[lanes[:, None], ccols].astype(np.float64)
    av[~live] = 0
    bv[~live] = 0
    wslot, lane, nslots = _slots(chunk)
    w = wslot[:, None]
    amat = np.zeros((nslots, 16, k))
    bmat = np.zeros((nslots, k, 8))
    cmat = np.zeros((nslots, 16, 8))
    amat[w, a_rows[lane], a_cols[lane]] = av
    bmat[w, b_rows[lane], b_cols[lane]] = bv
    cmat[w[live], _C_ROW[lane[live]], _C_COL[lane[live]]] = cv[live]
    d = (cmat + amat @ bmat).astype(np.float32)
    out = d[w, _C_ROW[lane], _C_COL[lane]]
    rows = np.flatnonzero(live)
    cper[rows[:, None], ccols[rows]] = out[rows]
    return m


def store_matrix(chunk, operands, params, m, loc: int):
    dst_op, acc_op = operands
    coff, m = operand_offset(chunk, acc_op, m, loc)
    _, m = operand_offset(chunk, dst_op, m, loc)   # both ends of the tile checked
    array, indices = dst_op[0], dst_op[1]
    if m is False:
        return False
    lane = chunk._info("laneid").astype(I64)
    g, t = lane // 4, lane % 4
    row0 = np.asarray(indices[0], I64) + g
    col0 = np.asarray(indices[1], I64) + 2 * t
    per = acc_op[0].per_lane()
    lanes = np.arange(chunk.L)
    cast = ops.cast_function(acc_op[0].info, array.info)
    for k, (dr, dc) in enumerate(((0, 0), (0, 1), (8, 0), (8, 1))):
        value = cast(per[lanes, coff + k])
        m = chunk.store(array, (row0 + dr, col0 + dc), (None, None), value, m, loc)
    return m


# ---- asynchronous copies ----------------------------------------------------------------------


class AsyncCopies:
    """The copies a chunk's threads have in flight and each thread's count of commits."""

    def __init__(self, lanes: int):
        self.committed = np.zeros(lanes, I64)
        self.pending: list[list] = []  # [dst, flat offsets, values, live lanes, group, loc]

    def landing_in(self, array, elements: np.ndarray) -> tuple[int, int, int] | None:
        """A copy into ``elements`` of ``array`` issued and not yet landed: (an element it
        writes, the copying lane, its location), or None."""
        for dst, daddr, values, live, _group, loc in self.pending:
            if dst is not array or not live.any():
                continue
            lanes = np.flatnonzero(live)
            spans = daddr[lanes][:, None] + np.arange(values.shape[1])
            hit = np.isin(spans, elements)
            rows = hit.any(axis=1)
            if rows.any():
                j = int(np.argmax(rows))
                return int(spans[j][hit[j]][0]), int(lanes[j]), loc
        return None

    def compact(self, keep: np.ndarray) -> None:
        self.committed = self.committed[keep]
        for rec in self.pending:
            for k in (1, 2, 3, 4):
                rec[k] = rec[k][keep]


def _copies(chunk) -> AsyncCopies:
    if chunk.async_copies is None:
        chunk.async_copies = AsyncCopies(chunk.L)
    return chunk.async_copies


def cp_async(chunk, operands, params, m, loc: int):
    dst_op, src_op = operands
    nbytes = params[0]
    doff, m = operand_offset(chunk, dst_op, m, loc)
    soff, m = operand_offset(chunk, src_op, m, loc)
    if m is False:
        return False
    dst, src = dst_op[0], src_op[0]
    n = nbytes // np.dtype(dst.data.dtype).itemsize
    live = _mask(chunk, m)
    span = np.arange(n)
    sbase = src.base(chunk)
    saddr = soff + (0 if sbase is None else sbase)
    if src.shadow is not None:
        for k in range(n):
            chunk.race(src, saddr + k, m, loc, "read")
    values = src.data.take(np.clip(saddr[:, None] + span, 0, len(src.data) - 1), axis=0)
    dbase = dst.base(chunk)
    daddr = doff + (0 if dbase is None else dbase)
    state = _copies(chunk)
    state.pending.append([dst, daddr, values, live.copy(), state.committed.copy(), loc])
    return m


def cp_async_commit(chunk, operands, params, m, loc: int):
    if m is not False:
        state = _copies(chunk)
        state.committed[_mask(chunk, m)] += 1
    return m


def cp_async_wait(chunk, operands, params, m, loc: int):
    if m is False or chunk.async_copies is None:
        return m
    state = chunk.async_copies
    running = _mask(chunk, m)
    keep = []
    for rec in state.pending:
        dst, daddr, values, live, group, at = rec
        done = live & running & (group < state.committed - params[0])
        if done.any():
            if dst.shadow is not None:
                for k in range(values.shape[1]):
                    chunk.race(dst, daddr + k, done, at, "write")
            rows = np.flatnonzero(done)
            dst.data[daddr[rows][:, None] + np.arange(values.shape[1])] = values[rows]
            rec[3] = live & ~done
        if rec[3].any():
            keep.append(rec)
    state.pending = keep
    return m


OPS = {"ldmatrix": ldmatrix, "mma": mma, "store_matrix": store_matrix, "cp_async": cp_async,
       "cp_async_commit": cp_async_commit, "cp_async_wait": cp_async_wait,
       **WARPGROUP_OPS, **TMA_OPS}
