"""examples/tensor_core/gemm_bias_gelu.py: the fused tensor-core GEMM + bias + tanh GELU against
NumPy float64, on the simulator at small sizes and (GPU-marked) at 1024^3."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))
import gemm_bias_gelu as fused

# f32 accumulation of exact f16 products, the GELU in f32, then the f16 output rounding (2**-11
# relative): the relative Frobenius error stays well under 2e-3.
TOLERANCE = 2e-3


def _rel(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


def test_gemm_bias_gelu_matches_numpy(backend):
    result, reference = fused.run(128, 96, 128, seed=1)
    assert _rel(result, reference) <= TOLERANCE
    # Negative pre-activations went through GELU (no plain matmul + bias passes this).
    assert reference.min() < -0.1 and result.min() >= -0.2


def test_gemm_bias_gelu_two_blocks_each_way_bias_per_column(backend):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 64)).astype(np.float16)
    b = (rng.standard_normal((64, 256)) / 8).astype(np.float16)
    bias = np.linspace(-3, 3, 256).astype(np.float16)      # a different bias in every column
    c = gn.empty((256, 256), gn.f16)
    fused.gemm_bias_gelu(gn.to_device(a), gn.to_device(b), gn.to_device(bias), c)
    assert _rel(c.to_host().astype(np.float64), fused.reference(a, b, bias)) <= TOLERANCE


def test_gemm_bias_gelu_refuses_a_bias_of_the_wrong_length():
    a = gn.empty((128, 64), gn.f16)
    b = gn.empty((64, 128), gn.f16)
    c = gn.empty((128, 128), gn.f16)
    with pytest.raises(ValueError, match="bias"):
        fused.gemm_bias_gelu(a, b, gn.empty((64,), gn.f16), c)


@pytest.mark.gpu
def test_gemm_bias_gelu_large_on_gpu():
    result, reference = fused.run(1024, 1024, 1024, seed=3)
    assert _rel(result, reference) <= TOLERANCE
