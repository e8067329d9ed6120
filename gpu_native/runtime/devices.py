"""Devices and the current device of each thread.

Every thread has a current device.  Arrays are allocated on it, streams are created on it, and
kernels launch on it; ``with gn.Device(1): ...`` or ``gn.Device(1).set_current()`` changes it for
the calling thread only.  A thread's first current device is the one whose CUDA context is
already current on it (after ``torch.cuda.set_device(k)``, say), else device 0.

Launch configurations are cached per thread *and* per device: switching devices swaps in the
other device's cache instead of dropping it, so a loop over the GPUs of a node does not
reconfigure its launches at every switch.
"""

from __future__ import annotations

import contextlib
import operator
import threading

from ..errors import GpuNativeError
from ..tracebacks import boundary
from . import backend as B

_tls = threading.local()
_counts: dict[object, int] = {}  # backend -> its device count (fixed for the process's life)


def current_device() -> int:
    """The calling thread's current device ordinal (see the module docstring)."""
    try:
        return _tls.device
    except AttributeError:
        return bind_thread()


def device_count() -> int:
    """How many devices kernels can run on (1 for the simulator)."""
    return _count(B.select())


def _count(backend) -> int:
    count = _counts.get(backend)
    if count is None:
        count = _counts[backend] = backend.device_count()
    return count


def _check_ordinal(backend, ordinal: int) -> None:
    count = _count(backend)
    if not 0 <= ordinal < count:
        raise GpuNativeError(f"device {ordinal} does not exist ({count} device"
                             f"{'s' if count != 1 else ''} present: 0..{count - 1}); "
                             "CUDA_VISIBLE_DEVICES decides which GPUs this process sees")


def _initial_device(backend) -> int:
    """The device whose context is current on this thread (torch.cuda.set_device, CuPy's
    Device.use...), so gpu_native starts where the other libraries of the thread are."""
    if backend.name != "cuda":
        return 0
    from . import driver as D

    drv = D.driver()
    result = drv.cuCtxGetDevice()
    if result[0] != drv.CUresult.CUDA_SUCCESS:
        return 0  # no context is current on this thread yet
    ordinal = int(result[1])
    return ordinal if 0 <= ordinal < _count(backend) else 0


def bind_thread(ordinal: int | None = None) -> int:
    """Make ``ordinal`` current on the calling thread (its CUDA primary context becomes current).

    With no ordinal, bind the thread's first device (see the module docstring).
    """
    backend = B.select()
    if ordinal is None:
        ordinal = _initial_device(backend)
    _check_ordinal(backend, ordinal)
    backend.set_thread_device(ordinal)
    previous = getattr(_tls, "device", None)
    if previous != ordinal:
        _swap_launchers(previous, ordinal)
    _tls.device = ordinal
    return ordinal


def _swap_launchers(previous: int | None, ordinal: int) -> None:
    # A launcher is bound to one device's loaded function, stream and error record: put this
    # device's launchers away and bring back those of the next (``Kernel.launch`` reads
    # ``_tls.launchers``; ``kernel._thread_cache`` creates and registers a missing one).
    state = _tls.__dict__
    parked = state.setdefault("parked_launchers", {})
    cache = state.pop("launchers", None)
    if cache is not None and previous is not None:
        parked[previous] = cache
    cache = parked.pop(ordinal, None)
    if cache is not None:
        state["launchers"] = cache


@contextlib.contextmanager
def on_device(ordinal: int):
    """Make ``ordinal`` current on this thread for the block (no-op if it already is)."""
    previous = current_device()
    if previous == ordinal:
        yield
        return
    bind_thread(ordinal)
    try:
        yield
    finally:
        bind_thread(previous)


def _ordinal_of(device) -> int:
    if isinstance(device, Device):
        return device.ordinal
    if isinstance(device, bool):
        raise TypeError("a device is a gn.Device or an int ordinal, not a bool")
    try:
        return operator.index(device)
    except TypeError:
        raise TypeError(f"a device is a gn.Device or an int ordinal, not "
                        f"{type(device).__name__}") from None


class Device:
    """A GPU (or one of the simulator's virtual devices).

    ``with gn.Device(1): ...`` makes device 1 current on the calling thread for the block (blocks
    nest, and other threads are not affected); ``gn.Device(1).set_current()`` makes it current
    until changed.  Arrays, streams and launches use the current device.

    Parameters
    ----------
    ordinal
        The device's index among the devices this process sees (``CUDA_VISIBLE_DEVICES``
        decides which those are), or another ``Device``.
    """

    __slots__ = ("ordinal",)

    def __init__(self, ordinal: int | Device = 0):
        self.ordinal = _ordinal_of(ordinal)
        _check_ordinal(B.select(), self.ordinal)

    @classmethod
    def count(cls) -> int:
        """How many devices this process sees (1 for the simulator)."""
        return device_count()

    @classmethod
    def current(cls) -> Device:
        """The calling thread's current device."""
        return cls(current_device())

    @property
    def _props(self) -> dict:
        return B.select().properties(self.ordinal)

    @property
    def name(self) -> str:
        """The device's marketing name, e.g. ``NVIDIA H200``."""
        return self._props["name"]

    @property
    def arch(self) -> str:
        """The exact architecture kernels are compiled for, e.g. ``sm_90``.  Devices of one arch
        share one compiled artifact per kernel: a kernel compiles once and is loaded into each
        device's context the first time it launches there."""
        return self._props["arch"]

    @property
    def compute_capability(self) -> tuple[int, int]:
        """``(major, minor)``, e.g. ``(9, 0)``."""
        p = self._props
        return p["major"], p["minor"]

    @property
    def total_memory(self) -> int:
        """Device memory in bytes."""
        return self._props["total_memory"]

    @property
    def multiprocessor_count(self) -> int:
        """The number of streaming multiprocessors."""
        return self._props["multiprocessors"]

    def can_access_peer(self, other: Device | int) -> bool:
        """True when this device can read and write ``other``'s memory directly (NVLink or PCIe
        peer to peer).  ``gn.copy`` between two such devices copies directly; otherwise it
        stages through host memory."""
        from .peer import can_access_peer

        return can_access_peer(self.ordinal, _ordinal_of(other))

    def set_current(self) -> None:
        """Make this device current on the calling thread."""
        bind_thread(self.ordinal)

    @boundary
    def synchronize(self) -> None:
        """Wait for all work on this device and raise any error a kernel reported."""
        from .records import raise_pending

        with on_device(self.ordinal):
            B.select().device_sync()
            raise_pending(None)

    def __enter__(self) -> Device:
        # The stack is per thread: one Device object may be entered by several threads at once.
        previous = current_device()
        bind_thread(self.ordinal)
        _tls.__dict__.setdefault("entered", []).append(previous)
        return self

    def __exit__(self, *exc) -> None:
        bind_thread(_tls.entered.pop())

    def __repr__(self) -> str:
        try:
            return f"<gpu_native.Device {self.ordinal}: {self.name} ({self.arch})>"
        except Exception:  # pragma: no cover
            return f"<gpu_native.Device {self.ordinal}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self) -> int:
        return hash(("gpu_native.Device", self.ordinal))

    def __reduce__(self):
        # A device is an ordinal: it means "the k-th GPU this process sees" in the receiver too.
        return (Device, (self.ordinal,))
