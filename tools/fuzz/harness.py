"""Running generated kernels: import (through the real pipeline), compile with NVRTC, launch on a
backend and compare with the reference.  Used by ``tests/fuzz/test_fuzz_codegen.py`` and
``tools/fuzz_gpu.py``."""

from __future__ import annotations

import importlib
import itertools
import os
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from . import generator
from .reference import Expected, compare, evaluate

_counter = itertools.count()


@dataclass
class CaseResult:
    """What one generated kernel did on each backend."""

    label: str
    source: str
    mismatches: list[str] = field(default_factory=list)
    failure: str | None = None  # the pipeline refused or crashed on a valid kernel
    exact: int = 0
    tolerant: int = 0
    skipped: int = 0
    known_bugs: tuple[str, ...] = ()
    seconds: float = 0.0
    compiled: bool = False
    warnings: list[str] = field(default_factory=list)  # NVRTC's (informational)

    @property
    def ok(self) -> bool:
        return not self.mismatches and self.failure is None

    def report(self) -> str:
        lines = [f"case {self.label}: " + ("OK" if self.ok else "FAILED")]
        if self.known_bugs:
            lines.append(f"  contains known-bug patterns: {', '.join(self.known_bugs)}")
        if self.failure:
            lines.append("  " + self.failure.replace("\n", "\n  "))
        lines += ["  " + m for m in self.mismatches[:12]]
        if len(self.mismatches) > 12:
            lines.append(f"  ... {len(self.mismatches) - 12} more mismatches")
        lines.append("  kernel source:")
        lines += ["    " + line for line in self.source.splitlines()]
        return "\n".join(lines)


class Workspace:
    """A directory on ``sys.path`` where generated modules are written and imported (so the
    import hook, or the decorator fallback, transpiles them exactly as it would a user's)."""

    def __init__(self, directory: str):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        if directory not in sys.path:
            sys.path.insert(0, directory)

    def load(self, kernel: generator.Kernel):
        name = f"gnfuzz_{next(_counter)}_{os.getpid()}"
        path = os.path.join(self.directory, name + ".py")
        with open(path, "w") as f:
            f.write(generator.kernel_source(kernel))
        importlib.invalidate_caches()
        module = importlib.import_module(name)
        return module, path


def launch(module, kernel: generator.Kernel, inputs: dict[str, np.ndarray], backend: str):
    """Run the kernel on one backend: (outputs, device error or None).  ``host`` runs the
    generated CUDA C++ compiled for the CPU (see host_cuda)."""
    import gpu_native as gn
    from gpu_native.runtime.backend import use

    if backend in ("host", "host32"):
        return _launch_host(module, kernel, inputs, index32=backend == "host32")
    initial = generator.initial_outputs(kernel)
    with use(backend):
        args = []
        for name, _t, writable in kernel.arrays():
            args.append(gn.to_device(initial[name] if writable else inputs[name]))
        fn = getattr(module, kernel.name)
        fn.launch(gn.GridDim1D(kernel.grid), gn.BlockDim1D(kernel.block))(*args)
        error = None
        try:
            gn.synchronize()
        except gn.KernelZeroDivisionError:
            error = "zerodiv"
        except gn.KernelIndexError as exc:
            # A check the transpiler dropped as proven shows up on the simulator as an error
            # without an index (it checks every access): reported as an unexpected error.
            if getattr(exc, "index", None) is None:
                error = f"{type(exc).__name__}: {exc}"
            else:
                error = ("index", exc.block[0] * kernel.block + exc.thread[0], exc.index,
                         exc.length)
        except gn.GpuNativeError as exc:
            error = f"{type(exc).__name__}: {exc}"
        outputs = {name: arr.to_host()
                   for arr, (name, _t, writable) in zip(args, kernel.arrays()) if writable}
    return outputs, error


