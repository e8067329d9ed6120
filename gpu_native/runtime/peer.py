"""Copies between devices: :func:`copy` (``gn.copy(dst, src)``) and ``DeviceArray.to(device)``.

Three ways, picked per pair of devices:

* **Same device**: a device-to-device copy on the device's legacy default stream.
* **Peer to peer**, between two GPUs that can reach each other's memory (NVLink, or PCIe peer
  to peer; ``gn.Device(a).can_access_peer(b)``): ``cuMemcpyPeer``, GPU to GPU.  The first copy
  between a pair enables peer access in both directions, for the devices' primary contexts and
  for their stream-ordered memory pools (``gn.empty`` allocates from those, and pool memory is
  not covered by context peer access).
* **Staged through the host** otherwise: copied to a host buffer from the source device, then
  from it to the destination device, 64 MiB at a time.  Correct on every machine, at host-copy
  speed.

In every case the copy is ordered after the work already queued on both devices' legacy
default streams (and blocking streams), and work queued there afterwards sees its result.  The
simulator's devices share one address space, so they all count as peers of each other.
"""

from __future__ import annotations

import threading

import numpy as np

from ..tracebacks import boundary
from . import backend as B
from .arrays import DeviceArray, empty
from .devices import _check_ordinal, _ordinal_of, current_device, on_device

STAGING_CHUNK = 64 << 20

_enabled: dict[tuple[int, int], bool] = {}
_enabled_lock = threading.Lock()


def can_access_peer(device: int, peer: int) -> bool:
    """True when ``device`` can access ``peer``'s memory directly (never for itself)."""
    backend = B.select()
    _check_ordinal(backend, device)
    _check_ordinal(backend, peer)
    if device == peer:
        return False
    if backend.name != "cuda":
        return True
    from . import driver as D

    return bool(D.check(D.driver().cuDeviceCanAccessPeer(D.device_handle(device),
                                                         D.device_handle(peer)),
                        "cuDeviceCanAccessPeer"))


@boundary
def copy(dst, src) -> DeviceArray:
    """Copy the contents of device array ``src`` into device array ``dst``; return ``dst``.

    The two must have the same shape and element type and may live on different devices: the
    copy then goes peer to peer where the GPUs allow it, else through host memory (see this
    module's docstring).  Foreign CUDA arrays (PyTorch, CuPy: ``__cuda_array_interface__`` or
    DLPack) are accepted without a copy of their own.

    Raises
    ------
    TypeError
        An argument is not a device array (a NumPy array: use ``gn.to_device`` or
        ``DeviceArray.copy_from_host``), ``dst`` is read-only, or the element types differ.
    ValueError
        The shapes differ, ``dst`` and ``src`` overlap in memory in part (an array copied onto
        itself is left as it is), or ``dst`` is a non-contiguous view (a non-contiguous ``src``
        is gathered first).
    """
    dst = _device_array(dst, "dst")
    src = _device_array(src, "src")
    if dst._backend is not src._backend:
        raise TypeError(f"dst was created by the {dst._backend.name} backend and src by the "
                        f"{src._backend.name} backend; copy through the host")
    if not dst.is_writable:
        raise TypeError("dst is a read-only view; copy into a writable array")
    if dst._info.name != src._info.name:
        raise TypeError(f"dst holds {dst._info.name} and src holds {src._info.name}; convert "
                        "on the host or in a kernel")
    if dst.shape != src.shape:
        raise ValueError(f"dst has shape {dst.shape} but src has shape {src.shape}")
    dst._require_contiguous("copy into", writing=True)
    if not src.is_contiguous:  # gather it first (through host memory; see DeviceArray.copy)
        src = src.copy()
    nbytes = src.nbytes
    if nbytes == 0:
        return dst
    if dst.ptr < src.ptr + nbytes and src.ptr < dst.ptr + nbytes:
        if dst.ptr == src.ptr:
            return dst
        raise ValueError("dst and src overlap in device memory; copy through a temporary array")
    if dst.device == src.device:
        with on_device(dst.device):
            dst._backend.copy_dtod(dst.ptr, src.ptr, nbytes)
    elif _peer_ready(dst.device, src.device):
        _copy_peer(dst, src)
    else:
        _copy_staged(dst, src)
    return dst


