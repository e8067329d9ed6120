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

Importing this module loads NVRTC; the runtime imports it only to compile.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from cuda.bindings import nvrtc as _nvrtc

from .. import headers
from ..build import parse_arch
from ..errors import CompileError
from ..nodes import node

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
    cleanly.
    """

    image: bytes
    kind: str
    target: str
    log: str
    options: tuple[str, ...]


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
    """The directory holding ``cuda_fp16.h`` (from the ``nvidia-cuda-runtime`` wheel)."""
    directory = None
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        directory = find_nvidia_header_directory("cudart")
    except Exception:
        directory = None
    if not directory:
        raise CompileError("a kernel uses f16/bf16, which needs cuda_fp16.h, but the CUDA runtime "
                           "headers were not found; install them with "
                           "`pip install 'cuda-toolkit[cudart]'` (the nvidia-cuda-runtime wheel)")
    return directory


def _version_text() -> str:
    major, minor = nvrtc_version()
    return f"{major}.{minor}"


def choose_target(arch: str) -> tuple[str, str]:
    """(target, kind) for ``arch``: the arch itself as cubin, or PTX for the newest known arch when
    ``arch`` is newer than this NVRTC.  Raises :class:`CompileError` for an arch NVRTC dropped."""
    number, _suffix = parse_arch(arch)
    archs = supported_archs()
    if number > archs[-1]:
        return f"compute_{archs[-1]}", "ptx"
    if number not in archs:
        known = ", ".join(f"sm_{a}" for a in archs)
        older = " (use an older NVRTC for this GPU)" if number < archs[0] else ""
        raise CompileError(f"NVRTC {_version_text()} cannot compile for {arch}{older}; "
                           f"it supports {known}")
    return arch, "cubin"


def nvrtc_options(request: BuildRequest, target: str) -> list[str]:
    """The NVRTC command line for ``request`` built for ``target``."""
    options = [f"--gpu-architecture={target}", "-lineinfo", "-std=c++17"]
    if request.fastmath:
        options.append("--use_fast_math")
    if request.max_registers is not None:
        options.append(f"--maxrregcount={int(request.max_registers)}")
    if request.uses_half:
        options.append(f"-I{half_include_dir()}")
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
    target, kind = choose_target(request.arch)
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
    return CompiledImage(image, kind, target, log, tuple(options))
