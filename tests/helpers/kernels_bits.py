"""Kernels of the bit intrinsics, bit casts, fences, block votes and warp matches
(tests/test_bits_sync.py launches them; tests/test_nvrtc_all.py compiles them)."""

from typing import TypeVar

from gpu_native import (
    BlockLayout1D,
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    activemask,
    bf16,
    bitcast,
    block_dim,
    block_idx,
    brev,
    byte_perm,
    clz,
    ctz,
    f16,
    f32,
    f64,
    ffs,
    funnelshift_l,
    funnelshift_lc,
    funnelshift_r,
    funnelshift_rc,
    gpu_kernel,
    grid_dim,
    i16,
    i32,
    i64,
    lane_id,
    match_all,
    match_any,
    popc,
    shared_array,
    sync_threads,
    sync_threads_and,
    sync_threads_count,
    sync_threads_or,
    thread_idx,
    threadfence,
    threadfence_block,
    threadfence_system,
    u16,
    u32,
    u64,
    warp_size,
)

T = TypeVar("T", i32, u32, i64, u64)


# ---- bits ----------------------------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def bit_counts(x: CUDASlice[T], counts: CUDASliceMut2D[i32], reversed_: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    v = x[i]
    counts[i, 0] = popc(v)
    counts[i, 1] = clz(v)
    counts[i, 2] = ctz(v)
    counts[i, 3] = ffs(v)
    reversed_[i] = brev(v)
    # The result types: i32 counts (so `- 1` stays signed), and brev keeps x's type.
    counts[i, 4] = ffs(v) - 1
    counts[i, 5] = i32(brev(v) == x[i])


@gpu_kernel(Kernel1D)
def words(x: CUDASlice[u32], y: CUDASlice[u32], s: CUDASlice[u32], signed_y: CUDASlice[i32],
          out: CUDASliceMut2D[u32]):
    i = FlatLayout1D.uid()
    out[i, 0] = byte_perm(x[i], y[i], s[i])
    out[i, 1] = funnelshift_l(x[i], y[i], s[i])
    out[i, 2] = funnelshift_lc(x[i], y[i], s[i])
    out[i, 3] = funnelshift_r(x[i], y[i], s[i])
    out[i, 4] = funnelshift_rc(x[i], y[i], s[i])
    out[i, 5] = byte_perm(x[i], signed_y[i], 0x7531)  # an i32 operand is taken as its bits
    out[i, 6] = funnelshift_l(signed_y[i], x[i], 8)
    out[i, 7] = byte_perm(x[i], y[i], 0xBA98)  # bit 3 of each selector nibble is ignored


