"""The NVRTC version, for cache keys, without loading NVRTC on a warm start.

The user cache key includes the NVRTC version, but asking NVRTC costs ~150 ms (importing
``cuda.bindings.nvrtc`` and ``cuda.pathfinder``, then dlopen'ing a 140 MB ``libnvrtc``) — three
times the whole warm time-to-first-launch budget.  So the version is remembered per library file:

1. find the NVRTC shared library the compiler will load (:mod:`gpu_native.compiler.nvrtc`: the
   wheel of cuda-bindings' CUDA major, ``nvidia/cu13/lib`` or ``nvidia/cuda_nvrtc/lib`` on
   ``sys.path``, else the newest) with a few ``stat`` calls, and fingerprint it by (path, device,
   inode, size, mtime);
2. look the fingerprint up in ``<cache root>/nvrtc/<sha256 of fingerprint>.json``;
3. on a miss, load NVRTC, ask its version, and record it — but only when the library NVRTC was
   actually loaded from is the file fingerprinted, so a record never vouches for another file.

Reinstalling or upgrading NVRTC gives a new inode, size or mtime and so a new fingerprint.  When no
wheel library is found (a system CUDA toolkit), NVRTC is loaded to ask, every process.  Should the
answer still be wrong (another library loaded a different NVRTC into the process first), the kernel
compiled is filed under the version of the NVRTC that really compiled it (see
:func:`gpu_native.cache.lookup.find_or_build`), and that version is used from then on: a cubin
from NVRTC 13 is never filed under NVRTC 12's key, where a process on a CUDA 12 driver would
find it.
"""

from __future__ import annotations

import hashlib
import json
import os

from .. import toolkit
from ..files import read_regular
from .keys import is_valid_key
from .store import (
    make_private_dirs,
    read_head,
    starts_like,
    temp_target,
    unlink_if,
    write_file_atomic,
)

_RECORD_SCHEMA = 1
# How a record's JSON starts (json.dumps keeps the order _write_record gives its keys).
_RECORD_START = b'{"schema": '

_version: str | None = None


def locate_library() -> str | None:
    """The NVRTC library a pip-installed toolkit provides, found with ``stat`` calls only: the
    one of cuda-bindings' CUDA major, which the compiler loads, else the newest."""
    major = toolkit.bindings_major()
    library = toolkit.nvrtc_library(major) if major is not None else None
    return library or toolkit.any_nvrtc_library()


def remember(version: str) -> None:
    """Use ``version`` for keys from now on: the NVRTC that really compiled a kernel (when it
    differs from the recorded one, another library loaded another NVRTC into the process)."""
    global _version
    _version = version


def fingerprint(path: str) -> str | None:
    """A string that changes whenever the file at ``path`` is replaced or rewritten."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{path}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}"


def _record_path(records_dir: str, fp: str) -> str:
    return os.path.join(records_dir, hashlib.sha256(fp.encode("utf-8")).hexdigest() + ".json")


def _read_record(records_dir: str, fp: str) -> str | None:
    try:
        record = json.loads(read_regular(_record_path(records_dir, fp), 4096).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if (isinstance(record, dict) and record.get("schema") == _RECORD_SCHEMA
            and record.get("fingerprint") == fp and isinstance(record.get("version"), str)):
        return record["version"]
    return None


def _write_record(records_dir: str, fp: str, version: str, library: str) -> None:
    record = {"schema": _RECORD_SCHEMA, "fingerprint": fp, "version": version,
              "library": library}
    try:
        make_private_dirs(records_dir)
        write_file_atomic(_record_path(records_dir, fp), json.dumps(record).encode("utf-8"))
    except OSError:
        pass  # the cache is unwritable: the caller has warned about that already


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def version_for_keys(records_dir: str | None) -> str:
    """NVRTC's ``"major.minor"``, from the record for the installed library when there is one.

    Loads NVRTC only when no record matches (and then writes one into ``records_dir``).
    """
    global _version
    if _version is not None:
        return _version
    library = locate_library()
    fp = fingerprint(library) if library else None
    if fp is not None and records_dir:
        version = _read_record(records_dir, fp)
        if version is not None:
            _version = version
            return version
    from ..compiler.nvrtc import library_path, nvrtc_version

    major, minor = nvrtc_version()
    version = f"{major}.{minor}"
    loaded = library_path()
    if fp is not None and records_dir and loaded and library and _same_file(loaded, library):
        _write_record(records_dir, fp, version, library)
    _version = version
    return version


def forget() -> None:
    """Drop the version remembered by this process (tests)."""
    global _version
    _version = None


def is_own_record(records_dir: str, name: str) -> bool:
    """Whether ``name`` in ``records_dir`` is a record this module wrote (or its temporary file):
    named by the SHA-256 of the fingerprint it holds, in the format :func:`_write_record` uses."""
    target = temp_target(name)
    stem = (target or name).removesuffix(".json")
    if (target or name) == stem or not is_valid_key(stem):
        return False
    path = os.path.join(records_dir, name)
    if target is not None:  # may have been cut short by a crash
        head = read_head(path, len(_RECORD_START))
        return head is not None and starts_like(head, _RECORD_START)
    raw = read_head(path, 4097)
    if raw is None or len(raw) > 4096:
        return False
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    fp = record.get("fingerprint") if isinstance(record, dict) else None
    return (isinstance(fp, str) and isinstance(record.get("schema"), int)
            and hashlib.sha256(fp.encode("utf-8")).hexdigest() == stem)


def clear_records(records_dir: str) -> int:
    """Delete every version record of ours (``gpu-native cache clear``); returns how many.

    Other files in the directory stay: ``GPU_NATIVE_CACHE_DIR`` may point at a directory whose
    ``nvrtc/`` holds someone else's files.
    """
    try:
        names = os.listdir(records_dir)
    except OSError:
        return 0
    removed = 0
    for name in names:
        if unlink_if(os.path.join(records_dir, name),
                     lambda _p, n=name: is_own_record(records_dir, n)) and not temp_target(name):
            removed += 1
    return removed


def foreign_records(records_dir: str) -> list[str]:
    """Names of the files in ``records_dir`` that are not records of ours."""
    try:
        names = sorted(os.listdir(records_dir))
    except OSError:
        return []
    return [n for n in names if not is_own_record(records_dir, n)]
