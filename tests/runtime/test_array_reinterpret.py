"""DeviceArray.view: the same memory as another element type, as NumPy's ndarray.view."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn

SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, u32

@gpu_kernel(Kernel1D)
def flip_sign_bits(bits: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    bits[i] = bits[i] ^ u32(0x80000000)
"""


def test_same_itemsize_view_gives_the_bits(backend):
    rng = np.random.default_rng()
    a = rng.standard_normal((6, 5)).astype(np.float32)
    d = gn.to_device(a)
    v = d.view(gn.u32)
    assert v.shape == (6, 5) and v.dtype == np.uint32
    np.testing.assert_array_equal(v.to_host(), a.view(np.uint32))
    np.testing.assert_array_equal(d.view(np.int32).to_host(), a.view(np.int32))


@pytest.mark.parametrize("src, dst, shape, want", [
    (np.float32, gn.u16, (4, 6), (4, 12)),
    (np.uint8, gn.f64, (3, 16), (3, 2)),
    (np.float64, gn.u8, (7,), (56,)),
    (np.uint16, gn.f32, (2, 3, 8), (2, 3, 4)),
])
def test_another_itemsize_rescales_the_last_axis_as_numpy_does(backend, src, dst, shape, want):
    rng = np.random.default_rng()
    a = rng.integers(0, 255, size=(int(np.prod(shape)) * np.dtype(src).itemsize,),
                     dtype=np.uint8).view(src).reshape(shape)
    v = gn.to_device(a).view(dst)
    assert v.shape == want
    np.testing.assert_array_equal(v.to_host().view(np.uint8), a.view(np.uint8).reshape(
        *shape[:-1], -1))
    assert v.to_host().dtype == dst.dtype


def test_bf16_view_as_u16_gives_the_raw_bits(backend):
    from gpu_native.lang.halfprec import f32_to_bf16_bits

    a = np.random.default_rng().standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(gn.to_device(a, gn.bf16).view(gn.u16).to_host(),
                                  f32_to_bf16_bits(a))


def test_a_view_shares_memory_with_its_array_in_kernels(kernel_module, backend):
    """A kernel writing through a u32 view changes the f32 array it was made from."""
    k = kernel_module(SOURCE).flip_sign_bits
    a = np.random.default_rng().standard_normal(256).astype(np.float32)
    d = gn.to_device(a)
    k.launch(gn.GridDim1D(2), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)(d.view(gn.u32))
    np.testing.assert_array_equal(d.to_host(), -a)


def test_a_view_keeps_read_only(backend):
    v = gn.to_device(np.zeros(4, np.float32)).readonly().view(gn.i32)
    assert not v.is_writable


def test_a_last_axis_that_does_not_divide_is_refused(backend):
    d = gn.to_device(np.zeros((2, 3), np.uint16))
    with pytest.raises(ValueError, match="last axis holds 6 bytes, not a multiple of 4"):
        d.view(gn.f32)


def test_a_misaligned_view_is_refused(backend):
    d = gn.to_device(np.zeros(16, np.uint8))
    with pytest.raises(ValueError, match="not aligned to 4 bytes"):
        d[1:9].view(gn.u32)


def test_an_unknown_type_is_a_type_error(backend):
    with pytest.raises(TypeError, match="float128 has no gpu_native scalar type"):
        gn.to_device(np.zeros(4, np.float32)).view("float128")


def test_a_big_endian_array_names_the_conversion(backend):
    big = np.arange(4, dtype=">f4")
    with pytest.raises(TypeError, match=r">f4 has no gpu_native scalar type: its bytes are "
                                        r"big-endian .*a.astype\(a.dtype.newbyteorder\('='\)\)"):
        gn.to_device(big)
    np.testing.assert_array_equal(
        gn.to_device(big.astype(big.dtype.newbyteorder("="))).to_host(), [0, 1, 2, 3])


def test_an_f32_array_views_as_complex_pairs(backend):
    d = gn.to_device(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(d.view(gn.complex64).to_host(), [0 + 1j, 2 + 3j])


def test_a_view_and_its_array_cannot_both_be_passed_when_one_is_written(kernel_module, backend):
    src = SOURCE + '''
@gpu_kernel(Kernel1D)
def copy_bits(src: CUDASlice[u32], dst: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    dst[i] = src[i]
'''
    k = kernel_module(src.replace("CUDASliceMut, FlatLayout1D", "CUDASlice, CUDASliceMut, "
                                  "FlatLayout1D")).copy_bits
    d = gn.to_device(np.zeros(8, np.uint32))
    with pytest.raises(ValueError, match=r"overlap|share"):
        k.launch(gn.GridDim1D(1), gn.BlockDim1D(8), 0, gn.DEFAULT_STREAM)(
            d.view(gn.f32).view(gn.u32), d)


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "language.md").read_text()
    part = text[text.index("\n### Reinterpreting memory"):text.index("\n## Vectors\n")]
    snippet = re.findall(r"```python\n(.*?)```", part, re.S)[0]
    name = f"view_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)  # its asserts check the bits against NumPy's view
    assert capsys.readouterr().out.splitlines()[-1] == "ok"
