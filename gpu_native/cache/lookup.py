"""Find a compiled kernel, or build it: the one function the runtime calls.

Search order (first hit wins):

1. this process's memory;
2. precompiled directories: ``GPU_NATIVE_PRECOMPILED``, then ``__gpu_native__`` beside the
   kernel's module (see :mod:`.locations`), indexed by the compiler-independent artifact id;
3. with ``GPU_NATIVE_REQUIRE_PRECOMPILED=1``: stop, raise :class:`MissingArtifactError`;
4. the per-user cache, keyed by artifact id and NVRTC version;
5. compile with NVRTC and store in the per-user cache.

Steps 1–4 never import NVRTC, libcst or :mod:`gpu_native.compiler`.

An entry the driver cannot load is passed over (:func:`gpu_native.toolkit.unloadable_reason`,
given the request's ``driver_version``): a precompiled one built by NVRTC 13 on a machine whose
driver is CUDA 12 (a :class:`CacheWarning`, or with ``GPU_NATIVE_REQUIRE_PRECOMPILED=1`` a
:class:`MissingArtifactError` that says why), a cached one that is PTX newer than the driver (a
cache shared by machines with different drivers).  Compiling then either produces loadable code
or raises :class:`~gpu_native.errors.CudaVersionError` naming the versions and the fix.

An entry this process may not read (a deployment copied with another account's private modes, a
file left in the cache by ``sudo``) is passed over like a corrupt one: a :class:`CacheWarning`
naming the file, then the next place; with ``GPU_NATIVE_REQUIRE_PRECOMPILED=1`` the
:class:`MissingArtifactError` names the unreadable file.  ``gpu-native doctor`` lists them.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Sequence

import _gpu_native_startup as _startup

from .. import log, toolkit
from .._version import __version__
from ..build import BuildRequest, parse_arch
from ..errors import MissingArtifactError
from ..nodes import node, replace
from . import housekeeping, locations, nvrtc_probe, prefetch
from .keys import artifact_id, cache_key, compile_options
from .locations import CacheWarning
from .store import ArtifactStore, CorruptEntryError, StoredEntry, UnreadableEntryError

__all__ = ["Artifact", "clear_memory_cache", "find_or_build", "user_store"]


@node
class Artifact:
    """A compiled kernel image ready for ``cuModuleLoadData``.

    ``kind`` is ``"cubin"``, or ``"ptx"`` (NUL-terminated text) when the GPU is newer than NVRTC.
    ``key`` is the per-user cache key, or the artifact id for a precompiled artifact.  ``origin``
    says where it came from: ``"memory"``, ``"precompiled"``, ``"cache"`` or ``"compiled"``.
    """

    image: bytes
    kind: str
    arch: str
    key: str
    origin: str


_memory: dict[tuple, Artifact] = {}
_locks: dict[tuple, threading.Lock] = {}
_locks_guard = threading.Lock()
_stores: dict[str, ArtifactStore] = {}
_shipped: dict[str, ArtifactStore] = {}
_degraded: set[str] = set()
# Directories already warned about for an unreadable entry: one warning each per process.
_unreadable_warned: set[str] = set()
# Precompiled directories already warned about for an entry the driver cannot load.
_unloadable_warned: set[str] = set()


def _memory_key(request: BuildRequest) -> tuple:
    return (request.source, request.symbol, request.arch, bool(request.fastmath),
            request.max_registers, bool(request.uses_half), bool(request.uses_grid_sync))


def clear_memory_cache() -> None:
    """Forget every artifact this process has looked up (tests, benchmarks)."""
    with _locks_guard:
        _memory.clear()
        _locks.clear()
        _stores.clear()
        _shipped.clear()
        _degraded.clear()
        _unreadable_warned.clear()
        _unloadable_warned.clear()
    nvrtc_probe.forget()


def user_store() -> ArtifactStore:
    """The per-user cache of compiled kernels (``<cache root>/kernels``)."""
    directory = locations.kernels_dir()
    store = _stores.get(directory)
    if store is None:
        store = _stores[directory] = ArtifactStore(directory,
                                                   max_bytes=locations.max_cache_bytes())
    return store


def _precompiled_store(directory: str) -> ArtifactStore:
    store = _shipped.get(directory)
    if store is None:
        store = _shipped[directory] = ArtifactStore(directory, read_only=True)
    return store


def _warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=5)


def _warn_corrupt(request: BuildRequest, exc: CorruptEntryError, action: str) -> None:
    label = request.label or request.symbol
    _warn(f"gpu_native: the cached {request.arch} artifact of kernel {label} is corrupt "
          f"({exc.reason}: {exc.path}); {action}")


def _warn_unreadable(request: BuildRequest, exc: UnreadableEntryError, what: str,
                     action: str) -> None:
    directory = os.path.dirname(exc.path)
    if directory in _unreadable_warned:
        return
    _unreadable_warned.add(directory)
    label = request.label or request.symbol
    _warn(f"gpu_native: cannot read the {what} {request.arch} artifact of kernel {label}: "
          f"{exc.path} ({exc.reason}); {action}. Other files in {directory} may be unreadable "
          "too, and are not warned about again: `gpu-native doctor` lists them.")


def _warn_unwritable(store: ArtifactStore, exc: OSError) -> None:
    if store.directory in _degraded:
        return
    _degraded.add(store.directory)
    reason = exc.strerror or type(exc).__name__
    _warn(f"gpu_native: cannot write the kernel cache at {store.directory} ({reason}); compiled "
          "kernels are kept in memory for this process only. Set GPU_NATIVE_CACHE_DIR to a "
          "writable directory to keep them.")


def _trusted(store: ArtifactStore) -> bool:
    """Can this process trust what is in the user cache?  Not if someone else owns its directory
    or the cache root above it, or can write into either: they could plant an entry whose hash
    matches, or put a folder of their own (or a link) in the directory's place.  Such a cache is
    not read or written, nor are its NVRTC records (one warning; compiled kernels stay in
    memory)."""
    if store.directory in _degraded:
        return False
    found = _startup.untrusted_folder(store.directory)
    if found is None:
        return True  # private, or not made yet: it will be made private
    _degraded.add(store.directory)
    where, why = found
    what = "kernel cache" if where == store.directory else \
        "cache directory holding the kernel cache"
    _warn(f"gpu_native: the {what} at {where} {why}, so its entries cannot be trusted; compiled "
          "kernels are kept in memory for this process only. Make it private (chmod 700) or "
          "set GPU_NATIVE_CACHE_DIR.")
    return False


def _unloadable(entry: StoredEntry, driver: tuple[int, int] | None) -> str | None:
    """Why the driver cannot load ``entry`` (from the NVRTC version its sidecar records), or
    ``None``.  An entry that does not say which NVRTC built it is trusted (the key says it for the
    user cache)."""
    if driver is None:
        return None
    try:
        built_by = toolkit.parse_version(entry.meta.get("nvrtc", ""))
    except ValueError:
        return None
    return toolkit.unloadable_reason(entry.meta.get("kind", ""), built_by, driver)


def _warn_unloadable(request: BuildRequest, directory: str, reason: str) -> None:
    if directory in _unloadable_warned:
        return
    _unloadable_warned.add(directory)
    label = request.label or request.symbol
    _warn(f"gpu_native: the precompiled {request.arch} artifact of kernel {label} in {directory} "
          f"cannot be loaded by this machine's driver: {reason}; compiling it instead. Rebuild "
          f"{directory} with the CUDA major of the driver (see `gpu-native doctor`). Other "
          "artifacts there are not warned about again.")


def _artifact(entry: StoredEntry, request: BuildRequest, origin: str) -> Artifact:
    return Artifact(entry.image, entry.meta["kind"], request.arch, entry.key, origin)


def _missing(request: BuildRequest, searched: tuple[str, ...],
             unreadable: list[UnreadableEntryError],
             unloadable: Sequence[tuple[str, str]] = ()) -> MissingArtifactError:
    import shlex

    label = request.label or request.symbol
    if unloadable:
        directory, reason = unloadable[0]
        return MissingArtifactError(
            f"the precompiled {request.arch} artifact of kernel {label} in {directory} cannot be "
            f"loaded by this machine's driver: {reason}; and GPU_NATIVE_REQUIRE_PRECOMPILED=1 "
            "forbids compiling it here. Rebuild the directory with gpu-native precompile using "
            "an NVRTC of the driver's CUDA major (`gpu-native doctor` shows both), or upgrade "
            "the driver.")
    if unreadable:
        exc = unreadable[0]
        directory = shlex.quote(os.path.dirname(exc.path))
        return MissingArtifactError(
            f"the precompiled {request.arch} artifact of kernel {label} cannot be read: "
            f"{exc.path} ({exc.reason}), and GPU_NATIVE_REQUIRE_PRECOMPILED=1 forbids compiling "
            f"it here. Make the directory readable by this account (chmod -R a+rX {directory}), "
            "or rebuild it with gpu-native precompile under a umask such as 022; "
            "`gpu-native doctor` lists every file there that this account cannot read.")
    if request.module and request.module != "__main__":
        target = request.module
    elif request.module_file:
        target = shlex.quote(request.module_file)
    else:
        target = "PKG_OR_PATH"
    out = shlex.quote(locations.suggested_out_dir(request.module_file))
    where = ("Searched " + ", ".join(searched) if searched else
             "No precompiled directory was found: set GPU_NATIVE_PRECOMPILED, or ship "
             f"{locations.SHIPPED_DIRNAME}/ beside the module")
    return MissingArtifactError(
        f"no precompiled {request.arch} artifact for kernel {label}, and "
        f"GPU_NATIVE_REQUIRE_PRECOMPILED=1 forbids compiling it here. {where}. Build it with: "
        f"gpu-native precompile {target} --arch {request.arch} --out {out}")


def _lock_for(memo: tuple) -> threading.Lock:
    with _locks_guard:
        lock = _locks.get(memo)
        if lock is None:
            lock = _locks[memo] = threading.Lock()
        return lock


def find_or_build(request: BuildRequest) -> Artifact:
    """The compiled image of ``request``: from memory, a precompiled directory, the user cache,
    or NVRTC (stored in the user cache for the next process).

    Raises
    ------
    MissingArtifactError
        ``GPU_NATIVE_REQUIRE_PRECOMPILED=1`` and no precompiled directory has the artifact.
    CompileError
        NVRTC rejected the source; the message holds its log, which names Python lines.
    ValueError
        ``request.arch`` is not a name like ``"sm_90"``.
    """
    memo = _memory_key(request)
    hit = _memory.get(memo)
    if hit is not None:
        return hit
    parse_arch(request.arch)
    with _lock_for(memo):
        hit = _memory.get(memo)
        if hit is not None:
            return hit
        artifact = _find_or_build(request)
        _memory[memo] = replace(artifact, origin="memory")
        return artifact


def _find_or_build(request: BuildRequest) -> Artifact:
    identity = artifact_id(request)
    searched = locations.precompiled_dirs(request.module_file)
    required = locations.require_precompiled()
    driver = (toolkit.version_from_driver(request.driver_version)
              if request.driver_version is not None else None)
    unreadable: list[UnreadableEntryError] = []
    unloadable: list[tuple[str, str]] = []
    for directory in searched:
        try:
            entry = _precompiled_store(directory).get(identity)
        except CorruptEntryError as exc:
            _warn_corrupt(request, exc, "ignoring it")
            continue
        except UnreadableEntryError as exc:
            unreadable.append(exc)
            continue
        if entry is not None:
            reason = _unloadable(entry, driver)
            if reason is None:
                log.debug("kernel %s for %s: precompiled, from %s", request.label or
                          request.symbol, request.arch, directory)
                return _artifact(entry, request, "precompiled")
            unloadable.append((directory, reason))
    if required:
        raise _missing(request, searched, unreadable, unloadable)
    for unread in unreadable:
        _warn_unreadable(request, unread, "precompiled", "compiling it instead")
    for directory, reason in unloadable:
        _warn_unloadable(request, directory, reason)

    store = user_store()
    trusted = _trusted(store)
    version = nvrtc_probe.version_for_keys(locations.nvrtc_records_dir() if trusted else None)
    key = cache_key(identity, version)
    entry = None
    if trusted:
        try:
            entry = store.get(key)
        except CorruptEntryError as exc:
            _warn_corrupt(request, exc, "recompiling it")
            store.remove(key)
            entry = None
        except UnreadableEntryError as exc:
            # Compiled anew, the entry is replaced by one of ours (the directory is ours).
            _warn_unreadable(request, exc, "cached", "recompiling it")
            entry = None
    label = request.label or request.symbol
    if entry is not None and _unloadable(entry, driver) is None:
        log.debug("kernel %s for %s: found in the kernel cache %s", label, request.arch,
                  store.directory)
        return _artifact(entry, request, "cache")

    log.debug("kernel %s for %s: in no cache, compiling it with NVRTC", label, request.arch)
    started = time.perf_counter()
    prefetch.wait_warm()  # NVRTC is being loaded on another thread: let it finish
    from ..compiler import compile_request

    compiled = compile_request(request)
    # The progress of a cold start, one line per kernel as its compile finishes (what
    # `gpu-native precompile` shows on stderr), for an application that logs INFO.
    log.info("compiled kernel %s for %s in %.2f s", label, request.arch,
             time.perf_counter() - started)
    if compiled.nvrtc and compiled.nvrtc != version:
        # The record named another NVRTC than the one that compiled (one loaded into the process
        # by another library first): file the kernel under the compiler it really came from.
        version = compiled.nvrtc
        nvrtc_probe.remember(version)
        key = cache_key(identity, version)
    if store.directory not in _degraded:
        meta = {
            "artifact": identity, "symbol": request.symbol, "arch": request.arch,
            "target": compiled.target, "label": request.label, "module": request.module,
            "nvrtc": version, "bindings": toolkit.bindings_version(), "gpu_native": __version__,
            "options": compile_options(request), "created": time.time(), "pid": os.getpid(),
        }
        try:
            store.write(key, compiled.image, compiled.kind, meta)
        except OSError as exc:
            _warn_unwritable(store, exc)
        else:
            housekeeping.evict(store, housekeeping.modules_cache(), keep=key)
    return Artifact(compiled.image, compiled.kind, request.arch, key, "compiled")
