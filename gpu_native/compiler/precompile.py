"""Ahead-of-time builds: every kernel of some packages, for some archs, into a directory.

The output directory is an :class:`~gpu_native.cache.ArtifactStore` indexed by artifact id (which
does not depend on the NVRTC version, so a deployment finds its artifacts without NVRTC) plus a
``manifest.json``.  Point ``GPU_NATIVE_PRECOMPILED`` at it, or write it to ``mypkg/__gpu_native__``
and ship it inside the package.

Nothing here imports or executes the user's modules: they are found on ``sys.path`` by file name,
picked by a byte search for ``gpu_kernel``, and transpiled from their source.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

from .._version import __version__
from ..cache.keys import SCHEMA_VERSION, artifact_id, compile_options, parse_arch
from ..cache.locations import SHIPPED_DIRNAME
from ..cache.lookup import BuildRequest
from ..cache.store import ArtifactStore, write_file_atomic
from ..errors import CompileError, GpuNativeError
from .nvrtc import CompiledImage, compile_request, nvrtc_version

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gpu_native-precompiled"
_SKIP_DIRS = frozenset({"__pycache__", SHIPPED_DIRNAME, "node_modules"})


@dataclass(frozen=True)
class SourceModule:
    """A Python file that may define kernels, and the module name it is imported under."""

    path: str
    name: str


@dataclass(frozen=True)
class Job:
    """One kernel specialisation for one arch."""

    request: BuildRequest
    name: str
    types: tuple[tuple[str, str], ...]
    line: int


@dataclass
class PrecompileReport:
    """What :func:`precompile` built."""

    out_dir: str
    archs: tuple[str, ...]
    nvrtc: str
    modules: int = 0
    kernels: int = 0
    artifacts: int = 0
    ptx_fallbacks: list[tuple[str, str]] = field(default_factory=list)  # (arch, PTX target)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def ptx_summary(self) -> list[tuple[str, str, int]]:
        """(arch, PTX target, how many artifacts) for each arch built as PTX."""
        counts: dict[tuple[str, str], int] = {}
        for pair in self.ptx_fallbacks:
            counts[pair] = counts.get(pair, 0) + 1
        return [(arch, target, n) for (arch, target), n in counts.items()]


# ---- finding modules ------------------------------------------------------------------------


def parse_archs(values: Sequence[str]) -> tuple[str, ...]:
    """``["sm_80,sm_90", "sm_90"]`` → ``("sm_80", "sm_90")``; raises ``GpuNativeError``."""
    archs: list[str] = []
    for value in values:
        for arch in value.split(","):
            arch = arch.strip()
            if not arch:
                continue
            try:
                parse_arch(arch)
            except ValueError as exc:
                raise GpuNativeError(str(exc)) from None
            if arch not in archs:
                archs.append(arch)
    if not archs:
        raise GpuNativeError("no GPU architecture given: pass --arch sm_80,sm_90 (for example)")
    return tuple(archs)


def _is_identifier_path(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _walk(directory: str, package: str | None) -> list[SourceModule]:
    """Every ``.py`` file under ``directory``; ``package`` is its dotted name when known."""
    from ..frontend.parse import module_name_for_path

    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            if package is None:
                module = module_name_for_path(path)
            else:
                rel = os.path.relpath(path, directory)[: -len(".py")].split(os.sep)
                if rel[-1] == "__init__":
                    rel.pop()
                module = ".".join([package, *rel])
            found.append(SourceModule(os.path.abspath(path), module))
    return found


def _find_dotted(name: str) -> list[SourceModule]:
    parts = name.split(".")
    roots = [os.getcwd()] + [p or os.getcwd() for p in sys.path]
    for root in roots:
        base = os.path.join(root, *parts)
        if os.path.isfile(base + ".py"):
            return [SourceModule(os.path.abspath(base + ".py"), name)]
        if os.path.isdir(base):
            return _walk(base, name)
    raise GpuNativeError(f"{name}: no such file, directory or module (looked in the current "
                         "directory and on sys.path; modules are found by file, never imported)")


def find_modules(targets: Sequence[str]) -> list[SourceModule]:
    """The kernel modules named by ``targets`` (files, directories or dotted module names).

    A module qualifies when its source contains ``gpu_kernel`` (a byte search, like the import
    hook's).
    """
    from ..frontend.parse import module_name_for_path
    from ..frontend.source import read_source_bytes

    candidates: list[SourceModule] = []
    for target in targets:
        if os.path.exists(target) and not (os.path.isfile(target) or os.path.isdir(target)):
            raise GpuNativeError(f"{target}: not a regular file (give Python files, "
                                 "directories or dotted module names)")
        if os.path.isfile(target):
            candidates.append(SourceModule(os.path.abspath(target),
                                           module_name_for_path(target)))
        elif os.path.isdir(target):
            candidates.extend(_walk(target, None))
        elif _is_identifier_path(target) and not target.endswith(".py"):
            candidates.extend(_find_dotted(target))
        else:
            raise GpuNativeError(f"{target}: no such file or directory")
    seen: set[str] = set()
    modules = []
    for module in candidates:
        if module.path in seen:
            continue
        seen.add(module.path)
        if b"gpu_kernel" not in read_source_bytes(module.path):  # refuses FIFOs and devices
            continue
        modules.append(module)
    return modules


def display_file(module: str, path: str) -> str:
    """The kernel's file as its ``#line`` directives name it (the same on every machine)."""
    from ..rewrite import display_file as shown

    return shown(module, path)


def plan(modules: Sequence[SourceModule], archs: Sequence[str]) -> list[Job]:
    """Transpile ``modules`` and list one job per kernel specialisation and arch."""
    from ..frontend.source import read_source
    from ..rewrite import transpile_module

    jobs = []
    for module in modules:
        source = read_source(module.path)  # decoded as `import` decodes it (coding cookie)
        transpiled = transpile_module(source, module.path, module.name)
        for kernel in transpiled.kernels:
            spec = kernel.spec()
            for variant in spec["variants"]:
                for arch in archs:
                    request = BuildRequest.for_variant(spec, variant, arch, module.path)
                    jobs.append(Job(request, kernel.name, tuple(variant["types"]), kernel.line))
    return jobs


# ---- building -------------------------------------------------------------------------------


def _compile(request: BuildRequest) -> CompiledImage | CompileError:
    # In a worker process: return the error rather than raise it, so its log survives pickling.
    try:
        return compile_request(request)
    except CompileError as exc:
        return exc


def _results(jobs: Sequence[Job], workers: int,
             progress: Callable[[int, int, Job], None] | None):
    """Yield (job, CompiledImage) as compilations finish, in parallel processes when it pays."""
    total = len(jobs)
    if workers <= 1 or total <= 1:
        for done, job in enumerate(jobs, 1):
            result = _compile(job.request)
            if isinstance(result, CompileError):
                raise result
            if progress:
                progress(done, total, job)
            yield job, result
        return
    # spawn, not fork: forking a process that may have threads (or NVRTC loaded) is unsafe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, total), mp_context=context) as pool:
        pending = {pool.submit(_compile, job.request): job for job in jobs}
        done_count = 0
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_EXCEPTION)
                for future in finished:
                    job = pending.pop(future)
                    result = future.result()
                    if isinstance(result, CompileError):
                        raise result
                    done_count += 1
                    if progress:
                        progress(done_count, total, job)
                    yield job, result
        except BaseException:
            for future in pending:
                future.cancel()
            raise


