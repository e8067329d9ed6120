"""Backends: where kernels run.  ``cuda`` (a real GPU through the driver) or ``sim`` (the CPU
simulator).  Both sit behind the same launcher: the generated launcher packs the same argument
buffer and calls the backend's ``launch``, whose signature is ``cuLaunchKernel``'s.

``GPU_NATIVE_BACKEND=cuda|sim|auto`` picks one (default ``auto``: CUDA when a driver and a device
exist, else the simulator, announced once by a :class:`~gpu_native.GpuNativeWarning` and an
``INFO`` record of the ``gpu_native`` logger).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import SupportsInt

import numpy as np

from .. import log
from ..errors import CudaError, GpuNativeError, GpuNativeWarning
from ..settings import BACKENDS
from . import driver as D

_selected: Backend | None = None
_select_lock = threading.Lock()


class Backend(ABC):
    """What the runtime needs from a place that runs kernels (documented for both backends)."""

    name = "abstract"
    success: object = None

    # devices
    @abstractmethod
    def device_count(self) -> int: ...
    @abstractmethod
    def set_thread_device(self, ordinal: int) -> None: ...
    @abstractmethod
    def properties(self, ordinal: int) -> dict: ...
    def driver_version(self) -> int | None:
        """``cuDriverGetVersion``'s number (13000 for CUDA 13.0); ``None`` without a driver."""
        return None
    # memory (device pointers are ints)
    @abstractmethod
    def alloc(self, nbytes: int, ordinal: int) -> int: ...
    @abstractmethod
    def free(self, ptr: int, ordinal: int) -> None: ...
    @abstractmethod
    def copy_htod(self, ptr: int, host: np.ndarray) -> None: ...
    @abstractmethod
    def copy_dtoh(self, host: np.ndarray, ptr: int) -> None: ...
    @abstractmethod
    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None: ...
    @abstractmethod
    def memset8(self, ptr: int, value: int, nbytes: int) -> None: ...
    @abstractmethod
    def alloc_mapped(self, nbytes: int, ordinal: int) -> tuple[np.ndarray, int]: ...
    # streams and events (a stream handle is a CUstream or, in the simulator, an int)
    @abstractmethod
    def stream_create(self, ordinal: int) -> SupportsInt: ...
    @abstractmethod
    def stream_destroy(self, handle: object) -> None: ...
    @abstractmethod
    def default_stream(self, ordinal: int) -> SupportsInt: ...
    @abstractmethod
    def stream_sync(self, handle: object) -> None: ...
    @abstractmethod
    def stream_value(self, handle: SupportsInt) -> int: ...
    @abstractmethod
    def device_sync(self) -> None: ...
    @abstractmethod
    def event_create(self) -> object: ...
    @abstractmethod
    def event_record(self, event: object, stream: object) -> None: ...
    @abstractmethod
    def event_sync(self, event: object) -> None: ...
    @abstractmethod
    def event_query(self, event: object) -> bool: ...
    @abstractmethod
    def event_elapsed_ms(self, start: object, end: object) -> float: ...
    @abstractmethod
    def event_destroy(self, event: object) -> None: ...
    @abstractmethod
    def stream_wait_event(self, stream: object, event: object) -> None: ...
    # Interop handshakes (see runtime.interop): make `waiter` wait for the work queued on
    # `producer` so far, and make the legacy default stream of a device wait for every
    # non-blocking stream the runtime launched on, so that it orders after all of this process's
    # work there.  The simulator runs each launch to completion and needs neither.
    @abstractmethod
    def stream_wait_stream(self, waiter: object, producer: object) -> None: ...
    @abstractmethod
    def fence_nonblocking(self, ordinal: int) -> None: ...

    # kernels
    @abstractmethod
    def load(self, kernel, variant, ordinal: int, symbol: str | None = None) -> object: ...
    # cuLaunchKernel(function, grid x y z, block x y z, dynamic shared bytes, stream, kernel
    # parameters, extra): the CUDA backend binds the driver function itself.
    launch: Callable[..., object]
    # cuLaunchCooperativeKernel with the same signature (kernels that call grid_sync()).
    launch_cooperative: Callable[..., object]
    @abstractmethod
    def error_for(self, err) -> Exception: ...
    # occupancy (for kernel.forall and cooperative launches)
    @abstractmethod
    def max_block_size(self, fn, shared_mem_bytes: int) -> int: ...
    @abstractmethod
    def max_active_blocks(self, fn, threads: int, shared_mem_bytes: int) -> int: ...


