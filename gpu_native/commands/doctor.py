"""``gpu-native doctor``: what gpu_native sees on this machine.

Driver and GPUs (if any), cuda-bindings and NVRTC with the CUDA major of each, whether the driver
can load what this NVRTC builds for each GPU (and, when not, which extra to install), the kernel
cache and precompiled directories with the NVRTC versions that built their kernels (and every
file in them this account cannot read), the import hook, and the backend ``auto`` picks.  Each
check is independent and reports its own failure in one line: a machine with no driver, no NVRTC
or an unwritable cache gets a report, not a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import stat
import sys
from collections.abc import Callable


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="report driver, GPU, NVRTC, cache and import-hook status")
    p.set_defaults(func=run)


def _driver() -> tuple[list[tuple[str, str]], dict]:
    """Lines about the CUDA driver and its devices, and facts for the later checks."""
    facts: dict = {"driver": False, "devices": [], "driver_version": None}
    try:
        from cuda.bindings import driver
    except Exception as exc:
        return [("driver", f"cuda.bindings is not importable ({exc})")], facts
    try:
        (err,) = driver.cuInit(0)
    except Exception:
        # cuda.bindings raises when libcuda itself cannot be found.
        return [("driver", "no CUDA driver (libcuda was not found)")], facts
    if err != driver.CUresult.CUDA_SUCCESS:
        return [("driver", f"no usable CUDA driver (cuInit failed: {err.name})")], facts
    facts["driver"] = True
    err, version = driver.cuDriverGetVersion()
    facts["driver_version"] = int(version)
    lines = [("driver", f"CUDA {version // 1000}.{version % 1000 // 10}")]
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        lines.append(("GPU", "none"))
        return lines, facts
    attr = driver.CUdevice_attribute
    for ordinal in range(count):
        _, device = driver.cuDeviceGet(ordinal)
        _, name = driver.cuDeviceGetName(256, device)
        _, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                               device)
        _, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                               device)
        _, memory = driver.cuDeviceTotalMem(device)
        text = name.split(b"\0", 1)[0].decode("utf-8", "replace")
        arch = f"sm_{major}{minor}"
        facts["devices"].append(arch)
        lines.append((f"GPU {ordinal}", f"{text}, {arch}, {memory / 2**30:.0f} GiB"))
    return lines, facts


def _driver_cuda(facts: dict) -> tuple[int, int] | None:
    from .. import toolkit

    version = facts.get("driver_version")
    return toolkit.version_from_driver(version) if version is not None else None


def _bindings(facts: dict) -> list[tuple[str, str]]:
    """cuda-bindings' version and CUDA major, and whether the driver is new enough for it."""
    from .. import toolkit

    version, major = toolkit.bindings_version(), toolkit.bindings_major()
    if version is None:
        return [("bindings", "cuda-bindings is not installed: pip install 'gpu-native[cu13]' "
                 "(driver R580 or newer) or 'gpu-native[cu12]'")]
    lines = [("bindings", f"cuda-bindings {version} (CUDA {major})")]
    driver = _driver_cuda(facts)
    if driver is not None and major is not None and major > driver[0]:
        lines.append(("", f"cuda-bindings {major}.x needs driver {toolkit.MIN_DRIVER.get(major)} "
                      f"or newer, and this driver supports CUDA {toolkit.version_text(driver)}: "
                      f"pip install 'gpu-native[cu{driver[0]}]'"))
    return lines


