"""Regression tests for the bugs differential fuzzing (tools/fuzz/) found in the generated code.

Each test is the minimal kernel of one finding.  Those that still fail are marked
``xfail(strict=True)`` with the file and function to fix: when the fix lands the test passes, the
strict marker turns that into a failure, and whoever fixed it removes the marker.

Some findings are visible without a GPU: NVRTC runs on the CPU, so the tests compile the generated
CUDA and read the constants NVRTC put into the PTX (``0f3F800001`` is the float32 whose bits are
0x3F800001).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.spec import Trait

KERNELS = '''\
import math

from gpu_native import (CUDASlice, CUDASliceMut, FlatLayout1D, Kernel1D, bf16, f16, f32, f64,
                        gpu_kernel, i32, i64)


@gpu_kernel(Kernel1D)
def range_near_limit(o: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    count = 0
    for j in range(2147483640, 2147483647, 5):
        count += 1
        if count > 10:
            break
    o[i] = count


@gpu_kernel(Kernel1D)
def range_near_limit_i64(lo: i64, hi: i64, o: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    count = 0
    for j in range(lo, hi, 5):
        count += 1
        if count > 10:
            break
    o[i] = count


@gpu_kernel(Kernel1D)
def f32_midpoint_literal(a: CUDASlice[f32], o: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    o[i] = a[i] * 1.0000000596046448


@gpu_kernel(Kernel1D)
def f32_literal_out_of_range(a: CUDASlice[f32], o: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    o[i] = a[i] * 1e300


@gpu_kernel(Kernel1D)
def f16_literal(a: CUDASlice[f16], o: CUDASliceMut[f16]):
    i = FlatLayout1D.uid()
    o[i] = a[i] * 1.0004882821813226


@gpu_kernel(Kernel1D)
def bf16_literal(o: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    o[i] = f32(bf16(1.0039062500000002))


@gpu_kernel(Kernel1D)
def negated_negative_constant(a: CUDASlice[f32], o: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    o[i] = -f32(-1.5) + (-(f32(-2.0) ** 1)) + a[i]


@gpu_kernel(Kernel1D)
def special_functions_of_a_uniform_value(o: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    o[i] = math.erf(f64(0.5)) + math.lgamma(f64(3.0)) + math.erfc(f64(0.25))


@gpu_kernel(Kernel1D)
def floor_divide(a: CUDASlice[i32], b: CUDASlice[i32], q: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q[i] = a[i] // b[i]


@gpu_kernel(Kernel1D)
def divide_by_abs(a: CUDASlice[i32], b: CUDASlice[i32], q: CUDASliceMut[i32],
                  r: CUDASliceMut[i32], a64: CUDASlice[i64], b64: CUDASlice[i64],
                  q64: CUDASliceMut[i64]):
    i = FlatLayout1D.uid()
    d = abs(b[i])
    q[i] = a[i] // (d if d != 0 else 1)
    r[i] = a[i] % (d if d != 0 else 1)
    d64 = abs(b64[i])
    q64[i] = a64[i] // (d64 if d64 != 0 else 1)


@gpu_kernel(Kernel1D)
def float_floor_divide(a: CUDASlice[f32], b: CUDASlice[f32], q: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    q[i] = a[i] // b[i]


@gpu_kernel(Kernel1D)
def power_zero_of_a_remainder(a: CUDASlice[i32], b: CUDASlice[i32], o: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    o[i] = f32(a[i] % b[i]) ** 0


@gpu_kernel(Kernel1D)
def square_root_by_pow(a: CUDASlice[f64], o: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    o[i] = math.pow(a[i], f64(0.5))
'''

# Python's float 1 + 2**-24 lies exactly halfway between two float32 values; ties to even gives 1.0.
MIDPOINT = 1.0000000596046448
# Just above an f16 midpoint; rounded to f32 first it lands exactly on the midpoint.
HALF_LITERAL = 1.0004882821813226


@pytest.fixture(scope="module")
def kr(tmp_path_factory):
    import importlib
    import sys

    directory = tmp_path_factory.mktemp("fuzz_regressions")
    (directory / "fuzz_regression_kernels.py").write_text(KERNELS)
    sys.path.insert(0, str(directory))
    try:
        importlib.invalidate_caches()
        yield importlib.import_module("fuzz_regression_kernels")
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("fuzz_regression_kernels", None)


def cuda_source(kernel) -> str:
    (variant,) = kernel.variants.values()
    return variant.cuda


def nvrtc_compile(kernel, target: str = "compute_90") -> tuple[bool, str, str]:
    """(compiled, log, PTX) of a kernel's generated CUDA, straight from NVRTC."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    (variant,) = kernel.variants.values()
    from gpu_native.compiler.nvrtc import create_program

    options = [f"--gpu-architecture={target}".encode(), b"-std=c++17"]
    if Trait.USES_HALF in variant.traits:
        from gpu_native.compiler.nvrtc import half_include_dir

        options.append(f"-I{half_include_dir()}".encode())
    program = create_program(variant.cuda.encode(), b"k.cu")
    try:
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        ok = result == nvrtc.nvrtcResult.NVRTC_SUCCESS
        ptx = ""
        if ok:
            _, size = nvrtc.nvrtcGetPTXSize(program)
            buffer = b" " * size
            nvrtc.nvrtcGetPTX(program, buffer)
            ptx = buffer.decode()
        return ok, log.decode(errors="replace").strip("\x00 \n"), ptx
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def f32_immediates(ptx: str) -> set[int]:
    return {int(h, 16) for h in re.findall(r"0f([0-9A-F]{8})", ptx)}


