"""The small vector types (vec2f ... vec4i): kernels on the simulator and (GPU-marked) on the GPU
against NumPy float64 references; the simulator bit for bit against NumPy float32 in the
prelude's order of operations; device arrays of vectors to and from NumPy; argument checks;
bounds and unique-write proofs over arrays of vectors; and the type errors."""

from __future__ import annotations

import re
import textwrap
import warnings
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelIndexError, TranspileError
from gpu_native.lang.types import VECTORS
from gpu_native.rewrite import rewrite_module, transpile_module
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def kv():
    from tests.helpers import kernels_vectors

    return kernels_vectors


def run(kernel, n, *args, block=64):
    kernel.launch(gn.GridDim1D((n + block - 1) // block), gn.BlockDim1D(block), 0,
                  gn.DEFAULT_STREAM)(*args)


def normalized(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# ---- kernels against NumPy --------------------------------------------------------------------


def test_vec3f_operations_match_numpy(backend, kv, rng):
    n = 300
    a = rng.standard_normal((n, 3)).astype(np.float32)
    b = rng.standard_normal((n, 3)).astype(np.float32)
    p = (0.5, -1.25, 2.0)
    s = 1.5
    vout = gn.empty((n, 8), gn.vec3f)
    sout = gn.empty((n, 8), gn.f32)
    run(kv.ops_vec3f, n, gn.to_device(a, dtype=gn.vec3f), gn.to_device(b, dtype=gn.vec3f),
        gn.vec3f(*p), s, vout, sout)
    u, v, pp = a.astype(np.float64), b.astype(np.float64), np.array(p)
    w = np.stack([np.full(n, s), u[:, 2], np.full(n, s + 1.0)], axis=1)
    want_v = np.stack([u + v, (u - v) * 2 - pp, s * u / 3 - v, np.cross(u, v), normalized(u),
                       (u + pp) * s, w, np.minimum(u, v) + np.maximum(u, v) * [1, 2, 3]], axis=1)
    dot = (u * v).sum(axis=1)
    want_s = np.stack([dot, np.linalg.norm(u, axis=1), (v * v).sum(axis=1),
                       u[:, 0] + u[:, 1] * u[:, 2], v[:, 0], dot, u[:, 1] * v[:, 1],
                       np.full(n, p[2])], axis=1)
    got_v, got_s = vout.to_host(), sout.to_host()
    assert got_v.shape == (n, 8, 3) and got_v.dtype == np.float32
    # f32 roundings (and on the GPU, contractions into FMAs): a few units in the last place.
    np.testing.assert_allclose(got_v, want_v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_s, want_s, rtol=1e-5, atol=1e-5)


def test_vec3d_operations_match_numpy(backend, kv, rng):
    n = 200
    a = rng.standard_normal((n, 3))
    b = rng.standard_normal((n, 3))
    vout = gn.empty((n, 4), gn.vec3d)
    sout = gn.empty((n, 4), gn.f64)
    run(kv.ops_vec3d, n, gn.to_device(a, dtype=gn.vec3d), gn.to_device(b, dtype=gn.vec3d),
        0.75, vout, sout)
    want_v = np.stack([a * 0.75 - b / 2, np.cross(a, b), normalized(a),
                       -a + np.stack([a[:, 0], np.full(n, 0.5), np.full(n, 2.0)], axis=1)],
                      axis=1)
    want_s = np.stack([(a * b).sum(axis=1), np.linalg.norm(b, axis=1), (a * a).sum(axis=1),
                       b[:, 2]], axis=1)
    np.testing.assert_allclose(vout.to_host(), want_v, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(sout.to_host(), want_s, rtol=1e-13, atol=1e-14)


def test_16_and_8_byte_vectors_match_numpy(backend, kv, rng):
    n = 150
    a = rng.standard_normal((n, 4)).astype(np.float32)
    b = rng.standard_normal((n, 2))
    c = rng.uniform(0.5, 2, (n, 2)).astype(np.float32)
    aout, bout, cout = gn.empty(n, gn.vec4f), gn.empty(n, gn.vec2d), gn.empty(n, gn.vec2f)
    sout = gn.empty(n, gn.f32)
    run(kv.ops_wide, n, gn.to_device(a, dtype=gn.vec4f), gn.to_device(b, dtype=gn.vec2d),
        gn.to_device(c, dtype=gn.vec2f), aout, bout, cout, sout)
    u = a.astype(np.float64)
    np.testing.assert_allclose(aout.to_host(), normalized(u) * 2 + u[:, ::-1], rtol=1e-5,
                               atol=1e-5)
    # b * b - k rounds twice on the simulator and may be one fused multiply-add on the GPU
    # (--fmad): the two differ by up to an ulp of b * b, which is large where the result cancels.
    np.testing.assert_allclose(bout.to_host(), b * b - [1.0, 2.0], rtol=1e-14,
                               atol=2.0 ** -52 * float((b * b).max()))
    np.testing.assert_allclose(cout.to_host(), normalized(c.astype(np.float64)), rtol=3e-7)
    np.testing.assert_allclose(sout.to_host(), (u * u).sum(axis=1) + u[:, 3], rtol=1e-5,
                               atol=1e-5)


def test_integer_vectors_wrap_like_i32(backend, kv, rng):
    n = 100
    a = rng.integers(-2**31, 2**31, (n, 3), dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, (n, 3), dtype=np.int64).astype(np.int32)
    a[0] = (2**31 - 1, -2**31, 5)  # overflowing sums and a negation of INT_MIN
    vout = gn.empty((n, 4), gn.vec3i)
    sout = gn.empty((n, 4), gn.i32)
    run(kv.ops_vec3i, n, gn.to_device(a, dtype=gn.vec3i), gn.to_device(b, dtype=gn.vec3i),
        vout, sout)

    def wrap(x):
        return ((np.asarray(x, dtype=object) + 2**31) % 2**32 - 2**31).astype(np.int64)

    u, v = a.astype(object), b.astype(object)
    cross = np.stack([u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1], u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2],
                      u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]], axis=1)
    want_v = np.stack([wrap(u + v * 3), wrap(cross),
                       wrap(np.minimum(a, b).astype(object) - np.maximum(a, b).astype(object)),
                       wrap(-u)], axis=1)
    want_s = np.stack([wrap((u * v).sum(axis=1)), wrap((u * u).sum(axis=1)), a[:, 1],
                       np.full(n, 7)], axis=1)
    np.testing.assert_array_equal(vout.to_host(), want_v)
    np.testing.assert_array_equal(sout.to_host(), want_s)


