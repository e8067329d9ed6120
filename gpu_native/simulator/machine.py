"""The lanes of one chunk of blocks: what a generated simulator program calls.

A *lane* is one GPU thread.  A chunk holds the threads of several consecutive blocks, block after
block, threads in linear order (``x`` fastest) inside each; every kernel value is a NumPy scalar
(the same on every lane) or a vector with one entry per lane (a small vector type's value is a
tuple of those, one per component).  Control flow is carried by a lane
*mask*:

* ``None``: every lane of the chunk executes (the fast path);
* ``False``: no lane executes;
* a ``bool`` vector: the lanes where it is true execute.

Masks are kept normalised (a vector is never all true nor all false), so ``m is None`` and
``m is False`` are exact tests.  A lane that fails a check or returns from the kernel is *gone*: it
is removed from the mask at once and never executes again.  At the top level of a kernel the
chunk may be *compacted*: gone lanes are dropped from every vector so later statements run dense.

The arrays the lanes index are in :mod:`.memory`; here is what the lanes do with them (bounds
checks, loads, stores, atomics, race detection), and their barriers, warp operations and print.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..errors import KernelIndexError
from . import atomics, matrices, ops, structs, warp
from .memory import LocalArray
from .races import Conflict

I64 = np.dtype(np.int64)
U64 = np.dtype(np.uint64)


# ---- masks -------------------------------------------------------------------------------------


def _norm(r: np.ndarray, maybe_full: bool):
    if maybe_full and r.all():
        return None
    if not r.any():
        return False
    return r


def m_and(m, c):
    """Lanes of ``m`` where ``c`` holds (``c``: a bool vector or scalar)."""
    if m is False:
        return False
    if isinstance(c, np.ndarray) and c.ndim:
        return _norm(c if m is None else (m & c), m is None)
    return m if c else False


def m_andnot(m, c):
    """Lanes of ``m`` where ``c`` does not hold."""
    if m is False:
        return False
    if isinstance(c, np.ndarray) and c.ndim:
        return _norm(~c if m is None else (m & ~c), m is None)
    return False if c else m


def m_or(a, b):
    """Lanes of ``a`` or ``b``."""
    if a is None or b is None:
        return None
    if a is False:
        return b
    if b is False:
        return a
    return _norm(a | b, True)


def where(m, a, b):
    """``a`` on the lanes of ``m``, ``b`` elsewhere (``m`` a mask or a bool condition)."""
    if m is None:
        return a
    if m is False:
        return b
    if isinstance(m, np.ndarray) and m.ndim:
        return np.where(m, a, b)
    return a if m else b


def _kept(value, keep: np.ndarray):
    """The lanes ``keep`` of a lane vector, item by item of a tuple; a uniform value as it is."""
    if isinstance(value, tuple):
        return tuple(_kept(v, keep) for v in value)
    return value[keep] if isinstance(value, np.ndarray) and value.ndim == 1 else value


# ---- the chunk ---------------------------------------------------------------------------------


class Chunk:
    """The lanes of blocks ``first_block .. first_block + nblocks - 1`` of one launch.

    In a debugger, this is ``_gn`` in every simulated frame: ``_gn.show(x)`` maps each executing
    thread ``(block, thread)`` to its value of ``x``, ``_gn_m`` is the mask of executing lanes.
    """

    def __init__(self, launch, first_block: int, nblocks: int):
        self.launch = launch
        self.first_block = first_block
        self.B = nblocks
        self.T = launch.T
        self.W = -(-self.T // 32)
        self.L = nblocks * self.T
        self.u: np.ndarray | None = None  # lane -> position before compaction (None: identity)
        self.cache: dict = {}
        self.gone: np.ndarray | None = None
        self.deaths = 0
        self.epoch = np.zeros(nblocks, I64)  # barriers passed, per block
        self.sync_version = 0  # barriers and warp barriers passed by any block of the chunk
        self.bdim = launch.bdim
        self.gdim = launch.gdim
        self.registered_locals: list[LocalArray] = []
        self.shared = [launch.make_shared(spec, nblocks) for spec in launch.program.shared_specs]
        self.consts = launch.consts  # the kernel's constant arrays (ConstArray), as ir.Kernel.consts
        self.async_copies = None  # cp_async copies in flight (simulator.matrices.AsyncCopies)
        self.async_reads = None  # warpgroup_mma reads in flight (simulator.warpgroup.AsyncReads)
        self.tma = None  # tensor copies' barriers and copies (simulator.tma.TmaState)
        # The masks of the statements whose conditional expressions are running a branch (the
        # outermost first): what _divergence judges, since a barrier can go before them.
        self.outer: list = []

    # ---- lane information (computed on demand, dropped on compaction) ----

    def _info(self, key: str) -> np.ndarray:
        c = self.cache
        v = c.get(key)
        if v is not None:
            return v
        if key == "u":
            v = np.arange(self.L, dtype=I64) if self.u is None else self.u
        elif key == "blk":
            v = self._info("u") // self.T
        elif key == "tlin":
            v = self._info("u") % self.T
        elif key == "lane":
            v = np.arange(self.L, dtype=I64)
        elif key.startswith("tid"):
            a = int(key[3])
            bx, by, _ = self.launch.block
            t = self._info("tlin")
            v = (t % bx if a == 0 else (t // bx) % by if a == 1 else t // (bx * by)).astype(
                np.int32)
        elif key.startswith("bid"):
            a = int(key[3])
            gx, gy, _ = self.launch.grid
            g = self._info("blk") + self.first_block
            v = (g % gx if a == 0 else (g // gx) % gy if a == 1 else g // (gx * gy)).astype(
                np.int32)
        elif key.startswith("uid"):
            a = int(key[3])
            v = self._info(f"bid{a}").astype(I64) * I64.type(self.launch.block[a]) + self._info(
                f"tid{a}")
        elif key.startswith("tuid"):
            v = self._info(f"tid{key[4]}").astype(I64)
        elif key == "laneid":
            v = (self._info("tlin") % 32).astype(np.int32)
        elif key == "wslot":
            v = self._info("blk") * self.W + self._info("tlin") // 32
        elif key == "gtid":
            v = (self._info("blk") + self.first_block) * self.T + self._info("tlin")
        else:  # pragma: no cover
            raise KeyError(key)
        c[key] = v
        return v

    def tid(self, axis: int) -> np.ndarray:
        return self._info(f"tid{axis}")

    def bid(self, axis: int) -> np.ndarray:
        return self._info(f"bid{axis}")

    def uid(self, axis: int) -> np.ndarray:
        return self._info(f"uid{axis}")

    def tuid(self, axis: int) -> np.ndarray:
        return self._info(f"tuid{axis}")

    def lane_id(self) -> np.ndarray:
        return self._info("laneid")

    def block_base(self, size: int) -> np.ndarray:
        key = f"bb{size}"
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = self._info("blk") * size
        return v

    def lane_base(self, size: int) -> np.ndarray:
        key = f"lb{size}"
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = self._info("lane") * size
        return v

    def active(self, m) -> np.ndarray:
        """Lane numbers executing under mask ``m``."""
        if m is None:
            return self._info("lane")
        if m is False:
            return np.zeros(0, I64)
        return np.flatnonzero(m)

    def full(self, x) -> np.ndarray:
        """``x`` as a vector over all lanes."""
        x = np.asarray(x)
        return x if x.ndim == 1 else np.broadcast_to(x, (self.L,))

    # ---- coordinates and debugging ----

    def coords(self, lane: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(block index, thread index) of a lane, as ``(x, y, z)`` tuples."""
        return self.launch.thread_coords(int(self._info("gtid")[lane]))

    def show(self, x, m=None) -> dict:
        """``{(block, thread): value}`` for the executing lanes (``m``: a mask; default all)."""
        x = self.full(x)
        return {self.coords(int(lane)): x[lane].item() for lane in self.active(m)}

    def threads(self, m=None) -> list:
        """The ``(block, thread)`` coordinates of the executing lanes."""
        return [self.coords(int(lane)) for lane in self.active(m)]

    # ---- lanes leaving ----

    def exit(self, m) -> None:
        """The lanes of ``m`` return from the kernel."""
        if m is False:
            return
        if m is None:
            self.gone = np.ones(self.L, bool)
        else:
            self.gone = m.copy() if self.gone is None else (self.gone | m)

    def _kill(self, bad: np.ndarray) -> None:
        self.gone = bad.copy() if self.gone is None else (self.gone | bad)
        self.deaths += 1

    def prune(self, m, deaths: int):
        """``m`` without the lanes that failed since ``deaths`` was read."""
        if deaths == self.deaths or m is False or self.gone is None:
            return m
        return m_andnot(m, self.gone)

    def _report(self, site: int, index: int, length: int, lane: int) -> None:
        launch = self.launch
        if launch.failed:
            return
        launch.failed = True
        block, thread = self.coords(lane)
        launch.errors.fail(site, int(index), int(length), block, thread)

    def _fail_where(self, m, bad, site: int, values=None, length: int = 0):
        """Fail the executing lanes where ``bad`` holds: report the first, stop them all."""
        bad = self.full(bad)
        if m is not None:
            bad = bad & m
        if not bad.any():
            return m
        lane = int(np.argmax(bad))
        index = 0 if values is None else int(self.full(np.asarray(values).astype(I64))[lane])
        self._report(site, index, length, lane)
        self._kill(bad)
        return m_andnot(m, bad)

    def zerodiv(self, m, divisor, dividend, site: int):
        """Fail the lanes that divide by zero (the reported index is the dividend)."""
        if m is False:
            return m
        z = np.asarray(divisor) == 0
        if z.ndim == 0 and not z:
            return m
        return self._fail_where(m, z, site, dividend, 0)

    def check_assert(self, m, cond, site: int):
        if m is False:
            return m
        c = np.asarray(cond)
        if c.ndim == 0 and c:
            return m
        return self._fail_where(m, ~c, site)

    def tail_exit(self, m, extents):
        """The grid-tail rule: lanes whose uid lies past every array they index return."""
        outside = None
        for array, axes in extents:
            o = None
            for dim, axis in enumerate(axes):
                if axis is None:  # a dimension not indexed by a bare uid is not checked
                    continue
                past = self.uid(axis) >= array.shape[dim]
                o = past if o is None else (o | past)
            outside = o if outside is None else (outside & o)
        if outside is None:
            return m
        self.exit(m_and(m, outside))
        return m_andnot(m, outside)

    def compact(self, m, *values):
        """Drop the gone lanes (at the kernel's top level, where ``m`` holds every live lane)."""
        if m is None or m is False:
            return (m, *values)
        keep = np.flatnonzero(m)
        self.u = self._info("u")[keep]
        self.L = len(keep)
        self.cache = {}
        self.gone = None
        for la in self.registered_locals:
            la.compact(keep)
        if self.async_copies is not None:
            self.async_copies.compact(keep)
        if self.tma is not None:
            self.tma.compact(keep)
        return (None, *(_kept(v, keep) for v in values))

    # ---- memory ----

    def new_local(self, spec, register: bool) -> LocalArray:
        name, info, dims = spec
        la = LocalArray(name, info, dims, self.L)
        if register:
            self.registered_locals.append(la)
        return la

    def offset(self, array, indices, sites, m, loc: int, width: int = 1):
        """Check ``indices`` against the array's extents; return (flat offsets within one
        block/thread, new mask).  Lanes with an index out of range fail (checked sites) or raise
        (unchecked sites: undefined behaviour on the GPU).  With ``width`` > 1 the last index
        must leave room for ``width`` elements (``load_vec4``)."""
        if m is False:
            return 0, False
        dims = array.dims
        strides = getattr(array, "strides", None)
        off = None
        bads = None
        last = len(indices) - 1
        for k, idx in enumerate(indices):
            i = np.asarray(idx)
            if i.dtype != I64:
                i = i.astype(I64)
            n = dims[k]
            b = i.view(U64) >= np.uint64(n)
            if width > 1 and k == last:
                b = b | (n - i < width)
            if b.ndim:
                hit = b.any() if m is None else (b & m).any()
            else:
                hit = bool(b)
            if hit:
                bads = (bads or []) + [(k, i, b, n)]
            if strides is not None:  # a Strided parameter: the view's own strides
                off = i * strides[k] if off is None else off + i * strides[k]
            else:
                off = i if off is None else off * I64.type(n) + i
        if strides is not None and off is not None:
            off = off + array.origin
        if bads is not None:
            m = self._bounds_fail(array, bads, sites, m, loc)
        return off, m

    def _bounds_fail(self, array, bads, sites, m, loc: int):
        for k, i, b, n in bads:
            if sites[k] is None:
                bb = self.full(b) if m is None else (self.full(b) & m)
                lane = int(np.argmax(bb))
                block, thread = self.coords(lane)
                err = KernelIndexError(
                    f"{self.launch.program.location(loc)}: index {int(self.full(i)[lane])} is "
                    f"out of range for axis {k} of '{array.name}' (length {n}) in thread "
                    f"{thread} of block {block}, where bounds checks are off (bounds_check="
                    "False) or were proven unnecessary; on the GPU this access is undefined "
                    "behaviour")
                err._set_origin(self.launch.program.name, None, block, thread)
                raise err
        bad = np.zeros(self.L, bool)
        for _k, _i, b, _n in bads:
            bad |= self.full(b)
        if m is not None:
            bad &= m
        lane = int(np.argmax(bad))
        for k, i, b, n in bads:
            if self.full(b)[lane]:
                self._report(sites[k], int(self.full(i)[lane]), n, lane)
                break
        self._kill(bad)
        return m_andnot(m, bad)

    def load(self, array, indices, sites, m, loc: int):
        off, m = self.offset(array, indices, sites, m, loc)
        if m is False:
            return array.vzero, False
        data = array.data
        if array.space == "local" and not np.ndim(off):
            v = array.per_lane()[:, int(off)].copy()
        else:
            base = array.base(self)
            if base is not None:
                off = base + off
            if array.shadow is not None:
                self.race(array, off, m, loc, "read")
            if np.ndim(off):
                v = data.take(off, axis=0) if m is None else data.take(off, axis=0, mode="clip")
            else:
                v = data[int(off)]
        if array.is_struct:  # a struct: the tuple of its fields
            return structs.to_value(v, array.info), m
        if array.width:  # a vector: its components (copies: memory may change under them)
            if array.is_bf16:  # vec2bf: its lanes' bits
                v = ops.bits_to_bf16(v)
            return (tuple(v[:, k] for k in range(array.width)) if v.ndim == 2
                    else tuple(v[k] for k in range(array.width))), m
        if array.is_bf16:
            v = ops.bits_to_bf16(v)
            if v.ndim == 0:
                v = v[()]
        return v, m

    def load_vec(self, array, indices, sites, width: int, align, m, loc: int):
        """``load_vec4``: ``width`` consecutive scalars from ``indices`` along the last axis, as
        a vector's components; their address must be aligned to the vector's size (a shared
        array starts on such a boundary on the GPU, a global one where its pointer does)."""
        off, m = self.offset(array, indices, sites, m, loc, width)
        if m is False:
            return (array.vzero,) * width, False
        size = width * array.data.dtype.itemsize
        start = array.array.ctypes.data if array.space == "global" else 0
        skew = (start + np.asarray(off, I64) * array.data.dtype.itemsize) % size
        hit = self.full(skew != 0)
        if m is not None:
            hit = hit & m
        if hit.any():
            if align is None:
                lane = int(np.argmax(hit))
                block, thread = self.coords(lane)
                err = KernelIndexError(
                    f"{self.launch.program.location(loc)}: load_vec4 of '{array.name}' at an "
                    f"address off a {size}-byte boundary in thread {thread} of block {block}, "
                    "where bounds checks are off (bounds_check=False); on the GPU this access "
                    "faults")
                err._set_origin(self.launch.program.name, None, block, thread)
                raise err
            m = self._fail_where(m, hit, align, skew)
            if m is False:
                return (array.vzero,) * width, False
        out = []
        for q in range(width):
            v, _ = self.load(array, (*indices[:-1], np.asarray(indices[-1]) + q),
                             (None,) * len(indices), m, loc)
            out.append(v)
        return tuple(out), m

    def store(self, array, indices, sites, value, m, loc: int, field: tuple[int, ...] = ()):
        """Store ``value`` at the element ``indices`` of ``array`` (into its field ``field``,
        a path of field indices, for a store into a struct element's field)."""
        off, m = self.offset(array, indices, sites, m, loc)
        if m is False:
            return False
        data, info, width = array.data, array.info, array.width
        if field:  # a view of the field in every element
            data, info = structs.field_view(data, info, field)
            width = info.n if info.kind == "vector" else 0
        if info.kind == "struct":
            v = structs.to_record(value, info)
            vec = isinstance(v, np.ndarray) and v.ndim == 1
        elif width:  # a vector: its components side by side, one row per lane
            lanes = [c for c in value if isinstance(c, np.ndarray) and c.ndim == 1]
            if array.is_bf16:  # vec2bf: its lanes' bits
                value = tuple(ops.bf16_to_bits(c) for c in value)
            v = np.stack(np.broadcast_arrays(*value), axis=-1) if lanes else np.array(
                value, dtype=data.dtype)
            vec = v.ndim == 2
        else:
            v = ops.bf16_to_bits(value) if array.is_bf16 else value
            vec = isinstance(v, np.ndarray) and v.ndim == 1
        if array.space == "local" and not np.ndim(off):
            # Splitting the first axis of a view is a view again: the stores reach `data`.
            col = data.reshape(-1, array.size, width) if width else data.reshape(-1, array.size)
            if m is None:
                col[:, int(off)] = v
            else:
                col[m, int(off)] = v[m] if vec else v
            return m
        base = array.base(self)
        if base is not None:
            off = base + off
        if array.shadow is not None:
            self.race(array, off, m, loc, "write")
        if not np.ndim(off):
            # Every executing lane writes one element: the last one (in lane order) wins.
            if vec:
                v = v[-1] if m is None else v[m][-1]
            data[int(off)] = v
        elif m is None:
            data[off] = v
        else:
            data[off[m]] = v[m] if vec else v
        return m

    def atomic(self, op: str, array, off, operands, m, loc: int):
        """An atomic read-modify-write at flat offsets ``off`` (from :meth:`offset`)."""
        if m is False:
            return array.vzero
        base = array.base(self)
        if base is not None:
            off = base + off
        if array.shadow is not None:
            self.race(array, off, m, loc, "atomic-read" if op == "load" else "atomic")
        if array.width:  # an array of vectors: one atomic per component
            return atomics.apply_components(self, op, array, off, operands, m)
        return atomics.apply(self, op, array, off, operands, m)

    def matrix(self, op: str, operands, params, m, loc: int):
        """A warp matrix statement or asynchronous copy (:mod:`.matrices`)."""
        return matrices.OPS[op](self, operands, params, m, loc)

    # ---- races ----

    def race(self, array, off, m, loc: int, kind: str) -> None:
        shadow = array.shadow
        lanes = None
        if m is None:
            e = self.full(off)
            t = self._info("gtid")
            blk = self._info("blk")
        else:
            lanes = np.flatnonzero(m)
            e = self.full(off)[lanes]
            t = self._info("gtid")[lanes]
            blk = self._info("blk")[lanes]
        if self.tma is not None and self.tma.open:  # a tensor copy in flight, or not waited for
            self.tma.check(self, array, e, lanes, loc,
                           "reads" if kind in ("read", "atomic-read") else "writes")
        ep = None if shadow.row is not None else self.epoch[blk]
        if kind == "read":
            found = shadow.read(e, t, self.sync_version, ep, loc)
        elif kind == "atomic-read":
            found = shadow.read(e, t, self.sync_version, ep, loc, atomic=True)
        else:
            found = shadow.write(e, t, self.sync_version, ep, loc, atomic=(kind == "atomic"))
        if found is not None:
            self.launch.report_race(array, found, self._divergence(m, found.thread))

    def _divergence(self, m, gtid: int) -> tuple[int, int] | None:
        """For an access under mask ``m`` by global thread ``gtid``: ``None`` when every live
        thread of its block runs it, else (divergent code, where ``sync_threads()`` cannot be
        called) the lanes of its warp that run it and the live lanes of that warp, as bit masks.
        Inside a conditional expression the statement's mask counts: only a branch diverges,
        and a sync_threads() before the statement is reached by every thread."""
        if self.outer:
            m = self.outer[0]
        if m is None:
            return None
        lane = int(np.argmax(self._info("gtid") == gtid))
        blk = self._info("blk")
        alive = np.ones(self.L, bool) if self.gone is None else ~self.gone
        if not (alive & ~m & (blk == blk[lane])).any():
            return None
        warp = self._info("wslot") == self._info("wslot")[lane]
        bits = np.left_shift(np.int64(1), self._info("laneid").astype(I64))
        return (int(np.bitwise_or.reduce(bits[warp & m], initial=0)),
                int(np.bitwise_or.reduce(bits[warp & alive], initial=0)))

    def barrier(self, m, loc: int, what: str = "sync_threads()") -> None:
        """``sync_threads()`` (or the barrier ``what``): every live thread of a block that runs
        it must be here."""
        if m is False:
            return
        self.sync_version += 1
        if m is None:
            self.epoch += 1
            self._forget_shared(None)
            if self.tma is not None:
                self.tma.barrier(None)
            return
        blk = self._info("blk")
        here = np.bincount(blk[m], minlength=self.B)
        alive_mask = ~self.gone if self.gone is not None else np.ones(self.L, bool)
        alive = np.bincount(blk[alive_mask], minlength=self.B)
        diverged = (here > 0) & (here < alive)
        if diverged.any():
            b = int(np.argmax(diverged))
            in_b = blk == b
            a_lane = int(np.argmax(in_b & m))
            o_lane = int(np.argmax(in_b & alive_mask & ~m))
            block, thread = self.coords(a_lane)
            _, other = self.coords(o_lane)
            self.launch.report(
                ("barrier", loc),
                f"{what} at {self.launch.program.location(loc)} in block {block} was "
                f"reached by thread {thread} but not by thread {other}, which has not exited: "
                "a barrier in divergent code (on the GPU the block hangs or the barrier does "
                f"not synchronise); make every thread of the block reach the same {what}")
        self.epoch[here > 0] += 1
        self._forget_shared(here > 0)
        if self.tma is not None:
            self.tma.barrier(here > 0)

    def spin_state(self, m, values: tuple) -> tuple:
        """A copy of a watched loop's state at the top of a round: its mask and variables (see
        ``codegen._spin_state``)."""
        return (None if m is None else m if m is False else m.copy(),
                tuple(np.array(v, copy=True) for v in values))

    def spin_check(self, before: tuple, m, values: tuple, loc: int):
        """The mask of a watched loop's next round: ``m``, unless the round left the mask and
        every variable as ``before`` had them, so that it would repeat forever (the loop writes
        no memory, and no other thread runs meanwhile); then report it, stop those lanes and
        return False."""
        mask, old = before
        if not _same_mask(mask, m) or not all(_same_value(a, b) for a, b in zip(old, values)):
            return m
        lanes = self.active(m)
        lane = int(lanes[0])
        block, thread = self.coords(lane)
        where = self.launch.program.location(loc)
        self.launch.report(("spin", loc), (
            f"thread {thread} of block {block} waits in the loop at {where}, which writes no "
            "memory, and a round of it changed nothing: in the simulator no other thread runs "
            "while it waits (it runs the threads in lockstep, a chunk of blocks at a time), so "
            "it would wait forever. On the GPU another thread may end the wait (a "
            "flag another block sets, a lock it releases), or it hangs there too. The simulator "
            "cannot run waits on other threads: run this kernel on the GPU, or publish the value "
            "from an earlier launch"))
        bad = np.zeros(self.L, bool)
        bad[lanes] = True
        self._kill(bad)
        return False

    def barrier_vote(self, op: str, what: str, m, pred, loc: int):
        """``sync_threads_count/and/or(pred)``: the barrier, then the count of the block's
        threads here whose predicate is true (``"count"``), or whether all (``"and"``) or any
        (``"or"``) of them are."""
        if m is False:
            return np.int32(0) if op == "count" else np.bool_(False)
        self.barrier(m, loc, what)
        lanes = self.active(m)
        blk = self._info("blk")[lanes]
        p = self.full(pred)[lanes].astype(bool)
        true = np.bincount(blk, weights=p, minlength=self.B)[blk]
        if op == "count":
            got = true.astype(np.int32)
        elif op == "and":
            got = true == np.bincount(blk, minlength=self.B)[blk]
        else:
            got = true > 0
        if m is None:
            return got
        out = np.zeros(self.L, got.dtype)
        out[lanes] = got
        return out

    def grid_barrier(self, m, loc: int) -> None:
        """``grid_sync()``: every thread of the grid must be here.  A cooperative launch runs as
        one chunk (see :meth:`SimProgram.run`), so the grid is this chunk's lanes; the barrier
        orders every access before it against every access after it, in every block."""
        if m is False:
            return
        launch = self.launch
        alive = np.ones(self.L, bool) if self.gone is None else ~self.gone
        total = self.B * self.T
        where = f"grid_sync() at {launch.program.location(loc)}"
        if int(alive.sum()) < total:
            # Compaction drops the lanes that left: find a thread of the grid missing here.
            present = np.zeros(total, bool)
            present[self._info("gtid")[alive] - self.first_block * self.T] = True
            block, thread = launch.thread_coords(int(np.argmin(present)) + self.first_block * self.T)
            launch.report(("grid barrier", loc), (
                f"{where}: thread {thread} of block {block} returned (or stopped at a failed "
                "check) before reaching it; on the GPU the other threads wait for it forever "
                "(a block whose threads left never arrives); make every thread of the grid "
                "reach every grid_sync()"))
        elif m is not None:
            lane = int(np.argmax(m))
            other = int(np.argmax(alive & ~m))
            (b1, t1), (b2, t2) = self.coords(lane), self.coords(other)
            launch.report(("grid barrier", loc), (
                f"{where} was reached by thread {t1} of block {b1} but not by thread {t2} of "
                f"block {b2}, which has not exited: a grid barrier in divergent code (on the GPU "
                "the grid hangs or the barrier does not synchronise); make every thread of the "
                "grid reach the same grid_sync()"))
        self.sync_version += 1
        self.epoch += 1
        self._forget_shared(None)
        if self.tma is not None:
            self.tma.barrier(None)
        for shadow in launch.global_shadows:
            shadow.forget(None)

    def _forget_shared(self, blocks) -> None:
        for sa in self.shared:
            if sa.shadow is not None:
                sa.shadow.forget(blocks)

    def sync_warp(self, m, mask, loc: int) -> None:
        """``sync_warp(mask)``: the live lanes named in ``mask`` must all be here."""
        if m is False:
            return
        warp.check_members(self, "sync_warp()", m, mask, loc)
        self.sync_version += 1

    # ---- warp intrinsics ----

    def shfl(self, op: str, m, value, lane, width, mask, loc: int):
        return warp.shuffle(self, op, m, value, lane, width, mask, loc)

    def vote(self, op: str, m, pred, mask, loc: int):
        return warp.vote(self, op, m, pred, mask, loc)

    def match(self, op: str, m, value, mask, loc: int):
        return warp.match(self, op, m, value, mask, loc)

    def activemask(self, op: str, m, mask, loc: int):
        return warp.activemask(self, m)

    # ---- print ----

    def print(self, m, kinds: str, *items) -> None:
        """Device ``print``: one line per executing thread, in thread order."""
        if m is False:
            return
        lanes = self.active(m)
        cols: list[Any] = []  # per item: its string (kind "s") or its value in every lane
        for kind, item in zip(kinds, items):
            cols.append(item if kind == "s" else self.full(item))
        out = []
        for lane in lanes:
            parts: list[str] = []
            for kind, col in zip(kinds, cols):
                if kind == "s":
                    parts.append(col)
                elif kind == "b":
                    parts.append("True" if col[lane] else "False")
                elif kind == "f":
                    parts.append(f"{float(col[lane]):g}")
                else:
                    parts.append(str(int(col[lane])))
            out.append(" ".join(parts) + "\n")
        sys.stdout.write("".join(out))


__all__ = ["Chunk", "Conflict", "m_and", "m_andnot", "m_or", "where"]


def _same_mask(a, b) -> bool:
    if a is None or b is None or a is False or b is False:
        return a is b
    return bool(np.array_equal(a, b))


def _same_value(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        a, b = np.broadcast_arrays(a, b)
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))
