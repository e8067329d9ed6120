"""Shared fixtures: the environment every test starts from, the backend parametrisation and the
``gpu`` marker.

No ``GPU_NATIVE_*`` setting of the environment pytest was started in reaches a test or a process
a test starts: a test sets what it needs.  The run has a cache directory of its own.

Kernel tests take the ``backend`` fixture and run once on the simulator (everywhere) and once on
the CUDA backend (only where a GPU exists; marked ``gpu``).  ``pytest -m gpu`` on a GPU machine
runs every GPU half of the suite.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.helpers import EXAMPLES, gpu_available

CACHE_DIR = "GPU_NATIVE_CACHE_DIR"
_ignored = pytest.StashKey[list]()
_session_cache = pytest.StashKey[str]()


def pytest_configure(config):
    """Drop the ``GPU_NATIVE_*`` settings pytest was started with and give the whole run a cache
    directory of its own.

    A developer's ``GPU_NATIVE_BACKEND=sim`` (or any other setting) would change what tests see,
    and every child process inherits ``os.environ``; the settings go before any test module is
    imported, since gpu_native reads some of them once, at import.  The cache directory keeps
    every test off the user's real cache (kernels, rewritten modules, NVRTC records).
    """
    import shutil
    import tempfile

    config.stash[_ignored] = sorted(n for n in os.environ if n.startswith("GPU_NATIVE_"))
    for name in config.stash[_ignored]:
        del os.environ[name]
    directory = tempfile.mkdtemp(prefix="gpu_native-tests-")
    config.stash[_session_cache] = directory
    os.environ[CACHE_DIR] = directory
    try:  # the startup hook's record of modules with no kernels moves there too
        import _gpu_native_startup as startup
    except ImportError:
        pass
    else:
        startup._no_kernels.file = startup._negative_cache_file()
    config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))


def pytest_report_header(config):
    ignored = config.stash.get(_ignored, [])
    if ignored:
        return f"gpu_native: ignoring {', '.join(ignored)} from the environment"
    return None


@pytest.fixture(autouse=True)
def _isolated_environment(request, monkeypatch):
    """Start every test with no ``GPU_NATIVE_*`` variable but the cache directory: whatever an
    earlier test or module left is removed for the test and put back after it.

    The cache directory stays the run's (or the one a module fixture chose) rather than a new one
    per test: cache keys are content hashes, so a shared cache cannot hand a test a wrong kernel,
    and a fresh one per test would recompile every kernel of every test.  Tests that look at the
    cache itself (what it holds, cold and warm starts) take ``isolated_cache``.
    """
    for name in list(os.environ):
        if name.startswith("GPU_NATIVE_") and name != CACHE_DIR:
            monkeypatch.delenv(name)
    if CACHE_DIR not in os.environ:
        monkeypatch.setenv(CACHE_DIR, request.config.stash[_session_cache])


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A cache directory of the test's own, ``tmp_path / "cache"`` (not yet created), and an empty
    in-process kernel memory: for tests that look at what the cache holds.  A module asks for it
    for every test with ``pytestmark = pytest.mark.usefixtures("isolated_cache")``."""
    from gpu_native.cache import clear_memory_cache

    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR, str(cache))
    clear_memory_cache()
    yield cache
    clear_memory_cache()


@pytest.fixture
def rng():
    """A fresh, unseeded generator: every run draws new inputs (a test that needs a fixed seed
    defines its own)."""
    import numpy as np

    return np.random.default_rng()


@pytest.fixture
def sim():
    """Run the whole test on the simulator (arrays made in it belong to its backend)."""
    from gpu_native.runtime.backend import use

    with use("sim") as selected:
        yield selected


@pytest.fixture(params=["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def backend(request):
    """Run the test on the simulator and, where there is a GPU, on the GPU."""
    from gpu_native.runtime.backend import use

    with use(request.param) as selected:
        yield selected.name


@pytest.fixture
def hopper(backend):
    """The backend, on the GPU only where it is an sm_90 one (warpgroup MMA and tensor copies
    run nowhere else)."""
    if backend == "cuda":
        from gpu_native.runtime import driver

        if driver.device_properties(0)["arch"] != "sm_90":
            pytest.skip("warpgroup MMA and tensor copies need an sm_90 GPU")
    return backend


@pytest.fixture
def cuda_backend():
    """For tests that only make sense on a real GPU (mark them ``gpu``)."""
    from gpu_native.runtime.backend import use

    with use("cuda") as selected:
        yield selected


@pytest.fixture
def launch_paths(monkeypatch):
    """Which way each launch of a generated launcher went: ``fast`` gets one entry per call of
    ``launch`` from its fast path (True when it passed the launch configuration and the argument
    buffer the launcher was given), ``failed`` and ``slow`` count the calls of those.  Only
    launchers made while the fixture is active are recorded."""
    from gpu_native.nodes import replace
    from gpu_native.runtime.context import LaunchContext

    record = {"fast": [], "failed": 0, "slow": 0}
    fast_path = LaunchContext.fast_path

    def recording(self):
        pieces = fast_path(self)
        launch, failed, slow = pieces.launch, pieces.failed, pieces.slow
        config = (pieces.function, *pieces.grid, *pieces.block, pieces.shared_mem_bytes,
                  pieces.stream)

        def launch_(*args):
            n = len(config)
            record["fast"].append(all(a is b for a, b in zip(args[:n], config))
                                  and args[n] == pieces.address)
            return launch(*args)

        def failed_(err):
            record["failed"] += 1
            return failed(err)

        def slow_(*args):
            record["slow"] += 1
            return slow(*args)

        return replace(pieces, launch=launch_, failed=failed_, slow=slow_)

    monkeypatch.setattr(LaunchContext, "fast_path", recording)
    return record


@pytest.fixture
def kernel_module(tmp_path, monkeypatch):
    """Write a module to a temporary package directory and import it (through the hook when it is
    installed, else through the decorator fallback).  Returns ``load(source, name=...)``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    counter = iter(range(10**6))

    def load(source: str, name: str | None = None):
        import importlib

        name = name or f"gn_test_module_{next(counter)}"
        (tmp_path / f"{name}.py").write_text(source)
        importlib.invalidate_caches()
        sys.modules.pop(name, None)
        return importlib.import_module(name)

    return load


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return EXAMPLES
