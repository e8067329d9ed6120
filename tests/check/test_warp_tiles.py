"""``store_matrix`` proven race-free without ``unsafe`` (gpu_native/check/warptiles.py).

Lane ``4g + t`` writes rows ``r + g``, ``r + g + 8`` and columns ``c + 2t``, ``c + 2t + 1`` of
the 16 x 8 tile at the warp's origin ``(r, c)``: the store is proven as one at ``(r + 8h + g, c
+ 2t + e)``, and tiles whose warp-uniform origins step by 16 rows or 8 columns are apart.
Accepted kernels run on the simulator with its race detector watching every written array (and
check every element of the result); each near miss differs from an accepted kernel in one place
and is refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.expand import Expansion
from gpu_native.rewrite import transpile_module
from gpu_native.runtime.backend import use
from tests.simulator.support import HEADER

HEAD = HEADER.replace("lane_id,", "lane_id, store_matrix,")


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed, so a race between two proven stores is reported."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def launch(kernel, grid, block):
    return kernel.launch(grid, block, 0, gn.DEFAULT_STREAM)


# Four warps in a 2 x 2 grid of 32 x 32 warp tiles (MI x NJ = 2 x 4 tiles of 16 x 8), a 64 x 64
# block tile; each accumulator element holds its destination's value row * 256 + column.
FILL = """
    tid = thread_idx.x
    lane = lane_id()
    warp = tid // 32
    warp_row = (warp // 2) * 32
    warp_col = (warp % 2) * 32
    block_row = block_idx.y * 64
    block_col = block_idx.x * 64
    acc = local_array(f32, (2, 4, 4))
    for i in range(2):
        for j in range(4):
            for e in range(4):
                row = block_row + warp_row + i * 16 + lane // 4 + 8 * (e // 2)
                col = block_col + warp_col + j * 8 + 2 * (lane % 4) + e % 2
                acc[i, j, e] = f32(row * 256 + col)
"""

GLOBAL = HEAD + """
@gpu_kernel(Kernel2D)
def k(c: CUDASliceMut2D[f32]):
    assert block_dim.x == 128 and block_dim.y == 1
    assert c.shape[0] == grid_dim.y * 64 and c.shape[1] == grid_dim.x * 64
""" + FILL + """
    for i in range(2):
        for j in range(4):
            store_matrix(c, (block_row + warp_row + i * 16, block_col + warp_col + j * 8),
                         acc, (i, j))
"""

SHARED = HEAD + """
@gpu_kernel(Kernel2D)
def k(c: CUDASliceMut2D[f32]):
    assert block_dim.x == 128 and block_dim.y == 1
    assert c.shape[0] == grid_dim.y * 64 and c.shape[1] == grid_dim.x * 64
    s = shared_array(f32, (64, 64))
""" + FILL + """
    for i in range(2):
        for j in range(4):
            store_matrix(s, (warp_row + i * 16, warp_col + j * 8), acc, (i, j))
    sync_threads()
    for q in range(32):
        flat = tid + q * 128
        c[block_row + flat // 64, block_col + flat % 64] = s[flat // 64, flat % 64]
"""

# One-dimensional blocks of any size: the lane is thread_idx.x % 32 with no assert.
ONE_D = HEAD + """
@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut2D[f32]):
    lane = lane_id()
    warp = thread_idx.x // 32
    acc = local_array(f32, (4,))
    for e in range(4):
        row = warp * 16 + lane // 4 + 8 * (e // 2)
        col = block_idx.x * 8 + 2 * (lane % 4) + e % 2
        acc[e] = f32(row * 256 + col)
    store_matrix(c, (warp * 16, block_idx.x * 8), acc, ())
"""

EXPECTED = np.add.outer(np.arange(128) * 256, np.arange(128)).astype(np.float32)


@pytest.mark.parametrize("source", [GLOBAL, SHARED], ids=["global", "shared"])
def test_warp_tiles_need_no_unsafe(backend, kernel_module, source):
    kernel = kernel_module(source).k
    c = gn.to_device(np.full((128, 128), -1, np.float32))
    launch(kernel, gn.GridDim2D(2, 2), gn.BlockDim2D(128, 1))(c)
    np.testing.assert_array_equal(c.to_host(), EXPECTED)


def test_one_dimensional_blocks_need_no_block_dim_assert(backend, kernel_module):
    kernel = kernel_module(ONE_D).k
    c = gn.to_device(np.full((32, 16), -1, np.float32))
    launch(kernel, gn.GridDim1D(2), gn.BlockDim1D(64))(c)
    np.testing.assert_array_equal(c.to_host(), EXPECTED[:32, :16])


def test_expand_proofs_names_the_tile_rule():
    text = Expansion.of(GLOBAL, "k.py", "k").proofs()
    assert "unique: a 16 x 8 tile per warp from a warp-uniform origin" in text, text
    assert "thread_idx.x % 32 // 4 (stride 1)" in text, text
    assert "i (stride 16)" in text and "j (stride 8)" in text, text


ORIGIN = "store_matrix(c, (block_row + warp_row + i * 16,"
NEAR_MISSES = {
    # The origin differs between the lanes of a warp.
    "lane_id": (GLOBAL, (ORIGIN, ORIGIN.replace("i * 16", "i * 16 + lane_id()")),
                "not an affine function"),
    "tid % 32": (GLOBAL, (ORIGIN, ORIGIN.replace("i * 16", "i * 16 + tid % 32")),
                 "depends on the lane (thread_idx.x % 32)"),
    "tid": (GLOBAL, ("warp_row = (warp // 2) * 32\n", "warp_row = tid\n"),
            "depends on the lane (thread_idx.x)"),
    "tid // 16": (GLOBAL, ("warp = tid // 32", "warp = tid // 16"),
                  "depends on the lane (thread_idx.x // 16)"),
    "lane_id 1-D": (ONE_D, ("(warp * 16, block_idx.x * 8)", "(warp * 16 + lane, block_idx.x * 8)"),
                    "depends on the lane (thread_idx.x % 32)"),
    # Tiles that overlap.
    "warps 8 rows apart": (GLOBAL, ("warp_row = (warp // 2) * 32\n",
                                    "warp_row = (warp // 2) * 8\n"), "may overlap"),
    "iterations 8 rows apart": (GLOBAL, (ORIGIN, ORIGIN.replace("i * 16", "i * 8")),
                                "may overlap"),
    "columns 4 apart": (GLOBAL, ("block_col + warp_col + j * 8),", "block_col + warp_col + j * 4),"),
                        "may overlap"),
    "shared: warps 8 rows apart": (SHARED, ("(warp_row + i * 16, warp_col", "(warp * 8 + i * 16, warp_col"),
                                   "may overlap"),
    # A warp may span rows of a 2-D block: its lanes are then no split of thread_idx.x.
    "no block_dim assert": (GLOBAL, ("    assert block_dim.x == 128 and block_dim.y == 1\n", ""),
                            "the lanes of a warp are thread_idx.x % 32 only where"),
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
    assert "store_matrix()" in text and message in text, text


def test_the_race_detector_watches_store_matrix(kernel_module):
    """The overlapping tiles of a near miss, inside `with unsafe():`, are reported as a race
    on the simulator: store_matrix's destination is shadowed like any written array."""
    body = GLOBAL.replace("warp_row = (warp // 2) * 32\n", "warp_row = (warp // 2) * 8\n")
    body = body.replace("            store_matrix(c, (block_row + warp_row + i * 16, block_col + "
                        "warp_col + j * 8),\n                         acc, (i, j))",
                        "            with unsafe():\n                store_matrix(c, (block_row + "
                        "warp_row + i * 16, block_col + warp_col + j * 8), acc, (i, j))")
    assert "with unsafe():" in body
    kernel = kernel_module(body).k
    with use("sim"), pytest.raises(gn.DeviceRaceError, match=r"data race on c\["):
        c = gn.to_device(np.zeros((128, 128), np.float32))
        launch(kernel, gn.GridDim2D(2, 2), gn.BlockDim2D(128, 1))(c)
        c.to_host()


def test_a_device_function_leaves_the_warp_unknown(tmp_path):
    """Which threads form a warp depends on the calling kernel's block shape."""
    source = HEAD + """
@gpu_device
def put(c: CUDASliceMut2D[f32], row: i32):
    acc = local_array(f32, (4,))
    for e in range(4):
        acc[e] = 0.0
    store_matrix(c, (row, 0), acc, ())

@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut2D[f32]):
    put(c, (thread_idx.x // 32) * 16)
"""
    with pytest.raises(TranspileError, match=r"store_matrix\(\) into .c. in a device function"):
        transpile_module(source, str(tmp_path / "k.py"), "k")


@pytest.mark.slow
@pytest.mark.parametrize("path", [
    "examples/tensor_core/hgemm_tensor_core.py", "examples/tensor_core/gemm_bias_gelu.py",
    "examples/tensor_core/sgemm_tf32.py", "tests/helpers/kernels_tf32.py"])
def test_the_tensor_core_kernels_store_their_tiles_proven(path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = Expansion.of((root / path).read_text(), str(root / path), "m").proofs()
    lines = text.splitlines()
    stores = [k for k, line in enumerate(lines) if line.lstrip().startswith("L")
              and "  store_matrix(" in line]
    assert stores, text
    for k in stores:
        assert "a 16 x 8 tile per warp from a warp-uniform origin" in lines[k + 1], text
