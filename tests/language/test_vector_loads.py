"""``load_vec4``: four elements of an f32 or i32 array as one 16-byte load, on the simulator and
(GPU-marked) on the GPU against NumPy; its bounds check covers all four elements and its
alignment is checked at run time (global arrays) or proven (shared arrays); the type errors."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.errors import KernelIndexError, TranspileError
from gpu_native.rewrite import rewrite_module, transpile_module


@pytest.fixture(scope="module")
def kl():
    from tests.helpers import kernels_vector_loads

    return kernels_vector_loads


def run(kernel, threads, *args, block=64):
    kernel.launch(gn.GridDim1D((threads + block - 1) // block), gn.BlockDim1D(block), 0,
                  gn.DEFAULT_STREAM)(*args)


def test_four_floats_of_a_global_array(backend, kl):
    a = np.random.default_rng(1).standard_normal(4 * 100).astype(np.float32)
    out = gn.empty(100, gn.f32)
    run(kl.sum_of_fours, 100, gn.to_device(a), out)
    ref = a.reshape(100, 4)
    # x + y + z + w in that order, in f32 (the GPU may not fuse anything here: no products)
    expect = ((ref[:, 0] + ref[:, 1]) + ref[:, 2]) + ref[:, 3]
    np.testing.assert_array_equal(out.to_host(), expect)


def test_four_ints_of_a_row_of_a_2d_array(backend, kl):
    a = np.arange(3 * 12, dtype=np.int32).reshape(3, 12)
    out = gn.empty(12, gn.i32)
    run(kl.row_fours, 3, gn.to_device(a), np.int32(2), out)
    np.testing.assert_array_equal(out.to_host(), a[2].reshape(3, 4)[:, ::-1].reshape(-1))


def test_four_floats_of_a_shared_array(backend, kl):
    a = np.arange(256, dtype=np.float32)
    out = gn.empty(32, gn.f32)
    kl.shared_fours.launch(gn.GridDim1D(1), gn.BlockDim1D(64), 0, gn.DEFAULT_STREAM)(
        gn.to_device(a), out)
    tile = a.reshape(2, 128)
    expect = [tile[t // 16, 8 * (t % 16) + 4:8 * (t % 16) + 8].sum() for t in range(32)]
    np.testing.assert_array_equal(out.to_host(), expect)


def test_the_check_covers_all_four_elements(backend, kl):
    # 42 elements: the vector of thread 10 (elements 40 .. 43) runs past the end.
    a = gn.to_device(np.arange(42, dtype=np.float32))
    out = gn.empty(11, gn.f32)
    with pytest.raises(KernelIndexError, match=r"sum_of_fours: load_vec4 of elements 40 to 43 "
                                                 r"is out of bounds for axis 0 of array 'a' with "
                                                 r"size 42") as info:
        run(kl.sum_of_fours, 11, a, out)
        out.to_host()
    assert info.value.thread == (10, 0, 0)
    assert info.value.index == 40 and info.value.length == 42


def test_a_misaligned_view_is_an_index_error(backend, kl):
    a = gn.to_device(np.arange(48, dtype=np.float32))
    out = gn.empty(10, gn.f32)
    with pytest.raises(KernelIndexError, match=r"load_vec4 of array 'a' at an address 4 bytes "
                                                 r"past a 16-byte boundary"):
        run(kl.sum_of_fours, 10, a[1:], out)
        out.to_host()


def test_rows_that_are_not_a_multiple_of_four_are_misaligned(backend, kl):
    a = gn.to_device(np.zeros((3, 10), np.int32))
    out = gn.empty(8, gn.i32)
    with pytest.raises(KernelIndexError, match=r"8 bytes past a 16-byte boundary"):
        run(kl.row_fours, 2, a, np.int32(1), out)  # row 1 starts at element 10
        out.to_host()


def _cuda(kl, name: str) -> str:
    path = kl.__file__
    mod = transpile_module(Path(path).read_text(), path, "kernels_vector_loads")
    (k,) = [k for k in mod.kernels if k.name == name]
    return k.variants[0].cuda


def test_global_loads_are_checked_and_shared_loads_proven(kl):
    code = _cuda(kl, "sum_of_fours")
    assert "gn_vload_chk<gn_vec4f>(__gn_err, &a[gn_chk_vec(__gn_err, " in code
    shared = _cuda(kl, "shared_fours")
    # rows of 128 and a start 8 * (t % 16) + 4: in bounds and 16-byte aligned, nothing checked
    # on the last axis (the row, t // 16 < 4 against 2 rows, is).
    assert "gn_vload<gn_vec4f>(&tile[" in shared and "gn_vload_chk" not in shared
    assert "gn_chk_vec" not in shared


@pytest.mark.parametrize("name", ["sum_of_fours", "row_fours", "shared_fours"])
def test_compiles_with_nvrtc(kl, name):
    code = _cuda(kl, name)
    image = compile_request(BuildRequest(source=code, symbol=f"gn_{name}", arch="sm_90"))
    assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


def test_unchecked_loads_have_no_checks(kl):
    source = Path(kl.__file__).read_text().replace("@gpu_kernel(Kernel1D)",
                                                   "@gpu_kernel(Kernel1D, bounds_check=False)")
    mod = transpile_module(source, "kernels_vector_loads.py", "kernels_vector_loads")
    for k in mod.kernels:
        code = k.variants[0].cuda
        assert "gn_vload_chk" not in code and "gn_chk_vec" not in code


def test_a_misaligned_shared_load_is_checked_at_run_time():
    src = HEADER + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 32 and grid_dim.x == 1
    s = shared_array(f32, (2, 64))
    t = thread_idx.x
    s[0, t] = 1.0
    s[0, t + 32] = 1.0
    sync_threads()
    if t < 8:
        v = load_vec4(s, 0, t * 2)
        out[t] = v.x
"""
    (k,) = transpile_module(src, "/tmp/vector_loads.py", "vector_loads").kernels
    assert "gn_vload_chk<gn_vec4f>(__gn_err, &s[" in k.variants[0].cuda


