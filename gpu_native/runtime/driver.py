"""Thin, checked access to the CUDA driver through ``cuda.bindings``.

Every driver call goes through :func:`check`, which turns a failing ``CUresult`` into
:class:`~gpu_native.errors.CudaError` carrying the CUDA error name and a sentence, or into
:class:`~gpu_native.errors.ContextLostError` for the sticky errors after which no GPU work can run
in this process.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from functools import cache

from ..errors import ContextLostError, CudaError

_lock = threading.Lock()
_initialized = False
_init_error: Exception | None = None

# Errors after which the CUDA context is unusable for the rest of the process.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
})

_CONTEXT_LOST = (
    "the process's CUDA context is lost: a kernel made an invalid memory access or trapped "
    "(typically code inside `with unsafe():`, or code with bounds_check=False), and CUDA "
    "allows no further GPU work in this process; fix the kernel and restart the process"
)


def driver():
    """The ``cuda.bindings.driver`` module (imported on first use)."""
    from cuda.bindings import driver as drv

    return drv


@cache
def _success():
    return driver().CUresult.CUDA_SUCCESS


def error_name(err) -> str:
    drv = driver()
    try:
        res, name = drv.cuGetErrorName(err)
        if res == drv.CUresult.CUDA_SUCCESS and name:
            return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # pragma: no cover - error while reporting an error
        pass
    return getattr(err, "name", str(err))


def error_string(err) -> str:
    drv = driver()
    try:
        res, text = drv.cuGetErrorString(err)
        if res == drv.CUresult.CUDA_SUCCESS and text:
            return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # pragma: no cover
        pass
    return "unknown CUDA error"


def cuda_error(err, what: str = "") -> CudaError:
    """The exception for a failing ``CUresult`` (``what`` says which operation failed)."""
    name = error_name(err)
    code = int(err)
    if name in STICKY_ERRORS:
        return ContextLostError(name, code, _CONTEXT_LOST)
    text = error_string(err)
    if what:
        text = f"{what}: {text}"
    return CudaError(name, code, text)


def check(result, what: str = ""):
    """Unwrap a ``cuda.bindings`` result tuple ``(CUresult, *values)`` or raise."""
    err = result[0]
    if err != _success():
        raise cuda_error(err, what)
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


def init() -> None:
    """Initialise the driver once; raise ``CudaError`` if there is no usable driver or GPU."""
    global _initialized, _init_error
    if _initialized:
        return
    with _lock:
        if _initialized:
            return
        if _init_error is not None:
            raise _init_error
        try:
            drv = driver()
            check(drv.cuInit(0), "cuInit")
        except CudaError as exc:
            _init_error = exc
            raise
        except Exception as exc:  # no libcuda.so: cuda.bindings raises its own error types
            # 35: CUDA's code for CUDA_ERROR_NO_DRIVER (0 is CUDA_SUCCESS).
            _init_error = CudaError("CUDA_ERROR_NO_DRIVER", 35,
                                    f"no CUDA driver could be loaded ({exc})")
            raise _init_error from None
        _initialized = True


def available() -> bool:
    """True when a CUDA driver and at least one device are present."""
    try:
        init()
        return device_count() > 0
    except CudaError:
        return False


def device_count() -> int:
    init()
    return int(check(driver().cuDeviceGetCount()))


@cache
def device_handle(ordinal: int):
    init()
    return check(driver().cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")


def attribute(ordinal: int, name: str) -> int:
    drv = driver()
    attr = getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
    return int(check(drv.cuDeviceGetAttribute(attr, device_handle(ordinal))))


@cache
def device_properties(ordinal: int) -> dict:
    """Name, compute capability and launch limits of a device (cached)."""
    drv = driver()
    handle = device_handle(ordinal)
    name = check(drv.cuDeviceGetName(256, handle))
    name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    props = {
        "name": name,
        "major": attribute(ordinal, "COMPUTE_CAPABILITY_MAJOR"),
        "minor": attribute(ordinal, "COMPUTE_CAPABILITY_MINOR"),
        "multiprocessors": attribute(ordinal, "MULTIPROCESSOR_COUNT"),
        "max_threads_per_block": attribute(ordinal, "MAX_THREADS_PER_BLOCK"),
        "max_block": (attribute(ordinal, "MAX_BLOCK_DIM_X"), attribute(ordinal, "MAX_BLOCK_DIM_Y"),
                      attribute(ordinal, "MAX_BLOCK_DIM_Z")),
        "max_grid": (attribute(ordinal, "MAX_GRID_DIM_X"), attribute(ordinal, "MAX_GRID_DIM_Y"),
                     attribute(ordinal, "MAX_GRID_DIM_Z")),
        "max_shared_per_block": attribute(ordinal, "MAX_SHARED_MEMORY_PER_BLOCK"),
        "max_shared_per_block_optin": attribute(ordinal, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        "total_memory": int(check(drv.cuDeviceTotalMem(handle))),
        "unified_addressing": attribute(ordinal, "UNIFIED_ADDRESSING"),
    }
    props["arch"] = f"sm_{props['major']}{props['minor']}"
    return props


_contexts: dict[int, object] = {}


def primary_context(ordinal: int):
    """Retain (once) and return the device's primary context, shared with CuPy and PyTorch."""
    ctx = _contexts.get(ordinal)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(ordinal)
            if ctx is None:
                ctx = check(driver().cuDevicePrimaryCtxRetain(device_handle(ordinal)),
                            "cuDevicePrimaryCtxRetain")
                _contexts[ordinal] = ctx
    return ctx


def pointer_ordinal(ptr: int) -> int | None:
    """``CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`` of ``ptr``, or None where the driver has none.

    Asked of the driver library itself: some cuda.bindings releases (13.3.1 among them; 12.9.10
    and 13.4 are right) read this one attribute back from the wrong field and answer 0 whatever
    the device, which on a machine of several GPUs put every foreign array on device 0."""
    value = ctypes.c_int(-1)
    attr = int(driver().CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
    err = _driver_library().cuPointerGetAttribute(ctypes.byref(value), attr, ptr)
    return value.value if err == 0 else None


@cache
def _driver_library():
    """The driver library cuda.bindings loaded (dlopen returns the same handle)."""
    lib = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
    lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_ulonglong]
    lib.cuPointerGetAttribute.restype = ctypes.c_int
    return lib


def make_current(ordinal: int) -> None:
    """Make the device's primary context current on the calling thread."""
    check(driver().cuCtxSetCurrent(primary_context(ordinal)), "cuCtxSetCurrent")


@cache
def driver_version() -> int:
    """``cuDriverGetVersion``: the CUDA version the driver supports (``12040`` for 12.4)."""
    init()
    return int(check(driver().cuDriverGetVersion()))
