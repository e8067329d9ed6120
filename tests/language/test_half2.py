"""The packed 16-bit pairs vec2h and vec2bf (CUDA's __half2, __nv_bfloat162): each lane on the
simulator and (GPU-marked) on the GPU bit for bit against an exact reference; device arrays of
pairs to and from NumPy; load_vec2; the generated CUDA; the type errors.

The references.  A single + - * of two 16-bit floats is exact in float64 (a product has at most
22 significant bits, a sum at most 40 for f16 and finite sums of bf16 lanes are rounded in f32
on both backends, which holds 2 * 8 + 2 bits), so float64 then one rounding to 16 bits is the
correctly rounded result.  Division: the float64 quotient rounded to 16 bits is correctly
rounded (53 >= 2 * 11 + 2, so that double rounding is innocuous), as the backends' f32 quotient
rounded once is (24 >= 2 * 11 + 2).  fma(a, b, c) = a * b + c: the product is exact in float64
but the sum need not be, and rounding it to float64 first can land on a 16-bit tie the exact
value is off.  For f16 that cannot happen (an f16 tie within range is a multiple of 2**-25 below
2**16, and a * b + c is a multiple of 2**-48: a float64 holds any such sum off a tie exactly, or
far from the tie), but for bf16 it can (a * b = 259 * 2**-8, a tie, and c = -2**-100;
test_bf16_fma_is_rounded_once), so the reference rounds the exact rational
(:func:`_round_exact`): no argument about double rounding is needed for it.
"""

from __future__ import annotations

import re
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelIndexError, TranspileError
from gpu_native.lang.halfprec import bf16_bits_to_f32, f32_to_bf16_bits
from gpu_native.rewrite import rewrite_module, transpile_module


@pytest.fixture(scope="module")
def kh():
    from tests.helpers import kernels_half2

    return kernels_half2


