"""The CPU simulator runs the kernel language with the GPU's semantics (compared with NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.simulator.support import build, launch, poisoned, rng

KERNELS = """
TILE = 16
BLOCK = 128

@gpu_kernel(Kernel1D)
def add(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    idx: UniqueId = FlatLayout1D.uid()
    c[idx] = a[idx] + b[idx]

@gpu_kernel(Kernel1D)
def saxpy(alpha: f32, x: CUDASlice[f32], y: CUDASliceMut[f32]):
    for i in FlatLayout1D.grid_stride(len(y)):
        y[i] = alpha * x[i] + y[i]

@gpu_kernel(Kernel2D)
def transpose(src: CUDASlice2D[f64], dst: CUDASliceMut2D[f64]):
    x, y = FlatLayout2D.uid()
    if y < dst.shape[0] and x < dst.shape[1]:
        dst[y, x] = src[x, y] * 2.0

@gpu_kernel(Kernel3D)
def index3d(out: CUDASliceMut3D[i32]):
    x, y, z = FlatLayout3D.uid()
    out[z, y, x] = i32(x + 10 * y + 100 * z)

@gpu_kernel(Kernel1D)
def block_sum(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, BLOCK)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    v: f32 = 0.0
    if i < len(x):
        v = x[i]
    s[t] = v
    sync_threads()
    n = BLOCK // 2
    while n >= 32:
        if t < n:
            s[t] = s[t] + s[t + n]
        sync_threads()
        n //= 2
    if t < 32:
        w = s[t]
        off = 16
        while off > 0:
            w += shfl_down(w, off)
            off //= 2
        if t == 0:
            out[block_idx.x] = w

@gpu_kernel(Kernel2D)
def matmul(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    ta = shared_array(f32, (TILE, TILE))
    tb = shared_array(f32, (TILE, TILE))
    tx, ty = BlockLayout2D.uid()
    col, row = FlatLayout2D.uid()
    n = a.shape[1]
    acc: f32 = 0.0
    for k0 in range(0, n, TILE):
        va: f32 = 0.0
        vb: f32 = 0.0
        if row < a.shape[0] and k0 + tx < n:
            va = a[row, k0 + tx]
        if k0 + ty < b.shape[0] and col < b.shape[1]:
            vb = b[k0 + ty, col]
        ta[ty, tx] = va
        tb[ty, tx] = vb
        sync_threads()
        for k in range(TILE):
            acc += ta[ty, k] * tb[k, tx]
        sync_threads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc

@gpu_kernel(Kernel1D)
def histogram(data: CUDASlice[i32], bins: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    if i < len(data):
        bins.atomic_ref(data[i]).fetch_add(u32(1))

@gpu_kernel(Kernel1D)
def ticket(counter: CUDASliceMut[i32], got: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    got[i] = counter.atomic_ref(0).fetch_add(1)

@gpu_kernel(Kernel1D)
def atomics_mix(v: CUDASlice[f32], k: CUDASlice[i32], fsum: CUDASliceMut[f32],
                fmin: CUDASliceMut[f32], imax: CUDASliceMut[i32], bits: CUDASliceMut[u32],
                xch: CUDASliceMut[i32], cas: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    if i < len(v):
        fsum.atomic_ref(0).fetch_add(v[i])
        fmin.atomic_ref(0).fetch_min(v[i])
        imax.atomic_ref(k[i] % 4).fetch_max(k[i])
        bits.atomic_ref(0).fetch_or(u32(1) << u32(k[i] % 32))
        bits.atomic_ref(1).fetch_xor(u32(k[i]))
        xch.atomic_ref(0).exchange(k[i])
        cas.atomic_ref(0).compare_exchange(i32(i), i32(i) + 1)

@gpu_kernel(Kernel1D)
def atomics_half(h: CUDASliceMut[f16], b: CUDASliceMut[bf16], f: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    h.atomic_ref(0).fetch_add(f16(0.1))
    b.atomic_ref(0).fetch_add(bf16(0.1))
    f.atomic_ref(0).compare_exchange(-0.0, 5.0)
    f.atomic_ref(1).compare_exchange(math.nan, 6.0)

@gpu_kernel(Kernel1D)
def fetch_old(k: CUDASliceMut[i32], old: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    old[i] = k.atomic_ref(i % 3).fetch_sub(2)

@gpu_kernel(Kernel1D)
def early_exit_then_shuffle(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    if thread_idx.x >= 40:
        return
    v = x[i]
    v += shfl_xor(v, 1, 8)
    out[i] = v + 1000 * lane_id()

@gpu_device
def stage_and_flip(s: CUDASliceMut[f32], t: i64, v: f32) -> f32:
    # The checker treats array parameters as global memory (it cannot know `s` is shared), so
    # the block-unique store and the read across the barrier need unsafe().
    with unsafe():
        s[t] = v
    sync_threads()
    with unsafe():
        w = s[31 - t]
    return w

@gpu_kernel(Kernel1D)
def device_shared(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, 32)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    out[i] = stage_and_flip(s, t, x[i]) * 2.0

@gpu_kernel(Kernel1D)
def range_limits(lo: i64, out: CUDASliceMut[i64], special: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    a = 0
    for j in range(2147483640, 2147483647, 5):
        a += 1
    b = 0
    for j in range(-2147483641, -2147483648, -3):
        b += 1
    c = i64(0)
    for jj in range(lo, lo + 14, 7):  # lo + 14 == 2**63 - 1: the next value would wrap
        c += jj - lo
    out[i] = i64(a) + 10 * i64(b) + 100 * c
    special[i] = math.erf(f64(0.5)) + math.lgamma(f64(3.0)) + math.fma(f64(0.1), f64(10.0), -1.0)

@gpu_kernel(Kernel1D)
def scan(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    buf = shared_array(i32, (2, BLOCK))
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    v: i32 = 0
    if i < len(x):
        v = x[i]
    buf[0, t] = v
    sync_threads()
    src = 0
    d = 1
    while d < BLOCK:
        acc = buf[src, t]
        if t >= d:
            acc += buf[src, t - d]
        buf[1 - src, t] = acc
        sync_threads()
        src = 1 - src
        d *= 2
    if i < len(out):
        out[i] = buf[src, t]

@gpu_kernel(Kernel1D)
def local_reverse(x: CUDASlice[f64], out: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    tmp = local_array(f64, 4)
    for k in range(4):
        tmp[k] = x[4 * i + k] if i < len(out) else 0.0
    acc: f64 = 0.0
    for k in range(4):
        acc = acc * 10.0 + tmp[3 - k]
    if i < len(out):
        out[i] = acc

@gpu_device
def square(v: f32) -> f32:
    return v * v

@gpu_device
def norm2(a: f32, b: f32) -> f32:
    if a < 0.0:
        return math.sqrt(square(b) + square(a)) * -1.0
    return math.sqrt(square(a) + square(b))

@gpu_device
def clamp_store(out: CUDASliceMut[f32], i: UniqueId, v: f32):
    if v > 5.0:
        out[i] = 5.0
        return
    out[i] = v

@gpu_kernel(Kernel1D)
def device_calls(a: CUDASlice[f32], b: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    clamp_store(out, i, norm2(a[i], b[i]))

T = TypeVar("T", f32, f64, i32)

@gpu_kernel(Kernel1D)
def scale(x: CUDASlice[T], k: T, out: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    out[i] = x[i] * k + k

@gpu_kernel(Kernel1D)
def half_ops(a: CUDASlice[f16], b: CUDASlice[f16], out: CUDASliceMut[f16],
             ba: CUDASlice[bf16], bb: CUDASlice[bf16], bout: CUDASliceMut[bf16]):
    i = FlatLayout1D.uid()
    out[i] = a[i] * b[i] + a[i]
    bout[i] = ba[i] * bb[i] + ba[i]

@gpu_kernel(Kernel1D)
def int_ops(a: CUDASlice[i32], b: CUDASlice[i32], q: CUDASliceMut[i32], r: CUDASliceMut[i32],
            wrap: CUDASliceMut[i32], shl: CUDASliceMut[i32], shr: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]
    wrap[i] = a[i] * 65537 + 2147483647
    shl[i] = a[i] << b[i]
    shr[i] = a[i] >> b[i]

@gpu_kernel(Kernel1D)
def casts(x: CUDASlice[f64], to_i8: CUDASliceMut[i8], to_u32: CUDASliceMut[u32],
          to_i64: CUDASliceMut[i64], lo: CUDASliceMut[f64], hi: CUDASliceMut[f64],
          fm: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    to_i8[i] = i8(x[i])
    to_u32[i] = u32(x[i])
    to_i64[i] = i64(x[i])
    lo[i] = min(x[i], 1.0)
    hi[i] = max(1.0, x[i])
    fm[i] = x[i] % -2.5

@gpu_kernel(Kernel1D)
def dyn_shared(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, 0)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    s[t] = x[i]
    sync_threads()
    out[i] = s[len(s) - 1 - t]

@gpu_kernel(Kernel1D)
def warp_ops(x: CUDASlice[i32], bfly: CUDASliceMut[i32], votes: CUDASliceMut[u32],
             bcast: CUDASliceMut[i32], up: CUDASliceMut[i32], flags: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    v = x[i]
    s = v
    m = 1
    while m < 32:
        s += shfl_xor(s, m)
        m *= 2
    bfly[i] = s
    votes[i] = ballot(v > 0)
    bcast[i] = shfl_idx(v, 3)
    up[i] = shfl_up(v, 1, 8)
    flags[i] = i32(all_sync(v > -1000)) + 2 * i32(any_sync(v > 90)) + 4 * lane_id()

@gpu_kernel(Kernel1D)
def control(x: CUDASlice[i32], limit: i32, out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    if i >= len(out):
        return
    total = 0
    k = 0
    while True:
        k += 1
        if k % 3 == 0:
            continue
        if k > 10:
            break
        total += k
    for j in range(i % 5):
        if j == 3:
            break
        total += 100
    if i < limit and x[i] > 0:
        total += 1000
    total += x[i] if x[i] > 50 else -x[i]
    out[i] = total
"""


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return build(tmp_path_factory.mktemp("sim"), KERNELS)


@pytest.mark.slow
def test_add_elementwise_with_grid_tail(k):
    r = rng(1)
    n = 1000  # 8 blocks of 128 cover 1024 threads: the last 24 leave by the tail rule
    a, b = r.random(n, np.float32), r.random(n, np.float32)
    c = poisoned(n, np.float32)
    errors = launch(k["add"], 8, 128, a, b, c)
    assert errors.fails == [] and errors.races == []
    np.testing.assert_array_equal(c, a + b)  # f32 + f32 rounds exactly as NumPy's float32


def test_saxpy_grid_stride_loop(k):
    r = rng(2)
    n = 10_007
    x, y = r.random(n, np.float32), r.random(n, np.float32)
    y0 = y.copy()
    errors = launch(k["saxpy"], 5, 64, np.float32(2.5), x, y)
    assert errors.fails == [] and errors.races == []
    np.testing.assert_array_equal(y, np.float32(2.5) * x + y0)


def test_2d_kernel_transpose_non_square(k):
    r = rng(3)
    src = r.random((37, 21))
    dst = poisoned((21, 37), np.float64)
    errors = launch(k["transpose"], (3, 2, 1), (16, 16, 1), src, dst)
    assert errors.fails == []
    np.testing.assert_array_equal(dst, src.T * 2.0)


def test_3d_kernel(k):
    out = poisoned((3, 4, 5), np.int32)
    errors = launch(k["index3d"], (1, 2, 3), (5, 2, 1), out)
    assert errors.fails == []
    z, y, x = np.indices((3, 4, 5))
    np.testing.assert_array_equal(out, x + 10 * y + 100 * z)


def test_block_reduction_shared_tree_then_warp_shuffles(k):
    r = rng(4)
    x = r.random(1000, np.float32)
    out = poisoned(8, np.float32)
    errors = launch(k["block_sum"], 8, 128, x, out)
    assert errors.fails == [] and errors.races == []
    expect = np.add.reduceat(x.astype(np.float64), np.arange(0, 1000, 128))
    np.testing.assert_allclose(out, expect, rtol=1e-5)


@pytest.mark.parametrize("shape", [(128, 128, 128), (45, 70, 33)])
def test_tiled_matmul(k, shape):
    m, n, p = shape
    r = rng(5)
    a, b = r.random((m, n), np.float32), r.random((n, p), np.float32)
    c = poisoned((m, p), np.float32)
    grid = (-(-p // 16), -(-m // 16), 1)
    errors = launch(k["matmul"], grid, (16, 16, 1), a, b, c)
    assert errors.fails == [] and errors.races == []
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)


def test_atomic_histogram_with_duplicates(k):
    r = rng(6)
    data = r.integers(0, 10, 5000).astype(np.int32)
    bins = np.zeros(10, np.uint32)
    errors = launch(k["histogram"], 40, 128, data, bins)
    assert errors.fails == [] and errors.races == []
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=10))


def test_atomic_fetch_add_returns_distinct_old_values(k):
    counter = np.zeros(1, np.int32)
    got = poisoned(300, np.int32)
    launch(k["ticket"], 3, 100, counter, got)
    assert counter[0] == 300
    np.testing.assert_array_equal(np.sort(got), np.arange(300))  # a permutation, as on the GPU


def test_atomic_operations_sequential_in_thread_order(k):
    r = rng(7)
    n = 200
    v = r.standard_normal(n).astype(np.float32)
    kk = r.integers(-50, 50, n).astype(np.int32)
    fsum, fmin = np.zeros(1, np.float32), np.full(1, np.inf, np.float32)
    imax = np.full(4, -(2**31), np.int32)
    bits = np.zeros(2, np.uint32)
    xch, cas = np.full(1, -7, np.int32), np.zeros(1, np.int32)
    errors = launch(k["atomics_mix"], 2, 128, v, kk, fsum, fmin, imax, bits, xch, cas)
    assert errors.fails == [] and errors.races == []
    np.testing.assert_allclose(fsum[0], v.astype(np.float64).sum(), rtol=1e-4)
    assert fmin[0] == v.min()
    for j in range(4):
        assert imax[j] == kk[kk % 4 == j].max()
    assert bits[0] == np.bitwise_or.reduce(np.uint32(1) << (kk % 32).astype(np.uint32))
    assert bits[1] == np.bitwise_xor.reduce(kk.astype(np.uint32))
    assert xch[0] in kk
    # compare_exchange(i, i + 1) succeeds for threads 0, 1, 2, ... in turn: all 200 succeed.
    assert cas[0] == n


def test_half_atomics_round_every_step_and_float_cas_compares_bits(k):
    h, b = np.zeros(1, np.float16), np.zeros(1, np.uint16)
    f = np.array([0.0, np.nan], np.float32)
    f[1] = np.frombuffer(np.uint32(0x7FC00000).tobytes(), np.float32)[0]
    launch(k["atomics_half"], 1, 100, h, b, f)
    expect = np.float16(0)
    for _ in range(100):
        expect = np.float16(expect + np.float16(0.1))
    assert h[0] == expect  # each atomicAdd rounds to half; the exact sum would be 10.0
    expect_b = np.float32(0)
    for _ in range(100):
        expect_b = _from_bf16(_bf16(expect_b + _from_bf16(_bf16(0.1))))
    assert _from_bf16(b)[0] == expect_b
    # compare_exchange compares bit patterns: -0.0 is not +0.0, the same NaN matches itself.
    assert f[0] == 0.0 and f[1] == 6.0


def test_atomic_old_values_with_duplicate_indices_follow_thread_order(k):
    counters = np.array([100, 200, 300], np.int32)
    old = poisoned(9, np.int32)
    launch(k["fetch_old"], 1, 9, counters, old)
    np.testing.assert_array_equal(counters, [94, 194, 294])
    np.testing.assert_array_equal(old, [100, 200, 300, 98, 198, 298, 96, 196, 296])


def test_lanes_dropped_at_the_top_level_keep_their_warp_positions(k):
    x = np.arange(128, dtype=np.int32)
    out = poisoned(128, np.int32)
    errors = launch(k["early_exit_then_shuffle"], 2, 64, x, out)
    assert errors.races == [] and errors.fails == []
    t = np.arange(128) % 64
    live = t < 40
    expect = x + (x ^ 1) + 1000 * (t % 32)
    np.testing.assert_array_equal(out[live], expect[live])
    assert (out[~live] == np.iinfo(np.int32).max).all()


def test_device_function_with_shared_array_and_barrier(k):
    x = np.arange(64, dtype=np.float32)
    out = poisoned(64, np.float32)
    errors = launch(k["device_shared"], 2, 32, x, out)
    assert errors.races == [] and errors.fails == []
    np.testing.assert_array_equal(out, 2 * np.concatenate([x[31::-1], x[:31:-1]]))


def test_range_never_wraps_and_uniform_special_functions(k):
    import math

    out, special = poisoned(4, np.int64), poisoned(4, np.float64)
    launch(k["range_limits"], 1, 4, np.int64(2**63 - 15), out, special)
    np.testing.assert_array_equal(out, 2 + 10 * 3 + 100 * 7)
    exact_fma = 5.551115123125783e-17  # 0.1 * 10 - 1 with one rounding
    np.testing.assert_array_equal(special, math.erf(0.5) + math.lgamma(3.0) + exact_fma)


def test_gamma_at_its_special_points_is_what_c_gives(tmp_path):
    from tests.simulator.support import build

    kernels = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def gamma(x: CUDASlice[f64], out: CUDASliceMut[f64]):
            i = FlatLayout1D.uid()
            if i < len(x):
                out[i] = math.gamma(x[i])
        """)
    x = np.array([-np.inf, np.inf, 0.0, -0.0, -3.0, 1e6, np.nan, 5.0])
    out = poisoned(len(x), np.float64)
    errors = launch(kernels["gamma"], 1, 32, x, out)
    assert errors.fails == []
    np.testing.assert_array_equal(out, [np.nan, np.inf, np.inf, -np.inf, np.nan, np.inf, np.nan,
                                        24.0])


def test_block_prefix_scan(k):
    r = rng(8)
    x = r.integers(-100, 100, 300).astype(np.int32)
    out = poisoned(300, np.int32)
    errors = launch(k["scan"], 3, 128, x, out)
    assert errors.fails == [] and errors.races == []
    expect = np.concatenate([np.cumsum(x[s:s + 128]) for s in range(0, 300, 128)])
    np.testing.assert_array_equal(out, expect)


def test_local_arrays_are_per_thread(k):
    r = rng(9)
    x = r.integers(0, 10, 4 * 50).astype(np.float64)
    out = poisoned(50, np.float64)
    errors = launch(k["local_reverse"], 2, 32, x, out)
    assert errors.fails == []
    d = x.reshape(50, 4)
    np.testing.assert_array_equal(out, d[:, 3] * 1000 + d[:, 2] * 100 + d[:, 1] * 10 + d[:, 0])


def test_device_functions_return_values_and_call_each_other(k):
    r = rng(10)
    a = r.standard_normal(256).astype(np.float32) * 4
    b = r.standard_normal(256).astype(np.float32) * 4
    out = poisoned(256, np.float32)
    errors = launch(k["device_calls"], 2, 128, a, b, out)
    assert errors.fails == []
    n = np.sqrt(a.astype(np.float64) ** 2 + b.astype(np.float64) ** 2)
    n = np.where(a < 0, -n, n)
    np.testing.assert_allclose(out, np.minimum(n, 5.0), rtol=1e-6)


@pytest.mark.parametrize("ty", ["f32", "f64", "i32"])
def test_generic_kernel_specialisations(k, ty):
    dt = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[ty]
    x = (rng(11).standard_normal(100) * 100).astype(dt)
    out = poisoned(100, dt)
    launch(k["scale", ty], 1, 128, x, dt(3), out)
    np.testing.assert_array_equal(out, x * dt(3) + dt(3))


def _bf16(values):
    from gpu_native.lang.halfprec import f32_to_bf16_bits

    return f32_to_bf16_bits(np.asarray(values, np.float32))


def _from_bf16(bits):
    from gpu_native.lang.halfprec import bf16_bits_to_f32

    return bf16_bits_to_f32(bits)


def test_f16_rounds_each_operation_and_bf16_rounds_to_nearest_even(k):
    r = rng(12)
    a = r.standard_normal(64).astype(np.float16)
    b = r.standard_normal(64).astype(np.float16)
    ba, bb = _bf16(r.standard_normal(64)), _bf16(r.standard_normal(64))
    out, bout = poisoned(64, np.float16), np.zeros(64, np.uint16)
    launch(k["half_ops"], 1, 64, a, b, out, ba, bb, bout)
    np.testing.assert_array_equal(out, (a * b) + a)  # NumPy float16: one rounding per op
    fa, fb = _from_bf16(ba), _from_bf16(bb)
    prod = _from_bf16(_bf16(fa * fb))
    np.testing.assert_array_equal(bout, _bf16(prod + fa))


def test_integer_semantics_floor_division_wraparound_shifts(k):
    a = np.array([7, -7, 7, -7, -2**31, 5, 1, -8, 123, 3], np.int32)
    b = np.array([2, 2, -2, -2, -1, 31, 32, 2, -1, 40], np.int32)
    q, rem, wrap, shl, shr = (poisoned(10, np.int32) for _ in range(5))
    errors = launch(k["int_ops"], 1, 10, a, b, q, rem, wrap, shl, shr)
    assert errors.fails == []
    np.testing.assert_array_equal(q, [3, -4, -4, 3, -2**31, 0, 0, -4, -123, 0])
    np.testing.assert_array_equal(rem, [1, 1, -1, -1, 0, 5, 1, 0, 0, 3])
    expect_wrap = ((a.astype(np.int64) * 65537 + 2147483647 + 2**31) % 2**32 - 2**31)
    np.testing.assert_array_equal(wrap, expect_wrap)
    # Shift counts outside 0..31 give 0 (<<) or the sign fill (>>).
    exp_shl = [(int(x) << int(s)) if 0 <= s < 32 else 0 for x, s in zip(a, b)]
    exp_shl = (np.array(exp_shl, dtype=object) % 2**32).astype(np.int64)
    np.testing.assert_array_equal(shl, np.where(exp_shl >= 2**31, exp_shl - 2**32, exp_shl))
    exp_shr = [int(x) >> int(s) if 0 <= s < 32 else (-1 if x < 0 else 0) for x, s in zip(a, b)]
    np.testing.assert_array_equal(shr, exp_shr)


def test_saturating_casts_and_nan_ordered_min_max(k):
    x = np.array([1e10, -1e10, np.nan, 3.9, -3.9, 127.5, -200.0, 2.0**63, -np.inf, 0.5])
    outs = [poisoned(10, dt) for dt in (np.int8, np.uint32, np.int64)]
    lo, hi, fm = (poisoned(10, np.float64) for _ in range(3))
    launch(k["casts"], 1, 10, x, *outs, lo, hi, fm)
    np.testing.assert_array_equal(outs[0], [127, -128, 0, 3, -3, 127, -128, 127, -128, 0])
    np.testing.assert_array_equal(outs[1], [2**32 - 1, 0, 0, 3, 0, 127, 0, 2**32 - 1, 0, 0])
    np.testing.assert_array_equal(outs[2], [10**10, -10**10, 0, 3, -3, 127, -200, 2**63 - 1,
                                            -2**63, 0])
    # min(x, 1.0) is 1.0 only when 1.0 < x: NaN stays; max(1.0, x) is x only when x > 1.0.
    np.testing.assert_array_equal(lo, [1.0, -1e10, np.nan, 1.0, -3.9, 1.0, -200.0, 1.0, -np.inf,
                                       0.5])
    np.testing.assert_array_equal(hi, [1e10, 1.0, 1.0, 3.9, 1.0, 127.5, 1.0, 2.0**63, 1.0, 1.0])
    np.testing.assert_array_equal(fm, [float(v) % -2.5 for v in x])  # Python's float modulo


def test_dynamic_shared_memory_sized_by_launch(k):
    x = np.arange(64, dtype=np.float32)
    out = poisoned(64, np.float32)
    errors = launch(k["dyn_shared"], 2, 32, x, out, shared=32 * 4)
    assert errors.fails == [] and errors.races == []
    np.testing.assert_array_equal(out, np.concatenate([x[31::-1], x[:31:-1]]))


def test_warp_intrinsics(k):
    r = rng(13)
    n = 64
    x = r.integers(-100, 100, n).astype(np.int32)
    bfly, bcast, up, flags = (poisoned(n, np.int32) for _ in range(4))
    votes = np.zeros(n, np.uint32)
    errors = launch(k["warp_ops"], 1, 64, x, bfly, votes, bcast, up, flags)
    assert errors.fails == [] and errors.races == []
    w = x.reshape(2, 32)
    np.testing.assert_array_equal(bfly, np.repeat(w.sum(axis=1), 32))
    ballots = [sum(1 << j for j in range(32) if row[j] > 0) for row in w]
    np.testing.assert_array_equal(votes, np.repeat(ballots, 32))
    np.testing.assert_array_equal(bcast, np.repeat(w[:, 3], 32))
    seg = x.reshape(-1, 8)
    np.testing.assert_array_equal(up, np.concatenate([seg[:, :1], seg[:, :-1]], axis=1).ravel())
    anyv = np.repeat((w > 90).any(axis=1), 32)
    np.testing.assert_array_equal(flags, 1 + 2 * anyv + 4 * (np.arange(n) % 32))


def test_control_flow_masks(k):
    r = rng(14)
    n = 70
    x = r.integers(-100, 100, n).astype(np.int32)
    out = poisoned(80, np.int32)
    limit = 40  # i < limit and x[i] > 0: x[i] is checked only where i < limit
    errors = launch(k["control"], 1, 96, x[:n].copy(), np.int32(limit), out)
    base = sum(kk for kk in range(1, 11) if kk % 3)
    i = np.arange(80)
    xs = np.concatenate([x, np.zeros(10, np.int32)])
    expect = base + 100 * np.minimum(i % 5, 3) + 1000 * ((i < limit) & (xs > 0))
    expect = expect + np.where(xs > 50, xs, -xs)
    np.testing.assert_array_equal(out[:n], expect[:n])
    # Threads 70..79 index x out of bounds: the first of them reports, all of them stop.
    assert len(errors.fails) == 1
    site, index, length, block, thread = errors.fails[0]
    assert (index, length, block, thread) == (70, 70, (0, 0, 0), (70, 0, 0))
    assert k.site("control", site).array == "x"
    np.testing.assert_array_equal(out[n:], np.iinfo(np.int32).max)