def _launch_host(module, kernel: generator.Kernel, inputs: dict[str, np.ndarray],
                 index32: bool = False):
    from . import host_cuda

    if kernel.records is not None and kernel.records.tables:
        raise NotImplementedError("the host build does not set const_array tables (__constant__ "
                                  "arrays the runtime fills at load): use sim or cuda")
    initial = generator.initial_outputs(kernel)
    arrays = [np.ascontiguousarray(initial[name] if writable else inputs[name]).copy()
              for name, _t, writable in kernel.arrays()]
    fn = getattr(module, kernel.name)
    (variant,) = fn.variants.values()
    cuda, symbol = variant.cuda, variant.symbol
    if index32:
        # The 32-bit index entry point (gpu_native.emit.index32), emitted here too for the
        # kernels the launcher runs over their logical uids instead.
        from gpu_native import abi
        from gpu_native.emit.index32 import emit_index32
        from gpu_native.ircodec import decode_kernel

        symbol += abi.INDEX32_SUFFIX
        if f" {symbol}(" not in cuda:
            cuda += emit_index32(decode_kernel(variant.spec.ir), "fuzz.py")
    _exited, record, undefined = host_cuda.launch(cuda, symbol, arrays, kernel.grid,
                                                  kernel.block)
    if undefined:
        return {}, "undefined behaviour in the generated C++: " + "; ".join(undefined[:3])
    error = None
    # The error record (gn_error_record): state, site, kernel id, index, length, block, thread.
    state, site = np.frombuffer(record[:8], np.uint32)
    index, length = np.frombuffer(record[16:32], np.int64)
    block, thread = np.frombuffer(record[32:56], np.uint32).reshape(2, 3)
    if state == 2:
        kind = variant.sites[site].kind if site < len(variant.sites) else "?"
        if kind == "zerodiv":
            error = "zerodiv"
        elif kind == "index":
            error = ("index", int(block[0]) * kernel.block + int(thread[0]), int(index),
                     int(length))
        else:
            error = f"host: {kind} error at site {site}"
    outputs = {name: arr for arr, (name, _t, writable) in zip(arrays, kernel.arrays())
               if writable}
    return outputs, error


def nvrtc_compile(module, kernel: generator.Kernel, arch: str = "sm_90") -> str:
    """Compile every variant of the kernel with NVRTC; returns NVRTC's log (empty when clean)."""
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request

    fn = getattr(module, kernel.name)
    logs = []
    for variant in fn.variants.values():
        image = compile_request(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                             arch=arch, label=variant.label))
        if image.log:
            logs.append(image.log)
    return "\n".join(logs)


def run_case(kernel: generator.Kernel, workspace: Workspace, backends=("sim",),
             nvrtc: bool = False, label: str | None = None,
             expected: Expected | None = None) -> CaseResult:
    """Generate, transpile, (compile,) launch on every backend and compare with the reference.

    Backends are compared with the reference, and with each other where both are exact."""
    start = time.perf_counter()
    source = generator.kernel_source(kernel)
    result = CaseResult(label or kernel.name, source, known_bugs=kernel.known_bugs)
    try:
        module, _path = workspace.load(kernel)
    except Exception:
        result.failure = "transpiling a valid kernel failed:\n" + traceback.format_exc(limit=3)
        return result
    inputs = generator.random_inputs(kernel)
    if expected is None:
        expected = evaluate(kernel, inputs)
    if nvrtc:
        try:
            log = nvrtc_compile(module, kernel)
        except Exception:
            result.failure = "NVRTC refused the generated CUDA:\n" + traceback.format_exc(limit=2)
            return result
        result.compiled = True
        if log:
            result.warnings.append(log)
    outputs: dict[str, dict] = {}
    for backend in backends:
        try:
            got, error = launch(module, kernel, inputs, backend)
        except Exception:
            result.failure = f"launching on {backend} failed:\n" + traceback.format_exc(limit=4)
            return result
        outputs[backend] = got
        verdict = compare(kernel, expected, got, error, backend)
        result.mismatches += verdict.mismatches
        result.exact += verdict.exact
        result.tolerant += verdict.tolerant
        result.skipped += verdict.skipped
    result.seconds = time.perf_counter() - start
    return result


__all__ = ["CaseResult", "Workspace", "launch", "nvrtc_compile", "run_case"]
