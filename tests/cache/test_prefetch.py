"""Compiling ahead on a cold start (gpu_native.cache.prefetch), in fresh interpreters.

A cold import notes the kernels it creates; the first note starts a worker thread that loads NVRTC
(after the transpiler is done, so as not to compete with it for the GIL) and builds them once a
device is bound, so the first launch finds them in memory.
NVRTC runs on the CPU, so everything but the CUDA backend's own call is exercised here; that call
is checked against a stand-in driver.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_native.cache import prefetch
from gpu_native.runtime import backend as B
from gpu_native.spec import KernelOptions, KernelSpec, VariantSpec

KERNELS = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32

    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] + b[i]

    @gpu_kernel(Kernel1D)
    def twice(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 2.0
''')

# Imports the module, binds "a device" of arch sm_90 the way the CUDA backend does, then asks the
# lookup for both kernels as a launch would, and reports what happened.
PROBE = textwrap.dedent('''\
    import json, sys, threading
    import gpu_native
    import mykernels
    p = sys.modules.get("gpu_native.cache.prefetch")
    report = {"imported": p is not None,
              "worker": bool(p and p._worker),
              "noted": p._noted_count if p else 0}
    if "PROBE_IMPORT_ONLY" in __import__("os").environ:
        print(json.dumps(report)); sys.exit(0)
    if p is not None:
        p.device_ready("sm_90")
        p._wait_built()
    from gpu_native.cache import BuildRequest, find_or_build
    k = mykernels.add_kernel
    v = next(iter(k.variants.values()))
    art = find_or_build(BuildRequest.for_variant(k.spec, v.spec, "sm_90", k.spec_file))
    report["origin"] = art.origin
    report["nvrtc_loaded"] = "gpu_native.compiler.nvrtc" in sys.modules
    report["libcst_loaded"] = "libcst" in sys.modules
    print(json.dumps(report))
''')


def run_probe(work: Path, cache: Path, **env: str) -> dict:
    import os

    full = dict(os.environ, GPU_NATIVE_CACHE_DIR=str(cache), **env)
    full["PYTHONPATH"] = os.pathsep.join([str(work), *sys.path[1:]])
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=work, env=full, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "mykernels.py").write_text(KERNELS)
    return tmp_path


@pytest.mark.slow
def test_a_cold_import_builds_its_kernels_ahead_and_the_launch_finds_them_in_memory(
        tmp_path, work):
    report = run_probe(work, tmp_path / "cache", GPU_NATIVE_PREFETCH="1")
    assert report["imported"] and report["worker"]
    assert report["noted"] == 2  # both kernels, one variant each
    # Built by the prefetch thread: the launch's lookup is a memory hit, not a compile.
    assert report["origin"] == "memory"
    entries = list((tmp_path / "cache" / "kernels").rglob("*.cubin*")) or \
        [p for p in (tmp_path / "cache" / "kernels").rglob("*") if p.is_file()]
    assert len(entries) >= 2  # and stored for the next process


@pytest.mark.slow
def test_kernels_built_ahead_are_what_the_bound_devices_driver_loads(tmp_path, work):
    """The driver's version goes to the worker with the arch: for a driver of an older CUDA major
    than NVRTC it builds nothing (the launch then reports why), instead of a kernel the driver
    cannot load."""
    code = textwrap.dedent('''\
        import json, sys
        import mykernels
        from gpu_native.compiler import nvrtc
        p = sys.modules["gpu_native.cache.prefetch"]
        older = (nvrtc.nvrtc_version()[0] - 1) * 1000 + 40
        p.device_ready("sm_90", older)
        p._wait_built()
        from gpu_native.cache import BuildRequest, find_or_build, user_store
        from gpu_native.errors import CudaVersionError
        k = mykernels.add_kernel
        v = next(iter(k.variants.values()))
        try:
            find_or_build(BuildRequest.for_variant(k.spec, v.spec, "sm_90", k.spec_file, older))
            error = None
        except CudaVersionError as exc:
            error = str(exc)
        print(json.dumps({"built": len(user_store().scan()), "error": error}))
    ''')
    import os

    full = dict(os.environ, GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"), GPU_NATIVE_PREFETCH="1")
    full["PYTHONPATH"] = os.pathsep.join([str(work), *sys.path[1:]])
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=work, env=full,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["built"] == 0 and "the driver supports CUDA" in report["error"], report


@pytest.mark.slow
def test_a_warm_import_never_loads_the_prefetcher_nor_nvrtc(tmp_path, work):
    cache = tmp_path / "cache"
    run_probe(work, cache, GPU_NATIVE_PREFETCH="1")
    report = run_probe(work, cache, GPU_NATIVE_PREFETCH="1")
    assert not report["imported"] and not report["libcst_loaded"]
    assert report["origin"] == "cache" and not report["nvrtc_loaded"]


@pytest.mark.slow
@pytest.mark.parametrize("env", [{"GPU_NATIVE_PREFETCH": "0"},
                                 {"GPU_NATIVE_PREFETCH": "1", "GPU_NATIVE_REQUIRE_PRECOMPILED": "1"},
                                 {"GPU_NATIVE_PREFETCH": "1", "GPU_NATIVE_BACKEND": "sim"}],
                         ids=["turned-off", "require-precompiled", "simulator"])
def test_nothing_is_compiled_ahead_when_it_must_not_or_need_not_be(tmp_path, work, env):
    report = run_probe(work, tmp_path / "cache", PROBE_IMPORT_ONLY="1", **env)
    assert report["imported"]  # the transpiler ran ...
    assert not report["worker"] and report["noted"] == 0  # ... and nothing was started


@pytest.mark.parametrize(("nodes", "wanted"), [((), False), (("/dev/nvidiactl",), True),
                                                (("/dev/dxg",), True)])
def test_by_default_linux_compiles_ahead_only_where_an_nvidia_device_node_exists(
        monkeypatch, nodes, wanted):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("GPU_NATIVE_PREFETCH", raising=False)
    monkeypatch.delenv("GPU_NATIVE_BACKEND", raising=False)
    monkeypatch.delenv("GPU_NATIVE_REQUIRE_PRECOMPILED", raising=False)
    monkeypatch.delitem(sys.modules, "gpu_native.compiler.nvrtc", raising=False)
    monkeypatch.setattr(prefetch.os.path, "exists", lambda path: path in nodes)
    assert prefetch._wanted() is wanted


def test_at_most_max_variants_are_noted(monkeypatch):
    monkeypatch.setattr(prefetch, "_active", True)
    monkeypatch.setattr(prefetch, "_worker", object())  # as if running: none is started here
    monkeypatch.setattr(prefetch, "_pending", [])
    monkeypatch.setattr(prefetch, "_noted_count", 0)
    variants = tuple(VariantSpec((), f"k{i}", i, "") for i in range(prefetch.MAX_VARIANTS + 3))
    spec = KernelSpec("k", "m", "m.py", 1, 1, (), (), KernelOptions(), variants)
    prefetch.note(spec, None)
    prefetch.note(spec, None)
    assert len(prefetch._pending) == prefetch.MAX_VARIANTS


@pytest.mark.slow
def test_the_worker_loads_nvrtc_only_after_the_transpiler(tmp_path, work):
    """NVRTC's loading is Python holding the GIL: begun beside the transpiler, it slowed the
    cold start down instead (0.70 s against 0.55 s without compiling ahead, on the H200)."""
    code = textwrap.dedent('''\
        import sys, threading
        order = []
        real = threading.Thread.start
        def start(self):
            order.append((self.name, "libcst" in sys.modules, "gpu_native.rewrite" in sys.modules))
            real(self)
        threading.Thread.start = start
        import mykernels
        print(order)
    ''')
    import os

    full = dict(os.environ, GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"), GPU_NATIVE_PREFETCH="1")
    full["PYTHONPATH"] = os.pathsep.join([str(work), *sys.path[1:]])
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, env=full, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[('gpu_native-prefetch', True, True)]"


def test_a_device_bound_before_nvrtc_has_loaded_skips_the_warm_up_compile(monkeypatch):
    from gpu_native.compiler import nvrtc

    calls = []
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: calls.append("load"))
    monkeypatch.setattr(nvrtc, "warm_up", lambda source: calls.append("warm-up"))
    monkeypatch.setattr(prefetch, "_arch", "sm_90")
    prefetch._load()
    monkeypatch.setattr(prefetch, "_arch", None)
    prefetch._load()
    assert calls == ["load", "load", "warm-up"] and prefetch._loaded.is_set()


@pytest.mark.slow
def test_a_fork_waits_for_the_worker_and_the_parent_carries_on(tmp_path, work):
    code = textwrap.dedent('''\
        import os, sys
        import mykernels
        p = sys.modules["gpu_native.cache.prefetch"]
        worker = p._worker
        pid = os.fork()
        if pid == 0:
            # The before-fork hook joined the worker: NVRTC is wholly imported or not at all.
            os._exit(0 if worker is not None and not worker.is_alive() and p._worker is None
                     else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert not p._stopping  # the parent may still compile ahead: a new worker builds them
        p.device_ready("sm_90")
        p._wait_built()
        assert p._worker is not worker and not p._pending
        k = mykernels.add_kernel
        from gpu_native.cache import BuildRequest, find_or_build
        v = next(iter(k.variants.values()))
        art = find_or_build(BuildRequest.for_variant(k.spec, v.spec, "sm_90", k.spec_file))
        assert art.origin == "memory", art.origin
        print("ok")
    ''')
    import os

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    full = dict(os.environ, GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"), GPU_NATIVE_PREFETCH="1")
    full["PYTHONPATH"] = os.pathsep.join([str(work), *sys.path[1:]])
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=work, env=full,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_the_cuda_backend_hands_the_arch_over_before_it_creates_the_context(monkeypatch):
    calls = []
    backend = object.__new__(B.CudaBackend)
    backend._tls = __import__("threading").local()
    backend._pools_configured = set()
    monkeypatch.setattr(backend, "_configure_pool", lambda ordinal: calls.append("pool"),
                        raising=False)
    monkeypatch.setattr(backend, "properties", lambda ordinal: {"arch": "sm_90"}, raising=False)
    monkeypatch.setattr(B.D, "make_current", lambda ordinal: calls.append(("context", ordinal)))
    monkeypatch.setattr(B.D, "driver_version", lambda: 12040)
    monkeypatch.setattr(prefetch, "device_ready",
                        lambda arch, driver: calls.append(("ready", arch, driver)))
    backend.set_thread_device(1)
    # with the driver's version, so that what it compiles is what this driver loads
    assert calls == [("ready", "sm_90", 12040), ("context", 1), "pool"]
