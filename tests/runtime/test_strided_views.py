"""Strided (non-contiguous) views: DeviceArray slicing and transposes, and ``Strided`` array
parameters that take them without a copy."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn

SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, FlatLayout1D, FlatLayout2D, f32, f64, vec3f, Strided,
                        gpu_device)

@gpu_kernel(Kernel2D)
def axpy2d(a: CUDASlice2D[f32, Strided], b: CUDASlice2D[f64, Strided],
           out: CUDASliceMut2D[f64, Strided], s: f64):
    x, y = FlatLayout2D.uid()
    out[y, x] = s * f64(a[y, x]) + b[y, x]

@gpu_kernel(Kernel2D)
def copy2d(a: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    out[y, x] = a[y, x]

@gpu_device
def row_sum(a: CUDASlice2D[f32, Strided], i: int) -> f32:
    acc = f32(0.0)
    for j in range(a.shape[1]):
        acc += a[i, j]
    return acc

@gpu_kernel(Kernel1D)
def row_sums(a: CUDASlice2D[f32, Strided], out: CUDASliceMut[f32, Strided]):
    i = FlatLayout1D.uid()
    if i < a.shape[0]:
        out[i] = row_sum(a, i)

@gpu_kernel(Kernel1D)
def scale_vectors(v: CUDASliceMut[vec3f, Strided], s: f32):
    i = FlatLayout1D.uid()
    v[i] = v[i] * s
"""


@pytest.fixture
def kernels(kernel_module):
    return kernel_module(SOURCE)


def _close(got, want, scale):
    """Equal within two f64 roundings of ``scale`` (the GPU may fuse s * a + b into one fma),
    NaN where ``want`` is NaN."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert (np.abs(got[~nan] - want[~nan]) <= 2 * 2.0**-52 * scale[~nan]).all()


def _launch2d(k, shape, *args):
    rows, cols = shape
    k.launch(gn.GridDim2D((cols + 7) // 8, (rows + 7) // 8), gn.BlockDim2D(8, 8), 0,
             gn.DEFAULT_STREAM)(*args)


def test_a_transpose_and_step_slices_bind_to_strided_parameters(kernels, backend):
    """out.T[1::2, ::-3][:9, 2:] = s * a.T[:, 1::2] + b[::-2, ::2]: views of bigger arrays,
    fresh random inputs, the output poisoned everywhere else and left alone there."""
    rng = np.random.default_rng()
    a = rng.standard_normal((14, 9)).astype(np.float32)
    b = rng.standard_normal((18, 14))
    out = np.full((25, 20), np.nan)
    s = float(rng.standard_normal())

    def out_view(x):
        return x.T[1::2, ::-3][:9, 2:]

    want = out.copy()
    out_view(want)[...] = s * a.T[:, 1::2].astype(np.float64) + b[::-2, ::2]
    scale = np.ones(out.shape)
    out_view(scale)[...] = np.abs(s * a.T[:, 1::2].astype(np.float64)) + np.abs(b[::-2, ::2])
    da, db, dout = gn.to_device(a), gn.to_device(b), gn.to_device(out)
    view = out_view(dout)
    assert not view.is_contiguous and view.shape == (9, 7)
    _launch2d(kernels.axpy2d, (9, 7), da.T[:, 1::2], db[::-2, ::2], view, s)
    got = dout.to_host()
    _close(got, want, scale)


def test_contiguous_arrays_bind_to_strided_parameters_too(kernels, backend):
    rng = np.random.default_rng()
    a = rng.standard_normal((5, 6)).astype(np.float32)
    b = rng.standard_normal((5, 6))
    out = gn.to_device(np.full((5, 6), np.nan))
    _launch2d(kernels.axpy2d, (5, 6), gn.to_device(a), gn.to_device(b), out, 2.0)
    _close(out.to_host(), 2.0 * a.astype(np.float64) + b, np.abs(2.0 * a) + np.abs(b))


def test_strided_views_pass_through_device_functions(kernels, backend):
    rng = np.random.default_rng()
    a = rng.standard_normal((12, 10)).astype(np.float32)
    out = gn.to_device(np.full(16, np.nan, np.float32))
    view = gn.to_device(a).T[::-1, 2:]                       # (10, 10)
    kernels.row_sums.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(
        view, out[::-1][:10])
    got = out.to_host()
    terms = a.T[::-1, 2:].astype(np.float64)
    # A float32 sum of 10 terms: within 10 roundings of the magnitudes summed.
    bound = 10 * 2.0**-24 * np.abs(terms).sum(axis=1)
    assert (np.abs(got[::-1][:10] - terms.sum(axis=1)) <= bound).all()
    assert np.isnan(got[:6]).all()


def test_vector_elements_of_a_strided_view(kernels, backend):
    rng = np.random.default_rng()
    v = rng.standard_normal((20, 3)).astype(np.float32)
    d = gn.to_device(v, gn.vec3f)
    kernels.scale_vectors.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(
        d[1::3], np.float32(-2.0).item())
    want = v.copy()
    want[1::3] *= np.float32(-2.0)
    np.testing.assert_array_equal(d.to_host(), want)


def test_bounds_are_checked_per_dimension_against_the_shape(kernel_module, backend):
    k = kernel_module("""
