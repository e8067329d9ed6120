"""Device compiler bugs we work around, each pinned by a kernel that hits it.

* NVRTC 13.0 (sm_90) fuses ``min(min(-a, b), c)`` on 32-bit integers into one ``VIMNMX3``
  instruction and drops the negation of ``-a`` (found by tools/fuzz_gpu.py on an H200, seeds 1951
  and 2552), and tests ``m != 0`` for ``m = max(max(x, 0), 0)`` on the predicate output of a
  ``VIMNMX.RELU`` the wrong way round, so ``1 % (m if m != 0 else 1)`` divided by zero (seed
  3534).  Even an explicit PTX ``setp``/``selp`` pair became a ``VIMNMX``, so integer minima and
  maxima are a PTX ``set`` mask and bit operations, which ptxas does not recognise.
* Both NVVM and ptxas treat an integer abs (even PTX ``abs.s32``) as non-negative, so
  ``min(0, abs(INT_MIN))`` became 0 and ``abs(INT_MIN) // 3`` lost its floor correction (seeds
  530, 3080, 3404).  abs is spelled as a PTX negate-and-select instead.
* ptxas takes ``fabs(x)``, ``x*x`` and ``exp2(x)`` to be non-negative although they may be NaN, and
  folds ``max(-5.0, fabs(x))`` to ``fabs(x)`` and ``min(exp2(x), -3.0)`` to -3.0 (seeds 443,
  9984, 10215, 14661; right with ``--ptxas-options=-O0``).  Float min and max compare the bit
  patterns as integers instead.  For the same reason ``fabs(x) > -1.0`` was folded to true for a
  NaN (seed 2638): a float ``x > c`` or ``x >= c`` against a constant ``c <= 0`` also tests
  that ``x`` is not NaN on its bits, and so does any ``>``/``>=`` whose left side is one of
  those (``abs(v) >= n * 0``, where the constant appears only once NVVM folds ``n * 0``: seed
  24530).  The mirror image, ``2e18 > -v`` for ``v = fabs(x)``, was true for a NaN too (seed
  47326): ``x < c`` or ``x <= c`` against a constant ``c >= 0``, or with a negated ``fabs``
  (...) on the left, tests ``x`` the same way.
* NVVM (NVRTC 13.0 on the H200, and 13.5 here) rewrote ``(long long)(int)((unsigned)x - C)`` as
  ``(long long)x - C`` in a ``_uids`` loop, dropping the 32-bit wrap (seeds 12127, 12273 and
  18127, all right with ``-G`` only; the PTX shows ``add.s64`` where ``add.s32`` belongs).  A cast
  to 64 bits of 32-bit arithmetic that may wrap sign-extends through a PTX ``cvt``
  (``gn_sext32``).
* ptxas (NVRTC 13.0) takes the arithmetic right shift of ``x | C``, for a constant ``C`` with
  the sign bit set, to be non-negative: ``abs((x | C) >> 2)`` became ``(x | C) >> 2`` and
  ``min(b, (x | C) >> 2)`` became ``b`` for ``b`` in {0, 1} (seed 48495; the PTX was right, and
  the SASS lost the compare).  Signed 32-bit and narrower right shifts are a PTX ``bfe.s32``
  (a sign-extending bit-field extract, the same value), which ptxas reads correctly.
* ptxas (NVRTC 13.0 and 13.5) folds a plain ``f32`` multiply by ``±2**k`` (``1 <= |k| <= 3``)
  into the multiply that produced its operand, as one ``FMUL.D8`` (or ``.M4``...) with a single
  rounding: ``b ** 2 / 8`` was ``2**125`` for ``b = 2**64``, not inf (seed 2508).  A literal
  scale is applied as an ``fma.rn`` of ``-0.0`` (``gn_fscale``), which it does not fold.
* NVVM (NVRTC 13.0 and 13.5) takes a float quotient to be non-negative when neither operand can
  be less than zero, overlooking a divisor of ``-0.0``: ``f32(u) / -0.0 < 0`` (``u`` a ``u32``)
  became false although the quotient is ``-inf``, and Python's ``a % q`` took the wrong sign
  (seed 70643, the first run that loaded at computed indices; the PTX shows the compare gone).
  Division by anything but a non-zero constant is a PTX ``div.rn`` in inline assembly
  (``gn_fdiv``), the instruction NVVM emits for it anyway, whose result it cannot reason about.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import headers
from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request, create_program

SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, i32, u32, i16

@gpu_kernel(Kernel1D)
def minmax3(a: CUDASlice[i32], b: CUDASlice[i32], lo: CUDASliceMut[i32], hi: CUDASliceMut[i32],
            ulo: CUDASliceMut[u32], slo: CUDASliceMut[i16]):
    i = FlatLayout1D.uid()
    lo[i] = -min(-a[i], b[i], a[i] * 5)
    hi[i] = -max(-a[i], b[i], a[i] * 5)
    ulo[i] = min(u32(0) - u32(a[i]), u32(b[i]), u32(a[i]) * u32(5))
    slo[i] = min(i16(a[i]), i16(b[i]))
"""


