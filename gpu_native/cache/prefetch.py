"""Compile ahead on a cold start: NVRTC loads once the transpiler is done, and kernels compile
while the driver makes its context.

On a cold start (the import hook rewrites a module instead of reading its cached rewrite, or a
decorator transpiles a function) the module's kernels are about to be compiled.  The steps before
the first launch are mostly serial Python holding the GIL (importing libcst, transpiling) and
driver calls that release it (starting the driver and creating the primary context, ~0.15 s);
NVRTC's compiles release it too.  Loading NVRTC is itself Python holding the GIL (importing
``cuda.bindings.nvrtc`` and ``cuda.pathfinder``), so it must not run beside the transpiler, which
it would only slow down: it starts once the transpiler has finished.

1. :func:`start`, called before a cold transpile, turns compiling ahead on for this process.
2. Kernels created from then on are noted (:func:`note`, at most :data:`MAX_VARIANTS` variants a
   process).  The first note starts one daemon worker thread, which loads NVRTC while the rest of
   the module and the user's code run up to the first device use.
3. When the CUDA backend first binds a device it calls :func:`device_ready` with that device's
   arch *before* it starts the driver and creates the context; the worker builds the noted
   variants through :func:`~gpu_native.cache.find_or_build` meanwhile.  The first launch then
   finds the artifact in memory, or waits on the lookup's lock for the compile in flight.  When
   NVRTC is loaded before any device is bound, the worker also compiles a tiny kernel, so that
   NVRTC's one-time set-up is done by then.  A compile on another thread waits for the loading
   (:func:`wait_warm`).

Nothing starts when NVRTC must not load (``GPU_NATIVE_REQUIRE_PRECOMPILED=1``), when kernels run on
the simulator (``GPU_NATIVE_BACKEND=sim``, or on Linux no NVIDIA device node), when
``GPU_NATIVE_PREFETCH=0``, or when NVRTC is already loaded; ``GPU_NATIVE_PREFETCH=1`` starts it
even where no device node is seen (or NVRTC is loaded).  The worker never calls into the driver
itself: a ``cuInit`` the user did not ask for would break CUDA in a child made by ``fork``.  Before
a fork and at interpreter exit, the worker finishes the compile in flight and stops (a new one
starts after a fork if more kernels are noted), so a child never inherits a half-done import and
NVRTC's globals are never torn down under a compile.  Failures are dropped: the compile the launch
itself makes reports them with its own message.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import TYPE_CHECKING

from _gpu_native_startup import flag

from .locations import require_precompiled

if TYPE_CHECKING:
    from ..spec import KernelSpec, VariantSpec

__all__ = ["MAX_VARIANTS", "device_ready", "note", "start", "wait_warm"]

#: At most this many kernel variants are compiled ahead per process: a module of many kernels, of
#: which a run uses few, should not keep a core busy compiling the rest.
MAX_VARIANTS = 8

# A kernel with the constructs every generated kernel has (a global store, a thread index), so
# that both the front end and ptxas do their one-time set-up.  Any arch will do for that.
_WARM_SOURCE = b'extern "C" __global__ void gn_warmup(float* p) { p[threadIdx.x] = 1.0f; }'

_lock = threading.Lock()
_changed = threading.Condition(_lock)  # a note, an arch or a stop: the worker looks again
_active = False  # start() was called and compiling ahead is wanted here
_worker: threading.Thread | None = None
_loaded = threading.Event()  # the worker has loaded NVRTC (or given up on it)
_pending: list[tuple[KernelSpec, VariantSpec, str | None]] = []  # noted, not built yet
_noted_count = 0
_arch: str | None = None  # the arch of the device bound last
_driver_version: int | None = None  # cuDriverGetVersion, given with the arch
_building = False
_stopping = False


def _wanted() -> bool:
    setting = flag("GPU_NATIVE_PREFETCH", None)
    if setting is False or require_precompiled():
        return False
    if os.environ.get("GPU_NATIVE_BACKEND", "").strip().lower() == "sim":
        return False
    if setting:
        return True
    if "gpu_native.compiler.nvrtc" in sys.modules:
        return False
    if sys.platform.startswith("linux"):
        # No device node (a CPU-only machine or container): kernels run on the simulator.
        return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/dxg")
    return True


def start() -> bool:
    """Turn compiling ahead on for this process (once): kernels created from now on are noted.

    Returns whether compiling ahead is active in this process.
    """
    global _active
    if not _active:
        with _lock:
            _active = _active or (not _stopping and _wanted())
    return _active


def wait_warm() -> None:
    """Block until the worker has loaded NVRTC (at once when there is no worker, or on it)."""
    worker = _worker
    if worker is not None and worker is not threading.current_thread():
        _loaded.wait()


def note(spec: KernelSpec, module_file: str | None) -> None:
    """Remember the variants of a kernel just created, to build when a device is bound; the
    first one starts the worker, which loads NVRTC."""
    global _noted_count
    if not _active or _stopping:
        return
    with _lock:
        for variant in spec.variants:
            if _noted_count >= MAX_VARIANTS:
                break
            _pending.append((spec, variant, module_file))
            _noted_count += 1
        _wake()


def device_ready(arch: str, driver_version: int | None = None) -> None:
    """Build the noted variants for ``arch``, loadable by a driver of ``driver_version`` (the CUDA
    backend calls this when it first binds a device, before it creates the context)."""
    global _arch, _driver_version
    with _lock:
        _arch = arch
        _driver_version = driver_version
        _wake()


def _wake() -> None:
    """Start the worker if there is work and none (the first note, or after a fork); tell it to
    look again.  Called with the lock held."""
    global _worker
    if _pending and _worker is None and not _stopping:
        _loaded.clear()
        _worker = threading.Thread(target=_work, name="gpu_native-prefetch", daemon=True)
        _worker.start()
    _changed.notify_all()


def _load() -> None:
    try:
        from ..compiler import nvrtc

        nvrtc.nvrtc_version()  # finds and loads the library
        if _arch is None:  # no device yet: time to spare for NVRTC's one-time set-up
            nvrtc.warm_up(_WARM_SOURCE)
    except Exception:  # the real compile reports any problem with NVRTC itself
        pass
    finally:
        _loaded.set()


def _work() -> None:
    global _building
    _load()
    from ..build import BuildRequest
    from . import lookup

    while True:
        with _changed:
            _building = False
            _changed.notify_all()
            while not _stopping and not (_arch and _pending):
                _changed.wait()
            if _stopping:
                return
            batch, arch, driver_version = list(_pending), _arch, _driver_version
            assert arch is not None  # the wait above ends only with an arch (or stopping)
            _pending.clear()
            _building = True
        for spec, variant, module_file in batch:
            if _stopping:
                break
            try:
                lookup.find_or_build(BuildRequest.for_variant(spec, variant, arch, module_file,
                                                              driver_version))
            except Exception:  # the launch compiles it again and reports the error itself
                pass


def _wait_built() -> None:
    """Block until every variant noted so far for a known arch is built (tests, benchmarks)."""
    with _changed:
        while _worker is not None and _worker.is_alive() and (
                _building or (_arch and _pending) or not _loaded.is_set()):
            _changed.wait(0.05)


def _stop() -> None:
    """The worker finishes the compile in flight and ends (before a fork, at exit)."""
    global _stopping, _worker
    with _lock:
        _stopping = True
        worker = _worker
        _changed.notify_all()
    if worker is not None and worker is not threading.current_thread():
        worker.join()
        with _lock:
            if _worker is worker:
                _worker = None


def _after_fork_in_parent() -> None:
    global _stopping
    _stopping = False


atexit.register(_stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_stop, after_in_parent=_after_fork_in_parent)