class CudaBackend(Backend):
    """Kernels run on the GPU through ``cuda.bindings.driver``."""

    name = "cuda"

    def __init__(self) -> None:
        D.init()
        self.drv = D.driver()
        self.success = self.drv.CUresult.CUDA_SUCCESS
        self.launch = self.drv.cuLaunchKernel
        self._tls = threading.local()
        self._streams0: dict[int, SupportsInt] = {}
        self._pools_configured: set[int] = set()
        self._pools_ready: set[int] = set()  # the pool's first reservation is made
        self._pool_lock = threading.Lock()
        self._unpooled: dict[int, int] = {}  # pointer from cuMemAlloc -> its device
        self._deferred: list[tuple[object, int, int]] = []  # (event, pointer, device) to free
        self._nonblocking: dict[int, int] = {}  # non-blocking stream handle -> its device
        self._free_lock = threading.Lock()

    def error_for(self, err) -> Exception:
        return D.cuda_error(err, "cuLaunchKernel")

    # ---- devices ---------------------------------------------------------------------------

    def device_count(self) -> int:
        return D.device_count()

    def set_thread_device(self, ordinal: int) -> None:
        if ordinal not in self._pools_configured:
            prefetch = sys.modules.get("gpu_native.cache.prefetch")  # imported by a cold start
            if prefetch is not None:
                # Kernels compile on another thread while the driver creates the context.
                prefetch.device_ready(self.properties(ordinal)["arch"], D.driver_version())
        D.make_current(ordinal)
        self._tls.ordinal = ordinal
        if ordinal not in self._pools_configured:
            self._configure_pool(ordinal)

    def _configure_pool(self, ordinal: int) -> None:
        # Keep freed memory in the stream-ordered pool instead of returning it to the OS at every
        # synchronisation: allocation in a loop then costs no driver round trip.
        with self._pool_lock:
            if ordinal in self._pools_configured:
                return
            self._pools_configured.add(ordinal)
        drv = self.drv
        try:
            pool = D.check(drv.cuDeviceGetDefaultMemPool(D.device_handle(ordinal)))
            threshold = drv.cuuint64_t(0xFFFFFFFFFFFFFFFF)
            D.check(drv.cuMemPoolSetAttribute(
                pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold))
        except (CudaError, AttributeError, TypeError):  # pragma: no cover - old drivers
            pass
        # The pool's first allocation makes its first reservation, which takes 7-10 ms on an
        # H200 (a cuMemAlloc takes 0.1 ms): a new process would wait for it before its first
        # array.  A thread makes it instead, while the allocations made meanwhile come from
        # cuMemAlloc (see alloc).  Not a daemon: the interpreter waits for it at exit rather
        # than tear the driver down under its call.
        threading.Thread(target=self._reserve_pool, args=(ordinal,),
                         name="gpu_native-pool").start()

    def _reserve_pool(self, ordinal: int) -> None:
        drv = self.drv
        try:
            D.make_current(ordinal)
            stream = self.default_stream(ordinal)
            ptr = D.check(drv.cuMemAllocAsync(1, stream))
            D.check(drv.cuMemFreeAsync(ptr, stream))
        except Exception:  # no pool (an old driver, a lost context): cuMemAlloc serves on
            return
        self._pools_ready.add(ordinal)

    def properties(self, ordinal: int) -> dict:
        return D.device_properties(ordinal)

    def driver_version(self) -> int:
        """``cuDriverGetVersion`` (``12040`` for CUDA 12.4): what the code compiled must suit."""
        return D.driver_version()

    # ---- memory ----------------------------------------------------------------------------

    def alloc(self, nbytes: int, ordinal: int) -> int:
        if ordinal in self._pools_ready:
            return int(D.check(self.drv.cuMemAllocAsync(max(nbytes, 1),
                                                        self.default_stream(ordinal)),
                               f"allocating {nbytes} bytes"))
        return self._alloc_unpooled(nbytes, ordinal)

    def _alloc_unpooled(self, nbytes: int, ordinal: int) -> int:
        # Until the pool's first reservation is made (see _configure_pool).  Such memory is
        # freed once the work queued before its free has finished (see free).
        if ordinal not in self._pools_configured:
            self._configure_pool(ordinal)
        if self._deferred:
            self._free_deferred()
        drv = self.drv
        result = drv.cuMemAlloc(max(nbytes, 1))
        if result[0] != self.success:  # the pool reports the error (or succeeds) instead
            return int(D.check(drv.cuMemAllocAsync(max(nbytes, 1), self.default_stream(ordinal)),
                               f"allocating {nbytes} bytes"))
        ptr = int(result[1])
        with self._free_lock:
            self._unpooled[ptr] = ordinal
        return ptr

    def note_stream(self, handle: SupportsInt, nonblocking: bool, ordinal: int = 0) -> None:
        """Remember a non-blocking stream: frees must wait for its work (see :meth:`free`)."""
        if nonblocking:
            self._nonblocking[int(handle)] = ordinal

    def free(self, ptr: int, ordinal: int) -> None:
        # Free in stream order on the legacy default stream, which waits for all earlier work of
        # every blocking stream; non-blocking streams the runtime has launched on are fenced in
        # with events.  So `del a` right after an asynchronous launch is safe.  The memory's own
        # device's context must be current (an array can die while another device is current,
        # or in a thread that never chose one); kernels only ever see memory of their own
        # device, so only that device's streams need fencing.
        drv = self.drv
        switch = getattr(self._tls, "ordinal", None) != ordinal
        if switch:
            D.check(drv.cuCtxPushCurrent(D.primary_context(ordinal)), "cuCtxPushCurrent")
        try:
            legacy = self.default_stream(ordinal)
            with self._free_lock:
                self._fence_nonblocking(ordinal, legacy)
                unpooled = self._unpooled.pop(ptr, None) is not None
                if unpooled:
                    # cuMemFree does not wait for queued work: an event marks where the legacy
                    # stream has passed every use, and the memory is freed once it has.
                    event = D.check(drv.cuEventCreate(
                        drv.CUevent_flags.CU_EVENT_DISABLE_TIMING))
                    D.check(drv.cuEventRecord(event, legacy))
                    self._deferred.append((event, ptr, ordinal))
            if not unpooled:
                D.check(drv.cuMemFreeAsync(ptr, legacy), "freeing device memory")
            if self._deferred:
                self._free_deferred(ordinal)
        finally:
            if switch:
                drv.cuCtxPopCurrent()

    def _fence_nonblocking(self, ordinal: int, legacy) -> None:
        drv = self.drv
        for value, device in list(self._nonblocking.items()):
            if device == ordinal:
                self.stream_wait_stream(legacy, drv.CUstream(value))

    def fence_nonblocking(self, ordinal: int) -> None:
        """Make the legacy default stream of ``ordinal`` (whose context is current) wait for
        every non-blocking stream launched on there: it then orders after all of this process's
        work on that device (blocking streams order before it by the legacy stream's rules)."""
        with self._free_lock:
            self._fence_nonblocking(ordinal, self.default_stream(ordinal))

    def _free_deferred(self, ordinal: int | None = None) -> None:
        """Free the cuMemAlloc memory whose event has passed (of ``ordinal``, whose context is
        current; by default the calling thread's device)."""
        if ordinal is None:
            ordinal = getattr(self._tls, "ordinal", None)
        drv = self.drv
        with self._free_lock:
            waiting = []
            for entry in self._deferred:
                event, ptr, device = entry
                if device == ordinal and drv.cuEventQuery(event)[0] == self.success:
                    drv.cuMemFree(ptr)
                    drv.cuEventDestroy(event)
                else:
                    waiting.append(entry)
            self._deferred = waiting

    def copy_htod(self, ptr: int, host: np.ndarray) -> None:
        if host.nbytes:
            D.check(self.drv.cuMemcpyHtoD(ptr, host.ctypes.data, host.nbytes), "copy to device")

    def copy_dtoh(self, host: np.ndarray, ptr: int) -> None:
        if host.nbytes:
            D.check(self.drv.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes), "copy to host")

    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            D.check(self.drv.cuMemcpyDtoD(dst, src, nbytes), "device-to-device copy")

    def memset8(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes:
            D.check(self.drv.cuMemsetD8(ptr, value, nbytes), "memset")

    def alloc_mapped(self, nbytes: int, ordinal: int) -> tuple[np.ndarray, int]:
        drv = self.drv
        flags = drv.CU_MEMHOSTALLOC_DEVICEMAP | drv.CU_MEMHOSTALLOC_PORTABLE
        host_ptr = D.check(drv.cuMemHostAlloc(nbytes, flags), "allocating mapped host memory")
        dev_ptr = D.check(drv.cuMemHostGetDevicePointer(host_ptr, 0))
        import ctypes

        buf = (ctypes.c_uint8 * nbytes).from_address(int(host_ptr))
        view = np.ctypeslib.as_array(buf)
        view[:] = 0
        return view, int(dev_ptr)

    # ---- streams and events ------------------------------------------------------------------

    def stream_create(self, ordinal: int) -> SupportsInt:
        return D.check(self.drv.cuStreamCreate(0), "cuStreamCreate")

    def stream_destroy(self, handle: object) -> None:
        self.drv.cuStreamDestroy(handle)

    def default_stream(self, ordinal: int) -> SupportsInt:
        s = self._streams0.get(ordinal)
        if s is None:
            s = self._streams0[ordinal] = self.drv.CUstream(0)
        return s

    def stream_value(self, handle: SupportsInt) -> int:
        return int(handle)

    def stream_sync(self, handle: object) -> None:
        D.check(self.drv.cuStreamSynchronize(handle), "stream synchronize")

    def device_sync(self) -> None:
        D.check(self.drv.cuCtxSynchronize(), "device synchronize")

    def event_create(self) -> object:
        return D.check(self.drv.cuEventCreate(0))

    def event_record(self, event: object, stream: object) -> None:
        D.check(self.drv.cuEventRecord(event, stream))

    def event_sync(self, event: object) -> None:
        D.check(self.drv.cuEventSynchronize(event))

    def event_query(self, event: object) -> bool:
        err = self.drv.cuEventQuery(event)[0]
        if err == self.success:
            return True
        if err == self.drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        raise D.cuda_error(err, "cuEventQuery")

    def event_elapsed_ms(self, start: object, end: object) -> float:
        return float(D.check(self.drv.cuEventElapsedTime(start, end)))

    def event_destroy(self, event: object) -> None:
        self.drv.cuEventDestroy(event)

    def stream_wait_event(self, stream: object, event: object) -> None:
        D.check(self.drv.cuStreamWaitEvent(stream, event, 0))

    def stream_wait_stream(self, waiter: object, producer: object) -> None:
        """Make ``waiter`` wait for the work queued on ``producer`` so far (an event, destroyed
        at once: the wait keeps what it needs)."""
        drv = self.drv
        event = D.check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING))
        try:
            D.check(drv.cuEventRecord(event, producer), "recording an event")
            D.check(drv.cuStreamWaitEvent(waiter, event, 0), "waiting for an event")
        finally:
            drv.cuEventDestroy(event)

    # ---- kernels -------------------------------------------------------------------------------

    def load(self, kernel, variant, ordinal: int, symbol: str | None = None) -> object:
        from ..cache import BuildRequest, find_or_build

        symbol = symbol or variant.symbol
        module = variant.modules.get(ordinal)
        if module is not None:
            return D.check(self.drv.cuModuleGetFunction(module, symbol.encode()),
                           f"finding {symbol}")

        arch = D.device_properties(ordinal)["arch"]
        artifact = find_or_build(BuildRequest.for_variant(kernel.spec, variant.spec, arch,
                                                          kernel.spec_file, D.driver_version()))
        drv = self.drv
        if variant.spec.consts:
            from .constants import constant_arrays

            constant_arrays(kernel, variant)  # a stale table is refused before anything loads
        started = time.perf_counter()
        module = D.check(drv.cuModuleLoadData(artifact.image), f"loading {variant.label}")
        log.debug("loaded kernel %s (%s %s, from %s) on device %d in %.1f ms", variant.label,
                  artifact.arch, artifact.kind, artifact.origin, ordinal,
                  (time.perf_counter() - started) * 1e3)
        if variant.spec.consts:
            from .constants import upload

            upload(drv, D.check, module, kernel, variant)
        variant.modules[ordinal] = module  # keep the module loaded while the kernel lives
        return D.check(drv.cuModuleGetFunction(module, symbol.encode()), f"finding {symbol}")

    def function_attribute(self, fn, name: str) -> int:
        drv = self.drv
        attr = getattr(drv.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(D.check(drv.cuFuncGetAttribute(attr, fn)))

    def allow_dynamic_shared(self, fn, nbytes: int) -> None:
        drv = self.drv
        attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        D.check(drv.cuFuncSetAttribute(fn, attr, nbytes), "raising the dynamic shared memory limit")

    def launch_cooperative(self, fn, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        """``cuLaunchCooperativeKernel`` with ``cuLaunchKernel``'s signature (it takes no
        ``extra``), so that a launcher calls either the same way."""
        return self.drv.cuLaunchCooperativeKernel(fn, gx, gy, gz, bx, by, bz, shmem, stream,
                                                  params)

    def max_block_size(self, fn, shared_mem_bytes: int) -> int:
        """The block size with the most resident threads per multiprocessor
        (``cuOccupancyMaxPotentialBlockSize``, with ``shared_mem_bytes`` of dynamic shared
        memory per block)."""
        _, block = D.check(self.drv.cuOccupancyMaxPotentialBlockSize(fn, None, shared_mem_bytes,
                                                                     0),
                           "cuOccupancyMaxPotentialBlockSize")
        return int(block)

    def max_active_blocks(self, fn, threads: int, shared_mem_bytes: int) -> int:
        """How many blocks of ``threads`` threads fit on one multiprocessor at once
        (``cuOccupancyMaxActiveBlocksPerMultiprocessor``)."""
        return int(D.check(self.drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            fn, threads, shared_mem_bytes), "cuOccupancyMaxActiveBlocksPerMultiprocessor"))

    def cooperative_supported(self, ordinal: int) -> bool:
        """Whether the device can launch cooperative kernels (``COOPERATIVE_LAUNCH``)."""
        return bool(D.attribute(ordinal, "COOPERATIVE_LAUNCH"))

    def allocation_range(self, ptr: int) -> tuple[int, int] | None:
        """The (base, size) of the device allocation holding ``ptr``, or None."""
        res = self.drv.cuMemGetAddressRange(ptr)
        if res[0] != self.success:
            return None
        return int(res[1]), int(res[2])

    def pointer_device(self, ptr: int) -> int | None:
        """The device ordinal owning a device pointer, or None if it is not device memory."""
        drv = self.drv
        mem = drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        ptr)
        if mem[0] != self.success or int(mem[1]) == int(drv.CUmemorytype.CU_MEMORYTYPE_HOST):
            return None
        return D.pointer_ordinal(ptr)


