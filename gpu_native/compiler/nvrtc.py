"""NVRTC through ``cuda.bindings``: generated CUDA C++ in, cubin for one exact sm out.

Cubin, not PTX: PTX from a newer NVRTC is refused by an older driver
(``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``), while the cubin loads.  PTX is produced only for a GPU
newer than this NVRTC knows (``nvrtcGetSupportedArchs``): then the PTX of the newest arch it
supports, which that GPU's driver can JIT.  Every compile has ``-lineinfo``, and the generated
source carries ``#line`` directives, so NVRTC's messages, compute-sanitizer and cuda-gdb name the
user's Python lines.

Generated code includes ``gpu_native/prelude.cuh`` by name.  NVRTC is handed that header in
memory, under its include name (:func:`create_program`), rather than told an ``-I`` directory of
the installed package:

* the text compiled is the text the cache key hashed (:mod:`gpu_native.headers` reads it once for
  both), so an artifact can never be filed under a header other than the one it was built with,
  even if the file changes while a process runs;
* a cubin does not depend on where gpu_native is installed.  ``-lineinfo`` writes the file of every
  line into the cubin's line table: through ``-I`` that would be the absolute path of
  ``site-packages/gpu_native/include/gpu_native/prelude.cuh`` on the machine that built it; in
  memory it is ``gpu_native/prelude.cuh``, which NVRTC resolves against the working directory,
  as it does the program's own name and the ``#line`` file names;
* NVRTC's messages name ``gpu_native/prelude.cuh(LINE)``, the name in the ``#include`` line (the
  file itself: ``gpu-native expand --prelude``), while the generated code's own lines still name
  the user's Python file; and no directory is searched at compile time.

Which NVRTC: the one of cuda-bindings' CUDA major, when a wheel of that major is installed
(:func:`gpu_native.toolkit.nvrtc_library`), loaded here before ``cuda.bindings.nvrtc`` asks
``cuda.pathfinder``, which then finds it already loaded; otherwise whichever ``cuda.pathfinder``
finds.  What NVRTC then produces is chosen so the installed driver can load it
(:func:`choose_target`, :func:`gpu_native.toolkit.choose_target`).

Importing this module loads NVRTC; the runtime imports it only to compile.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import TYPE_CHECKING

from .. import headers, toolkit
from ..errors import CompileError
from ..nodes import node


def _load_nvrtc_of_bindings_major() -> str | None:
    """Load the NVRTC wheel of cuda-bindings' CUDA major (the path), unless an NVRTC is loaded
    already: ``cuda.pathfinder`` looks for ``nvidia/cu13`` first, so it would take a CUDA 13 NVRTC
    left installed beside the ``gpu-native[cu12]`` wheels."""
    major = toolkit.bindings_major()
    path = toolkit.nvrtc_library(major) if major is not None else None
    if path is None:
        return None
    if sys.platform.startswith("linux"):
        for soname in ("libnvrtc.so.13", "libnvrtc.so.12"):
            try:
                ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            except OSError:
                continue
            return None  # another library loaded an NVRTC first: cuda.pathfinder will use it
    try:
        ctypes.CDLL(path)
    except OSError:  # cuda.pathfinder then reports what it finds, or why it finds nothing
        return None
    return path


_load_nvrtc_of_bindings_major()

from cuda.bindings import nvrtc as _nvrtc  # noqa: E402  (after choosing which NVRTC it gets)

if TYPE_CHECKING:
    from ..build import BuildRequest

__all__ = [
    "CompiledImage",
    "choose_target",
    "compile_request",
    "create_program",
    "half_include_dir",
    "library_path",
    "nvrtc_options",
    "nvrtc_version",
    "supported_archs",
    "warm_up",
]


@node
class CompiledImage:
    """What NVRTC produced for one :class:`~gpu_native.build.BuildRequest`.

    ``image`` is the cubin, or for ``kind == "ptx"`` the NUL-terminated PTX text that
    ``cuModuleLoadData`` expects.  ``target`` is the arch it was built for (``"sm_90"``, or
    ``"compute_121"`` for PTX).  ``log`` is NVRTC's log: empty for generated code that compiles
    cleanly.  ``nvrtc`` is the ``"major.minor"`` of the NVRTC that built it.
    """

    image: bytes
    kind: str
    target: str
    log: str
    options: tuple[str, ...]
    nvrtc: str = ""


def _error_name(code) -> str:
    err, text = _nvrtc.nvrtcGetErrorString(code)
    if err == _nvrtc.nvrtcResult.NVRTC_SUCCESS and text:
        return text.decode("ascii", "replace")
    return str(code)


def _check(result, what: str):
    """Unpack a cuda.bindings result tuple, raising :class:`CompileError` on failure."""
    err, *values = result
    if err != _nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC failed in {what}: {_error_name(err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    """The (major, minor) version of the NVRTC library in use."""
    major, minor = _check(_nvrtc.nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


@functools.lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    """The sm numbers this NVRTC compiles for, ascending (e.g. ``(75, 80, ..., 121)``)."""
    return tuple(sorted(int(a) for a in _check(_nvrtc.nvrtcGetSupportedArchs(),
                                               "nvrtcGetSupportedArchs")))


def library_path() -> str | None:
    """The file NVRTC was loaded from, as ``cuda.pathfinder`` (which cuda.bindings uses) found it."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        return load_nvidia_dynamic_lib("nvrtc").abs_path
    except Exception:  # an unusual install: the caller then simply records nothing
        return None