def f32_bits(x) -> int:
    return int(np.float32(x).view(np.uint32))


def xfail_on(request, backend_name: str, reason: str, strict: bool = True) -> None:
    if request.node.callspec.params.get("backend") == backend_name:
        request.applymarker(pytest.mark.xfail(strict=strict, reason=reason))


def run(kernel, *args, n: int = 32):
    kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(n))(*args)
    gn.synchronize()


# ---- range() never wraps -------------------------------------------------------------------------

# Found: the 64-bit counter of an i64 range overflowed past `stop` on its last `i += step` (signed
# overflow, undefined in C++).  Fixed: the counter stops at the limit.


def test_constant_range_next_to_the_i32_limit(kr, backend):
    o = gn.zeros(32, gn.i32)
    run(kr.range_near_limit, o)
    assert list(range(2147483640, 2147483647, 5)) == [2147483640, 2147483645]
    np.testing.assert_array_equal(o.to_host(), 2)


def test_i64_range_next_to_the_i64_limit(kr, backend):
    # Fixed: the 64-bit counter stops at the limit instead of overflowing (passed on the H200).
    hi = (1 << 63) - 1
    o = gn.zeros(32, gn.i32)
    run(kr.range_near_limit_i64, hi - 7, hi, o)
    np.testing.assert_array_equal(o.to_host(), len(range(hi - 7, hi, 5)))


# ---- float literals take the operand's type: the Python float rounded once ------------------------

# Found: emit/cuda.py const_code wrote repr() of the Python float with an 'f' suffix, so NVRTC rounded
# the *decimal* to float32 a second time (wrong at ties) and refused decimals beyond the float32
# range.  Fixed: the float32 value itself is emitted.


def test_f32_literal_at_a_float32_tie_is_rounded_like_python(kr):
    ok, log, ptx = nvrtc_compile(kr.f32_midpoint_literal)
    assert ok, log
    documented = f32_bits(MIDPOINT)  # ties to even: 1.0
    assert documented == 0x3F800000
    # The literal is emitted as the float32 value (1.0f), so NVRTC may fold the product away:
    # no immediate at all, or exactly the documented one.
    assert " * 1.0f)" in kr.f32_midpoint_literal.cuda_source
    assert f32_immediates(ptx) <= {documented}, sorted(hex(b) for b in f32_immediates(ptx))


def test_f32_literal_beyond_the_float32_range_compiles_to_inf(kr):
    ok, log, _ptx = nvrtc_compile(kr.f32_literal_out_of_range)
    assert ok, log


def test_float_literals_on_each_backend(kr, backend, request):
    a = gn.to_device(np.ones(32, np.float32))
    o = gn.zeros(32, gn.f32)
    run(kr.f32_midpoint_literal, a, o)
    np.testing.assert_array_equal(o.to_host(), np.float32(MIDPOINT))  # == 1.0
    run(kr.f32_literal_out_of_range, a, o)
    np.testing.assert_array_equal(o.to_host(), np.inf)


# Found: an f16 constant was __float2half_rn(<f32 literal>), two roundings (f64 → f32 → f16).
# Fixed: __double2half(<f64 literal>).


