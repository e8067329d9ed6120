"""Compile ahead on a cold start: NVRTC loads while the transpiler runs, kernels compile while the
driver makes its context.

On a cold start (the import hook rewrites a module instead of reading its cached rewrite, or a
decorator transpiles a function) the module's kernels are about to be compiled.  The steps before
the first launch are mostly serial Python holding the GIL (importing libcst, transpiling) and
driver calls that release it (creating the primary context, ~0.1 s); NVRTC's calls release it too.
Two things are therefore moved off the critical path, each onto a daemon thread:

1. :func:`start`, called before the transpiler is imported, loads NVRTC (``cuda.pathfinder``
   finds and dlopens a 140 MB library) and compiles a tiny kernel so that NVRTC's one-time set-up
   is done.  A compile on any thread calls :func:`wait_warm` first.
2. Kernels created after :func:`start` are noted (:func:`note`, at most :data:`MAX_VARIANTS`
   variants a process); when the CUDA backend first binds a device it calls :func:`device_ready`
   with that device's arch *before* it creates the context, and the noted variants are built
   through :func:`~gpu_native.cache.find_or_build` while it does.  The first launch then finds the
   artifact in memory, or waits on the lookup's lock for the compile in flight.

Nothing starts when NVRTC must not load (``GPU_NATIVE_REQUIRE_PRECOMPILED=1``), when kernels run on
the simulator (``GPU_NATIVE_BACKEND=sim``, or on Linux no NVIDIA device node), when
``GPU_NATIVE_PREFETCH=0``, or when NVRTC is already loaded; ``GPU_NATIVE_PREFETCH=1`` starts it
even where no device node is seen (or NVRTC is loaded).  The threads never call into the driver
themselves: a ``cuInit`` the user did not ask for would break CUDA in a child made by ``fork``.  Before a fork
and at interpreter exit, no further compile starts and the one in flight is waited for, so a child
never inherits a half-done import and NVRTC's globals are never torn down under a compile.
Failures are dropped: the compile the launch itself makes reports them with its own message.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from .locations import require_precompiled

__all__ = ["MAX_VARIANTS", "device_ready", "note", "start", "wait_warm"]

#: At most this many kernel variants are compiled ahead per process: a module of many kernels, of
#: which a run uses few, should not keep a core busy compiling the rest.
MAX_VARIANTS = 8

_FALSE = frozenset({"0", "false", "no", "off"})
_TRUE = frozenset({"1", "true", "yes", "on"})
# A kernel with the constructs every generated kernel has (a global store, a thread index), so
# that both the front end and ptxas do their one-time set-up.  Any arch will do for that.
_WARM_SOURCE = b'extern "C" __global__ void gn_warmup(float* p) { p[threadIdx.x] = 1.0f; }'

_lock = threading.Lock()
_warm_thread: threading.Thread | None = None
_build_threads: list[threading.Thread] = []
_noted: list[tuple[dict, dict, str | None]] = []
_noted_count = 0
_stopping = False


def _wanted() -> bool:
    setting = os.environ.get("GPU_NATIVE_PREFETCH", "").strip().lower()
    if setting in _FALSE or require_precompiled():
        return False
    if os.environ.get("GPU_NATIVE_BACKEND", "").strip().lower() == "sim":
        return False
    if setting in _TRUE:
        return True
    if "gpu_native.compiler.nvrtc" in sys.modules:
        return False
    if sys.platform.startswith("linux"):
        # No device node (a CPU-only machine or container): kernels run on the simulator.
        return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/dxg")
    return True


def _warm_up() -> None:
    try:
        from ..compiler import nvrtc

        nvrtc.warm_up(_WARM_SOURCE)
    except Exception:  # the real compile reports any problem with NVRTC itself
        pass


def start() -> bool:
    """Begin loading NVRTC on a daemon thread (once per process), and note kernels from now on.

    Returns whether compiling ahead is active in this process.
    """
    global _warm_thread
    if _warm_thread is not None:
        return True
    with _lock:
        if _warm_thread is None and not _stopping and _wanted():
            thread = threading.Thread(target=_warm_up, name="gpu_native-nvrtc-warmup",
                                      daemon=True)
            thread.start()
            _warm_thread = thread
    return _warm_thread is not None


def wait_warm() -> None:
    """Block until the NVRTC warm-up has finished (at once when none was started)."""
    thread = _warm_thread
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def note(spec: dict, module_file: str | None) -> None:
    """Remember the variants of a kernel just created, to build when a device is bound."""
    global _noted_count
    if _warm_thread is None or _stopping:
        return
    with _lock:
        for variant in spec.get("variants", ()):
            if _noted_count >= MAX_VARIANTS:
                return
            _noted.append((spec, variant, module_file))
            _noted_count += 1


def device_ready(arch: str) -> None:
    """Build the noted variants for ``arch`` on a daemon thread (the CUDA backend calls this
    when it first binds a device, before creating the context)."""
    with _lock:
        if not _noted or _stopping:
            return
        noted = list(_noted)
        _noted.clear()
        thread = threading.Thread(target=_build, args=(noted, arch),
                                  name="gpu_native-prefetch", daemon=True)
        thread.start()
        _build_threads.append(thread)


def _build(noted: list, arch: str) -> None:
    from . import lookup

    wait_warm()
    for spec, variant, module_file in noted:
        if _stopping:
            return
        try:
            lookup.find_or_build(lookup.BuildRequest.for_variant(spec, variant, arch,
                                                                 module_file))
        except Exception:  # the launch compiles it again and reports the error itself
            pass


def _stop() -> None:
    """No compile starts after this; wait for those in flight (before a fork, at exit)."""
    global _stopping
    _stopping = True
    current = threading.current_thread()
    for thread in [_warm_thread, *_build_threads]:
        if thread is not None and thread is not current:
            thread.join()


def _after_fork_in_parent() -> None:
    global _stopping
    _stopping = False


atexit.register(_stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_stop, after_in_parent=_after_fork_in_parent)
