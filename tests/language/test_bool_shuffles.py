"""Warp shuffles of a bool (a segmented scan's head flag, ``shfl_up(head, 1)``): the bool moves
as an ``i32``'s 0 or 1 and comes back a bool, on the simulator (against NumPy) and, marked
``gpu``, on the GPU; the CUDA is the shuffle of ``(int)`` of it, compared with 0."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from tests.simulator.support import HEADER, build

SHUFFLES = """
    @gpu_kernel(Kernel1D)
    def k(flags: CUDASlice[i32], out: CUDASliceMut[i32]):
        i = FlatLayout1D.uid()
        head = flags[i] != 0
        below = shfl_up(head, 1)
        above = shfl_down(head, 1)
        other = shfl_xor(head, 3)
        first = shfl_idx(head, 0)
        out[i] = i32(below) + 2 * i32(above) + 4 * i32(other) + 8 * i32(first)
    """


def _want(f: np.ndarray) -> np.ndarray:
    out = []
    for i in range(len(f)):
        w, lane = i // 32 * 32, i % 32
        below = f[i - 1] if lane >= 1 else f[i]
        above = f[i + 1] if lane <= 30 else f[i]
        out.append(below + 2 * above + 4 * f[w + (lane ^ 3)] + 8 * f[w])
    return np.array(out, np.int32)


def _launch(kernel, flags):
    out = gn.to_device(np.full(len(flags), -1, np.int32))
    kernel[len(flags) // 32, 32](gn.to_device(flags), out)
    return out.to_host()


def test_bools_move_between_lanes(tmp_path, monkeypatch, rng, backend):
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"bool_shuffles_{backend}"
    (tmp_path / f"{name}.py").write_text(HEADER + textwrap.dedent(SHUFFLES))
    module = importlib.import_module(name)
    flags = (rng.random(128) < 0.4).astype(np.int32)
    np.testing.assert_array_equal(_launch(module.k, flags), _want(flags))


@pytest.mark.slow
def test_the_cuda_moves_an_int(tmp_path):
    kernels = build(tmp_path, SHUFFLES, name="shown")
    text = subprocess.run([sys.executable, "-m", "gpu_native", "expand", "--cuda",
                           str(kernels.path)], capture_output=True, text=True, check=True).stdout
    assert "__shfl_up_sync(4294967295u, ((int)(head)), 1, 32) != 0" in text, text