HEADER = """
from gpu_native import (CUDASlice, CUDASlice2D, CUDASliceMut, FlatLayout1D, Kernel1D, block_dim,
                        Strided, f32, f64, gpu_kernel, grid_dim, load_vec4, local_array,
                        shared_array, sync_threads, thread_idx, unsafe, vec4f)
"""

ERRORS = {
    "f64 elements": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f64], out: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    v = load_vec4(a, 4 * i)  # <-
""", r"load_vec4\(\) reads arrays of f32 or i32, not of f64"),
    "an array of vectors": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec4f], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = load_vec4(a, 4 * i)  # <-
""", r"reads arrays of f32 or i32, not of vec4f"),
    "a writable array": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = load_vec4(a, 4 * i)  # <-
""", r"load_vec4\(\) of the writable array 'a' reads 4 elements"),
    "a per-thread array": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    r = local_array(f32, (8,))
    v = load_vec4(r, 0)  # <-
""", r"reads global or shared arrays, not a local array"),
    "a strided array": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f32, Strided], out: CUDASliceMut[f32]):
    v = load_vec4(a, 0, 0)  # <-
""", r"load_vec4\(\) reads 4 consecutive elements, and the Strided array 'a' need not"),
    "a wrong number of indices": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f32], out: CUDASliceMut[f32]):
    v = load_vec4(a, 0)  # <-
""", r"a is a 2-D array but is indexed with 1 index"),
    "a constant index past the end": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, (8,))
    v = load_vec4(s, 6)  # <-
""", r"4 elements from index 6 are out of bounds for axis 0 of 's' with size 8"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_type_errors(case):
    source = textwrap.dedent(HEADER + ERRORS[case][0])
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, "/tmp/vector_loads.py", "vector_loads")
    assert info.value.span.line == line, str(info.value)
    assert re.search(ERRORS[case][1], str(info.value)), str(info.value)


def test_a_writable_array_under_unsafe_is_read():
    src = HEADER + """
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(out):
        with unsafe():
            v = load_vec4(a, 4 * i)
        out[i] = v.x
"""
    (k,) = transpile_module(src, "/tmp/vector_loads.py", "vector_loads").kernels
    assert "gn_vload_chk<gn_vec4f>" in k.variants[0].cuda
