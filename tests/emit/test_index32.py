"""The 32-bit index entry point ``<symbol>_i32`` (gpu_native.emit.index32).

It must compute exactly what the main entry point computes for every launch the launcher runs it
for.  Locally that is shown by running both, built for the CPU with UBSan (a signed 32-bit
overflow is undefined behaviour there, and is reported), on kernels written to sit on the edges
of the range analysis; on the GPU by the kernels of ``test_gpu_runtime`` and the arrays of more
than 2**31 elements below.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import abi, ir
from gpu_native.emit.index32 import Index32Emitter, IndexRanges, emit_index32, wants_index32
from gpu_native.rewrite import transpile_module
from gpu_native.spec import Trait
from tools.fuzz import host_cuda

HEADER = """\
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, FlatLayout1D, FlatLayout2D, f32, i32, u32, i64, u8,
                        block_idx, block_dim, thread_idx, local_array, unsafe)
"""


def checked(body: str):
    module = transpile_module(HEADER + textwrap.dedent(body), "index32_case.py", "index32_case")
    (ck,) = module.checked
    (kernel,) = ck.specializations
    (build,) = module.kernels
    return kernel, build.variants[0]


def var_types(kernel: ir.Kernel) -> dict[str, str]:
    emitter = Index32Emitter(kernel, "f.py")
    return {v.name: emitter.var_ctype(v) for v in kernel.locals}


# ---- which values are narrowed --------------------------------------------------------------------

MIXED = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[i64], o: CUDASliceMut[i64]):
    i = FlatLayout1D.uid()
    n = len(a)
    last = n - 1
    big = i * 1000000000
    near = i + 2147483600
    m = (i - 3) // 2 + (i - 5) % 3
    loaded = a[i % n] if n > 0 else 0
    s = i64(0)
    for j in range(i, n, 3):
        s += j
    for q in range(i, n, 4194304):
        s += q
    for r in range(n % 16):
        s += r
    t = min(i, last) - max(i - 7, 0)
    w = i64(0)
    while w < 5:
        w += 1
    if i < n:
        o[i] = big + near + m + s + t + w + loaded + a[last - i]
"""


def test_values_within_32_bits_are_narrowed_and_the_others_are_not():
    kernel, _ = checked(MIXED)
    types = var_types(kernel)
    # uids and extents are at most 2**31 - 2**20 in the _i32 entry point: these stay within 32
    # bits, and so does a loop up to an extent in steps of 3 (j: its counter ends below n + 3).
    for name in ("i", "n", "last", "m", "r", "t", "j"):
        assert types[name] == "int", name
    # A product or sum that may pass 2**31, a loaded value, a loop-carried sum, a while counter
    # (its growth is widened to the type), and the variable of a loop whose counter may step past
    # 2**31 - 1 (q: n - 1 + 2**22) keep 64 bits.
    for name in ("big", "near", "loaded", "s", "w", "q"):
        assert types[name] == "long long", name


def test_ranges_are_sound_bounds():
    kernel, _ = checked(MIXED)
    ranges = IndexRanges(kernel)
    by_name = {v.name: ranges.var_range(v) for v in kernel.locals}
    assert by_name["i"] == (0, abi.INDEX32_MAX_ELEMENTS - 1)
    assert by_name["last"] == (-1, abi.INDEX32_MAX_ELEMENTS - 1)
    assert by_name["m"][0] <= (0 - 3) // 2 + (0 - 5) % 3
    assert by_name["big"] == (0, (abi.INDEX32_MAX_ELEMENTS - 1) * 1000000000)
    assert by_name["s"] == by_name["loaded"] == (-(1 << 63), (1 << 63) - 1)  # may wrap: anything


def test_the_entry_point_is_emitted_for_kernels_the_launcher_runs_it_for():
    kernel, variant = checked(MIXED)
    assert kernel.traits.uid_only and not wants_index32(kernel)  # run over its logical uids
    assert Trait.INDEX32 not in variant.traits
    stencil, variant = checked(STENCIL_2D)
    assert wants_index32(stencil) and Trait.INDEX32 in variant.traits
    assert f"void {stencil.symbol}{abi.INDEX32_SUFFIX}(" in variant.cuda


# ---- the same results as the main entry point (host build, UBSan) ------------------------------

needs_cxx = pytest.mark.skipif(host_cuda.compiler() is None, reason="needs a host C++ compiler")