def test_conversions_and_broadcast(backend, kv):
    a = np.array([[1.7, -2.5, 3e10], [np.nan, -0.0, 9.99]], np.float32)
    iout, dout, fout = gn.empty(2, gn.vec3i), gn.empty(2, gn.vec3d), gn.empty(2, gn.vec4i)
    run(kv.convert, 2, gn.to_device(a, dtype=gn.vec3f), iout, dout, fout)
    # Float to int truncates, saturates and takes NaN to 0, as i32(x) does.
    np.testing.assert_array_equal(iout.to_host(), [[1, -2, 2**31 - 1], [0, 0, 9]])
    np.testing.assert_array_equal(dout.to_host(), a.astype(np.float64) * 0.1)
    np.testing.assert_array_equal(fout.to_host(), [[0] * 4, [1] * 4])


def test_shared_and_local_arrays_of_vectors(backend, kv, rng):
    n = 150  # the last block is partial: its tile is padded with zeros
    a = rng.standard_normal((n, 3)).astype(np.float32)
    out = gn.empty(n, gn.vec3f)
    run(kv.reverse_tiles, n, gn.to_device(a, dtype=gn.vec3f), out, block=kv.TILE)
    padded = np.zeros((3 * kv.TILE, 3), np.float32)
    padded[:n] = a
    want = padded.reshape(3, kv.TILE, 3)[:, ::-1].reshape(-1, 3)[:n]
    np.testing.assert_array_equal(out.to_host(), want)