@functools.lru_cache(maxsize=1)
def half_include_dir() -> str:
    """The directory holding ``cuda_fp16.h``: the CUDA runtime wheel of NVRTC's CUDA major
    (``nvidia-cuda-runtime-cu12`` for NVRTC 12, ``nvidia-cuda-runtime`` 13.x for NVRTC 13), else
    what ``cuda.pathfinder`` finds (a conda or system toolkit) if it is of the same major."""
    major = nvrtc_version()[0]
    directory = toolkit.cudart_headers(major)
    if directory is not None:
        return directory
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        directory = find_nvidia_header_directory("cudart")
    except Exception:
        directory = None
    extra = "cu12" if major == 12 else "cu13"
    if not directory:
        raise CompileError(
            "a kernel uses f16/bf16, which needs cuda_fp16.h, but the CUDA runtime headers were "
            f"not found; install the CUDA {major} ones with `pip install 'gpu-native[{extra}]'` "
            f"(the nvidia-cuda-runtime wheel of CUDA {major}, as NVRTC is {_version_text()})")
    found = toolkit.cudart_headers_major(directory)
    if found is not None and found != major:
        raise CompileError(
            f"a kernel uses f16/bf16, which needs cuda_fp16.h, and the only CUDA runtime headers "
            f"found ({directory}) are CUDA {found}'s, while NVRTC is {_version_text()}; install "
            f"the CUDA {major} ones with `pip install 'gpu-native[{extra}]'`")
    return directory


@functools.lru_cache(maxsize=1)
def cccl_include_dir() -> str:
    """The directory holding ``nv/target`` (CCCL, from the ``nvidia-cuda-cccl`` wheel or the
    CUDA toolkit), which ``<cooperative_groups.h>`` includes; NVRTC provides it only for the
    half-precision headers."""
    directory = None
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        directory = find_nvidia_header_directory("cccl")
    except Exception:
        directory = None
    if not directory:
        raise CompileError("a kernel calls grid_sync(), which needs <cooperative_groups.h> and the "
                           "CCCL headers it includes, but the CCCL headers were not found; "
                           "install them with `pip install 'cuda-toolkit[cccl]'` (the "
                           "nvidia-cuda-cccl wheel)")
    return directory


def _version_text() -> str:
    major, minor = nvrtc_version()
    return f"{major}.{minor}"


def choose_target(arch: str, driver_version: int | None = None) -> tuple[str, str]:
    """(target, kind) for ``arch`` with this NVRTC, loadable by a driver of ``driver_version``
    (``cuDriverGetVersion``; ``None``: unknown): see :func:`gpu_native.toolkit.choose_target`.

    Raises :class:`~gpu_native.errors.CudaVersionError` when the driver can load nothing this NVRTC
    produces for ``arch``, :class:`CompileError` for an arch NVRTC dropped."""
    driver = toolkit.version_from_driver(driver_version) if driver_version is not None else None
    return toolkit.choose_target(arch, nvrtc_version(), supported_archs(), driver)


