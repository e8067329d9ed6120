"""The environment a test runs in (tests/conftest.py): none of the ``GPU_NATIVE_*`` settings pytest
was started with reaches a test or a process it starts, and the cache is the run's own.

The last test runs pytest itself, as a developer with hostile settings would, on tests those
settings break.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from tests.helpers import ROOT, child_env

THIS = "tests/project/test_environment.py"


def _settings(environ) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith("GPU_NATIVE_")}


def test_no_gpu_native_setting_but_the_cache_directory_reaches_a_test():
    settings = _settings(os.environ)
    assert list(settings) == ["GPU_NATIVE_CACHE_DIR"], settings
    cache = settings["GPU_NATIVE_CACHE_DIR"]
    assert os.path.basename(cache).startswith("gpu_native-tests-")
    assert os.path.dirname(cache) == tempfile.gettempdir()


def test_a_child_process_inherits_no_other_setting():
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=60)
    assert _settings(json.loads(out.stdout)) == {
        "GPU_NATIVE_CACHE_DIR": os.environ["GPU_NATIVE_CACHE_DIR"]}


def test_a_test_sets_what_it_needs(monkeypatch):
    from gpu_native.runtime.backend import select

    monkeypatch.setenv("GPU_NATIVE_BACKEND", "sim")
    assert select().name == "sim"


# Settings that each change a result when they reach the tests below: the backend and the
# prefetcher (test_prefetch's cold start), a deployment that may not compile, the simulator's race
# detector, a cache directory of the developer's and an import hook turned off.
HOSTILE = {
    "GPU_NATIVE_BACKEND": "bogus",
    "GPU_NATIVE_PREFETCH": "0",
    "GPU_NATIVE_REQUIRE_PRECOMPILED": "1",
    "GPU_NATIVE_SIM_RACES": "0",
    "GPU_NATIVE_DISABLE_HOOK": "1",
}
BROKEN_BY_THEM = [
    f"{THIS}::test_no_gpu_native_setting_but_the_cache_directory_reaches_a_test",
    f"{THIS}::test_a_child_process_inherits_no_other_setting",
    "tests/cache/test_prefetch.py::"
    "test_a_cold_import_builds_its_kernels_ahead_and_the_launch_finds_them_in_memory",
    "tests/simulator/test_simulator_errors.py::TestRaces::test_unsafe_store_two_threads_one_element",
    "tests/simulator/test_sim_ir.py::TestRoundTrip::"
    "test_constants_keep_their_bits_and_shared_variables_their_identity",
]


@pytest.mark.slow
def test_a_developers_settings_change_no_result(tmp_path):
    developer_cache = tmp_path / "developer-cache"
    env = child_env(developer_cache, **HOSTILE)
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          *BROKEN_BY_THEM], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert f"{len(BROKEN_BY_THEM)} passed" in out.stdout, out.stdout[-2000:]
    assert "gpu_native: ignoring " + ", ".join(sorted([*HOSTILE, "GPU_NATIVE_CACHE_DIR"])) \
        in out.stdout, out.stdout[:2000]
    assert not developer_cache.exists()
