"""examples/tensor_core/hgemm_tensor_core.py: the tensor-core GEMM (ldmatrix, mma_sync, cp_async pipeline)
against NumPy float64, on the simulator at small sizes and (GPU-marked) at 4096^3 scale."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))
import hgemm_tensor_core as hg

# Relative Frobenius error: f32 accumulation of exact products (a few ulps * sqrt(K)), plus the
# output's rounding: f32 2**-24, f16 2**-11, bf16 2**-8.
TOLERANCE = {gn.f32: 1e-5, gn.f16: 2e-3, gn.bf16: 1e-2}


def _rel(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("dtype, out", [(gn.f16, gn.f32), (gn.bf16, gn.f32), (gn.f16, gn.f16),
                                        (gn.bf16, gn.bf16)])
def test_hgemm_tc_matches_numpy(backend, dtype, out):
    result, reference = hg.run(128, 96, 128, dtype=dtype, out=out, seed=1)
    assert _rel(result, reference) <= TOLERANCE[out]


def test_hgemm_tc_two_blocks_each_way(backend):
    result, reference = hg.run(256, 64, 256, seed=2)
    assert _rel(result, reference) <= TOLERANCE[gn.f32]


def test_hgemm_tc_refuses_ragged_sizes():
    a = gn.empty((100, 64), gn.f16)
    b = gn.empty((64, 128), gn.f16)
    c = gn.empty((100, 128), gn.f32)
    with pytest.raises(ValueError, match="multiples of 128"):
        hg.hgemm_tc(a, b, c)


@pytest.mark.gpu
def test_hgemm_tc_large_on_gpu():
    result, reference = hg.run(1024, 1024, 1024, dtype=gn.f16, out=gn.f32, seed=3)
    assert _rel(result, reference) <= TOLERANCE[gn.f32]


def test_a_misaligned_input_is_refused_at_launch(sim):
    """A contiguous view 2 bytes past a 16-byte boundary: the launcher checks the address the
    kernel's cp_async alignment proof assumes, before any thread runs, and writes nothing."""
    flat = gn.to_device(np.ones(128 * 32 + 1, np.float16), dtype=gn.f16)
    a = flat[1:].reshape(128, 32)
    b = gn.to_device(np.ones((32, 128), np.float16), dtype=gn.f16)
    c = gn.zeros((128, 128), gn.f32)
    with pytest.raises(gn.KernelAssertionError, match="address of array 'a' is not aligned"):
        hg.hgemm_tc(a, b, c)
    assert not c.to_host().any()


@pytest.mark.parametrize("out", [gn.f32, gn.f16, gn.bf16])
def test_an_output_not_aligned_to_a_pair(backend, out):
    """An output view one element into its allocation: store_matrix's pairs are not aligned,
    and each element is stored on its own (the other branch of the emitted store)."""
    m, k, n = 128, 64, 128
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    da, db = gn.to_device(a), gn.to_device(b)
    flat = gn.to_device(np.full(m * n + 2, np.nan, np.float32), dtype=out)
    c = flat[1:m * n + 1].reshape(m, n)
    hg.hgemm_tc(da, db, c)
    got = flat.to_host().astype(np.float64)
    assert np.isnan(got[0]) and np.isnan(got[-1])     # the neighbours are untouched
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert _rel(got[1:-1].reshape(m, n), want) <= TOLERANCE[out]
