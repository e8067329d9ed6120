"""The CUDA headers gpu_native ships (``gpu_native/include``), read in one place.

Every generated translation unit includes ``gpu_native/prelude.cuh``, the helpers that give the
kernel language its Python semantics.  This module is the one reader of those files: NVRTC is
handed the text :func:`header_text` returns (:mod:`gpu_native.compiler.nvrtc`), and the cache keys
hash the same text (:func:`headers_digest`, :mod:`gpu_native.cache.keys`), so a compiled kernel is
always filed under the header it was compiled with, and an edit of a header changes every key.

Like :mod:`gpu_native.abi`, it imports nothing of the runtime or of the transpiler: a deployment
computes cache keys with it and without the compiler.
"""

from __future__ import annotations

import functools
import hashlib
import os

from .errors import GpuNativeError

__all__ = ["INCLUDE_DIR", "PRELUDE", "SHIPPED", "header_path", "header_text", "headers_digest"]

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
"""The include directory of the installed package (``gpu_native/include``)."""

PRELUDE = "gpu_native/prelude.cuh"
"""The include name of the prelude, as generated code spells it in ``#include "..."``."""

SHIPPED = (PRELUDE,)
"""Every header a generated translation unit may include by name, relative to the include
directory.  NVRTC is given all of them, and all of them enter the cache keys."""


def header_path(name: str = PRELUDE) -> str:
    """The file of the shipped header ``name`` (an include name such as :data:`PRELUDE`)."""
    return os.path.join(INCLUDE_DIR, *name.split("/"))


@functools.cache
def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise GpuNativeError(f"gpu_native's CUDA header {path} cannot be read ({exc.strerror}): "
                             "the installation is incomplete; reinstall gpu-native") from None


def header_text(name: str = PRELUDE) -> str:
    """The text of the shipped header ``name``, read once per process.

    Raises
    ------
    GpuNativeError
        The file is missing or unreadable (a broken installation).
    """
    return _read(header_path(name))


@functools.lru_cache(maxsize=4)
def _digest(items: tuple[tuple[str, str], ...]) -> str:
    h = hashlib.sha256()
    for name, text in items:
        for part in (name, text):
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
    return h.hexdigest()


def headers_digest() -> str:
    """The SHA-256 (hex) of the names and texts of every shipped header (:data:`SHIPPED`)."""
    return _digest(tuple((name, header_text(name)) for name in SHIPPED))
