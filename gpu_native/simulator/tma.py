"""The tensor copies ``tma_load`` and ``tma_wait`` on the simulator (see
:mod:`gpu_native.check.tma` for the protocol and :mod:`gpu_native.emit.tma` for the CUDA).

The barriers are modelled as the GPU has them.  Each slice (*stage*) of a destination has, per
block, an ``mbarrier`` that expects one arrival a phase and counts its completed phases; each
thread keeps, per stage, whether it issued copies since its last wait and how many waits it made
(the GPU keeps only that count's parity, the bit it waits on).  ``tma_load`` reads its source at
once and adds the copy to the current phase of its stage; ``tma_wait`` first lets the threads
that issued arrive, which completes the phase: its copies land (the slice is written) and the
count goes up; then each thread's wait must be for the phase just completed.  A wait for a phase
nobody closed would hang on the GPU, and one for any other phase would pass on a wrong fill; both
are reported, as are two threads closing one fill.

For the race detector a copy writes its slice at an unknown moment between its issue and the
arrival that completes it.  The issue is recorded in the slice's shadow as a write by the
issuing thread (so an unordered earlier access of another thread, or a ``warpgroup_mma`` read
still in flight, is a race), whose writer is then forgotten: the copy is ordered before a thread
by that thread's own wait for it, or by a ``sync_threads()`` after some thread's wait, not by
the issue.  Until then every access of the slice is checked here: any access while a copy is in
flight, and an access after it landed by a thread that has not waited for it, is a race.
"""

from __future__ import annotations

import numpy as np

from .warpgroup import operand_offset

I64 = np.dtype(np.int64)


class Destination:
    """One destination array's barriers and copies in a chunk, by *slot*: block (of the chunk)
    times stages plus stage, which is also the slice's flat offset in the array's storage
    divided by the slice's size."""

    def __init__(self, array, stages: int, lanes: int, blocks: int):
        self.array = array
        self.stages = stages
        self.size = array.size // stages  # elements of one slice
        slots = blocks * stages
        self.completed = np.zeros(slots, I64)  # the barrier's completed phases
        self.inflight = np.zeros(slots, I64)  # copies issued into the current phase
        self.landed = np.full(slots, -1, I64)  # the phase of a landed copy not yet ordered
        self.waited = np.full(slots, -1, I64)  # the newest phase a thread waited for
        self.issuer = np.full(slots, -1, I64)  # the newest copy's thread (global id) ...
        self.issue_loc = np.zeros(slots, I64)  # ... and location
        self.closer = np.full(slots, -1, I64)  # the thread whose arrival closed the last phase
        self.copies: list[tuple] = []  # (slots, values (copies x size)) in flight
        self.issued = np.zeros((lanes, stages), bool)  # per lane: issued since its last wait
        self.waits = np.zeros((lanes, stages), I64)  # per lane: waits made
        self.is_open = False  # a copy in flight or landed and not yet ordered

    def update(self) -> None:
        self.is_open = bool(self.inflight.any() or (self.landed >= 0).any())

    def land(self, slots: np.ndarray) -> None:
        """Complete the current phase of ``slots``: their copies write their slices."""
        data, size = self.array.data, self.size
        keep = []
        for where, values in self.copies:
            done = np.isin(where, slots)
            if done.any():
                data[where[done][:, None] * size + np.arange(size)] = values[done]
            if not done.all():
                keep.append((where[~done], values[~done]))
        self.copies = keep
        filled = slots[self.inflight[slots] > 0]
        self.landed[filled] = self.completed[filled]
        self.completed[slots] += 1
        self.inflight[slots] = 0


class TmaState:
    """The tensor-copy destinations of a chunk (``Chunk.tma``), by array."""

    def __init__(self):
        self.destinations: dict[int, Destination] = {}
        self.open = False  # some destination is open (the race checks have work to do)

    def destination(self, chunk, array, stages: int) -> Destination:
        dest = self.destinations.get(id(array))
        if dest is None:
            dest = self.destinations[id(array)] = Destination(array, stages, chunk.L, chunk.B)
        return dest

    def update(self) -> None:
        self.open = any(d.is_open for d in self.destinations.values())

    def compact(self, keep: np.ndarray) -> None:
        for dest in self.destinations.values():
            dest.issued = dest.issued[keep]
            dest.waits = dest.waits[keep]

    def barrier(self, blocks: np.ndarray | None) -> None:
        """A ``sync_threads()`` of ``blocks`` (a mask over the chunk's blocks; None: all):
        landed copies some thread waited for are now ordered before every thread."""
        if not self.open:
            return
        for dest in self.destinations.values():
            if not dest.is_open:
                continue
            done = (dest.landed >= 0) & (dest.waited >= dest.landed)
            if blocks is not None:
                done &= np.repeat(blocks, dest.stages)
            dest.landed[done] = -1
            dest.update()
        self.update()

    def check(self, chunk, array, e: np.ndarray, lanes: np.ndarray | None, loc: int,
              what: str) -> None:
        """Accesses of elements ``e`` (offsets in ``array``'s storage) by ``lanes`` (one each;
        None: lane k makes access k): report the first one a copy may still be writing, or
        that its thread is not ordered after."""
        dest = self.destinations.get(id(array))
        if dest is None or not dest.is_open:
            return
        if lanes is None:
            lanes = np.arange(len(e))
        slot = np.asarray(e, I64) // dest.size
        busy = dest.inflight[slot] > 0
        landed = dest.landed[slot]
        late = (landed >= 0) & (dest.waits[lanes, slot % dest.stages] <= landed)
        bad = busy | late
        if bad.any():
            j = int(np.argmax(bad))
            _report_race(chunk, dest, int(e[j]), int(lanes[j]), loc, what, bool(busy[j]))


