"""Kernels exercising every feature of the language (tests/language/test_language.py launches
them)."""

import math
from typing import TypeVar

from gpu_native import (
    BlockLayout1D,
    BlockLayout2D,
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    CUDASliceMut3D,
    FlatLayout1D,
    FlatLayout2D,
    FlatLayout3D,
    Kernel1D,
    Kernel2D,
    Kernel3D,
    MemoryOrder,
    UniqueId,
    all_sync,
    any_sync,
    ballot,
    bf16,
    block_dim,
    block_idx,
    f16,
    f32,
    f64,
    gpu_kernel,
    grid_dim,
    i32,
    i64,
    lane_id,
    local_array,
    shared_array,
    shfl_down,
    shfl_idx,
    shfl_up,
    shfl_xor,
    sync_threads,
    sync_warp,
    thread_idx,
    u32,
    u64,
    unsafe,
)
from tests.helpers.kernels_helpers import (
    OFFSETS,
    SCALE,
    clamp,
    collatz_steps,
    square,
    store_clamped,
    store_twice,
    sum_of_squares,
)

T = TypeVar("T", f32, f64, i32)
WIDTH = 8
LIMIT = 2.5
ENABLED = True


# ---- dimensions and indices ---------------------------------------------------------------------

@gpu_kernel(Kernel2D)
def add_2d(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    c[y, x] = a[y, x] + b[y, x] * f32(a.shape[1])


@gpu_kernel(Kernel3D)
def index_3d(out: CUDASliceMut3D[i32]):
    u = FlatLayout3D.uid()
    out[u.z, u.y, u.x] = i32(u.z * 10000 + u.y * 100 + u.x)


@gpu_kernel(Kernel2D)
def indices_2d(out: CUDASliceMut3D[i32]):
    x, y = FlatLayout2D.uid()
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x, 0] = thread_idx.x
        out[y, x, 1] = thread_idx.y
        out[y, x, 2] = block_idx.x
        out[y, x, 3] = block_idx.y
        out[y, x, 4] = block_dim.x
        out[y, x, 5] = block_dim.y
        out[y, x, 6] = grid_dim.x
        out[y, x, 7] = grid_dim.y


# ---- shared and local memory, barriers -----------------------------------------------------------

