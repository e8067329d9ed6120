"""``mma_sync`` with f32 fragments: the tf32 ``mma.m16n8k8`` on the simulator and (GPU-marked)
on the GPU, against NumPy float64 of the tf32-rounded inputs; the rounding itself
(``cvt.rna.tf32.f32``: to nearest, ties away from zero); the fragment-extent errors."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module
from gpu_native.simulator.matrices import tf32


@pytest.fixture(scope="module")
def kt():
    from tests.helpers import kernels_tf32

    return kernels_tf32


def _multiply(kt, a, b):
    m, n = a.shape[0], b.shape[1]
    c = gn.to_device(np.full((m, n), np.nan, np.float32))    # poisoned: every element is written
    kt.tf32_tiles.launch(gn.GridDim2D(n // 8, m // 16), gn.BlockDim1D(32), 0,
                         gn.DEFAULT_STREAM)(gn.to_device(a), gn.to_device(b), c)
    return c.to_host()


def _reference(a, b):
    return tf32(a).astype(np.float64) @ tf32(b).astype(np.float64)


def test_tf32_rounds_to_nearest_ties_away():
    one = np.float32(1.0)
    ulp = 2.0 ** -10                      # a tf32 ulp at 1
    values = np.array([1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -23, 1 + 2 ** -12, -(1 + 2 ** -11),
                       1 + ulp + 2 ** -11, np.inf, -np.inf, 0.0, 3.4028235e38], np.float32)
    got = tf32(values)
    expect = np.array([one + ulp, one + ulp, one, -(one + ulp), one + 2 * ulp, np.inf, -np.inf,
                       0.0, np.inf], np.float32)
    np.testing.assert_array_equal(got, expect)
    assert np.isnan(tf32(np.array([np.nan], np.float32)))[0]
    # every result has its low 13 bits clear
    rng = np.random.default_rng(0)
    r = tf32(rng.standard_normal(1000).astype(np.float32))
    assert not (r.view(np.uint32) & 0x1FFF).any()


@pytest.mark.parametrize("m, k, n", [(16, 8, 8), (32, 64, 24)])
def test_tf32_tiles_match_numpy(backend, kt, m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = _multiply(kt, a, b)
    ref = _reference(a, b)
    # Exact products, f32 accumulation: a few f32 ulps of the largest partial sum per mma.
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert err <= 1e-6, err
    # and far from the f32 product: tf32 inputs lose 13 bits, which shows at K = 8 already
    assert np.abs(out - a.astype(np.float64) @ b.astype(np.float64)).max() > 1e-5


def test_inputs_are_rounded_not_truncated(backend, kt):
    """Every input 1 + 2**-11 lies halfway between two tf32 numbers: rounding ties away gives
    1 + 2**-10, truncating the low bits (what the tensor cores do with raw f32 words) gives 1;
    each output, a sum of 8 products, is exact in f32 either way."""
    a = np.full((16, 8), 1 + 2 ** -11, np.float32)
    b = np.full((8, 8), 1 + 2 ** -11, np.float32)
    out = _multiply(kt, a, b)
    np.testing.assert_array_equal(out, np.full((16, 8), 8 * (1 + 2 ** -10) ** 2, np.float32))


def test_compiles_with_nvrtc(kt):
    from pathlib import Path

    mod = transpile_module(Path(kt.__file__).read_text(), "kernels_tf32.py", "kernels_tf32")
    code = mod.kernels[0].variants[0].cuda
    assert "gn_mma_m16n8k8_tf32(" in code
    image = compile_request(BuildRequest(source=code, symbol="gn_tf32_tiles", arch="sm_80"))
    assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


HEADER = """
from gpu_native import (CUDASlice2D, CUDASliceMut2D, Kernel2D, f32, f16, gpu_kernel,
                        local_array, mma_sync)
"""


@pytest.mark.parametrize("decls, message", [
    ("fa = local_array(f32, (8,))\n    fb = local_array(f32, (2,))",
     "the last axis of mma_sync()'s a 'fa' has 8 elements; this fragment takes 4"),
    ("fa = local_array(f32, (4,))\n    fb = local_array(f32, (4,))",
     "the last axis of mma_sync()'s b 'fb' has 4 elements; this fragment takes 2"),
    ("fa = local_array(f32, (4,))\n    fb = local_array(f16, (2,))",
     "mma_sync()'s b must hold f32 elements, not f16"),
    ("fa = local_array(f16, (4,))\n    fb = local_array(f16, (4,))",
     "the last axis of mma_sync()'s a 'fa' has 4 elements; this fragment takes 8"),
])
def test_fragment_errors(decls, message):
    src = HEADER + textwrap.dedent(f"""
@gpu_kernel(Kernel2D)
def k(c: CUDASliceMut2D[f32]):
    acc = local_array(f32, (4,))
    {decls}
    mma_sync(acc, (), fa, (), fb, ())
""")
    with pytest.raises(TranspileError) as info:
        transpile_module(src, "frag.py", "frag")
    text = str(info.value)
    assert message in text and "frag.py:" in text, text