def test_a_vector_parameter_of_a_uid_only_kernel(backend, kv, rng):
    n = 1000
    a = rng.standard_normal((n, 3)).astype(np.float32)
    out = gn.empty(n, gn.vec3f)
    run(kv.shift, n, gn.to_device(a, dtype=gn.vec3f), gn.vec3f(1, -2, 0.5), out, block=128)
    np.testing.assert_array_equal(out.to_host(), a + np.float32([1, -2, 0.5]))


def test_a_bad_index_into_an_array_of_vectors_is_reported(backend, kv):
    a = gn.to_device(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=gn.vec3f)
    out = gn.empty(3, gn.vec3f)
    run(kv.gather, 3, a, gn.to_device(np.array([3, 0, 1], np.int32)), out)
    np.testing.assert_array_equal(out.to_host(), [[9, 10, 11], [0, 1, 2], [3, 4, 5]])
    with pytest.raises(KernelIndexError,
                       match=r"index 4 is out of bounds for array 'a' of length 4(.|\n)*"
                             r"thread \(1, 0, 0\)"):
        run(kv.gather, 3, a, gn.to_device(np.array([0, 4, 1], np.int32)), out)
        out.to_host()


# ---- the simulator computes what the prelude computes, operation by operation ------------------


def test_simulator_follows_the_prelude_order_bit_for_bit(sim, kv, rng):
    """dot sums x first, cross and normalize as the prelude spells them, length through sqrtf:
    the simulator's float32 results are NumPy float32 in that order, exactly (the GPU agrees
    but where the device compiler contracts a product and a sum into an FMA)."""
    n = 500
    a = rng.standard_normal((n, 3)).astype(np.float32) * np.float32(1e3)
    b = rng.standard_normal((n, 3)).astype(np.float32)
    vout, sout = gn.empty((n, 8), gn.vec3f), gn.empty((n, 8), gn.f32)
    run(kv.ops_vec3f, n, gn.to_device(a, dtype=gn.vec3f), gn.to_device(b, dtype=gn.vec3f),
        gn.vec3f(0, 0, 0), 1.0, vout, sout)
    x, y = a.T, b.T
    dot = (x[0] * y[0] + x[1] * y[1]) + x[2] * y[2]
    length = np.sqrt((x[0] * x[0] + x[1] * x[1]) + x[2] * x[2])
    cross = np.stack([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                      x[0] * y[1] - x[1] * y[0]], axis=1)
    assert dot.dtype == length.dtype == cross.dtype == np.float32
    got_v, got_s = vout.to_host(), sout.to_host()
    np.testing.assert_array_equal(got_s[:, 0], dot)
    np.testing.assert_array_equal(got_s[:, 1], length)
    np.testing.assert_array_equal(got_v[:, 3], cross)
    np.testing.assert_array_equal(got_v[:, 4], a / length[:, None])


def test_normalize_of_a_zero_or_nan_vector_is_zero(sim, kernel_module):
    src = """
from gpu_native import CUDASlice, CUDASliceMut, FlatLayout1D, Kernel1D, gpu_kernel, normalize, vec2f

@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2f], out: CUDASliceMut[vec2f]):
    i = FlatLayout1D.uid()
    if i < len(a):
        out[i] = normalize(a[i])
"""
    k = kernel_module(src).k
    a = gn.to_device(np.array([[0, 0], [-0.0, 0], [np.nan, 1], [3, 4]], np.float32),
                     dtype=gn.vec2f)
    out = gn.empty(4, gn.vec2f)
    run(k, 4, a, out)
    np.testing.assert_array_equal(out.to_host(), np.float32([[0, 0], [0, 0], [0, 0], [0.6, 0.8]]))


# ---- device arrays of vectors and vector arguments ---------------------------------------------


