"""examples/tensor_core/sgemm_tf32.py: the TF32 tensor-core GEMM (mma_sync of f32 fragments,
cp_async pipeline) against NumPy float64, on the simulator at small sizes and (GPU-marked) at
1024^3."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))
import sgemm_tf32 as ex


def _rel(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("m, k, n", [(128, 48, 128), (256, 8, 128), (128, 24, 256)])
def test_sgemm_tf32_matches_the_product_of_tf32_inputs(backend, m, k, n):
    result, reference = ex.run(m, k, n, seed=m + k + n)
    # Exact products of tf32 numbers, f32 accumulation: a few f32 ulps times sqrt(K).
    assert _rel(result, reference) <= 1e-6


def test_tf32_rounding_shows_against_the_f32_product(sim):
    """The kernel multiplies tf32-rounded inputs: against the f32 inputs' product its error is
    that rounding's (~2**-11 per input), far above f32 accumulation's."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    c = gn.to_device(np.full((128, 128), np.nan, np.float32))
    ex.sgemm_tf32(gn.to_device(a), gn.to_device(b), c)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    err = _rel(c.to_host().astype(np.float64), exact)
    assert 1e-5 < err < 2e-3, err


def test_sgemm_tf32_refuses_ragged_sizes(sim):
    a = gn.empty((128, 12), gn.f32)
    b = gn.empty((12, 128), gn.f32)
    c = gn.empty((128, 128), gn.f32)
    with pytest.raises(ValueError, match="K of 8"):
        ex.sgemm_tf32(a, b, c)


@pytest.mark.gpu
def test_sgemm_tf32_large_on_gpu():
    result, reference = ex.run(1024, 1024, 1024, seed=3)
    # 128 k-steps of f32 accumulation on the tensor cores (which align and truncate as they
    # add): 2.4e-6 measured on the H200.
    assert _rel(result, reference) <= 1e-5
