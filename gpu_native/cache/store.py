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

Only our own files are ever deleted (by :meth:`ArtifactStore.clear`, eviction and the sweep of
temporary files): a file is ours when its name follows the layout above (or is one of
:func:`write_file_atomic`'s temporary names) and its first bytes are what we write there: an ELF
header for a cubin, NVRTC's ``//`` banner for PTX, a sidecar naming its own key.  A store may be
pointed at a directory that holds other things (``GPU_NATIVE_CACHE_DIR=$HOME``), and those stay.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time

from ..files import NotRegularFileError, open_regular, read_regular
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
# How every image starts: an ELF header, or the banner NVRTC writes at the top of PTX.
IMAGE_MAGIC = {"cubin": b"\x7fELF", "ptx": b"//"}
# write_file_atomic's temporary names: "." + the final name + pid + random + ".tmp".
_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[0-9]+\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))
_PROBE_NAME = re.compile(r"\.probe\.[0-9]+\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))


class CorruptEntryError(Exception):
    """An entry's sidecar is unreadable or its image does not match the sidecar's hash or size."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class UnreadableEntryError(Exception):
    """An entry exists but this process may not read it (its file or directory belongs to another
    account and is private to it, say); ``reason`` is the system's word for why."""

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


def read_head(path: str, size: int) -> bytes | None:
    """The first ``size`` bytes of the regular file ``path``, or None when it is not one (a
    symbolic link is never followed) or cannot be read."""
    try:
        return read_regular(path, size, follow_symlinks=False)
    except OSError:
        return None


def starts_like(head: bytes, prefix: bytes) -> bool:
    """Whether ``head`` (possibly cut short by a crash) agrees with ``prefix`` as far as both go."""
    n = min(len(head), len(prefix))
    return head[:n] == prefix[:n]


def temp_target(name: str) -> str | None:
    """The final file name a temporary file of :func:`write_file_atomic` was being written for."""
    match = _TEMP_NAME.fullmatch(name)
    return match.group("name") if match else None


def unlink_if(path: str, is_ours) -> bool:
    """Delete ``path`` when ``is_ours(path)`` says it is ours; whether it was deleted."""
    if not is_ours(path):
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def foreign_names(directory: str, is_own) -> list[str]:
    """Names of the files in ``directory`` that ``is_own(name)`` does not claim, sorted: what a
    cache folder's ``clear`` keeps and ``gpu-native cache info`` lists."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [n for n in names if not is_own(n)]


def _regular_size(path: str) -> int | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def make_private_dirs(path: str) -> None:
    """``os.makedirs`` that creates every missing level with mode 0o700 (not just the last)."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != path:
        make_private_dirs(parent)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)


