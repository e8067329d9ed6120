"""examples/tensor_core/gemm_bias_gelu_wgmma.py: the fused Hopper GEMM + bias + tanh GELU (TMA
ring, warpgroup_mma, the epilogue on the accumulator fragment) against NumPy float64, on the
simulator at small sizes and (GPU-marked, on an sm_90 GPU) at large ones."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))
import gemm_bias_gelu_wgmma as fused

# The GEMM's f32 accumulation of exact products and the GELU in f32, under one rounding of each
# output to the 16-bit type (half an ulp: 2^-11 relative in f16, 2^-8 in bf16).
TOLERANCE = {gn.f16: 1e-3, gn.bf16: 4e-3}
# Element by element: one rounding of the output (2^-11 relative in f16, 2^-8 in bf16) with
# room to spare, plus the GEMM's and the GELU's f32 errors (K = 1024: about 1e-6 absolute).
# The negative pre-activations, where 1 + tanh(y) would cancel, are held to it too.
ELEMENT_RELATIVE = {gn.f16: 2.0 ** -10, gn.bf16: 2.0 ** -7}
ELEMENT_ABSOLUTE = 1e-4


def _elementwise_ok(out, ref, dtype):
    return bool(np.all(np.abs(out - ref) <= ELEMENT_RELATIVE[dtype] * np.abs(ref)
                       + ELEMENT_ABSOLUTE))


def _rel(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_fused_gemm_bias_gelu_matches_numpy(hopper, dtype):
    result, reference = fused.run(128, 128, 256, dtype=dtype, seed=1)
    assert _rel(result, reference) <= TOLERANCE[dtype]
    assert _elementwise_ok(result, reference, dtype)
    # Negative pre-activations went through GELU: its minimum is -0.17, and no plain matmul +
    # bias stays above it.
    assert reference.min() < -0.1 and result.min() >= -0.2


def _inputs(m, k, n, seed):
    """f16 device inputs with a different bias in every column, and the float64 result."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float16)
    bias = np.linspace(-3, 3, n).astype(np.float16)
    want = fused.reference(*(x.astype(np.float64) for x in (a, b, bias)))
    return gn.to_device(a), gn.to_device(b), gn.to_device(bias), want


@pytest.mark.slow
def test_grouped_blocks_each_get_their_columns_bias(hopper):
    """Four block rows in two groups of two (grid (2, 2, 2)), two block columns and five slices
    through the 4-stage ring: every tile of the poisoned C written once, each column with its
    own bias (a fragment column mapped wrong, or a block's bias offset, fails this)."""
    da, db, dbias, want = _inputs(512, 320, 512, 4)
    c = gn.to_device(np.full((512, 512), np.nan, np.float16), dtype=gn.f16)
    fused.gemm_bias_gelu_wgmma_kernel.launch(gn.GridDim3D(2, 2, 2), gn.BlockDim1D(fused.THREADS),
                                             fused.SHARED_BYTES)(da, db, dbias, c)
    assert _rel(c.to_host().astype(np.float64), want) <= TOLERANCE[gn.f16]


def test_a_bias_of_the_wrong_length_is_refused(sim):
    """By the wrapper (ValueError), and by the kernel's own shape assert at launch when the
    kernel is launched directly: the proofs of the bias reads rest on it."""
    da, db, _, _ = _inputs(128, 64, 256, 5)
    c = gn.empty((128, 256), gn.f16)
    short = gn.empty((128,), gn.f16)
    with pytest.raises(ValueError, match="bias"):
        fused.gemm_bias_gelu_wgmma(da, db, short, c)
    launch = fused.gemm_bias_gelu_wgmma_kernel.launch(
        gn.GridDim3D(1, 1, 1), gn.BlockDim1D(fused.THREADS), fused.SHARED_BYTES)
    with pytest.raises(gn.KernelAssertionError, match="shapes multiply"):
        launch(da, db, short, c)


def test_every_access_is_proven():
    """No bounds check is left in the kernel (the bias reads included), and every write is
    proven race-free without ``unsafe``."""
    from gpu_native.rewrite import transpile_module

    path = ROOT / "examples" / "tensor_core" / "gemm_bias_gelu_wgmma.py"
    (kernel,) = transpile_module(path.read_text(), str(path), "gemm_bias_gelu_wgmma").kernels
    for variant in kernel.variants:
        assert "gn_chk" not in variant.cuda
    assert "unsafe" not in path.read_text().split("@gpu_kernel")[1]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
def test_fused_gemm_bias_gelu_large_on_gpu(hopper, dtype):
    if hopper != "cuda":
        pytest.skip("large sizes are for the GPU")
    result, reference = fused.run(2048, 1024, 2048, dtype=dtype, seed=3)
    assert _rel(result, reference) <= TOLERANCE[dtype]
    assert _elementwise_ok(result, reference, dtype)