from gpu_native import gpu_kernel, Kernel1D, CUDASlice2D, CUDASliceMut, FlatLayout1D, f32, Strided

@gpu_kernel(Kernel1D)
def column(a: CUDASlice2D[f32, Strided], j: int, out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i, j]
""").column
    d = gn.to_device(np.zeros((8, 8), np.float32)).T[:, ::2]   # (8, 4): row 7 exists in memory
    out = gn.empty(8, gn.f32)
    with pytest.raises(gn.KernelIndexError, match="axis 1 of array 'a' with size 4"):
        k.launch(gn.GridDim1D(1), gn.BlockDim1D(8), 0, gn.DEFAULT_STREAM)(d, 4, out)
        out.to_host()


def test_a_non_contiguous_view_for_a_contiguous_parameter_is_a_type_error(kernels, backend):
    d = gn.to_device(np.zeros((4, 6), np.float32))
    out = gn.empty((6, 4), gn.f32)
    with pytest.raises(TypeError, match=r"argument 'a' of copy2d is a non-contiguous view.*"
                                        r"CUDASlice2D\[f32, Strided\]"):
        _launch2d(kernels.copy2d, (6, 4), d.T, out)
    with pytest.raises(TypeError, match=r"argument 'out' of copy2d .*CUDASliceMut2D\[f32, "
                                        r"Strided\]"):
        _launch2d(kernels.copy2d, (4, 3), d[:, :3].copy(), out.T[:, :3])


def test_a_self_overlapping_view_cannot_be_written(kernels, backend):
    """A broadcast view (stride 0) names one element by many indices: unique writes would
    race, so a writable Strided parameter refuses it (a read-only one takes it)."""
    d = gn.to_device(np.zeros(6, np.float64))
    row = gn.to_device(np.arange(6, dtype=np.float32))
    broadcast = row._view(0, (4, 6), strides=(0, 1))
    assert broadcast.launch_sig_strided_mut is None
    bad = d._view(0, (4, 6), strides=(0, 1))
    b = gn.to_device(np.zeros((4, 6)))
    with pytest.raises(ValueError, match="argument 'out' of axpy2d is a view whose elements "
                                         "overlap"):
        _launch2d(kernels.axpy2d, (4, 6), broadcast, b, bad, 1.0)
    out = gn.to_device(np.full((4, 6), np.nan))
    _launch2d(kernels.axpy2d, (4, 6), broadcast, b, out, 1.0)
    np.testing.assert_array_equal(out.to_host(), np.broadcast_to(np.arange(6.0), (4, 6)))


def test_strided_arguments_take_the_fast_path(kernels, backend, launch_paths):
    d = gn.to_device(np.ones((6, 6), np.float32))
    b = gn.to_device(np.ones((6, 6)))
    out = gn.to_device(np.zeros((6, 6)))
    launch = kernels.axpy2d.launch(gn.GridDim2D(1, 1), gn.BlockDim2D(8, 8), 0, gn.DEFAULT_STREAM)
    for _ in range(2):
        launch(d.T, b[::-1], out.T, 1.0)
    assert launch_paths["slow"] <= 1 and len(launch_paths["fast"]) >= 1
    np.testing.assert_array_equal(out.to_host(), np.full((6, 6), 2.0))


# ---- DeviceArray views ----------------------------------------------------------------------------

@pytest.mark.parametrize("index", [
    (slice(None), slice(None, None, 2)), (slice(None, None, -1),), (Ellipsis, 3),
    (slice(1, None, 3), slice(-2, 0, -2)), (2,), (slice(2, 2),), (slice(None), 1, slice(1, 3)),
    slice(1, 4), slice(-3, None), slice(4, 1), 3, -1,
])
def test_basic_indexing_matches_numpy(backend, index):
    x = np.random.default_rng().standard_normal((5, 7, 4)).astype(np.float32)
    d = gn.to_device(x)
    v = d[index]
    assert v.shape == x[index].shape
    np.testing.assert_array_equal(v.to_host(), x[index])


@pytest.mark.parametrize("index", [True, False, np.bool_(True), (0, True), (slice(None), False)])
def test_a_bool_index_is_refused_not_read_as_a_row(backend, index):
    # NumPy reads a[True] as a mask (a new axis); a device array read it as row 1.
    d = gn.to_device(np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match=r"indexed by integers, slices and '\.\.\.', not bool"):
        d[index]


@pytest.mark.parametrize("axes", [(), (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose_matches_numpy(backend, axes):
    x = np.random.default_rng().standard_normal((3, 4, 5))
    d = gn.to_device(x)
    np.testing.assert_array_equal(d.transpose(*axes).to_host(), x.transpose(*axes))
    np.testing.assert_array_equal(d.T[::2].to_host(), x.T[::2])
    assert d.T.T.is_contiguous


def test_views_that_need_contiguous_memory_say_so(backend):
    d = gn.to_device(np.zeros((4, 6), np.float32))
    with pytest.raises(ValueError, match="non-contiguous view"):
        d.T.reshape(24)
    # A write is never told to copy the view first: the copy would take the write and lose it.
    for write in (lambda v: v.fill(1.0), lambda v: v.copy_from_host(np.ones((6, 4))),
                  lambda v: gn.copy(v, gn.zeros((6, 4), gn.f32))):
        with pytest.raises(ValueError, match=r"non-contiguous view \(strides \(1, 6\)\): "
                                             r"write the array it was made from") as info:
            write(d.T)
        assert ".copy()" not in str(info.value)
    with pytest.raises(ValueError, match="cannot fill a non-contiguous view"):
        d[:, ::2].fill(1.0)
    np.testing.assert_array_equal(d.to_host(), 0.0)
    c = d.T.copy()
    assert c.is_contiguous and c.shape == (6, 4)
    with pytest.raises(ValueError, match="not a permutation"):
        d.transpose(0, 0)
    with pytest.raises(ValueError, match=r"axes \(-3, 0\) are not a permutation of the 2 axes"):
        d.transpose(-3, 0)  # as given (it said (-1, 0))
    with pytest.raises(IndexError, match="out of bounds for axis 1"):
        d[0, 6]


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "language.md").read_text()
    part = text[text.index("\n### Strided views"):text.index("\n### Reinterpreting memory")]
    snippet = re.findall(r"```python\n(.*?)```", part, re.S)[0]
    name = f"strided_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)  # its asserts check the results against NumPy
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_copies_between_arrays_gather_a_strided_source(backend):
    x = np.random.default_rng().standard_normal((5, 4))
    d = gn.to_device(x)
    out = gn.empty((4, 5), gn.f64)
    gn.copy(out, d.T)
    np.testing.assert_array_equal(out.to_host(), x.T)
    with pytest.raises(ValueError, match="cannot copy into a non-contiguous view"):
        gn.copy(d.T, out)


def test_the_simulator_reports_races_in_a_strided_view_by_its_own_index(kernel_module):
    from gpu_native.runtime.backend import use

    k = kernel_module("""
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut2D, FlatLayout1D, f32, Strided, unsafe

