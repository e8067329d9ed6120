"""Rewritten modules cached as bytecode, the way pytest caches its rewritten test modules.

An entry sits beside the interpreter's own pyc, under its own name::

    __pycache__/mykernels.cpython-311.gpu_native-0.1.0.pyc

or, when ``__pycache__`` cannot be written (a read-only install) or ``PYTHONDONTWRITEBYTECODE``
is set, in gpu_native's cache directory (``GPU_NATIVE_CACHE_DIR`` or the platform's user cache)
under ``modules/``.  The file is::

    MAGIC (4 bytes: this Python's bytecode magic)  b"GNpy"  BLAKE2b-128 of the payload (16 bytes)
    payload: marshal of (key, code)

``key`` holds everything the rewrite was derived from: the SHA-256 of the module's source,
gpu_native's version and a fingerprint of its transpiler's files, the module's name and path, and
the path and SHA-256 of every other module whose device functions or constants the rewrite read.
An entry is used only when all of them still match; it is written to a temporary name and
``os.replace``\\d, so a reader never sees half a file, and a corrupt one is simply rewritten.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source

import _gpu_native_startup as _startup

from .._version import __version__

FORMAT = 1
_TAG = b"GNpy"
_HEADER = len(MAGIC_NUMBER) + len(_TAG) + 16
# The parts of gpu_native whose code decides what a rewrite looks like.
_TRANSPILER = ("rewrite.py", "abi.py", "ir.py", "ircodec.py", "errors.py", "_version.py",
               "frontend", "check", "emit", "lang")

_fingerprint: str | None = None


def transpiler_fingerprint() -> str:
    """A digest of the transpiler's files (path, mtime, size), so that a development checkout
    whose version number did not change still never reuses a rewrite made by older code."""
    global _fingerprint
    if _fingerprint is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.blake2b(digest_size=16)
        for name in _TRANSPILER:
            path = os.path.join(root, name)
            if name.endswith(".py"):
                entries = [path]
            else:
                try:
                    entries = sorted(e.path for e in os.scandir(path) if e.name.endswith(".py"))
                except OSError:
                    entries = []
            for entry in entries:
                try:
                    st = os.stat(entry)
                except OSError:
                    continue
                h.update(f"{entry}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
        _fingerprint = h.hexdigest()
    return _fingerprint


def source_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str) -> str | None:
    """SHA-256 of a file's bytes, or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return source_digest(f.read())
    except OSError:
        return None


def make_key(fullname: str, path: str, source_sha: str,
             dependencies: tuple[tuple[str, str], ...]) -> dict:
    """The identity of one rewrite (see the module docstring)."""
    return {
        "format": FORMAT,
        "version": __version__,
        "transpiler": transpiler_fingerprint(),
        "module": fullname,
        "path": os.path.abspath(path),
        "source": source_sha,
        "dependencies": dependencies,
    }


def is_current(key: object, fullname: str, path: str, source_sha: str) -> bool:
    """Whether a stored key still describes the module and every file it was derived from."""
    if not isinstance(key, dict):
        return False
    deps = key.get("dependencies")
    if not isinstance(deps, tuple):
        return False
    expected = make_key(fullname, path, source_sha, deps)
    if any(key.get(name) != value for name, value in expected.items()):
        return False
    return all(isinstance(d, tuple) and len(d) == 2 and file_digest(d[0]) == d[1] for d in deps)


def _tagged(pyc: str) -> str:
    base = pyc[:-len(".pyc")] if pyc.endswith(".pyc") else pyc
    return f"{base}.gpu_native-{__version__}.pyc"


def pycache_path(path: str) -> str | None:
    """The entry beside the interpreter's own pyc (honours ``sys.pycache_prefix``)."""
    try:
        return _tagged(cache_from_source(path))
    except (NotImplementedError, ValueError):
        return None


def user_cache_path(path: str) -> str:
    """The entry in gpu_native's cache directory, for sources whose ``__pycache__`` is unusable."""
    path = os.path.abspath(path)
    name = os.path.splitext(os.path.basename(path))[0]
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    tag = sys.implementation.cache_tag or "python"
    return _tagged(os.path.join(_startup.cache_root(), "modules", f"{name}-{digest}.{tag}.pyc"))


def read(cache_file: str) -> tuple[object, object] | None:
    """``(key, code)`` from an entry, or None if it is missing, foreign or damaged."""
    try:
        with open(cache_file, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) <= _HEADER or not data.startswith(MAGIC_NUMBER + _TAG):
        return None
    payload = memoryview(data)[_HEADER:]
    if hashlib.blake2b(payload, digest_size=16).digest() != data[_HEADER - 16:_HEADER]:
        return None
    try:
        entry = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(entry, tuple) or len(entry) != 2:
        return None
    return entry


def _makedirs(directory: str, mode: int) -> None:
    """Create ``directory`` and its missing parents, each with ``mode``."""
    if not directory or os.path.isdir(directory):
        return
    _makedirs(os.path.dirname(directory), mode)
    try:
        os.mkdir(directory, mode)
    except FileExistsError:
        pass


def write(cache_file: str, key: dict, code) -> bool:
    """Store an entry atomically (temporary name, then ``os.replace``); False if it cannot be."""
    payload = marshal.dumps((key, code))
    data = MAGIC_NUMBER + _TAG + hashlib.blake2b(payload, digest_size=16).digest() + payload
    directory = os.path.dirname(cache_file)
    tmp = f"{cache_file}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    # Beside the module (__pycache__) the entry is as readable as CPython's own pycs; in the
    # gpu_native cache directory it is private to the user, like every other cache file.
    private = os.path.basename(directory) != "__pycache__"
    try:
        _makedirs(directory, 0o700 if private else 0o777)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, cache_file)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True
