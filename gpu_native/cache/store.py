"""A directory of compiled kernels: one image file and one JSON sidecar per entry.

Layout of a store directory::

    <key>.cubin   (or <key>.ptx)   the image, exactly as NVRTC produced it
    <key>.json                     the sidecar: what the image is, and its SHA-256 and size

``key`` is a 64-digit hex digest (see :mod:`.keys`), checked before it is joined to the directory,
so no key can name a file outside it.  Nothing is ever unpickled: the sidecar is JSON.

Concurrency.  Every file is written under a temporary name in the same directory and moved into
place with :func:`os.replace`, so a reader sees either no file or a complete one.  The image is
moved in before its sidecar, and a reader opens the sidecar first and then the image, checking the
image's size and hash against the sidecar: there is no "exists, then read" step to race with.
Writers of one key write the same bytes (NVRTC is deterministic), and a reader that catches a
sidecar and an image from two different writers looks once more before calling the entry corrupt.

Eviction is least-recently-used by modification time: a hit refreshes the image's mtime.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time

from ..nodes import node
from .keys import SCHEMA_VERSION, is_valid_key

KINDS = ("cubin", "ptx")
SIDECAR_SUFFIX = ".json"
TEMP_SUFFIX = ".tmp"
# A sidecar is a few hundred bytes; refuse to parse anything absurd.
_MAX_SIDECAR_BYTES = 64 * 1024
# Temporary files older than this were left by a process that died mid-write.
_STALE_TEMP_SECONDS = 3600.0
# Eviction frees down to this fraction of the cap, so it does not run again on the next write.
_EVICT_TO = 0.9


class CorruptEntryError(Exception):
    """An entry's sidecar is unreadable or its image does not match the sidecar's hash or size."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@node
class StoredEntry:
    """An entry read back from a store, already verified against its sidecar."""

    key: str
    image: bytes
    meta: dict


@node
class EntryInfo:
    """An entry found by :meth:`ArtifactStore.scan` (without reading it)."""

    key: str
    size: int
    mtime: float


def image_sha256(image: bytes) -> str:
    return hashlib.sha256(image).hexdigest()


