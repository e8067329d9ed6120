"""``warpgroup_store`` proven race-free without ``unsafe`` (gpu_native/check/warptiles.py).

Thread ``t`` of a warpgroup (``w = t // 32``, lane ``L = t % 32``) writes rows ``r + 16w + L //
4 (+ 8)`` and columns ``c + 8j + 2 (L % 4) (+ 1)`` of the 64 x n tile at the warpgroup's origin
``(r, c)``: the store is proven as one at ``(r + 16w + 8h + L // 4, c + 8j + 2 (L % 4) + e)``,
and tiles whose warpgroup-uniform origins step by 64 rows or n columns are apart.  Accepted
kernels run on the simulator with its race detector watching every written array and check
every element; each near miss differs from an accepted kernel in one place and is refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.expand import Expansion
from gpu_native.rewrite import transpile_module

HEAD = """\
from gpu_native import (CUDASliceMut2D, Kernel1D, Kernel2D, block_dim, block_idx, f32,
                        gpu_kernel, grid_dim, local_array, thread_idx, warpgroup_store)
"""


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed, so a race between two proven stores is reported."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


# Each accumulator element holds its destination's value row * 1024 + column (the fragment
# layout of a 64 x 64 warpgroup tile: 32 f32 a thread).
FILL = """
    t = tid % 128
    acc = local_array(f32, (32,))
    for e in range(32):
        row = row0 + 16 * (t // 32) + (t % 32) // 4 + 8 * ((e % 4) // 2)
        col = col0 + 8 * (e // 4) + 2 * (t % 4) + e % 2
        acc[e] = f32(row * 1024 + col)
    warpgroup_store(c, (row0, col0), acc)
"""

TWO_D = HEAD + """
@gpu_kernel(Kernel2D)
def k(c: CUDASliceMut2D[f32]):
    assert block_dim.x == 256 and block_dim.y == 1
    assert c.shape[0] == grid_dim.y * 128 and c.shape[1] == grid_dim.x * 64
    tid = thread_idx.x
    wg = tid // 128
    row0 = block_idx.y * 128 + wg * 64
    col0 = block_idx.x * 64
""" + FILL

ONE_D = HEAD + """
@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut2D[f32]):
    assert block_dim.x == 256
    assert c.shape[0] == 64 and c.shape[1] == grid_dim.x * 128
    tid = thread_idx.x
    row0 = 0
    col0 = block_idx.x * 128 + (tid >> 7) * 64
""" + FILL


def test_warpgroup_tiles_need_no_unsafe(backend, kernel_module):
    kernel = kernel_module(TWO_D).k
    c = gn.to_device(np.full((256, 128), -1, np.float32))
    kernel.launch(gn.GridDim2D(2, 2), gn.BlockDim2D(256, 1))(c)
    want = np.add.outer(np.arange(256) * 1024, np.arange(128)).astype(np.float32)
    np.testing.assert_array_equal(c.to_host(), want)


def test_one_dimensional_blocks_and_warpgroups_side_by_side(backend, kernel_module):
    kernel = kernel_module(ONE_D).k
    c = gn.to_device(np.full((64, 256), -1, np.float32))
    kernel.launch(gn.GridDim1D(2), gn.BlockDim1D(256))(c)
    want = np.add.outer(np.arange(64) * 1024, np.arange(256)).astype(np.float32)
    np.testing.assert_array_equal(c.to_host(), want)


def test_expand_proofs_names_the_warpgroup_rule():
    text = Expansion.of(TWO_D, "k.py", "k").proofs()
    assert "unique: a 64 x 64 tile per warpgroup from a warpgroup-uniform origin" in text, text


ORIGIN = "    row0 = block_idx.y * 128 + wg * 64\n"
NEAR_MISSES = {
    # The origin differs between the threads of a warpgroup.
    "tid // 32": (TWO_D, ("wg = tid // 128", "wg = tid // 32"),
                  "depends on the thread within the warpgroup (thread_idx.x // 32)"),
    "tid // 64": (TWO_D, ("wg = tid // 128", "wg = tid // 64"),
                  "depends on the thread within the warpgroup"),
    "tid % 32": (TWO_D, (ORIGIN, ORIGIN.replace("wg * 64", "wg * 64 + tid % 32")),
                 "depends on the thread within the warpgroup (thread_idx.x % 32)"),
    # Tiles that overlap.
    "warpgroups 32 rows apart": (TWO_D, (ORIGIN, ORIGIN.replace("wg * 64", "wg * 32")),
                                 "may overlap"),
    "one origin for both": (TWO_D, (ORIGIN, ORIGIN.replace(" + wg * 64", "")), "may overlap"),
    "three warpgroups in 128 rows": (TWO_D, ("block_dim.x == 256", "block_dim.x == 384"),
                                     "may overlap"),
    "blocks 64 rows apart": (TWO_D, (ORIGIN, ORIGIN.replace("128 + wg", "64 + wg")),
                             "may overlap"),
    # A warpgroup may span rows of a 2-D block: its threads are then no split of thread_idx.x.
    "no block_dim assert": (TWO_D, ("    assert block_dim.x == 256 and block_dim.y == 1\n", ""),
                            "the threads of a warpgroup are thread_idx.x % 128 only where"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(NEAR_MISSES))
def test_near_miss_is_refused(tmp_path, case):
    source, change, message = NEAR_MISSES[case]
    body = source.replace(*change)
    assert body != source, "the replacement did not apply"
    with pytest.raises(TranspileError) as info:
        transpile_module(body, str(tmp_path / "k.py"), "k")
    text = str(info.value)
    assert "warpgroup_store()" in text and message in text, text


@pytest.mark.slow
def test_the_hopper_example_stores_its_tiles_proven():
    from tests.helpers import ROOT

    path = ROOT / "examples" / "tensor_core" / "hgemm_wgmma.py"
    source = path.read_text()
    kernel = source[source.index("@gpu_kernel"):source.index("\n\n\ndef ")]
    assert "warpgroup_store(" in kernel and "unsafe" not in kernel
    text = Expansion.of(source, str(path), "hgemm_wgmma").proofs()
    assert "a 64 x 256 tile per warpgroup from a warpgroup-uniform origin" in text, text