@gpu_kernel(Kernel1D)
def clash(out: CUDASliceMut2D[f32, Strided]):
    i = FlatLayout1D.uid()
    with unsafe():
        out[1, i // 2] = f32(i)
""").clash
    with use("sim"), pytest.raises(gn.DeviceRaceError, match=r"data race on out\[1, 0\]"):
        d = gn.to_device(np.zeros((6, 8), np.float32))
        k.launch(gn.GridDim1D(1), gn.BlockDim1D(8), 0, gn.DEFAULT_STREAM)(d.T[::-2])
        d.to_host()


GENERIC = """
from typing import TypeVar
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                        f32, f64, Strided)

T = TypeVar("T", f32, f64)

@gpu_device
def get(a: CUDASlice[T, Strided], i: int) -> T:
    return a[i]

@gpu_kernel(Kernel1D)
def double(a: CUDASlice[T, Strided], out: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    out[i] = get(a, i) * 2
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_generic_strided_parameters_specialise_per_dtype(kernel_module, backend, dtype):
    k = kernel_module(GENERIC).double
    x = np.random.default_rng().standard_normal(33).astype(dtype)
    out = gn.to_device(np.full(17, np.nan, dtype))
    k.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(gn.to_device(x)[::-2], out)
    np.testing.assert_array_equal(out.to_host(), x[::-2] * 2)


def test_strided_views_of_structs_and_of_complex_numbers(kernel_module, backend):
    k = kernel_module("""
from gpu_native import (gpu_kernel, gpu_struct, Kernel1D, CUDASlice2D, CUDASliceMut,
                        CUDASliceMut2D, FlatLayout1D, Strided, complex64, f32, vec3f)

@gpu_struct
class Body:
    mass: f32
    pos: vec3f

@gpu_kernel(Kernel1D)
def first_column(a: CUDASlice2D[Body, Strided], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < out.shape[0]:
        out[i] = a[i, 0].mass + a[i, 0].pos.y

@gpu_kernel(Kernel1D)
def doubled(a: CUDASlice2D[complex64, Strided], out: CUDASliceMut2D[complex64]):
    i = FlatLayout1D.uid()
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            out[i, j] = a[i, j] * 2
""")
    host = np.zeros((3, 2), k.Body.dtype)
    host["mass"] = np.arange(6).reshape(3, 2)
    host["pos"][..., 1] = 10
    out = gn.empty(2, gn.f32)
    k.first_column.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(
        gn.to_device(host).T, out)
    np.testing.assert_array_equal(out.to_host(), [10, 11])  # host[0, i]: row 0 of the transpose
    z = (np.arange(6) + 1j * np.arange(6, 12)).astype(np.complex64).reshape(2, 3)
    got = gn.empty((3, 2), gn.complex64)
    k.doubled.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(
        gn.to_device(z).T, got)
    np.testing.assert_array_equal(got.to_host(), z.T * 2)