def _nvrtc(facts: dict) -> list[tuple[str, str]]:
    try:
        from ..compiler import nvrtc
    except Exception as exc:
        return [("NVRTC", f"not available ({type(exc).__name__}: {exc}); kernels can only come "
                 "from precompiled directories")]
    from .. import toolkit
    from ..errors import CompileError

    major, minor = nvrtc.nvrtc_version()
    archs = nvrtc.supported_archs()
    lines = [("NVRTC", f"{major}.{minor} (CUDA {major}; "
              f"{nvrtc.library_path() or 'location unknown'}); "
              f"compiles sm_{archs[0]} to sm_{archs[-1]}")]
    bindings = toolkit.bindings_major()
    if bindings is not None and bindings != major:
        lines.append(("", f"NVRTC is not of cuda-bindings' CUDA major ({bindings}): install "
                      f"the NVRTC of CUDA {bindings} with pip install 'gpu-native[cu{bindings}]'"))
    for arch in sorted(set(facts["devices"])):
        try:
            target, kind = nvrtc.choose_target(arch, facts.get("driver_version"))
        except CompileError as exc:
            lines.append(("", f"{arch}: no kernel can run: {exc}"))
            continue
        if kind == "ptx":
            lines.append(("", f"{arch} is newer than this NVRTC: kernels will be PTX for "
                          f"{target}; upgrade NVRTC (pip install -U 'gpu-native[cu{major}]')"))
        elif target != arch:
            lines.append(("", f"{arch} is newer than this NVRTC: kernels will be cubin for "
                          f"{target}, which runs on it; upgrade NVRTC "
                          f"(pip install -U 'gpu-native[cu{major}]')"))
        else:
            lines.append(("", f"{arch}: kernels are cubin for {arch}, which this driver loads"))
    try:
        lines.append(("headers", f"cuda_fp16.h in {nvrtc.half_include_dir()}"))
    except Exception as exc:
        lines.append(("headers", str(exc)))
    return lines


def _built_by(store, facts: dict) -> list[tuple[str, str]]:
    """Which NVRTC versions built the kernels of ``store``, and which of them this driver
    cannot load (they are passed over, and compiled again)."""
    from .. import toolkit

    counts = store.nvrtc_versions()
    if not counts:
        return []
    text = ", ".join(f"{version} ({count})" for version, count in sorted(counts.items()))
    lines = [("built by", f"NVRTC {text}")]
    driver = _driver_cuda(facts)
    if driver is None:
        return lines
    for version in sorted(counts):
        try:
            built = toolkit.parse_version(version)
        except ValueError:
            continue
        if not toolkit.loadable_kinds(built, driver):
            lines.append(("", f"kernels built by NVRTC {version} cannot load on this driver "
                          f"(CUDA {toolkit.version_text(driver)}): they are passed over"))
    return lines


# A manifest lists every artifact of a build: far below this, even for thousands of kernels.
_MAX_MANIFEST_BYTES = 64 << 20


def _is_precompile_manifest(raw: bytes) -> bool:
    """Whether ``raw`` is a manifest that ``gpu-native precompile`` wrote (its format tag)."""
    from ..precompile import MANIFEST_FORMAT

    if len(raw) > _MAX_MANIFEST_BYTES:
        return False
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == MANIFEST_FORMAT


