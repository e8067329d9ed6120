"""Ahead-of-time builds: every kernel of some packages, for some archs, into a directory.

The output directory is an :class:`~gpu_native.cache.ArtifactStore` indexed by artifact id (which
does not depend on the NVRTC version, so a deployment finds its artifacts without NVRTC) plus a
``manifest.json``.  Point ``GPU_NATIVE_PRECOMPILED`` at it, or write it to ``mypkg/__gpu_native__``
and ship it inside the package.

A build is all or nothing: it is compiled into a staging directory beside the output directory and
moved into it only when every job succeeded; the first compile error stops it (naming the kernel's
file:line) and leaves the output directory as it was.  A ``manifest.json`` there that this command
did not write is refused before anything is built, and so is an existing directory that holds
files but no manifest: a build writes into a new or empty directory or its own earlier output.  The output gets the modes the umask gives,
not the per-user cache's private 0o700/0o600, since a deployment is often built by one account
(a Docker build, a CI job) and run by another.

Nothing here imports or executes the user's modules: they are found on ``sys.path`` by file name,
picked by a byte search for ``gpu_kernel``, and transpiled from their source.

This is the library behind ``gpu-native precompile`` (:mod:`gpu_native.commands.precompile`).  It
transpiles and it calls NVRTC, so it sits above both the transpiler and :mod:`gpu_native.compiler`
(which is NVRTC only); nothing the runtime imports reaches it (``docs/architecture.md``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

from ._version import __version__
from .build import BuildRequest, arch_refusal, kernel_label, parse_arch, uses_wgmma
from .cache.keys import SCHEMA_VERSION, artifact_id, compile_options
from .cache.locations import SHIPPED_DIRNAME
from .cache.store import SIDECAR_SUFFIX, ArtifactStore, write_file_atomic
from .compiler.nvrtc import CompiledImage, compile_request, nvrtc_version
from .errors import CompileError, GpuNativeError
from .files import read_regular

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
    # Kernels left out of an arch whose GPUs cannot run them, and why (see plan()).
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # Files this build and earlier ones wrote to out_dir (those its manifest lists), and out_dir
    # itself, that other accounts cannot read though the umask would let them.
    private_files: list[str] = field(default_factory=list)
    # Whether out_dir holds only files its manifest lists (a recursive chmod touches no other).
    only_own_files: bool = True

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
    from .frontend.parse import module_name_for_path

    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            if os.path.islink(path) and not os.path.exists(path):
                continue  # a dangling link is no module: the walk passes it by (a FIFO is
                #           refused where it is read, as a file given by name is)
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
    from .frontend.parse import module_name_for_path
    from .frontend.source import read_source_bytes

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
    from .rewrite import display_file as shown

    return shown(module, path)


def plan(modules: Sequence[SourceModule], archs: Sequence[str],
         skipped: list[str] | None = None) -> list[Job]:
    """Transpile ``modules`` and list one job per kernel specialisation and arch.  A kernel is
    not built for an arch its GPUs cannot run (warpgroup MMA off sm_90, ``cp_async`` before
    sm_80 ...): ``skipped`` (when given) receives one line per such kernel saying why."""
    from .frontend.source import read_source
    from .rewrite import transpile_module

    jobs = []
    for module in modules:
        source = read_source(module.path)  # decoded as `import` decodes it (coding cookie)
        transpiled = transpile_module(source, module.path, module.name)
        if skipped is not None:
            skipped += [f"{module.name}.{name} (line {line}) was not built: a kernel defined "
                        "inside a function is built when the function runs, from the values "
                        "it captures; define it at module level to precompile it"
                        for name, line in transpiled.scan.deferred]
        for kernel in transpiled.kernels:
            for variant in kernel.variants:
                label = kernel_label(kernel.module, kernel.name, variant.types)
                left_out = []
                for arch in archs:
                    if uses_wgmma(variant) and parse_arch(arch)[0] != 90:
                        left_out.append(arch)  # sm_90a code, which runs on sm_90 devices only
                        continue
                    if arch_refusal(variant, arch) is not None:
                        left_out.append(arch)
                        continue
                    request = BuildRequest.for_variant(kernel, variant, arch, module.path)
                    jobs.append(Job(request, kernel.name, variant.types, kernel.line))
                if left_out and skipped is not None:
                    why = ("it uses warpgroup MMA, which is built for sm_90 only"
                           if uses_wgmma(variant) else
                           f"it uses {variant.arch_use}, which needs sm_{variant.min_arch} "
                           "or newer")
                    skipped.append(f"{label} was not built for {', '.join(left_out)}: {why}")
    return jobs


# ---- building -------------------------------------------------------------------------------


def _compile(request: BuildRequest) -> CompiledImage | CompileError:
    # In a worker process: return the error rather than raise it, so its log survives pickling.
    try:
        return compile_request(request)
    except CompileError as exc:
        return exc


def _shown_path(path: str) -> str:
    """``path`` relative to the current directory when it lies inside it (as a user typed it)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.startswith(os.pardir) else relative


