"""Rewritten modules cached as bytecode, the way pytest caches its rewritten test modules.

An entry sits beside the interpreter's own pyc, under its own name::

    __pycache__/mykernels.cpython-311.gpu_native-0.1.0.pyc          (python)
    __pycache__/mykernels.cpython-311.opt-1.gpu_native-0.1.0.pyc    (python -O; opt-2: -OO)

or, when ``__pycache__`` cannot be written (a read-only install) or ``PYTHONDONTWRITEBYTECODE``
is set, in gpu_native's cache directory (``GPU_NATIVE_CACHE_DIR`` or the platform's user cache)
under ``modules/``, with the same ``opt-N`` tag.  The file is::

    MAGIC (4 bytes: this Python's bytecode magic)  b"GNpy"  BLAKE2b-128 of the payload (16 bytes)
    payload: marshal of (key, code)

``key`` holds everything the rewrite was derived from: the SHA-256 of the module's source,
gpu_native's version and a fingerprint of its transpiler's files, the module's name and path, the
optimisation level (``-O`` removes host ``assert`` statements from the code), the path and SHA-256
of every other module whose device functions or constants the rewrite read, and how each module
name it looked up resolved to a file (or to none).  An entry is used only when all of them still
match and each name still resolves to the same file (by the transpiler's own rule,
:func:`gpu_native.locate.find_module_file`: a few ``stat`` calls), since after a
``sys.path`` change ``from helpers import scale`` may find another ``helpers.py``.  It is written
to a temporary name and moved into place with ``os.replace``, so a reader never sees half a file,
and a damaged one is simply rewritten.

Trust.  The checksum detects damage, not tampering: anyone can recompute it, and the entry is
code this process runs.  So an entry is read only from where no one but those who could edit the
module anyway could have put it:

* in gpu_native's cache directory, the cache root, its ``modules/`` and the file must belong to
  this user and be writable by nobody else (the kernel cache's rule,
  :func:`_gpu_native_startup.untrusted_reason` and :func:`~_gpu_native_startup.untrusted_folder`);
* beside the source, CPython's own rule is the baseline: it runs whatever pyc is in
  ``__pycache__``, trusting that directory as much as the source beside it, so whoever can write
  there can already run code in every plain module next to ours, and an owner check would only
  refuse entries a colleague wrote in a shared checkout.  What is refused is an entry that more
  people can change than can change the source: a file or a ``__pycache__`` directory that is
  group- or world-writable when neither the source nor its directory is.  (Where the source's
  directory is itself world-writable, as in ``/tmp``, this is as weak as CPython.)

A refused entry is neither run nor deleted: one :class:`~_gpu_native_startup.CacheWarning` names
it, the module is rewritten, and the result is cached elsewhere or not at all.  Entries are
written with the source's permission bits plus owner-write beside the source (CPython's
``_calc_mode``: a private module gets a private entry), 0o600 in directories of 0o700 in
gpu_native's cache directory.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source
from typing import TypeGuard

import _gpu_native_startup as _startup

from .._version import __version__
from ..files import open_regular, read_regular
from ..locate import archived_bytes, find_module_file

FORMAT = 2
_TAG = b"GNpy"
_HEADER = len(MAGIC_NUMBER) + len(_TAG) + 16
# The parts of gpu_native whose code decides what a rewrite looks like.
_TRANSPILER = ("rewrite.py", "abi.py", "ir.py", "ircodec.py", "locate.py", "errors.py", "_version.py",
               "spec.py", "launchexpr.py", "frontend", "check", "emit", "lang")

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
    """SHA-256 of a file's bytes (also of one in a zip archive, see :mod:`gpu_native.locate`),
    or None when it cannot be read."""
    try:
        return source_digest(read_regular(path))
    except OSError:  # a FIFO or a device too: never waited on or read without end
        data = archived_bytes(path)
        return None if data is None else source_digest(data)


def make_key(fullname: str, path: str, source_sha: str,
             dependencies: tuple[tuple[str, str], ...],
             resolutions: tuple[tuple[str, str | None, str | None], ...] = ()) -> dict:
    """The identity of one rewrite (see the module docstring).

    ``dependencies`` are ``(path, sha256)`` of the other files the rewrite read; ``resolutions``
    are ``(module, near, path)``: how each module name it looked up resolved (``path`` absolute,
    or None when nothing was found), as ``ModuleLocator.resolutions`` reports them.
    """
    return {
        "format": FORMAT,
        "version": __version__,
        "transpiler": transpiler_fingerprint(),
        "optimize": sys.flags.optimize,
        "module": fullname,
        "path": os.path.abspath(path),
        "source": source_sha,
        "dependencies": dependencies,
        "resolutions": resolutions,
    }


def resolved(module: str, near: str | None) -> str | None:
    """The absolute path ``module`` resolves to from ``near`` now, as the transpiler finds it."""
    found = find_module_file(module, near)
    return None if found is None else os.path.abspath(found)


def is_current(key: object, fullname: str, path: str, source_sha: str) -> TypeGuard[dict]:
    """Whether a stored key still describes the module and every file it was derived from."""
    if not isinstance(key, dict):
        return False
    deps, names = key.get("dependencies"), key.get("resolutions")
    if not isinstance(deps, tuple) or not isinstance(names, tuple):
        return False
    expected = make_key(fullname, path, source_sha, deps, names)
    if any(key.get(name) != value for name, value in expected.items()):
        return False
    if not all(isinstance(d, tuple) and len(d) == 2 and file_digest(d[0]) == d[1] for d in deps):
        return False
    return all(isinstance(r, tuple) and len(r) == 3 and isinstance(r[0], str) and
               resolved(r[0], r[1]) == r[2] for r in names)


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
    # The optimisation level as CPython's cache_from_source spells it (``opt-1`` for -O).
    opt = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    return _tagged(os.path.join(_startup.cache_root(), "modules",
                                f"{name}-{digest}.{tag}{opt}.pyc"))


class UntrustedEntry(Exception):
    """An entry (or its directory) that someone who cannot edit the module could have written."""

    def __init__(self, what: str, path: str, reason: str):
        self.what, self.path, self.reason = what, path, reason
        super().__init__(f"{what} {path} {reason}")


def _check_private(cache_file: str, st: os.stat_result) -> None:
    """gpu_native's cache directory: the file must be this user's and writable by no one else."""
    reason = _startup.untrusted_reason(st)
    if reason is not None:
        raise UntrustedEntry("the cached rewrite", cache_file, reason)


def _check_beside(cache_file: str, st: os.stat_result, source: tuple[str, os.stat_result]) -> None:
    """Beside the source: neither the entry nor its directory may be writable by a group or by
    others when neither the source nor the source's directory is (see the module docstring)."""
    directory = os.path.dirname(cache_file)
    dir_mode = os.stat(directory).st_mode
    extra = (st.st_mode | dir_mode) & 0o022
    if not extra:
        return
    source_path, source_st = source
    extra &= ~(source_st.st_mode | os.stat(os.path.dirname(os.path.abspath(source_path))).st_mode)
    if extra:
        who = "other users" if extra & 0o002 else "its group"
        what, where = (("the cached rewrite", cache_file) if (st.st_mode & extra) else
                       ("the directory of the cached rewrite", directory))
        raise UntrustedEntry(what, where, f"can be written by {who}, who cannot write "
                             f"{source_path}")