def test_f16_literal_is_rounded_once(kr):
    ok, log, ptx = nvrtc_compile(kr.f16_literal)
    assert ok, log
    documented = np.float16(HALF_LITERAL)
    assert documented == np.float16(1.0009765625)
    # The f32 immediate that cvt.rn.f16.f32 converts must round to the documented f16.
    # One rounding, on the host: the constant is the documented value's bits.  (It was
    # __double2half(<f64 literal>), an inline-asm cvt.rn.f16.f64 the device compiler does not
    # fold: one conversion per constant per thread.)
    bits = int(documented.view(np.uint16))
    assert f"__ushort_as_half((unsigned short){bits:#06x}u)" in kr.f16_literal.cuda_source
    assert "cvt.rn.f16.f64" not in ptx and "cvt.rn.f16.f32" not in ptx
    assert re.search(rf"mov\.[ub]16\s+%rs\d+, {bits};", ptx), ptx  # an immediate
    halves = {np.float32(np.uint32(b).view(np.float32)).astype(np.float16)
              for b in f32_immediates(ptx)}
    assert halves <= {documented}, halves


# Found (while the f16 and bf16 constants became bit patterns): the simulator rounded a bf16
# constant to f32 and then to bf16, so 1.0039062500000002, just above the bf16 tie 1.00390625,
# was 1.0 on the simulator and 1.0078125 on the GPU (__double2bfloat16).  Fixed: one rounding.


def test_bf16_literal_is_rounded_once_on_each_backend(kr, backend, request):
    assert "__ushort_as_bfloat16((unsigned short)0x3f81u)" in cuda_source(kr.bf16_literal)
    o = gn.zeros(32, gn.f32)
    run(kr.bf16_literal, o)
    np.testing.assert_array_equal(o.to_host(), np.float32(1.0078125))


def test_f16_literal_on_each_backend(kr, backend, request):
    a = gn.to_device(np.ones(32, np.float16))
    o = gn.zeros(32, gn.f16)
    run(kr.f16_literal, a, o)
    np.testing.assert_array_equal(o.to_host(), np.float16(HALF_LITERAL))


# ---- unary minus of a negative constant -------------------------------------------------------------

# Found: CudaEmitter.emit_UnaryOp wrote float negation as f'(-{x})', so the negation of a negative
# constant (-f32(-1.5), -(f32(-2.0) ** 1), -f64(i32(-1))...) became '--1.5f', a decrement NVRTC
# refuses ("expression must be a modifiable lvalue").  Fixed: f'(-({x}))'.


def test_negating_a_negative_float_constant_compiles(kr):
    ok, log, _ptx = nvrtc_compile(kr.negated_negative_constant)
    assert ok, log


def test_negating_a_negative_float_constant_runs(kr, backend, request):
    a_h = np.arange(32, dtype=np.float32)
    o = gn.zeros(32, gn.f32)
    run(kr.negated_negative_constant, gn.to_device(a_h), o)
    np.testing.assert_array_equal(o.to_host(), a_h + np.float32(3.5))


# ---- the simulator's special functions ---------------------------------------------------------------

def test_special_functions_of_a_lane_uniform_value(kr, backend, request):
    o = gn.zeros(32, gn.f64)
    run(kr.special_functions_of_a_uniform_value, o)
    want = math.erf(0.5) + math.lgamma(3.0) + math.erfc(0.25)
    np.testing.assert_allclose(o.to_host(), want, rtol=1e-14)


# ---- abs(INT_MIN) wraps, and a division by it keeps Python's floor correction ----------------------
# Found on the GPU by tools/fuzz_gpu.py (seeds 530, 542): the optimiser took abs() to be
# non-negative and dropped the correction of floor division (fixed in the prelude's gn_iabs).