def _failed(job: Job, exc: CompileError, done: int, total: int) -> CompileError:
    """The error for the first job that failed: where the kernel is, how far the build got."""
    request = job.request
    where = f"{_shown_path(request.module_file)}:{job.line}" if request.module_file else "<source>"
    error = CompileError(
        f"{where}: kernel {request.label or request.symbol} could not be compiled for "
        f"{request.arch}; precompile stopped at this first error ({done} of {total} "
        f"compilations had finished) and wrote nothing.\n{exc}")
    error.log = exc.log
    return error


def _results(jobs: Sequence[Job], workers: int,
             progress: Callable[[int, int, Job], None] | None):
    """Yield (job, CompiledImage) as compilations finish, in parallel processes when it pays.

    The first compile error stops the build: it is raised at once (as :func:`_failed` words it)
    and the jobs not yet started are cancelled.
    """
    total = len(jobs)
    if workers <= 1 or total <= 1:
        for done, job in enumerate(jobs, 1):
            result = _compile(job.request)
            if isinstance(result, CompileError):
                raise _failed(job, result, done - 1, total)
            if progress:
                progress(done, total, job)
            yield job, result
        return
    # spawn, not fork: forking a process that may have threads (or NVRTC loaded) is unsafe.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, total), mp_context=context)
    try:
        pending = {pool.submit(_compile, job.request): job for job in jobs}
        done_count = 0
        while pending:
            # Each job as it finishes: progress moves, and an error is seen while others wait.
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                job = pending.pop(future)
                result = future.result()
                if isinstance(result, CompileError):
                    raise _failed(job, result, done_count, total)
                done_count += 1
                if progress:
                    progress(done_count, total, job)
                yield job, result
    except BaseException:
        # Queued jobs are cancelled; the compiles already running (one per worker) are not
        # waited for here.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# ---- the output directory -------------------------------------------------------------------


def _existing_manifest(out_dir: str) -> dict | None:
    """The manifest already in ``out_dir``, or None when there is none.

    Raises :class:`GpuNativeError` when ``out_dir`` is not a directory, or holds a
    ``manifest.json`` that ``gpu-native precompile`` did not write: that file is someone else's,
    and ``--out`` must not overwrite it.
    """
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise GpuNativeError(f"--out {out_dir} exists and is not a directory")
    path = os.path.join(out_dir, MANIFEST)
    try:
        raw = read_regular(path)  # a FIFO in its place is refused, never waited on
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise GpuNativeError(f"cannot read {path}: {exc.strerror}") from None
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise GpuNativeError(
            f"{path} was not written by gpu-native precompile (it has no \"format\": "
            f"\"{MANIFEST_FORMAT}\"), so --out {out_dir} is not a directory of precompiled "
            "kernels; refusing to overwrite it. Choose another --out directory.")
    return manifest


def _check_out(out_dir: str) -> dict | None:
    """:func:`_existing_manifest`, and a refusal of an existing directory that holds files but no
    manifest: it is someone else's (a home directory, ``/``, a source tree), and a build must
    neither scatter artifacts among its files nor speak of them as its own."""
    manifest = _existing_manifest(out_dir)
    if manifest is None and os.path.isdir(out_dir):
        try:
            names = sorted(os.listdir(out_dir))
        except OSError as exc:
            raise GpuNativeError(f"cannot list --out {out_dir}: {exc.strerror}") from None
        if names:
            shown = ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")
            raise GpuNativeError(
                f"--out {out_dir} already holds files ({shown}) and no {MANIFEST} of gpu-native "
                "precompile, so it is not a directory of precompiled kernels; refusing to write "
                "into it. Choose a new or empty --out directory.")
    return manifest