def _precompiled(directory: str, facts: dict) -> list[tuple[str, str]]:
    """The state of one precompiled directory, and every reason this account cannot use it."""
    from ..cache import ArtifactStore
    from ..files import open_regular

    manifest = os.path.join(directory, "manifest.json")
    try:
        is_dir = stat.S_ISDIR(os.stat(directory).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_dir = None
    except OSError as exc:  # a parent this account may not enter
        return [("precompiled", f"{directory} (cannot be reached: {exc.strerror})")]
    if is_dir is None:
        return [("precompiled", f"{directory} (missing)")]
    if not is_dir:
        return [("precompiled", f"{directory} (INVALID: not a directory; GPU_NATIVE_PRECOMPILED "
                 f"lists directories of precompiled kernels, separated by {os.pathsep!r})")]
    try:
        with open_regular(manifest) as f:  # a FIFO is reported, never waited on
            raw = f.read(_MAX_MANIFEST_BYTES + 1)
        state = "found" if _is_precompile_manifest(raw) else (
            "its manifest.json was not written by gpu-native precompile: not a directory it "
            "built, or damaged")
    except FileNotFoundError:
        state = "no manifest.json"
    except OSError as exc:
        state = f"manifest.json cannot be read: {exc.strerror}"
    lines = [("precompiled", f"{directory} ({state})")]
    store = ArtifactStore(directory, read_only=True)
    lines.extend(_built_by(store, facts))
    unreadable = store.unreadable()
    for path, reason in unreadable:
        lines.append(("unreadable", f"{path} ({reason})"))
    if unreadable:
        lines.append(("", "kernels whose files cannot be read are compiled instead (with "
                      "GPU_NATIVE_REQUIRE_PRECOMPILED=1: an error); make them readable by this "
                      f"account: chmod -R a+rX {directory}"))
    return lines


def _cache(facts: dict) -> list[tuple[str, str]]:
    from ..cache import housekeeping, locations, user_store
    from .cache import describe

    store = user_store()
    lines = [(f"cache {label}", value)
             for label, value in describe(store, housekeeping.modules_cache())]
    lines.extend((f"cache {label}" if label else "", value)
                 for label, value in _built_by(store, facts))
    dirs = locations.env_precompiled_dirs()
    if dirs:
        for d in dirs:
            lines.extend(_precompiled(d, facts))
    else:
        lines.append(("precompiled", "GPU_NATIVE_PRECOMPILED not set (and "
                      f"{locations.SHIPPED_DIRNAME}/ beside kernel modules is searched)"))
    if locations.require_precompiled():
        lines.append(("", "GPU_NATIVE_REQUIRE_PRECOMPILED=1: kernels are never compiled here"))
    return lines


def _import_hook() -> list[tuple[str, str]]:
    import importlib

    try:
        module = importlib.import_module("gpu_native.importhook")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("gpu_native.importhook"):
            return [("import hook", "not installed")]
        raise
    status = getattr(module, "status", None)
    if not callable(status):
        return [("import hook", "not installed (gpu_native.importhook has no status())")]
    result = status()
    if isinstance(result, dict):
        result = ", ".join(f"{k}={v}" for k, v in result.items())
    return [("import hook", str(result))]


def _backend(facts: dict) -> list[tuple[str, str]]:
    from ..settings import BACKENDS

    raw = os.environ.get("GPU_NATIVE_BACKEND", "")
    chosen = raw.strip().lower() or "auto"
    if chosen not in BACKENDS:
        return [("backend", f"INVALID: GPU_NATIVE_BACKEND={raw!r} is not a backend (choose one "
                 f"of {', '.join(BACKENDS)}); launching a kernel raises GpuNativeError")]
    if chosen != "auto":
        return [("backend", f"{chosen} (GPU_NATIVE_BACKEND)")]
    if facts["driver"] and facts["devices"]:
        return [("backend", "auto → cuda")]
    reason = "no CUDA driver" if not facts["driver"] else "no GPU"
    return [("backend", f"auto → sim ({reason})")]


def _section(lines: list, label: str, check: Callable[[], list[tuple[str, str]]]) -> None:
    try:
        lines.extend(check())
    except Exception as exc:
        lines.append((label, f"check failed: {type(exc).__name__}: {exc}"))


def run(args: argparse.Namespace) -> int:
    import _gpu_native_startup

    from .._version import __version__

    _gpu_native_startup.leave_records_alone()  # a report on the cache does not change it

    lines: list[tuple[str, str]] = [
        ("gpu_native", f"{__version__} (Python {platform.python_version()}, "
         f"{platform.system()} {platform.machine()})"),
    ]
    facts: dict = {"driver": False, "devices": [], "driver_version": None}
    try:
        driver_lines, facts = _driver()
        lines.extend(driver_lines)
    except Exception as exc:
        lines.append(("driver", f"check failed: {type(exc).__name__}: {exc}"))
    _section(lines, "bindings", lambda: _bindings(facts))
    _section(lines, "NVRTC", lambda: _nvrtc(facts))
    _section(lines, "cache", lambda: _cache(facts))
    _section(lines, "import hook", _import_hook)
    _section(lines, "backend", lambda: _backend(facts))
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        sys.stdout.write(f"{label:<{width}}  {value}\n")
    return 0
