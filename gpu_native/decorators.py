"""``@gpu_kernel`` and ``@gpu_device``.

In a module the import hook rewrote, ``@gpu_kernel(Kernel1D, _spec=...)`` receives the spec the
transpiler produced and the launcher factory that replaced the kernel's body.  Where no hook ran
(``python script.py``, a notebook cell), the decorator transpiles the function from its own
source with the same pipeline — :func:`gpu_native.rewrite.rewrite_module` on the file the
function came from — and builds the same kernel object.

This module sits above both the runtime and the transpiler (``docs/architecture.md``): the kernel
object is the runtime's, and the transpiler is imported only by the fallback, so neither
``import gpu_native`` nor a kernel module the hook rewrote loads it, and the runtime package itself
never imports the transpiler.
"""

from __future__ import annotations

import linecache
import os
import threading
import time
import types
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from . import log
from .errors import TranspileError
from .lang.layouts import Kernel1D, Kernel2D, Kernel3D
from .runtime.kernel import Kernel
from .tracebacks import boundary, strip

P = ParamSpec("P")
R = TypeVar("R")

_KINDS = (Kernel1D, Kernel2D, Kernel3D)
_rewrites: dict[tuple[str, str], Any] = {}
_rewrite_lock = threading.Lock()


@boundary
def gpu_kernel(kind: type[Kernel1D] | type[Kernel2D] | type[Kernel3D], *,
               bounds_check: bool = True, fastmath: bool = False,
               max_registers: int | None = None, cooperative: bool = False,
               specializations: Any = None,
               _spec: tuple | None = None) -> Callable[[Callable[P, object]], Kernel[P]]:
    """Mark a function as a GPU kernel: ``@gpu_kernel(Kernel1D)``.

    Parameters
    ----------
    kind
        ``Kernel1D``, ``Kernel2D`` or ``Kernel3D``: the dimensionality of its launches.
    bounds_check
        Check every index that cannot be proven in range (default).  ``False`` removes the checks
        for measured hot paths.
    fastmath
        Compile with ``--use_fast_math``.
    max_registers
        Cap registers per thread (``--maxrregcount``).
    cooperative
        Launch with ``cuLaunchCooperativeKernel``: every block of the grid is resident at once,
        so the kernel may call ``grid_sync()``, a barrier for every thread of the grid.  A grid
        larger than the device can hold at once is refused at launch (``LaunchError``).
    specializations
        For generic kernels (``TypeVar`` parameters): the specialisations to build, e.g.
        ``[f32, f64]``; by default every combination of the TypeVars' types.

    Returns
    -------
    Callable
        The decorator, which makes the function a :class:`~gpu_native.Kernel`; type checkers
        see a ``Kernel[P]`` with the function's parameters ``P``, so launches are checked.
    """
    if kind not in _KINDS:
        raise TypeError(f"@gpu_kernel takes Kernel1D, Kernel2D or Kernel3D, not {kind!r}")

    def decorate(fn: Callable[P, object]) -> Kernel[P]:
        if _spec is not None:
            return Kernel(_spec, fn)
        try:
            return _kernel_from_source(fn)
        except Exception as exc:  # a kernel outside the language: the user's line, not ours
            strip(exc)
            raise

    return decorate


def _kernel_from_source(fn: Callable[P, object]) -> Kernel[P]:
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError("@gpu_kernel decorates a plain function")
    filename = code.co_filename
    globals_ = getattr(fn, "__globals__", {})
    # The file as it is now: after an edit and importlib.reload(), linecache would still serve
    # the text it read the first time (entries without a file, e.g. notebook cells, are kept).
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, globals_)
    if not lines:
        raise TranspileError(
            f"cannot find the source of kernel '{fn.__name__}' (defined in {filename}); "
            "gpu_native transpiles kernels from their source",
            None, "define kernels in a .py file or a notebook cell, or ship precompiled kernels "
            "(gpu-native precompile) in an app without sources")
    source = "".join(lines)
    module_name = fn.__module__ or "__main__"
    if module_name in ("__main__", "__mp_main__") and filename.endswith(".py"):
        # A script's kernels get the names `gpu-native precompile script.py` gives them, so its
        # precompiled artifacts match (and a pickled kernel re-imports `script` in a worker).
        module_name = os.path.splitext(os.path.basename(filename))[0]
    hints = _hints_from_globals(source, globals_)
    result = _rewrite(source, filename, module_name, hints)
    from .frontend.source import source_lines
    from .rewrite import find_kernel

    build = find_kernel(result, fn.__name__, code.co_firstlineno)
    if build is None:
        raise TranspileError(f"could not find kernel '{fn.__name__}' in {filename}", None,
                             "decorate module-level or nested functions with @gpu_kernel(...)")
    new_lines = source_lines(result.source)
    first = build.line
    last = _block_end(new_lines, first)
    block = "".join(new_lines[first - 1:last])
    # Run the rewritten lines of this one kernel exactly as the hook would have, on their
    # original line numbers: the decorator sees the spec and builds the Kernel.
    padded = "\n" * (first - 1) + _dedent_block(block)
    namespace: dict[str, Any] = {}
    exec(compile(padded, filename, "exec"), globals_, namespace)
    return namespace[fn.__name__]