class TestArrays:
    def test_round_trip_through_an_n_by_3_array(self):
        host = np.arange(30, dtype=np.float32).reshape(10, 3)
        arr = gn.to_device(host, dtype=gn.vec3f)
        assert arr.shape == (10,) and len(arr) == 10 and arr.dtype == gn.vec3f.dtype
        assert arr.nbytes == 120 and arr.scalar_type is gn.vec3f
        back = arr.to_host()
        assert back.shape == (10, 3) and back.dtype == np.float32
        np.testing.assert_array_equal(back, host)
        np.testing.assert_array_equal(arr[4], [12, 13, 14])
        np.testing.assert_array_equal(arr[2:4].to_host(), host[2:4])
        np.testing.assert_array_equal(np.from_dlpack(arr) if gn.backend() == "sim" else
                                      arr.to_host(), host)  # DLPack: the (10, 3) components

    @pytest.mark.parametrize("name", sorted(VECTORS))
    def test_every_vector_type_has_numpys_packed_layout(self, name):
        info = VECTORS[name]
        assert info.itemsize == info.n * info.elem.itemsize
        assert info.itemsize % info.align == 0
        cls = getattr(gn, name)
        # bf16 (vec2bf) host arrays are values (a uint16 array would be taken as raw bits).
        dtype = np.float32 if info.elem.name == "bf16" else info.elem.dtype
        host = np.arange(5 * info.n).reshape(5, info.n).astype(dtype)
        arr = gn.zeros((5,), cls)
        assert arr.to_host().shape == (5, info.n) and not arr.to_host().any()
        arr.copy_from_host(host)
        np.testing.assert_array_equal(np.asarray(arr.to_host(), dtype), host)
        arr.fill(3)
        assert (arr.to_host() == 3).all()

    def test_two_dimensional_arrays_of_vectors(self):
        arr = gn.empty((4, 5), gn.vec2d)
        assert arr.shape == (4, 5) and arr.to_host().shape == (4, 5, 2)
        arr.fill([1.0, 2.0])
        np.testing.assert_array_equal(arr.to_host()[3, 4], [1.0, 2.0])

    def test_a_wrong_last_axis_is_refused(self):
        with pytest.raises(ValueError, match=r"last axis holds the 3 components.*\(10, 4\)"):
            gn.to_device(np.zeros((10, 4), np.float32), dtype=gn.vec3f)
        arr = gn.empty(10, gn.vec3f)
        with pytest.raises(ValueError, match=r"array is \(10, 3\).*data is \(10,\)"):
            arr.copy_from_host(np.zeros(10, np.float32))

    def test_a_device_array_of_scalars_is_seen_as_vectors_without_a_copy(self):
        flat = gn.to_device(np.arange(12, dtype=np.float32).reshape(4, 3))
        vec = gn.to_device(flat, dtype=gn.vec3f)
        assert vec.shape == (4,) and vec.ptr == flat.ptr
        with pytest.raises(ValueError, match="last axis must hold the 4 components"):
            gn.to_device(flat, dtype=gn.vec4f)
        with pytest.raises(TypeError, match="array is f32, not vec3d"):
            gn.to_device(flat, dtype=gn.vec3d)

    def test_host_vectors(self):
        v = gn.vec3f(1, 2.5, 1 / 3)
        assert (v.x, v.y) == (1.0, 2.5) and v.z == float(np.float32(1 / 3)) and len(v) == 3
        assert repr(gn.vec2i(3)) == "vec2i(3, 3)" and list(gn.vec4d()) == [0.0] * 4
        assert gn.vec3i(2**32 + 5, -1, 0)[0] == 5  # wraps, as i32(x) does
        np.testing.assert_array_equal(np.asarray(gn.vec2f(1, 2)), np.float32([1, 2]))
        assert gn.vec3f([1, 2, 3]) == gn.vec3f(1, 2, 3) != gn.vec3d(1, 2, 3)
        with pytest.raises(TypeError, match=r"vec3f\(\) takes 0, 1 or 3 arguments \(2 given\)"):
            gn.vec3f(1, 2)
        with pytest.raises(TypeError):
            gn.vec3f(1, 2, 3) + gn.vec3f(1, 2, 3)
        with pytest.raises(AttributeError):
            gn.vec3f().w

    def test_host_conversions_agree_with_the_kernel_s(self, sim, kv):
        # test_conversions_and_broadcast's first row, converted on the host and in a kernel.
        row = np.array([1.7, -2.5, 3e10], np.float32)
        iout, dout, fout = gn.empty(1, gn.vec3i), gn.empty(1, gn.vec3d), gn.empty(1, gn.vec4i)
        run(kv.convert, 1, gn.to_device(row[None], dtype=gn.vec3f), iout, dout, fout)
        on_host = gn.vec3i(gn.vec3f(*row))
        assert on_host == gn.vec3i(1, -2, 2**31 - 1)
        np.testing.assert_array_equal(iout.to_host()[0], list(on_host))
        assert gn.vec3i(gn.vec3d(np.nan, -np.inf, -0.9)) == gn.vec3i(0, -2**31, 0)
        assert gn.vec2i(gn.vec2f(1e40, -1e40)) == gn.vec2i(2**31 - 1, -2**31)
        # A float component of an int vector is refused, as `x: i32 = 0.5` is in a kernel.
        for bad in [(0.5, 1, 2), (1, np.float32(2.0), 3), ([1, 2, 2.5],), (1.0,)]:
            with pytest.raises(TypeError, match=r"vec3i's [xyz] must be an int, not float"):
                gn.vec3i(*bad)
        for bad in [Fraction(1, 2), Decimal("2.5"), 1j]:  # any number but an integer
            with pytest.raises(TypeError, match=r"vec3i's x must be an int, not "):
                gn.vec3i(bad, 1, 2)
        assert gn.vec3i(True, np.int64(2), 3) == gn.vec3i(1, 2, 3)
        with pytest.raises(TypeError, match=r"f32\(\) takes a number, not None"):
            gn.vec3f(None, 0.0, 0.0)  # NumPy would make it NaN

    def test_host_scalars_convert_as_the_device_does(self):
        # Float to int truncates toward zero, saturates and takes NaN to 0; ints wrap.
        cases = [(gn.i32, 0.5, 0), (gn.i32, -0.9, 0), (gn.i32, 1e10, 2**31 - 1),
                 (gn.i32, -1e10, -2**31), (gn.i32, np.nan, 0), (gn.u8, -3.5, 0),
                 (gn.u8, np.float32(300.0), 255), (gn.i64, np.inf, 2**63 - 1),
                 (gn.u64, 1e19, 10**19), (gn.i32, 2**32 + 5, 5), (gn.u8, -1, 255),
                 (gn.bool_, 0.5, 1), (gn.bool_, 0, 0)]
        for ty, value, want in cases:
            assert ty(value) == want, (ty, value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NumPy overflow warning from gpu_native's code
            assert gn.f32(1e40) == np.inf and gn.vec3f(-1e40).x == -np.inf
            assert gn.complex64(1e40 + 1j) == complex(np.inf, 1.0)
            # An int past the largest float (which float() refuses) is an infinity too.
            for ty in (gn.f16, gn.f32, gn.f64, gn.bf16):
                assert ty(10**400) == np.inf and ty(-2**1100) == -np.inf, ty
            assert gn.vec3f(2**1100, 0, 0).x == np.inf
            assert gn.complex128(10**400, -10**400) == complex(np.inf, -np.inf)
            assert gn.f32(2**64) == 2.0**64
        for ty in (gn.f16, gn.f32, gn.f64, gn.bf16):
            with pytest.raises(TypeError, match=r"takes a number, not None"):
                ty(None)


class TestArguments:
    def test_a_vector_of_the_parameter_s_type_takes_the_fast_path(self, sim, kv, launch_paths):
        a = gn.to_device(np.ones((4, 3), np.float32), dtype=gn.vec3f)
        out = gn.empty(4, gn.vec3f)
        launch = kv.shift.launch(gn.GridDim1D(1), gn.BlockDim1D(4), 0, gn.DEFAULT_STREAM)
        launch(a, gn.vec3f(1, 2, 3), out)
        assert launch_paths["fast"] == [True] and launch_paths["slow"] == 0
        np.testing.assert_array_equal(out.to_host()[0], [2, 3, 4])
        launch(a, (3, 2, 1), out)  # any other sequence: checked and converted
        assert launch_paths["slow"] == 1
        np.testing.assert_array_equal(out.to_host()[0], [4, 3, 2])

    def test_a_vector_parameter_takes_a_vector_or_any_sequence(self, sim, kv):
        a = gn.to_device(np.ones((2, 3), np.float32), dtype=gn.vec3f)
        sout = gn.empty((2, 8), gn.f32)
        vout = gn.empty((2, 8), gn.vec3f)
        for p in (gn.vec3f(1, 2, 3), (1, 2, 3), [1.0, 2.0, 3.0], np.float32([1, 2, 3])):
            sout.fill(0)
            run(kv.ops_vec3f, 2, a, a, p, 1.0, vout, sout)
            assert sout.to_host()[0, 7] == 3.0

    @pytest.mark.parametrize("value, error, message", [
        (gn.vec3d(1, 2, 3), TypeError, "argument 'p' of ops_vec3f must be a vec3f, not a vec3d"),
        ((1, 2), ValueError, "argument 'p' of ops_vec3f must be a vec3f: 3 numbers, not 2"),
        (1.5, TypeError, r"must be a vec3f \(a gn.vec3f, or a sequence of 3 numbers\), not float"),
        ((1, "x", 3), TypeError, "component y, must be a number"),
        ((1, 2, 1e39), ValueError, "component z, is 1e\\+39, out of range for f32"),
    ])
    def test_bad_vector_arguments_are_refused(self, sim, kv, value, error, message):
        a = gn.to_device(np.ones((2, 3), np.float32), dtype=gn.vec3f)
        with pytest.raises(error, match=message):
            run(kv.ops_vec3f, 2, a, a, value, 1.0, gn.empty((2, 8), gn.vec3f),
                gn.empty((2, 8), gn.f32))

    def test_an_array_of_scalars_is_no_array_of_vectors(self, sim, kv):
        flat = gn.to_device(np.ones((2, 3), np.float32))
        with pytest.raises(TypeError, match=r"must be an array of vec3f.*elements are f32; its "
                                            r"last axis holds 3 components: pass gn.to_device\(a, "
                                            r"dtype=gn.vec3f\) \(no copy\)"):
            run(kv.sqrt_length, 2, flat, gn.empty(2, gn.f32))


# ---- the proofs and the generated code ---------------------------------------------------------


def _cuda(kernels, name: str) -> str:
    (k,) = [k for k in kernels if k.name == name]
    return k.variants[0].cuda


def test_bounds_proofs_and_layout_in_the_generated_cuda(kv):
    path = kv.__file__
    mod = transpile_module(Path(path).read_text(), path, "kernels_vectors")
    code = _cuda(mod.kernels, "ops_vec3f")
    # `if i < len(a)` proves a[i]; b[i] is checked, as it would be for scalars.
    assert re.search(r"\bu = a\[i\];", code) and "gn_chk(__gn_err, i, __gn_b_n0" in code
    # A vector parameter arrives as its components.
    assert "float __gn_p_v0,\n    float __gn_p_v1,\n    float __gn_p_v2," in code
    assert "gn_vec3f p = gn_vec3f{__gn_p_v0, __gn_p_v1, __gn_p_v2};" in code
    # A literal power-of-two scale goes through gn_fscale, as for scalars.
    assert "gn_fscale((u - v), 2.0f)" in code
    # A kernel over its uids alone gathers its vector parameter in that entry point too.
    shift = _cuda(mod.kernels, "shift")
    assert "gn_shift_uids(" in shift
    assert shift.count("gn_vec3f d = gn_vec3f{__gn_d_v0, __gn_d_v1, __gn_d_v2};") == 2
    gather = _cuda(mod.kernels, "gather")
    assert "a[gn_chk(__gn_err, (gn_i64)" in gather


def test_a_non_unique_store_of_a_vector_is_refused_like_a_scalar_one():
    src = HEADER + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i // 2] = vec3f(1.0)  # <-
"""
    _expect_error(src, r"store into 'out' through an index that is not provably unique: two "
                       r"threads of the grid could write the same element")


# ---- the docs ------------------------------------------------------------------------------------


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib

    text = (ROOT / "docs" / "language.md").read_text()
    # The section's first example (its atomics' is tests/language/test_vector_atomics.py's).
    part = text[text.index("\n## Vectors\n"):text.index("\n### Atomics on arrays of vectors\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"vector_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Its asserts are exact on the GPU too: every product an FMA could fuse there is by 0 or 1,
    # and division and sqrtf are correctly rounded on both backends.
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_abi_vector_slots_follow_the_vector_types():
    from gpu_native import abi

    assert {name: (v.elem.name, v.n) for name, v in VECTORS.items()} == abi.VECTOR_SLOTS


# ---- type errors ---------------------------------------------------------------------------------

HEADER = """\
import math
from gpu_native import *
"""

ERRORS = {
    "mixed element types": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3f], b: CUDASlice[vec3i], out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i] = a[i] + b[i]  # <-
""", r"operator \+ needs two vectors of one type, not vec3f and vec3i"),
    "w of a vec3": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i].w  # <-
