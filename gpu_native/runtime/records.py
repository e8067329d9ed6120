"""Device error records: how a failed bounds check or ``assert`` reaches the host.

Each stream owns a 64-byte record in host-mapped memory (layout in :mod:`gpu_native.abi`); a
failing thread claims it with an atomic compare-and-swap, fills it and exits.  At the stream's next
synchronisation point the host reads the record and raises ``KernelIndexError`` (an
``IndexError``), ``KernelAssertionError`` or ``KernelZeroDivisionError`` with the kernel's name, the
Python file and line (a device function's own file when the check is in one), the array, index and
length, and the block and thread of the failing thread.  No trap is involved, so the CUDA context
stays usable.
"""

from __future__ import annotations

import atexit
import linecache
import sys
import threading

import numpy as np

from .. import abi
from ..errors import (
    DeviceRaceError,
    KernelAssertionError,
    KernelError,
    KernelIndexError,
    KernelZeroDivisionError,
    SourceSpan,
    format_caret,
)
from ..spec import Site

RECORD_DTYPE = np.dtype([
    ("state", "<u4"), ("site", "<u4"), ("kernel", "<u8"), ("index", "<i8"), ("length", "<i8"),
    ("block", "<u4", (3,)), ("thread", "<u4", (3,)), ("count", "<u4"), ("reserved", "<u4"),
])
assert RECORD_DTYPE.itemsize == abi.ERROR_RECORD_SIZE

SLOTS_PER_BLOCK = 256

_lock = threading.Lock()
# kernel id -> (name, (its file, *the files of other modules), sites)
_kernels: dict[int, tuple[str, tuple[str, ...], tuple[Site, ...]]] = {}
# By backend object, not name: the memory belongs to that instance (a test's stand-in "cuda"
# backend is not the real one).
_pools: dict[tuple[object, int], _Pool] = {}
_races: dict[int, list[str]] = {}  # record device address -> race messages (simulator only)


def register_kernel(kernel_id: int, name: str, file: str, sites: tuple[Site, ...],
                    files: tuple[str, ...] = ()) -> None:
    """Remember a kernel's site table so its device errors can be explained: ``file`` is the
    kernel's, ``files`` those of other modules whose device functions hold some of its sites
    (:attr:`~gpu_native.spec.KernelSpec.files`; a site's ``file`` indexes ``(file, *files)``)."""
    _kernels[kernel_id] = (name, (file, *files), sites)


class _Pool:
    """Mapped host memory for the records of one device, handed out one slot per stream."""

    def __init__(self, backend, ordinal: int):
        self.view, self.device_ptr = backend.alloc_mapped(
            SLOTS_PER_BLOCK * abi.ERROR_RECORD_SIZE, ordinal)
        self.records = self.view.view(RECORD_DTYPE)
        self.free = list(range(SLOTS_PER_BLOCK - 1, -1, -1))
        self.used: set[int] = set()
        # slot -> the thread whose stream it records (None: a default stream, every thread's)
        self.owners: dict[int, int | None] = {}


class Slot:
    """One stream's error record: its device address and where the host reads it."""

    __slots__ = ("device_ptr", "index", "key", "pool")

    def __init__(self, pool: _Pool, index: int, key: int):
        self.pool = pool
        self.index = index
        self.device_ptr = pool.device_ptr + index * abi.ERROR_RECORD_SIZE
        self.key = key

    def release(self) -> None:
        with _lock:
            if self.index in self.pool.used:
                self.pool.used.discard(self.index)
                self.pool.free.append(self.index)


def new_slot(backend, ordinal: int, owner: int | None = None) -> Slot:
    """A record for one stream on device ``ordinal``: ``owner`` is the ident of the thread
    that first launched on the stream (its errors surface at that thread's device-wide
    synchronisation, or at the stream's own), None for a default stream, which every thread
    shares."""
    with _lock:
        pool = _pools.get((backend, ordinal))
        if pool is None or not pool.free:
            pool = _Pool(backend, ordinal)
            _pools[(backend, ordinal)] = pool
            if not _all_pools:
                atexit.register(_report_lost)
            _all_pools.append(pool)
        index = pool.free.pop()
        pool.used.add(index)
        pool.owners[index] = owner
        pool.records[index] = 0
        return Slot(pool, index, id(pool) * SLOTS_PER_BLOCK + index)


_all_pools: list[_Pool] = []


def note_race(record_ptr: int, message: str) -> None:
    """The simulator saw a race; it is raised at the stream's next synchronisation point."""
    _races.setdefault(record_ptr, []).append(message)


