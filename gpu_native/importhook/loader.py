"""The heavy half of the import hook: the code object of a module that defines kernels.

:func:`rewritten_code` is ``KernelModuleLoader.get_code`` (see ``_gpu_native_startup``).  A warm
import reads the cached rewrite (:mod:`.pycache`) and imports no transpiler; a cold one calls
:func:`gpu_native.rewrite.rewrite_module` — the entry point ``gpu-native expand`` prints — compiles
the result under the module's real file name, and caches it.
"""

from __future__ import annotations

import os
import sys
import time

# CPython's own helper of SourceLoader.get_code (3.0+), which typeshed leaves out as private.
from _imp import _fix_co_filename  # type: ignore[attr-defined]
from importlib.util import decode_source

import _gpu_native_startup as _startup

from .. import log
from ..errors import GpuNativeError
from . import pycache

# Errors a module's rewrite raised, by file: the module's code re-raises them (see _raising_code).
_pending: dict[str, BaseException] = {}


def rewritten_code(loader, fullname: str):
    """The code object of ``fullname`` as the hook rewrites it (from the cache when current)."""
    started = time.perf_counter()
    path = loader.path
    data = loader.get_data(path)
    source_sha = pycache.source_digest(data)
    source = (path, os.stat(path))
    refused: set[str] = set()
    for i, (cache_file, beside) in enumerate(_cache_files(path, for_writing=False)):
        try:
            entry = pycache.read(cache_file, source if beside else None)
        except pycache.UntrustedEntry as exc:
            _warn_untrusted(fullname, exc, beside)
            refused.add(cache_file)  # not run, not replaced: the hook rewrites the module
            continue
        if entry is None:
            continue
        key, code = entry
        if pycache.is_current(key, fullname, path, source_sha):
            _fix_co_filename(code, path)
            if i and not sys.dont_write_bytecode:
                # Found in the user cache, but __pycache__ may be writable now: move it there,
                # where the next import looks first.
                primary = pycache.pycache_path(path)
                if primary and primary not in refused and pycache.write(
                        primary, key, code, pycache.source_file_mode(source[1])):
                    cache_file = primary
            _record(fullname, path, "hit", cache_file, key.get("kernels", ()), started)
            return code
    return _rewrite(fullname, source, data, source_sha, started, refused)


def _cache_files(path: str, for_writing: bool):
    """Where the entry of ``path`` may be, each with whether it is beside the source: beside
    it, then in gpu_native's cache directory (found lazily: only a miss beside the source needs
    it)."""
    primary = pycache.pycache_path(path)
    if primary and not (for_writing and sys.dont_write_bytecode):
        yield primary, True
    try:
        fallback = pycache.user_cache_path(path)
    except Exception:  # no usable user cache directory: the hook works uncached
        return
    if fallback != primary:
        yield fallback, False


def _warn_untrusted(fullname: str, exc: pycache.UntrustedEntry, beside: bool) -> None:
    if beside:
        message = (f"gpu_native: {exc.what} {exc.path} {exc.reason}, so it cannot be trusted and "
                   f"is ignored; {fullname} is rewritten on import instead, and not cached "
                   "there. Remove the write permission it does not need (chmod go-w), or delete "
                   "it.")
    else:
        message = _startup.untrusted_cache_message(
            exc.what, exc.path, exc.reason,
            f"{fullname} is rewritten on import instead, and not cached there.")
    _startup.warn_once(exc.path, message)