def run(kernel, n, *args, block=64):
    kernel.launch(gn.GridDim1D(max(1, (n + block - 1) // block)), gn.BlockDim1D(block), 0,
                  gn.DEFAULT_STREAM)(*args)


# ---- exact references --------------------------------------------------------------------------


def _f16_neighbours(x: np.float16) -> list[float]:
    return [float(np.nextafter(x, np.float16(-np.inf))), float(x),
            float(np.nextafter(x, np.float16(np.inf)))]


def _bf16_neighbours(bits: int) -> list[float]:
    return [float(bf16_bits_to_f32(b)) for b in (bits - 1, bits, bits + 1) if 0 <= b < 1 << 16]


def _round_exact(value: Fraction, half: bool) -> float:
    """``value`` rounded to nearest (ties to even) f16 or bf16, from the exact rational: the
    nearest of the candidates around float(value), ties to the even significand."""
    approx = float(value)
    if half:
        x = np.float16(approx)
        if np.isinf(x):
            return float(x)
        cands = _f16_neighbours(x)
        even = {c: int(np.float16(c).view(np.uint16)) & 1 == 0 for c in cands}
    else:
        bits = int(f32_to_bf16_bits(np.float32(approx)))
        if bits & 0x7FFF >= 0x7F80:
            return float(bf16_bits_to_f32(bits))
        cands = _bf16_neighbours(bits)
        even = {c: int(f32_to_bf16_bits(np.float32(c))) & 1 == 0 for c in cands}
    finite = [c for c in cands if np.isfinite(c)]
    best = min(finite, key=lambda c: (abs(Fraction(c) - value), not even[c]))
    if best == 0:  # a nonzero value rounded to zero keeps its sign
        return -0.0 if value < 0 else 0.0
    return best


def _fma_reference(a, b, c, half: bool) -> np.ndarray:
    out = []
    for x, y, z in zip(a.ravel().tolist(), b.ravel().tolist(), c.ravel().tolist()):
        if not all(np.isfinite(v) for v in (x, y, z)):
            out.append(x * y + z)
            continue
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact == 0:
            # An exact zero sum is +0 (round to nearest) unless both addends are -0.
            product_sign = bool(np.signbit(x)) != bool(np.signbit(y))
            both = x * y == 0 and z == 0 and product_sign and bool(np.signbit(z))
            out.append(-0.0 if both else 0.0)
            continue
        out.append(_round_exact(exact, half))
    return np.array(out).reshape(a.shape)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal, zeros' signs included, NaN where NaN (its payload is the device's own)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    nan = np.isnan(want)
    return bool(np.array_equal(np.isnan(got), nan) and np.array_equal(got[~nan], want[~nan])
                and np.array_equal(np.signbit(got[~nan]), np.signbit(want[~nan])))


def _f16_values(rng, n: int) -> np.ndarray:
    """Normal values, subnormals, large values whose products overflow, zeros of both signs."""
    parts = [rng.standard_normal(n), rng.standard_normal(n) * 2.0**-16,
             rng.standard_normal(n) * 3000.0, rng.choice([0.0, -0.0, 1.0, -1.0, 65504.0], n)]
    v = np.concatenate(parts)
    return rng.permutation(v).astype(np.float16).reshape(-1, 2)


# ---- kernels against the references ------------------------------------------------------------


def test_vec2h_lanes_match_float16_exactly(backend, kh, rng):
    a, b, c = (_f16_values(rng, 256) for _ in range(3))
    n = len(a)
    s = np.float16(rng.standard_normal())
    out = gn.empty((n, 11), gn.vec2h)
    run(kh.ops_vec2h, n, *(gn.to_device(x, dtype=gn.vec2h) for x in (a, b, c)), float(s), out)
    got = out.to_host()
    assert got.shape == (n, 11, 2) and got.dtype == np.float16
    u, v = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        fma = _fma_reference(a, b, c, half=True).astype(np.float16)
        want = [u + v, u - v, u * v, u / v, fma, -u, u * float(s), 2.0 * u,
                np.where(v < u, v, u), np.where(v > u, v, u), fma]
        for k, w in enumerate(want):
            assert _same(got[:, k], np.asarray(w).astype(np.float16)), k


def _bf16(rng, shape, scale=1.0) -> np.ndarray:
    """bf16 values as float32 (exact), with zeros and huge and tiny ones among them."""
    v = rng.standard_normal(shape) * scale
    v.ravel()[::7] = 0.0
    v.ravel()[::11] *= 2.0**100
    v.ravel()[::13] *= 2.0**-120
    return bf16_bits_to_f32(f32_to_bf16_bits(v.astype(np.float32))).reshape(shape)


def _bf16_round(x) -> np.ndarray:
    """f64 values (each exact or correctly rounded from an exact value with 53 >= 18 bits) to
    bf16, once, from the f64 (the direct rounding the backends' f32 computations equal)."""
    from gpu_native.simulator.ops import f64_to_bf16

    return np.asarray(f64_to_bf16(np.asarray(x, np.float64)), np.float64)


def test_vec2bf_lanes_match_exact_rounding(backend, kh, rng):
    n = 400
    a, b, c = _bf16(rng, (n, 2)), _bf16(rng, (n, 2)), _bf16(rng, (n, 2))
    s = float(_bf16(rng, 1)[0]) or 0.5
    out = gn.empty((n, 10), gn.vec2bf)
    run(kh.ops_vec2bf, n, *(gn.to_device(x, dtype=gn.vec2bf) for x in (a, b, c)), s, out)
    got = np.asarray(out.to_host(), np.float32)
    assert got.shape == (n, 10, 2)
    u, v = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        # A bf16 sum or product is exact in f64 unless its lanes are 2**240 apart: then the
        # f64 rounding is at 53 bits and a second one to 8 bits is innocuous.
        want = [_bf16_round(u + v), _bf16_round(u - v), _bf16_round(u * v), _bf16_round(u / v),
                _fma_reference(a, b, c, half=False), -u, _bf16_round(u * s),
                _bf16_round(2.0 * u), np.where(v < u, v, u), np.where(v > u, v, u)]
    for k, w in enumerate(want):
        assert _same(got[:, k], w), k


def test_bf16_fma_is_rounded_once(backend, kh):
    """1.75 * 0.578125 is 259 * 2**-8, halfway between the bf16 neighbours 258 and 260 * 2**-8;
    adding -2**-100 puts the exact result just below the tie, so it rounds down.  Rounding the
    sum to f64 first loses the -2**-100 and lands on the tie, which rounds to the even 260."""
    a = np.array([[1.75, 1.75]], np.float32)
    b = np.array([[0.578125, 0.578125]], np.float32)
    c = np.array([[-(2.0**-100), 2.0**-100]], np.float32)
    out = gn.empty((1, 10), gn.vec2bf)
    run(kh.ops_vec2bf, 1, *(gn.to_device(x, dtype=gn.vec2bf) for x in (a, b, c)), 1.0, out)
    got = np.asarray(out.to_host(), np.float64)[0, 4]
    assert got.tolist() == [258 / 256, 260 / 256]


def test_components_parameters_and_conversions(backend, kh, rng):
    n = 70
    a = rng.standard_normal((n, 2)).astype(np.float16)
    p = gn.vec2h(0.25, -1.5)
    out, wide = gn.empty(n, gn.vec2h), gn.empty(n, gn.vec2f)
    run(kh.components_vec2h, n, gn.to_device(a, dtype=gn.vec2h), p, out, wide)
    h = np.float16
    w0 = (a[:, 1] + h(-1.5)).astype(h)  # w.x += p.y, rounded to f16
    w = np.stack([w0, a[:, 0]], axis=1)
    doubled = (a.astype(np.float32) * 2).astype(h)
    want = ((w + h(0.5)).astype(h) + doubled).astype(h)
    assert _same(out.to_host(), want)
    assert wide.to_host().dtype == np.float32 and _same(wide.to_host(), a.astype(np.float32))
    # The checked launch path takes a tuple for the parameter, and a bf16 pair's components.
    run(kh.components_vec2h, n, gn.to_device(a, dtype=gn.vec2h), (0.25, -1.5), out, wide)
    assert _same(out.to_host(), want)


def test_load_vec2_reads_adjacent_halves(backend, kh, rng):
    n = 100
    x = rng.standard_normal(2 * n).astype(np.float16)
    y = _bf16(rng, 2 * n)
    out, outb = gn.empty(n, gn.vec2h), gn.empty(n, gn.vec2bf)
    run(kh.pairs_of_halves, n, gn.to_device(x), gn.to_device(y, dtype=gn.bf16), out, outb)
    pairs = x.reshape(n, 2)
    assert _same(out.to_host(), (pairs + pairs).astype(np.float16))
    assert _same(np.asarray(outb.to_host(), np.float32), y.reshape(n, 2))


def test_load_vec2_off_a_4_byte_boundary_is_an_index_error(backend, kh):
    x = gn.to_device(np.arange(10, dtype=np.float16))
    y = gn.to_device(np.zeros(10, np.float32), dtype=gn.bf16)
    with pytest.raises(KernelIndexError, match=r"'x'.*(align|boundary)"):
        run(kh.pairs_of_halves, 4, x[1:9], y, gn.empty(4, gn.vec2h), gn.empty(4, gn.vec2bf))
        gn.synchronize()


def test_axpy_half2(backend, kh, rng):
    n = 1000
    x = rng.standard_normal((n, 2)).astype(np.float16)
    y = rng.standard_normal((n, 2)).astype(np.float16)
    dy = gn.to_device(y, dtype=gn.vec2h)
    run(kh.axpy_half2, n, 0.5, gn.to_device(x, dtype=gn.vec2h), dy)
    want = (0.5 * x.astype(np.float64) + y).astype(np.float16)  # 0.5 * x is exact
    assert _same(dy.to_host(), want)


# ---- host arrays -------------------------------------------------------------------------------


def test_host_arrays_of_pairs(sim):
    h = np.array([[1, 2], [3.5, -0.0]], np.float16)
    a = gn.to_device(h, dtype=gn.vec2h)
    assert a.shape == (2,) and "dtype=vec2h" in repr(a) and a.to_host().dtype == np.float16
    assert _same(a.to_host(), h)
    # A device array of f16 whose last axis is 2 is seen as pairs without a copy.
    flat = gn.to_device(np.arange(6, dtype=np.float16).reshape(3, 2))
    assert _same(gn.to_device(flat, dtype=gn.vec2h).to_host(), flat.to_host())
    b = gn.to_device(np.array([[1.01, 3.0]], np.float32), dtype=gn.vec2bf)
    back = np.asarray(b.to_host(), np.float32)
    assert back.shape == (1, 2) and back.tolist() == [[1.0078125, 3.0]]
    assert gn.empty(5, gn.vec2bf).to_host().shape == (5, 2)
    assert gn.vec2bf.dtype.itemsize == 4 and gn.vec2h.dtype == np.dtype((np.float16, (2,)))


# ---- the generated CUDA ------------------------------------------------------------------------


@pytest.mark.slow
def test_generated_cuda_uses_the_packed_intrinsics(kh):
    path = kh.__file__
    mod = transpile_module(Path(path).read_text(), path, "kernels_half2")
    code = next(k for k in mod.kernels if k.name == "ops_vec2h").variants[0].cuda
    for fn in ("gn_padd(x, y)", "gn_psub(x, y)", "gn_pmul(x, y)", "gn_pdiv(x, y)",
               "gn_pfma(x, y, z)", "gn_pneg(x)", "gn_pmul(x, gn_psplat(s))"):
        assert fn in code, fn
    assert "#include <cuda_fp16.h>" in code
    from gpu_native.headers import header_text

    prelude = header_text()

    # The operations are the non-contracting _rn intrinsics on CUDA's own pair types.
    for text in ("typedef __half2 gn_vec2h;", "typedef __nv_bfloat162 gn_vec2bf;",
                 "__hadd2_rn(a, b)", "__hmul2_rn(a, b)", "FMA(a, b, c)", "__hfma2)",
                 "#define gn_bf16x2_fma __hfma2"):
        assert text in prelude, text


# ---- type errors -------------------------------------------------------------------------------

HEADER = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f16, f32,
                        vec2h, vec2bf, vec2f, fma, dot, load_vec2)
