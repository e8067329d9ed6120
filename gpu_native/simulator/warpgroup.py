"""The warpgroup statements on the simulator (see :mod:`gpu_native.check.warpgroup`).

A warpgroup is four consecutive warps of a block (a block's threads must be a multiple of 128).
``warpgroup_mma`` reads each warpgroup's 64 x 16 slice of A and 16 x n slice of B from the
swizzled shared arrays, which the simulator stores logically (the swizzle is a physical layout,
invisible to a kernel's meaning), at the indices of the warpgroup's first executing thread (they
must be the same in all of them); gathers the accumulator from the threads' fragments in the
PTX layout, computes ``C + A @ B`` in float64 and rounds once to f32 (products of f16 or bf16
numbers and their sums of 16 are exact in float64 or nearly so; the tensor cores may differ by a
few f32 ulps, as for ``mma_sync``).  The multiply is synchronous here, so ``warpgroup_arrive``,
``warpgroup_commit`` and ``warpgroup_wait`` order nothing and are no-ops.  A thread that does not
execute the statement keeps its fragment.
"""

from __future__ import annotations

import functools

import numpy as np

from . import ops

I64 = np.dtype(np.int64)


@functools.lru_cache(maxsize=8)
def fragment_layout(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) in the 64 x n accumulator of each element of each thread's fragment:
    arrays of shape (128, n // 2)."""
    t = np.arange(128)[:, None]
    e = np.arange(n // 2)[None, :]
    j, q = e // 4, e % 4
    rows = 16 * (t // 32) + (t % 32) // 4 + 8 * (q // 2)
    cols = 8 * j + 2 * (t % 4) + q % 2
    return rows.astype(I64), cols.astype(I64)


def _floats(array, raw: np.ndarray) -> np.ndarray:
    if array.is_bf16:
        return ops.bits_to_bf16(raw).astype(np.float64)
    return raw.astype(np.float64)


def _bounds(chunk, operand, m, loc: int):
    array, indices, checks, last, last_checks = operand
    if last:
        _, m = chunk.offset(array, last, last_checks, m, loc)
    off, m = chunk.offset(array, indices, checks, m, loc)
    return np.broadcast_to(np.asarray(off, I64), (chunk.L,)), m


def _live(chunk, m) -> np.ndarray:
    return np.ones(chunk.L, bool) if m is None else np.asarray(m, bool)


def _warpgroups(chunk) -> tuple[np.ndarray, np.ndarray]:
    """Each lane's warpgroup slot in the chunk and its thread index in the warpgroup."""
    wslot = chunk._info("wslot").astype(I64)
    lane = chunk._info("laneid").astype(I64)
    return wslot // 4, (wslot % 4) * 32 + lane


def _tile(array, chunk, off: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The rows x cols slices of ``array`` from the flat offsets ``off`` (one per warpgroup)."""
    row_len = array.dims[-1]
    flat = off[:, None, None] + np.arange(rows)[:, None] * row_len + np.arange(cols)
    return _floats(array, array.data[flat])


def warpgroup_mma(chunk, operands, params, m, loc: int):
    acc_op, a_op, b_op = operands
    n, _shape_site, align_site = params
    coff, m = _bounds(chunk, acc_op, m, loc)
    aoff, m = _bounds(chunk, a_op, m, loc)
    boff, m = _bounds(chunk, b_op, m, loc)
    if m is False:
        return False
    if align_site >= 0:
        ai, bi = a_op[1], b_op[1]
        ok = ((np.asarray(ai[-2]) % 8 == 0) & (np.asarray(ai[-1]) % 16 == 0)
              & (np.asarray(bi[-2]) % 8 == 0) & (np.asarray(bi[-1]) % 64 == 0))
        m = chunk.check_assert(m, ok, align_site)
        if m is False:
            return False
    acc, a, b = acc_op[0], a_op[0], b_op[0]
    live = np.flatnonzero(_live(chunk, m))
    wg, t = _warpgroups(chunk)
    groups, first = np.unique(wg[live], return_index=True)
    lead = live[first]  # each warpgroup's first executing lane
    abase, bbase = a.base(chunk), b.base(chunk)
    aaddr = aoff + (0 if abase is None else np.broadcast_to(abase, (chunk.L,)))
    baddr = boff + (0 if bbase is None else np.broadcast_to(bbase, (chunk.L,)))
    amat = _tile(a, chunk, aaddr[lead], 64, 16)
    bmat = _tile(b, chunk, baddr[lead], 16, n)
    rows, cols = fragment_layout(n)
    slot = np.searchsorted(groups, wg[live])
    cper = acc.per_lane()
    fcols = coff[live][:, None] + np.arange(n // 2)
    cmat = np.zeros((len(groups), 64, n))
    cmat[slot[:, None], rows[t[live]], cols[t[live]]] = cper[live[:, None], fcols]
    d = (cmat + amat @ bmat).astype(np.float32)
    cper[live[:, None], fcols] = d[slot[:, None], rows[t[live]], cols[t[live]]]
    return m


def warpgroup_store(chunk, operands, params, m, loc: int):
    dst_op, acc_op = operands
    n = params[0]
    coff, m = _bounds(chunk, acc_op, m, loc)
    array, indices, checks, last, last_checks = dst_op
    _, m = chunk.offset(array, last, last_checks, m, loc)
    _, m = chunk.offset(array, indices, checks, m, loc)
    if m is False:
        return False
    _, t = _warpgroups(chunk)
    rows, cols = fragment_layout(n)
    row0 = np.asarray(indices[0], I64)
    col0 = np.asarray(indices[1], I64)
    per = acc_op[0].per_lane()
    lanes = np.arange(chunk.L)
    cast = ops.cast_function(acc_op[0].info, array.info)
    for e in range(n // 2):
        value = cast(per[lanes, coff + e])
        m = chunk.store(array, (row0 + rows[t, e], col0 + cols[t, e]), (None, None), value, m,
                        loc)
        if m is False:
            return False
    return m


def _ordering(chunk, operands, params, m, loc: int):
    return m


OPS = {"warpgroup_mma": warpgroup_mma, "warpgroup_store": warpgroup_store,
       "warpgroup_arrive": _ordering, "warpgroup_commit": _ordering,
       "warpgroup_wait": _ordering}