def _rewrite(fullname, source, data, source_sha, started, refused):
    from ..cache import prefetch

    path = source[0]
    # The module's kernels will be compiled soon: note them as they are created, to compile
    # while the driver creates its context.
    prefetch.start()
    from ..check.scope import ModuleLocator
    from ..rewrite import rewrite_module

    locator = ModuleLocator()
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        text = None
    if text is None:
        # Undecodable (no or a wrong coding cookie): Python's own compile of the bytes gives
        # Python's own SyntaxError, raised from the user's line as a plain import would.
        undecodable: BaseException
        try:
            code = compile(data, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            undecodable = exc
        else:
            # compile() of bytes skips the bytes of a comment, which a plain import of the file
            # refuses: say what `gpu-native expand` says, at the byte.
            from ..frontend.source import decode_source as decode_located

            try:
                decode_located(data, path)
            except GpuNativeError as exc:
                undecodable = exc
            else:  # pragma: no cover - both decoders read the same cookie and bytes
                return code
        _record(fullname, path, "error", None, (), started)
        return _raising_code(undecodable, data.decode("utf-8", "replace"), path)
    try:
        result = rewrite_module(text, path, fullname, locator)
    except GpuNativeError as exc:
        error: BaseException | None = exc
    else:
        error = None
    if error is not None:
        _record(fullname, path, "error", None, (), started)
        syntax = _syntax_error(text, path)
        if syntax is None and _unparsable_by_libcst(error):
            # Python reads syntax libcst does not: import the module as Python would.  A kernel
            # in it then fails in its decorator, which names its line; host code just works.
            return compile(text, path, "exec", dont_inherit=True)
        # A file Python cannot parse raises Python's own SyntaxError, as a plain import would.
        return _raising_code(syntax or error, text, path)
    code = compile(result.source, path, "exec", dont_inherit=True)
    deps = tuple((dep, pycache.file_digest(dep) or "") for dep in result.dependencies)
    names = tuple((module, near, None if found is None else os.path.abspath(found))
                  for module, near, found in locator.resolutions())
    key = pycache.make_key(fullname, path, source_sha, deps, names)
    key["kernels"] = tuple(k.name for k in result.kernels)
    cache_file = None
    for candidate, beside in _cache_files(path, for_writing=True):
        if candidate in refused:  # found untrusted when read: neither run nor written over
            continue
        if pycache.write(candidate, key, code,
                         pycache.source_file_mode(source[1]) if beside else None):
            cache_file = candidate
            break
    _record(fullname, path, "miss", cache_file, key["kernels"], started)
    return code


def _unparsable_by_libcst(error: BaseException) -> bool:
    import libcst

    return isinstance(error.__context__, libcst.ParserSyntaxError)


def _syntax_error(source: str, path: str) -> BaseException | None:
    """What CPython's parser raises for the module (a located SyntaxError even for a NUL
    byte, which CPython itself reports without a line), or None."""
    from ..frontend.source import python_error

    return python_error(source, path)


def _raising_code(exc: BaseException, source: str, path: str):
    """Code that raises ``exc`` from the module itself, at the line the error names.

    Raised from the module's own code (which the import system runs through
    ``_call_with_frames_removed``), the traceback is the user's ``import`` line, then their file
    at the offending line, then the message with its caret: none of the hook's or the
    transpiler's frames.
    """
    span = getattr(exc, "span", None)
    if isinstance(exc, SyntaxError):
        where, line = exc.filename, exc.lineno
    else:
        where, line = (span.file, span.line) if span is not None else (path, 1)
    if not where or not line or line < 1 or os.path.abspath(where) != os.path.abspath(path):
        line = 1
    _pending[path] = exc.with_traceback(None)
    text = source.splitlines()[line - 1] if line <= len(source.splitlines()) else ""
    indent = text[:len(text) - len(text.lstrip())]
    # The raise starts at the line's indentation and spans two lines, so the traceback shows the
    # user's line without carets of its own (the message has the right ones).
    head = "\n" * (line - 2) + f"if 1:\n{indent}" if line > 1 and indent else "\n" * (line - 1)
    stub = (f"{head}raise (\n__import__('gpu_native.importhook.loader', fromlist=['take_error'])"
            f".take_error({path!r}))\n")
    return compile(stub, path, "exec", dont_inherit=True)


def take_error(path: str) -> BaseException:
    """The error the rewrite of ``path`` raised (called by the code of :func:`_raising_code`)."""
    exc = _pending.pop(path, None)
    if exc is None:  # pragma: no cover - the module was executed twice from one failed rewrite
        return ImportError(f"gpu_native could not rewrite {path}; import it again to see why")
    return exc


def _record(fullname, path, outcome, cache_file, kernels, started) -> None:
    seconds = time.perf_counter() - started
    _startup.record(fullname, {
        "path": path,
        "cache": outcome,
        "cache_file": cache_file,
        "kernels": tuple(kernels),
        "seconds": seconds,
    })
    if outcome == "hit":
        log.debug("module %s: rewrite read from %s in %.1f ms", fullname, cache_file,
                  seconds * 1e3)
    elif outcome == "miss":
        log.debug("module %s (%s): transpiled %d kernel%s in %.1f ms, cached in %s", fullname,
                  path, len(kernels), "s" * (len(kernels) != 1), seconds * 1e3, cache_file)
    else:
        log.debug("module %s (%s): the rewrite failed after %.1f ms", fullname, path,
                  seconds * 1e3)
