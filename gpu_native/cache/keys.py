"""Cache keys: what makes two compiled kernels interchangeable.

A key is the SHA-256 of a canonical JSON document, so it is a 64-character lowercase hex string
that can name a file and nothing else.  There are two of them:

* the *artifact id* hashes everything that decides what NVRTC is asked to do: the generated CUDA
  source (which already contains every ``@gpu_device`` function the kernel reaches, from any
  module), the text of the headers it includes (``gpu_native/prelude.cuh``, by content hash: see
  :mod:`gpu_native.headers`), the kernel symbol, the arch, the compile options, gpu_native's
  version and :data:`SCHEMA_VERSION`.  Precompiled directories are indexed by it, because a
  deployment must find its artifacts without loading NVRTC to ask for its version;
* the *cache key* hashes the artifact id together with the NVRTC version, so that upgrading NVRTC
  recompiles everything in the per-user cache.

These live on the runtime side (not in :mod:`gpu_native.compiler`) because a deployment computes
them without importing the compiler.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from .._version import __version__
from ..headers import headers_digest

if TYPE_CHECKING:
    from ..build import BuildRequest

# Bump when the layout of entries, sidecars or keys changes: old entries then simply stop matching.
SCHEMA_VERSION = 1

_HEX = "0123456789abcdef"


def is_valid_key(key: object) -> bool:
    """Whether ``key`` is a 64-digit lowercase hex digest (and so a safe file name)."""
    return isinstance(key, str) and len(key) == 64 and not key.strip(_HEX)


def _digest(document: dict) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def compile_options(request: BuildRequest) -> dict:
    """The options that change the machine code, as they enter the key."""
    return {
        "fastmath": bool(request.fastmath),
        "max_registers": request.max_registers,
        "uses_half": bool(request.uses_half),
        # Fixed today; listed so that changing them later changes every key.
        "lineinfo": True,
        "std": "c++17",
    }


def artifact_id(request: BuildRequest) -> str:
    """The compiler-independent identity of a build: names entries in precompiled directories."""
    source_hash = hashlib.sha256(request.source.encode("utf-8")).hexdigest()
    return _digest({
        "schema": SCHEMA_VERSION,
        "gpu_native": __version__,
        "arch": request.arch,
        "symbol": request.symbol,
        "options": compile_options(request),
        "source": source_hash,
        # The source only names the prelude (`#include`); its text is hashed here.
        "headers": headers_digest(),
    })


def cache_key(artifact: str, nvrtc_version: str) -> str:
    """The per-user cache key: an artifact id compiled by one NVRTC version."""
    if not is_valid_key(artifact):
        raise ValueError(f"invalid artifact id {artifact!r}")
    return _digest({"schema": SCHEMA_VERSION, "artifact": artifact, "nvrtc": nvrtc_version})