def nvrtc_options(request: BuildRequest, target: str) -> list[str]:
    """The NVRTC command line for ``request`` built for ``target``."""
    options = [f"--gpu-architecture={target}", "-lineinfo", "-std=c++17"]
    if request.fastmath:
        options.append("--use_fast_math")
    if request.max_registers is not None:
        options.append(f"--maxrregcount={int(request.max_registers)}")
    if request.uses_half or request.uses_grid_sync:
        options.append(f"-I{half_include_dir()}")
    if request.uses_grid_sync:
        options.append(f"-I{cccl_include_dir()}")
    return options


def _program_log(program) -> str:
    size = _check(_nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
    if size <= 1:
        return ""
    buffer = b" " * size
    _check(_nvrtc.nvrtcGetProgramLog(program, buffer), "nvrtcGetProgramLog")
    return buffer.rstrip(b"\x00").decode("utf-8", "replace").strip()


def _image(program, kind: str) -> bytes:
    if kind == "cubin":
        size = _check(_nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
        buffer = b" " * size
        _check(_nvrtc.nvrtcGetCUBIN(program, buffer), "nvrtcGetCUBIN")
        return buffer
    size = _check(_nvrtc.nvrtcGetPTXSize(program), "nvrtcGetPTXSize")
    buffer = b" " * size
    _check(_nvrtc.nvrtcGetPTX(program, buffer), "nvrtcGetPTX")
    return buffer  # NUL-terminated, as cuModuleLoadData wants it


def create_program(source: bytes, name: bytes):
    """An NVRTC program (``nvrtcProgram``) for ``source``, named ``name``, that can
    ``#include`` every header gpu_native ships (:data:`gpu_native.headers.SHIPPED`) by its include
    name.  The caller compiles it and destroys it with ``nvrtcDestroyProgram``."""
    names = [n.encode("utf-8") for n in headers.SHIPPED]
    texts = [headers.header_text(n).encode("utf-8") for n in headers.SHIPPED]
    return _check(_nvrtc.nvrtcCreateProgram(source, name, len(names), texts, names),
                  "nvrtcCreateProgram")


def warm_up(source: bytes) -> None:
    """Compile ``source`` once and throw the result away, so that NVRTC's one-time set-up is
    done before the first kernel compile (see :mod:`gpu_native.cache.prefetch`)."""
    archs = supported_archs()
    program = _check(_nvrtc.nvrtcCreateProgram(source, b"gn_warmup.cu", 0, [], []),
                     "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture=sm_{archs[-1]}".encode(), b"-lineinfo", b"-std=c++17"]
        _nvrtc.nvrtcCompileProgram(program, len(options), options)
    finally:
        _nvrtc.nvrtcDestroyProgram(program)


def compile_request(request: BuildRequest) -> CompiledImage:
    """Compile one kernel translation unit with NVRTC.

    Raises :class:`~gpu_native.errors.CompileError` holding NVRTC's log when the source does not
    compile; thanks to ``#line`` the log names the user's Python file and line.
    """
    target, _ = choose_target(request.arch, request.driver_version)
    return compile_for(request, target)


def compile_for(request: BuildRequest, target: str) -> CompiledImage:
    """Compile ``request`` for NVRTC's ``target`` as given (``"sm_90"``: a cubin;
    ``"compute_90"``: PTX, which skips the device assembler), with no choice made for a driver:
    :func:`compile_request` chooses the target.  Raises :class:`CompileError` as it does."""
    kind = "ptx" if target.startswith("compute_") else "cubin"
    options = nvrtc_options(request, target)
    name = f"{request.symbol or 'kernel'}.cu".encode()
    program = create_program(request.source.encode("utf-8"), name)
    try:
        encoded = [o.encode("utf-8") for o in options]
        err, = _nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        log = _program_log(program)
        if err != _nvrtc.nvrtcResult.NVRTC_SUCCESS:
            label = request.label or request.symbol
            raise CompileError(
                f"NVRTC {_version_text()} could not compile kernel {label} for {request.arch} "
                f"({_error_name(err)}); its log follows, with locations in your Python source:",
                log)
        image = _image(program, kind)
    finally:
        _nvrtc.nvrtcDestroyProgram(program)
    return CompiledImage(image, kind, target, log, tuple(options), _version_text())