STENCIL_2D = """
@gpu_kernel(Kernel1D)
def k(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32], o: CUDASliceMut[i64]):
    p = block_idx.x * block_dim.x + thread_idx.x
    w = src.shape[1]
    h = src.shape[0]
    y = i64(p) // w
    x = i64(p) % w
    if y < h:
        # A 1-D launch over a 2-D array: each thread owns one (y, x), which the race rules
        # cannot see through // and %.
        with unsafe():
            if x == 0 or y == 0 or x == w - 1 or y == h - 1:
                dst[y, x] = src[y, x]
            else:
                c = src[y, x]
                dst[y, x] = c + 0.25 * (src[y - 1, x] + src[y + 1, x] + src[y, x - 1]
                                        + src[y, x + 1])
            o[p] = (y - 2) * (x + 3) // 7 - (x - y) % 5 + min(x, y) - max(x - 9, y)
"""

LOOPS = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[i64], o: CUDASliceMut[i64]):
    p = block_idx.x * block_dim.x + thread_idx.x
    n = len(a)
    acc = i64(0)
    for j in range(n - 1, -1, -1):
        acc += a[j] * (j + 1)
    for j in range(0, n, 7):
        acc -= j
    q = i64(p)
    if q < n:
        with unsafe():
            o[q] = acc + (q << 2) + (q >> 1) + (q & 5) + (q | 2) + (q ^ 3) + (-q) + (~q)
"""

LOCAL = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], o: CUDASliceMut[f32]):
    tile = local_array(f32, (4, 8))
    i = i64(block_idx.x * block_dim.x + thread_idx.x)
    # 32 for the 40 elements the test passes, which the checker cannot know: t // 8 is checked.
    for t in range(i32(len(a)) - 8):
        tile[t // 8, t % 8] = a[(i + t) % len(a)]
    if i < len(o):
        with unsafe():
            o[i] = tile[3 - i % 4, 7 - i % 8] + tile[i % 4, i % 8]
"""


def _run_both(body: str, arrays: list[np.ndarray], grid: int, block: int):
    kernel, variant = checked(body)
    cuda = variant.cuda
    symbol32 = kernel.symbol + abi.INDEX32_SUFFIX
    if f" {symbol32}(" not in cuda:
        cuda += emit_index32(kernel, "index32_case.py")
    results = []
    for symbol in (kernel.symbol, symbol32):
        copies = [a.copy() for a in arrays]
        exited, record, undefined = host_cuda.launch(cuda, symbol, copies, grid, block)
        assert not undefined, f"{symbol}: {undefined[:3]}"
        results.append((exited, bytes(record), copies))
    return results


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("shape", [(5, 7), (1, 13), (9, 1), (16, 16)])
def test_stencil_and_mixed_arithmetic_match_the_main_entry_point(shape):
    rng = np.random.default_rng()
    src = rng.standard_normal(shape).astype(np.float32)
    dst = np.full(shape, np.nan, np.float32)
    o = np.full(src.size, -12345, np.int64)
    (e64, r64, out64), (e32, r32, out32) = _run_both(STENCIL_2D, [src, dst, o], 2, 256)
    assert (e64, r64) == (e32, r32)
    for a, b in zip(out64, out32):
        np.testing.assert_array_equal(a, b)
    ys, xs = np.divmod(np.arange(src.size), shape[1])
    expect = (ys - 2) * (xs + 3) // 7 - (xs - ys) % 5 + np.minimum(xs, ys) - np.maximum(xs - 9, ys)
    np.testing.assert_array_equal(out32[2], expect)


@pytest.mark.slow
@needs_cxx
def test_loops_and_bit_operations_match_the_main_entry_point():
    rng = np.random.default_rng()
    a = rng.integers(-(1 << 40), 1 << 40, 50).astype(np.int64)
    o = np.full(50, 7, np.int64)
    (e64, r64, out64), (e32, r32, out32) = _run_both(LOOPS, [a, o], 1, 64)
    assert (e64, r64) == (e32, r32)
    np.testing.assert_array_equal(out64[1], out32[1])
    j = np.arange(50)
    acc = int(np.sum(a.astype(object) * (j + 1))) - sum(range(0, 50, 7))
    q = j.astype(np.int64)
    expect = acc + (q << 2) + (q >> 1) + (q & 5) + (q | 2) + (q ^ 3) + (-q) + (~q)
    np.testing.assert_array_equal(out32[1], expect)


TILE_LOOP = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[u8], o: CUDASliceMut[i64]):
    p = block_idx.x * block_dim.x + thread_idx.x
    acc = i64(0)
    for t in range(0, len(a), 1048576):
        acc += t
    if p < len(o):
        with unsafe():
            o[p] = acc