""", r"a vec3f has no component \.w; it has \.x, \.y, \.z"),
    "constructor arity": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i] = vec3f(1.0, 2.0)  # <-
""", r"vec3f\(\) takes 0, 1 or 3 arguments \(2 given\)"),
    "f64 scalar with vec3f": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3f], s: f64, out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i] = a[i] * s  # <-
""", r"the right operand of \* with a vec3f is f64, which does not promote to f32"),
    "integer vector division": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3i], out: CUDASliceMut[vec3i]):
    i = FlatLayout1D.uid()
    out[i] = a[i] / 2  # <-
""", r"`/` between integer vectors \(vec3i\) is not supported"),
    "length of an integer vector": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3i], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = length(a[i])  # <-
""", r"length\(\) takes a float vector, not vec3i"),
    "cross of 2-vectors": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2f], out: CUDASliceMut[vec2f]):
    i = FlatLayout1D.uid()
    out[i] = cross(a[i], a[i])  # <-
""", r"cross\(\) takes 3-vectors, not vec2f"),
    "vector comparison": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if a[i] == a[i]:  # <-
        out[i] = 1.0
""", r"vectors cannot be compared"),
    "assigning another vector type": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec3d], out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i] = a[i]  # <-
""", r"a vec3d is not a vec3f"),
    "scalar into a vector array": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i] = 1.0  # <-