def _state(chunk) -> TmaState:
    if chunk.tma is None:
        chunk.tma = TmaState()
    return chunk.tma


def _slice_name(array, stage: int, stages: int) -> str:
    if stages == 1 and len(array.dims) == 2:
        return f"'{array.name}'"
    lead = np.unravel_index(stage, array.dims[:-2])
    return f"slice {array.name}[{', '.join(str(int(i)) for i in lead)}]"


def _report_race(chunk, dest: Destination, element: int, lane: int, loc: int, what: str,
                 busy: bool) -> None:
    launch = chunk.launch
    where = launch.program.location
    array = dest.array
    slot = element // dest.size
    issue_loc = int(dest.issue_loc[slot])
    block, thread = chunk.coords(lane)
    _, issuer = launch.thread_coords(int(dest.issuer[slot]))
    index = ", ".join(map(str, array.element(element % array.size)))
    name = _slice_name(array, slot % dest.stages, dest.stages)
    head = (f"data race on shared array {array.name}[{index}] of block {block}: thread {thread} "
            f"{what} it at {where(loc)}")
    if busy:
        message = (f"{head} while the tma_load issued by thread {issuer} at {where(issue_loc)} "
                   f"may still be writing it (the copy lands at an unknown moment before the "
                   f"tma_wait that completes it); touch {name} only after this thread's "
                   "tma_wait for that fill, and issue a refill only after a sync_threads() that "
                   "follows every thread's last use of the slice")
    else:
        message = (f"{head} before its own tma_wait for the copy that thread {issuer} issued "
                   f"at {where(issue_loc)}: a copy is ordered before the threads that waited for "
                   "it, and before every thread of the block only after a sync_threads() that "
                   f"follows such a wait; call tma_wait for {name} in this thread before this "
                   "access, or put a sync_threads() between a wait and it")
    launch.report(("tma race", array.name, what, loc, issue_loc), message)


def _slots(chunk, dest: Destination, off: np.ndarray, lanes: np.ndarray):
    stage = off[lanes] // dest.size
    return stage, chunk._info("blk")[lanes] * dest.stages + stage


def tma_load(chunk, operands, params, m, loc: int):
    dst_op, src_op = operands
    stages = params[3]
    doff, m = operand_offset(chunk, dst_op, m, loc)
    soff, m = operand_offset(chunk, src_op, m, loc)
    if m is False:
        return False
    dst, src = dst_op[0], src_op[0]
    rows, cols = dst.dims[-2:]
    state = _state(chunk)
    dest = state.destination(chunk, dst, stages)
    lanes = chunk.active(m)
    stage, slot = _slots(chunk, dest, doff, lanes)
    gtid = chunk._info("gtid")[lanes].astype(I64)
    # The source as it is at the issue (the copy engine reads it before the wait).
    row_step, col_step = (src.dims[1], 1) if src.strides is None else src.strides
    flat = (soff[lanes][:, None, None] + np.arange(rows)[:, None] * row_step
            + np.arange(cols) * col_step).reshape(len(lanes), -1)
    if src.shadow is not None:
        e = flat.reshape(-1)
        t = np.repeat(gtid, flat.shape[1])
        ep = np.repeat(chunk.epoch[chunk._info("blk")[lanes]], flat.shape[1])
        found = src.shadow.read(e, t, chunk.sync_version, ep, loc)
        if found is not None:
            chunk.launch.report_race(src, found)
    values = src.data[flat]
    shadow = dst.shadow
    if shadow is not None:
        # Another copy into the slice, or one the issuing thread is not ordered after ...
        state.check(chunk, dst, slot * dest.size, lanes, loc, "writes (by a tma_load)")
        # ... and the other threads' unordered accesses: the copy writes the whole slice.
        e = (slot[:, None] * dest.size + np.arange(dest.size)).reshape(-1)
        t = np.repeat(gtid, dest.size)
        found = shadow.write(e, t, chunk.sync_version, None, loc)
        if found is not None:
            chunk.launch.report_race(dst, found, chunk._divergence(m, found.thread))
        shadow.unclaim(e)
    dest.copies.append((slot, values))
    np.add.at(dest.inflight, slot, 1)
    dest.issuer[slot] = gtid
    dest.issue_loc[slot] = loc
    dest.issued[lanes, stage] = True
    dest.is_open = state.open = True
    return m


