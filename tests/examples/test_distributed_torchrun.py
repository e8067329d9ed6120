"""``examples/distributed_torchrun.py``: its kernel against NumPy (simulator, and GPU where there
is one), and the whole example under ``torchrun``: two ranks with gloo on the CPU simulator (CI,
when torch is installed) and one rank per GPU with NCCL (``gpu``).  torch is not a dependency of
gpu_native; without it the torchrun tests skip."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import EXAMPLES

REPO = str(EXAMPLES.parent)
SCRIPT = str(EXAMPLES / "distributed_torchrun.py")
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed")


@pytest.fixture
def example(examples_path):
    import distributed_torchrun

    return distributed_torchrun


def test_histogram_kernel_matches_numpy(backend, example):
    samples = example.shard(3, 100_003)
    hist = gn.zeros(example.BINS, gn.i32)
    example.launch_histogram(gn.to_device(samples), hist)
    example.launch_histogram(gn.to_device(samples[:1000]), hist)  # accumulates
    expected = np.bincount(samples, minlength=256) + np.bincount(samples[:1000], minlength=256)
    np.testing.assert_array_equal(hist.to_host(), expected)


def torchrun(nproc: int, tmp_path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    environ.update(PYTHONPATH=os.pathsep.join(p for p in (REPO, environ.get("PYTHONPATH")) if p),
                   GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1", **env)
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc_per_node={nproc}", SCRIPT, "--samples", "50000"],
        env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def rank_lines(out: subprocess.CompletedProcess) -> list[str]:
    assert out.returncode == 0, out.stdout + out.stderr
    # torchrun merges the ranks' output streams, and one rank's line can land in the middle of
    # another's: split at every "rank N/M:" rather than at newlines.
    parts = re.split(r"(?=rank \d+/\d+: )", out.stdout)
    return sorted(p.strip() for p in parts if p.startswith("rank "))


@needs_torch
def test_two_ranks_with_gloo_on_the_simulator(tmp_path):
    # CUDA_VISIBLE_DEVICES="" takes this path on a GPU machine too.
    out = torchrun(2, tmp_path, CUDA_VISIBLE_DEVICES="", GPU_NATIVE_BACKEND="sim")
    lines = rank_lines(out)
    assert len(lines) == 2, out.stdout
    for rank, line in enumerate(lines):
        assert line.startswith(f"rank {rank}/2: 50000 samples on CPU, gpu_native backend sim, "
                               "tensors copied through host memory; all-reduced (gloo) "
                               "histogram of 100000 samples matches NumPy"), line


@needs_torch
@pytest.mark.gpu
def test_one_rank_per_gpu_with_nccl(tmp_path):
    probe = subprocess.run([sys.executable, "-c", "import sys, torch, torch.distributed as d; "
                            "sys.exit(0 if torch.cuda.is_available() and d.is_nccl_available() "
                            "else 3)"], capture_output=True, timeout=120)
    if probe.returncode == 3:
        pytest.skip("this torch has no CUDA or no NCCL")
    from gpu_native.runtime import driver as D

    gpus = D.device_count()
    lines = rank_lines(torchrun(gpus, tmp_path))
    assert len(lines) == gpus
    for rank, line in enumerate(lines):
        assert line.startswith(f"rank {rank}/{gpus}: 50000 samples on GPU {rank} ("), line
        assert ("gpu_native backend cuda, tensors zero-copy; all-reduced (nccl) histogram of "
                f"{50000 * gpus} samples matches NumPy") in line, line