""", r"must be a vec3f, not f64"),
    "component of an array element": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[vec3f]):
    i = FlatLayout1D.uid()
    out[i].x = 1.0  # <-
""", r"a component of an array element cannot be assigned"),
    "dot of a scalar": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = dot(a[i], a[i])  # <-
""", r"dot\(\)'s a must be a vector, not f32"),
    "vector index out of range": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i][2]  # <-
""", r"index 2 is out of range for a vec2f \(0\.\.1\)"),
    "vector condition": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if a[i]:  # <-
        out[i] = 1.0
""", r"must be a bool or a number, not vec2f"),
    "a vector indexed by a loop counter": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec4f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    acc = f32(0.0)
    for c in range(4):
        acc += a[i][c]  # <-
    out[i] = acc
""", r"the index of a vec4f must be a constant integer \(its components are registers, not "
     r"memory\)[\s\S]*hint: loop over the components' indices as a tuple, which is unrolled "
     r"\(`for c in \(0, 1, 2, 3\):`\), or name them \(\.x, \.y, \.z, \.w\)"),
    "a component assigned out of range": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[vec2f]):
    i = FlatLayout1D.uid()
    v = vec2f(0.0)
    v[2] = 1.0  # <-
    out[i] = v
""", r"index 2 is out of range for a vec2f \(0\.\.1\)"),
    "a whole-vector atomic": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[vec2f]):
    out.atomic_ref(0).exchange(vec2f(1.0))  # <-
""", r"atomic exchange is not available for vec2f arrays"),
}