def _own_names(manifest: dict) -> set[str]:
    """The file names in an output directory that a build wrote: the manifest, and the image
    and sidecar of every artifact it lists."""
    names = {MANIFEST}
    for entry in manifest.get("kernels", ()):
        artifacts = entry.get("artifacts") if isinstance(entry, dict) else None
        for artifact in (artifacts.values() if isinstance(artifacts, dict) else ()):
            if isinstance(artifact, dict) and isinstance(artifact.get("id"), str):
                names.add(artifact["id"] + SIDECAR_SUFFIX)
                if isinstance(artifact.get("kind"), str):
                    names.add(f"{artifact['id']}.{artifact['kind']}")
    return names


def _mergeable(manifest: dict | None) -> dict | None:
    """``manifest`` when its kernels can be kept beside the new ones (same schema and version)."""
    if (manifest is not None and manifest.get("schema") == SCHEMA_VERSION
            and manifest.get("gpu_native") == __version__
            and isinstance(manifest.get("kernels"), list)):
        return manifest
    return None


def _make_staging(out_dir: str) -> tuple[str, list[str]]:
    """A new empty directory beside ``out_dir`` (so that it can be renamed onto it), created with
    the umask's mode, and the parent directories created for it."""
    parent = os.path.dirname(out_dir)
    created = []
    missing = parent
    while missing and not os.path.isdir(missing):
        if os.path.lexists(missing):  # a file (or /dev/null) where a directory must be
            raise GpuNativeError(f"cannot write to {out_dir}: {missing} exists and is not a "
                                 "directory")
        created.append(missing)
        missing = os.path.dirname(missing)
    try:
        for directory in reversed(created):
            os.mkdir(directory)
        while True:
            staging = os.path.join(parent, f".{os.path.basename(out_dir)}.staging-"
                                           f"{os.getpid()}-{os.urandom(4).hex()}")
            try:
                os.mkdir(staging)  # 0o777 less the umask: what the deployment will have
                return staging, created
            except FileExistsError:
                continue
    except OSError as exc:
        _discard(None, created)
        raise GpuNativeError(f"cannot write to {parent}: {exc.strerror}") from None


def _discard(staging: str | None, created: list[str]) -> None:
    """Undo :func:`_make_staging` after a failed build."""
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    for directory in created:  # innermost first
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _commit(staging: str, out_dir: str, own: set[str]) -> tuple[list[str], bool]:
    """Move a finished build into ``out_dir``.  Returns the files named in ``own`` (what the
    manifest lists), and ``out_dir`` itself, that other accounts cannot read although this umask
    would let them (left private by an earlier build); and whether ``out_dir`` holds nothing
    else, so that a recursive ``chmod`` of it touches only what gpu_native wrote.

    A new ``out_dir`` appears at once (one rename).  Into an existing one the files move one by
    one, each with an atomic ``os.replace``: images, then sidecars, then the manifest, so that a
    reader never finds a sidecar without its image, and the manifest lists only what is there.
    Files already in ``out_dir`` stay (artifacts of other archs, which the manifest still lists).
    """
    shared = stat.S_IMODE(os.stat(staging).st_mode)
    try:
        os.rename(staging, out_dir)
        return [], True
    except OSError:
        if not os.path.isdir(out_dir):
            raise
    names = sorted(os.listdir(staging), key=lambda n: (n == MANIFEST, n.endswith(".json"), n))
    for name in names:
        _move_into(os.path.join(staging, name), os.path.join(out_dir, name))
    os.rmdir(staging)
    # The bits for group and others that this umask grants (read, and search for directories).
    wanted = shared & 0o055
    private = []
    present = sorted(os.listdir(out_dir))
    for path in [out_dir, *(os.path.join(out_dir, n) for n in present if n in own)]:
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            need = wanted if stat.S_ISDIR(st.st_mode) else wanted & 0o044
            if need & ~st.st_mode:
                private.append(path)
    return private, all(n in own for n in present)


