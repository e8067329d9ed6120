"""Shadow memory for the race detector.

Every shared array, and every global array that a launch both writes and reads (or writes inside
``with unsafe():``, or updates atomically and also accesses plainly), gets a shadow: for each
element, the last thread that wrote it and the two most recent distinct threads that read it, each
with the barrier epoch of its block and the ``sync_warp`` epoch of its warp at the time, and the
source location of the access.

Two accesses to one element by different threads *conflict* when at least one is a write, they are
not both atomic, and nothing orders them:

* threads of different blocks are never ordered within a launch (global memory only);
* threads of one block are ordered once a ``sync_threads()`` of that block lies between the two
  accesses (the block's epoch changed);
* threads of one warp are also ordered by a ``sync_warp()`` of that warp in between.

Because the simulator runs the threads of a block in lockstep, a conflicting pair gives the same
result on every run of the simulator, but not on the GPU; the detector reports it instead of
letting lockstep execution hide it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

I64 = np.int64


@dataclass
class Conflict:
    """One detected race: ``kind`` is "read-after-write", "write-after-write",
    "write-after-read" or "atomic-vs-plain"."""

    kind: str
    element: int  # flat element offset into the shadowed storage
    thread: int  # global thread id of the access that found the conflict
    other: int  # global thread id of the earlier access
    loc: int  # location id of this access
    other_loc: int  # location id of the earlier access


class Shadow:
    """Per-element access history of one array (see the module docstring)."""

    def __init__(self, size: int, threads_per_block: int):
        self.T = threads_per_block
        self.w_tid = np.full(size, -1, I64)
        self.w_ep = np.zeros(size, I64)
        self.w_wep = np.zeros(size, I64)
        self.w_loc = np.zeros(size, np.int32)
        self.w_atomic = np.zeros(size, bool)
        self.r = [self._reader(size), self._reader(size)]

    @staticmethod
    def _reader(size: int) -> dict[str, np.ndarray]:
        return {"tid": np.full(size, -1, I64), "ep": np.zeros(size, I64),
                "wep": np.zeros(size, I64), "loc": np.zeros(size, np.int32)}

    # ---- ordering ----------------------------------------------------------------------------

    def _unordered(self, other, other_ep, other_wep, t, ep, wep) -> np.ndarray:
        T = self.T
        same_block = (other // T) == (t // T)
        same_warp = same_block & (((other % T) // 32) == ((t % T) // 32))
        ordered = same_block & ((other_ep != ep) | (same_warp & (other_wep != wep)))
        return ~ordered

    def _against(self, kind, tid, ep, wep, loc_arr, e, t, cur_ep, cur_wep, loc, extra=None
                 ) -> Conflict | None:
        other = tid[e]
        cand = (other >= 0) & (other != t)
        if extra is not None:
            cand &= extra
        if not cand.any():
            return None
        idx = np.flatnonzero(cand)
        ee = e[idx]
        bad = self._unordered(other[idx], ep[ee], wep[ee], t[idx], cur_ep[idx], cur_wep[idx])
        if not bad.any():
            return None
        j = idx[int(np.argmax(bad))]
        return Conflict(kind, int(e[j]), int(t[j]), int(other[j]), loc, int(loc_arr[e[j]]))

    # ---- accesses ------------------------------------------------------------------------------

    def read(self, e, t, ep, wep, loc: int, atomic: bool = False) -> Conflict | None:
        """Record reads of elements ``e`` by threads ``t``; return the first conflict, if any."""
        extra = None if not atomic else ~self.w_atomic[e]
        found = self._against("read-after-write", self.w_tid, self.w_ep, self.w_wep,
                              self.w_loc, e, t, ep, wep, loc, extra)
        if atomic:
            return found
        r1, r2 = self.r
        old = r1["tid"][e]
        shift = (old >= 0) & (old != t)
        if shift.any():
            es = e[shift]
            for key in ("ep", "wep", "loc"):
                r2[key][es] = r1[key][es]
            r2["tid"][es] = old[shift]
        r1["tid"][e] = t
        r1["ep"][e] = ep
        r1["wep"][e] = wep
        r1["loc"][e] = loc
        lost = r1["tid"][e] != t  # several threads of this access read one element
        if lost.any():
            r2["tid"][e[lost]] = t[lost]
            r2["ep"][e[lost]] = ep[lost]
            r2["wep"][e[lost]] = wep[lost]
            r2["loc"][e[lost]] = loc
        return found

    def write(self, e, t, ep, wep, loc: int, atomic: bool = False) -> Conflict | None:
        """Record writes (``atomic``: read-modify-writes) of elements ``e`` by threads ``t``."""
        extra = ~self.w_atomic[e] if atomic else None
        found = self._against("write-after-write" if not atomic else "atomic-vs-plain",
                              self.w_tid, self.w_ep, self.w_wep, self.w_loc, e, t, ep, wep,
                              loc, extra)
        for reader in self.r:
            if found is not None:
                break
            found = self._against("write-after-read", reader["tid"], reader["ep"],
                                  reader["wep"], reader["loc"], e, t, ep, wep, loc)
        self.w_tid[e] = t
        self.w_ep[e] = ep
        self.w_wep[e] = wep
        self.w_loc[e] = loc
        self.w_atomic[e] = atomic
        if not atomic and found is None:
            lost = self.w_tid[e] != t  # two threads of this one store write one element
            if lost.any():
                j = int(np.argmax(lost))
                found = Conflict("write-after-write", int(e[j]), int(t[j]),
                                 int(self.w_tid[e[j]]), loc, loc)
        return found
