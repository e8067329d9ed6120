"""The ``GPU_NATIVE_*`` environment variables that hold a number, or switch something on or off.

A value that is not one is no reason to fail an import or a launch: it is ignored with a
``GpuNativeWarning`` that names the variable, what it expects and the default used instead (as
``GPU_NATIVE_CACHE_MAX_BYTES`` is, with a ``CacheWarning``: see :mod:`gpu_native.cache.locations`).
An on/off variable is read by :func:`flag`, which takes ``1``/``true``/``yes``/``on`` and
``0``/``false``/``no``/``off`` and warns the same way of anything else.  The variables are listed in
docs/environment.md.
"""

from __future__ import annotations

import os

from _gpu_native_startup import flag as flag

from .errors import GpuNativeWarning
from .log import warn

__all__ = ["BACKENDS", "choice", "flag", "integer"]

#: What ``GPU_NATIVE_BACKEND`` may hold (empty is ``auto``); ``gpu-native doctor`` names them too.
BACKENDS = ("auto", "cuda", "sim")


def integer(name: str, default: int, minimum: int = 0) -> int:
    """The integer ``os.environ[name]`` holds (``default`` when it is unset or empty), or
    ``default`` with a warning when it holds anything else or a value below ``minimum``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        warn(f"gpu_native: ignoring {name}={text!r}: expected an integer of at least "
             f"{minimum}; using {default}", GpuNativeWarning)
        return default
    return value


_told: set[tuple[str, str]] = set()


def choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """Which of ``choices`` ``os.environ[name]`` names (case and spaces aside; ``default`` when
    it is unset or empty), or ``default`` with a warning, once per value, when it names none."""
    text = os.environ.get(name, "")
    value = text.strip().lower()
    if not value:
        return default
    if value in choices:
        return value
    if (name, text) not in _told:
        _told.add((name, text))
        warn(f"gpu_native: ignoring {name}={text!r}: expected one of {', '.join(choices)}; "
             f"using {default}", GpuNativeWarning)
    return default
