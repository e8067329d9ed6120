"""The per-user cache as a whole: its size, its cap, and ``gpu-native cache clear``.

The cache root (:func:`.locations.cache_root`) holds three folders of ours:

``kernels/``  compiled kernels (:mod:`.store`)
``modules/``  the import hook's rewritten modules, where ``__pycache__`` cannot be used
              (:mod:`gpu_native.importhook.pycache`), and its record of modules without kernels
              (``_gpu_native_startup``)
``nvrtc/``    which NVRTC version each library file is (:mod:`.nvrtc_probe`)

``GPU_NATIVE_CACHE_MAX_BYTES`` caps ``kernels/`` and ``modules/`` together: after each kernel
compiled into the cache, least-recently-used entries of either folder are deleted until both fit
(the version records are a few hundred bytes and are never evicted).  A rewritten module's last
use is the later of its access and modification times, since the import hook does not touch an
entry on a hit; a kernel's is its image's modification time, which a hit refreshes.

Nothing is deleted unless it is ours: its name follows our naming scheme *and* its first bytes
are what we write.  ``GPU_NATIVE_CACHE_DIR=$HOME`` makes these folders ``~/kernels``,
``~/modules`` and ``~/nvrtc``, and whatever else lives there stays.

The names and headers of ``modules/`` are the import hook's; they are spelled out here rather
than imported, because the runtime must not import the hook's transpiler-side modules (a test
pins the two together).
"""

from __future__ import annotations

import os
import re
import stat

from ..nodes import node
from . import locations, nvrtc_probe
from .store import ArtifactStore, evict_oldest, foreign_names, read_head, starts_like, unlink_if

__all__ = ["Cleared", "ModuleCache", "Usage", "clear", "evict", "usage"]

# importhook/pycache.py: user_cache_path() names an entry
#   <module stem>-<20 hex digits of its path's SHA-256>.<cache tag>[.opt-N].gpu_native-<ver>.pyc
# and write() goes through "<entry>.<pid>.<8 hex digits>.tmp".
_ENTRY = r".+-[0-9a-f]{20}\.[^.]+(?:\.opt-[0-9]+)?\.gpu_native-[^/]+\.pyc"
_ENTRY_NAME = re.compile(_ENTRY)
_ENTRY_TEMP = re.compile(_ENTRY + r"\.[0-9]+\.[0-9a-f]{8}\.tmp")
# An entry starts with this Python's bytecode magic (two bytes, then "\r\n") and the hook's tag.
_ENTRY_TAG = b"GNpy"
# _gpu_native_startup.py: the record of modules without kernels, a marshalled dict, written
# through "<record>.<pid>.tmp".
_RECORD = r"no-kernels\.[^.]+\.[0-9a-f]{16}\.marshal"
_RECORD_NAME = re.compile(_RECORD)
_RECORD_TEMP = re.compile(_RECORD + r"\.[0-9]+\.tmp")
_MARSHAL_DICT = (b"{", b"\xfb")  # marshal's dict type code, without and with its reference flag


@node
class Usage:
    """How many entries a folder of the cache holds, and their total size in bytes."""

    entries: int
    size: int


@node
class ModuleEntry:
    """A rewritten module found in ``modules/`` (by name, without reading it)."""

    name: str
    size: int
    last_use: float


@node
class Cleared:
    """What :func:`clear` removed, and the files it left because they are not ours."""

    kernels: Usage
    modules: Usage
    other: int
    """Our other files: records of modules without kernels, NVRTC version records and
    temporary files left by writers that died."""
    records: int
    """Of which NVRTC version records."""
    kept: tuple[str, ...]


def _is_own_entry_head(head: bytes) -> bool:
    return starts_like(head[2:4], b"\r\n") and starts_like(head[4:8], _ENTRY_TAG)