"""

ERRORS = {
    "mixing with f32": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2h], s: f32, out: CUDASliceMut[vec2h]):
    i = FlatLayout1D.uid()
    out[i] = a[i] * s  # <-
""", r"is f32, which does not promote to f16: a vector keeps its element type"),
    "mixing with vec2f": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2h], b: CUDASlice[vec2f], out: CUDASliceMut[vec2h]):
    i = FlatLayout1D.uid()
    out[i] = a[i] + b[i]  # <-
""", r"needs two vectors of one type, not vec2h and vec2f"),
    "mixing f16 and bf16 pairs": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2h], b: CUDASlice[vec2bf], out: CUDASliceMut[vec2h]):
    i = FlatLayout1D.uid()
    out[i] = fma(a[i], a[i], b[i])  # <-
""", r"fma\(\) needs two vectors of one type, not vec2h and vec2bf"),
    "no third component": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2h], out: CUDASliceMut[f16]):
    i = FlatLayout1D.uid()
    out[i] = a[i].z  # <-
""", r"a vec2h has no component \.z; it has \.x, \.y"),
    "fma of a vec2f": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2f], out: CUDASliceMut[vec2f]):
    i = FlatLayout1D.uid()
    out[i] = fma(a[i], a[i], a[i])  # <-
""", r"fma\(\) takes packed 16-bit pairs \(vec2h, vec2bf\), not vec2f"),
    "dot of a pair": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[vec2h], out: CUDASliceMut[f16]):
    i = FlatLayout1D.uid()
    out[i] = dot(a[i], a[i])  # <-