def read(cache_file: str, source: tuple[str, os.stat_result] | None = None
         ) -> tuple[object, object] | None:
    """``(key, code)`` from an entry, or None if it is missing, foreign or damaged.

    Parameters
    ----------
    cache_file
        The entry's path.
    source
        ``(path, os.stat(path))`` of the module, for an entry beside it; None for an entry in
        gpu_native's cache directory.

    Raises
    ------
    UntrustedEntry
        The entry, or its directory, fails the trust rules of the module docstring; it was not
        read.  In gpu_native's cache directory this is raised for an untrusted directory even when
        the entry does not exist, so that nothing is written there either.
    """
    try:
        if source is None:
            found = _startup.untrusted_folder(os.path.dirname(cache_file))
            if found is not None:
                raise UntrustedEntry(_startup.CACHE_DIRECTORY, *found)
        with open_regular(cache_file) as f:  # a FIFO in its place: a miss, not a hang
            st = os.fstat(f.fileno())
            if source is None:
                _check_private(cache_file, st)
            else:
                _check_beside(cache_file, st, source)
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


def source_file_mode(source_st: os.stat_result) -> int:
    """The mode of an entry beside a source with this ``stat``: CPython's ``_calc_mode`` (the
    source's permission bits, plus owner-write so that the entry can be replaced)."""
    return (source_st.st_mode | 0o200) & 0o666


def _makedirs(directory: str, mode: int) -> None:
    """Create ``directory`` and its missing parents, each with ``mode``."""
    if not directory or os.path.isdir(directory):
        return
    _makedirs(os.path.dirname(directory), mode)
    try:
        os.mkdir(directory, mode)
    except FileExistsError:
        pass


def write(cache_file: str, key: dict, code, mode: int | None = None) -> bool:
    """Store an entry atomically (temporary name, then ``os.replace``); False if it cannot be.

    ``mode`` is the permission bits of an entry beside the source (:func:`source_file_mode`),
    whose directory is created as CPython creates ``__pycache__``; None means gpu_native's cache
    directory, where the entry is private to the user like every other cache file.
    """
    payload = marshal.dumps((key, code))
    data = MAGIC_NUMBER + _TAG + hashlib.blake2b(payload, digest_size=16).digest() + payload
    directory = os.path.dirname(cache_file)
    tmp = f"{cache_file}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        _makedirs(directory, 0o700 if mode is None else 0o777)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is None else mode)
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
