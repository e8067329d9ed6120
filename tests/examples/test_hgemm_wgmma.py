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

# f32 accumulation and output of exact products: a few f32 ulps times sqrt(K).
TOLERANCE = 1e-5


def _rel(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


@pytest.fixture
def hopper(backend):
    """The backend, on the GPU only where it is an sm_90 one (warpgroup MMA runs nowhere else)."""
    if backend == "cuda":
        from gpu_native.runtime import driver

        if driver.device_properties(0)["arch"] != "sm_90":
            pytest.skip("warpgroup MMA needs an sm_90 GPU")
    return backend


@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_hgemm_wgmma_matches_numpy(hopper, dtype):
    result, reference = wg.run(128, 128, 256, dtype=dtype, seed=1)
    assert _rel(result, reference) <= TOLERANCE


def test_hgemm_wgmma_two_blocks_each_way_and_a_full_ring(hopper):
    # 320 deep: 5 slices through the 4-stage ring (every stage refilled once).
    result, reference = wg.run(256, 320, 512, seed=2)
    assert _rel(result, reference) <= TOLERANCE


def test_hgemm_wgmma_refuses_ragged_sizes(sim):
    a = gn.empty((128, 64), gn.f16)
    b = gn.empty((64, 128), gn.f16)
    c = gn.empty((128, 128), gn.f32)
    with pytest.raises(ValueError, match="N of 256"):
        wg.hgemm_wgmma(a, b, c)


def test_too_little_shared_memory_is_refused_at_launch(sim):
    """The swizzled tiles live in the dynamic shared memory: a launch that gives less than they
    take is refused before any thread runs, at the array's declaration."""
    a, b = gn.zeros((128, 64), gn.f16), gn.zeros((64, 256), gn.f16)
    c = gn.zeros((128, 256), gn.f32)
    launch = wg.hgemm_wgmma_kernel.launch(gn.GridDim2D(1, 1), gn.BlockDim1D(wg.THREADS),
                                          wg.SHARED_BYTES - 1)
    with pytest.raises(gn.KernelAssertionError, match=f"shared_mem_bytes >= {wg.SHARED_BYTES}"):
        launch(a, b, c)


@pytest.mark.gpu
def test_hgemm_wgmma_large_on_gpu(hopper):
    if hopper != "cuda":
        pytest.skip("large sizes are for the GPU")
    result, reference = wg.run(2048, 1024, 2048, dtype=gn.f16, seed=3)
    assert _rel(result, reference) <= TOLERANCE


@pytest.fixture
def sixteen_bit_out(tmp_path, monkeypatch):
    """examples/tensor_core/hgemm_wgmma.py with C in the input type (f16 or bf16)."""
    source = (ROOT / "examples" / "tensor_core" / "hgemm_wgmma.py").read_text()
    changed = source.replace("c: CUDASliceMut2D[f32]", "c: CUDASliceMut2D[T]")
    assert changed != source
    (tmp_path / "hgemm_wgmma_out16.py").write_text(changed)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module("hgemm_wgmma_out16")


@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_hgemm_wgmma_writes_a_16_bit_output(hopper, sixteen_bit_out, dtype):
    m, k, n = (2048, 1024, 2048) if hopper == "cuda" else (256, 320, 512)
    rng = np.random.default_rng(4)
    host = np.float16 if dtype is gn.f16 else np.float32
    a = rng.standard_normal((m, k)).astype(host)
    b = rng.standard_normal((k, n)).astype(host)
    da, db = gn.to_device(a, dtype=dtype), gn.to_device(b, dtype=dtype)
    c = gn.to_device(np.full((m, n), np.nan, np.float32), dtype=dtype)
    sixteen_bit_out.hgemm_wgmma(da, db, c)
    got = c.to_host().astype(np.float64)
    want = da.to_host().astype(np.float64) @ db.to_host().astype(np.float64)
    # One rounding of each output to the 16-bit type: half an ulp (2^-11 f16, 2^-8 bf16).
    assert _rel(got, want) <= (1e-3 if dtype is gn.f16 else 4e-3)


@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_a_16_bit_output_that_is_not_4_byte_aligned(hopper, sixteen_bit_out, dtype):
    """An output view one element into its allocation: the pairs are not 4-byte aligned, and the
    elements are stored one by one (the other branch of the emitted store)."""
    m, k, n = 256, 128, 256
    rng = np.random.default_rng(6)
    host = np.float16 if dtype is gn.f16 else np.float32
    a = rng.standard_normal((m, k)).astype(host)
    b = rng.standard_normal((k, n)).astype(host)
    da, db = gn.to_device(a, dtype=dtype), gn.to_device(b, dtype=dtype)
    flat = gn.to_device(np.full(m * n + 2, np.nan, np.float32), dtype=dtype)
    c = flat[1:m * n + 1].reshape(m, n)
    sixteen_bit_out.hgemm_wgmma(da, db, c)
    got = flat.to_host().astype(np.float64)
    assert np.isnan(got[0]) and np.isnan(got[-1])     # the neighbours are untouched
    want = da.to_host().astype(np.float64) @ db.to_host().astype(np.float64)
    assert _rel(got[1:-1].reshape(m, n), want) <= (1e-3 if dtype is gn.f16 else 4e-3)