@gpu_kernel(Kernel1D)
def reverse_blocks(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    """Reverse each block's slice through static shared memory."""
    tile = shared_array(f32, (128,))
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    assert block_dim.x == 128
    if i < len(x):
        tile[t] = x[i]
    sync_threads()
    src = 127 - t
    j = block_idx.x * 128 + src
    if i < len(out) and j < len(x):
        out[i] = tile[src]


@gpu_kernel(Kernel1D)
def reverse_dynamic(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    """The same with the dynamic shared array, sized by the launch's shared_mem_bytes."""
    tile = shared_array(f32, 0)
    t = thread_idx.x
    n = block_dim.x
    i = FlatLayout1D.uid()
    if t < len(tile):
        tile[t] = x[i]
    sync_threads()
    out[i] = tile[n - 1 - t]


@gpu_kernel(Kernel1D)
def reverse_dynamic_wide(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    """Reverse 16 rows of blockDim.x values each through the dynamic shared array: launched with
    16 * 1024 floats (64 KiB, more than static shared memory may hold)."""
    tile = shared_array(f32, 0)
    t = BlockLayout1D.uid()
    n = block_dim.x
    base = block_idx.x * n * 16
    for r in range(16):
        with unsafe():
            tile[t + r * n] = x[base + r * n + t]
    sync_threads()
    for r in range(16):
        with unsafe():
            out[base + r * n + t] = tile[(15 - r) * n + n - 1 - t]


@gpu_kernel(Kernel1D)
def static_48k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    """Exactly 48 KiB of static shared memory (the most CUDA allows), plus the dynamic array."""
    big = shared_array(f32, 12288 - 4)
    small = shared_array(i32, 4)
    extra = shared_array(f32, 0)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    big[t] = x[i]
    if t < 4:
        small[t] = i32(t)
    if t < len(extra):
        extra[t] = 1.0
    sync_threads()
    out[i] = big[block_dim.x - 1 - t] + f32(small[t % 4])


@gpu_kernel(Kernel2D)
def transpose_tiles(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    tile = shared_array(f32, (WIDTH, WIDTH + 1))
    assert block_dim.x == WIDTH and block_dim.y == WIDTH
    u = BlockLayout2D.uid()
    x = block_idx.x * WIDTH + u.x
    y = block_idx.y * WIDTH + u.y
    tile[u.y, u.x] = src[y, x]
    sync_threads()
    dst[block_idx.x * WIDTH + u.y, block_idx.y * WIDTH + u.x] = tile[u.x, u.y]


@gpu_kernel(Kernel1D)
def sort4(x: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    """Each thread sorts its row of 4 in a per-thread local array."""
    i = FlatLayout1D.uid()
    v = local_array(f32, (4,))
    for k in range(4):
        v[k] = x[i, k]
    for a in range(4):
        for b in range(3 - a):
            if v[b] > v[b + 1]:
                tmp = v[b]
                v[b] = v[b + 1]
                v[b + 1] = tmp
    for k in range(4):
        out[i, k] = v[k]


# ---- atomics ------------------------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def atomics_i32(values: CUDASlice[i32], acc: CUDASliceMut[i32], tickets: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    v = values[i]
    acc.atomic_ref(0).fetch_add(v)
    acc.atomic_ref(1).fetch_sub(v)
    acc.atomic_ref(2).fetch_min(v)
    acc.atomic_ref(3).fetch_max(v, order=MemoryOrder.ACQ_REL)
    acc.atomic_ref(4).fetch_and(v)
    acc.atomic_ref(5).fetch_or(v)
    acc.atomic_ref(6).fetch_xor(v)
    tickets[i] = acc.atomic_ref(7).fetch_add(1, order=MemoryOrder.SEQ_CST)


@gpu_kernel(Kernel1D)
def atomics_wide(values: CUDASlice[f64], fsum: CUDASliceMut[f64], imax: CUDASliceMut[i64],
                 usum: CUDASliceMut[u64], fmin: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = values[i]
    fsum.atomic_ref(0).fetch_add(v)
    imax.atomic_ref(0).fetch_max(i64(v * 1000.0))
    usum.atomic_ref(0).fetch_add(u64(i))
    fmin.atomic_ref(0).fetch_min(f32(v))


@gpu_kernel(Kernel1D)
def atomic_exchange_cas(flags: CUDASliceMut[u32], winners: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    old = flags.atomic_ref(0).compare_exchange(0, 1)
    if old == 0:
        winners.atomic_ref(0).exchange(i32(i))
    flags.atomic_ref(1).fetch_add(1, order=MemoryOrder.RELEASE)
    seen = flags.atomic_ref(1).load(order=MemoryOrder.ACQUIRE)
    if seen > 0:
        flags.atomic_ref(2).store(7)


@gpu_kernel(Kernel1D)
def shared_histogram(data: CUDASlice[u32], hist: CUDASliceMut[u32]):
    local = shared_array(u32, (16,))
    t = thread_idx.x
    if t < 16:
        local[t] = 0
    sync_threads()
    for i in FlatLayout1D.grid_stride(len(data)):
        local.atomic_ref(data[i] % 16).fetch_add(1)
    sync_threads()
    if t < 16:
        hist.atomic_ref(t).fetch_add(local[t])


@gpu_kernel(Kernel1D)
def half_atomics(values: CUDASlice[f32], h: CUDASliceMut[f16], b: CUDASliceMut[bf16]):
    i = FlatLayout1D.uid()
    h.atomic_ref(0).fetch_add(f16(values[i]))
    b.atomic_ref(0).fetch_add(bf16(values[i]))


# ---- warps ----------------------------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def warp_ops(x: CUDASlice[i32], out: CUDASliceMut2D[i32]):
    i = FlatLayout1D.uid()
    v = x[i]
    lane = lane_id()
    out[i, 0] = shfl_down(v, 1)
    out[i, 1] = shfl_up(v, 2)
    out[i, 2] = shfl_xor(v, 5)
    out[i, 3] = shfl_idx(v, 7)
    out[i, 4] = i32(ballot(v % 2 == 0))
    out[i, 5] = i32(all_sync(v >= 0))
    out[i, 6] = i32(any_sync(v == 3))
    out[i, 7] = lane
    sync_warp()


@gpu_kernel(Kernel1D)
def warp_sum(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = x[i]
    offset = 16
    while offset > 0:
        v += shfl_down(v, offset)
        offset //= 2
    if lane_id() == 0:
        with unsafe():
            out[i // 32] = v


# ---- device functions, generics, constants -----------------------------------------------------

@gpu_kernel(Kernel1D)
def use_device_functions(x: CUDASlice[f32], n: CUDASlice[i32], out: CUDASliceMut2D[f32]):
    i = FlatLayout1D.uid()
    out[i, 0] = clamp(x[i], -1.0, 1.0)
    out[i, 1] = sum_of_squares(x[i], 2.0)
    out[i, 2] = f32(collatz_steps(n[i]))
    out[i, 3] = f32(square(f64(x[i])))
    out[i, 4] = f32(SCALE * OFFSETS[2]) + f32(LIMIT)


@gpu_kernel(Kernel1D)
def device_store(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    store_twice(out, i, x[i])


@gpu_kernel(Kernel1D)
def device_store_clamped(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    store_clamped(out, i, x[i])


@gpu_kernel(Kernel1D)
def reused_loop_name(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    # `i` is an i64 from the grid-stride loop; the range() of i32 bounds then counts in i64.
    acc = f32(0.0)
    for i in FlatLayout1D.grid_stride(len(x)):
        acc += x[i]
    for i in range(thread_idx.x, 8, 32):
        acc += x[i] * 100.0
    out[FlatLayout1D.uid()] = acc


@gpu_kernel(Kernel1D)
def sizes(a: CUDASlice2D[f32], b: CUDASlice[f32], out: CUDASliceMut[i64]):
    # NumPy's a.size (the product of the extents) and a.ndim.
    i = FlatLayout1D.uid()
    if i < b.size:
        out[i] = a.size * 10 + a.ndim + b.ndim * 100 + i


@gpu_kernel(Kernel1D, specializations=[f32, f64, i32])
def generic_axpy(alpha: T, x: CUDASlice[T], y: CUDASlice[T], out: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    out[i] = alpha * x[i] + y[i]


# ---- half precision and math ----------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def half_math(x: CUDASlice[f16], y: CUDASlice[bf16], out: CUDASliceMut2D[f32],
              h: CUDASliceMut[f16], b: CUDASliceMut[bf16]):
    i = FlatLayout1D.uid()
    hx = x[i]
    by = y[i]
    h[i] = hx * hx + hx
    b[i] = by * by - by
    out[i, 0] = f32(hx) * 2.0
    out[i, 1] = f32(by) * 2.0
    out[i, 2] = f32(max(hx, f16(0.5)))


@gpu_kernel(Kernel1D)
def math_functions(x: CUDASlice[f32], out: CUDASliceMut2D[f32]):
    i = FlatLayout1D.uid()
    v = x[i]
    a = abs(v) + 0.5
    out[i, 0] = math.sqrt(a)
    out[i, 1] = math.exp(v)
    out[i, 2] = math.log(a)
    out[i, 3] = math.sin(v)
    out[i, 4] = math.cos(v)
    out[i, 5] = math.tanh(v)
    out[i, 6] = math.atan2(v, a)
    out[i, 7] = math.pow(a, 1.5)
    out[i, 8] = math.floor(v)
    out[i, 9] = math.erf(v)
    out[i, 10] = min(v, 0.25)
    out[i, 11] = max(v, -0.25)
    out[i, 12] = f32(round(v * 4.0))
    out[i, 13] = math.hypot(v, 2.0)
    out[i, 14] = math.fabs(v) ** 2
    out[i, 15] = f32(math.pi) if ENABLED else 0.0


@gpu_kernel(Kernel1D)
def ldexp_both(x: CUDASlice[f32], y: CUDASlice[f64], k: CUDASlice[i32], out32: CUDASliceMut[f32],
               out64: CUDASliceMut[f64], out_half: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out32[i] = math.ldexp(x[i], k[i])
    out64[i] = math.ldexp(y[i], k[i] * 20)
    out_half[i] = math.ldexp(f16(x[i]), -3)  # a half computes in f32


# ---- integer semantics ---------------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def int_semantics(a: CUDASlice[i32], b: CUDASlice[i32], f: CUDASlice[f32],
                  out: CUDASliceMut2D[i64]):
    i = FlatLayout1D.uid()
    x = a[i]
    y = b[i]
    out[i, 0] = x // y
    out[i, 1] = x % y
    out[i, 2] = x * 65537          # wraps in i32
    out[i, 3] = x << (y % 40)      # counts past 31 give 0
    out[i, 4] = x >> (y % 40)
    out[i, 5] = i32(f[i])          # truncates and saturates; NaN gives 0
    out[i, 6] = -x
    out[i, 7] = i64(u32(x))        # wraps into u32


# ---- control flow, print, assert, unsafe -----------------------------------------------------------

@gpu_kernel(Kernel1D)
def control_flow(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    i: UniqueId = FlatLayout1D.uid()
    if i >= len(out):
        return
    v = x[i]
    total = 0
    k = 0
    while True:
        k += 1
        if k % 3 == 0:
            continue
        if k > v:
            break
        total += k
    for j in range(10, 0, -3):
        total += j if v % 2 == 0 else -j
    out[i] = total


@gpu_kernel(Kernel1D)
def printer(x: CUDASlice[i32]):
    i = FlatLayout1D.uid()
    if i < 2:
        print("thread", i, "value", x[i], "half", f32(x[i]) / 2.0, "odd", x[i] % 2 == 1)


@gpu_kernel(Kernel1D)
def pairwise_unsafe(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i % 2 == 0 and i + 1 < len(x):
        with unsafe():
            out[i // 2] = x[i] + x[i + 1]
