"""The part of gpu_native's import hook that runs at interpreter startup.

``gpu_native.pth``, installed into site-packages with the package, imports this module and calls
:func:`install`, so a plain ``import mykernels`` is rewritten even when nothing imported
``gpu_native`` first; ``import gpu_native`` calls :func:`install` too.  This module must stay cheap
because every Python process on the machine runs it: it imports nothing the interpreter has not
loaded already (bar the tiny ``importlib.machinery``), never the ``gpu_native`` package (which
imports NumPy), and the transpiler only once a module that defines kernels is found.

:class:`KernelFinder` sits just before ``PathFinder`` on ``sys.meta_path`` and asks it (and, when it
finds nothing, the finders after it, such as the one of a setuptools editable install) for the
spec.  A ``.py`` module outside the standard library whose bytes name ``gpu_kernel`` or
``gpu_device``, and ``gpu_native``, gets a :class:`KernelModuleLoader`; every other spec is returned
as found, so ``PathFinder`` is not asked twice.  Files found to define no kernels are remembered
by path, mtime and size in a small per-environment file, so later processes pay one ``stat`` for
them instead of a read.  The loader's heavy half lives in :mod:`gpu_native.importhook.loader`.

Both caches live in ``<cache root>/modules/``, which another user may be able to write to (a
shared or world-writable ``GPU_NATIVE_CACHE_DIR``).  Anything read from there decides what code
runs, so it is used only when the cache root, the directory and the file belong to this user and
nobody else can write them (:func:`untrusted_reason`, :func:`untrusted_folder`: the rule the kernel
cache applies to its own); otherwise it is ignored with one :class:`CacheWarning`, left where it
is, and not written to.
"""

from __future__ import annotations

import marshal
import os
import sys
from importlib.machinery import PathFinder, SourceFileLoader

# Not typing.TYPE_CHECKING: importing typing would slow every interpreter's startup.  Type
# checkers take any name TYPE_CHECKING to be true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

__all__ = ["CacheWarning", "GpuNativeWarning", "KernelFinder", "KernelModuleLoader", "install", "is_disabled",
           "may_define_kernels", "status", "uninstall", "untrusted_folder"]

# The bytes that mark a module as possibly defining kernels: gpu_native.frontend.parse's
# has_gpu_decorators test, and the package name, since the transpiler only takes decorators
# imported from gpu_native (a test keeps the two in step).  One pass finds the common prefix;
# the rare hit is then checked for the whole words.
_PREFIX = b"gpu_"
_MARKERS = (b"gpu_kernel", b"gpu_device")
_PACKAGE = b"gpu_native"
# Past this many entries, the no-kernels file drops files that no longer exist (temporary
# directories come and go), and if that is not enough, keeps only this run's entries.
_NEGATIVE_CAP = 20_000
# What an on/off variable may hold (case and surrounding whitespace aside): see flag().
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# gpu_native's own modules name the decorators without defining kernels: never rewrite them.
_OWN = ("gpu_native.", "_gpu_native_startup")

# Opens that must not wait on a FIFO (a writer, or a reader, that never comes).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

_stdlib = os.path.dirname(os.__file__) + os.sep
_site_markers = tuple(_stdlib + name + os.sep for name in ("site-packages", "dist-packages"))