class ModuleCache:
    """The import hook's ``modules/`` folder, seen from the cache's side: sizes, eviction and
    clearing.  The hook itself reads and writes the entries."""

    def __init__(self, directory: str):
        self.directory = directory

    def __repr__(self) -> str:
        return f"ModuleCache({self.directory!r})"

    def is_own_file(self, name: str) -> bool:
        """Whether ``name`` is a rewritten module, a record of modules without kernels, or a
        temporary file of either, by its name and its first bytes."""
        if _ENTRY_NAME.fullmatch(name):
            head = read_head(os.path.join(self.directory, name), 8)
            return head is not None and len(head) == 8 and _is_own_entry_head(head)
        if _ENTRY_TEMP.fullmatch(name):
            head = read_head(os.path.join(self.directory, name), 8)
            return head is not None and _is_own_entry_head(head)
        if _RECORD_NAME.fullmatch(name) or _RECORD_TEMP.fullmatch(name):
            head = read_head(os.path.join(self.directory, name), 1)
            temp = not _RECORD_NAME.fullmatch(name)
            return head is not None and (head in _MARSHAL_DICT or (temp and head == b""))
        return False

    def scan(self, *, own_only: bool = False) -> list[ModuleEntry]:
        """Every rewritten module in the folder, found by name (no file is read unless
        ``own_only``, which counts only the files :meth:`is_own_file` accepts)."""
        try:
            it = os.scandir(self.directory)
        except OSError:
            return []
        found = []
        with it:
            for dirent in it:
                if not _ENTRY_NAME.fullmatch(dirent.name):
                    continue
                try:
                    st = dirent.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and (not own_only or self.is_own_file(dirent.name)):
                    found.append(ModuleEntry(dirent.name, st.st_size,
                                             max(st.st_atime, st.st_mtime)))
        return found

    def foreign_files(self) -> list[str]:
        """Names of the files in the folder that are not ours (kept by :meth:`clear`)."""
        return foreign_names(self.directory, self.is_own_file)

    def remove_own(self, name: str) -> bool:
        """Delete the file ``name`` if it is ours; whether it was deleted."""
        return unlink_if(os.path.join(self.directory, name), lambda _p: self.is_own_file(name))

    def clear(self) -> tuple[Usage, int, list[str]]:
        """Delete every file of ours; returns the rewritten modules removed, how many other
        files of ours were (records of modules without kernels, temporary files), and the
        names of the files kept."""
        try:
            names = sorted(os.listdir(self.directory))
        except OSError:
            return Usage(0, 0), 0, []
        sizes = {e.name: e.size for e in self.scan()}
        count = size = other = 0
        kept = []
        for name in names:
            if self.remove_own(name):
                if name in sizes:
                    count += 1
                    size += sizes[name]
                else:
                    other += 1
            elif os.path.lexists(os.path.join(self.directory, name)):
                kept.append(name)
        return Usage(count, size), other, kept


def modules_cache() -> ModuleCache:
    """The import hook's folder of the per-user cache (``<cache root>/modules``)."""
    return ModuleCache(locations.modules_dir())


def usage(store: ArtifactStore, modules: ModuleCache) -> tuple[Usage, Usage]:
    """(kernels, rewritten modules) held by the per-user cache: files of ours by name and first
    bytes, as :func:`clear` decides (a file of another program's that happens to be named like
    an entry is not counted)."""
    kernels = store.scan(own_only=True)
    rewritten = modules.scan(own_only=True)
    return (Usage(len(kernels), sum(e.size for e in kernels)),
            Usage(len(rewritten), sum(e.size for e in rewritten)))


def evict(store: ArtifactStore, modules: ModuleCache, keep: str | None = None) -> int:
    """Fit ``kernels/`` and ``modules/`` together under the store's cap by deleting the
    least-recently-used entries of either (never the kernel ``keep``); returns how many."""
    if store.max_bytes is None or store.read_only:
        return 0
    entries = [(e.mtime, e.size, e.key != keep, lambda k=e.key: store.remove_own(k))
               for e in store.scan(remove_stale_temps=True)]
    entries += [(e.last_use, e.size, True, lambda n=e.name: modules.remove_own(n))
                for e in modules.scan()]
    return evict_oldest(entries, store.max_bytes)


def clear(store: ArtifactStore, modules: ModuleCache, records_dir: str) -> Cleared:
    """Delete every file of ours from the three folders (``gpu-native cache clear``)."""
    count, size, temps = store.clear()
    cleared_modules, other, kept_modules = modules.clear()
    records = nvrtc_probe.clear_records(records_dir)
    kept = [os.path.join(store.directory, n) for n in store.foreign_files()]
    kept += [os.path.join(modules.directory, n) for n in kept_modules]
    kept += [os.path.join(records_dir, n) for n in nvrtc_probe.foreign_records(records_dir)]
    return Cleared(Usage(count, size), cleared_modules, temps + other + records, records,
                   tuple(kept))