""", r"dot\(\) does not take the packed vec2h"),
    "load_vec2 of f32": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[vec2h]):
    i = FlatLayout1D.uid()
    out[i] = load_vec2(a, 2 * i)  # <-
""", r"load_vec2\(\) reads arrays of f16 or bf16, not of f32"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_type_errors(case):
    body, pattern = ERRORS[case]
    source = textwrap.dedent(HEADER + body)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    path = "/tmp/half2_errors.py"
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, path, "half2_errors")
    err = info.value
    assert err.span.line == line, str(err)
    assert f"{path}:{line}:" in str(err) and "^" in str(err)
    assert re.search(pattern, str(err)), str(err)


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib

    from tests.helpers import ROOT

    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n### Packed pairs"):text.index("\n## Statements\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"half2_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Its assert is exact on both backends: __hfma2 rounds each lane once (sm_53 and newer).
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_a_vec2bf_parameter(backend, kh):
    a = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    out = gn.empty(2, gn.vec2bf)
    for p in (gn.vec2bf(1.01, -2.0), (1.01, -2.0)):  # 1.01 rounds to bf16 1.0078125
        run(kh.scale_vec2bf, 2, gn.to_device(a, dtype=gn.vec2bf), p, out)
        got = np.asarray(out.to_host(), np.float64)
        assert got.tolist() == [[1.0078125, -4.0], [_bf16_round(-3 * 1.0078125)[()], -1.0]]