def raise_pending(slot: Slot | None) -> None:
    """Raise the first error recorded for ``slot``, clearing it.  With None (a device-wide
    synchronisation), for the default streams and the streams this thread first launched on:
    another thread's stream keeps its error for that thread, or for the stream's own
    synchronize()."""
    if slot is not None:
        candidates = [(slot.pool, slot.index)]
    else:
        me = threading.get_ident()
        candidates = [(pool, i) for pool in list(_all_pools) for i in sorted(pool.used)
                      if pool.owners.get(i) in (None, me)]
    for pool, index in candidates:
        races = _races.pop(pool.device_ptr + index * abi.ERROR_RECORD_SIZE, None)
        rec = pool.records[index]
        if rec["state"] == abi.ERROR_STATE_COMPLETE:
            values = rec.copy()
            pool.records[index] = 0
            raise _build(values)
        if races:
            raise DeviceRaceError(races[0] + (f" (and {len(races) - 1} more race reports)"
                                              if len(races) > 1 else ""))


def _report_lost() -> None:
    """At exit: tell of the errors recorded after the program's last synchronisation, which
    no call raised (a script that launches and ends).  Records are only read, never waited
    for: a kernel still running at exit is not waited on."""
    lost: list[str] = []
    for pool in list(_all_pools):
        for index in sorted(pool.used):
            rec = pool.records[index]
            if rec["state"] == abi.ERROR_STATE_COMPLETE:
                error = _build(rec.copy())
                lost.append(f"{type(error).__name__}: {error}")
            lost += [f"DeviceRaceError: {message}" for message in
                     _races.get(pool.device_ptr + index * abi.ERROR_RECORD_SIZE, ())]
    if lost:
        more = f"\n(and {len(lost) - 1} more)" if len(lost) > 1 else ""
        sys.stderr.write("gpu_native: a kernel failed after the program's last "
                         "synchronisation, and no call raised its error before the program "
                         f"ended:\n{lost[0]}{more}\n")


def launch_assertion(kernel_id: int, site: int, threads: int,
                     depends: str = "the grid and block") -> KernelError:
    """The error of an assert the launcher checked for every thread at once (it depends only on
    ``depends``, the launch shape unless said otherwise): the same exception the device would
    have raised."""
    return _build({"kernel": kernel_id, "site": site, "block": (0, 0, 0), "thread": (0, 0, 0),
                   "count": threads, "index": 0, "length": 0},
                  where=f"  (checked at launch: it depends only on {depends}, so every "
                        "thread would fail it)")


def _build(rec, where: str | None = None) -> KernelError:
    kernel_id = int(rec["kernel"])
    name, files, sites = _kernels.get(kernel_id, ("<unknown kernel>", ("<unknown>",), ()))
    site_id = int(rec["site"])
    block = tuple(int(v) for v in rec["block"])
    thread = tuple(int(v) for v in rec["thread"])
    count = int(rec["count"])
    if site_id < len(sites):
        site = sites[site_id]
        kind, line, array, axis, ndim, message = (site.kind, site.line, site.array, site.axis,
                                                  site.ndim, site.message)
        # The file of the code that failed: a device function's own, not the kernel's.
        file = files[site.file] if site.file < len(files) else files[0]
        text = linecache.getline(file, line) if line else ""
        span = SourceSpan(file, line, site.col, site.end_col, text)
    else:  # pragma: no cover - a record from a kernel this process does not know
        kind, array, axis, ndim, message, span = "index", "?", 0, 1, "", None
    index, length = int(rec["index"]), int(rec["length"])
    if kind == "index":
        if ndim == 1:
            head = f"index {index} is out of bounds for array '{array}' of length {length}"
        else:
            head = (f"index {index} is out of bounds for axis {axis} of array '{array}' with "
                    f"size {length}")
        cls: type[KernelError] = KernelIndexError
    elif kind == "vector":
        head = (f"load_vec4 of elements {index} to {index + 3} is out of bounds for axis {axis} "
                f"of array '{array}' with size {length}")
        cls = KernelIndexError
    elif kind == "align":
        head = (f"load_vec4 of array '{array}' at an address {index} bytes past a 16-byte "
                "boundary: a vector load must be aligned (the array's start, its row length "
                "and the last index must be multiples of 4 elements)")
        cls = KernelIndexError
    elif kind == "zerodiv":
        head = message or "integer division by zero"
        cls = KernelZeroDivisionError
    else:
        head = f"assertion failed: {message}" if message else "assertion failed"
        cls = KernelAssertionError
    lines = [f"{name}: {head}"]
    if span is not None:
        lines.append(f'  File "{span.file}", line {span.line}, in {name}')
        caret = format_caret(span)
        if caret:
            lines.append(caret)
    others = f"; {count} threads failed" if count > 1 else ""
    lines.append(where or f"  (first failing thread: block {block}, thread {thread}{others})")
    exc = cls("\n".join(lines))
    exc._set_origin(name, span, block, thread)
    exc.index = index if kind in ("index", "vector") else None
    exc.length = length if kind in ("index", "vector") else None
    exc.array = array if kind in ("index", "vector", "align") else None
    exc.count = count
    return exc