# What status() reports; written by install() and by gpu_native.importhook.loader.
_state: dict = {"installed_by": None, "modules": {}}
# Cache files and directories already warned about as untrusted: one warning each per process.
_warned: set = set()
# Code files whose frames a warning skips to reach the user's import.
_IMPORTLIB = "<frozen importlib"
_INTERNAL = (_IMPORTLIB, __file__,
             os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_native") + os.sep)


class GpuNativeWarning(UserWarning):
    """Base class of every warning gpu_native gives (``gpu_native.GpuNativeWarning``): filter
    them all with ``warnings.filterwarnings("ignore", category=gn.GpuNativeWarning)``.

    Defined here, with :class:`CacheWarning`, because interpreter startup can warn without
    importing ``gpu_native``.
    """


class CacheWarning(GpuNativeWarning):
    """A gpu_native cache (compiled kernels, rewritten modules) could not be used as intended:
    a corrupt entry, an unwritable directory, or one that another user could have written to.

    Defined here, where interpreter startup can raise it without importing ``gpu_native``; it is
    ``gpu_native.cache.CacheWarning``.
    """


def untrusted_reason(st: os.stat_result) -> str | None:
    """Why a cache file or directory with this ``stat`` cannot be trusted, or None if it can.

    Trusted means owned by the user running this process and writable by nobody else: any other
    owner, or the group and other users if they may write, could plant an entry whose checksum
    matches (the checksum only detects damage).  Where there are no user ids (Windows) the POSIX
    mode bits mean nothing either, and nothing is refused.
    """
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None
    if st.st_uid != getuid():
        return "is owned by another user"
    if st.st_mode & 0o022:
        return "can be written by other users"
    return None


def untrusted_folder(directory: str) -> tuple[str, str] | None:
    """``(path, why)`` when ``directory``, a folder of gpu_native's cache (``modules/``,
    ``kernels/``), or the cache root that holds it, exists and is not private to this user
    (:func:`untrusted_reason`); None when both are private, or not made yet (they are made
    private).  The root counts because whoever may write there can rename the folder away and put
    their own, or a link to another, in its place."""
    for path in (os.path.dirname(directory), directory):
        try:
            st = os.stat(path)
        except OSError:
            continue
        reason = untrusted_reason(st)
        if reason is not None:
            return path, reason
    return None


def warn_once(path: str, message: str, category: type[Warning] | None = None) -> None:
    """One :class:`CacheWarning` (or ``category``) per ``path`` and process (a cache that cannot
    be trusted, a variable that holds nonsense)."""
    if path in _warned:
        return
    _warned.add(path)
    import warnings  # rare: only once something untrusted is found

    # Attributed to the import statement that led here, past our frames and the import
    # system's (which warnings.warn skips without counting them).
    level = 1
    frame: FrameType | None = sys._getframe(0)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        if not frame.f_code.co_filename.startswith(_IMPORTLIB):
            level += 1
        frame = frame.f_back
    caller = frame
    while caller is not None and caller.f_code.co_filename == "<string>":
        caller = caller.f_back
    if caller is not frame and caller is not None \
            and caller.f_code.co_filename.endswith(("site.py", "<frozen site>")):
        # At interpreter startup, from gpu_native.pth (site.py execs its line, which execs
        # ours): name that file and line, not "<string>" (site.addpackage reads the file
        # ``fullname``, its line ``n`` counted from 0).
        pth, n = caller.f_locals.get("fullname"), caller.f_locals.get("n")
        warnings.warn_explicit(message, category or CacheWarning,
                               pth if isinstance(pth, str) else "gpu_native.pth",
                               n + 1 if isinstance(n, int) else 1)
        return
    warnings.warn(message, category or CacheWarning, stacklevel=level)


CACHE_DIRECTORY = "the import hook's cache directory"


def untrusted_cache_message(what: str, path: str, reason: str, consequence: str = "") -> str:
    """The warning about a file of ``<cache root>/modules/``, or that directory (``what`` is
    :data:`CACHE_DIRECTORY`), when it is not private to the user."""
    if what == CACHE_DIRECTORY:  # one warning for both caches kept there
        consequence = ("the import hook neither reads nor writes its caches there, so modules are "
                       "searched for kernels and rewritten on every import.")
    return (f"gpu_native: {what} {path} {reason}, so its contents cannot be trusted and are "
            f"ignored; {consequence} Make the directory private (chmod 700, its files 600) or set "
            "GPU_NATIVE_CACHE_DIR to a private directory.")


def flag(name: str, default: bool | None) -> bool | None:
    """The on/off environment variable ``name``: True for ``1``, ``true``, ``yes`` or ``on``,
    False for ``0``, ``false``, ``no`` or ``off`` (in any case, with any surrounding
    whitespace), ``default`` when it is unset or empty; anything else is ignored with one
    :class:`GpuNativeWarning` per process that names the variable and its value, and gives
    ``default``.

    Every ``GPU_NATIVE_*`` on/off variable is read here (``gpu_native.settings.flag``), so they all
    take the same spellings.  It lives in this module because the import hook reads
    ``GPU_NATIVE_DISABLE_HOOK`` at interpreter startup, where nothing else may be imported.
    """
    text = os.environ.get(name, "").strip()
    word = text.lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    if text:
        using = "leaving it unset" if default is None else f"using {'1' if default else '0'}"
        warn_once(f"{name}={text}", f"gpu_native: ignoring {name}={text!r}: expected 1, true, "
                  f"yes or on, or 0, false, no or off; {using}", GpuNativeWarning)
    return default


def is_disabled() -> bool:
    """Whether ``GPU_NATIVE_DISABLE_HOOK`` opts this process out of the import hook."""
    return bool(flag("GPU_NATIVE_DISABLE_HOOK", False))


def debug_enabled() -> bool:
    """Whether ``GPU_NATIVE_DEBUG`` asks for a line on stderr per rewritten module."""
    return bool(flag("GPU_NATIVE_DEBUG", False))


def may_define_kernels(data: bytes) -> bool:
    """The finder's test: could a module with this source define kernels or device functions?"""
    return _PREFIX in data and (_MARKERS[0] in data or _MARKERS[1] in data) and \
        _PACKAGE in data


class KernelModuleLoader(SourceFileLoader):
    """Loads a module from gpu_native's rewrite of its source, cached as bytecode.

    ``get_source`` still returns the file's own text, so ``inspect``, ``linecache`` and debuggers
    show what the user wrote; the rewrite keeps every line on its line number.
    """

    def get_code(self, fullname):
        from gpu_native.importhook.loader import rewritten_code

        return rewritten_code(self, fullname)


class KernelFinder:
    """A ``sys.meta_path`` finder that hands modules defining kernels to the rewriting loader."""

    _gpu_native_hook = True  # how install() recognises an instance from another copy of us

    def find_spec(self, fullname, path=None, target=None):
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None:
            spec = _find_after_path_finder(self, fullname, path, target)
            if spec is None:
                return None
        if spec.loader.__class__ is not SourceFileLoader or fullname.startswith(_OWN) or \
                fullname == "gpu_native":
            return spec
        origin = spec.origin  # a SourceFileLoader's file; None would be some other loader
        if origin is None or (origin.startswith(_stdlib) and not origin.startswith(_site_markers)):
            return spec
        try:
            st = os.stat(origin)
            stamp = (st.st_mtime_ns, st.st_size)
            if _no_kernels.get(origin) == stamp:
                return spec
            with _open_regular(origin) as f:
                data = f.read()
        except OSError:  # a FIFO too: the import system reports it, the hook never waits on it
            return spec
        if not may_define_kernels(data):
            _no_kernels.add(origin, stamp)
            return spec
        spec.loader = KernelModuleLoader(fullname, origin)
        return spec

    def invalidate_caches(self) -> None:
        """Nothing cached here: ``PathFinder.invalidate_caches`` is called on its own entry."""

    def __repr__(self) -> str:
        return "<gpu_native import hook>"


def _find_after_path_finder(me, fullname, path, target):
    """Ask the finders after ``PathFinder`` (an editable install's finder sits there), in order,
    as the import system would; returning what they find spares it asking them again."""
    meta_path = sys.meta_path
    try:
        start = meta_path.index(PathFinder) + 1
    except ValueError:
        return None
    for finder in meta_path[start:]:
        if finder is me or getattr(finder, "_gpu_native_hook", False):
            continue
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def cache_root() -> str:
    """``gpu_native.cache.locations.cache_root()`` without its imports: ``GPU_NATIVE_CACHE_DIR``,
    else the platform's user cache directory (computed here on Linux, where platformdirs would
    cost milliseconds to import; a test checks the two agree)."""
    override = os.environ.get("GPU_NATIVE_CACHE_DIR")
    if override:
        return os.path.abspath(os.path.expanduser(override))
    if sys.platform.startswith("linux"):
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not base.strip():
            base = os.path.expanduser("~/.cache")
        return os.path.join(base, "gpu_native")
    import platformdirs

    return platformdirs.user_cache_dir("gpu_native")


def _private_dirs(directory: str) -> None:
    """Create ``directory`` and its missing parents for the user only (0o700)."""
    if not directory or os.path.isdir(directory):
        return
    _private_dirs(os.path.dirname(directory))
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass


class _NoKernels:
    """Source files known to define no kernels, by path, with the (mtime, size) they had when they
    were searched: a known file costs one ``stat`` instead of a read.  Kept per Python
    environment in ``<cache root>/modules/``, loaded on first use, saved at exit when it grew."""

    def __init__(self) -> None:
        self.entries: dict | None = None
        self.added: dict = {}
        self.file: str | None = None
        self.frozen = False  # see leave_records_alone()

    def _load(self) -> dict:
        entries: dict = {}
        try:
            self.file = _negative_cache_file()
            with _open_regular(self.file) as f:
                # Whoever can write this file decides which modules the hook skips: only a file of
                # this user's, in a directory of theirs, is believed (one fstat, one stat).
                reason = _untrusted_record(self.file, os.fstat(f.fileno()))
                if reason is not None:
                    self.file = None  # nor is it written back
                    warn_once(reason[1], untrusted_cache_message(
                        reason[0], reason[1], reason[2],
                        "every module is searched for kernels as if it had never been seen."))
                    loaded = None
                else:
                    loaded = marshal.loads(f.read())
            if isinstance(loaded, dict):
                entries = loaded
        except Exception:  # missing, unreadable or damaged: start empty
            pass
        self.entries = entries
        return entries

    def get(self, path: str):
        entries = self.entries
        if entries is None:
            entries = self._load()
        return entries.get(path)

    def add(self, path: str, stamp: tuple) -> None:
        if not self.added:
            import atexit

            atexit.register(self.save)
        self.added[path] = stamp
        if self.entries is not None:
            self.entries[path] = stamp

    def save(self) -> None:
        """Merge this run's additions into the file (atomically; errors are ignored).  Nothing is
        written into a directory, or over a file, that :func:`untrusted_reason` refuses."""
        if not self.added or self.file is None or self.frozen:
            return
        try:
            try:
                with _open_regular(self.file) as f:
                    if _untrusted_record(self.file, os.fstat(f.fileno())) is not None:
                        return
                    current = marshal.loads(f.read())
                if not isinstance(current, dict):
                    current = {}
            except FileNotFoundError:
                current = {}
                if untrusted_folder(os.path.dirname(self.file)) is not None:
                    return
            except Exception:
                current = {}
            current.update(self.added)
            if len(current) > _NEGATIVE_CAP:
                current = {path: stamp for path, stamp in current.items() if os.path.exists(path)}
            if len(current) > _NEGATIVE_CAP:
                current = dict(self.added)
            _private_dirs(os.path.dirname(self.file))
            tmp = f"{self.file}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NONBLOCK, 0o600)
            with open(fd, "wb") as f:
                f.write(marshal.dumps(current))
            os.replace(tmp, self.file)
            self.added = {}
        except Exception:
            pass


def _open_regular(path: str):
    """``path`` opened for reading in binary if it is a regular file, else ``OSError``.

    Opened without blocking and checked on the descriptor (``gpu_native.files`` does the same for
    the package): a FIFO in a cached file's place, or a module that is one, would otherwise hang
    every import of every interpreter that reaches it."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_BINARY", 0))
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:  # not S_IFREG (no `stat` import)
            raise OSError(f"{path}: not a regular file")
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _untrusted_record(path: str, st: os.stat_result) -> tuple[str, str, str] | None:
    """``(what, where, why)`` when the no-kernels file ``path`` (whose ``fstat`` is ``st``) or its
    directory is not private to this user; None when both are."""
    reason = untrusted_reason(st)
    if reason is not None:
        return "the import hook's record of modules without kernels", path, reason
    found = untrusted_folder(os.path.dirname(path))
    if found is not None:
        return CACHE_DIRECTORY, found[0], found[1]
    return None


def _negative_cache_file() -> str:
    # One file per environment (sys.prefix) and interpreter, named by an FNV-1a hash: hashlib
    # would cost a millisecond to import.
    h = 0xCBF29CE484222325
    for byte in f"{sys.prefix}\0{sys.version}".encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(cache_root(), "modules", f"no-kernels.{tag}.{h:016x}.marshal")


_no_kernels = _NoKernels()


def leave_records_alone() -> None:
    """Save nothing this process learns of modules without kernels: ``gpu-native cache info``,
    ``cache clear`` and ``doctor`` report on the cache, and running them must not change it (on
    a fresh root, not create it)."""
    _no_kernels.frozen = True


def _installed():
    for finder in sys.meta_path:
        if getattr(finder, "_gpu_native_hook", False):
            return finder
    return None


def install(installed_by: str = "import gpu_native") -> bool:
    """Put the import hook on ``sys.meta_path`` (once); return whether it is installed.

    Does nothing when ``GPU_NATIVE_DISABLE_HOOK`` is set.  Modules imported before the hook was
    installed keep the kernels the ``gpu_kernel`` decorator built from their source.
    """
    if is_disabled():
        return False
    if _installed() is not None:
        return True
    meta_path = sys.meta_path
    try:
        index = meta_path.index(PathFinder)
    except ValueError:
        index = len(meta_path)
    meta_path.insert(index, KernelFinder())
    _state["installed_by"] = installed_by
    return True


def install_from_pth() -> None:
    """What ``gpu_native.pth`` runs: install the hook, never break interpreter startup."""
    try:
        install("gpu_native.pth")
    except Warning as exc:
        # `-W error` made a warning about a GPU_NATIVE_* value an exception: say it, and
        # install the hook with that value's default, as the warning says (never leave the
        # hook off in silence).
        print(f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                install("gpu_native.pth")
            except Exception as again:  # pragma: no cover - as below
                if debug_enabled():
                    print(f"gpu_native: import hook not installed: {again!r}", file=sys.stderr)
    except Exception as exc:  # pragma: no cover - a broken install must not stop Python starting
        if debug_enabled():
            print(f"gpu_native: import hook not installed: {exc!r}", file=sys.stderr)


def uninstall() -> None:
    """Take the import hook off ``sys.meta_path`` (modules already rewritten stay as they are)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "_gpu_native_hook", False)]
    _state["installed_by"] = None


