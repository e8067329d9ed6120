"""``examples/dask_map_blocks.py``: a gpu_native kernel mapped over a Dask array's chunks on a
cluster of worker processes, the kernel pickled by module and name.  Its kernel against NumPy
(simulator, and GPU where there is one), and the whole example: two worker processes on the
simulator (CI), and on a GPU with the kernels precompiled by the client and required by the
workers (``gpu``).  Dask is in the test extra; without it these skip."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import EXAMPLES

REPO = str(EXAMPLES.parent)
SCRIPT = str(EXAMPLES / "dask_map_blocks.py")


@pytest.fixture
def kernels(examples_path):
    import dask_kernels

    return dask_kernels


def test_the_chunk_function_matches_numpy(backend, kernels):
    x = np.random.default_rng().uniform(-1.0, 2.0, 10_007).astype(np.float32)
    out = kernels.run_chunk(x, kernels.smoothstep_kernel, 0.25, 1.5)
    np.testing.assert_allclose(out, kernels.smoothstep_reference(x, 0.25, 1.5), atol=1e-6)


def test_the_kernel_travels_by_module_and_name(kernels):
    data = pickle.dumps(kernels.smoothstep_kernel)
    assert b"dask_kernels" in data and b"smoothstep_kernel" in data
    assert pickle.loads(data) is kernels.smoothstep_kernel


def _run(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    environ.update(PYTHONPATH=os.pathsep.join(p for p in (REPO, environ.get("PYTHONPATH")) if p),
                   GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1", **env)
    return subprocess.run([sys.executable, SCRIPT, *args], env=environ, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_two_workers_on_the_simulator(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("dask.array")
    proc = _run(tmp_path, "--n", "300007", "--chunk", "40000", "--workers", "2",
                GPU_NATIVE_BACKEND="sim")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("distributed.LocalCluster (2 processes): 2 workers, backends ['sim'], GPUs ['-', '-']"
            in proc.stdout), proc.stdout
    m = re.search(r"300007 elements in 8 chunks: [\d.]+ s, max abs error (\S+)", proc.stdout)
    assert m and float(m.group(1)) <= 1e-6, proc.stdout


@pytest.mark.gpu
def test_workers_on_the_gpu_use_the_precompiled_kernels(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("dask.array")
    proc = _run(tmp_path, "--n", "50000017", "--chunk", "5000000", "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"precompiled 1 kernel\(s\) for sm_\d+", proc.stdout), proc.stdout
    assert "backends ['cuda']" in proc.stdout, proc.stdout
    m = re.search(r"elements in 11 chunks: [\d.]+ s, max abs error (\S+)", proc.stdout)
    assert m and float(m.group(1)) <= 1e-6, proc.stdout


@pytest.mark.gpu
def test_dask_cuda_puts_one_worker_on_each_gpu(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("dask_cuda")
    from gpu_native.runtime import driver as D

    gpus = D.device_count()
    if gpus < 2:
        pytest.skip("needs two or more GPUs")
    proc = _run(tmp_path, "--n", "50000017", "--chunk", "5000000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = sorted(str(i) for i in range(gpus))
    assert (f"dask_cuda.LocalCUDACluster: {gpus} workers, backends ['cuda'], GPUs {expected}"
            in proc.stdout), proc.stdout
    m = re.search(r"elements in 11 chunks: [\d.]+ s, max abs error (\S+)", proc.stdout)
    assert m and float(m.group(1)) <= 1e-6, proc.stdout