def _load_manifest(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    if (isinstance(manifest, dict) and manifest.get("format") == MANIFEST_FORMAT
            and manifest.get("schema") == SCHEMA_VERSION
            and manifest.get("gpu_native") == __version__
            and isinstance(manifest.get("kernels"), list)):
        return manifest
    return None


def _kernel_id(entry: dict) -> tuple:
    return entry.get("module"), entry.get("name"), json.dumps(entry.get("types"))


def precompile(targets: Sequence[str], archs: Sequence[str], out_dir: str, *,
               jobs: int | None = None,
               progress: Callable[[int, int, Job], None] | None = None) -> PrecompileReport:
    """Build every kernel (and every specialisation a generic kernel declares) found in
    ``targets`` for every arch in ``archs``, into ``out_dir`` with a ``manifest.json``.

    Needs no GPU.  Compiles in ``jobs`` processes (default: one per CPU).  A manifest already in
    ``out_dir`` from the same gpu_native version is merged: kernels built now replace their old
    entries, others stay.
    """
    started = time.perf_counter()
    archs = parse_archs(archs)
    major, minor = nvrtc_version()
    report = PrecompileReport(os.path.abspath(out_dir), archs, f"{major}.{minor}")
    modules = find_modules(targets)
    if not modules:
        raise GpuNativeError("no kernels found in " + ", ".join(targets)
                             + " (no module there mentions gpu_kernel)")
    work = plan(modules, archs)
    if not work:
        one = len(modules) == 1
        names = ", ".join(os.path.relpath(m.path) for m in modules[:3])
        raise GpuNativeError(f"no kernels found in {', '.join(targets)}: {names}"
                             f"{' ...' if len(modules) > 3 else ''} mention{'s' * one} "
                             f"gpu_kernel but define{'s' * one} no @gpu_kernel function")
    report.modules = len(modules)
    store = ArtifactStore(report.out_dir)
    kernels: dict[tuple, dict] = {}
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    for job, compiled in _results(work, workers, progress):
        request = job.request
        identity = artifact_id(request)
        meta = {
            "artifact": identity, "symbol": request.symbol, "arch": request.arch,
            "target": compiled.target, "label": request.label, "module": request.module,
            "nvrtc": report.nvrtc, "gpu_native": __version__,
            "options": compile_options(request),
        }
        try:
            store.write(identity, compiled.image, compiled.kind, meta)
        except OSError as exc:
            raise GpuNativeError(f"cannot write to {report.out_dir}: {exc.strerror}") from None
        report.artifacts += 1
        if compiled.kind == "ptx":
            report.ptx_fallbacks.append((request.arch, compiled.target))
        if compiled.log:
            report.warnings.append(f"{request.label} ({request.arch}):\n{compiled.log}")
        entry = kernels.setdefault((request.module, job.name, job.types), {
            "module": request.module, "name": job.name, "types": [list(t) for t in job.types],
            "label": request.label, "symbol": request.symbol,
            "file": display_file(request.module, request.module_file or ""),
            "line": job.line, "artifacts": {},
        })
        entry["artifacts"][request.arch] = {"id": identity, "kind": compiled.kind,
                                            "target": compiled.target,
                                            "size": len(compiled.image)}
    report.kernels = len(kernels)
    _write_manifest(report, list(kernels.values()))
    report.seconds = time.perf_counter() - started
    return report


def _write_manifest(report: PrecompileReport, built: list[dict]) -> None:
    path = os.path.join(report.out_dir, MANIFEST)
    old = _load_manifest(path)
    merged: dict[tuple, dict] = {}
    archs = list(report.archs)
    if old is not None:
        for entry in old["kernels"]:
            if isinstance(entry, dict):
                merged[_kernel_id(entry)] = entry
        archs = sorted(set(archs) | {a for a in old.get("archs", []) if isinstance(a, str)})
    for entry in built:
        previous = merged.get(_kernel_id(entry))
        if previous is not None and isinstance(previous.get("artifacts"), dict):
            # Keep the archs built earlier and not rebuilt now.
            entry["artifacts"] = {**previous["artifacts"], **entry["artifacts"]}
        merged[_kernel_id(entry)] = entry
    manifest = {
        "format": MANIFEST_FORMAT,
        "schema": SCHEMA_VERSION,
        "gpu_native": __version__,
        "nvrtc": report.nvrtc,
        "archs": sorted(archs, key=lambda a: parse_arch(a)),
        "kernels": sorted(merged.values(), key=lambda e: (e["module"], e["name"],
                                                           json.dumps(e["types"]))),
    }
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    write_file_atomic(path, text.encode("utf-8"))