def make_private_dirs(path: str) -> None:
    """``os.makedirs`` that creates every missing level with mode 0o700 (not just the last)."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != path:
        make_private_dirs(parent)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)


def write_file_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, readable by the
    user only, so that no reader ever sees a partial file."""
    directory, name = os.path.split(path)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(temp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _check_meta(meta: object, key: str, path: str) -> dict:
    if not isinstance(meta, dict):
        raise CorruptEntryError(path, "the sidecar is not a JSON object")
    kind, sha, size = meta.get("kind"), meta.get("sha256"), meta.get("size")
    if meta.get("key") != key:
        raise CorruptEntryError(path, "the sidecar names another key")
    if kind not in KINDS:
        raise CorruptEntryError(path, f"the sidecar has an unknown image kind {kind!r}")
    if not is_valid_key(sha) or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise CorruptEntryError(path, "the sidecar lacks a valid sha256 and size")
    return meta


class ArtifactStore:
    """Compiled kernels in one directory.

    Parameters
    ----------
    directory
        Where the entries live; created (mode 0o700) on the first write.
    max_bytes
        Size cap for :meth:`put`; least-recently-used entries are evicted past it.  ``None``
        means no cap (precompiled directories).
    read_only
        Never write, touch or evict (precompiled directories shipped with a package).
    """

    def __init__(self, directory: str, *, max_bytes: int | None = None, read_only: bool = False):
        self.directory = directory
        self.max_bytes = max_bytes
        self.read_only = read_only

    def __repr__(self) -> str:
        return f"ArtifactStore({self.directory!r})"

    # ---- paths ------------------------------------------------------------------------------

    def _path(self, key: str, suffix: str) -> str:
        if not is_valid_key(key):
            raise ValueError(f"invalid cache key {key!r}: expected 64 hex digits")
        return os.path.join(self.directory, key + suffix)

    def sidecar_path(self, key: str) -> str:
        return self._path(key, SIDECAR_SUFFIX)

    def image_path(self, key: str, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"invalid image kind {kind!r}")
        return self._path(key, "." + kind)

    # ---- reading ----------------------------------------------------------------------------

    def get(self, key: str) -> StoredEntry | None:
        """The verified entry for ``key``, or ``None`` when there is none.

        Raises :class:`CorruptEntryError` when the entry exists but does not verify.
        """
        try:
            return self._read(key)
        except CorruptEntryError:
            # A writer may have replaced the sidecar between our two reads; look once more.
            return self._read(key)

    def _read(self, key: str) -> StoredEntry | None:
        meta_path = self.sidecar_path(key)
        try:
            with open(meta_path, "rb") as f:
                raw = f.read(_MAX_SIDECAR_BYTES + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if len(raw) > _MAX_SIDECAR_BYTES:
            raise CorruptEntryError(meta_path, "the sidecar is too large")
        try:
            meta = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise CorruptEntryError(meta_path, "the sidecar is not valid JSON") from None
        meta = _check_meta(meta, key, meta_path)
        image_path = self.image_path(key, meta["kind"])
        try:
            with open(image_path, "rb") as f:
                image = f.read()
        except FileNotFoundError:
            # Evicted (or never completed) between the two reads: a plain miss.
            return None
        if len(image) != meta["size"]:
            raise CorruptEntryError(
                image_path, f"the image has {len(image)} bytes, its sidecar says {meta['size']} "
                "(truncated?)")
        if image_sha256(image) != meta["sha256"]:
            raise CorruptEntryError(image_path, "the image does not match its SHA-256")
        if not self.read_only:
            # Refresh the entry for least-recently-used eviction; harmless if it fails.
            with contextlib.suppress(OSError):
                os.utime(image_path)
        return StoredEntry(key, image, meta)

    # ---- writing ----------------------------------------------------------------------------

    def write(self, key: str, image: bytes, kind: str, meta: dict) -> dict:
        """Store an entry, raising ``OSError`` when the directory cannot be written.

        ``meta`` is completed with the fields every sidecar has (key, kind, hash, size, schema);
        the full sidecar is returned.
        """
        if self.read_only:
            raise PermissionError(f"{self.directory} is a read-only artifact store")
        sidecar = dict(meta)
        sidecar.update(schema=SCHEMA_VERSION, key=key, kind=kind, sha256=image_sha256(image),
                       size=len(image))
        image_path = self.image_path(key, kind)
        make_private_dirs(self.directory)
        write_file_atomic(image_path, image)
        text = json.dumps(sidecar, indent=1, sort_keys=True) + "\n"
        write_file_atomic(self.sidecar_path(key), text.encode("utf-8"))
        # An entry of the other kind under the same key would never be read; drop it.
        for other in KINDS:
            if other != kind:
                with contextlib.suppress(OSError):
                    os.unlink(self.image_path(key, other))
        return sidecar

    def remove(self, key: str) -> None:
        """Delete an entry (sidecar first, so that readers see a miss rather than a torn entry)."""
        for path in (self.sidecar_path(key), *(self.image_path(key, k) for k in KINDS)):
            with contextlib.suppress(OSError):
                os.unlink(path)

    # ---- housekeeping -----------------------------------------------------------------------

    def scan(self, *, remove_stale_temps: bool = False) -> list[EntryInfo]:
        """Every entry in the directory with its total size and last use (no file is read)."""
        sizes: dict[str, int] = {}
        mtimes: dict[str, float] = {}
        now = time.time()
        try:
            it = os.scandir(self.directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        with it:
            for dirent in it:
                name = dirent.name
                if name.endswith(TEMP_SUFFIX):
                    if remove_stale_temps:
                        with contextlib.suppress(OSError):
                            if now - dirent.stat().st_mtime > _STALE_TEMP_SECONDS:
                                os.unlink(dirent.path)
                    continue
                key, _, suffix = name.partition(".")
                if not is_valid_key(key) or suffix not in ("json", *KINDS):
                    continue
                try:
                    st = dirent.stat()
                except FileNotFoundError:
                    continue
                sizes[key] = sizes.get(key, 0) + st.st_size
                if suffix != "json":
                    mtimes[key] = st.st_mtime
                else:
                    mtimes.setdefault(key, st.st_mtime)
        return [EntryInfo(key, sizes[key], mtimes[key]) for key in sizes]

    def temp_files(self) -> list[str]:
        """Temporary files in the directory (writes in progress, or left by a crash)."""
        try:
            return sorted(n for n in os.listdir(self.directory) if n.endswith(TEMP_SUFFIX))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def evict(self, keep: str | None = None) -> int:
        """Delete least-recently-used entries until the store fits its cap; returns how many."""
        if self.max_bytes is None or self.read_only:
            return 0
        entries = self.scan(remove_stale_temps=True)
        total = sum(e.size for e in entries)
        if total <= self.max_bytes:
            return 0
        target = int(self.max_bytes * _EVICT_TO)
        removed = 0
        for entry in sorted(entries, key=lambda e: e.mtime):
            if total <= target:
                break
            if entry.key == keep:
                continue
            self.remove(entry.key)
            total -= entry.size
            removed += 1
        return removed

    def clear(self) -> tuple[int, int]:
        """Delete every entry and temporary file; returns (entries, bytes) removed."""
        entries = self.scan()
        for entry in entries:
            self.remove(entry.key)
        for name in self.temp_files():
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, name))
        return len(entries), sum(e.size for e in entries)

    def probe_writable(self) -> tuple[bool, str]:
        """Whether a file can be created in the directory now (creating it if needed), and why not."""
        probe = os.path.join(self.directory, f".probe.{os.getpid()}.{os.urandom(4).hex()}"
                                             f"{TEMP_SUFFIX}")
        try:
            make_private_dirs(self.directory)
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
        except OSError as exc:
            return False, exc.strerror or str(exc)
        return True, ""
