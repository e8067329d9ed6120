"""The launch forms Numba-CUDA users expect: ``kernel[grid, block, stream, shmem](...)`` and
``kernel.forall(shape)(...)``, and cooperative kernels with ``grid_sync()``; on the simulator
and (GPU-marked, through the ``backend`` fixture) on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module, transpile_module
from gpu_native.runtime import backend as B
from gpu_native.runtime import sizing

SOURCE = """
from typing import TypeVar
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, Kernel3D, CUDASlice, CUDASliceMut,
                        CUDASlice2D, CUDASliceMut2D, CUDASliceMut3D, FlatLayout1D, FlatLayout2D,
                        FlatLayout3D, BlockLayout1D, shared_array, sync_threads, thread_idx,
                        block_idx, block_dim, grid_dim, grid_sync, unsafe, f32, f64, i32)

T = TypeVar("T", f32, f64)

@gpu_kernel(Kernel1D)
def scale(x: CUDASlice[f32], out: CUDASliceMut[f32], k: f32):
    i = FlatLayout1D.uid()
    out[i] = x[i] * k

@gpu_kernel(Kernel1D)
def axpy(a: T, x: CUDASlice[T], y: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    y[i] = a * x[i] + y[i]

@gpu_kernel(Kernel1D)
def reverse_blocks(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    # Reverses each block's slice through the dynamic shared array.
    tile = shared_array(f32, 0)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    tile[t] = x[i]
    sync_threads()
    out[i] = tile[block_dim.x - 1 - thread_idx.x]

@gpu_kernel(Kernel2D)
def plus_one(a: CUDASlice2D[f32], b: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    if y < b.shape[0] and x < b.shape[1]:
        b[y, x] = a[y, x] + 1.0

@gpu_kernel(Kernel1D)
def fixed_block(out: CUDASliceMut[i32]):
    assert block_dim.x == 96, "launch with 96 threads"
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = block_dim.x

@gpu_kernel(Kernel2D)
def fixed_tile(out: CUDASliceMut2D[i32]):
    assert block_dim.x == 16 and block_dim.y == 8
    x, y = FlatLayout2D.uid()
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = block_dim.x * 100 + block_dim.y

@gpu_kernel(Kernel3D)
def coords(out: CUDASliceMut3D[i32]):
    x, y, z = FlatLayout3D.uid()
    if z < out.shape[0] and y < out.shape[1] and x < out.shape[2]:
        out[z, y, x] = i32(z * 10000 + y * 100 + x)

@gpu_kernel(Kernel1D, cooperative=True)
def coop_sum(x: CUDASlice[f32], partial: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    # One pass: each thread sums a grid-stride slice, then a tree over the grid's partial sums,
    # one grid_sync() per level.
    i = FlatLayout1D.uid()
    acc = f32(0.0)
    for j in FlatLayout1D.grid_stride(len(x)):
        acc += x[j]
    partial[i] = acc
    grid_sync()
    stride = grid_dim.x * block_dim.x // 2
    while stride > 0:
        if i < stride:
            with unsafe():  # i < stride keeps the store and the read apart; no rule shows it
                partial[i] = partial[i] + partial[i + stride]
        grid_sync()
        stride = stride // 2
    if i == 0:
        with unsafe():
            out[i] = partial[0]
"""

RACY = """
from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, grid_sync, grid_dim,
                        block_dim, thread_idx, unsafe, f32)

@gpu_kernel(Kernel1D, cooperative=True)
def shift_no_sync(a: CUDASliceMut[f32], b: CUDASliceMut[f32]):
    # The last thread of each block reads what the first of the next block wrote.
    i = FlatLayout1D.uid()
    n = grid_dim.x * block_dim.x
    a[i] = f32(i)
    if thread_idx.x == block_dim.x - 1 and i + 1 < n:
        with unsafe():
            b[i] = a[i + 1]

@gpu_kernel(Kernel1D, cooperative=True)
def shift_synced(a: CUDASliceMut[f32], b: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    n = grid_dim.x * block_dim.x
    a[i] = f32(i)
    grid_sync()
    if i + 1 < n:
        with unsafe():
            b[i] = a[i + 1]

@gpu_kernel(Kernel1D, cooperative=True)
def divergent(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = 1.0
    if i < 100:
        grid_sync()

@gpu_kernel(Kernel1D, cooperative=True)
def leaves_early(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i >= 300:
        return
    grid_sync()
    a[i] = 1.0
"""


@pytest.fixture
def km(kernel_module):
    return kernel_module(SOURCE)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---- kernel[grid, block, stream, shmem] ------------------------------------------------------


def test_item_forms_compute_what_numpy_does(km, backend, rng):
    host = rng.standard_normal(1000).astype(np.float32)
    x = gn.to_device(host)
    out = gn.zeros(1000, gn.f32)
    km.scale[8, 128](x, out, 3.0)  # grid and block as ints
    np.testing.assert_allclose(out.to_host(), host * 3.0, rtol=1e-6)
    stream = gn.Stream()
    km.scale[(4,), (256,), stream](x, out, -2.0)  # 1-tuples, a stream
    stream.synchronize()
    np.testing.assert_allclose(out.to_host(), host * -2.0, rtol=1e-6)
    km.scale[gn.GridDim1D(2), gn.BlockDim1D(512), gn.DEFAULT_STREAM](x, out, 0.5)
    np.testing.assert_allclose(out.to_host(), host * 0.5, rtol=1e-6)

    # Numba's stream 0 is the default stream; the fourth entry is the dynamic shared memory.
    data = rng.standard_normal(4 * 64).astype(np.float32)
    rev = gn.empty(4 * 64, gn.f32)
    km.reverse_blocks[4, 64, 0, 64 * 4](gn.to_device(data), rev)
    np.testing.assert_array_equal(rev.to_host(), data.reshape(4, 64)[:, ::-1].reshape(-1))

    grid = rng.standard_normal((37, 45)).astype(np.float32)
    b = gn.zeros((37, 45), gn.f32)
    km.plus_one[(2, 5), (32, 8)](gn.to_device(grid), b)  # x covers 45 columns, y 37 rows
    np.testing.assert_allclose(b.to_host(), grid + 1.0, rtol=1e-6)


def test_an_item_launcher_is_kept_and_is_the_launch_launcher(km, backend, rng):
    launcher = km.scale[4, 64]
    assert km.scale[4, 64] is launcher  # cached per configuration, as in Numba
    assert km.scale.launch(4, 64, 0, gn.DEFAULT_STREAM) is launcher  # one launch path
    x = gn.to_device(np.arange(256, dtype=np.float32))
    out = gn.empty(256, gn.f32)
    for k in range(3):
        launcher(x, out, float(k))
        np.testing.assert_array_equal(out.to_host(), np.arange(256, dtype=np.float32) * k)
    assert km.scale[4, 64, 0, 0] is km.scale[4, 64, 0, 0]


def test_a_generic_kernel_launches_by_item(km, backend, rng):
    for dtype in (np.float32, np.float64):
        xs = rng.standard_normal(300).astype(dtype)
        ys = rng.standard_normal(300).astype(dtype)
        y = gn.to_device(ys)
        km.axpy[3, 100](dtype(2.0), gn.to_device(xs), y)
        np.testing.assert_allclose(y.to_host(), 2.0 * xs + ys, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("config, error, message", [
    ((1,), TypeError, r"scale\[\.\.\.\] takes 2 to 4 entries: grid, block, then optionally "
                      r"stream and shared_mem_bytes.*got 1 entries"),
    ((1, 2, 0, 0, 5), TypeError, r"takes 2 to 4 entries.*got 5 entries"),
    ((1, 2048), gn.LaunchError, r"a block of 2048x1x1 = 2048 threads exceeds the device limit "
                                r"of 1024"),
    (((1, 1, 1, 1), 32), gn.LaunchError, r"grid dimensions must have 1 to 3 entries \(x, y, z\), "
                                         r"got 4"),
    ((-1, 32), gn.LaunchError, r"grid dimensions must be at least 1, got -1"),
    ((1, (0,)), gn.LaunchError, r"block dimensions must be at least 1, got \(0,\)"),
    ((1.5, 32), TypeError, r"grid dimensions must be GridDim1D/2D/3D, an int or a tuple of 1 to "
                           r"3 ints, not float 1.5"),
    ((1, [32]), TypeError, r"block dimensions must be .* not list"),
    ((1, True), TypeError, r"block dimensions must be .* not bool"),
    ((1, 32, 0, -4), gn.LaunchError, r"shared_mem_bytes must be non-negative, got -4"),
    ((1, 32, 0, 2.0), TypeError, r"shared_mem_bytes must be an int, not float 2.0"),
    ((1, 32, "s"), TypeError, r"expected a stream .* got str"),
    (((2, 2), 32), gn.LaunchError, r"scale is a Kernel1D kernel but was launched with a 2-D "
                                   r"grid"),
    ((1, (8, 8)), gn.LaunchError, r"Kernel1D kernel but was launched with a 2-D block"),
    ((1, (8, 1, 2)), gn.LaunchError, r"Kernel1D kernel but was launched with a 3-D block"),
])
def test_item_errors_name_what_is_wrong(km, backend, config, error, message):
    with pytest.raises(error, match=message):
        km.scale[config]


@pytest.mark.parametrize("grid, block", [
    ((4,), (256, 1)), ((4, 1), 256), ((4, 1, 1), (256, 1, 1)),
    (gn.GridDim2D(4, 1), gn.BlockDim3D(256, 1, 1)),
])
def test_extra_axes_of_extent_one_launch_a_1d_kernel(km, backend, grid, block):
    # (256, 1) is a 1-D block as CUDA sees it: no thread's coordinates change.
    host = np.random.default_rng().standard_normal(1000).astype(np.float32)
    out = gn.to_device(np.full(1000, np.nan, np.float32))
    km.scale[grid, block](gn.to_device(host), out, 3.0)
    np.testing.assert_allclose(out.to_host(), host.astype(np.float64) * 3.0, rtol=1e-6)


@pytest.mark.parametrize("cached, twin", [
    (lambda k: k[1, 8], lambda k: k[1.0, 8]),
    (lambda k: k[1, 8], lambda k: k[True, 8]),
    (lambda k: k[1, 8], lambda k: k[1, np.float64(8.0)]),
    (lambda k: k[(1,), (8,)], lambda k: k[(1.0,), (8,)]),
    (lambda k: k[1, 8, 0], lambda k: k[1, 8, False]),
    (lambda k: k[1, 8, 0], lambda k: k[1, 8, 0.0]),
    (lambda k: k[1, 8, 0, 1], lambda k: k[1, 8, 0, True]),
    (lambda k: k.launch(1, 8), lambda k: k.launch(1.0, 8)),
    (lambda k: k.launch((1,), 8), lambda k: k.launch((True,), 8)),
    (lambda k: k.launch(1, 8, 4), lambda k: k.launch(1, 8, 4.0)),
    (lambda k: k.forall(8), lambda k: k.forall(8.0)),
    (lambda k: k.forall((1,)), lambda k: k.forall((True,))),
])
def test_a_float_or_bool_equal_to_a_cached_configuration_is_still_refused(km, backend, cached,
                                                                         twin):
    # The launcher caches are keyed by value, and 1.0 == True == 1: a configuration launched
    # before must not make its float or bool twin acceptable.
    cached(km.scale)
    with pytest.raises(TypeError, match=r"must be (an int|GridDim1D|BlockDim1D)|not bool|"
                                        r"expected a stream"):
        twin(km.scale)


@pytest.mark.slow
@pytest.mark.parametrize("form", [
    lambda k: k[4, 256],
    lambda k: k[(4,), (256,)],
    lambda k: k[4, 256, 0],
    lambda k: k[4, 256, gn.DEFAULT_STREAM, 0],
    lambda k: k.launch(4, 256),
    lambda k: k.launch(gn.GridDim1D(4), gn.BlockDim1D(256)),
    lambda k: k.forall(1000),
])
def test_a_configuration_launched_again_reuses_its_launcher(km, backend, form):
    # The second lookup of a configuration (the same constant objects, or equal fresh ones)
    # returns the launcher the first one built, and it still launches correctly.
    first = form(km.scale)
    again = form(km.scale)
    assert again is first and callable(first)
    host = np.random.default_rng().standard_normal(1000).astype(np.float32)
    for _ in range(2):
        out = gn.to_device(np.full(1000, np.nan, np.float32))
        form(km.scale)(gn.to_device(host), out, 3.0)
        np.testing.assert_allclose(out.to_host(), host.astype(np.float64) * 3.0, rtol=1e-6)


def test_an_equal_configuration_built_afresh_reuses_the_launcher(km, backend):
    blocks = int("300")  # equal to the constant below, but another object
    assert blocks is not int("300")
    assert km.scale[(300, 256)] is km.scale[(blocks, 256)]
    assert km.scale[(300, 256)] is km.scale[tuple([300, 256])]
    assert km.scale.launch(300, 256, 0) is km.scale.launch(blocks, 256, np.int64(0))
    assert km.scale.forall(300) is km.scale.forall(blocks)


@pytest.mark.parametrize("make, message", [
    (lambda: gn.GridDim1D(1000 / 128), r"GridDim1D must be an int, not float 7.8125; count "
                                       r"with integer division, e\.g\. \(n \+ 127\) // 128"),
    (lambda: gn.BlockDim1D(125.9), r"BlockDim1D must be an int, not float 125.9"),
    (lambda: gn.GridDim1D(True), r"GridDim1D must be an int, not bool"),
    (lambda: gn.GridDim1D("12"), r"GridDim1D must be an int, not str"),
    (lambda: gn.GridDim2D(1.5, 2), r"GridDim2D's x must be an int, not float 1.5"),
    (lambda: gn.BlockDim2D(16, np.float32(8)), r"BlockDim2D's y must be an int, not float32"),
    (lambda: gn.GridDim3D(1, 2, 2.0), r"GridDim3D's z must be an int, not float 2.0"),
    (lambda: gn.BlockDim3D(8, 8, None), r"BlockDim3D's z must be an int, not NoneType"),
])
def test_launch_dimensions_refuse_what_they_would_truncate(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_launch_dimensions_take_any_integer():
    import copy
    import pickle

    assert gn.GridDim1D(np.int64(7)) == 7 and type(gn.GridDim1D(np.int64(7)).x) is int
    assert gn.BlockDim1D(np.uint16(128)).x == 128
    assert gn.GridDim2D(np.int32(2), 3) == (2, 3, 1)
    assert all(type(v) is int for v in gn.BlockDim3D(np.int8(1), np.int16(2), np.uint32(3)))
    for dims in (gn.GridDim1D(5), gn.GridDim2D(5, 6), gn.BlockDim3D(4, 2, 1)):
        assert pickle.loads(pickle.dumps(dims)) == dims and copy.copy(dims) == dims
        assert type(pickle.loads(pickle.dumps(dims))) is type(dims)


def test_a_launch_error_is_a_value_error():
    assert issubclass(gn.LaunchError, ValueError)


def test_calling_a_kernel_says_how_to_launch_it(km):
    with pytest.raises(TypeError, match=r"scale\[blocks, threads\]\(x, out, k\).*forall"):
        km.scale(1, 2, 3)


# ---- forall ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 31, 1000, 5000])
def test_forall_covers_n(km, backend, rng, n):
    host = rng.standard_normal(n).astype(np.float32)
    out = gn.zeros(n, gn.f32)
    km.scale.forall(n)(gn.to_device(host), out, 4.0)
    np.testing.assert_allclose(out.to_host(), host * 4.0, rtol=1e-6)


def test_forall_block_size_comes_from_the_occupancy_api(km, backend):
    k = km.scale
    launcher = k.forall(5000)
    assert k.forall(5000) is launcher
    variant = next(iter(k.variants.values()))
    be = B.select()
    (key, threads), = variant.block_sizes.items()  # cached per backend, device and shmem
    assert key == (be.name, 0, 0)
    if backend == "sim":
        assert threads == sizing.SIM_BLOCK_SIZE == 256
    else:
        fn = k._function(variant, be, 0)
        assert threads == be.max_block_size(fn, 0)
        assert 32 <= threads <= 1024
    grid, block = sizing.forall_config((5000,), threads)
    assert launcher is k.launch(grid, block, 0, gn.DEFAULT_STREAM)
    assert grid[0] * block[0] >= 5000 and (grid[0] - 1) * block[0] < 5000


def test_forall_2d_and_3d_take_numpy_shapes(km, backend, rng):
    grid = rng.standard_normal((37, 45)).astype(np.float32)
    b = gn.zeros((37, 45), gn.f32)
    km.plus_one.forall(b.shape)(gn.to_device(grid), b)
    np.testing.assert_allclose(b.to_host(), grid + 1.0, rtol=1e-6)
    out = gn.zeros((3, 5, 70), gn.i32)
    km.coords.forall(out.shape)(out)
    z, y, x = np.indices((3, 5, 70))
    np.testing.assert_array_equal(out.to_host(), z * 10000 + y * 100 + x)


def test_forall_of_a_generic_kernel_picks_the_specialisation(km, backend, rng):
    for dtype in (np.float32, np.float64):
        xs = rng.standard_normal(700).astype(dtype)
        y = gn.zeros(700, gn.f32 if dtype == np.float32 else gn.f64)
        km.axpy.forall(700)(dtype(3.0), gn.to_device(xs), y)
        np.testing.assert_allclose(y.to_host(), 3.0 * xs, rtol=1e-6)


def test_forall_launches_the_block_the_kernel_asserts(km, backend):
    """A kernel that fixes its block size (`assert block_dim.x == 96`) gets that block from
    forall, not the occupancy API's, which its assert would refuse."""
    out = gn.empty(1000, gn.i32)
    out.fill(-1)
    km.fixed_block.forall(1000)(out)
    np.testing.assert_array_equal(out.to_host(), np.full(1000, 96, np.int32))
    tile = gn.empty((37, 45), gn.i32)
    tile.fill(-1)
    km.fixed_tile.forall(tile.shape)(tile)
    np.testing.assert_array_equal(tile.to_host(), np.full((37, 45), 1608, np.int32))


def test_block_shapes():
    assert sizing.block_shape(256, (5000,)) == (256,)
    assert sizing.block_shape(256, (40,)) == (64,)  # whole warps, not a full block
    assert sizing.block_shape(1024, (100, 100)) == (32, 32)
    assert sizing.block_shape(256, (100, 100)) == (32, 8)
    assert sizing.block_shape(1024, (4, 4, 4)) == (32, 8, 4)
    assert sizing.forall_config((37, 45), 256) == ((2, 5), (32, 8))


@pytest.mark.parametrize("shape, error, message", [
    (-1, gn.LaunchError, r"scale\.forall\(shape\): an extent cannot be negative, got -1"),
    ((2, 3), gn.LaunchError, r"scale\.forall\(\(2, 3\)\) needs a 2-D launch, but scale is a "
                             r"Kernel1D kernel"),
    (1.5, TypeError, r"shape must be an int or a tuple of 1 to 3 ints \(NumPy order\), not "
                     r"float"),
    ((1, 2, 3, 4), gn.LaunchError, r"shape must have 1 to 3 entries, got 4"),
])
def test_forall_errors(km, backend, shape, error, message):
    with pytest.raises(error, match=message):
        km.scale.forall(shape)


def test_forall_of_an_empty_problem_launches_nothing(km, backend):
    # A stage whose input came out empty: no launch (CUDA refuses a grid of 0 blocks), as
    # Numba's forall(0) does; the argument count and the stream are still checked.
    x, out = gn.empty(0, gn.f32), gn.empty(0, gn.f32)
    km.scale.forall(0)(x, out, 3.0)
    km.scale.forall(len(x), gn.Stream())(x, out, 3.0)
    with pytest.raises(TypeError, match=r"scale\(\) takes 3 arguments \(x, out, k\) but 2"):
        km.scale.forall(0)(x, out)
    with pytest.raises(TypeError, match=r"expected a stream|stream"):
        km.scale.forall(0, stream="default")
    sentinel = gn.to_device(np.full(4, 7.0, np.float32))
    km.scale.forall((0,))(gn.empty(0, gn.f32), sentinel, 3.0)  # nothing runs, nothing written
    np.testing.assert_array_equal(sentinel.to_host(), np.full(4, 7.0, np.float32))


# ---- cooperative kernels -------------------------------------------------------------------------


def test_cooperative_reduction_in_one_pass(km, backend, rng):
    host = rng.standard_normal(100_000).astype(np.float32)
    x = gn.to_device(host)
    blocks = min(8, km.coop_sum.max_cooperative_grid_blocks(256))
    blocks = 1 << (blocks.bit_length() - 1)  # the tree halves the grid's threads
    partial = gn.empty(blocks * 256, gn.f32)
    out = gn.zeros(1, gn.f32)
    km.coop_sum[blocks, 256](x, partial, out)
    assert out.to_host()[0] == pytest.approx(float(host.astype(np.float64).sum()), abs=1e-2)


def test_cooperative_kernels_launch_cooperatively(km, backend, monkeypatch):
    be = B.select()
    calls = []
    real = be.launch_cooperative

    def recording(*args):
        calls.append(args[1:7])
        return real(*args)

    monkeypatch.setattr(be, "launch_cooperative", recording)
    partial = gn.empty(512, gn.f32)
    out = gn.zeros(1, gn.f32)
    km.coop_sum[2, 256](gn.to_device(np.ones(4096, np.float32)), partial, out)
    km.scale[1, 32](gn.to_device(np.ones(32, np.float32)), gn.empty(32, gn.f32), 1.0)
    assert calls == [(2, 1, 1, 256, 1, 1)]  # the plain kernel went through cuLaunchKernel
    assert out.to_host()[0] == 4096.0


def test_a_grid_that_cannot_be_co_resident_is_refused(km, backend):
    k = km.coop_sum
    limit = k.max_cooperative_grid_blocks(256)
    be = B.select()
    sms = be.properties(0)["multiprocessors"]
    assert limit % sms == 0 and limit >= sms
    if backend == "sim":  # one modelled multiprocessor of 2048 threads
        assert limit == 8
    with pytest.raises(gn.LaunchError, match=(
            rf"coop_sum is a cooperative kernel, and its grid of {limit + 1} blocks cannot all "
            rf"be resident at once: the device holds at most {limit} blocks of 256 threads "
            rf"\({limit // sms} per multiprocessor x {sms} multiprocessors")):
        k[limit + 1, 256]
    # Dynamic shared memory lowers the limit (the simulator models 228 KiB per multiprocessor).
    assert k.max_cooperative_grid_blocks(256, 100 * 1024) <= 2 * sms


def test_the_cooperative_limit_checks_its_block_and_shared_memory_as_a_launch(km, backend):
    """A block no launch could have gave a number (1 for 2000 threads, 16 for -1 bytes) and a
    string of bytes an internal ValueError."""
    k = km.coop_sum
    with pytest.raises(gn.LaunchError, match=r"coop_sum: a block of 2000x1x1 = 2000 threads "
                                             r"exceeds the device limit of 1024"):
        k.max_cooperative_grid_blocks(2000)
    with pytest.raises(gn.LaunchError, match="shared_mem_bytes must be non-negative, got -1"):
        k.max_cooperative_grid_blocks(128, -1)
    for bad in (1.9, "x"):
        with pytest.raises(TypeError, match="shared_mem_bytes must be an int"):
            k.max_cooperative_grid_blocks(128, bad)
    assert k.max_cooperative_grid_blocks(128, 0) >= 1


def test_forall_caps_a_cooperative_grid(km, backend, rng):
    k = km.coop_sum
    limit = k.max_cooperative_grid_blocks(256 if backend == "sim" else 1024)
    host = rng.standard_normal(1 << 20).astype(np.float32)
    launcher = k.forall(len(host))
    assert launcher is not None
    if backend == "sim":
        assert launcher is k.launch((limit,), (256,), 0, gn.DEFAULT_STREAM)
        partial = gn.empty(limit * 256, gn.f32)
        out = gn.zeros(1, gn.f32)
        launcher(gn.to_device(host), partial, out)
        assert out.to_host()[0] == pytest.approx(float(host.astype(np.float64).sum()), abs=0.1)


def test_the_race_detector_sees_grid_sync_as_a_phase_boundary(kernel_module):
    with B.use("sim"):
        k = kernel_module(RACY)
        b = gn.zeros(512, gn.f32)
        a = gn.zeros(512, gn.f32)
        k.shift_synced[2, 256](a, b)
        np.testing.assert_array_equal(b.to_host()[:511], np.arange(1, 512, dtype=np.float32))
        with pytest.raises(gn.DeviceRaceError, match=(
                r"threads of different blocks are ordered only by a grid_sync\(\) between the "
                r"two accesses")):
            k.shift_no_sync[2, 256](gn.zeros(512, gn.f32), gn.zeros(512, gn.f32))
            gn.synchronize()


def test_the_simulator_reports_a_grid_sync_not_every_thread_reaches(kernel_module):
    with B.use("sim"):
        k = kernel_module(RACY)
        with pytest.raises(gn.DeviceRaceError, match=(
                r"grid_sync\(\) at .*:\d+ was reached by thread \(0, 0, 0\) of block \(0, 0, 0\) "
                r"but not by thread \(100, 0, 0\) of block \(0, 0, 0\), which has not exited")):
            k.divergent[2, 256](gn.zeros(512, gn.f32))
            gn.synchronize()
        with pytest.raises(gn.DeviceRaceError, match=(
                r"grid_sync\(\) at .*: thread \(44, 0, 0\) of block \(1, 0, 0\) returned .* "
                r"before reaching it; on the GPU the other threads wait for it forever")):
            k.leaves_early[2, 256](gn.zeros(512, gn.f32))
            gn.synchronize()


# ---- the language ------------------------------------------------------------------------------


def _error(source: str) -> TranspileError:
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, "coop_bad.py", "coop_bad")
    return info.value


def test_grid_sync_outside_a_cooperative_kernel_is_refused():
    source = ("from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, "
              "grid_sync, f32\n\n"
              "@gpu_kernel(Kernel1D)\n"
              "def k(a: CUDASliceMut[f32]):\n"
              "    i = FlatLayout1D.uid()\n"
              "    grid_sync()\n"
              "    a[i] = 1.0\n")
    text = str(_error(source))
    assert text.splitlines()[:3] == [
        "coop_bad.py:6:5: error: grid_sync() is a barrier for the whole grid, which only a "
        "cooperative kernel has (every block resident at once); declare the kernel with "
        "@gpu_kernel(..., cooperative=True)",
        "        grid_sync()",
        "        ^^^^^^^^^^^",
    ]


def test_grid_sync_in_a_device_function_follows_its_caller():
    head = ("from gpu_native import gpu_kernel, gpu_device, Kernel1D, CUDASliceMut, "
            "FlatLayout1D, grid_sync, f32\n\n"
            "@gpu_device\n"
            "def phase():\n"
            "    grid_sync()\n\n")
    ok = head + ("@gpu_kernel(Kernel1D, cooperative=True)\n"
                 "def k(a: CUDASliceMut[f32]):\n"
                 "    i = FlatLayout1D.uid()\n"
                 "    phase()\n"
                 "    a[i] = 1.0\n")
    (kernel,) = transpile_module(ok, "coop_ok.py", "coop_ok").kernels
    assert kernel.options.cooperative
    assert "cooperative_groups::this_grid().sync();" in kernel.variants[0].cuda
    bad = head + ("@gpu_kernel(Kernel1D)\n"
                  "def k(a: CUDASliceMut[f32]):\n"
                  "    i = FlatLayout1D.uid()\n"
                  "    phase()\n"
                  "    a[i] = 1.0\n")
    err = _error(bad)
    assert "coop_bad.py:5:5: error: grid_sync() is a barrier for the whole grid" in str(err)


@pytest.mark.parametrize("body, message", [
    ("    grid_sync(1)\n", "grid_sync() takes no arguments"),
])
def test_grid_sync_misuse(body, message):
    source = ("from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, grid_sync, f32\n\n"
              "@gpu_kernel(Kernel1D, cooperative=True)\n"
              "def k(a: CUDASliceMut[f32]):\n" + body)
    assert message in str(_error(source))


def test_cooperative_must_be_a_bool():
    source = ("from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32\n\n"
              "@gpu_kernel(Kernel1D, cooperative=1)\n"
              "def k(a: CUDASliceMut[f32]):\n"
              "    pass\n")
    assert "cooperative must be True or False" in str(_error(source))


def test_grid_sync_on_the_host_raises():
    with pytest.raises(RuntimeError, match="grid_sync"):
        gn.grid_sync()


# ---- NVRTC ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow),
                                  pytest.param("sm_90", marks=pytest.mark.slow)])
def test_a_cooperative_kernel_compiles_with_nvrtc(arch):
    from gpu_native.cache import BuildRequest
    from gpu_native.cache.keys import compile_options
    from gpu_native.compiler.nvrtc import compile_request, nvrtc_options

    module = transpile_module(SOURCE, "coop_nvrtc.py", "coop_nvrtc")
    spec = next(k for k in module.kernels if k.name == "coop_sum")
    (variant,) = spec.variants
    assert variant.cuda.count("#include <cooperative_groups.h>") == 1
    # Two in the kernel, two in its 32-bit index entry point.
    assert variant.cuda.count("cooperative_groups::this_grid().sync();") == 4
    request = BuildRequest.for_variant(spec, variant, arch)
    assert request.uses_grid_sync
    options = nvrtc_options(request, arch)
    assert not any("rdc" in o for o in options)  # grid.sync() needs no separate compilation
    assert compile_options(request)["uses_grid_sync"] is True
    image = compile_request(request)
    assert image.kind == "cubin" and image.image[:4] == b"\x7fELF"
    assert image.log.strip("\x00").strip() == ""

    plain = next(k for k in module.kernels if k.name == "scale")
    other = BuildRequest.for_variant(plain, plain.variants[0], arch)
    assert "uses_grid_sync" not in compile_options(other)  # every other kernel keeps its key
    assert "cooperative_groups" not in plain.variants[0].cuda


def test_the_simulator_models_occupancy():
    from gpu_native.runtime.sim_backend import SimBackend

    be = SimBackend()

    class Fn:
        static_shared_bytes = 0

    assert be.max_active_blocks(Fn, 256, 0) == 8
    assert be.max_active_blocks(Fn, 32, 0) == 32
    assert be.max_active_blocks(Fn, 1024, 0) == 2
    assert be.max_active_blocks(Fn, 64, 100 * 1024) == 2


# ---- the docs ----------------------------------------------------------------------------------


def test_the_docs_snippet_runs(backend, kernel_module, capsys):
    import re

    from tests.helpers import ROOT

    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n## Launching a kernel\n"):text.index("\n## Array views\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    example = kernel_module(snippet)  # its asserts check the results against NumPy
    assert capsys.readouterr().out.splitlines()[-1] == "ok"
    # Its own inputs, checked here too: three launches of axpy (2 + 3 - 1), then one of
    # scale_rows; a float64 reference, with room for the GPU's fused multiply-adds.
    x, y = example.x.astype(np.float64), example.y.astype(np.float64)
    np.testing.assert_allclose(example.dy.to_host(), y + 4 * x, rtol=1e-5, atol=1e-5)
    want = example.a.astype(np.float64) * example.w.astype(np.float64)[:, None]
    np.testing.assert_allclose(example.out.to_host(), want, rtol=1e-6)
