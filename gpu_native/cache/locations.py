"""Where compiled kernels are looked for, and the environment variables that decide it.

=================================  ==============================================================
``GPU_NATIVE_CACHE_DIR``           root of the per-user cache (default:
                                   ``platformdirs.user_cache_dir("gpu_native")``); kernels live in
                                   its ``kernels/`` folder
``GPU_NATIVE_CACHE_MAX_BYTES``     size cap of ``kernels/`` and the import hook's ``modules/``
                                   together (bytes, or with a K/M/G/T/P suffix; default 1G);
                                   least-recently-used entries are evicted past it
``GPU_NATIVE_PRECOMPILED``         precompiled directories (``gpu-native precompile --out``),
                                   separated by ``os.pathsep``, searched before the user cache
``GPU_NATIVE_REQUIRE_PRECOMPILED`` ``1``: never compile; a kernel missing from the precompiled
                                   directories is an error, and NVRTC is never imported
=================================  ==============================================================

A package can also ship its artifacts: a directory named ``__gpu_native__`` (:data:`SHIPPED_DIRNAME`)
in the folder of a kernel's module, or in the folder of any package enclosing it (``mypkg/`` for
``mypkg/sub/mod.py``), is searched after ``GPU_NATIVE_PRECOMPILED``.  Build it with
``gpu-native precompile mypkg --arch sm_80,sm_90 --out mypkg/__gpu_native__`` and include it in
the package data.
"""

from __future__ import annotations

import os
import re
import warnings

# One warning class for every cache of gpu_native (compiled kernels, rewritten modules), defined
# where interpreter startup can raise it without importing gpu_native.
from _gpu_native_startup import CacheWarning as CacheWarning
from _gpu_native_startup import flag

SHIPPED_DIRNAME = "__gpu_native__"
KERNELS_DIRNAME = "kernels"
NVRTC_RECORDS_DIRNAME = "nvrtc"
DEFAULT_MAX_BYTES = 1 << 30

_shipped_dirs: dict[str, tuple[str, ...]] = {}


def cache_root() -> str:
    """The per-user cache root: ``GPU_NATIVE_CACHE_DIR`` or the platform's user cache dir."""
    override = os.environ.get("GPU_NATIVE_CACHE_DIR")
    if override:
        return os.path.abspath(os.path.expanduser(override))
    import platformdirs  # only when needed: a few milliseconds of import time

    return platformdirs.user_cache_dir("gpu_native")


def kernels_dir() -> str:
    """The folder of the per-user cache that holds compiled kernels."""
    return os.path.join(cache_root(), KERNELS_DIRNAME)


def nvrtc_records_dir() -> str:
    """The folder that remembers which NVRTC version a library file is (see :mod:`.nvrtc_probe`)."""
    return os.path.join(cache_root(), NVRTC_RECORDS_DIRNAME)


# The import hook's folder (gpu_native.importhook.pycache.user_cache_path names its entries).
MODULES_DIRNAME = "modules"


def modules_dir() -> str:
    """The folder of the per-user cache that holds the import hook's rewritten modules."""
    return os.path.join(cache_root(), MODULES_DIRNAME)


def parse_size(text: str) -> int:
    """``"500M"`` → 524288000; plain integers are bytes.  Raises ``ValueError`` for anything
    else, and for a size of 0 or past what a file system counts (2**63 - 1 bytes)."""
    match = re.fullmatch(r"\s*([0-9]+)\s*([kmgtp]?)(i?b)?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(text)
    value = int(match.group(1)) << (10 * " kmgtp".index(match.group(2).lower() or " "))
    if not 0 < value < 1 << 63:
        raise ValueError(text)
    return value


def max_cache_bytes() -> int:
    """The user cache's size cap (``GPU_NATIVE_CACHE_MAX_BYTES``, default 1 GiB)."""
    text = os.environ.get("GPU_NATIVE_CACHE_MAX_BYTES", "")
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(text)
    except ValueError:
        warnings.warn(f"gpu_native: ignoring GPU_NATIVE_CACHE_MAX_BYTES={text!r}: expected a "
                      "positive size below 8 EiB such as 536870912 or 512M; using 1G",
                      CacheWarning,
                      stacklevel=3)
        return DEFAULT_MAX_BYTES


def require_precompiled() -> bool:
    """Whether ``GPU_NATIVE_REQUIRE_PRECOMPILED`` forbids compiling."""
    return bool(flag("GPU_NATIVE_REQUIRE_PRECOMPILED", False))


def env_precompiled_dirs() -> tuple[str, ...]:
    """The directories listed in ``GPU_NATIVE_PRECOMPILED``, in order."""
    text = os.environ.get("GPU_NATIVE_PRECOMPILED", "")
    return tuple(os.path.abspath(os.path.expanduser(p)) for p in text.split(os.pathsep) if p)


def shipped_dirs(module_file: str | None) -> tuple[str, ...]:
    """Existing ``__gpu_native__`` directories beside ``module_file`` and its enclosing packages,
    innermost first."""
    if not module_file:
        return ()
    directory = os.path.dirname(os.path.abspath(module_file))
    found = _shipped_dirs.get(directory)
    if found is None:
        dirs = []
        d = directory
        while True:
            candidate = os.path.join(d, SHIPPED_DIRNAME)
            if os.path.isdir(candidate):
                dirs.append(candidate)
            parent = os.path.dirname(d)
            # Climb only from a package into the package that encloses it.
            if parent == d or not (os.path.isfile(os.path.join(d, "__init__.py"))
                                   and os.path.isfile(os.path.join(parent, "__init__.py"))):
                break
            d = parent
        found = _shipped_dirs[directory] = tuple(dirs)
    return found


def precompiled_dirs(module_file: str | None) -> tuple[str, ...]:
    """Every precompiled directory searched for a kernel of ``module_file``, in search order."""
    dirs = list(env_precompiled_dirs())
    dirs.extend(d for d in shipped_dirs(module_file) if d not in dirs)
    return tuple(dirs)


def suggested_out_dir(module_file: str | None) -> str:
    """Where ``gpu-native precompile`` should write so that a deployment finds the artifacts."""
    env = env_precompiled_dirs()
    if env:
        return env[0]
    if module_file:
        return os.path.join(os.path.dirname(os.path.abspath(module_file)), SHIPPED_DIRNAME)
    return "DIR"
