"""Devices and the current device of each thread."""

from __future__ import annotations

import threading

from ..errors import GpuNativeError
from . import backend as B

_tls = threading.local()


def current_device() -> int:
    """The calling thread's current device ordinal (0 unless changed with ``Device``)."""
    try:
        return _tls.device
    except AttributeError:
        return bind_thread()


def bind_thread(ordinal: int = 0) -> int:
    """Make ``ordinal`` current on the calling thread (its CUDA context becomes current)."""
    backend = B.select()
    count = backend.device_count()
    if not 0 <= ordinal < count:
        raise GpuNativeError(f"device {ordinal} does not exist ({count} device"
                             f"{'s' if count != 1 else ''} present)")
    backend.set_thread_device(ordinal)
    if getattr(_tls, "device", ordinal) != ordinal:
        # Launch configurations are per device: this thread's cached launchers no longer apply.
        cache = getattr(_tls, "launchers", None)
        if cache is not None:
            cache.clear()
    _tls.device = ordinal
    return ordinal


class Device:
    """A GPU (or the simulator's one virtual device).

    ``with gn.Device(1): ...`` makes device 1 current on this thread for the block; arrays, streams
    and launches use the current device.
    """

    def __init__(self, ordinal: int = 0):
        self.ordinal = int(ordinal)
        backend = B.select()
        count = backend.device_count()
        if not 0 <= self.ordinal < count:
            raise GpuNativeError(f"device {self.ordinal} does not exist ({count} device"
                                 f"{'s' if count != 1 else ''} present)")
        self._previous: list[int] = []

    @property
    def _props(self) -> dict:
        return B.select().properties(self.ordinal)

    @property
    def name(self) -> str:
        """The device's marketing name, e.g. ``NVIDIA H200``."""
        return self._props["name"]

    @property
    def arch(self) -> str:
        """The exact architecture kernels are compiled for, e.g. ``sm_90``."""
        return self._props["arch"]

    @property
    def compute_capability(self) -> tuple[int, int]:
        p = self._props
        return p["major"], p["minor"]

    @property
    def total_memory(self) -> int:
        """Device memory in bytes."""
        return self._props["total_memory"]

    @property
    def multiprocessor_count(self) -> int:
        return self._props["multiprocessors"]

    def set_current(self) -> None:
        """Make this device current on the calling thread."""
        bind_thread(self.ordinal)

    def synchronize(self) -> None:
        """Wait for all work on this device and raise any error a kernel reported."""
        from .records import raise_pending

        previous = current_device()
        bind_thread(self.ordinal)
        try:
            B.select().device_sync()
            raise_pending(None)
        finally:
            bind_thread(previous)

    def __enter__(self) -> Device:
        self._previous.append(current_device())
        bind_thread(self.ordinal)
        return self

    def __exit__(self, *exc) -> None:
        bind_thread(self._previous.pop())

    def __repr__(self) -> str:
        try:
            return f"<gpu_native.Device {self.ordinal}: {self.name} ({self.arch})>"
        except Exception:  # pragma: no cover
            return f"<gpu_native.Device {self.ordinal}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self) -> int:
        return hash(("gpu_native.Device", self.ordinal))
