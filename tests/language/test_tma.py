"""Tensor copies (``tma_load`` / ``tma_wait``): what the checker refuses, the CUDA they become,
their tensor maps in the spec, the launcher's checks of the source arrays, and the copies
themselves against NumPy on the simulator and (gpu-marked, on an sm_90 GPU) on the GPU."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from tests.helpers import kernels_tma as K

SHARED = K.STAGES * K.R * K.C * 2 + 1024


def _ring(dtype, blocks: int, seed: int):
    rng = np.random.default_rng(seed)
    rows = blocks * K.TILES * K.R
    host = rng.standard_normal((rows, K.C)).astype(np.float32)
    a = gn.to_device(host, dtype=dtype)
    out = gn.to_device(np.full((rows, K.C), np.nan, np.float32), dtype=dtype)
    K.ring_copy.launch(gn.GridDim1D(blocks), gn.BlockDim1D(K.THREADS), SHARED)(a, out)
    return out.to_host().astype(np.float64), a.to_host().astype(np.float64)


@pytest.mark.parametrize("dtype", [gn.f16, gn.bf16])
@pytest.mark.parametrize("blocks", [1, 3])
def test_ring_copies_every_slice(hopper, dtype, blocks):
    got, want = _ring(dtype, blocks, seed=blocks)
    np.testing.assert_array_equal(got, want)


def test_a_two_dimensional_destination(hopper):
    rng = np.random.default_rng(5)
    host = rng.standard_normal((192, 256)).astype(np.float16)
    a = gn.to_device(host)
    out = gn.to_device(np.full((64, 64), np.nan, np.float16))
    K.one_slice.launch(gn.GridDim1D(1), gn.BlockDim1D(K.THREADS), 64 * 64 * 2 + 1024)(
        a, out, 128, 64)
    np.testing.assert_array_equal(out.to_host(), host[128:192, 64:128])


def test_a_tile_past_the_edge_is_an_index_error(hopper):
    a = gn.to_device(np.zeros((128, 128), np.float16))
    out = gn.to_device(np.zeros((64, 64), np.float16))
    with pytest.raises(gn.KernelIndexError, match="index 159 is out of bounds for axis 0"):
        K.one_slice.launch(gn.GridDim1D(1), gn.BlockDim1D(K.THREADS), 64 * 64 * 2 + 1024)(
            a, out, 96, 0)
        gn.synchronize()


def test_a_source_whose_rows_are_not_16_byte_multiples_is_refused(hopper):
    a = gn.to_device(np.zeros((192, 68), np.float16))
    out = gn.to_device(np.zeros((64, 64), np.float16))
    launch = K.one_slice.launch(gn.GridDim1D(1), gn.BlockDim1D(K.THREADS), 64 * 64 * 2 + 1024)
    for _ in range(2):  # the first launch and the next (the launcher's fast path on a GPU)
        with pytest.raises(ValueError, match=r"argument 'a' of one_slice.*16 bytes"):
            launch(a, out, 0, 0)


def test_the_checked_and_the_fast_launch_path_alike(hopper):
    """A NumPy integer for ``row`` takes the launcher's checked path (converted there), a Python
    int its fast path: both set the source's map (encoded once per array) and copy the tile."""
    rng = np.random.default_rng(9)
    host = rng.standard_normal((128, 192)).astype(np.float16)
    launch = K.one_slice.launch(gn.GridDim1D(1), gn.BlockDim1D(K.THREADS), 64 * 64 * 2 + 1024)
    a, b = gn.to_device(host), gn.to_device(host[::-1].copy())
    for src, ref, row in ((a, host, np.int64(64)), (a, host, 64), (b, host[::-1], 64),
                          (a, host, 0)):
        out = gn.to_device(np.full((64, 64), np.nan, np.float16))
        launch(src, out, row, 128)
        np.testing.assert_array_equal(out.to_host(), ref[int(row):int(row) + 64, 128:192])


def test_the_spec_lists_the_tensor_maps():
    (variant,) = [v for v in K.one_slice.spec.variants]
    (tm,) = variant.tensor_maps
    assert (tm.param, tm.dtype, tm.box_rows, tm.box_cols) == (0, "f16", 64, 64)
    f16_variant = next(v for v in K.ring_copy.spec.variants if dict(v.types)["T"] == "f16")
    assert [(t.param, t.box_rows, t.box_cols) for t in f16_variant.tensor_maps] == [(0, 16, 64)]
    assert f16_variant.min_arch == 90


def test_the_cuda_has_the_map_parameter_and_two_boxes_a_copy():
    cuda = K.ring_copy.spec.variants[0].cuda
    assert "const __grid_constant__ gn_tma_map __gn_tma_map0" in cuda
    assert cuda.count("gn_tma_load_2d(") == 2 * 2 * 2   # 2 copies x 2 boxes, 2 entry points
    assert "gn_mbar_init(" in cuda and "gn_mbar_wait(" in cuda


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_nvrtc_compiles_it(arch):
    artifacts = K.one_slice.compile(arch)
    assert artifacts and all(a.kind == "cubin" for a in artifacts)


def test_an_older_target_is_refused_with_the_reason():
    with pytest.raises(Exception, match="sm_90"):
        K.one_slice.compile("sm_80")


# ---- what the checker refuses -------------------------------------------------------------------

HEAD = """
from gpu_native import *
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f16], m: CUDASliceMut2D[f16], out: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1
    tile = shared_array(f16, (2, 16, 64), swizzle=128)
    plain = shared_array(f16, (2, 16, 64))
    tid = thread_idx.x
"""


def _refused(kernel_module, body: str, match: str):
    with pytest.raises(TranspileError, match=match):
        kernel_module(HEAD + textwrap.indent(textwrap.dedent(body), "    "))


@pytest.mark.parametrize("body, match", [
    ("tma_load(tile, (0,), a, (0, 0))\ntma_wait(tile, (0,))\n",
     "two threads may copy into the same slice"),
    ("if tid == 0:\n    tma_load(plain, (0,), a, (0, 0))\n",
     "must be a swizzled shared array"),
    ("if tid == 0:\n    tma_load(tile, (0,), m, (0, 0))\n", "writable"),
    ("if tid == 0:\n    tma_load(tile, (0, 0), a, (0, 0))\n", "leading ind"),
    ("tma_wait(tile, (0,))\n", "no tma_load"),
])
def test_refusals(kernel_module, body, match):
    _refused(kernel_module, body, match)


def test_the_docs_snippet_runs(hopper, tmp_path, monkeypatch, capsys):
    import importlib
    import re

    from tests.helpers import ROOT

    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n## Tensor copies (Hopper TMA)\n"):
                text.index("\n## The safety rules\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"tma_doc_snippet_{hopper}"
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"
