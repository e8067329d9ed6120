"""Warp intrinsics on 32-lane warps (lane = linear thread index in the block % 32).

Shuffles follow the PTX ``shfl.sync`` definition that CUDA's ``__shfl_*_sync`` compile to (the
lane operand taken modulo 32, ``width`` splitting the warp into segments through the ``c``
operand); a source lane outside the segment gives the caller its own value.  The simulator also
reports what the GPU leaves undefined: a lane named in ``mask`` that is live but not executing
the intrinsic, a caller not named in its own mask, and a read from a lane that is not executing
the shuffle.
"""

from __future__ import annotations

import numpy as np

I64 = np.dtype(np.int64)


def _vec(chunk, x, lanes) -> np.ndarray:
    return chunk.full(x)[lanes]


def check_members(chunk, what: str, m, mask, loc: int) -> None:
    """Report a live lane named in ``mask`` that does not execute ``what``, or a caller that is
    not in its own mask (both undefined behaviour on the GPU)."""
    lanes = chunk.active(m)
    if len(lanes) == 0:
        return
    nslots = chunk.B * chunk.W
    wslot = chunk._info("wslot")
    laneid = chunk._info("laneid").astype(I64)
    bit = np.left_shift(np.int64(1), laneid)
    here = np.bincount(wslot[lanes], weights=bit[lanes], minlength=nslots).astype(I64)
    alive_lanes = chunk.active(None) if chunk.gone is None else np.flatnonzero(~chunk.gone)
    alive = np.bincount(wslot[alive_lanes], weights=bit[alive_lanes], minlength=nslots).astype(I64)
    mk = _vec(chunk, np.asarray(mask).astype(I64) & 0xFFFFFFFF, lanes)
    own = (mk >> laneid[lanes]) & 1
    if not own.all():
        j = lanes[int(np.argmin(own))]
        block, thread = chunk.coords(int(j))
        chunk.launch.report(
            ("mask-self", loc),
            f"{what} at {chunk.launch.program.location(loc)}: thread {thread} of block {block} "
            f"(lane {int(laneid[j])}) calls it with mask {int(mk[int(np.argmin(own))]):#010x}, "
            "which does not name its own lane (undefined behaviour on the GPU)")
        return
    slots = wslot[lanes]
    missing = mk & alive[slots] & ~here[slots]
    if missing.any():
        k = int(np.argmax(missing != 0))
        j = lanes[k]
        miss = int(missing[k])
        absent = (miss & -miss).bit_length() - 1
        block, thread = chunk.coords(int(j))
        chunk.launch.report(
            ("mask", loc),
            f"{what} at {chunk.launch.program.location(loc)}: thread {thread} of block {block} "
            f"names lane {absent} of its warp in mask {int(mk[k]):#010x}, but that live thread "
            "is not executing this call (it is in another branch or loop iteration): undefined "
            "behaviour on the GPU; pass a mask of the lanes that really take part")


def shuffle(chunk, op: str, m, value, lane_arg, width, mask, loc: int):
    """``shfl_down/up/xor/idx``: each executing lane reads ``value`` from its source lane."""
    if m is False:
        return value
    lanes = chunk.active(m)
    check_members(chunk, op + "()", m, mask, loc)
    value = np.asarray(value)
    nslots = chunk.B * chunk.W
    pos = chunk._info("wslot") * 32 + chunk._info("laneid")
    present = np.zeros(nslots * 32, bool)
    table = np.zeros(nslots * 32, value.dtype)
    mine = _vec(chunk, value, lanes)
    present[pos[lanes]] = True
    table[pos[lanes]] = mine
    lane = chunk._info("laneid")[lanes].astype(np.int32)
    b = _vec(chunk, np.asarray(lane_arg).astype(np.int32), lanes) & 31
    w = _vec(chunk, np.asarray(width).astype(np.int32), lanes)
    c = (32 - w) << 8
    if op != "shfl_up":
        c = c | 0x1F
    segmask = (c >> 8) & 0x1F
    cval = c & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if op == "shfl_up":
        j = lane - b
        ok = j >= max_lane
    elif op == "shfl_down":
        j = lane + b
        ok = j <= max_lane
    elif op == "shfl_xor":
        j = lane ^ b
        ok = j <= max_lane
    else:  # shfl_idx
        j = min_lane | (b & ~segmask)
        ok = j <= max_lane
    j = np.where(ok, j, lane)
    src = chunk._info("wslot")[lanes] * 32 + j
    there = present[src]
    got = np.where(there, table[src], mine)
    if not there.all():
        k = int(np.argmin(there))
        block, thread = chunk.coords(int(lanes[k]))
        chunk.launch.report(
            ("shfl-src", loc),
            f"{op}() at {chunk.launch.program.location(loc)}: thread {thread} of block {block} "
            f"reads lane {int(j[k])} of its warp, which is not executing this shuffle (it "
            "exited, is in another branch, or lies past the end of the block); the GPU returns "
            "an undefined value there")
    out = np.zeros(chunk.L, value.dtype) if m is not None else got
    if m is not None:
        out[lanes] = got
    return out


