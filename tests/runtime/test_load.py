"""Load: launches with arrays allocated and freed in the loop hold device and host memory flat,
and many Python threads on many streams get correct results.

The work is done by tools/load_test.py (imported from its file, so its kernels go through the
decorator fallback rather than the import hook); this file runs it small on the simulator in CI
and at size on a GPU.  ``python3 tools/load_test.py`` runs the full 1,000,000 launches and prints
the figures; ``GN_LOAD_LAUNCHES`` scales the GPU test here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

from tests.helpers import ROOT

GPU_LAUNCHES = int(os.environ.get("GN_LOAD_LAUNCHES", "200000"))


@pytest.fixture(scope="module")
def tool():
    name = "gn_tools_load_test"
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "load_test.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)


def report(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1) + "\n" + \
        "\n".join(json.dumps(s) for s in result.get("samples", []))


@pytest.mark.slow
def test_simulator_launch_loop_holds_memory_flat(tool, sim):
    result = tool.memory_loop(3000, n=1024, check_every=500)
    assert result["flat"] and not result["errors"], report(result)
    assert result["growth"]["allocations"] == 0  # every array of the loop was freed
    assert all(s["allocations"] == result["samples"][0]["allocations"]
               for s in result["samples"])


@pytest.mark.slow
def test_simulator_threads_on_streams(tool, sim):
    result = tool.threaded(8, 200, n=512)
    assert result["ok"], report(result)
    assert result["launches"] == 1600


@pytest.mark.slow
def test_command_line_summary(tool, sim, tmp_path, capsys):
    out = tmp_path / "summary.json"
    assert tool.main(["--launches", "400", "--per-thread", "20", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "launches/s" in text and "memory FLAT" in text and "8/8 threads correct" in text
    summary = json.loads(out.read_text())
    assert summary["backend"] == "sim"
    assert [s["at"] for s in summary["allocate_launch_free"]["samples"]] == [
        "start", "25%", "50%", "75%", "end"]


@pytest.mark.gpu
def test_allocate_launch_free_holds_gpu_and_host_memory_flat(tool, cuda_backend):
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        # cuMemGetInfo counts every process's memory on the device, and the other workers'
        # tests allocate and free while this one samples.
        pytest.skip("measures the device's memory in use: run it without pytest -n")
    result = tool.memory_loop(GPU_LAUNCHES)
    print("\n" + report(result))
    assert not result["errors"], result["errors"]
    assert result["flat"], report(result)


@pytest.mark.gpu
def test_eight_threads_on_eight_streams_launch_ten_thousand_kernels_each(tool, cuda_backend):
    result = tool.threaded(8, 10_000)
    print("\n" + report(result))
    assert result["ok"], report(result)
    assert result["launches"] == 80_000