def _expect_error(source: str, pattern: str, path: str = "/tmp/vector_errors.py") -> None:
    source = textwrap.dedent(source)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, path, "vector_errors")
    err = info.value
    assert err.span.line == line, str(err)
    assert f"{path}:{line}:" in str(err)
    assert re.search(pattern, str(err)), str(err)


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_type_errors(case):
    body, pattern = ERRORS[case]
    _expect_error(HEADER + body, pattern)


def test_components_assigned_by_a_constant_index(backend, kernel_module):
    # `v[0] = x` is `v.x = x` (Warp writes it so); a tuple loop gives constant indices.
    module = kernel_module(HEADER + textwrap.dedent("""
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[vec4f]):
            i = FlatLayout1D.uid()
            if i < len(out):
                v = vec4f(1.0, 2.0, 3.0, 4.0)
                v[0] = 10.0
                v[3] += f32(i)
                for c in (1, 2):
                    v[c] = v[c] * 2.0
                out[i] = v
        """))
    out = gn.empty(3, gn.vec4f)
    out.fill(np.nan)
    module.k.launch(gn.GridDim1D(1), gn.BlockDim1D(32))(out)
    np.testing.assert_array_equal(out.to_host(), [[10, 4, 6, 4 + i] for i in range(3)])




# ---- with the other value kinds --------------------------------------------------------------


