"""examples/tensor_core/hgemm_wgmma.py: the Hopper warpgroup GEMM (swizzled shared tiles,
warpgroup_mma, cp_async ring in the dynamic shared memory) against NumPy float64, on the
simulator at small sizes and (GPU-marked, on an sm_90 GPU) at large ones."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))
import hgemm_wgmma as wg

# One rounding of each output to the 16-bit type: half an ulp (2^-11 f16, 2^-8 bf16), over
# the f32 accumulation of exact products.
TOLERANCE = {gn.f16: 1e-3, gn.bf16: 4e-3}
# f32 accumulation and output of exact products: a few f32 ulps times sqrt(K).
F32_TOLERANCE = 1e-5


def _rel(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_hgemm_wgmma_matches_numpy(hopper, dtype):
    result, reference = wg.run(128, 128, 256, dtype=dtype, seed=1)
    assert _rel(result, reference) <= TOLERANCE[dtype]


def test_hgemm_wgmma_two_blocks_each_way_and_a_full_ring(hopper):
    # 320 deep: 5 slices through the 4-stage ring (every stage refilled once).
    result, reference = wg.run(256, 320, 512, seed=2)
    assert _rel(result, reference) <= TOLERANCE[gn.f16]


def test_grouped_block_order_covers_every_tile(hopper):
    """Two block rows to a group and two groups (grid (2, 1, 2)): the blocks' rows are
    block_idx.z * 2 + block_idx.x, each tile of C written once, none skipped (C poisoned)."""
    da, db, want = _inputs(512, 64, 256, gn.f16, 6)
    c = gn.to_device(np.full((512, 256), np.nan, np.float16), dtype=gn.f16)
    wg.hgemm_wgmma_kernel.launch(gn.GridDim3D(2, 1, 2), gn.BlockDim1D(wg.THREADS),
                                 wg.SHARED_BYTES)(da, db, c)
    assert _rel(c.to_host().astype(np.float64), want) <= TOLERANCE[gn.f16]


def test_a_grid_that_misses_rows_is_refused(sim):
    """The shape assert ties M to the grid's three axes: a grid of 3 block rows for M = 512
    is refused at launch, before any thread runs."""
    da, db, _ = _inputs(512, 64, 256, gn.f16, 7)
    c = gn.empty((512, 256), gn.f16)
    launch = wg.hgemm_wgmma_kernel.launch(gn.GridDim3D(3, 1, 1), gn.BlockDim1D(wg.THREADS),
                                          wg.SHARED_BYTES)
    with pytest.raises(gn.KernelAssertionError, match="M tiles"):
        launch(da, db, c)


def test_hgemm_wgmma_refuses_ragged_sizes(sim):
    a = gn.empty((128, 64), gn.f16)
    b = gn.empty((64, 128), gn.f16)
    c = gn.empty((128, 128), gn.f16)
    with pytest.raises(ValueError, match="N of 256"):
        wg.hgemm_wgmma(a, b, c)


def test_too_little_shared_memory_is_refused_at_launch(sim):
    """The swizzled tiles live in the dynamic shared memory: a launch that gives less than they
    take is refused before any thread runs, at the array's declaration."""
    a, b = gn.zeros((128, 64), gn.f16), gn.zeros((64, 256), gn.f16)
    c = gn.zeros((128, 256), gn.f16)
    launch = wg.hgemm_wgmma_kernel.launch(gn.GridDim3D(1, 1, 1), gn.BlockDim1D(wg.THREADS),
                                          wg.SHARED_BYTES - 1)
    with pytest.raises(gn.KernelAssertionError, match=f"shared_mem_bytes >= {wg.SHARED_BYTES}"):
        launch(a, b, c)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_hgemm_wgmma_large_on_gpu(hopper, dtype):
    if hopper != "cuda":
        pytest.skip("large sizes are for the GPU")
    result, reference = wg.run(2048, 1024, 2048, dtype=dtype, seed=3)
    assert _rel(result, reference) <= TOLERANCE[dtype]


STAGED = "warpgroup_store(c, (block_row + wg * 64, block_col), acc, tile_b, (wg, 0, 0))"
DIRECT = "warpgroup_store(c, (block_row + wg * 64, block_col), acc)"


def _variant(tmp_path, monkeypatch, name: str, out: str, staged: bool):
    """examples/tensor_core/hgemm_wgmma.py with C of type ``out`` (``"f32"`` or ``"T"``), stored
    through the staging region or straight from the fragments."""
    source = (ROOT / "examples" / "tensor_core" / "hgemm_wgmma.py").read_text()
    assert STAGED in source
    changed = source.replace("c: CUDASliceMut2D[T]", f"c: CUDASliceMut2D[{out}]")
    if not staged:
        changed = changed.replace(STAGED, DIRECT)
    (tmp_path / f"{name}.py").write_text(changed)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module(name)