def tma_wait(chunk, operands, params, m, loc: int):
    (dst_op,) = operands
    doff, m = operand_offset(chunk, dst_op, m, loc)
    if m is False:
        return False
    state = _state(chunk)
    dest = state.destination(chunk, dst_op[0], params[0])
    lanes = chunk.active(m)
    stage, slot = _slots(chunk, dest, doff, lanes)
    arrive = dest.issued[lanes, stage]
    if arrive.any():
        _arrive(chunk, dest, lanes[arrive], stage[arrive], slot[arrive], loc)
    k = dest.waits[lanes, stage]
    done = dest.completed[slot]
    ok = done == k + 1
    if not ok.all():
        j = int(np.argmax(~ok))
        _report_phase(chunk, dest, int(lanes[j]), int(slot[j]), int(k[j]), int(done[j]), loc)
    np.maximum.at(dest.waited, slot[ok], k[ok])
    dest.waits[lanes, stage] += 1
    dest.update()
    state.update()
    return m


def _arrive(chunk, dest: Destination, lanes, stage, slot, loc: int) -> None:
    """The threads of ``lanes`` issued copies into their stages since their last waits: each
    arrives on its stage's barrier, which completes the phase."""
    dest.issued[lanes, stage] = False
    count = np.bincount(slot, minlength=len(dest.completed))
    extra = (count > 1) | ((count > 0) & (dest.inflight == 0))
    if extra.any():
        s = int(np.argmax(extra))
        here = lanes[slot == s]
        # The earlier arrival: another lane of this statement, or the last phase's closer.
        if len(here) > 1:
            first, later = chunk._info("gtid")[here[0]], int(here[1])
        else:
            first, later = dest.closer[s], int(here[0])
        _report_arrivals(chunk, dest, later, int(first), s, loc)
    closing = np.flatnonzero((count > 0) & (dest.inflight > 0))
    if len(closing):
        # The first arriving lane of each slot closes its phase.
        order = np.argsort(slot, kind="stable")
        first = order[np.searchsorted(slot[order], closing)]
        dest.closer[closing] = chunk._info("gtid")[lanes[first]]
        dest.land(closing)


def _report_arrivals(chunk, dest: Destination, lane: int, other: int, slot: int,
                     loc: int) -> None:
    launch = chunk.launch
    where = launch.program.location(loc)
    block, thread = chunk.coords(lane)
    first = f"thread {launch.thread_coords(other)[1]}" if other >= 0 else "another thread"
    name = _slice_name(dest.array, slot % dest.stages, dest.stages)
    launch.report(("tma arrivals", loc), (
        f"tma_wait at {where}: thread {thread} and {first} of block {block} both issued "
        f"tma_load copies into {name} for one fill, so both arrive on its barrier, which "
        "expects one arrival a fill: on the GPU the second arrival completes the next fill "
        "before its copies land, and the threads waiting for it read the slice too early; "
        "issue each fill of a slice from one thread (under `if thread_idx.x == 0:`)"))


def _report_phase(chunk, dest: Destination, lane: int, slot: int, waits: int, done: int,
                  loc: int) -> None:
    launch = chunk.launch
    where = launch.program.location(loc)
    block, thread = chunk.coords(lane)
    name = _slice_name(dest.array, slot % dest.stages, dest.stages)
    head = (f"tma_wait at {where}: thread {thread} of block {block} waits for fill "
            f"{waits + 1} of {name}")
    if done == waits:
        launch.report(("tma hang", loc), (
            f"{head}, but no thread has completed that fill: no tma_load was issued into the "
            "slice since its last fill, or the thread that issued it has not reached its own "
            "tma_wait of it yet (its arrival completes the fill); on the GPU this thread waits "
            "forever.  Issue every fill before the waits for it, and make the issuing thread "
            "wait for it no later than the others"))
        return
    if done > waits:
        why = (f"the slice has been filled {done} times: this thread skipped "
               f"{done - waits - 1} wait{'s' if done - waits - 1 != 1 else ''} of it")
    else:
        why = (f"only {done} fill{'s' if done != 1 else ''} of the slice completed: this thread "
               "waited more often than the slice was filled")
    launch.report(("tma phase", loc), (
        f"{head}, but {why}; on the GPU a wait checks only the parity of the fill, so it "
        "passes on a wrong fill, or hangs, and the thread may read the slice before its copies "
        "land or after it was refilled.  Wait for every fill of a slice once, in order, in "
        "every thread that reads it"))


OPS = {"tma_load": tma_load, "tma_wait": tma_wait}
