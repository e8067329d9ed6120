"""The ``gpu_native`` logger, and warnings attributed to the user's code.

What gpu_native does at run time — transpiling a module, finding a kernel in the user cache or a
precompiled directory or compiling it with NVRTC, loading it, falling back to the simulator — is
logged to ``logging.getLogger("gpu_native")`` (with a ``NullHandler``, as a library should):
``DEBUG`` for each step with its timing, ``INFO`` for what costs noticeable time or changes where
kernels run (an NVRTC compile starting, the simulator fallback).  Nothing is printed unless the
application configures logging::

    import logging
    logging.basicConfig()
    logging.getLogger("gpu_native").setLevel(logging.DEBUG)

Importing :mod:`logging` costs a warm start about 2 ms, and gpu_native imports nothing it does not
need: while no module of the process has imported :mod:`logging`, no handler can exist to show a
``DEBUG`` or ``INFO`` record (Python's last-resort handler shows ``WARNING`` and above only), so
the records are skipped without it.  The logger is made, and its ``NullHandler`` added, by the
first record after something imported :mod:`logging`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["LOGGER_NAME", "debug", "info", "logger", "warn"]

LOGGER_NAME = "gpu_native"
_DEBUG, _INFO = 10, 20  # logging.DEBUG, logging.INFO, without importing logging
_logger: Any = None
# gpu_native's code, whose frames a warning skips to reach the user's.
_INTERNAL = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
             os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "_gpu_native_startup.py"),
             "<frozen importlib")
_IMPORTLIB = "<frozen importlib"


def logger():
    """``logging.getLogger("gpu_native")`` with a ``NullHandler``; None while the process has not
    imported :mod:`logging` (then no record could be shown)."""
    global _logger
    if _logger is None:
        if "logging" not in sys.modules:
            return None
        import logging

        log = logging.getLogger(LOGGER_NAME)
        if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
            log.addHandler(logging.NullHandler())
        _logger = log
    return _logger


def debug(message: str, *args: object) -> None:
    """Log ``message % args`` at ``DEBUG`` (formatted only if a handler wants it)."""
    log = _logger if _logger is not None else logger()
    if log is not None and log.isEnabledFor(_DEBUG):
        log.debug(message, *args, stacklevel=2)


def info(message: str, *args: object) -> None:
    """Log ``message % args`` at ``INFO``."""
    log = _logger if _logger is not None else logger()
    if log is not None and log.isEnabledFor(_INFO):
        log.info(message, *args, stacklevel=2)


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside gpu_native (the user's line that
    led here), so the warning shows that line, and the default filter shows it once per line."""
    import warnings

    level = 2  # our caller
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        if not frame.f_code.co_filename.startswith(_IMPORTLIB):
            level += 1  # warnings.warn skips the import system's frames without counting them
        frame = frame.f_back
    warnings.warn(message, category, stacklevel=level)