def write_file_atomic(path: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, so that no
    reader ever sees a partial file.  ``mode`` is filtered by the umask: the default makes the
    file readable by the user only; 0o666 makes it what the user's umask says."""
    directory, name = os.path.split(path)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(temp, flags, mode)
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
        Where the entries live; created on the first write.
    max_bytes
        Size cap for :meth:`evict`; least-recently-used entries are evicted past it.  ``None``
        means no cap (precompiled directories).
    read_only
        Never write, touch or evict (precompiled directories shipped with a package).
    private
        Create the directory 0o700 and files 0o600 whatever the umask (the per-user cache, whose
        entries are trusted only while nobody else can write them).  ``False`` follows the umask
        (``gpu-native precompile --out``: a deployment that other accounts must read).
    """

    def __init__(self, directory: str, *, max_bytes: int | None = None, read_only: bool = False,
                 private: bool = True):
        self.directory = directory
        self.max_bytes = max_bytes
        self.read_only = read_only
        self.private = private

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

        Raises :class:`CorruptEntryError` when the entry exists but does not verify, and
        :class:`UnreadableEntryError` when it exists but this process may not read it.
        """
        try:
            return self._read(key)
        except CorruptEntryError:
            # A writer may have replaced the sidecar between our two reads; look once more.
            return self._read(key)

    def _read(self, key: str) -> StoredEntry | None:
        meta_path = self.sidecar_path(key)
        try:
            # Opened without blocking: a FIFO in its place would hang the load forever.
            raw = read_regular(meta_path, _MAX_SIDECAR_BYTES + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except NotRegularFileError as exc:
            raise CorruptEntryError(meta_path, f"the sidecar is {exc.kind}, not a regular "
                                               "file") from None
        except OSError as exc:
            raise UnreadableEntryError(meta_path, exc.strerror or type(exc).__name__) from None
        if len(raw) > _MAX_SIDECAR_BYTES:
            raise CorruptEntryError(meta_path, "the sidecar is too large")
        try:
            meta = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise CorruptEntryError(meta_path, "the sidecar is not valid JSON") from None
        meta = _check_meta(meta, key, meta_path)
        image_path = self.image_path(key, meta["kind"])
        try:
            image = read_regular(image_path)
        except FileNotFoundError:
            # Evicted (or never completed) between the two reads: a plain miss.
            return None
        except NotRegularFileError as exc:
            raise CorruptEntryError(image_path, f"the image is {exc.kind}, not a regular "
                                                "file") from None
        except OSError as exc:
            raise UnreadableEntryError(image_path, exc.strerror or type(exc).__name__) from None
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
        if self.private:
            make_private_dirs(self.directory)
        else:
            os.makedirs(self.directory, exist_ok=True)
        mode = 0o600 if self.private else 0o666
        write_file_atomic(image_path, image, mode)
        text = json.dumps(sidecar, indent=1, sort_keys=True) + "\n"
        write_file_atomic(self.sidecar_path(key), text.encode("utf-8"), mode)
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

    # ---- whose files ------------------------------------------------------------------------

    def is_own_file(self, name: str) -> bool:
        """Whether the file ``name`` in the directory is one this store wrote: an entry's image or
        sidecar, or a temporary file of one (see the module docstring)."""
        path = os.path.join(self.directory, name)
        target = temp_target(name)
        if target is not None or _PROBE_NAME.fullmatch(name):
            if target is None:  # a writability probe is always empty
                return read_head(path, 1) == b""
            key, _, suffix = target.partition(".")
            expected = b"{" if suffix == "json" else IMAGE_MAGIC.get(suffix)
            if not is_valid_key(key) or expected is None:
                return False
            head = read_head(path, len(expected))
            return head is not None and starts_like(head, expected)
        key, _, suffix = name.partition(".")
        if not is_valid_key(key):
            return False
        if suffix in IMAGE_MAGIC:
            if read_head(path, len(IMAGE_MAGIC[suffix])) == IMAGE_MAGIC[suffix]:
                return True
            # Not what NVRTC writes, but what our sidecar says this entry's image is.
            meta = self._own_sidecar(key)
            return (meta is not None and meta["kind"] == suffix
                    and _regular_size(path) == meta.get("size"))
        return suffix == "json" and self._own_sidecar(key) is not None

    def _own_sidecar(self, key: str) -> dict | None:
        """The sidecar of ``key`` when it is a JSON object of ours that names ``key``."""
        raw = read_head(self.sidecar_path(key), _MAX_SIDECAR_BYTES + 1)
        if raw is None or len(raw) > _MAX_SIDECAR_BYTES:
            return None
        try:
            meta = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None
        if isinstance(meta, dict) and meta.get("key") == key and meta.get("kind") in KINDS:
            return meta
        return None

    def nvrtc_versions(self, limit: int = 10_000) -> dict[str, int]:
        """How many entries each NVRTC version built (``{"12.9": 3, "13.5": 40}``), from the
        sidecars of at most ``limit`` entries; ``"unknown"`` counts sidecars that do not say."""
        counts: dict[str, int] = {}
        for info in self.scan()[:limit]:
            meta = self._own_sidecar(info.key)
            if meta is None:
                continue
            version = meta.get("nvrtc")
            version = version if isinstance(version, str) and version else "unknown"
            counts[version] = counts.get(version, 0) + 1
        return counts

    def remove_own(self, key: str) -> bool:
        """Delete the files of an entry that are ours (sidecar first); whether any was deleted."""
        names = [key + suffix for suffix in (SIDECAR_SUFFIX, *("." + k for k in KINDS))]
        # Decided before deleting anything: an image may be ours by what its sidecar says.
        removed = False
        for name in [n for n in names if self.is_own_file(n)]:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, name))
                removed = True
        return removed

    # ---- housekeeping -----------------------------------------------------------------------

    def scan(self, *, remove_stale_temps: bool = False,
             own_only: bool = False) -> list[EntryInfo]:
        """Every entry in the directory with its total size and last use.

        Entries are found by name, and no file is read: :meth:`remove_own` checks their contents
        before deleting.  ``own_only`` also reads each file's first bytes and counts only the
        files :meth:`is_own_file` accepts (what ``gpu-native cache info`` reports).
        """
        sizes: dict[str, int] = {}
        mtimes: dict[str, float] = {}
        now = time.time()
        try:
            it = os.scandir(self.directory)
        except OSError:
            return []
        with it:
            for dirent in it:
                name = dirent.name
                if name.endswith(TEMP_SUFFIX):
                    if remove_stale_temps:
                        with contextlib.suppress(OSError):
                            if now - dirent.stat(follow_symlinks=False).st_mtime > \
                                    _STALE_TEMP_SECONDS:
                                unlink_if(dirent.path, lambda _p, n=name: self.is_own_file(n))
                    continue
                key, _, suffix = name.partition(".")
                if not is_valid_key(key) or suffix not in ("json", *KINDS):
                    continue
                try:
                    st = dirent.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode) or (own_only and not self.is_own_file(name)):
                    continue
                sizes[key] = sizes.get(key, 0) + st.st_size
                if suffix != "json":
                    mtimes[key] = st.st_mtime
                else:
                    mtimes.setdefault(key, st.st_mtime)
        return [EntryInfo(key, sizes[key], mtimes[key]) for key in sizes]

    def temp_files(self) -> list[str]:
        """Temporary files of ours in the directory (writes in progress, or left by a crash)."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        return sorted(n for n in names if _PROBE_NAME.fullmatch(n) or (
            (target := temp_target(n)) is not None and is_valid_key(target.partition(".")[0])))

    def evict(self, keep: str | None = None) -> int:
        """Delete least-recently-used entries until the store fits its cap; returns how many."""
        if self.max_bytes is None or self.read_only:
            return 0
        entries = self.scan(remove_stale_temps=True)
        return evict_oldest([(e.mtime, e.size, e.key != keep,
                              lambda k=e.key: self.remove_own(k)) for e in entries],
                            self.max_bytes)

    def clear(self) -> tuple[int, int, int]:
        """Delete every entry and temporary file of ours; returns (entries, their bytes,
        temporary files) removed.

        Files that are not ours (see the module docstring) stay where they are.
        """
        count = size = temps = 0
        for entry in self.scan():
            if self.remove_own(entry.key):
                count += 1
                size += entry.size
        for name in self.temp_files():
            temps += unlink_if(os.path.join(self.directory, name),
                               lambda _p, n=name: self.is_own_file(n))
        return count, size, temps

    def foreign_files(self) -> list[str]:
        """Names of the files in the directory that this store did not write (kept by
        :meth:`clear`)."""
        return foreign_names(self.directory, self.is_own_file)

    def unreadable(self, limit: int = 5) -> list[tuple[str, str]]:
        """``(path, reason)`` for up to ``limit`` entry files (or the directory itself) that this
        process may not read: what ``gpu-native doctor`` reports."""
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        except OSError as exc:
            return [(self.directory, exc.strerror or type(exc).__name__)]
        found = []
        for name in names:
            key, _, suffix = name.partition(".")
            if not is_valid_key(key) or suffix not in ("json", *KINDS):
                continue
            path = os.path.join(self.directory, name)
            try:
                open_regular(path).close()  # a FIFO is reported, never waited on
            except FileNotFoundError:
                continue
            except OSError as exc:
                found.append((path, exc.strerror or type(exc).__name__))
                if len(found) >= limit:
                    break
        return found

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


def evict_oldest(entries, max_bytes: int) -> int:
    """Least-recently-used eviction over ``(last_use, size, evictable, remove)`` tuples: while
    their total exceeds ``max_bytes``, call ``remove()`` on the oldest evictable ones until the
    total is down to a fraction of the cap.  Returns how many were removed.

    An entry whose ``remove()`` deletes nothing (a file that is not ours) still counts as freed:
    evicting others cannot make room for it, and must not be tried forever.
    """
    total = sum(size for _, size, _, _ in entries)
    if total <= max_bytes:
        return 0
    target = int(max_bytes * _EVICT_TO)
    removed = 0
    for _last_use, size, evictable, remove in sorted(entries, key=lambda e: e[0]):
        if total <= target:
            break
        if not evictable:
            continue
        if remove():
            removed += 1
        total -= size
    return removed
