"""Streams and events.

``DEFAULT_STREAM`` is each device's legacy default stream.  ``gn.Stream()`` creates a stream on the
current device.  A foreign stream (CuPy, PyTorch, cuda.core: anything with ``__cuda_stream__``)
can be passed wherever a stream is expected.  A stream's ``synchronize()`` is a synchronisation
point: errors its kernels reported on the device are raised there.
"""

from __future__ import annotations

import threading
import weakref
from typing import SupportsInt

import numpy as np

from ..errors import GpuNativeError
from ..tracebacks import boundary
from . import backend as B
from . import driver as D
from .devices import current_device
from .records import Slot, new_slot, raise_pending


class Stream:
    """A CUDA stream (a queue of GPU work that runs in order)."""

    __slots__ = ("__weakref__", "_device", "_handle", "_nonblocking", "_owned", "_slot",
                 "_slots", "name")

    def __init__(self, *, _handle: SupportsInt | None = None, _device: int | None = None,
                 _nonblocking: bool = False, name: str = ""):
        backend = B.select()
        self._device = current_device() if _device is None else _device
        self._owned = _handle is None
        self._handle = backend.stream_create(self._device) if _handle is None else _handle
        self._nonblocking = _nonblocking
        self._slot: Slot | None = None
        self._slots: dict[int, Slot] = {}
        self.name = name
        if _nonblocking and hasattr(backend, "note_stream"):
            backend.note_stream(self._handle, True, self._device)

    # ---- what launches use -------------------------------------------------------------------

    def _resolve(self, device: int) -> tuple[object, Slot]:
        """The backend handle and error record of this stream on ``device``."""
        if device != self._device:
            raise GpuNativeError(
                f"this stream belongs to device {self._device}, but the current device is "
                f"{device}; launch on a stream of the current device")
        slot = self._slot
        if slot is None:
            slot = self._slot = new_slot(B.select(), self._device, threading.get_ident())
        return self._handle, slot

    @property
    def device(self) -> int:
        return self._device

    @property
    def handle(self) -> int:
        """The raw ``CUstream`` value (0 for the legacy default stream)."""
        return B.select().stream_value(self._handle)

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol: ``(version, handle)``."""
        return (0, self.handle)

    @boundary
    def synchronize(self) -> None:
        """Wait until the stream's work is done, then raise any error its kernels reported."""
        handle, slot = self._resolve(self._device)
        B.select().stream_sync(handle)
        raise_pending(slot)

    def record(self, event: Event | None = None) -> Event:
        """Record an event on this stream (a new one unless given) and return it."""
        event = _event(event, "record's event") if event is not None else Event()
        event.record(self)
        return event

    def wait(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        handle, _ = self._resolve(self._device)
        B.select().stream_wait_event(handle, _event(event, "wait's event")._handle)

    def __del__(self) -> None:
        try:
            if self._slot is not None:
                self._slot.release()
            if self._owned:
                B.select().stream_destroy(self._handle)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"<gpu_native.Stream {self.name or hex(self.handle)} on device {self._device}>"

    def __reduce__(self):
        raise TypeError("a gpu_native Stream cannot be pickled: it is a queue on one GPU of one "
                        "process; create a gn.Stream() in the receiving process (DEFAULT_STREAM "
                        "pickles as itself)")


class _DefaultStream(Stream):
    """The legacy default stream of whichever device is current."""

    __slots__ = ()

    def __init__(self) -> None:  # no backend work at import time
        self._device = -1
        self._owned = False
        self._handle = 0  # the legacy default stream's value; _resolve gives each device's own
        self._nonblocking = False
        self._slot = None
        self._slots = {}
        self.name = "DEFAULT_STREAM"

    def _resolve(self, device: int) -> tuple[object, Slot]:
        slot = self._slots.get(device)
        if slot is None:
            backend = B.select()
            slot = self._slots[device] = new_slot(backend, device)
        return B.select().default_stream(device), slot

    @property
    def device(self) -> int:
        return current_device()

    @property
    def handle(self) -> int:
        return 0

    @boundary
    def synchronize(self) -> None:
        device = current_device()
        handle, slot = self._resolve(device)
        B.select().stream_sync(handle)
        raise_pending(slot)

    def wait(self, event: Event) -> None:
        handle, _ = self._resolve(current_device())
        B.select().stream_wait_event(handle, _event(event, "wait's event")._handle)

    def __repr__(self) -> str:
        return "gpu_native.DEFAULT_STREAM"

    def __reduce__(self):
        return "DEFAULT_STREAM"


DEFAULT_STREAM = _DefaultStream()

_foreign: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_foreign_lock = threading.Lock()


def as_stream(obj) -> Stream:
    """Accept a gpu_native stream, or adopt a foreign one through ``__cuda_stream__``."""
    if isinstance(obj, Stream):
        return obj
    protocol = getattr(obj, "__cuda_stream__", None)
    if protocol is None:
        # PyTorch and CuPy streams expose their handle under these names in older releases.
        value = getattr(obj, "cuda_stream", None)
        if value is None:
            value = getattr(obj, "ptr", None)
        if value is None:
            raise TypeError(f"expected a stream (gpu_native.Stream, DEFAULT_STREAM, or an object "
                            f"with __cuda_stream__), got {type(obj).__name__}")
    else:
        value = protocol() if callable(protocol) else protocol
        if not (isinstance(value, tuple) and len(value) == 2 and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                for v in value)):
            raise TypeError(f"{type(obj).__name__}.__cuda_stream__ must return a (version, "
                            f"handle) pair of ints, but it returned {type(value).__name__} "
                            f"{value!r:.60}")
        value = value[1]
    value = int(value)
    if value == 0:
        return DEFAULT_STREAM
    with _foreign_lock:
        key = (id(obj), value)
        stream = _foreign.get(key)
        if stream is None:
            backend = B.select()
            if backend.name != "cuda":
                raise TypeError("foreign CUDA streams cannot be used with the simulator backend")
            drv = D.driver()
            handle = drv.CUstream(value)
            flags = drv.cuStreamGetFlags(handle)
            nonblocking = bool(int(flags[1]) & 1) if int(flags[0]) == 0 else True
            stream = Stream(_handle=handle, _nonblocking=nonblocking, name=f"foreign {value:#x}")
            _foreign[key] = stream
        return stream


