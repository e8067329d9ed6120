"""Which CUDA pieces go together, and what code the installed driver can load.

gpu_native runs with CUDA 12 or CUDA 13.  Three versions meet in a process: the driver's (what
``cuDriverGetVersion`` reports), NVRTC's (the compiler), and the CUDA major that ``cuda-bindings``
was built for.  The rules, from the CUDA compatibility guide:

* a driver runs code from its own CUDA major and older ones (backward compatibility); CUDA 12 code
  needs driver R525 or newer, CUDA 13 code R580 or newer;
* within one major, a *cubin* from a newer minor loads on an older driver (minor version
  compatibility: NVRTC 12.9 cubins load on R550, which is CUDA 12.4), but *PTX* from a newer
  NVRTC than the driver cannot be JIT-compiled (``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``);
* a cubin for ``sm_XY`` runs on every GPU ``sm_XZ`` with ``Z >= Y`` (binary compatibility within
  an architecture family), but not on another major (``sm_90`` code does not run on ``sm_100``).

So NVRTC compiles to cubin for the device's exact arch; for a GPU newer than NVRTC knows, to cubin
for the newest arch of the same family it knows (CuPy likewise compiles cubin for
``min(device arch, newest NVRTC arch)``, and Numba-CUDA for the closest arch at or below the
device's); only for a GPU of a family NVRTC does not know at all, to PTX, and only when the driver
is at least as new as NVRTC.  Where nothing loadable can be produced, :func:`choose_target` raises
:class:`~gpu_native.errors.CudaVersionError` naming both versions and the fix.  The decision is a
pure function of version numbers, tested over version tables without a GPU.

The NVRTC used is the one of cuda-bindings' CUDA major (:func:`nvrtc_library`): both the
``gpu-native[cu12]`` and the ``gpu-native[cu13]`` extra install bindings and NVRTC of one major, and
``cuda.pathfinder`` alone would pick the CUDA 13 NVRTC whenever its wheel is installed at all (it
looks for ``nvidia/cu13`` first), for instance left over from a plain ``pip install gpu-native``
before ``pip install 'gpu-native[cu12]'``.  ``cuda_fp16.h`` comes from the CUDA runtime wheel of the
same major as NVRTC (:func:`cudart_headers`).

This module does not import the CUDA libraries (only, lazily, ``cuda.bindings.__version__``): the
cache and ``gpu-native doctor`` use it without loading NVRTC.
"""

from __future__ import annotations

import os
import re
import sys

from .build import parse_arch
from .errors import CompileError, CudaVersionError

__all__ = [
    "MIN_DRIVER",
    "SUPPORTED_MAJORS",
    "any_nvrtc_library",
    "bindings_major",
    "bindings_version",
    "choose_target",
    "cudart_headers",
    "cudart_headers_major",
    "driver_mismatch",
    "loadable_kinds",
    "nvrtc_library",
    "parse_version",
    "unloadable_reason",
    "version_from_driver",
    "version_text",
]

SUPPORTED_MAJORS = (12, 13)
"""The CUDA majors gpu_native supports, each with an extra: ``gpu-native[cu12]``, ``[cu13]``."""

MIN_DRIVER = {11: "R450", 12: "R525", 13: "R580"}
"""The oldest driver branch that loads code of each CUDA major (minor version compatibility)."""

Version = tuple[int, int]

# Where the NVIDIA wheels put NVRTC and the CUDA runtime headers, by CUDA major (the layouts
# cuda.pathfinder searches): CUDA 13 wheels share one `nvidia/cu13` tree, CUDA 12 wheels have a
# folder each.
_NVRTC_FILES: dict[int, dict[str, tuple[tuple[str, ...], ...]]] = {
    13: {"linux": (("nvidia", "cu13", "lib", "libnvrtc.so.13"),),
         "win32": (("nvidia", "cu13", "bin", "x86_64", "nvrtc64_130_0.dll"),
                   ("nvidia", "cu13", "bin", "nvrtc64_130_0.dll"))},
    12: {"linux": (("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"),),
         "win32": (("nvidia", "cuda_nvrtc", "bin", "nvrtc64_120_0.dll"),)},
}
_CUDART_INCLUDE = {13: ("nvidia", "cu13", "include"), 12: ("nvidia", "cuda_runtime", "include")}
_CUDART_VERSION = re.compile(rb"#define\s+CUDART_VERSION\s+(\d+)")


# ---- versions ----------------------------------------------------------------------------------