def vote(chunk, op: str, m, pred, mask, loc: int):
    """``ballot`` (u32 of the lanes whose predicate holds), ``all_sync``, ``any_sync``."""
    if m is False:
        return np.uint32(0) if op == "ballot" else np.bool_(False)
    lanes = chunk.active(m)
    check_members(chunk, op + "()", m, mask, loc)
    nslots = chunk.B * chunk.W
    wslot = chunk._info("wslot")[lanes]
    p = _vec(chunk, np.asarray(pred), lanes).astype(bool)
    mk = _vec(chunk, np.asarray(mask).astype(I64) & 0xFFFFFFFF, lanes)
    if op == "ballot":
        laneid = chunk._info("laneid")[lanes].astype(I64)
        bits = np.where(p, np.left_shift(np.int64(1), laneid), 0)
        per_warp = np.bincount(wslot, weights=bits, minlength=nslots).astype(I64)
        got = (per_warp[wslot] & mk).astype(np.uint32)
    else:
        count = np.bincount(wslot, minlength=nslots)
        true = np.bincount(wslot, weights=p, minlength=nslots)
        got = (true[wslot] == count[wslot]) if op == "all_sync" else (true[wslot] > 0)
    if m is None:
        return got
    out = np.zeros(chunk.L, got.dtype)
    out[lanes] = got
    return out


def _warp_bits(chunk, lanes, which) -> np.ndarray:
    """Per executing lane, the bits of the lanes of its warp for which ``which`` (a vector over
    ``lanes``) holds."""
    nslots = chunk.B * chunk.W
    wslot = chunk._info("wslot")[lanes]
    laneid = chunk._info("laneid")[lanes].astype(I64)
    bits = np.where(which, np.left_shift(np.int64(1), laneid), 0)
    return np.bincount(wslot, weights=bits, minlength=nslots).astype(I64)[wslot]


def activemask(chunk, m):
    """``activemask()``: the lanes of each warp that execute this call together.  In lockstep
    that is every thread of the warp under the mask; the GPU may split a divergent warp more."""
    if m is False:
        return np.uint32(0)
    lanes = chunk.active(m)
    got = _warp_bits(chunk, lanes, np.ones(len(lanes), bool)).astype(np.uint32)
    if m is None:
        return got
    out = np.zeros(chunk.L, np.uint32)
    out[lanes] = got
    return out


def match(chunk, op: str, m, value, mask, loc: int):
    """``match_any`` (the lanes in ``mask`` whose value has this lane's bits) and ``match_all``
    (``mask`` when every lane in it has the same bits, else 0)."""
    if m is False:
        return np.uint32(0)
    lanes = chunk.active(m)
    check_members(chunk, op + "()", m, mask, loc)
    v = _vec(chunk, np.asarray(value), lanes)
    word = np.ascontiguousarray(v).view(np.uint32 if v.itemsize == 4 else np.uint64)
    mk = _vec(chunk, np.asarray(mask).astype(I64) & 0xFFFFFFFF, lanes)
    # Group the lanes by (warp, bits): the lanes of a group have one value.
    wslot = chunk._info("wslot")[lanes].astype(np.uint64)
    _, group = np.unique(np.stack([wslot, word.astype(np.uint64)], axis=1), axis=0,
                         return_inverse=True)
    group = group.reshape(-1)
    laneid = chunk._info("laneid")[lanes].astype(I64)
    bits = np.left_shift(np.int64(1), laneid)
    same = np.bincount(group, weights=bits).astype(I64)[group] & mk
    if op == "match_any":
        got = same.astype(np.uint32)
    else:
        everyone = _warp_bits(chunk, lanes, np.ones(len(lanes), bool)) & mk
        got = np.where(same == everyone, mk, 0).astype(np.uint32)
    if m is None:
        return got
    out = np.zeros(chunk.L, np.uint32)
    out[lanes] = got
    return out
