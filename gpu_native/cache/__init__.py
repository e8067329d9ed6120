"""Compiled kernels: the per-user artifact cache, precompiled deployments, and the lookup that
goes through both before it asks NVRTC (:func:`find_or_build`).

This is the runtime side.  Importing it loads neither NVRTC, nor libcst, nor
:mod:`gpu_native.compiler`: those are imported only when a kernel really has to be compiled, so a
warm start or a precompiled deployment never pays for them.

See :mod:`.lookup` for the search order, :mod:`.locations` for the environment variables and the
``__gpu_native__`` directory a package can ship, :mod:`.store` for the on-disk format,
:mod:`.keys` for what the keys hash, and :mod:`.housekeeping` for the per-user cache as a whole
(its size cap, ``gpu-native cache info`` and ``clear``).  What a build request is
(:class:`~gpu_native.build.BuildRequest`, re-exported here) is defined below both this package and
the compiler, so the compiler never imports the cache.
"""

from __future__ import annotations

from ..build import BuildRequest as BuildRequest
from ..build import kernel_label as kernel_label
from .keys import SCHEMA_VERSION as SCHEMA_VERSION
from .keys import artifact_id as artifact_id
from .keys import cache_key as cache_key
from .locations import SHIPPED_DIRNAME as SHIPPED_DIRNAME
from .locations import CacheWarning as CacheWarning
from .locations import cache_root as cache_root
from .locations import kernels_dir as kernels_dir
from .lookup import Artifact as Artifact
from .lookup import clear_memory_cache as clear_memory_cache
from .lookup import find_or_build as find_or_build
from .lookup import user_store as user_store
from .store import ArtifactStore as ArtifactStore

__all__ = [
    "SCHEMA_VERSION",
    "SHIPPED_DIRNAME",
    "Artifact",
    "ArtifactStore",
    "BuildRequest",
    "CacheWarning",
    "artifact_id",
    "cache_key",
    "cache_root",
    "clear_memory_cache",
    "find_or_build",
    "kernel_label",
    "kernels_dir",
    "user_store",
]