def version_from_driver(value: int) -> Version:
    """``cuDriverGetVersion``'s integer as ``(major, minor)``: ``12040`` → ``(12, 4)``."""
    value = int(value)
    return value // 1000, value % 1000 // 10


def parse_version(text: str) -> Version:
    """``"13.5"`` → ``(13, 5)``; raises ``ValueError`` for anything else."""
    major, _, minor = str(text).partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ValueError(f"invalid CUDA version {text!r}: expected 'MAJOR.MINOR'")
    return int(major), int(minor)


def version_text(version: Version) -> str:
    """``(12, 4)`` → ``"12.4"``."""
    return f"{version[0]}.{version[1]}"


# ---- what a driver loads -----------------------------------------------------------------------

def loadable_kinds(nvrtc: Version, driver: Version | None) -> tuple[str, ...]:
    """Which kinds of code from NVRTC ``nvrtc`` a driver of CUDA ``driver`` can load.

    ``("cubin", "ptx")`` when the driver is as new as NVRTC (or unknown: ``None``, as when
    precompiling for other machines); ``("cubin",)`` when it is older within the same major (minor
    version compatibility covers cubins, while PTX needs a driver that knows its ISA version);
    ``()`` when the driver's major is older.
    """
    if driver is None or tuple(nvrtc) <= tuple(driver):
        return ("cubin", "ptx")
    if nvrtc[0] == driver[0]:
        return ("cubin",)
    return ()


def _fix_for_driver(driver: Version) -> str:
    if driver[0] in SUPPORTED_MAJORS:
        return (f"Install gpu_native's CUDA {driver[0]} dependencies with "
                f"`pip install 'gpu-native[cu{driver[0]}]'`, or upgrade the NVIDIA driver")
    return (f"Upgrade the NVIDIA driver: gpu_native needs CUDA {SUPPORTED_MAJORS[0]} "
            f"(driver {MIN_DRIVER[SUPPORTED_MAJORS[0]]} or newer) or CUDA {SUPPORTED_MAJORS[-1]} "
            f"(driver {MIN_DRIVER[SUPPORTED_MAJORS[-1]]} or newer)")


def driver_mismatch(nvrtc: Version, driver: Version) -> str:
    """The sentence for a driver of an older CUDA major than NVRTC: both versions and the fix."""
    needs = MIN_DRIVER.get(nvrtc[0])
    needs = f" (CUDA {nvrtc[0]} needs driver {needs} or newer)" if needs else ""
    return (f"NVRTC {version_text(nvrtc)} builds CUDA {nvrtc[0]} code, which this machine's NVIDIA "
            f"driver cannot load: the driver supports CUDA {version_text(driver)}{needs}. "
            f"{_fix_for_driver(driver)}.")


def unloadable_reason(kind: str, built_by: Version, driver: Version | None) -> str | None:
    """Why a stored ``kind`` image built by NVRTC ``built_by`` cannot load on a driver of CUDA
    ``driver``, or ``None`` when it can (or the driver is unknown)."""
    kinds = loadable_kinds(built_by, driver)
    if kind in kinds:
        return None
    assert driver is not None
    if not kinds:
        return (f"it was built by NVRTC {version_text(built_by)} (CUDA {built_by[0]}), and the "
                f"driver supports CUDA {version_text(driver)}")
    return (f"it is PTX from NVRTC {version_text(built_by)}, which the driver (CUDA "
            f"{version_text(driver)}) cannot compile")


