"""Tracebacks that show the user's code: gpu_native's own frames are dropped from the errors a
user's mistake causes.

A ``TranspileError`` raised deep in the checker, or a ``TypeError`` about a launch argument, is
about the user's code, and its message says everything (the file, line and caret, or the
parameter); the dozens of gpu_native frames above it only bury the call that caused it.  As JAX
does (``jax._src.traceback_util``), each public entry point catches what propagates out of it,
drops gpu_native's frames from the traceback of a *user error*, and re-raises it with a bare
``raise`` (which adds no frame of its own on Python 3.11 and later; on 3.10 the entry point's
own frame stays).  What is left is the user's frames, down to the call of gpu_native they made.

A user error is an exception gpu_native raised on purpose about its input: a
:class:`~gpu_native.errors.GpuNativeError` other than :class:`~gpu_native.errors.InternalError`,
:class:`~gpu_native.errors.CompileError` (NVRTC refusing generated code is gpu_native's defect)
and :class:`~gpu_native.errors.CudaError` (a driver error may be either's); or a ``TypeError``,
``ValueError`` or ``IndexError`` raised by a ``raise`` statement in gpu_native's own code (the
argument checks).  Anything else — an ``AttributeError`` from a bug, a ``TypeError`` raised by an
operation rather than by a ``raise`` — keeps its whole traceback.

``GPU_NATIVE_TRACEBACK=full`` keeps every frame of every error (the setting for reporting a bug
in gpu_native).  The filtering runs only on the error path: an entry point's ``try`` costs
nothing until something is raised.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from types import CodeType, TracebackType
from typing import TypeVar, cast

from .errors import CompileError, CudaError, CudaVersionError, GpuNativeError, InternalError

__all__ = ["MODE_VARIABLE", "boundary", "is_user_error", "launcher_code", "strip"]

#: The environment variable that chooses the traceback of user errors: ``full`` keeps every
#: frame; anything else (the default) drops gpu_native's.
MODE_VARIABLE = "GPU_NATIVE_TRACEBACK"

# gpu_native's code: the package, and the startup module beside it (the import hook's finder).
_INTERNAL = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
             os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "_gpu_native_startup.py"))
# The attribute that marks an exception already found to be a user error.
_MARK = "_gpu_native_user_error"
# Where a bare `raise` adds no frame of the re-raising function (see the module docstring).
_REPLACE_HEAD = sys.version_info >= (3, 11)

F = TypeVar("F", bound=Callable)


def _is_internal(filename: str) -> bool:
    return filename.startswith(_INTERNAL)


def _full() -> bool:
    from .settings import choice

    try:
        return choice(MODE_VARIABLE, ("filtered", "full"), "filtered") == "full"
    except Warning:  # a warning turned into an error must not take the place of the user's
        return False


def _raised_by_us(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc``'s traceback is gpu_native's own code, stopped at a
    ``raise`` statement (not at an operation that failed)."""
    import opcode

    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not _is_internal(code.co_filename):
        return False
    lasti = tb.tb_lasti
    return 0 <= lasti < len(code.co_code) and \
        code.co_code[lasti] == opcode.opmap["RAISE_VARARGS"]


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` reports a mistake in the user's code or input (see the module docstring),
    so that gpu_native's own frames say nothing the message does not."""
    if isinstance(exc, GpuNativeError):
        if isinstance(exc, (InternalError, CudaError)):
            return False
        return not isinstance(exc, CompileError) or isinstance(exc, CudaVersionError)
    if isinstance(exc, (TypeError, ValueError, IndexError)):
        # Once an entry point has dropped our frames the raise site is gone: an outer entry
        # point (a generic kernel's dispatcher around its launcher) reads the verdict instead.
        return getattr(exc, _MARK, False) or _raised_by_us(exc)
    return False


def _without_internal(tb: TracebackType | None) -> TracebackType | None:
    """The traceback ``tb`` with gpu_native's frames unlinked (in place), or None if none is
    left."""
    kept: list[TracebackType] = []
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    following: TracebackType | None = None
    for entry in reversed(kept):
        entry.tb_next = following
        following = entry
    return following


def _only_internal(tb: TracebackType | None) -> bool:
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            return False
        tb = tb.tb_next
    return True


def strip(exc: BaseException) -> None:
    """Drop gpu_native's frames from the traceback of ``exc`` if it is a user error.

    Called by an entry point in its ``except`` clause, just before a bare ``raise``.  An
    exception whose context is only gpu_native's bookkeeping (a cache lookup that missed) has
    that context hidden too; a ``__cause__`` that is a user error is filtered the same way.
    Does nothing with ``GPU_NATIVE_TRACEBACK=full``, or for any other error.
    """
    if not is_user_error(exc) or _full():
        return
    try:
        setattr(exc, _MARK, True)
    except AttributeError:  # an exception class with __slots__: filtered only this once
        pass
    tb = exc.__traceback__
    if _REPLACE_HEAD:
        exc.__traceback__ = _without_internal(tb)
    elif tb is not None:
        # Python 3.10 re-raises the traceback it caught, whatever __traceback__ says now: the
        # head (this entry point's frame) stays, and what follows it is relinked in place.
        tb.tb_next = _without_internal(tb.tb_next)
    context = exc.__context__
    if context is not None and exc.__cause__ is None and not exc.__suppress_context__ and \
            _only_internal(context.__traceback__):
        exc.__suppress_context__ = True
    cause = exc.__cause__
    if cause is not None and cause is not exc and is_user_error(cause):
        cause.__traceback__ = _without_internal(cause.__traceback__)


def boundary(fn: F) -> F:
    """Make ``fn`` an entry point: a user error leaving it loses gpu_native's frames.

    For functions off the launch fast path (the wrapper is one more call); the launch path uses
    the same ``try``/:func:`strip`/``raise`` inline, on its error path only.
    """

    @functools.wraps(fn)
    def entry_point(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            strip(exc)
            raise

    return cast(F, entry_point)  # (functools.wraps keeps fn's signature)


def launcher_code(code: CodeType, kernel: str, line: int) -> CodeType:
    """The code of a generated launcher (the lambda a launch calls) as its frame should read in a
    traceback: named for its kernel, on the kernel's decorator line ``line``, without columns.

    The launcher is compiled on the kernel's own lines, where its frame would show a line of the
    kernel's body (as if the error were in the kernel) with carets for columns of generated
    code.  It is the one gpu_native frame an argument error cannot drop (every Python function
    an exception passes through gets a traceback entry), so it names what it is instead:
    ``File "mykernels.py", line 3, in add_kernel`` over ``@gpu_kernel(Kernel1D)``.  The
    bytecode is unchanged, so the launch costs the same.
    """
    if sys.version_info >= (3, 11):
        # The location table (CPython's Objects/locations.md): one "line, no columns" entry (code
        # 13, a signed line delta of 0 from co_firstlineno) per at most 8 code units.
        table = bytearray()
        units = len(code.co_code) // 2
        while units > 0:
            n = min(units, 8)
            table += bytes((0x80 | 13 << 3 | (n - 1), 0))
            units -= n
        return code.replace(co_name=kernel, co_qualname=kernel, co_firstlineno=line,
                            co_linetable=bytes(table))
    # Python 3.10: every instruction of the lambda is on its first line, and line numbers are
    # deltas from co_firstlineno; there are no columns.
    return code.replace(co_name=kernel, co_firstlineno=line)