def _wrap(x, bits, signed=True):
    x = np.asarray(x, dtype=object) % (1 << bits)
    if signed:
        x = np.where(x >= (1 << (bits - 1)), x - (1 << bits), x)
    return x


def _reference(a, b):
    a = a.astype(object)
    b = b.astype(object)
    na, a5 = _wrap(-a, 32), _wrap(a * 5, 32)
    lo = _wrap(-np.minimum(np.minimum(na, b), a5), 32)
    hi = _wrap(-np.maximum(np.maximum(na, b), a5), 32)
    ua, ub = _wrap(a, 32, False), _wrap(b, 32, False)
    ulo = np.minimum(np.minimum(_wrap(-ua, 32, False), ub), _wrap(ua * 5, 32, False))
    slo = np.minimum(_wrap(a, 16), _wrap(b, 16))
    return lo, hi, ulo, slo


ABS_SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut2D, FlatLayout1D, i32,
                        i64)

@gpu_kernel(Kernel1D)
def abs_uses(a: CUDASlice[i32], b: CUDASlice[i64], o: CUDASliceMut2D[i32],
             p: CUDASliceMut2D[i64]):
    i = FlatLayout1D.uid()
    o[i, 0] = min(0, abs(a[i]))
    o[i, 1] = max(abs(a[i]), 3)
    o[i, 2] = abs(a[i]) // 3
    p[i, 0] = min(0, abs(b[i]))
    p[i, 1] = max(abs(b[i]), 3)
    p[i, 2] = abs(b[i]) // 3
"""


FLOAT_SOURCE = """
import math
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut2D, FlatLayout1D, f32, f64,
                        i32)

@gpu_kernel(Kernel1D)
def float_minmax(a: CUDASlice[f32], b: CUDASlice[f32], o: CUDASliceMut2D[f32],
                 d: CUDASliceMut2D[f64]):
    i = FlatLayout1D.uid()
    o[i, 0] = min(a[i], b[i])
    o[i, 1] = max(a[i], b[i])
    o[i, 2] = min(abs(a[i]), f32(-3.0))
    o[i, 3] = max(f32(-5.0), abs(a[i]))
    o[i, 4] = max(f32(-36.0), a[i] * a[i])
    o[i, 5] = min(math.exp2(a[i]), f32(-3.0))
    o[i, 6] = f32(1.0) if abs(a[i]) > f32(-1.0) else f32(0.0)
    o[i, 7] = f32(1.0) if a[i] * a[i] >= f32(0.0) else f32(0.0)
    o[i, 8] = f32(1.0) if f32(-3.0) < math.exp2(a[i]) else f32(0.0)
    o[i, 9] = f32(1.0) if abs(a[i]) > abs(i32(-5)) * f32(-1.0) else f32(0.0)
    d[i, 0] = min(f64(a[i]), f64(b[i]))
    d[i, 1] = max(f64(a[i]), f64(b[i]))
    d[i, 2] = max(f64(-5.0), abs(f64(a[i])))
    d[i, 3] = 1.0 if abs(f64(a[i])) >= -0.0 else 0.0
"""
SPECIAL = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -1.5, 3.0, -3.0, 1e-45,
           -1e-45, 3.4e38, -3.4e38]


def _float_cases():
    a = np.array([x for x in SPECIAL for _ in SPECIAL], np.float32)
    b = np.array([y for _ in SPECIAL for y in SPECIAL], np.float32)
    return a, b


def _float_reference(a, b):
    """Python's min/max (the first argument unless the other compares strictly less/greater)."""
    def pymin(x, y):
        return y if y < x else x

    def pymax(x, y):
        return y if y > x else x

    f32 = np.float32
    o = [[pymin(x, y), pymax(x, y), pymin(abs(x), f32(-3.0)), pymax(f32(-5.0), abs(x)),
          pymax(f32(-36.0), x * x), pymin(np.exp2(x), f32(-3.0)), float(abs(x) > -1.0),
          float(x * x >= 0.0), float(np.exp2(x) > -3.0),
          float(abs(x) > -5.0)] for x, y in zip(a, b)]
    d = [[pymin(float(x), float(y)), pymax(float(x), float(y)), pymax(-5.0, abs(float(x))),
          float(abs(float(x)) >= -0.0)] for x, y in zip(a, b)]
    return np.array(o, np.float32), np.array(d, np.float64)