"""


@pytest.mark.slow
@needs_cxx
def test_a_loop_up_to_the_largest_extent_counts_in_32_bits_without_overflow():
    # The largest array the _i32 entry point is run for; its elements are never read, so one
    # byte repeated by a zero stride stands for it.
    n = abi.INDEX32_MAX_ELEMENTS
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(n,), strides=(0,))
    kernel, variant = checked(TILE_LOOP)
    code = emit_index32(kernel, "f.py")
    # Steps of up to 2**20 to an extent: the counter's last step ends at most at 2**31 - 1.
    assert "for (int __gn_i0 = 0; __gn_i0 < __gn_stop0; __gn_i0 += 1048576)" in code
    expect = sum(range(0, n, 1 << 20))
    for symbol in (kernel.symbol, kernel.symbol + abi.INDEX32_SUFFIX):
        o = np.full(3, -1, np.int64)
        exited, _record, undefined = host_cuda.launch(variant.cuda, symbol, [a, o], 1, 3)
        assert not undefined and exited == 0, (symbol, undefined[:3])  # UBSan: no overflow
        np.testing.assert_array_equal(o, expect)


@pytest.mark.slow
@needs_cxx
def test_an_index_error_is_reported_the_same_way():
    # 37 threads over 30 elements: the tail threads fail their bounds check on `o`.
    a = np.arange(30, dtype=np.int64)
    o = np.zeros(30, np.int64)
    body = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[i64], o: CUDASliceMut[i64]):
        p = i64(block_idx.x * block_dim.x + thread_idx.x)
        with unsafe():
            o[p] = a[p % len(a)] + 1
    """
    (e64, r64, out64), (e32, r32, out32) = _run_both(body, [a, o], 1, 37)
    assert e64 == e32 == 7
    assert r64 == r32
    state, _site, _kernel, index, length = np.frombuffer(r32[:32], "<u4,<u4,<u8,<i8,<i8")[0]
    assert (state, index, length) == (abi.ERROR_STATE_COMPLETE, 30, 30)
    np.testing.assert_array_equal(out64[1], out32[1])
    np.testing.assert_array_equal(out32[1], a + 1)


@pytest.mark.slow
@needs_cxx
def test_local_arrays_index_in_32_bits():
    rng = np.random.default_rng()
    a = rng.standard_normal(40).astype(np.float32)
    o = np.zeros(40, np.float32)
    kernel, _ = checked(LOCAL)
    code = emit_index32(kernel, "f.py")
    # t // 8 < 4 is not proven: checked, in 32 bits; t % 8 < 8 is.
    assert "tile[gn_chk32(__gn_err, gn_floordiv<int>(t, 8), 4, 1u) * 8 + gn_mod<int>(t, 8)]" in code
    (e64, r64, out64), (e32, r32, out32) = _run_both(LOCAL, [a, o], 2, 32)
    assert (e64, r64) == (e32, r32)
    np.testing.assert_array_equal(out64[1], out32[1])
    i = np.arange(40)
    tile = lambda r, c: a[(i + r * 8 + c) % 40]  # noqa: E731
    np.testing.assert_array_equal(out32[1], tile(3 - i % 4, 7 - i % 8) + tile(i % 4, i % 8))


# ---- the launcher's side ------------------------------------------------------------------------


def test_only_arrays_within_the_32_bit_index_bound_get_the_fast_path_signature():
    from gpu_native.runtime.arrays import DeviceArray

    small = gn.empty((8,), gn.u8)

    def view(shape):  # metadata only: nothing is read through it
        return DeviceArray(small._backend, small.device, small.ptr, shape, small._info, small,
                           small.launch_base)

    assert not small.launch_sig.wide
    at_limit = view((abi.INDEX32_MAX_ELEMENTS,))
    assert at_limit.launch_sig is small.launch_sig
    for shape in ((abi.INDEX32_MAX_ELEMENTS + 1,), (1 << 16, 1 << 15), (3, 1 << 30, 1)):
        wide = view(shape)
        assert wide.launch_sig.wide and wide.launch_sig is not small.launch_sig, shape
        assert wide.launch_sig_mut is wide.launch_sig


# ---- on the GPU ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


def _stamp(rows, cols, salt):
    y = np.asarray(rows, np.int64)[:, None]
    x = np.arange(cols, dtype=np.int64)[None, :]
    return ((y * 131 + x * 7 + salt) % 251).astype(np.uint8)


