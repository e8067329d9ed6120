"""One exception family for everything gpu_native raises on purpose.

Errors about a user's kernel carry a :class:`SourceSpan`, so the message can show ``file:line:col``,
the source line and a caret under the offending code.  Errors raised by a kernel while it runs on the
device (a failed bounds check, a failed ``assert``) are raised on the host at the next
synchronisation point and subclass the built-in exception a Python programmer would expect
(``IndexError``, ``AssertionError``, ``ZeroDivisionError``).
"""

from __future__ import annotations

from _gpu_native_startup import GpuNativeWarning as GpuNativeWarning

from .nodes import node

__all__ = [
    "CompileError",
    "ContextLostError",
    "CudaError",
    "CudaVersionError",
    "DeviceRaceError",
    "GpuNativeError",
    "GpuNativeWarning",
    "InternalError",
    "KernelAssertionError",
    "KernelError",
    "KernelIndexError",
    "KernelZeroDivisionError",
    "LaunchError",
    "MissingArtifactError",
    "SourceSpan",
    "TranspileError",
    "format_caret",
]


@node
class SourceSpan:
    """A place in a user's Python file: 1-based line, 0-based column, as Python's ``ast`` counts."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


def format_caret(span: SourceSpan) -> str:
    """Return the source line of ``span`` with a caret line under the spanned columns."""
    text = span.source_line.rstrip("\n")
    if not text:
        return ""
    width = 1
    if span.end_col is not None and span.end_col > span.col:
        width = span.end_col - span.col
    width = max(1, min(width, max(1, len(text) - span.col)))
    prefix = "".join(ch if ch == "\t" else " " for ch in text[: span.col])
    return f"    {text}\n    {prefix}{'^' * width}"


class GpuNativeError(Exception):
    """Base class of every error gpu_native raises on purpose."""


class TranspileError(GpuNativeError):
    """A kernel is outside the supported language, is ill-typed, or breaks a safety rule.

    The message names ``file:line:col``, shows the source line with a caret, and says what to
    write instead.
    """

    def __init__(self, message: str, span: SourceSpan | None = None, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        super().__init__(self._render())

    def __reduce__(self):
        # Rebuilt from the constructor's own arguments: a worker's error reaches its parent.
        return (type(self), (self.message, self.span, self.hint), self.__dict__)

    def _render(self) -> str:
        if self.span is None:
            head = f"error: {self.message}"
        else:
            head = f"{self.span}: error: {self.message}"
        parts = [head]
        if self.span is not None:
            caret = format_caret(self.span)
            if caret:
                parts.append(caret)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class InternalError(GpuNativeError):
    """A defect in gpu_native itself, not in the user's code.

    The message names the stage that failed (``stage``: a checker pass, say) and the function it
    was working on; the exception that stage raised is the ``__cause__``.
    """

    def __init__(self, message: str, stage: str = ""):
        super().__init__(message)
        self.stage = stage

    def __reduce__(self):
        return (type(self), (self.args[0], self.stage))


class CompileError(GpuNativeError):
    """NVRTC rejected generated CUDA C++.  The message holds the NVRTC log, whose locations are
    the user's Python lines thanks to ``#line`` directives."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message if not log else f"{message}\n{log}")


class CudaVersionError(CompileError):
    """The installed NVIDIA driver cannot load what this NVRTC produces: a CUDA 13 NVRTC with a
    driver older than R580 (CUDA 12), say.  The message names the NVRTC and driver versions and
    the fix (``pip install 'gpu-native[cu12]'``, or a newer driver)."""


class MissingArtifactError(GpuNativeError):
    """``GPU_NATIVE_REQUIRE_PRECOMPILED=1`` is set and no precompiled artifact matches."""


class LaunchError(GpuNativeError, ValueError):
    """A launch configuration (grid, block, shared memory) is invalid for the kernel or device."""


class CudaError(GpuNativeError):
    """A CUDA driver call failed.  ``name`` is the CUDA error name, e.g. ``CUDA_ERROR_OUT_OF_MEMORY``."""

    def __init__(self, name: str, code: int, message: str):
        self.name = name
        self.code = code
        self.detail = message
        super().__init__(f"{name} ({code}): {message}")

    def __reduce__(self):
        # Without this, unpickling in a multiprocessing parent fails, and a Pool waits forever.
        return (type(self), (self.name, self.code, self.detail), self.__dict__)


class ContextLostError(CudaError):
    """A sticky CUDA error: the process's CUDA context is lost and no further GPU work can run."""


class KernelError(GpuNativeError):
    """Mixin for errors a kernel reported from the device.

    Attributes give the kernel name, the Python location of the failing check, and the block and
    thread indices of the first thread that failed; ``count`` is how many threads failed, and for
    an index error ``index``, ``length`` and ``array`` say what was out of bounds (None for the
    other errors).
    """

    kernel: str
    span: SourceSpan | None
    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    count: int
    index: int | None
    length: int | None
    array: str | None

    def _set_origin(self, kernel: str, span: SourceSpan | None, block, thread) -> None:
        self.kernel = kernel
        self.span = span
        self.block = tuple(block)
        self.thread = tuple(thread)


class KernelIndexError(KernelError, IndexError):
    """An index was out of bounds inside a kernel (checked on the device)."""


class KernelAssertionError(KernelError, AssertionError):
    """An ``assert`` failed inside a kernel."""


class KernelZeroDivisionError(KernelError, ZeroDivisionError):
    """An integer ``//`` or ``%`` by zero inside a kernel."""


class DeviceRaceError(KernelError, RuntimeError):
    """The simulator saw two threads race on one element (only the simulator can see this)."""