def move(arr: DeviceArray, device) -> DeviceArray:
    """``arr`` on ``device``: ``arr`` itself if it is there already, else a copy (see
    :func:`copy`).  What ``DeviceArray.to(device)`` does."""
    ordinal = _ordinal_of(device)
    _check_ordinal(arr._backend, ordinal)
    if ordinal == arr.device:
        return arr
    with on_device(ordinal):
        out = empty(arr.shape, arr._info.name)
    return copy(out, arr)


def _device_array(obj, name: str) -> DeviceArray:
    if isinstance(obj, DeviceArray):
        return obj
    if isinstance(obj, np.ndarray):
        raise TypeError(f"{name} is a NumPy array in host memory; gn.copy copies between device "
                        f"arrays (use gn.to_device(...) or DeviceArray.copy_from_host(...))")
    if hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__"):
        from .interop import from_foreign

        return from_foreign(obj, what=name)
    raise TypeError(f"{name} must be a device array, not {type(obj).__name__}")


def _peer_ready(dst: int, src: int) -> bool:
    """Whether copies between the two devices can go peer to peer (enabling it the first time)."""
    key = (min(dst, src), max(dst, src))
    state = _enabled.get(key)
    if state is None:
        with _enabled_lock:
            state = _enabled.get(key)
            if state is None:
                state = _enabled[key] = (can_access_peer(dst, src)
                                         and can_access_peer(src, dst)
                                         and _enable(dst, src) and _enable(src, dst))
    return state


def _enable(device: int, peer: int) -> bool:
    """Let ``device`` access ``peer``'s memory: its context and its default memory pool."""
    backend = B.select()
    if backend.name != "cuda":
        return True
    from . import driver as D

    drv = D.driver()
    ok = drv.CUresult.CUDA_SUCCESS
    D.check(drv.cuCtxPushCurrent(D.primary_context(device)), "cuCtxPushCurrent")
    try:
        err = drv.cuCtxEnablePeerAccess(D.primary_context(peer), 0)[0]
    finally:
        drv.cuCtxPopCurrent()
    if err not in (ok, drv.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED):
        return False  # e.g. CUDA_ERROR_TOO_MANY_PEERS: stage through the host instead
    pool = D.check(drv.cuDeviceGetDefaultMemPool(D.device_handle(peer)), "memory pool")
    desc = drv.CUmemAccessDesc()
    desc.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = device
    desc.flags = drv.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    return drv.cuMemPoolSetAccess(pool, [desc], 1)[0] == ok


def _copy_peer(dst: DeviceArray, src: DeviceArray) -> None:
    backend = dst._backend
    if backend.name != "cuda":
        backend.copy_dtod(dst.ptr, src.ptr, src.nbytes)
        return
    from . import driver as D

    current_device()  # the copy needs a current context; it is ordered against both devices'
    D.check(D.driver().cuMemcpyPeer(dst.ptr, D.primary_context(dst.device),
                                    src.ptr, D.primary_context(src.device), src.nbytes),
            f"peer-to-peer copy from device {src.device} to device {dst.device}")


def _copy_staged(dst: DeviceArray, src: DeviceArray) -> None:
    backend = dst._backend
    nbytes = src.nbytes
    buffer = np.empty(min(nbytes, STAGING_CHUNK), dtype=np.uint8)
    for offset in range(0, nbytes, STAGING_CHUNK):
        part = buffer[:min(STAGING_CHUNK, nbytes - offset)]
        with on_device(src.device):
            backend.copy_dtoh(part, src.ptr + offset)
        with on_device(dst.device):
            backend.copy_htod(dst.ptr + offset, part)