def _same(got, want):
    """Equal as bit patterns, any NaN matching any NaN (the sign of a NaN is not portable)."""
    nan = np.isnan(want)
    return np.array_equal(np.isnan(got), nan) and np.array_equal(
        got[~nan].view(np.uint8), want[~nan].view(np.uint8))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["sim", "host", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_float_min_max_and_compares_keep_nan_and_argument_order(kernel_module, where):
    from gpu_native.runtime.backend import use
    from tools.fuzz import host_cuda

    if where == "host" and host_cuda.compiler() is None:
        pytest.skip("needs a host C++ compiler")
    k = kernel_module(FLOAT_SOURCE).float_minmax
    a, b = _float_cases()
    n = len(a)
    want_o, want_d = _float_reference(a, b)
    if where == "host":
        (variant,) = k.variants.values()
        o, d = np.full((n, 10), 7.0, np.float32), np.full((n, 4), 7.0, np.float64)
        _exited, _record, undefined = host_cuda.launch(variant.cuda, variant.symbol,
                                                       [a, b, o, d], 1, n)
        assert not undefined
    else:
        with use(where):
            go, gd = gn.to_device(np.full((n, 10), 7.0, np.float32)), gn.to_device(
                np.full((n, 4), 7.0, np.float64))
            k.launch(gn.GridDim1D(1), gn.BlockDim1D(n))(gn.to_device(a), gn.to_device(b), go, gd)
            o, d = go.to_host(), gd.to_host()
    for col in range(10):
        assert _same(o[:, col], want_o[:, col]), (col, a[o[:, col] != want_o[:, col]])
    for col in range(4):
        assert _same(d[:, col], want_d[:, col]), col


@pytest.fixture
def kernels(kernel_module):
    return kernel_module(SOURCE)


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_abs_of_the_most_negative_integer_wraps_everywhere_it_is_used(kernel_module, backend):
    k = kernel_module(ABS_SOURCE)
    a = np.array([-2**31, -5, 0, 7, 2**31 - 1, -2**31 + 1, 12, -12], np.int32)
    b = np.array([-2**63, -5, 0, 7, 2**63 - 1, -2**63 + 1, 12, -12], np.int64)
    o = gn.to_device(np.full((len(a), 3), 99, np.int32))
    p = gn.to_device(np.full((len(b), 3), 99, np.int64))
    k.abs_uses.launch(gn.GridDim1D(1), gn.BlockDim1D(len(a)))(gn.to_device(a), gn.to_device(b),
                                                              o, p)
    for got, values, bits in ((o.to_host(), a, 32), (p.to_host(), b, 64)):
        want = []
        for x in values:
            y = abs(int(x)) % (1 << bits)  # abs wraps: abs(INT_MIN) == INT_MIN
            y = y - (1 << bits) if y >> (bits - 1) else y
            want += [min(0, y), max(y, 3), y // 3]
        assert [int(v) for v in got.ravel()] == want


def test_integer_min_and_max_are_selected_in_ptx_and_compile_cleanly(kernels):
    variant = kernels.minmax3.variants[()]
    assert '#include "gpu_native/prelude.cuh"' in variant.cuda
    assert 'GN_SELECT_MINMAX(int, int, "lt.u32.s32", gn_min)' in headers.header_text()
    image = compile_request(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                         arch="sm_90", label=variant.symbol))
    assert image.log.strip("\x00").strip() == ""
    assert image.image[:4] == b"\x7fELF"


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_three_way_min_and_max_with_a_negated_operand(kernels, backend):
    rng = np.random.default_rng()
    n = 4096
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    a[:4] = [-1, 7, -1977636835, 0]
    b[:4] = [-7, 14, 1331583615, 0]
    outs = [gn.to_device(np.full(n, fill, dt)) for fill, dt in
            ((12345, np.int32), (12345, np.int32), (12345, np.uint32), (123, np.int16))]
    kernels.minmax3.launch(gn.GridDim1D(n // 128), gn.BlockDim1D(128))(
        gn.to_device(a), gn.to_device(b), *outs)
    for got, want, name in zip(outs, _reference(a, b), ("lo", "hi", "ulo", "slo")):
        np.testing.assert_array_equal(got.to_host().astype(object), want, err_msg=name)


SELECT_SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut2D, FlatLayout1D, f32, f64,
                        i32, u32)

@gpu_kernel(Kernel1D)
def mod_by_max(a: CUDASlice[i32], o: CUDASliceMut2D[i32], u: CUDASliceMut2D[u32]):
    i = FlatLayout1D.uid()
    o[i, 0] = 1 % (max(a[i], 0, 0) if (max(a[i], 0, 0) != 0) else 1)
    o[i, 1] = 7 % (min(a[i], 0, 0) if (min(a[i], 0, 0) != 0) else 5)
    u[i, 0] = u32(9) % (max(u32(a[i]), u32(0), u32(0)) if max(u32(a[i]), u32(0)) != u32(0)
                        else u32(4))
"""

# Fuzz seed 2508 and the other scales ptxas folds into a multiply (FMUL.D8 .. FMUL.M8).
SCALE_SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, CUDASliceMut2D,
                        FlatLayout1D, f32, f64)

@gpu_kernel(Kernel1D)
def square_over_eight(b: CUDASlice[f32], o: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    o[i] = -(((b[i] ** 2) / f32(8)) + f64(43.007294))

@gpu_kernel(Kernel1D)
def scaled_products(a: CUDASlice[f32], b: CUDASlice[f32], o: CUDASliceMut2D[f32]):
    i = FlatLayout1D.uid()
    p = a[i] * b[i]
    o[i, 0] = p / f32(8)
    o[i, 1] = (a[i] * b[i]) * f32(4)
    o[i, 2] = f32(0.5) * (a[i] * b[i])
    o[i, 3] = (a[i] * b[i]) / f32(-2)
    o[i, 4] = (a[i] * b[i]) * f32(0.125)
    o[i, 5] = (a[i] * b[i]) * -8
    o[i, 6] = p / 4
    o[i, 7] = -p * f32(2)
"""
SCALES = [(1, 8), (4, 1), (0.5, 1), (1, -2), (0.125, 1), (-8, 1), (1, 4), (-2, 1)]


def _ptx(variant) -> str:
    """The PTX NVRTC makes of a variant (compute_90), for checks that need no GPU."""
    from cuda.bindings import nvrtc

    program = create_program(variant.cuda.encode(), b"k.cu")
    options = [b"--gpu-architecture=compute_90", b"-std=c++17"]
    assert nvrtc.nvrtcCompileProgram(program, len(options), options)[0] == \
        nvrtc.nvrtcResult.NVRTC_SUCCESS
    size = nvrtc.nvrtcGetPTXSize(program)[1]
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(program, ptx)
    nvrtc.nvrtcDestroyProgram(program)
    return ptx.decode(errors="replace")


def _run(k, where, inputs, outs, grid=1):
    """Launch ``k`` on the simulator, the host C++ build of its CUDA, or the GPU; the outputs."""
    from gpu_native.runtime.backend import use
    from tools.fuzz import host_cuda

    if where == "host":
        if host_cuda.compiler() is None:
            pytest.skip("needs a host C++ compiler")
        (variant,) = k.variants.values()
        _exited, _record, undefined = host_cuda.launch(variant.cuda, variant.symbol,
                                                       [*inputs, *outs], grid, len(outs[0]) // grid)
        assert not undefined
        return outs
    with use(where):
        dev = [gn.to_device(o) for o in outs]
        k.launch(gn.GridDim1D(grid), gn.BlockDim1D(len(outs[0]) // grid))(
            *[gn.to_device(a) for a in inputs], *dev)
        return [d.to_host() for d in dev]


WHERE = pytest.mark.parametrize(
    "where", ["sim", "host", pytest.param("cuda", marks=pytest.mark.gpu)])


def test_integer_min_and_max_never_reach_ptxas_as_a_min_or_max(kernel_module):
    """No PTX min or max for ptxas to fuse: a set mask and bit operations (the SASS of this
    kernel has no VIMNMX with NVRTC 13.0 or 13.5)."""
    for variant in kernel_module(SELECT_SOURCE).mod_by_max.variants.values():
        ptx = _ptx(variant)
        body = ptx.split(".entry ", 1)[1]
        assert "set.gt.u32.s32" in body and "set.lt.u32.s32" in body and "set.gt.u32.u32" in body
        assert not any(op in body for op in ("max.s32", "min.s32", "max.u32", "min.u32"))


@pytest.mark.slow
@WHERE
def test_a_divisor_guarded_by_a_comparison_of_a_max_with_zero(kernel_module, where):
    """Fuzz seed 3534: ptxas (NVRTC 13.0) tested m != 0 for m = max(max(x, 0), 0) on the predicate
    of a VIMNMX.RELU the wrong way round, and reported a division by zero."""
    k = kernel_module(SELECT_SOURCE).mod_by_max
    a = np.array([-5, 0, 1, 2, 3, 7, -2**31, 2**31 - 1] * 8, np.int32)
    o, u = _run(k, where, [a], [np.full((len(a), 2), 99, np.int32),
                                np.full((len(a), 2), 99, np.uint32)])
    xs = a.tolist()
    assert o[:, 0].tolist() == [1 % (x if x > 0 else 1) for x in xs]
    assert o[:, 1].tolist() == [7 % (x if x < 0 else 5) for x in xs]
    assert u[:, 0].tolist() == [9 % (x % 2**32 if x else 4) for x in xs]


def test_a_power_of_two_scale_is_a_separate_rounding_in_ptx(kernel_module):
    """The scale is an `fma.rn` of -0.0, which ptxas does not fold into the product's multiply
    (it did for a plain `mul.f32` by 0.125: FMUL.D8)."""
    scales = {"0f3E000000", "0f3E800000", "0f3F000000", "0fBF000000", "0f40000000", "0f40800000",
              "0fC1000000"}
    mod = kernel_module(SCALE_SOURCE)
    for variant in [*mod.square_over_eight.variants.values(),
                    *mod.scaled_products.variants.values()]:
        for entry in _ptx(variant).split(".entry ")[1:]:
            lines = [line.replace(",", " ").replace(";", " ").split()
                     for line in entry.splitlines()]
            held = {w[1] for w in lines if w[:1] == ["mov.f32"] and w[2] in scales}
            uses = [w[0] for w in lines if w and w[0] in ("mul.f32", "mul.rn.f32", "fma.rn.f32")
                    and set(w[2:]) & (scales | held)]
            assert uses and set(uses) == {"fma.rn.f32"}, uses


SCALE_WHERE_SOURCE = """
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut2D,
                        FlatLayout1D, f32, local_array)

@gpu_device
def eighth(x: f32) -> f32:
    return x / f32(8)

@gpu_kernel(Kernel1D)
def scale_sites(a: CUDASlice[f32], o: CUDASliceMut2D[f32]):
    i = FlatLayout1D.uid()
    v = a[i]
    w = v * v if v > f32(0) else v
    o[i, 0] = a[i] * f32(4) + v / f32(2) - f32(0.25) * v
    o[i, 1] = -w / f32(8)
    o[i, 2] = eighth(v)
    t = local_array(f32, 1)
    t[0] = v * v
    o[i, 3] = t[0] * f32(0.5)
"""


def test_a_scale_is_kept_apart_only_where_its_operand_may_be_a_product(kernel_module):
    """A load (directly or through a variable) cannot be folded into: the plain multiply stays
    contractible (heat_stencil's `around - 4 * center`).  A variable that may hold a product and
    a device function's parameter and an element of a per-thread array (kept in registers) get
    the separate rounding."""
    cuda = next(iter(kernel_module(SCALE_WHERE_SOURCE).scale_sites.variants.values())).cuda
    assert "= (((a[i] * 4.0f) + (v / 2.0f)) - (0.25f * v));" in cuda
    assert "= gn_fscale((-(w)), 0.125f);" in cuda
    assert "return gn_fscale(x, 0.125f);" in cuda
    assert "= gn_fscale(t[0LL], 0.5f);" in cuda


@pytest.mark.slow
@WHERE
def test_float32_square_over_eight_overflows_to_infinity(kernel_module, where):
    """Fuzz seed 2508: b**2 / 8 with b = 2**64 was 2**125 on the GPU (one FMUL.D8), not inf."""
    k = kernel_module(SCALE_SOURCE).square_over_eight
    b = np.array([2.0**64, -2.0**64, 1.5, 3e38, 1e19, 2.0**63] * 8, np.float32)
    (got,) = _run(k, where, [b], [np.full(len(b), 7.0, np.float64)])
    with np.errstate(over="ignore"):
        want = -((b ** 2) / np.float32(8)).astype(np.float64) - 43.007294
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
@WHERE
def test_power_of_two_scales_of_a_product_round_twice(kernel_module, where):
    """Each product is rounded (to inf, or in the subnormal range) before it is scaled."""
    k = kernel_module(SCALE_SOURCE).scaled_products
    rng = np.random.default_rng()
    base = np.array([2.0**64, 2.0**63 * 1.5, -2.0**64, 2.0**-70, 1.0 + 2.0**-20, 3.0, -2.5e-38,
                     1e-30, 0.0, -0.0, np.inf, np.nan], np.float32)
    a = np.concatenate([base.repeat(len(base)), rng.standard_normal(64).astype(np.float32)])
    b = np.concatenate([np.tile(base, len(base)),
                        (rng.standard_normal(64) * 1e-19).astype(np.float32)])
    a = np.concatenate([a, np.full(256 - len(a), 1.5, np.float32)])
    b = np.concatenate([b, np.full(256 - len(b), 2.0**-148, np.float32)])
    (got,) = _run(k, where, [a, b], [np.full((len(a), 8), 7.0, np.float32)], grid=2)
    with np.errstate(all="ignore"):
        p = a * b
        want = np.stack([p * np.float32(m) / np.float32(d) for m, d in SCALES], axis=1)
    assert _same(got, want), np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))[:8]


# Fuzz seed 12127, as the reducer left it: NVVM turned the sign extension of the wrapped 32-bit
# subtraction into a 64-bit subtraction in the `_uids` entry point, so the divisor lost its wrap.
SEXT_SOURCE = """
import math
from gpu_native import (CUDASlice2D, CUDASliceMut2D, FlatLayout1D, Kernel1D, f32, f64, gpu_kernel,
                        i32, i64, u32)

@gpu_kernel(Kernel1D)
def wrapped_divisor(in_f32: CUDASlice2D[f32], in_f64: CUDASlice2D[f64], in_i32: CUDASlice2D[i32],
                    in_i64: CUDASlice2D[i64], in_u32: CUDASlice2D[u32],
                    out_f32: CUDASliceMut2D[f32], out_i64: CUDASliceMut2D[i64],
                    out_u32: CUDASliceMut2D[u32]):
    i = FlatLayout1D.uid()
    out_f32[i, 1] = (round((in_f64[i, 0] if (math.isnan(in_f32[i, 2]) or bool(in_i64[i, 0]) or
                                          ((-1) != 1)) else (-71.4)))
                     % (in_u32[i, 2] ^ (in_i32[i, 1] - 1971618052)))
    out_i64[i, 1] = i64(max(in_f64[i, 0], (in_i32[i, 2] if (in_i32[i, 1] != in_u32[i, 0])
                                           else in_f32[i, 1])))
    out_u32[i, 1] = in_u32[i, 2]
"""


def _wrapped_divisor_case(n=256, seed=12127):
    rng = np.random.default_rng(seed)
    f32a = rng.normal(0, 100, (n, 3)).astype(np.float32)
    f64a = rng.uniform(-1e17, 1e17, (n, 3))
    i32a = rng.integers(-2**31, 2**31, (n, 3), dtype=np.int64).astype(np.int32)
    i64a = rng.integers(-2**62, 2**62, (n, 3), dtype=np.int64)
    u32a = rng.integers(0, 2**32, (n, 3), dtype=np.uint64).astype(np.uint32)
    # The row the H200 got wrong (-2.4159188e9 for 21898670).
    f64a[1, 0], i32a[1, 1], u32a[1, 2] = 8.166229320052274e+17, -1073071357, 28
    want_f32, want_i64 = [], []
    for r in range(n):
        d = (int(i32a[r, 1]) - 1971618052) % 2**32
        d = int(u32a[r, 2]) ^ (d - 2**32 if d >= 2**31 else d)
        if d == 0:
            u32a[r, 2] ^= 1
            d ^= 1
        want_f32.append(np.float32(round(float(f64a[r, 0])) % d))
        other = (np.float32(i32a[r, 2]) if int(i32a[r, 1]) != int(u32a[r, 0]) else f32a[r, 1])
        want_i64.append(int(max(float(f64a[r, 0]), float(other))))
    return (f32a, f64a, i32a, i64a, u32a), np.array(want_f32, np.float32), want_i64


def test_a_wrapped_32_bit_result_is_sign_extended_after_the_wrap_in_ptx(kernel_module):
    """What NVRTC makes of it, checked here without a GPU: every entry point keeps the
    subtraction in 32 bits (NVRTC 13.5 emitted `add.s64 ..., -1971618052` in `_uids`)."""
    from cuda.bindings import nvrtc

    variant = next(iter(kernel_module(SEXT_SOURCE).wrapped_divisor.variants.values()))
    assert "gn_sext32(" in variant.cuda.split("extern \"C\" __global__", 1)[1]
    program = create_program(variant.cuda.encode(), b"k.cu")
    options = [b"--gpu-architecture=compute_90", b"-std=c++17"]
    assert nvrtc.nvrtcCompileProgram(program, len(options), options)[0] == \
        nvrtc.nvrtcResult.NVRTC_SUCCESS
    size = nvrtc.nvrtcGetPTXSize(program)[1]
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(program, ptx)
    nvrtc.nvrtcDestroyProgram(program)
    entries = ptx.decode(errors="replace").split(".entry ")[1:]
    assert len(entries) >= 2  # the kernel and its `_uids` entry point
    for entry in entries:
        uses = [line.split()[0] for line in entry.splitlines() if "1971618052" in line]
        assert uses and all(op.endswith(".s32") for op in uses), (entry.split("(")[0], uses)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["sim", "host", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_wrapped_32_bit_divisor_keeps_its_wrap(kernel_module, where):
    from gpu_native.runtime.backend import use
    from tools.fuzz import host_cuda

    if where == "host" and host_cuda.compiler() is None:
        pytest.skip("needs a host C++ compiler")
    k = kernel_module(SEXT_SOURCE).wrapped_divisor
    inputs, want_f32, want_i64 = _wrapped_divisor_case()
    n = len(want_f32)
    outs = [np.full((n, 2), 7, np.float32), np.full((n, 2), 7, np.int64),
            np.full((n, 2), 7, np.uint32)]
    if where == "host":
        (variant,) = k.variants.values()
        _exited, _record, undefined = host_cuda.launch(variant.cuda, variant.symbol,
                                                       [*inputs, *outs], 1, n)
        assert not undefined
    else:
        with use(where):
            dev = [gn.to_device(o) for o in outs]
            k.launch(gn.GridDim1D(2), gn.BlockDim1D(n // 2))(
                *[gn.to_device(a) for a in inputs], *dev)
            outs = [d.to_host() for d in dev]
    assert np.array_equal(outs[0][:, 1], want_f32), np.flatnonzero(outs[0][:, 1] != want_f32)
    assert outs[1][:, 1].tolist() == want_i64
    assert np.array_equal(outs[2][:, 1], inputs[4][:, 2])


COMPARE_SOURCE = """
import math
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, CUDASliceMut2D,
                        FlatLayout1D, f32, i32, i64)

@gpu_kernel(Kernel1D)
def folded_compares(a: CUDASlice[f32], n: CUDASlice[i32], o: CUDASliceMut2D[i32]):
    i = FlatLayout1D.uid()
    o[i, 0] = 1 if abs(a[i]) >= n[i] * 0 else 6
    o[i, 1] = 1 if a[i] * a[i] > n[i] * 0 - 1 else 6
    o[i, 2] = 1 if n[i] * 0 <= math.exp2(a[i]) else 6
    v: f32 = abs(a[i])
    o[i, 3] = 1 if 2081809256878079953 > -v else 6
    o[i, 4] = 1 if -abs(a[i]) <= n[i] * 0 else 6
    o[i, 5] = 1 if -(a[i] * a[i]) < f32(0.5) else 6


@gpu_kernel(Kernel1D)
def guarded_branch(a: CUDASlice[f32], n: CUDASlice[i64], o: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v: f32 = abs(f32(-16.6) - a[i])
    r: f32 = f32(1.0)
    if (n[i] < 2081809256878079953) and (2081809256878079953 > -v):
        r = f32(2.0)
    o[i] = r
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["sim", "host", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_compare_whose_constant_appears_only_after_folding_keeps_nan(kernel_module, where):
    """Fuzz seed 24530: `abs(v) >= n * 0` was true for a NaN `v` on the H200 (NVVM folds `n * 0`
    to 0, then ptxas takes fabs to be non-negative).  Columns 3-5 are the mirror image, which the
    emitter guards since fuzz seed 47326 (see the next test: in a select, as here, the H200 kept
    the compare even without the guard; in a branch it did not)."""
    from gpu_native.runtime.backend import use
    from tools.fuzz import host_cuda

    if where == "host" and host_cuda.compiler() is None:
        pytest.skip("needs a host C++ compiler")
    k = kernel_module(COMPARE_SOURCE).folded_compares
    a = np.array([x for x in SPECIAL for _ in range(4)], np.float32)
    n = np.array([0, 5, -7, 2**31 - 1] * len(SPECIAL), np.int32)
    want = np.array([[6 if math.isnan(x) else 1] * 6 for x in a.tolist()], np.int32)
    o = np.full((len(a), 6), 99, np.int32)
    if where == "host":
        (variant,) = k.variants.values()
        _exited, _record, undefined = host_cuda.launch(variant.cuda, variant.symbol, [a, n, o], 1,
                                                       len(a))
        assert not undefined
    else:
        with use(where):
            go = gn.to_device(o)
            k.launch(gn.GridDim1D(1), gn.BlockDim1D(len(a)))(gn.to_device(a), gn.to_device(n), go)
            o = go.to_host()
    assert np.array_equal(o, want), a[(o != want).any(axis=1)]


@pytest.mark.slow
@WHERE
def test_a_branch_on_a_compare_with_a_negated_abs_keeps_nan(kernel_module, where):
    """Fuzz seed 47326: `if (n < C) and (C > -v)` for `v = abs(x)` and a constant `C > 0` took
    the branch for a NaN `x` on the H200: the SASS kept only `n < C` (NVRTC 13.0)."""
    k = kernel_module(COMPARE_SOURCE).guarded_branch
    a = np.array([x for x in SPECIAL for _ in range(2)], np.float32)
    n = np.array([5, 2**63 - 1] * len(SPECIAL), np.int64)
    (o,) = _run(k, where, [a, n], [np.full(len(a), 99.0, np.float32)])
    want = [2.0 if m < 2081809256878079953 and not math.isnan(x) else 1.0
            for x, m in zip(a.tolist(), n.tolist())]
    assert o.tolist() == want, a[o != np.array(want, np.float32)]



SHIFT_SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut2D, FlatLayout1D, i32, i16, u32

@gpu_kernel(Kernel1D)
def shifted_negatives(a: CUDASlice[i32], u: CUDASlice[u32], o: CUDASliceMut2D[i32]):
    i = FlatLayout1D.uid()
    b = i32(u[i] < 3)
    o[i, 0] = min(min(b, 1), (a[i] | (-552652785)) >> 2)
    o[i, 1] = abs((a[i] | (-552652785)) >> 2)
    o[i, 2] = max(b, (a[i] | (-2147483647 - 1)) >> 3)
    o[i, 3] = abs((a[i] | (-2147483647 - 1)) >> 1)
    o[i, 4] = i32(i16(a[i] | (-32768)) >> i16(2))
"""


def test_signed_right_shifts_reach_ptxas_as_a_bit_field_extract(kernel_module):
    """No PTX shr.s32 for ptxas to misjudge the sign of (seed 48495)."""
    (variant,) = kernel_module(SHIFT_SOURCE).shifted_negatives.variants.values()
    for entry in _ptx(variant).split(".entry ")[1:]:
        assert "bfe.s32" in entry
        assert "shr.s32" not in entry


@pytest.mark.slow
@WHERE
def test_a_right_shift_of_a_value_with_its_sign_bit_set_stays_negative(kernel_module, where):
    """Fuzz seed 48495: min(b, (x | C) >> 2) was b on the H200 for b in {0, 1} and a negative C,
    and abs((x | C) >> 2) was (x | C) >> 2: ptxas took the shift to be non-negative."""
    k = kernel_module(SHIFT_SOURCE).shifted_negatives
    a = np.array([0, 1, -1, 255, -29, 2**31 - 1, -2**31, 12345678] * 4, np.int32)
    u = np.array([0, 1, 2, 3, 31, 2**32 - 1, 7, 2] * 4, np.uint32)
    (o,) = _run(k, where, [a, u], [np.full((len(a), 5), 99, np.int32)])
    want = []
    for x, y in zip(a.tolist(), u.tolist()):
        b = int(y < 3)
        c16 = ((x | -32768) + 2**15) % 2**16 - 2**15
        want.append([min(b, (x | -552652785) >> 2), abs((x | -552652785) >> 2),
                     max(b, (x | -2**31) >> 3), abs((x | -2**31) >> 1), c16 >> 2])
    assert o.tolist() == want


QUOTIENT_SOURCE = """
import math
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut2D, FlatLayout1D, f32, f64,
                        i32, u32)

@gpu_kernel(Kernel1D)
def negative_quotients(u: CUDASlice[u32], a: CUDASlice[f32], s: CUDASlice[f32],
                       o: CUDASliceMut2D[f32], d: CUDASliceMut2D[f64]):
    i = FlatLayout1D.uid()
    q = f32(u[i]) / f32(-0.0)
    o[i, 0] = a[i] % q
    o[i, 1] = f32(1.0) if q < f32(0.0) else f32(0.0)
    o[i, 2] = a[i] // q
    r = f32(1.0) / math.sqrt(s[i])
    o[i, 3] = f32(1.0) if r < f32(0.0) else f32(0.0)
    p = f64(u[i]) / -0.0
    d[i, 0] = f64(a[i]) % p
    d[i, 1] = 1.0 if p < 0.0 else 0.0


@gpu_kernel(Kernel1D)
def quotient_sign(u: CUDASlice[u32], s: CUDASlice[f32], o: CUDASliceMut2D[i32]):
    i = FlatLayout1D.uid()
    o[i, 0] = 1 if f32(u[i]) / f32(-0.0) < f32(0.0) else 0
    o[i, 1] = 1 if f32(1.0) / math.sqrt(s[i]) < f32(0.0) else 0
"""


def test_a_quotient_that_may_be_negative_keeps_its_sign_tests_in_ptx(kernel_module):
    """NVVM (13.0 and 13.5) takes x / y to be non-negative when neither operand can be less than
    zero, and folds the compare below to false although y = -0.0 makes the quotient -inf (seed
    70643).  Division by anything but a non-zero constant is an opaque PTX div.rn (gn_fdiv), and
    the float compare of each quotient survives: without it the kernel stores a constant."""
    m = kernel_module(QUOTIENT_SOURCE)
    (variant,) = m.quotient_sign.variants.values()
    body = variant.cuda.split('extern "C" __global__', 1)[1]
    assert body.count("gn_fdiv(") >= 2
    entries = _ptx(variant).split(".entry ")[1:]
    assert len(entries) >= 2  # the kernel and its `_uids` entry point
    for entry in entries:
        compares = [line for line in entry.splitlines() if "setp." in line and ".f32" in line]
        assert len(compares) >= 2, entry.split("(")[0]
    # A non-zero constant divisor stays a plain division (x / 2 can become x * 0.5).
    plain = kernel_module(QUOTIENT_SOURCE.replace("f32(-0.0)", "f32(3.0)")).quotient_sign
    assert "gn_fdiv(f32" not in next(iter(plain.variants.values())).cuda


@pytest.mark.slow
@WHERE
def test_python_modulo_and_compares_of_a_quotient_by_negative_zero(kernel_module, where):
    """Fuzz seed 70643: a % (f32(u) / -0.0) was a for positive a on the H200 (Python gives -inf,
    the divisor's sign) and -inf for negative a (Python gives a)."""
    k = kernel_module(QUOTIENT_SOURCE).negative_quotients
    a = np.array([3.0, 7.0, -8.5, -1.5, 0.0, -0.0, np.inf, -np.inf, np.nan, 2.5e-39] * 4,
                 np.float32)
    u = np.array([1, 2**32 - 1, 0, 5] * 10, np.uint32)
    s = np.array([-0.0, 0.0, 4.0, -1.0, np.inf] * 8, np.float32)
    o, d = _run(k, where, [u, a, s], [np.full((len(a), 4), 7, np.float32),
                                      np.full((len(a), 2), 7, np.float64)])
    want_o, want_d = [], []
    with np.errstate(all="ignore"):
        for x, y, z in zip(a.tolist(), u.tolist(), s.tolist()):
            q = -math.inf if y else math.nan  # f32(u) / -0.0
            r = float(np.float32(1.0) / np.sqrt(np.float32(z)))
            want_o.append([x % q if not math.isnan(q) else math.nan, float(q < 0),
                           x // q if not math.isnan(q) else math.nan, float(r < 0)])
            want_d.append([x % q if not math.isnan(q) else math.nan, float(q < 0)])
    assert _same(o, np.array(want_o, np.float32)), (o, want_o)
    assert _same(d, np.array(want_d, np.float64)), (d, want_d)
