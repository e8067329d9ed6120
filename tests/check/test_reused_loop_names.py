"""A name used before a ``for`` loop and then as its variable: inside the loop only the header
assigns it, so the ownership proofs see the loop's counter (``start + step * k``) there, as
they do for a fresh name.  A body that assigns the variable again stays refused."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build, launch

REUSED = """
    N = 64

    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        assert block_dim.x == 32
        pos = thread_idx.x
        x = a[block_idx.x * N + pos % N]
        for pos in {loop}:
            out[block_idx.x * N + pos] = x + f32(pos)
    """

LOOPS = {
    "block_stride": "range(thread_idx.x, N, block_dim.x)",
    "constant_stride": "range(thread_idx.x, N, 32)",
}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_name_used_before_its_loop(tmp_path, name, monkeypatch):
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")
    kernel = build(tmp_path, REUSED.format(loop=LOOPS[name]), name=name)["k"]
    a = np.random.default_rng(4).standard_normal(128).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    errors = launch(kernel, 2, 32, a, out)
    assert errors.races == [] and errors.fails == [], errors
    want = (a.reshape(2, 64)[:, np.arange(64) % 32] + np.arange(64)).ravel()
    np.testing.assert_allclose(out, want, rtol=1e-6)


GRID_STRIDE = """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32]):
        i = i64(thread_idx.x)
        out[FlatLayout1D.uid()] = f32(i)
        for i in FlatLayout1D.grid_stride(len(out)):
            out[i] += 1.0
    """


def test_a_name_used_before_a_grid_stride_loop(tmp_path):
    kernel = build(tmp_path, GRID_STRIDE, name="grid_stride")["k"]
    out = np.full(64, np.nan, np.float32)
    errors = launch(kernel, 2, 32, out)
    assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_array_equal(out, np.tile(np.arange(32), 2) + 1.0)


def test_a_body_that_assigns_the_variable_again_is_refused(tmp_path):
    source = REUSED.format(loop=LOOPS["block_stride"]).replace(
        "            out[block_idx.x * N + pos]",
        "            pos = pos // 2\n            out[block_idx.x * N + pos]")
    with pytest.raises(TranspileError, match="not provably unique"):
        build(tmp_path, source, name="reassigned")