def test_vectors_with_tuples_and_an_indexed_launch(sim, tmp_path, monkeypatch):
    """A device function takes a vector and returns a tuple; a tuple display holds a vector
    while it is unpacked; the kernel is launched as ``kernel[grid, block]`` with a vector
    parameter (packed by the fast path) and a tuple of its components (the checked path)."""
    import importlib

    (tmp_path / "vector_tuple_mix.py").write_text(HEADER + textwrap.dedent('''
        @gpu_device
        def split(v: vec3f) -> tuple[f32, f32]:
            return v.x, v.y + v.z


        @gpu_kernel(Kernel1D)
        def mix(a: CUDASlice[vec3f], d: vec3f, out: CUDASliceMut[vec3f]):
            i = FlatLayout1D.uid()
            if i < len(a):
                x, yz = split(a[i])
                u, t = a[i] + d, x
                out[i] = vec3f(x, yz, t) + u
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("vector_tuple_mix")
    a = np.arange(30, dtype=np.float32).reshape(10, 3)
    d = np.array([0.5, -1.0, 2.0], np.float32)
    want = np.stack([a[:, 0], a[:, 1] + a[:, 2], a[:, 0]], axis=1) + a + d
    for vec in (gn.vec3f(*d.tolist()), tuple(d.tolist())):
        out = gn.empty(10, gn.vec3f)
        mod.mix[1, 32](gn.to_device(a, dtype=gn.vec3f), vec, out)
        np.testing.assert_array_equal(out.to_host(), want)


@pytest.mark.parametrize("source, pattern", [
    ("""
@gpu_device
def f(v: vec3f) -> tuple[vec3f, f32]:  # <-
    return v, v.x
""", r"a tuple in a kernel holds scalars"),
    ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    t = (vec3f(1.0), 2.0)  # <-
    a[FlatLayout1D.uid()] = 1.0
""", r"a tuple in a kernel holds numbers and bools, not vec3f"),
], ids=["tuple annotation", "tuple value"])
def test_a_tuple_of_vectors_is_refused(source, pattern):
    _expect_error(HEADER + source, pattern)
