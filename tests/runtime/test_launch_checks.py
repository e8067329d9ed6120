"""Checks the launcher makes once per launch shape instead of in every thread."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.launchexpr import AllOf, Arith, Compare, Const, LaunchIndex, Not, evaluate
from gpu_native.runtime.launch_checks import check_launch
from gpu_native.spec import LaunchAssert

SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, f32, block_dim, block_idx, thread_idx, shared_array,
                        sync_threads)

TILE = 8

@gpu_kernel(Kernel2D)
def tiled_copy(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == TILE and block_dim.y == TILE, "launch with TILE x TILE threads"
    tile = shared_array(f32, (TILE, TILE))
    x = block_idx.x * TILE + thread_idx.x
    y = block_idx.y * TILE + thread_idx.y
    if y < src.shape[0] and x < src.shape[1]:
        tile[thread_idx.y, thread_idx.x] = src[y, x]
    sync_threads()
    if y < dst.shape[0] and x < dst.shape[1]:
        dst[y, x] = tile[thread_idx.y, thread_idx.x]

@gpu_kernel(Kernel1D)
def narrow(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    x = block_idx.x * 64 + thread_idx.x
    if x < len(a) and x < len(out):
        out[x] = a[x] * 2.0
"""


@pytest.fixture
def kernels(kernel_module):
    return kernel_module(SOURCE)


def test_a_launch_shape_assert_is_checked_by_the_launcher_not_the_kernel(kernels):
    variant = kernels.tiled_copy.variants[()]
    assert "gn_assert(__gn_err" not in variant.cuda.split('extern "C"')[1]
    assert "assert checked by the launcher" in variant.cuda
    assert isinstance(variant.launch_checks[0], LaunchAssert)


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_launch_shape_assert_passes_and_fails_as_on_the_device(kernels, backend):
    rng = np.random.default_rng()
    src = rng.standard_normal((19, 29)).astype(np.float32)
    dst = gn.to_device(np.full(src.shape, np.nan, np.float32))
    grid = gn.GridDim2D(4, 3)
    kernels.tiled_copy.launch(grid, gn.BlockDim2D(8, 8))(gn.to_device(src), dst)
    np.testing.assert_array_equal(dst.to_host(), src)
    with pytest.raises(gn.KernelAssertionError) as info:
        kernels.tiled_copy.launch(grid, gn.BlockDim2D(16, 8))(gn.to_device(src), dst)
    text = str(info.value)
    assert "launch with TILE x TILE threads" in text
    assert "assert block_dim.x == TILE" in text and "checked at launch" in text
    # The launcher refused before anything ran, and the context is fine for the next launch.
    kernels.tiled_copy.launch(grid, gn.BlockDim2D(8, 8))(gn.to_device(src), dst)
    gn.synchronize()


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_a_grid_that_would_wrap_32_bit_index_arithmetic_is_refused(kernels, backend):
    a = gn.to_device(np.arange(1000, dtype=np.float32))
    out = gn.to_device(np.zeros(1000, np.float32))
    kernels.narrow.launch(gn.GridDim1D(16), gn.BlockDim1D(64))(a, out)
    np.testing.assert_array_equal(out.to_host(), np.arange(1000) * 2.0)
    # block_idx.x * 64 + thread_idx.x passes 2**31 - 1 from block 2**25 on: in i32 it would wrap
    # to a negative index that `x < len(a)` lets through.
    with pytest.raises(gn.LaunchError, match=r"block_idx\.x \* 64.*past the i32 maximum"):
        kernels.narrow.launch(gn.GridDim1D(2**25 + 1), gn.BlockDim1D(64))(a, out)
    variant = kernels.narrow.variants[()]
    checks = variant.launch_checks
    check_launch("narrow", "narrow.py", variant.kernel_id, checks, (2**25, 1, 1), (64, 1, 1))
    with pytest.raises(gn.LaunchError):
        check_launch("narrow", "narrow.py", variant.kernel_id, checks, (2**25 + 1, 1, 1),
                     (64, 1, 1))


def test_the_evaluator_wraps_like_the_device():
    sp = {("block_dim", 0): 1024}
    special = lambda name, axis: sp[(name, axis)]  # noqa: E731
    big = Arith("*", LaunchIndex("block_dim", 0), Const(2**22), "i32")  # 2**32: 0 in i32
    assert evaluate(Compare("==", big, Const(0)), special) == 1
    assert evaluate(Compare("==", Arith("//", Const(-7), Const(2), "i32"), Const(-4)),
                    special) == 1
    assert evaluate(Compare("==", Arith("%", Const(-7), Const(2), "i32"), Const(1)),
                    special) == 1
    assert evaluate(AllOf((Const(1), Not(Const(0)))), special) == 1
