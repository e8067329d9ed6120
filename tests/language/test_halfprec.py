"""f16 and bf16: division (correctly rounded, through the guarded gn_fdiv) and host copies."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.lang import halfprec

SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f16, bf16, i32

@gpu_kernel(Kernel1D)
def half_div(a: CUDASlice[f16], b: CUDASlice[f16], q: CUDASliceMut[f16],
             x: CUDASlice[bf16], y: CUDASlice[bf16], r: CUDASliceMut[bf16]):
    i = FlatLayout1D.uid()
    q[i] = a[i] / b[i]
    r[i] = x[i] / y[i]

@gpu_kernel(Kernel1D)
def half_quotient_sign(u: CUDASlice[i32], o: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    h = f16(u[i] & 255) / f16(-0.0)
    g = bf16(u[i] & 255) / bf16(-0.0)
    o[i] = (1 if h < f16(0.0) else 0) + (2 if g < bf16(0.0) else 0)
"""


def _specials(rng, n):
    v = (rng.standard_normal(n) * rng.choice([1e-4, 1.0, 300.0], n)).astype(np.float64)
    v[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.0, 6.1e-5]
    return v


def test_half_division_is_correctly_rounded(kernel_module, backend):
    """A 16-bit quotient is the exact quotient rounded once (what NumPy's float64 division
    rounded to the type gives), zeros of either sign, infinities and NaN included."""
    k = kernel_module(SOURCE).half_div
    rng = np.random.default_rng()
    n = 4096
    a = _specials(rng, n).astype(np.float16)
    b = rng.permutation(_specials(rng, n)).astype(np.float16)
    x = halfprec.bf16_bits_to_f32(halfprec.f32_to_bf16_bits(_specials(rng, n)))
    y = halfprec.bf16_bits_to_f32(halfprec.f32_to_bf16_bits(rng.permutation(
        _specials(rng, n))))
    q = gn.to_device(np.full(n, 7, np.float16))  # poisoned: every element must be written
    r = gn.to_device(np.full(n, 7, np.float32), gn.bf16)
    k.launch(gn.GridDim1D(n // 128), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)(
        gn.to_device(a), gn.to_device(b), q, gn.to_device(x, gn.bf16),
        gn.to_device(y, gn.bf16), r)
    with np.errstate(all="ignore"):
        want_q = (a.astype(np.float64) / b.astype(np.float64)).astype(np.float16)
        want_r = halfprec.bf16_bits_to_f32(halfprec.f32_to_bf16_bits(
            (x.astype(np.float64) / y.astype(np.float64)).astype(np.float32)))
    got_q = q.to_host()
    got_r = np.asarray(r.to_host(), np.float32)
    np.testing.assert_array_equal(got_q, want_q)
    np.testing.assert_array_equal(got_r, want_r)


def test_half_division_goes_through_the_guarded_f32_division(kernel_module):
    """f16 and bf16 division is the f32 quotient through gn_fdiv, rounded once: NVVM's sign
    reasoning cannot fold ``f16(u) / -0.0 < 0`` (the f32 bug pinned in
    tests/emit/test_nvrtc_bugs.py), and CUDA's own __hdiv (a reciprocal approximation) is not
    used.  The compares of both quotients survive into PTX; the kernel compiles to cubin."""
    m = kernel_module(SOURCE)
    for k in (m.half_div, m.half_quotient_sign):
        (variant,) = k.variants.values()
        body = variant.cuda.split('extern "C" __global__', 1)[1]
        assert "__float2half_rn(gn_fdiv(__half2float(" in body
        assert "__float2bfloat16_rn(gn_fdiv(__bfloat162float(" in body
    (variant,) = m.half_quotient_sign.variants.values()
    entry = _ptx(variant).split(".entry ")[1]
    assert "div.rn.f32" in entry
    assert sum("setp." in line for line in entry.splitlines()) >= 2


def _ptx(variant) -> str:
    """The PTX NVRTC makes of a variant that uses the half headers (compute_90)."""
    from cuda.bindings import nvrtc

    from gpu_native.compiler.nvrtc import create_program, half_include_dir

    program = create_program(variant.cuda.encode(), b"k.cu")
    options = [b"--gpu-architecture=compute_90", b"-std=c++17",
               f"-I{half_include_dir()}".encode()]
    assert nvrtc.nvrtcCompileProgram(program, len(options), options)[0] == \
        nvrtc.nvrtcResult.NVRTC_SUCCESS
    size = nvrtc.nvrtcGetPTXSize(program)[1]
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(program, ptx)
    nvrtc.nvrtcDestroyProgram(program)
    return ptx.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_half_division_compiles_to_cubin(kernel_module, arch):
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request

    m = kernel_module(SOURCE)
    for k in (m.half_div, m.half_quotient_sign):
        (variant,) = k.variants.values()
        image = compile_request(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                             arch=arch, uses_half=True, label=variant.symbol))
        assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