def _move_into(source: str, target: str) -> None:
    """``os.replace``, or where ``target`` is on another file system (``out_dir`` is a mount
    point, say) a copy to a temporary name there and an ``os.replace`` of that."""
    try:
        os.replace(source, target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    with open(source, "rb") as f:
        data = f.read()
    write_file_atomic(target, data, 0o666)
    os.unlink(source)


def precompile(targets: Sequence[str], archs: Sequence[str], out_dir: str, *,
               jobs: int | None = None,
               progress: Callable[[int, int, Job], None] | None = None) -> PrecompileReport:
    """Build every kernel (and every specialisation a generic kernel declares) found in
    ``targets`` for every arch in ``archs``, into ``out_dir`` with a ``manifest.json``.

    Needs no GPU.  Compiles in ``jobs`` processes (default: one per CPU).  ``out_dir`` is a new
    or empty directory, or one an earlier build wrote (its manifest is there).  The build goes into a
    directory beside ``out_dir`` and moves into it only when every kernel compiled: the first
    error stops the build and leaves ``out_dir`` as it was.  A manifest already in ``out_dir``
    from the same gpu_native version is merged: kernels built now replace their old entries,
    others stay.  Files and directories get the modes the umask gives (other accounts may have
    to read a deployment), unlike the per-user cache, which is private.

    Raises
    ------
    GpuNativeError
        Bad arguments (an empty ``out_dir``), no kernels, an ``out_dir`` that holds a
        ``manifest.json`` of something else or files but no manifest (nothing is compiled or
        written then), or an unwritable ``out_dir``.
    CompileError
        A kernel did not compile; the message starts with its file:line.
    """
    started = time.perf_counter()
    archs = parse_archs(archs)
    if not out_dir:  # abspath("") is the current directory, which nobody asked for
        raise GpuNativeError("--out is empty: give the directory to build into (e.g. "
                             "--out mypkg/__gpu_native__)")
    out = os.path.abspath(out_dir)
    if os.path.islink(out):  # build beside the directory it names, on its file system
        out = os.path.realpath(out)
    _check_out(out)
    major, minor = nvrtc_version()
    report = PrecompileReport(out, archs, f"{major}.{minor}")
    modules = find_modules(targets)
    if not modules:
        raise GpuNativeError("no kernels found in " + ", ".join(targets)
                             + " (no module there mentions gpu_kernel)")
    skipped: list[str] = []
    work = plan(modules, archs, skipped)
    if not work and skipped:
        raise GpuNativeError("nothing to build for " + ", ".join(archs) + ": "
                             + "; ".join(skipped))
    report.skipped = skipped
    if not work:
        one = len(modules) == 1
        names = ", ".join(os.path.relpath(m.path) for m in modules[:3])
        raise GpuNativeError(f"no kernels found in {', '.join(targets)}: {names}"
                             f"{' ...' if len(modules) > 3 else ''} mention{'s' * one} "
                             f"gpu_kernel but define{'s' * one} no @gpu_kernel function")
    report.modules = len(modules)
    staging, created = _make_staging(out)
    try:
        kernels = _build(work, ArtifactStore(staging, private=False), report, jobs, progress)
        report.kernels = len(kernels)
        manifest = _write_manifest(report, staging, _mergeable(_check_out(out)), kernels)
        try:
            report.private_files, report.only_own_files = _commit(staging, out,
                                                                  _own_names(manifest))
        except OSError as exc:
            raise GpuNativeError(f"cannot move the build into {out}: {exc.strerror}") from None
    except BaseException:
        _discard(staging, created)
        raise
    report.seconds = time.perf_counter() - started
    return report


def _build(work: Sequence[Job], store: ArtifactStore, report: PrecompileReport,
           jobs: int | None, progress: Callable[[int, int, Job], None] | None) -> list[dict]:
    """Compile every job into ``store``; the manifest entries of the kernels built."""
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
            raise GpuNativeError(f"cannot write beside {report.out_dir}: {exc.strerror}") from None
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
    return list(kernels.values())


def _kernel_id(entry: dict) -> tuple:
    return entry.get("module"), entry.get("name"), json.dumps(entry.get("types"))


def _write_manifest(report: PrecompileReport, directory: str, old: dict | None,
                    built: list[dict]) -> dict:
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
    write_file_atomic(os.path.join(directory, MANIFEST), text.encode("utf-8"), 0o666)
    return manifest
