"""Interleaved views of one array in one launch: even and odd columns or rows, the real and
imaginary parts of complex numbers, the red and black cells of a grid.  The launcher proves
them apart element by element (gpu_native.runtime.disjoint) and lets them in; views that may
share a byte are still refused, naming both parameters.  Each test runs on the simulator and,
where there is a GPU, on the GPU (the ``backend`` fixture)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn

SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, Kernel3D, CUDASlice, CUDASliceMut,
                        CUDASliceMut2D, CUDASliceMut3D, FlatLayout1D, FlatLayout2D, FlatLayout3D,
                        f32, Strided, unsafe)

@gpu_kernel(Kernel2D)
def butterfly(even: CUDASliceMut2D[f32, Strided], odd: CUDASliceMut2D[f32, Strided]):
    x, y = FlatLayout2D.uid()
    e = even[y, x]
    o = odd[y, x]
    even[y, x] = e + o
    odd[y, x] = e - o

@gpu_kernel(Kernel1D)
def times_i(re: CUDASliceMut[f32, Strided], im: CUDASliceMut[f32, Strided]):
    i = FlatLayout1D.uid()
    r = re[i]
    re[i] = -im[i]
    im[i] = r

@gpu_kernel(Kernel1D)
def from_even(even: CUDASlice[f32, Strided], odd: CUDASliceMut[f32, Strided], s: f32):
    i = FlatLayout1D.uid()
    odd[i] = s * even[i]

@gpu_kernel(Kernel1D)
def swap(red: CUDASliceMut[f32, Strided], black: CUDASliceMut[f32, Strided]):
    i = FlatLayout1D.uid()
    r = red[i]
    red[i] = black[i]
    black[i] = r

@gpu_kernel(Kernel1D)
def shadowed(even: CUDASliceMut[f32, Strided], odd: CUDASliceMut[f32, Strided]):
    i = FlatLayout1D.uid()
    with unsafe():
        even[i] = f32(2 * i)
        odd[i] = even[i] + f32(1)

@gpu_kernel(Kernel3D)
def red_black(red: CUDASliceMut3D[f32, Strided], black: CUDASliceMut3D[f32, Strided]):
    x, y, z = FlatLayout3D.uid()
    r = red[z, y, x]
    red[z, y, x] = black[z, y, x]
    black[z, y, x] = r
"""


@pytest.fixture
def kernels(kernel_module):
    return kernel_module(SOURCE)


