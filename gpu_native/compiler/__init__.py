"""NVRTC only: generated CUDA C++ → cubin for one exact sm (see :mod:`.nvrtc`).

Importing this package loads NVRTC.  The runtime never imports it unless a kernel has to be
compiled: cache keys and lookups live in :mod:`gpu_native.cache`, which imports this package
only to compile, and what a build request is lives in :mod:`gpu_native.build`, below both.  Nothing
here imports the cache or the transpiler; ahead-of-time builds of whole packages, which need both,
are :mod:`gpu_native.precompile`.
"""

from __future__ import annotations

from .nvrtc import CompiledImage as CompiledImage
from .nvrtc import choose_target as choose_target
from .nvrtc import compile_request as compile_request
from .nvrtc import nvrtc_options as nvrtc_options
from .nvrtc import nvrtc_version as nvrtc_version
from .nvrtc import supported_archs as supported_archs

__all__ = [
    "CompiledImage",
    "choose_target",
    "compile_request",
    "nvrtc_options",
    "nvrtc_version",
    "supported_archs",
]