def test_division_by_abs_of_the_most_negative_integer(kr, backend):
    i32_min, i64_min = -(1 << 31), -(1 << 63)
    a_h = np.array([5, -5, 0, 7, i32_min, -1, 1, 2**31 - 1] * 4, np.int32)
    b_h = np.array([i32_min, i32_min, i32_min, -7, i32_min, 3, -3, i32_min] * 4, np.int32)
    a64_h = a_h.astype(np.int64) * 3
    b64_h = np.where(b_h == i32_min, i64_min, b_h.astype(np.int64))
    q, r, q64 = gn.zeros(32, gn.i32), gn.zeros(32, gn.i32), gn.zeros(32, gn.i64)
    run(kr.divide_by_abs, gn.to_device(a_h), gn.to_device(b_h), q, r, gn.to_device(a64_h),
        gn.to_device(b64_h), q64)

    def wrap(v, bits):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >= 1 << (bits - 1) else v

    def d(b, bits):
        return wrap(abs(int(b)), bits) or 1  # abs(INT_MIN) wraps to INT_MIN

    want_q = [wrap(int(a) // d(b, 32), 32) for a, b in zip(a_h, b_h)]
    want_r = [wrap(int(a) % d(b, 32), 32) for a, b in zip(a_h, b_h)]
    want_q64 = [wrap(int(a) // d(b, 64), 64) for a, b in zip(a64_h, b64_h)]
    assert want_q[:2] == [-1, 0] and want_r[0] == i32_min + 5
    np.testing.assert_array_equal(q.to_host(), want_q)
    np.testing.assert_array_equal(r.to_host(), want_r)
    np.testing.assert_array_equal(q64.to_host(), want_q64)


# ---- f32 floor division follows CPython's algorithm in float32 --------------------------------------
# Found: docs/language.md said float // was "math.floor(a / b) done exactly", while both backends run
# CPython's float_floor_div in float32, whose (a - fmod(a, b)) / b rounds once the quotient exceeds
# 2**24: one float32 ulp off the exact floor for these pairs (found against exact rationals).  The
# docs now document the algorithm; this pins that both backends follow it.
FLOORDIV_CASES = [(-82836750.0, 3.100444), (-536.43567, 1.9663348e-05), (-5.2241244, 1.5678111e-07)]


def test_f32_floor_division_is_cpythons_algorithm_in_float32(kr, backend):
    from fractions import Fraction

    from tools.fuzz.reference import py_divmod

    a_h = np.array([a for a, _ in FLOORDIV_CASES] * 8, np.float32)
    b_h = np.array([b for _, b in FLOORDIV_CASES] * 8, np.float32)
    want = np.array([py_divmod(a, b, "f32")[0] for a, b in zip(a_h, b_h)], np.float32)
    exact = np.array([np.float32(math.floor(Fraction(float(a)) / Fraction(float(b))))
                      for a, b in zip(a_h, b_h)], np.float32)
    assert np.all(want != exact)  # the cases where the documented algorithm is not the exact floor
    q = gn.zeros(len(a_h), gn.f32)
    run(kr.float_floor_divide, gn.to_device(a_h), gn.to_device(b_h), q, n=len(a_h))
    np.testing.assert_array_equal(q.to_host(), want)


def test_float_floor_division_by_zero_gives_numpys_values(kr, backend):
    # Python raises; the kernel's `a // 0.0` was NaN where NumPy's floor_divide gives a / 0.0
    # (an infinity of the quotient's sign, NaN for 0 and NaN); `%` by zero is NaN in both.
    a_h = np.array([5.0, -5.0, 5.0, -5.0, 0.0, np.nan, np.inf, 3.0], np.float32)
    b_h = np.array([0.0, 0.0, -0.0, -0.0, 0.0, 0.0, 0.0, 2.0], np.float32)
    q = gn.zeros(len(a_h), gn.f32)
    run(kr.float_floor_divide, gn.to_device(a_h), gn.to_device(b_h), q, n=len(a_h))
    with np.errstate(all="ignore"):
        want = np.floor_divide(a_h, b_h)
    np.testing.assert_array_equal(q.to_host(), want)
    assert list(want[:4]) == [np.inf, -np.inf, -np.inf, np.inf] and np.isnan(want[4:6]).all()


# ---- `x ** 0` still evaluates x --------------------------------------------------------------------
# Found by tools/fuzz_gpu.py on the H200 and by the host C++ backend (seed 11141): the emitter wrote
# a float `x ** 0` as the constant 1, dropping x and with it the zero-divisor check inside it.


def test_power_zero_still_raises_for_a_zero_divisor_in_its_base(kr, backend):
    a_h = np.arange(32, dtype=np.int32) - 7
    b_h = np.full(32, 3, np.int32)
    b_h[5] = 0
    o = gn.zeros(32, gn.f32)
    kr.power_zero_of_a_remainder.launch(gn.GridDim1D(1), gn.BlockDim1D(32))(
        gn.to_device(a_h), gn.to_device(b_h), o)
    with pytest.raises(gn.KernelZeroDivisionError, match="by zero"):
        gn.synchronize()
    got = o.to_host()
    assert np.all(np.delete(got, 5) == 1.0)


def test_power_zero_keeps_its_base_in_the_generated_cuda(kr):
    source = cuda_source(kr.power_zero_of_a_remainder)
    assert "gn_mod_chk" in source and "(void)" in source


# ---- pow(x, 0.5) is C's pow, not sqrt ---------------------------------------------------------------
# Found on the H200 (seed 12265): NumPy computes x ** 0.5 as sqrt(x), so the simulator (and the
# fuzzer's reference) gave NaN for pow(-inf, 0.5) and -0.0 for pow(-0.0, 0.5), where the GPU, C and
# math.pow give +inf and +0.0.


def test_pow_one_half_of_minus_infinity_and_minus_zero(kr, backend):
    a_h = np.array([-np.inf, -0.0, 0.0, np.inf, 4.0, -4.0, 2.25, np.nan] * 4, np.float64)
    o = gn.zeros(32, gn.f64)
    run(kr.square_root_by_pow, gn.to_device(a_h), o)
    got = o.to_host()
    np.testing.assert_array_equal(got[:7], [np.inf, 0.0, 0.0, np.inf, 2.0, np.nan, 1.5])
    assert not np.signbit(got[1]) and np.isnan(got[7])


# ---- a failing uid stops only itself ---------------------------------------------------------------

def launch_with_one_failing_uid(kr):
    n = 1 << 22  # far more uids than a capped grid has threads
    a_h = np.arange(n, dtype=np.int32)
    b_h = np.full(n, 3, np.int32)
    b_h[5] = 0
    q = gn.empty(n, gn.i32)
    q.fill(-1)
    kr.floor_divide.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(
        gn.to_device(a_h), gn.to_device(b_h), q)
    with pytest.raises(gn.KernelZeroDivisionError):
        gn.synchronize()
    got = q.to_host()
    want = a_h // 3
    done = np.ones(n, bool)
    done[5] = False
    missing = np.flatnonzero(got[done] != want[done])
    assert missing.size == 0, f"{missing.size} uids never ran, e.g. {missing[:5]}"


@pytest.fixture
def uid_grid_cap(monkeypatch):
    """Run uid-only kernels on a capped grid (threads loop over uids), as
    GPU_NATIVE_UID_BLOCKS_PER_SM=8 does."""
    from gpu_native.runtime import kernel

    monkeypatch.setattr(kernel, "UID_BLOCKS_PER_SM", 8)
    kernel.forget_launchers()
    yield
    kernel.forget_launchers()


@pytest.mark.gpu
def test_one_failing_uid_of_a_large_launch_leaves_the_others_done(kr, cuda_backend):
    launch_with_one_failing_uid(kr)


@pytest.mark.gpu
def test_one_failing_uid_on_a_capped_uid_grid_leaves_the_others_done(kr, cuda_backend,
                                                                     uid_grid_cap):
    # A failing uid ends its physical thread (gn_fail_at exits), so the cap applies only to
    # kernels that cannot fail; this one divides, and runs one uid per thread.
    launch_with_one_failing_uid(kr)


CAP_SOURCE = """
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, i32

@gpu_kernel(Kernel1D)
def divides(a: CUDASlice[i32], b: CUDASlice[i32], q: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q[i] = a[i] // b[i]

@gpu_kernel(Kernel1D, bounds_check=False)
def copies(a: CUDASlice[i32], q: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    if i < len(q):
        q[i] = a[i]
"""


def test_the_uid_grid_cap_applies_only_to_kernels_that_cannot_fail(kernel_module, monkeypatch,
                                                                    uid_grid_cap):
    """With a stand-in "cuda" backend (the simulator, one multiprocessor): the grid of a kernel
    with a failure site stays one uid (or chunk) per thread; one without is capped at 8 blocks."""
    from gpu_native.runtime import backend as B
    from gpu_native.runtime import devices
    from gpu_native.runtime.sim_backend import SimBackend

    class Recording(SimBackend):
        name = "cuda"

        def __init__(self):
            super().__init__()
            self.grids = []

        def launch(self, fn, gx, *rest):
            self.grids.append(gx)
            return super().launch(fn, gx, *rest)

    recording = Recording()
    monkeypatch.setitem(B._instances, "cuda", recording)
    monkeypatch.setattr(devices, "_initial_device", lambda backend: 0)  # asks the driver
    k = kernel_module(CAP_SOURCE)
    assert k.divides.variants[()].sites and not k.copies.variants[()].sites
    n = 1 << 16
    a = np.arange(n, dtype=np.int32)
    with B.use("cuda"):
        q = gn.empty(n, gn.i32)
        k.divides.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(
            gn.to_device(a), gn.to_device(np.full(n, 3, np.int32)), q)
        np.testing.assert_array_equal(q.to_host(), a // 3)
        # (The simulator runs the grid it is given, not the _uids loop: only the grid is checked.)
        k.copies.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(gn.to_device(a), q)
    assert recording.grids[0] >= n // 256 // 4  # one uid or one chunk of four per thread
    assert recording.grids[1] == 8