@pytest.fixture
def f32_out(tmp_path, monkeypatch):
    """The example with an f32 C, stored straight from the fragments."""
    return _variant(tmp_path, monkeypatch, "hgemm_wgmma_f32_out", "f32", staged=False)


@pytest.fixture
def direct_16(tmp_path, monkeypatch):
    """The example with its 16-bit C stored straight from the fragments (no staging)."""
    return _variant(tmp_path, monkeypatch, "hgemm_wgmma_direct16", "T", staged=False)


def _inputs(m, k, n, dtype, seed):
    rng = np.random.default_rng(seed)
    host = np.float16 if dtype is gn.f16 else np.float32
    a = rng.standard_normal((m, k)).astype(host)
    b = rng.standard_normal((k, n)).astype(host)
    da, db = gn.to_device(a, dtype=dtype), gn.to_device(b, dtype=dtype)
    want = da.to_host().astype(np.float64) @ db.to_host().astype(np.float64)
    return da, db, want


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_an_f32_output(hopper, f32_out, dtype):
    m, k, n = (2048, 1024, 2048) if hopper == "cuda" else (256, 320, 512)
    da, db, want = _inputs(m, k, n, dtype, 4)
    c = gn.to_device(np.full((m, n), np.nan, np.float32))
    f32_out.hgemm_wgmma(da, db, c)
    assert _rel(c.to_host().astype(np.float64), want) <= F32_TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_a_16_bit_output_stored_from_the_fragments(hopper, direct_16, dtype):
    m, k, n = (2048, 1024, 2048) if hopper == "cuda" else (256, 320, 512)
    da, db, want = _inputs(m, k, n, dtype, 5)
    c = gn.to_device(np.full((m, n), np.nan, np.float32), dtype=dtype)
    direct_16.hgemm_wgmma(da, db, c)
    assert _rel(c.to_host().astype(np.float64), want) <= TOLERANCE[dtype]


@pytest.mark.slow
@pytest.mark.parametrize("staged", [True, False], ids=["staged", "direct"])
@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_a_16_bit_output_that_is_not_aligned(hopper, tmp_path, monkeypatch, dtype, staged):
    """An output view one element into its allocation: neither the staged 16-byte chunks nor the
    direct pairs are aligned, and the elements are stored one by one (the other branch of each
    emitted store)."""
    module = _variant(tmp_path, monkeypatch, f"hgemm_wgmma_unaligned_{int(staged)}", "T", staged)
    m, k, n = 256, 128, 256
    da, db, want = _inputs(m, k, n, dtype, 6)
    flat = gn.to_device(np.full(m * n + 2, np.nan, np.float32), dtype=dtype)
    c = flat[1:m * n + 1].reshape(m, n)
    module.hgemm_wgmma(da, db, c)
    got = flat.to_host().astype(np.float64)
    assert np.isnan(got[0]) and np.isnan(got[-1])     # the neighbours are untouched
    assert _rel(got[1:-1].reshape(m, n), want) <= TOLERANCE[dtype]


def test_the_staging_region_needs_the_barrier_after_the_last_mma(tmp_path):
    """Without the barrier after warpgroup_wait(0), another warpgroup may still be reading stage
    wg of tile_b (its MMAs, and the ring's copies into it): the staging writes are refused,
    naming the copy they may meet."""
    from gpu_native.errors import TranspileError
    from gpu_native.rewrite import transpile_module

    source = (ROOT / "examples" / "tensor_core" / "hgemm_wgmma.py").read_text()
    lines = source.splitlines()
    barrier = [i for i, line in enumerate(lines) if line == "    sync_threads()"]
    assert len(barrier) == 1
    del lines[barrier[0]]
    with pytest.raises(TranspileError, match="may overlap") as refused:
        transpile_module("\n".join(lines) + "\n", "hgemm_wgmma.py", "hgemm_wgmma")
    copy = next(i for i, line in enumerate(lines) if "tma_load(tile_b" in line) + 1
    assert "warpgroup_store() into 'tile_b'" in str(refused.value)
    assert f"this store and the one at line {copy}" in str(refused.value)
    # The two threads meeting are of a launch the kernel accepts (block_dim.y, .z == 1).
    assert "thread_idx.y = 0, thread_idx.z = 0) and" in str(refused.value)
    assert "thread_idx.y = 1" not in str(refused.value)