def _block_end(lines: list[str], first: int) -> int:
    """The last line of the rewritten kernel block starting at ``first`` (decorator line)."""
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    last = first + 1
    for i in range(first + 1, len(lines) + 1):
        text = lines[i - 1]
        stripped = text.strip()
        if not stripped:
            continue
        if len(text) - len(text.lstrip()) <= indent and i > first + 1:
            break
        last = i
    return last


def _dedent_block(block: str) -> str:
    lines = block.splitlines(keepends=True)
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "".join(line[indent:] if line.strip() else line for line in lines)


def _hints_from_globals(source: str, globals_: dict) -> dict:
    """Names a notebook cell uses but imported or defined in an earlier cell."""
    import gpu_native

    imports: dict[str, tuple[str, str | None]] = {}
    constants: dict[str, object] = {}
    for name, value in list(globals_.items()):
        if name.startswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            imports[name] = (value.__name__, None)
            continue
        if value is gpu_native:
            continue
        public = getattr(gpu_native, name, None)
        if public is not None and public is value:
            imports[name] = ("gpu_native", name)
            continue
        for attr in getattr(gpu_native, "__all__", ()):
            if getattr(gpu_native, attr, None) is value:
                imports[name] = ("gpu_native", attr)
                break
        else:
            if isinstance(value, (bool, int, float)) and not isinstance(value, type):
                constants[name] = value
    return {"imports": imports, "constants": constants}


def _rewrite(source: str, filename: str, module_name: str, hints: dict):
    import hashlib

    from .cache import prefetch

    prefetch.start()  # as the import hook does: the kernels are compiled ahead
    from .rewrite import rewrite_module

    digest = hashlib.sha256(source.encode()).hexdigest()
    key = (filename, digest)
    with _rewrite_lock:
        result = _rewrites.get(key)
        if result is None:
            started = time.perf_counter()
            result = _rewrites[key] = rewrite_module(source, filename, module_name, hints=hints)
            log.debug("module %s (%s): transpiled %d kernel%s in %.1f ms (no import hook ran)",
                      module_name, filename, len(result.kernels),
                      "s" * (len(result.kernels) != 1), (time.perf_counter() - started) * 1e3)
    return result


class DeviceFunction(Generic[P, R]):
    """A ``@gpu_device`` function: callable from kernels and other device functions only.

    For type checkers it keeps the function's parameters ``P`` and result ``R``, so calls in
    kernel bodies are checked as calls of the function.
    """

    def __init__(self, fn: Callable[P, R]):
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        raise TypeError(f"{self.__name__} is a @gpu_device function: call it from a kernel or "
                        "another device function, not from the host")

    def __repr__(self) -> str:
        return f"<gpu_native device function {self.__module__}.{self.__qualname__}>"

    def __reduce__(self):
        from .runtime.kernel import _import_kernel

        return (_import_kernel, (self.__module__, self.__qualname__))


@overload
def gpu_device(fn: Callable[P, R]) -> DeviceFunction[P, R]: ...
@overload
def gpu_device(fn: None = None, **options: Any) -> Callable[[Callable[P, R]],
                                                            DeviceFunction[P, R]]: ...
def gpu_device(fn: Callable[P, R] | None = None, **options: Any) -> Any:
    """Mark a function as a device function (``@gpu_device``): typed like a kernel, callable from
    kernels and other device functions, compiled into every kernel that calls it."""
    if fn is None:
        return lambda f: DeviceFunction(f)
    return DeviceFunction(fn)