@pytest.mark.gpu
def test_gpu_small_arrays_run_the_32_bit_entry_point_and_match(cuda_backend, kr):
    from gpu_native.runtime import kernel as K

    rng = np.random.default_rng()
    h, w = int(rng.integers(100, 300)), int(rng.integers(100, 300))
    salt = int(rng.integers(0, 1 << 40))
    grid, block = gn.GridDim2D((w + 31) // 32, (h + 7) // 8), gn.BlockDim2D(32, 8)
    outs = []
    for index32 in (True, False):
        K.INDEX32 = index32
        K.forget_launchers()
        try:
            out = gn.empty((h, w), gn.u8)
            out.fill(255)  # never a result: the values are below 251
            kr.stamp_2d.launch(grid, block)(out, salt)
            outs.append(out.to_host())
        finally:
            K.INDEX32 = True
            K.forget_launchers()
    np.testing.assert_array_equal(outs[0], _stamp(range(h), w, salt))
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.gpu
def test_gpu_an_array_beyond_2_31_elements_runs_the_64_bit_entry_point(cuda_backend, kr):
    # 65,537 x 32,768 bytes: offsets of the last rows pass 2**31, which 32-bit index arithmetic
    # would turn negative.  The fast path does not take such an array; the checked path runs
    # the main entry point.
    rng = np.random.default_rng()
    h, w = 65537, 32768
    salt = int(rng.integers(0, 1 << 40))
    out = gn.empty((h, w), gn.u8)
    assert out.launch_sig.wide
    out.fill(255)
    kr.stamp_2d.launch(gn.GridDim2D(w // 256, (h + 3) // 4), gn.BlockDim2D(256, 4))(out, salt)
    host = out.to_host()
    rows = sorted({*range(8), *range(h - 8, h), *rng.integers(0, h, 48).tolist()})
    np.testing.assert_array_equal(host[rows], _stamp(rows, w, salt))
    assert int(host.max()) <= 250  # nothing left unwritten


def test_the_launcher_picks_the_entry_point_by_kernel_grid_and_array_size(monkeypatch, kr):
    """The cuda backend's choices, made with a stand-in that records what it loads (the
    simulator under the name "cuda")."""
    from gpu_native.runtime import backend as B
    from gpu_native.runtime.arrays import DeviceArray
    from gpu_native.runtime.sim_backend import SimBackend

    class Recording(SimBackend):
        name = "cuda"

        def __init__(self):
            super().__init__()
            self.loaded, self.launched, self.symbol_of = [], [], {}

        def load(self, kernel, variant, ordinal, symbol=None):
            self.loaded.append(symbol)
            fn = super().load(kernel, variant, ordinal, symbol)
            self.symbol_of[id(fn)] = symbol
            return fn

        def launch(self, fn, *args):
            self.launched.append(self.symbol_of[id(fn)])
            return super().launch(fn, *args)

    recording = Recording()
    monkeypatch.setitem(B._instances, "cuda", recording)
    from gpu_native.runtime import devices

    monkeypatch.setattr(devices, "_initial_device", lambda backend: 0)  # asks the driver
    (variant,) = kr.stamp_2d.variants.values()
    main, narrow = None, variant.symbol + abi.INDEX32_SUFFIX  # None: the kernel's own symbol
    with B.use("cuda"):
        out = gn.empty((8, 40), gn.u8)
        out.fill(255)
        launch = kr.stamp_2d.launch(gn.GridDim2D(2, 1), gn.BlockDim2D(32, 8))
        assert recording.loaded == [narrow]
        launch(out, 3)
        np.testing.assert_array_equal(out.to_host(), _stamp(range(8), 40, 3))
        # More threads along x than abi.INDEX32_MAX_ELEMENTS: the main entry point.
        kr.stamp_2d.launch(gn.GridDim2D(1 << 23, 1), gn.BlockDim2D(256, 1))
        assert recording.loaded == [narrow, main]
        # A wide array takes the checked path, which submits through the main entry point (the
        # simulator then refuses the view, which is larger than its allocation).
        rows = gn.empty((8, 1 << 15), gn.u8)
        wide = DeviceArray(rows._backend, rows.device, rows.ptr, (65537, 1 << 15), rows._info,
                           rows, rows.launch_base)
        with pytest.raises(gn.GpuNativeError, match="past its allocation"):
            launch(wide, 4)
        assert recording.launched == [narrow, main]
        launch(out, 5)  # and the fast path still runs the 32-bit entry point
        assert recording.launched == [narrow, main, narrow]
        np.testing.assert_array_equal(out.to_host(), _stamp(range(8), 40, 5))
        # The launcher of uid-only kernels runs them over their logical uids.
        kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(32))
        assert recording.loaded[-1] == kr.add_kernel.variants[()].symbol + "_uids"