def record(fullname: str, info: dict) -> None:
    """Remember a rewritten module for :func:`status`; one debug line if ``GPU_NATIVE_DEBUG``."""
    _state["modules"][fullname] = info
    if debug_enabled():
        kernels = info.get("kernels", ())
        print(f"gpu_native: import hook rewrote {fullname} ({info.get('path')}): "
              f"cache {info.get('cache')}, {len(kernels)} kernel{'s' * (len(kernels) != 1)}, "
              f"{info.get('seconds', 0.0) * 1e3:.1f} ms", file=sys.stderr)


def status() -> dict:
    """The hook's state in this process, for ``gpu-native doctor`` and for debugging.

    Returns
    -------
    dict
        ``installed`` (bool), ``disabled`` (``GPU_NATIVE_DISABLE_HOOK`` is set), ``installed_by``
        (``"gpu_native.pth"``, ``"import gpu_native"`` or None), ``pth`` (the startup file in
        site-packages, or None when the package was not pip-installed), and ``modules``: every
        module the hook loaded in this process, by name, each a dict with ``path``, ``cache``
        (``"hit"`` when the cached rewrite was used, ``"miss"`` when it was rewritten now,
        ``"error"`` when the rewrite failed), ``cache_file``, ``kernels`` (names) and
        ``seconds``.
    """
    installed = _installed() is not None
    return {
        "installed": installed,
        "disabled": is_disabled(),
        "installed_by": _state["installed_by"] if installed else None,
        "pth": _find_pth(),
        "modules": {name: dict(info) for name, info in _state["modules"].items()},
    }


def _find_pth() -> str | None:
    """The ``gpu_native.pth`` that interpreter startup runs, if one is installed."""
    import site

    dirs = list(getattr(site, "getsitepackages", list)())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    for directory in dirs:
        candidate = os.path.join(directory, "gpu_native.pth")
        if os.path.isfile(candidate):
            return candidate
    return None
