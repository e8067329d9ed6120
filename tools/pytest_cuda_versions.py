"""A pytest plugin that says which CUDA a run really used (``-p pytest_cuda_versions`` with
``tools/`` on ``sys.path``; tools/device_cuda12.sh loads it).

The header names cuda-bindings; the summary names the NVRTC libraries mapped into the test
process (from ``/proc/self/maps``, so a second NVRTC loaded by another library shows too) and the
version gpu_native compiled with.

At the start of the session it binds cuda-bindings to the NVRTC of its own CUDA major (as the
first compile of a process does), without importing gpu_native's compiler: a CUDA 13 build of
PyTorch or CuPy imported by an interop test may load NVRTC 13 into the process, and
cuda.pathfinder, asked later, would then hand that one to gpu_native.
"""

from __future__ import annotations

import sys


def pytest_sessionstart(session):
    import ctypes

    from gpu_native import toolkit

    major = toolkit.bindings_major()
    path = toolkit.nvrtc_library(major) if major is not None else None
    if path is None:
        return
    ctypes.CDLL(path)
    from cuda.bindings import nvrtc

    nvrtc.nvrtcVersion()  # binds the library now


def pytest_report_header(config):
    try:
        import cuda.bindings
    except Exception as exc:  # reported, not raised: the tests say what is wrong
        return [f"cuda-bindings: not importable ({exc})"]
    return [f"cuda-bindings: {cuda.bindings.__version__} ({cuda.bindings.__file__})"]


def _mapped_nvrtc() -> list[str]:
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libnvrtc.so" in line}
    except OSError:
        return []
    return sorted(p for p in paths if "builtins" not in p)


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    compiler = sys.modules.get("gpu_native.compiler.nvrtc")
    if compiler is None:
        write("gpu_native: NVRTC was not loaded in this process")
    else:
        write("gpu_native: its compiler used NVRTC {}.{} from {}".format(
            *compiler.nvrtc_version(), compiler.library_path()))
    for path in _mapped_nvrtc():
        write(f"gpu_native: mapped {path}")
    driver = sys.modules.get("gpu_native.runtime.driver")
    if driver is not None and getattr(driver, "_initialized", False):
        version = driver.driver_version()
        write(f"gpu_native: driver CUDA {version // 1000}.{version % 1000 // 10}")
