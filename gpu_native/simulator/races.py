"""Shadow memory for the race detector.

Every shared array, and every global array that a launch both writes and reads (or writes inside
``with unsafe():``, or updates atomically and also accesses plainly), gets a shadow: for each
element the last thread that wrote it (with the source location, whether the write was atomic,
and the barrier epoch of its block), plus a log of the reads since the last barrier.

Two accesses to one element by different threads *conflict* when at least one is a write, they are
not both atomic, and nothing orders them:

* threads of different blocks are never ordered within a launch (global memory only);
* threads of one block are ordered once a ``sync_threads()`` of that block lies between the two
  accesses (for shared memory the barrier simply clears the history of the block);
* threads of one warp are also ordered by a ``sync_warp()`` between the two accesses
  (approximately: any ``sync_warp()`` of the chunk counts).

Reads are cheap: they are checked against the last write only while the interval has seen a write,
and are otherwise just logged; the log is checked when a write comes (write-after-read) and
dropped at the barrier.  So a kernel whose shared reads and writes are separated by barriers, as a
correct tiled kernel's are, pays almost nothing.

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
    """One detected race: ``kind`` is "read-after-write", "read-after-atomic",
    "write-after-write", "write-after-read", "atomic-vs-plain" or "write-during-async-read"
    (``thread`` read at ``loc`` asynchronously, and ``other`` wrote before the read retired).
    Accesses of a tensor copy's slice while the copy may be writing it are reported by
    :mod:`.tma` in its own words (not as a ``Conflict``)."""

    kind: str
    element: int  # flat element offset into the shadowed storage
    thread: int  # global thread id of the access that found the conflict
    other: int  # global thread id of the earlier access
    loc: int  # location id of this access
    other_loc: int  # location id of the earlier access


class Shadow:
    """Access history of one array (see the module docstring).

    ``row_size`` is the per-block size of a shared array (whose storage holds one row per block);
    ``None`` for a global array, whose accesses also record the block's barrier epoch.
    """

    def __init__(self, size: int, threads_per_block: int, row_size: int | None = None):
        self.T = threads_per_block
        self.row = row_size
        self.w_tid = np.full(size, -1, I64)
        self.w_loc = np.zeros(size, np.int32)
        self.w_atomic = np.zeros(size, bool)
        self.w_ver = np.zeros(size, I64)
        self.w_ep = None if row_size is not None else np.zeros(size, I64)
        # Of a shared array, every write's turn (``clock``) and writer, kept across barriers: an
        # asynchronous read (``warpgroup_mma``'s, of shared operands only) is checked against the
        # writes made while it was in flight.
        self.clock = 0
        self.w_clock = None if row_size is None else np.zeros(size, I64)
        self.w_last = None if row_size is None else np.full(size, -1, I64)
        self.dirty = False  # a write is recorded since the history was last cleared
        self.buf = np.empty(0, I64)  # logged reads: element offsets ...
        self.nlog = 0
        self.batches: list[tuple] = []  # ... and per batch (threads, location, version, epochs)
        self.limit = max(1 << 25, 4 * size)  # log entries kept before it is condensed

    # ---- ordering ----------------------------------------------------------------------------

    def _unordered(self, other, other_ver, other_ep, t, ver, ep) -> np.ndarray:
        T = self.T
        same_block = (other // T) == (t // T)
        same_warp = same_block & (((other % T) // 32) == ((t % T) // 32))
        ordered = same_warp & (other_ver != ver)
        if other_ep is not None:
            ordered |= same_block & (other_ep != ep)
        return ~ordered

    def _against_write(self, kind, e, t, ver, ep, loc, atomic) -> Conflict | None:
        other = self.w_tid[e]
        cand = (other >= 0) & (other != t)
        if atomic:
            cand &= ~self.w_atomic[e]
        if not cand.any():
            return None
        j = np.flatnonzero(cand)
        ej = e[j]
        bad = self._unordered(other[j], self.w_ver[ej],
                              None if self.w_ep is None else self.w_ep[ej], t[j], ver,
                              None if ep is None else ep[j])
        if not bad.any():
            return None
        k = j[int(np.argmax(bad))]
        if atomic or (self.w_atomic[e[k]] and kind == "write-after-write"):
            kind = "atomic-vs-plain"
        elif self.w_atomic[e[k]]:
            kind = "read-after-atomic"
        return Conflict(kind, int(e[k]), int(t[k]), int(other[k]), loc, int(self.w_loc[e[k]]))

    # ---- the read log --------------------------------------------------------------------------

    def _log(self, e, t, loc: int, ver: int, ep) -> None:
        """Append reads to the log; element offsets are copied into a reused buffer."""
        n, k = self.nlog, len(e)
        if n + k > len(self.buf):
            grown = np.empty(max(2 * len(self.buf), n + k, 1024), I64)
            grown[:n] = self.buf[:n]
            self.buf = grown
        self.buf[n:n + k] = e
        self.batches.append((t, loc, ver, ep))
        self.nlog = n + k

    def _merged(self):
        """The log as columns (elements, threads, locations, versions, epochs)."""
        n = self.nlog
        if len(self.batches) != 1 or not isinstance(self.batches[0][1], np.ndarray):
            sizes = []
            start = 0
            for t, _loc, _ver, _ep in self.batches:
                sizes.append(len(t))
                start += len(t)
            Tt = np.concatenate([b[0] for b in self.batches])
            LOC = np.concatenate([b[1] if isinstance(b[1], np.ndarray) else
                                  np.full(k, b[1], np.int32) for b, k in zip(self.batches, sizes)])
            VER = np.concatenate([b[2] if isinstance(b[2], np.ndarray) else
                                  np.full(k, b[2], I64) for b, k in zip(self.batches, sizes)])
            EP = None if self.w_ep is None else np.concatenate([b[3] for b in self.batches])
            self.batches = [(Tt, LOC, VER, EP)]
        Tt, LOC, VER, EP = self.batches[0]
        return self.buf[:n], Tt, LOC, VER, EP

    def _replace(self, E, Tt, LOC, VER, EP) -> None:
        k = len(E)
        self.buf[:k] = E
        self.nlog = k
        self.batches = [(Tt, LOC, VER, EP)] if k else []

    def _shrink(self) -> None:
        """Keep the last read of at most two distinct threads per element (bounds the log)."""
        E, Tt, LOC, VER, EP = self._merged()
        order = np.lexsort((VER, Tt, E))
        cols = [E, Tt, LOC, VER] + ([] if EP is None else [EP])
        E, Tt, LOC, VER, *rest = (c[order] for c in cols)
        last = np.ones(len(E), bool)
        last[:-1] = (E[1:] != E[:-1]) | (Tt[1:] != Tt[:-1])
        E, Tt, LOC, VER, *rest = (c[last] for c in (E, Tt, LOC, VER, *rest))
        first = np.ones(len(E), bool)
        first[1:] = E[1:] != E[:-1]
        index = np.arange(len(E))
        rank = index - np.maximum.accumulate(np.where(first, index, 0))
        keep = rank < 2
        self._replace(E[keep], Tt[keep], LOC[keep], VER[keep], rest[0][keep] if rest else None)

    def _against_reads(self, e, t, ver, ep, loc) -> Conflict | None:
        E, Tt, LOC, VER, EP = self._merged()
        order = np.argsort(e, kind="stable")
        se = e[order]
        pos = np.minimum(np.searchsorted(se, E), len(se) - 1)
        hit = se[pos] == E
        if not hit.any():
            return None
        j = np.flatnonzero(hit)
        wi = order[pos[j]]
        other = Tt[j]
        # Reads of an element now written need no further checks: a later unordered write of it
        # conflicts with this write as well.  Dropping them keeps the log short.
        keep = ~hit
        self._replace(E[keep], Tt[keep], LOC[keep], VER[keep], None if EP is None else EP[keep])
        cand = other != t[wi]
        if not cand.any():
            return None
        j, wi, other = j[cand], wi[cand], other[cand]
        bad = self._unordered(other, VER[j], None if EP is None else EP[j], t[wi], ver,
                              None if ep is None else ep[wi])
        if not bad.any():
            return None
        k = int(np.argmin(np.where(bad, wi, np.iinfo(I64).max)))
        return Conflict("write-after-read", int(e[wi[k]]), int(t[wi[k]]), int(other[k]), loc,
                        int(LOC[j[k]]))

    # ---- accesses ------------------------------------------------------------------------------

    def read(self, e, t, ver: int, ep, loc: int, atomic: bool = False) -> Conflict | None:
        """Reads of elements ``e`` by threads ``t`` (``ep``: their blocks' epochs, global only);
        return the first conflict with an earlier write, if any."""
        found = None
        if self.dirty:
            found = self._against_write("read-after-write", e, t, ver, ep, loc, atomic)
        if not atomic:
            self._log(e, t, loc, ver, ep)
            if self.nlog > self.limit:
                self._shrink()
        return found

    def write(self, e, t, ver: int, ep, loc: int, atomic: bool = False) -> Conflict | None:
        """Writes (``atomic``: read-modify-writes) of elements ``e`` by threads ``t``."""
        found = None
        if self.dirty:
            found = self._against_write("write-after-write", e, t, ver, ep, loc, atomic)
        if found is None and self.nlog:
            found = self._against_reads(e, t, ver, ep, loc)
        self.w_tid[e] = t
        self.w_loc[e] = loc
        self.w_atomic[e] = atomic
        if self.w_clock is not None and self.w_last is not None:
            self.clock += 1
            self.w_clock[e] = self.clock
            self.w_last[e] = t
        self.w_ver[e] = ver
        if self.w_ep is not None:
            self.w_ep[e] = ep
        self.dirty = True
        if not atomic and found is None:
            lost = self.w_tid[e] != t  # two threads of this one store write one element
            if lost.any():
                j = int(np.argmax(lost))
                found = Conflict("write-after-write", int(e[j]), int(t[j]),
                                 int(self.w_tid[e[j]]), loc, loc)
        return found

    def written_since(self, e, stamp: int, t: int, loc: int) -> Conflict | None:
        """An asynchronous read of elements ``e`` by thread ``t`` (at ``loc``), issued when
        ``clock`` was ``stamp`` and now retired: the first write made while it was in flight."""
        assert self.w_clock is not None and self.w_last is not None  # a shared array's
        hit = self.w_clock[e] > stamp
        if not hit.any():
            return None
        k = int(e[int(np.argmax(hit))])
        return Conflict("write-during-async-read", k, t, int(self.w_last[k]), loc,
                        int(self.w_loc[k]))

    def unclaim(self, e) -> None:
        """Forget the writer of elements ``e``, not the write's turn (which asynchronous reads
        check): a tensor copy's write, which the copy's waits order instead of its issue."""
        self.w_tid[e] = -1

    def forget(self, rows: np.ndarray | None) -> None:
        """A barrier: drop the history of the blocks (rows of a shared array) that passed it."""
        if rows is None or rows.all():
            self.w_tid.fill(-1)
            self.nlog = 0
            self.batches = []
            self.dirty = False
            return
        row = self.row
        assert row is not None  # a barrier forgets by block only in shared arrays (rows)
        self.w_tid.reshape(-1, row)[rows] = -1
        if self.nlog:
            E, Tt, LOC, VER, _ = self._merged()
            keep = ~rows[E // row]
            self._replace(E[keep], Tt[keep], LOC[keep], VER[keep], None)