def choose_target(arch: str, nvrtc: Version, supported: tuple[int, ...],
                  driver: Version | None = None) -> tuple[str, str]:
    """``(target, kind)`` for compiling for a GPU of ``arch`` with NVRTC ``nvrtc``, which compiles
    for the sm numbers ``supported`` (ascending), so that a driver of CUDA ``driver`` (``None``:
    unknown) can load the result.

    * ``arch`` itself as ``"cubin"`` when NVRTC knows it;
    * a GPU newer than NVRTC knows: cubin for the newest arch NVRTC knows of the same family
      (``sm_121`` → ``sm_120``), which that GPU runs; failing that, ``"ptx"`` for
      ``compute_<newest>``, which the driver compiles for the GPU, when the driver is as new as
      NVRTC.

    Raises
    ------
    CudaVersionError
        The driver cannot load anything this NVRTC produces, or the arch is unknown to NVRTC and
        its PTX would be newer than the driver.  The message names both versions and the fix.
    CompileError
        NVRTC does not compile for ``arch`` (a GPU older than it supports).
    ValueError
        ``arch`` is not a name like ``"sm_90"``.
    """
    number, suffix = parse_arch(arch)
    kinds = loadable_kinds(nvrtc, driver)
    if not kinds:
        assert driver is not None  # an unknown driver is taken to load everything
        raise CudaVersionError(driver_mismatch(nvrtc, driver))
    if number in supported:
        return arch, "cubin"
    known = ", ".join(f"sm_{a}" for a in supported)
    if not suffix:
        family = [a for a in supported if a // 10 == number // 10 and a < number]
        if family:
            return f"sm_{family[-1]}", "cubin"
    if number > supported[-1]:
        if "ptx" in kinds:
            return f"compute_{supported[-1]}", "ptx"
        assert driver is not None  # an unknown driver is taken to load PTX
        raise CudaVersionError(
            f"NVRTC {version_text(nvrtc)} does not know {arch} or its family (it supports "
            f"{known}), so the kernel would be PTX, and the driver (CUDA {version_text(driver)}) "
            f"cannot compile PTX from NVRTC {version_text(nvrtc)}. Upgrade the NVIDIA driver, or "
            "NVRTC to a version that knows this GPU")
    if number < supported[0] and nvrtc[0] > SUPPORTED_MAJORS[0]:
        older = (f" (CUDA {nvrtc[0]} dropped this GPU: use CUDA {SUPPORTED_MAJORS[0]}, "
                 f"`pip install 'gpu-native[cu{SUPPORTED_MAJORS[0]}]'`)")
    elif number < supported[0]:
        older = " (use an older NVRTC for this GPU)"
    else:
        older = ""
    raise CompileError(f"NVRTC {version_text(nvrtc)} cannot compile for {arch}{older}; it "
                       f"supports {known}")


# ---- which NVRTC and headers -------------------------------------------------------------------

def bindings_version() -> str | None:
    """The installed ``cuda-bindings`` version (``"12.9.4"``), or ``None`` without one."""
    try:
        from cuda.bindings import __version__
    except Exception:  # not installed, or broken: the caller reports what it can
        return None
    return str(__version__)


def bindings_major() -> int | None:
    """The CUDA major ``cuda-bindings`` was built for (its version's major), or ``None``."""
    version = bindings_version()
    head = version.partition(".")[0] if version else ""
    return int(head) if head.isdigit() else None


def _platform() -> str:
    return "win32" if sys.platform == "win32" else "linux"


def _search_roots() -> list[str]:
    return [entry or os.getcwd() for entry in sys.path]


def nvrtc_library(major: int) -> str | None:
    """The NVRTC library of CUDA ``major`` that a pip wheel installed on ``sys.path``, found with
    ``stat`` calls only; ``None`` when there is none (a system toolkit is then found by
    ``cuda.pathfinder`` as usual)."""
    files = _NVRTC_FILES.get(major, {}).get(_platform(), ())
    for root in _search_roots():
        if not os.path.isdir(os.path.join(root, "nvidia")):
            continue
        for parts in files:
            path = os.path.join(root, *parts)
            if os.path.isfile(path):
                return os.path.abspath(path)
    return None


def any_nvrtc_library() -> str | None:
    """An NVRTC library from a wheel, of the newest major that has one (``cuda.pathfinder``'s
    own preference, for when cuda-bindings' major has no NVRTC wheel)."""
    for major in sorted(_NVRTC_FILES, reverse=True):
        path = nvrtc_library(major)
        if path is not None:
            return path
    return None


def cudart_headers(major: int) -> str | None:
    """The directory holding ``cuda_fp16.h`` from the CUDA runtime wheel of CUDA ``major``."""
    parts = _CUDART_INCLUDE.get(major)
    if parts is None:
        return None
    for root in _search_roots():
        directory = os.path.join(root, *parts)
        if os.path.isfile(os.path.join(directory, "cuda_fp16.h")):
            return os.path.abspath(directory)
    return None


def cudart_headers_major(directory: str) -> int | None:
    """The CUDA major of the runtime headers in ``directory`` (``CUDART_VERSION`` in
    ``cuda_runtime_api.h``), or ``None`` when that cannot be read."""
    try:
        with open(os.path.join(directory, "cuda_runtime_api.h"), "rb") as f:
            head = f.read(1 << 17)
    except OSError:
        return None
    found = _CUDART_VERSION.search(head)
    return int(found.group(1)) // 1000 if found else None