def select() -> Backend:
    """The process's backend (chosen on first use; see the module docstring)."""
    global _selected
    if _selected is not None:
        return _selected
    with _select_lock:
        if _selected is not None:
            return _selected
        choice = os.environ.get("GPU_NATIVE_BACKEND", "auto").strip().lower() or "auto"
        if choice not in BACKENDS:
            raise GpuNativeError(f"GPU_NATIVE_BACKEND must be cuda, sim or auto, not {choice!r}")
        if choice == "sim":
            from .sim_backend import SimBackend

            _selected = SimBackend()
        elif choice == "cuda":
            _selected = CudaBackend()
        else:
            if D.available():
                _selected = CudaBackend()
            else:
                from .sim_backend import SimBackend

                _selected = SimBackend()
                notice = ("gpu_native: no CUDA GPU found; kernels run on the CPU simulator "
                          "(GPU_NATIVE_BACKEND=sim silences this notice)")
                log.info("%s", notice)
                log.warn(notice, GpuNativeWarning)
        return _selected


@contextlib.contextmanager
def use(name: str):
    """Run the enclosed code on another backend (``"sim"`` or ``"cuda"``): for test suites that
    check the simulator against the GPU in one process.  Launch configurations cached under the
    previous backend are dropped; arrays created under one backend are refused by the other."""
    global _selected
    from . import devices, kernel, streams

    previous = _selected
    with _select_lock:
        if name == "sim":
            from .sim_backend import SimBackend

            _selected = _instances.get("sim") or SimBackend()
        elif name == "cuda":
            _selected = _instances.get("cuda") or CudaBackend()
        else:
            raise GpuNativeError(f"unknown backend {name!r}")
        _instances[name] = _selected
    kernel.forget_launchers()
    streams.DEFAULT_STREAM._slots.clear()
    devices._tls.__dict__.pop("device", None)
    try:
        yield _selected
    finally:
        with _select_lock:
            _selected = previous
        kernel.forget_launchers()
        streams.DEFAULT_STREAM._slots.clear()
        devices._tls.__dict__.pop("device", None)


_instances: dict[str, Backend] = {}


def selected_name() -> str | None:
    """The name of the backend if one was chosen already (does not choose one)."""
    return _selected.name if _selected is not None else None