def test_half_quotient_by_negative_zero_keeps_its_sign(kernel_module, backend):
    k = kernel_module(SOURCE).half_quotient_sign
    u = np.arange(256, dtype=np.int32)
    o = gn.to_device(np.full(256, -1, np.int32))
    k.launch(gn.GridDim1D(2), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)(gn.to_device(u), o)
    want = np.where(u > 0, 3, 0)  # +x / -0.0 is -inf for x > 0; 0 / -0.0 is NaN
    np.testing.assert_array_equal(o.to_host(), want)


def test_bf16_to_host_without_ml_dtypes_is_float32(backend, monkeypatch):
    """Without ml_dtypes NumPy has no bfloat16: the values come back widened to float32."""
    monkeypatch.setattr(halfprec, "_BF16_DTYPE", [None])
    v = np.array([1.0, -2.5, 2.0**127, np.inf, -0.0], np.float32)
    got = gn.to_device(v, gn.bf16).to_host()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, v)


def test_bf16_to_host_keeps_bfloat16_with_ml_dtypes(backend):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng()
    v = rng.standard_normal((3, 5)).astype(ml_dtypes.bfloat16)
    got = gn.to_device(v).to_host()
    assert got.dtype == np.dtype(ml_dtypes.bfloat16) and got.shape == (3, 5)
    np.testing.assert_array_equal(got.view(np.uint16), v.view(np.uint16))


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "language.md").read_text()
    part = text[text.index("\n### Half precision"):text.index("\n### Packed pairs")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"half_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Its assert is exact on both backends: f16 division is correctly rounded (gn_fdiv).
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_host_bf16_conversions_round_once_as_the_kernel_does(kernel_module, backend):
    # 1 + 2**-8 + 2**-30 is just above the bf16 tie between 1.0 and 1.0078125: rounded to f32
    # first it lands on the tie and goes to even (1.0); rounded once it is 1.0078125, which is
    # what bf16(x) of an f64 gives in a kernel (__double2bfloat16).  Every host path agreed
    # with the two-step rounding.
    km = kernel_module("""
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, bf16, f64, thread_idx, grid_dim

@gpu_kernel(Kernel1D)
def convert(x: f64, p: bf16, out: CUDASliceMut[bf16]):
    assert grid_dim.x == 1
    if thread_idx.x == 0:
        out[0] = bf16(x)
        out[1] = p
""")
    x = 1 + 2**-8 + 2**-30
    out = gn.empty(2, gn.bf16)
    km.convert[1, 32](x, x, out)
    bits = np.asarray(out.to_host()).view(np.uint16)
    assert [hex(b) for b in bits] == ["0x3f81", "0x3f81"]
    assert gn.bf16(x) == 1.0078125 and gn.vec2bf(x, 0.0).x == 1.0078125
    data = np.asarray(gn.to_device(np.array([x, -x]), dtype=gn.bf16).to_host()).view(np.uint16)
    assert [hex(b) for b in data] == ["0x3f81", "0xbf81"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning from gpu_native's own line
        assert gn.bf16(1e40) == np.inf
