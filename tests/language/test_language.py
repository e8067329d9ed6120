"""Every feature of the kernel language, run on the simulator and (where there is one) the GPU,
against NumPy: fresh random inputs, poisoned outputs, float64 references."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_native as gn


@pytest.fixture(scope="module")
def kl():
    from tests.helpers import kernels_language

    return kernels_language


def launch(kernel, grid, block, shared=0):
    return kernel.launch(grid, block, shared, gn.DEFAULT_STREAM)


def filled(shape, dtype, value):
    out = gn.empty(shape, dtype)
    out.fill(value)
    return out


@pytest.mark.slow
def test_two_dimensional_kernel(backend, kl, rng):
    a, b = rng.standard_normal((37, 50), dtype=np.float32), rng.standard_normal((37, 50),
                                                                              dtype=np.float32)
    c = filled((37, 50), gn.f32, np.nan)
    launch(kl.add_2d, gn.GridDim2D(4, 3), gn.BlockDim2D(16, 16))(gn.to_device(a),
                                                                  gn.to_device(b), c)
    np.testing.assert_allclose(c.to_host(), a + b.astype(np.float64) * 50, rtol=1e-6, atol=1e-5)


def test_three_dimensional_kernel(backend, kl):
    out = filled((5, 6, 7), gn.i32, -1)
    launch(kl.index_3d, gn.GridDim3D(2, 2, 3), gn.BlockDim3D(4, 4, 2))(out)
    z, y, x = np.meshgrid(np.arange(5), np.arange(6), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(out.to_host(), z * 10000 + y * 100 + x)


def test_thread_block_and_grid_indices(backend, kl):
    out = filled((20, 30, 8), gn.i32, -1)
    launch(kl.indices_2d, gn.GridDim2D(4, 3), gn.BlockDim2D(8, 7))(out)
    got = out.to_host()
    y, x = np.meshgrid(np.arange(20), np.arange(30), indexing="ij")
    expected = np.stack([x % 8, y % 7, x // 8, y // 7, np.full_like(x, 8), np.full_like(x, 7),
                         np.full_like(x, 4), np.full_like(x, 3)], axis=-1)
    np.testing.assert_array_equal(got, expected)


def test_static_shared_memory_and_barrier(backend, kl, rng):
    x = rng.standard_normal(128 * 6, dtype=np.float32)
    out = filled(len(x), gn.f32, np.nan)
    launch(kl.reverse_blocks, gn.GridDim1D(6), gn.BlockDim1D(128))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x.reshape(6, 128)[:, ::-1].reshape(-1))


def test_dynamic_shared_memory(backend, kl, rng):
    x = rng.standard_normal(96 * 4, dtype=np.float32)
    out = filled(len(x), gn.f32, np.nan)
    launch(kl.reverse_dynamic, gn.GridDim1D(4), gn.BlockDim1D(96), 96 * 4)(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x.reshape(4, 96)[:, ::-1].reshape(-1))


def test_dynamic_shared_memory_over_48_kib(backend, kl, rng):
    # 64 KiB: more than a block may have without the opt-in, which the launcher makes (on the
    # simulator as on the GPU).
    x = rng.standard_normal(2 * 16 * 1024, dtype=np.float32)
    out = filled(len(x), gn.f32, np.nan)
    launch(kl.reverse_dynamic_wide, gn.GridDim1D(2), gn.BlockDim1D(1024), 16 * 1024 * 4)(
        gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x.reshape(2, -1)[:, ::-1].reshape(-1))
    if backend == "sim":
        fn = next(iter(kl.reverse_dynamic_wide.variants.values())).functions["sim", 0, None]
        assert fn.max_dynamic_shared == 16 * 1024 * 4  # opted in, as cuFuncSetAttribute


def test_the_simulator_refuses_dynamic_shared_memory_past_48_kib_without_the_opt_in(
        kl, rng, monkeypatch):
    # As cuLaunchKernel does: the launcher's opt-in is not a formality on the simulator either.
    from gpu_native.runtime.backend import use
    from gpu_native.runtime.sim_backend import SimBackend

    monkeypatch.setattr(SimBackend, "allow_dynamic_shared", lambda self, fn, nbytes: None)
    with use("sim"):
        x = gn.to_device(rng.standard_normal(96, dtype=np.float32))
        out = filled(96, gn.f32, np.nan)
        launcher = launch(kl.reverse_dynamic, gn.GridDim1D(1), gn.BlockDim1D(96), 48 * 1024 + 4)
        with pytest.raises(gn.LaunchError, match="49156 bytes of dynamic shared memory exceed "
                           "the 49152 its function allows"):
            launcher(x, out)


def _optin_limit() -> int:
    from gpu_native.runtime import backend as B

    return B.select().properties(0)["max_shared_per_block_optin"]


@pytest.mark.untrusted
def test_static_plus_dynamic_shared_memory_is_checked_against_the_device(backend, kl, rng):
    x = rng.standard_normal(256, dtype=np.float32)
    out = filled(len(x), gn.f32, np.nan)
    room = _optin_limit() - 48 * 1024  # static_48k has exactly 48 KiB of static shared memory
    with pytest.raises(gn.LaunchError, match=f"static_48k needs 49152 bytes of static plus "
                       f"{room + 16} of dynamic shared memory, more than the device's "
                       f"{_optin_limit()}"):
        launch(kl.static_48k, gn.GridDim1D(2), gn.BlockDim1D(128), room + 16)
    launch(kl.static_48k, gn.GridDim1D(2), gn.BlockDim1D(128), room)(gn.to_device(x), out)
    expected = x.reshape(2, 128)[:, ::-1].reshape(-1) + np.tile(np.arange(4), 64)
    np.testing.assert_array_equal(out.to_host(), expected.astype(np.float32))


def test_two_dimensional_shared_tile(backend, kl, rng):
    src = rng.standard_normal((24, 16), dtype=np.float32)
    dst = filled((16, 24), gn.f32, np.nan)
    launch(kl.transpose_tiles, gn.GridDim2D(2, 3), gn.BlockDim2D(8, 8))(gn.to_device(src), dst)
    np.testing.assert_array_equal(dst.to_host(), src.T)


def test_local_arrays(backend, kl, rng):
    x = rng.standard_normal((256, 4), dtype=np.float32)
    out = filled((256, 4), gn.f32, np.nan)
    launch(kl.sort4, gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), np.sort(x, axis=1))


def test_integer_atomics_and_their_return_values(backend, kl, rng):
    n = 1000
    values = rng.integers(-50, 50, n, dtype=np.int32)
    acc = gn.to_device(np.array([0, 0, 10**6, -10**6, -1, 0, 0, 0], np.int32))
    tickets = filled(n, gn.i32, -1)
    launch(kl.atomics_i32, gn.GridDim1D(8), gn.BlockDim1D(125))(gn.to_device(values), acc,
                                                                tickets)
    got = acc.to_host()
    assert got[0] == values.sum() and got[1] == -values.sum()
    assert got[2] == values.min() and got[3] == values.max()
    assert got[4] == np.bitwise_and.reduce(values) & -1
    assert got[5] == np.bitwise_or.reduce(values)
    assert got[6] == np.bitwise_xor.reduce(values)
    assert got[7] == n
    np.testing.assert_array_equal(np.sort(tickets.to_host()), np.arange(n))


def test_wide_and_float_atomics(backend, kl, rng):
    n = 512
    values = rng.standard_normal(n)
    fsum, imax = gn.zeros(1, gn.f64), gn.to_device(np.array([-(2**62)], np.int64))
    usum, fmin = gn.zeros(1, gn.u64), gn.to_device(np.array([np.inf], np.float32))
    launch(kl.atomics_wide, gn.GridDim1D(4), gn.BlockDim1D(128))(gn.to_device(values), fsum,
                                                                 imax, usum, fmin)
    assert abs(fsum.to_host()[0] - values.sum()) < 1e-9
    assert imax.to_host()[0] == max(int(np.trunc(v * 1000.0)) for v in values)
    assert usum.to_host()[0] == n * (n - 1) // 2
    assert fmin.to_host()[0] == np.float32(values.astype(np.float32).min())


def test_exchange_compare_exchange_load_store(backend, kl):
    flags, winners = gn.zeros(3, gn.u32), filled(1, gn.i32, -1)
    launch(kl.atomic_exchange_cas, gn.GridDim1D(2), gn.BlockDim1D(64))(flags, winners)
    f = flags.to_host()
    assert f[0] == 1 and f[1] == 128 and f[2] == 7
    assert 0 <= winners.to_host()[0] < 128


def test_shared_memory_atomics(backend, kl, rng):
    data = rng.integers(0, 1000, 5000, dtype=np.uint32)
    hist = gn.zeros(16, gn.u32)
    launch(kl.shared_histogram, gn.GridDim1D(7), gn.BlockDim1D(64))(gn.to_device(data), hist)
    np.testing.assert_array_equal(hist.to_host(), np.bincount(data % 16, minlength=16))


def test_half_precision_atomic_add(backend, kl):
    values = np.full(64, 0.25, np.float32)
    h, b = gn.zeros(1, gn.f16), gn.zeros(1, gn.bf16)
    launch(kl.half_atomics, gn.GridDim1D(1), gn.BlockDim1D(64))(gn.to_device(values), h, b)
    assert float(h.to_host()[0]) == 16.0 and float(b.to_host()[0]) == 16.0


def test_warp_intrinsics(backend, kl, rng):
    x = rng.integers(0, 10, 64, dtype=np.int32)
    out = filled((64, 8), gn.i32, -99)
    launch(kl.warp_ops, gn.GridDim1D(1), gn.BlockDim1D(64))(gn.to_device(x), out)
    got = out.to_host()
    lanes = np.arange(64) % 32
    base = np.arange(64) - lanes
    down = np.where(lanes + 1 < 32, x[np.minimum(np.arange(64) + 1, 63)], x)
    up = np.where(lanes >= 2, x[np.maximum(np.arange(64) - 2, 0)], x)
    np.testing.assert_array_equal(got[:, 0], down)
    np.testing.assert_array_equal(got[:, 1], up)
    np.testing.assert_array_equal(got[:, 2], x[base + (lanes ^ 5)])
    np.testing.assert_array_equal(got[:, 3], x[base + 7])
    for w in range(2):
        warp = x[32 * w:32 * w + 32]
        ballot = sum(1 << k for k in range(32) if warp[k] % 2 == 0)
        assert (got[32 * w:32 * w + 32, 4].astype(np.int64) & 0xFFFFFFFF == ballot).all()
        assert (got[32 * w:32 * w + 32, 5] == 1).all()
        assert (got[32 * w:32 * w + 32, 6] == int((warp == 3).any())).all()
    np.testing.assert_array_equal(got[:, 7], lanes)


def test_warp_shuffle_reduction(backend, kl, rng):
    x = rng.standard_normal(256, dtype=np.float32)
    out = filled(8, gn.f32, np.nan)
    launch(kl.warp_sum, gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x), out)
    np.testing.assert_allclose(out.to_host(), x.reshape(8, 32).astype(np.float64).sum(axis=1),
                               rtol=1e-5, atol=1e-5)


def test_device_functions_from_another_module(backend, kl, rng):
    n = 200
    x = rng.standard_normal(n, dtype=np.float32) * 2
    counts = rng.integers(1, 30, n, dtype=np.int32)
    out = filled((n, 5), gn.f32, np.nan)
    launch(kl.use_device_functions, gn.GridDim1D(2), gn.BlockDim1D(100))(
        gn.to_device(x), gn.to_device(counts), out)
    got = out.to_host()

    def steps(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    np.testing.assert_allclose(got[:, 0], np.clip(x, -1, 1))
    np.testing.assert_allclose(got[:, 1], x.astype(np.float64) ** 2 + 4, rtol=1e-6)
    np.testing.assert_array_equal(got[:, 2], [steps(int(v)) for v in counts])
    np.testing.assert_allclose(got[:, 3], x.astype(np.float64) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(got[:, 4], 3 * 3 + 2.5)


def test_device_function_storing_through_a_unique_id(backend, kl, rng):
    x = rng.standard_normal(300, dtype=np.float32)
    out = filled(300, gn.f32, np.nan)
    launch(kl.device_store, gn.GridDim1D(3), gn.BlockDim1D(100))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), 2 * x)


def test_a_device_function_declared_to_return_none(backend, kl, rng):
    # `-> None`, as no annotation: a void function, whose bare `return` leaves early.
    x = rng.standard_normal(300, dtype=np.float32)
    out = filled(300, gn.f32, np.nan)
    launch(kl.device_store_clamped, gn.GridDim1D(3), gn.BlockDim1D(100))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), np.maximum(x, 0))


def test_array_size_and_ndim(backend, kl):
    out = filled(40, gn.i64, -7)
    launch(kl.sizes, gn.GridDim1D(1), gn.BlockDim1D(64))(
        gn.to_device(np.zeros((3, 5), np.float32)), gn.to_device(np.zeros(33, np.float32)), out)
    want = np.full(40, -7)
    want[:33] = 15 * 10 + 2 + 100 + np.arange(33)
    np.testing.assert_array_equal(out.to_host(), want)


def test_a_loop_name_reused_over_narrower_bounds(backend, kl, rng):
    # As in Python, a name is a loop variable again: the second loop counts in its i64.
    x = rng.standard_normal(100, dtype=np.float32)
    out = filled(64, gn.f32, np.nan)
    launch(kl.reused_loop_name, gn.GridDim1D(2), gn.BlockDim1D(32))(gn.to_device(x), out)
    x64 = x.astype(np.float64)
    expected = np.array([x64[u::64].sum() + (100.0 * x64[u % 32] if u % 32 < 8 else 0.0)
                         for u in range(64)])
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_generic_kernel_specialisations(backend, kl, rng, dtype):
    n = 500
    x = (rng.standard_normal(n) * 100).astype(dtype)
    y = (rng.standard_normal(n) * 100).astype(dtype)
    out = gn.empty(n, dtype)
    alpha = dtype(3)
    launch(kl.generic_axpy, gn.GridDim1D(5), gn.BlockDim1D(100))(alpha, gn.to_device(x),
                                                                 gn.to_device(y), out)
    expected = 3 * x.astype(np.float64) + y
    # 3x + y can cancel: compare with a tolerance scaled to the terms, not to the result.
    scale = 3 * np.abs(x.astype(np.float64)) + np.abs(y)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    assert np.all(np.abs(out.to_host() - expected) <= tol * scale)
    assert kl.generic_axpy.specializations == [("f32",), ("f64",), ("i32",)]


def test_half_precision_arithmetic(backend, kl, rng):
    n = 128
    x = rng.uniform(-2, 2, n).astype(np.float16)
    y = rng.uniform(-2, 2, n).astype(np.float32)
    out = filled((n, 3), gn.f32, np.nan)
    h, b = gn.empty(n, gn.f16), gn.empty(n, gn.bf16)
    launch(kl.half_math, gn.GridDim1D(1), gn.BlockDim1D(n))(gn.to_device(x),
                                                            gn.to_device(y, gn.bf16), out, h, b)
    x64 = x.astype(np.float64)
    y_bf = gn.to_device(y, gn.bf16).to_host().astype(np.float64)  # y rounded to bf16
    np.testing.assert_allclose(h.to_host().astype(np.float64), x64 * x64 + x64, rtol=2e-3,
                               atol=2e-3)
    np.testing.assert_allclose(b.to_host().astype(np.float64), y_bf * y_bf - y_bf, rtol=2e-2,
                               atol=2e-2)
    got = out.to_host()
    np.testing.assert_array_equal(got[:, 0], x64 * 2)
    np.testing.assert_array_equal(got[:, 1], y_bf * 2)
    np.testing.assert_array_equal(got[:, 2], np.maximum(x64, 0.5))


def test_math_library(backend, kl, rng):
    n = 256
    x = rng.uniform(-3, 3, n).astype(np.float32)
    out = filled((n, 16), gn.f32, np.nan)
    launch(kl.math_functions, gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x), out)
    v = x.astype(np.float64)
    a = np.abs(v) + 0.5
    expected = np.stack([np.sqrt(a), np.exp(v), np.log(a), np.sin(v), np.cos(v), np.tanh(v),
                         np.arctan2(v, a), a ** 1.5, np.floor(v),
                         np.vectorize(math.erf)(v), np.minimum(v, 0.25), np.maximum(v, -0.25),
                         np.round(v.astype(np.float32) * np.float32(4)), np.hypot(v, 2.0),
                         v ** 2, np.full(n, np.float32(math.pi))], axis=1)
    np.testing.assert_allclose(out.to_host(), expected, rtol=2e-6, atol=2e-6)


def test_ldexp(backend, kl, rng):
    n = 256
    x = rng.uniform(-4, 4, n).astype(np.float32)
    y = rng.uniform(-4, 4, n)
    k = rng.integers(-40, 41, n).astype(np.int32)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 3.0, 1.5, 1.25]
    x[:9] = y[:9] = special
    k[5:9] = [200, -200, 127, -126]  # f32: inf, 0 and the ends of the normal range
    out32, out64, out_half = (filled(n, dt, np.nan) for dt in (gn.f32, gn.f64, gn.f32))
    launch(kl.ldexp_both, gn.GridDim1D(2), gn.BlockDim1D(128))(
        gn.to_device(x), gn.to_device(y), gn.to_device(k), out32, out64, out_half)
    # The exact result in float64, rounded once to the kernel's type.
    x64, k64 = x.astype(np.float64), k.astype(np.int64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out32.to_host(), np.ldexp(x64, k64).astype(np.float32))
        np.testing.assert_array_equal(out64.to_host(), np.ldexp(y, k64 * 20))
    half = x.astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(out_half.to_host(), (half / 8).astype(np.float32))


def test_integer_semantics_follow_python(backend, kl, rng):
    n = 512
    a = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    a[:8] = [0, 1, -1, 7, -7, 2**31 - 1, -(2**31), 100]
    b = rng.integers(-60, 60, n).astype(np.int32)
    b[b == 0] = 3
    b[:8] = [1, -1, 2, -2, 3, -3, -1, 7]
    f = (rng.standard_normal(n) * 3e9).astype(np.float32)
    f[:4] = [np.nan, np.inf, -np.inf, -0.5]
    out = filled((n, 8), gn.i64, -12345)
    launch(kl.int_semantics, gn.GridDim1D(4), gn.BlockDim1D(128))(
        gn.to_device(a), gn.to_device(b), gn.to_device(f), out)
    got = out.to_host()

    def wrap32(v):
        return ((int(v) + 2**31) % 2**32) - 2**31

    for i in range(n):
        x, y = int(a[i]), int(b[i])
        s = y % 40
        fv = float(f[i])
        sat = 0 if math.isnan(fv) else max(-(2**31), min(2**31 - 1, int(fv) if math.isfinite(fv)
                                                         else (2**31 - 1 if fv > 0 else -(2**31))))
        expected = [wrap32(x // y), wrap32(x % y), wrap32(x * 65537),
                    wrap32(x << s) if s < 32 else 0, (x >> s) if s < 32 else (-1 if x < 0 else 0),
                    sat, wrap32(-x), x % 2**32]
        assert list(got[i]) == expected, (i, x, y, fv)


def test_control_flow(backend, kl, rng):
    x = rng.integers(0, 20, 300, dtype=np.int32)
    out = filled(300, gn.i32, -1)
    launch(kl.control_flow, gn.GridDim1D(3), gn.BlockDim1D(128))(gn.to_device(x), out)

    def reference(v):
        total, k = 0, 0
        while True:
            k += 1
            if k % 3 == 0:
                continue
            if k > v:
                break
            total += k
        for j in range(10, 0, -3):
            total += j if v % 2 == 0 else -j
        return total

    np.testing.assert_array_equal(out.to_host(), [reference(int(v)) for v in x])


def test_device_print(backend, kl, capfd):
    x = gn.to_device(np.array([7, 10, 3], np.int32))
    launch(kl.printer, gn.GridDim1D(1), gn.BlockDim1D(32))(x)
    gn.synchronize()
    out = capfd.readouterr().out
    assert "thread 0 value 7 half 3.5 odd True" in out
    assert "thread 1 value 10 half 5 odd False" in out


def test_unsafe_block(backend, kl, rng):
    x = rng.standard_normal(256, dtype=np.float32)
    out = filled(128, gn.f32, np.nan)
    launch(kl.pairwise_unsafe, gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x), out)
    np.testing.assert_allclose(out.to_host(), x[0::2] + x[1::2].astype(np.float64), rtol=1e-6)


def test_grid_tail_is_masked_and_a_short_array_is_an_error(backend, kl, rng):
    from tests.helpers import kernels_runtime as kr

    n = 1000
    a = rng.standard_normal(n, dtype=np.float32)
    c = filled(n, gn.f32, np.nan)
    kr.add(gn.to_device(a), gn.to_device(a), c)  # 1024 threads for 1000 elements
    np.testing.assert_allclose(c.to_host(), 2.0 * a.astype(np.float64), atol=1e-6)
    short = filled(600, gn.f32, np.nan)
    kr.add_kernel.launch(gn.GridDim1D(8), gn.BlockDim1D(128))(gn.to_device(a), gn.to_device(a),
                                                              short)
    with pytest.raises(gn.KernelIndexError, match="out of bounds for array 'c' of length 600"):
        short.to_host()


def test_assert_message_and_location(backend):
    from tests.helpers import kernels_runtime as kr

    x = np.ones(64, np.float32)
    x[10] = -3.0
    out = gn.empty(64)
    kr.checked_sqrt.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(gn.to_device(x), out)
    with pytest.raises(gn.KernelAssertionError) as info:
        gn.synchronize()
    assert "assertion failed: sqrt of a negative number" in str(info.value)
    assert info.value.thread == (10, 0, 0)
    assert 'assert x[i] >= 0.0, "sqrt of a negative number"' in str(info.value)