def _butterfly(kernels, even, odd):
    rows, cols = even.shape
    kernels.butterfly.launch(gn.GridDim2D((cols + 7) // 8, (rows + 7) // 8), gn.BlockDim2D(8, 8),
                             0, gn.DEFAULT_STREAM)(even, odd)


def _launch1d(kernel, n, *args):
    kernel.launch(gn.GridDim1D((n + 63) // 64), gn.BlockDim1D(64), 0, gn.DEFAULT_STREAM)(*args)


def _want_butterfly(x, even, odd):
    want = x.copy()
    e, o = even(x), odd(x)
    even(want)[...] = e + o
    odd(want)[...] = e - o
    return want


@pytest.mark.parametrize("even, odd", [
    (lambda a: a[:, ::2], lambda a: a[:, 1::2]),            # columns
    (lambda a: a[::2], lambda a: a[1::2]),                  # rows
    (lambda a: a[1::2, ::-2], lambda a: a[1::2, -2::-2]),   # reversed columns of odd rows
    (lambda a: a.T[::2], lambda a: a.T[1::2]),              # columns, through a transpose
], ids=["columns", "rows", "reversed", "transposed"])
def test_even_and_odd_views_are_written_in_one_launch(kernels, backend, rng, even, odd):
    x = rng.standard_normal((10, 12)).astype(np.float32)
    d = gn.to_device(x)
    _butterfly(kernels, even(d), odd(d))
    np.testing.assert_array_equal(d.to_host(), _want_butterfly(x, even, odd))


def test_real_and_imaginary_parts_of_interleaved_complex_numbers(kernels, backend, rng):
    z = (rng.standard_normal(37) + 1j * rng.standard_normal(37)).astype(np.complex64)
    d = gn.to_device(z)
    parts = d.view(gn.f32)                                  # (74,): re, im, re, im, ...
    _launch1d(kernels.times_i, 37, parts[0::2], parts[1::2])
    np.testing.assert_array_equal(d.to_host(), z * np.complex64(1j))


def test_one_view_read_while_the_other_is_written(kernels, backend, rng):
    x = rng.standard_normal(40).astype(np.float32)
    d = gn.to_device(x)
    _launch1d(kernels.from_even, 20, d[0::2], d[1::2], 3.0)
    want = x.copy()
    want[1::2] = np.float32(3.0) * x[0::2]
    np.testing.assert_array_equal(d.to_host(), want)


def test_red_and_black_cells_of_a_grid_with_an_odd_row_length(kernels, backend, rng):
    """With an odd row length the red cells of a grid are its even flat elements."""
    x = rng.standard_normal((8, 7)).astype(np.float32)
    d = gn.to_device(x)
    flat = d.reshape(-1)
    _launch1d(kernels.swap, 28, flat[0::2], flat[1::2])
    want = x.reshape(-1).copy()
    want[0::2], want[1::2] = x.reshape(-1)[1::2], x.reshape(-1)[0::2]
    np.testing.assert_array_equal(d.to_host(), want.reshape(8, 7))


def test_red_and_black_cells_of_a_grid_with_an_even_row_length(kernels, backend, rng):
    """With an even row length ``m`` the red cells are a ``(rows / 2, 2, m / 2)`` view with
    element strides ``(2m, m + 1, 2)``, the black ones ``(2m, m - 1, 2)`` from element 1:
    strides that differ and have gcd 1, so the search, not the residue test, tells them apart."""
    rows, cols = 8, 6
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    d = gn.to_device(x)
    shape = (rows // 2, 2, cols // 2)
    red = d._view(0, shape, strides=(2 * cols, cols + 1, 2))
    black = d._view(1, shape, strides=(2 * cols, cols - 1, 2))
    kernels.red_black.launch(gn.GridDim3D(1, 1, rows // 2), gn.BlockDim3D(4, 2, 1), 0,
                             gn.DEFAULT_STREAM)(red, black)
    i, j = np.indices((rows, cols))
    is_red = (i + j) % 2 == 0
    # Red and black cells pair up in row-major order: each row holds m / 2 of each.
    want = x.copy()
    want[is_red], want[~is_red] = x[~is_red], x[is_red]
    np.testing.assert_array_equal(d.to_host(), want)


@pytest.mark.parametrize("first, second", [
    (lambda a: a[:, 0:3], lambda a: a[:, 2:5]),             # windows that share column 2
    (lambda a: a[::2][:4], lambda a: a[::3][:4]),           # rows 0 and 6 in both
    (lambda a: a[:, ::2], lambda a: a[:, ::2]),             # one view twice
    (lambda a: a[:, ::2], lambda a: a),                     # a view and its base
    (lambda a: a[:, ::2], lambda a: a[:, 2::2]),            # even columns, shifted by two
], ids=["windows", "steps", "same view", "view and base", "shifted"])
def test_views_that_share_an_element_are_refused(kernels, backend, first, second):
    d = gn.to_device(np.zeros((12, 12), np.float32))
    a, b = first(d), second(d)
    with pytest.raises(ValueError, match="argument 'even' of butterfly overlaps argument 'odd' "
                                         "in device memory"):
        _butterfly(kernels, a, b)
    with pytest.raises(ValueError, match="argument 'even' of butterfly overlaps argument 'odd'"):
        _butterfly(kernels, b, a)
    np.testing.assert_array_equal(d.to_host(), 0)


def _foreign_wrapper(how: str, d):
    """Another library's array over the memory of gpu_native array ``d`` (no copy)."""
    if how == "numpy" and gn.backend() != "sim":
        pytest.skip("NumPy wraps a device array's memory only on the simulator")
    if how in ("torch", "cupy") and gn.backend() == "sim":
        pytest.skip(f"{how} wraps device memory only on a GPU")
    if how == "numpy":
        return np.from_dlpack(d)
    if how == "torch":
        torch = pytest.importorskip("torch")
        return torch.from_dlpack(d)
    cupy = pytest.importorskip("cupy")
    return cupy.asarray(d)


@pytest.mark.parametrize("how", ["numpy", "torch", "cupy"])
def test_an_array_lent_back_through_another_library_is_the_same_memory(kernels, backend, how):
    """``gn.from_dlpack(np.from_dlpack(d))`` (``torch.from_dlpack(d)`` on a GPU) is ``d``'s own
    memory: a launch that writes one and reads the other is refused as for ``d`` itself.  It
    was let in (on the simulator the wrapper had an address of its own; on a GPU an allocation
    base of its own, which the fast path took for other memory)."""
    d = gn.to_device(np.arange(24, dtype=np.float32))
    alias = gn.from_dlpack(_foreign_wrapper(how, d))
    for first, second in ((d, alias), (alias, d), (d[::2], alias[::2]), (d[:12], alias[6:18])):
        with pytest.raises(ValueError, match="argument 'odd' of from_even overlaps argument "
                                             "'even' in device memory"):
            _launch1d(kernels.from_even, len(first), first, second, 1.0)
    np.testing.assert_array_equal(d.to_host(), np.arange(24))
    # Disjoint halves of the one allocation still pass, and the writes land in d.
    _launch1d(kernels.from_even, 12, alias[:12], d[12:], 2.0)
    gn.synchronize()
    np.testing.assert_array_equal(d.to_host()[12:], 2.0 * np.arange(12))


def test_a_read_view_that_meets_the_written_one_is_refused(kernels, backend):
    d = gn.to_device(np.zeros(24, np.float32))
    with pytest.raises(ValueError, match="argument 'odd' of from_even overlaps argument 'even'"):
        _launch1d(kernels.from_even, 12, d[:12], d[::2], 1.0)
    with pytest.raises(ValueError, match="argument 'odd' of from_even overlaps argument 'even'"):
        _launch1d(kernels.from_even, 12, d[1::2], d[23::-2], 1.0)  # the same cells, reversed


def test_lent_host_views_are_split_in_place(kernels, sim, rng):
    """On the simulator a strided host view (a NumPy one here; a CPU tensor's ``t[..., 0]``
    takes the same road through DLPack) is lent as it is: the kernel writes the caller's
    array, and interleaved views of it pass together."""
    x = rng.standard_normal((10, 12)).astype(np.float32)
    want = _want_butterfly(x, lambda a: a[:, ::2], lambda a: a[:, 1::2])
    _butterfly(kernels, gn.from_dlpack(x[:, ::2]), gn.from_dlpack(x[:, 1::2]))
    np.testing.assert_array_equal(x, want)
    with pytest.raises(ValueError, match="argument 'even' of butterfly overlaps argument 'odd'"):
        _butterfly(kernels, gn.from_dlpack(x[:, :6]), gn.from_dlpack(x[:, 5:11]))


def test_a_tensors_last_axis_split_in_two(kernels, backend):
    """PyTorch's ``t[..., 0]`` and ``t[..., 1]`` (real and imaginary parts stored as pairs)
    passed straight to a launch: a CUDA tensor on the GPU, a CPU one on the simulator."""
    torch = pytest.importorskip("torch")
    t = torch.randn(37, 2, device="cuda" if backend == "cuda" else "cpu")
    z = t[..., 0].cpu().numpy() + 1j * t[..., 1].cpu().numpy()
    _launch1d(kernels.times_i, 37, t[..., 0], t[..., 1])
    got = t.cpu().numpy()
    np.testing.assert_array_equal(got[:, 0] + 1j * got[:, 1], (z * 1j).astype(np.complex64))


def test_the_race_detector_watches_each_view_by_itself(kernels, sim):
    """Stores inside ``unsafe()`` give each view shadow memory of its own in the simulator:
    the launch proved the views apart, so no race can run between them, and none is reported
    where the two views' spans interleave in one buffer."""
    d = gn.to_device(np.full(64, np.nan, np.float32))
    _launch1d(kernels.shadowed, 32, d[0::2], d[1::2])
    np.testing.assert_array_equal(d.to_host(), np.arange(64, dtype=np.float32))


def test_interleaved_views_take_the_checked_path_each_launch(kernels, backend, launch_paths):
    """Views of one allocation never pass the fast path, which compares allocations only; the
    checked path proves them apart at every launch (what it proves depends on addresses,
    which launch signatures do not carry, so nothing is cached)."""
    x = np.arange(16, dtype=np.float32)
    d = gn.to_device(x)
    launch = kernels.from_even.launch(gn.GridDim1D(1), gn.BlockDim1D(8), 0, gn.DEFAULT_STREAM)
    for _ in range(3):
        launch(d[0::2], d[1::2], 1.0)
    assert launch_paths["slow"] == 3 and not launch_paths["fast"]
    np.testing.assert_array_equal(d.to_host(), np.repeat(x[0::2], 2))