def _event(value, what: str) -> Event:
    """``value``, or a TypeError naming ``what`` when it is not an Event."""
    if not isinstance(value, Event):
        raise TypeError(f"{what} must be a gpu_native Event, not {type(value).__name__} "
                        f"{value!r:.40}")
    return value


class Event:
    """A CUDA event: a point in a stream to wait for or to time against."""

    __slots__ = ("__weakref__", "_handle", "_recorded")

    def __init__(self) -> None:
        self._handle = B.select().event_create()
        self._recorded = False

    def record(self, stream: Stream = DEFAULT_STREAM) -> Event:
        handle, _ = as_stream(stream)._resolve(current_device())
        B.select().event_record(self._handle, handle)
        self._recorded = True
        return self

    @boundary
    def synchronize(self) -> None:
        """Wait for the event (no kernel errors are raised here; synchronise the stream for that)."""
        B.select().event_sync(self._handle)

    def query(self) -> bool:
        """True once all work before the event has finished."""
        return B.select().event_query(self._handle)

    @boundary
    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded and complete).

        Raises ``TypeError`` when ``end`` is not an Event, ``ValueError`` when either event
        was never recorded (the simulator answered with a meaningless number)."""
        _event(end, "elapsed_time's end")
        for which, event in (("this event", self), ("end", end)):
            if not event._recorded:
                raise ValueError(f"elapsed_time: {which} was never recorded; record both "
                                 "events on a stream first (event.record(stream))")
        return B.select().event_elapsed_ms(self._handle, end._handle)

    def __del__(self) -> None:
        try:
            B.select().event_destroy(self._handle)
        except Exception:  # pragma: no cover
            pass

    def __reduce__(self):
        raise TypeError("a gpu_native Event cannot be pickled: it marks a point in a stream of "
                        "one process; record a new gn.Event() in the receiving process")


@boundary
def synchronize() -> None:
    """Wait for all work on the current device; raise any error a kernel reported on it on a
    default stream or on a stream this thread launched on (another thread's stream keeps its
    error for that thread's synchronisation, or the stream's own ``synchronize()``)."""
    B.select().device_sync()
    raise_pending(None)