@gpu_kernel(Kernel1D)
def bitcasts32(f: CUDASlice[f32], u: CUDASlice[u32], as_u: CUDASliceMut[u32],
               as_i: CUDASliceMut[i32], as_f: CUDASliceMut[f32], trip: CUDASliceMut[u32],
               sign: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    as_u[i] = bitcast(f[i], u32)
    as_i[i] = bitcast(f[i], i32)
    as_f[i] = bitcast(u[i], f32)
    trip[i] = bitcast(bitcast(u[i], f32), u32)  # NaN payloads survive
    sign[i] = bitcast(-f[i], u32) ^ bitcast(f[i], u32)


@gpu_kernel(Kernel1D)
def bitcasts64(d: CUDASlice[f64], u: CUDASlice[u64], as_u: CUDASliceMut[u64],
               as_i: CUDASliceMut[i64], as_d: CUDASliceMut[f64], trip: CUDASliceMut[u64]):
    i = FlatLayout1D.uid()
    as_u[i] = bitcast(d[i], u64)
    as_i[i] = bitcast(d[i], i64)
    as_d[i] = bitcast(u[i], f64)
    trip[i] = bitcast(bitcast(u[i], f64), u64)


@gpu_kernel(Kernel1D)
def bitcasts16(u: CUDASlice[u16], h: CUDASlice[f16], b: CUDASlice[bf16],
               out: CUDASliceMut2D[u16], as_h: CUDASliceMut[f16], as_b: CUDASliceMut[bf16]):
    i = FlatLayout1D.uid()
    out[i, 0] = bitcast(bitcast(u[i], f16), u16)
    out[i, 1] = bitcast(bitcast(u[i], bf16), u16)
    out[i, 2] = bitcast(h[i], u16)
    out[i, 3] = bitcast(b[i], u16)
    out[i, 4] = u16(bitcast(bitcast(u[i], i16), u16))
    out[i, 5] = bitcast(bitcast(h[i], bf16), u16)  # f16 bits read as a bf16
    as_h[i] = bitcast(u[i], f16)
    as_b[i] = bitcast(i16(u[i]), bf16)


# ---- block votes and fences ----------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def block_votes(flags: CUDASlice[i32], counts: CUDASliceMut[i32], alls: CUDASliceMut[i32],
                anys: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    counts[i] = sync_threads_count(flags[i] != 0)
    alls[i] = i32(sync_threads_and(flags[i] != 0))
    anys[i] = i32(sync_threads_or(flags[i]))  # a number is tested against zero


@gpu_kernel(Kernel1D)
def votes_after_exit(flags: CUDASlice[i32], live: i32, counts: CUDASliceMut[i32]):
    """Threads past ``live`` in each block return before the barrier: the GPU's barrier and the
    simulator's count only the threads that have not exited."""
    t = thread_idx.x
    i = FlatLayout1D.uid()
    if t >= live:
        return
    counts[i] = sync_threads_count(flags[i] > 0)


@gpu_kernel(Kernel1D)
def vote_in_loop(flags: CUDASlice[i32], rounds: CUDASliceMut[i32]):
    """A barrier in a loop condition: every thread runs it once per round."""
    i = FlatLayout1D.uid()
    k: i32 = 0
    while sync_threads_or(k < flags[i]):
        k += 1
    rounds[i] = k


@gpu_kernel(Kernel1D)
def count_positive(x: CUDASlice[f32], partial: CUDASliceMut[i32], tickets: CUDASliceMut[i32],
                   total: CUDASliceMut[i32]):
    """The last-block pattern: each block publishes its count, fences, takes a ticket; the block
    that takes the last ticket sums what the others published."""
    i = FlatLayout1D.uid()
    positive = i < len(x) and x[i] > 0.0
    here = sync_threads_count(positive)
    last = False
    if thread_idx.x == 0:
        partial.atomic_ref(block_idx.x).store(here)
        threadfence()
        last = tickets.atomic_ref(0).fetch_add(1) == grid_dim.x - 1
    if sync_threads_or(last):
        threadfence_block()
        if thread_idx.x == 0:
            threadfence_system()
            acc: i32 = 0
            for b in range(grid_dim.x):
                acc += partial.atomic_ref(b).load()
            total.atomic_ref(0).store(acc)


# ---- warps -----------------------------------------------------------------------------------

@gpu_kernel(Kernel1D)
def warp_matches(keys: CUDASlice[i32], fkeys: CUDASlice[f32], dkeys: CUDASlice[f64],
                 wkeys: CUDASlice[u64], out: CUDASliceMut2D[u32]):
    i = FlatLayout1D.uid()
    out[i, 0] = match_any(keys[i])
    out[i, 1] = match_all(keys[i])
    out[i, 2] = match_any(fkeys[i])  # floats compare their bits: -0.0 is not 0.0
    out[i, 3] = match_all(fkeys[i], mask=0xFFFFFFFF)
    out[i, 4] = match_any(dkeys[i])
    out[i, 5] = match_any(wkeys[i])
    out[i, 6] = activemask()
    if lane_id() < 12:
        out[i, 7] = match_any(keys[i], 0x00000FFF)
        out[i, 8] = match_all(u32(keys[i] & 1), 0x00000FFF)


@gpu_kernel(Kernel1D)
def partial_warps(keys: CUDASlice[i32], out: CUDASliceMut2D[u32]):
    """Blocks whose last warp is not full: the lanes that exist, named by activemask()."""
    i = FlatLayout1D.uid()
    here = activemask()
    out[i, 0] = here
    out[i, 1] = match_any(keys[i], here)
    out[i, 2] = match_all(keys[i] // 1000, here)


@gpu_kernel(Kernel1D)
def warp_size_uses(out: CUDASliceMut2D[i32]):
    s = shared_array(i32, warp_size * 2)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    if t < warp_size * 2:
        s[t] = i32(t) % warp_size
    sync_threads()
    out[i, 0] = i32(thread_idx.x % warp_size == lane_id())
    out[i, 1] = s[i32(t) % (warp_size * 2)]
    out[i, 2] = block_dim.x // warp_size
