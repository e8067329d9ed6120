"""The warpgroup statements on the simulator (see :mod:`gpu_native.check.warpgroup`).

A warpgroup is four consecutive warps of a block (a block's threads must be a multiple of 128).
``warpgroup_mma`` reads each warpgroup's 64 x 16 slice of A and 16 x n slice of B from the
swizzled shared arrays, which the simulator stores logically (the swizzle is a physical layout,
invisible to a kernel's meaning), at the indices of the warpgroup's first executing thread (they
must be the same in all of them); gathers the accumulator from the threads' fragments in the
PTX layout, computes ``C + A @ B`` in float64 and rounds once to f32 (products of f16 or bf16
numbers and their sums of 16 are exact in float64 or nearly so; the tensor cores may differ by a
few f32 ulps, as for ``mma_sync``).  A thread that does not execute the statement keeps its
fragment.

The multiply is synchronous here, but on the GPU it reads its shared operands until the
``warpgroup_wait`` that retires its group, so the race detector holds the read open that long:
``warpgroup_mma`` checks its reads as any read (against unordered earlier writes), and joins the
warpgroup's open group; ``warpgroup_commit`` closes the group; ``warpgroup_wait(n)`` retires all
but the ``n`` newest groups, reporting any write to their operands made since they were issued
(by any thread, a barrier notwithstanding) and any ``cp_async`` into them still in flight (it
may land before the read ends), and logs the reads again as made at the wait, so a
later write that no barrier orders after it is a race too.
"""

from __future__ import annotations

import functools

import numpy as np

from . import ops
from .races import Conflict

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


def operand_offset(chunk, operand, m, loc: int):
    """The flat offset (per lane) of an operand's first element in one block's or thread's
    array, and the mask left after checking both its first and last elements' indices."""
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
    coff, m = operand_offset(chunk, acc_op, m, loc)
    aoff, m = operand_offset(chunk, a_op, m, loc)
    boff, m = operand_offset(chunk, b_op, m, loc)
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
    _open_reads(chunk, ((a, aaddr[lead], 64, 16), (b, baddr[lead], 16, n)), lead, loc)
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
    # With a staging region (a third operand), each thread also writes its elements there, as
    # the device does before its coalesced copy: the race detector sees those shared writes
    # (against a warpgroup_mma still reading the region, or another thread's use of it).  The
    # copy's reads, ordered by the warpgroup's own barrier, are not modelled.
    acc_op = operands[1]
    n = params[0]
    coff, m = operand_offset(chunk, acc_op, m, loc)
    targets = []
    for op in operands[:1] + operands[2:]:
        array, indices, checks, last, last_checks = op
        _, m = chunk.offset(array, last, last_checks, m, loc)
        _, m = chunk.offset(array, indices, checks, m, loc)
        if m is False:
            return False
        targets.append((array, tuple(np.asarray(i, I64) for i in indices)))
    _, t = _warpgroups(chunk)
    rows, cols = fragment_layout(n)
    per = acc_op[0].per_lane()
    lanes = np.arange(chunk.L)
    for array, origin in targets[::-1]:   # the staging region first, as on the device
        cast = ops.cast_function(acc_op[0].info, array.info)
        lead, row0, col0 = origin[:-2], origin[-2], origin[-1]
        for e in range(n // 2):
            value = cast(per[lanes, coff + e])
            index = lead + (row0 + rows[t, e], col0 + cols[t, e])
            m = chunk.store(array, index, (None,) * len(index), value, m, loc)
            if m is False:
                return False
    return m


# ---- the asynchronous reads, for the race detector ---------------------------------------------


class AsyncReads:
    """Per warpgroup (by its first thread's global id // 128): the reads of its open group and
    of its committed groups not yet retired, each ``(array, elements, clock when issued,
    reading thread, location)``."""

    def __init__(self):
        self.open: dict[int, list] = {}
        self.committed: dict[int, list[list]] = {}


def _flat(array, off: np.ndarray, rows: int, cols: int) -> np.ndarray:
    row_len = array.dims[-1]
    return (off[:, None, None] + np.arange(rows)[:, None] * row_len + np.arange(cols)).reshape(-1)


def _open_reads(chunk, tiles, lead: np.ndarray, loc: int) -> None:
    gtid = chunk._info("gtid")[lead].astype(I64)
    for array, offs, rows, cols in tiles:
        shadow = array.shadow
        if shadow is None:
            continue
        if chunk.async_reads is None:
            chunk.async_reads = AsyncReads()
        ver = chunk.sync_version
        for t, off, lane in zip(gtid, offs, lead):
            e = _flat(array, np.asarray([off], I64), rows, cols)
            if chunk.tma is not None:  # a tensor copy in flight, or not waited for
                chunk.tma.check(chunk, array, e, np.full(len(e), lane, I64), loc,
                                "reads (by a warpgroup_mma)")
            found = shadow.read(e, np.full(len(e), t, I64), ver, None, loc)
            if found is not None:
                chunk.launch.report_race(array, found)
            chunk.async_reads.open.setdefault(int(t) // 128, []).append(
                (array, e, shadow.clock, int(t), loc))


def _live_warpgroups(chunk, m) -> list[int]:
    lanes = np.flatnonzero(_live(chunk, m))
    return [int(g) for g in np.unique(chunk._info("gtid")[lanes].astype(I64) // 128)]


def warpgroup_commit(chunk, operands, params, m, loc: int):
    state = chunk.async_reads
    if m is not False and state is not None:
        for g in _live_warpgroups(chunk, m):
            state.committed.setdefault(g, []).append(state.open.pop(g, []))
    return m


def warpgroup_wait(chunk, operands, params, m, loc: int):
    state = chunk.async_reads
    if m is False or state is None:
        return m
    keep = params[0]
    for g in _live_warpgroups(chunk, m):
        groups = state.committed.get(g, [])
        while len(groups) > keep:
            for array, e, stamp, t, at in groups.pop(0):
                shadow = array.shadow
                found = shadow.written_since(e, stamp, t, at) or _copy_in_flight(chunk, array,
                                                                                  e, t, at)
                if found is None:
                    found = shadow.read(e, np.full(len(e), t, I64), chunk.sync_version, None, at)
                if found is not None:
                    chunk.launch.report_race(array, found)
    return m


def _copy_in_flight(chunk, array, e: np.ndarray, t: int, loc: int) -> Conflict | None:
    """A ``cp_async`` into elements ``e`` of ``array`` issued and not yet landed: on the GPU it
    may land while the read being retired was still in flight."""
    found = None if chunk.async_copies is None else chunk.async_copies.landing_in(array, e)
    if found is None:
        return None
    element, lane, at = found
    return Conflict("write-during-async-read", element, t, int(chunk._info("gtid")[lane]), loc,
                    at)


def _ordering(chunk, operands, params, m, loc: int):
    return m


OPS = {"warpgroup_mma": warpgroup_mma, "warpgroup_store": warpgroup_store,
       "warpgroup_arrive": _ordering, "warpgroup_commit": warpgroup_commit,
       "warpgroup_wait": warpgroup_wait}
