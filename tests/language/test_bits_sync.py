"""The bit intrinsics, bit casts, fences, block votes and warp matches: on the simulator and
(GPU-marked) on the GPU against pure-Python references of CUDA's definitions, bit for bit.  These
operations are deterministic, so every comparison is exact; the GPU runs are the proof that the
simulator computes what the hardware computes."""

from __future__ import annotations

import importlib
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module
from tests.simulator.support import build, launch, poisoned

ROOT = Path(__file__).resolve().parents[2]
INT_TYPES = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}


@pytest.fixture(scope="module")
def kb():
    from tests.helpers import kernels_bits

    return kernels_bits


def run(kernel, grid, block, *args):
    kernel.launch(gn.GridDim1D(grid), gn.BlockDim1D(block), 0, gn.DEFAULT_STREAM)(*args)


def filled(shape, dtype, value):
    out = gn.empty(shape, dtype)
    out.fill(value)
    return out


# ---- references: CUDA's definitions, in Python integers ------------------------------------------

def popc_ref(v: int, bits: int) -> int:
    return bin(v & ((1 << bits) - 1)).count("1")


def clz_ref(v: int, bits: int) -> int:
    return bits - (v & ((1 << bits) - 1)).bit_length()


def ctz_ref(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return bits if v == 0 else (v & -v).bit_length() - 1


def ffs_ref(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return 0 if v == 0 else ctz_ref(v, bits) + 1


def brev_ref(v: int, bits: int) -> int:
    return int(f"{v & ((1 << bits) - 1):0{bits}b}"[::-1], 2)


def byte_perm_ref(x: int, y: int, s: int) -> int:
    source = (y << 32) | x
    return sum(((source >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4))


def funnel_ref(lo: int, hi: int, shift: int, left: bool, clamp: bool) -> int:
    n = min(shift, 32) if clamp else shift & 31
    source = (hi << 32) | lo
    return ((source << n) >> 32) & 0xFFFFFFFF if left else (source >> n) & 0xFFFFFFFF


def edge_values(dtype) -> np.ndarray:
    """0, 1, all ones, the sign bit alone, the largest value, single bits, alternating bits."""
    bits = np.dtype(dtype).itemsize * 8
    words = [0, 1, 2, 3, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1,
             (1 << (bits - 1)) | 1, int("01" * (bits // 2), 2), int("10" * (bits // 2), 2),
             0xFF, 0xFF << (bits - 8), 1 << (bits // 2), (1 << (bits // 2)) - 1]
    words += [1 << k for k in range(bits)]
    return np.array(words, np.uint64 if bits == 64 else np.uint32).view(dtype)


def random_bits(rng, n: int, dtype) -> np.ndarray:
    """Random words of every density (few set bits, half, most)."""
    itemsize = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, (n, itemsize), dtype=np.uint8)
    sparse = raw & rng.integers(0, 256, (n, itemsize), dtype=np.uint8)
    dense = raw | rng.integers(0, 256, (n, itemsize), dtype=np.uint8)
    pick = rng.integers(0, 3, (n, 1))
    mixed = np.where(pick == 0, sparse, np.where(pick == 1, raw, dense)).astype(np.uint8)
    return np.ascontiguousarray(mixed).view(dtype).reshape(n)


# ---- bit counts and brev -------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("ty", sorted(INT_TYPES))
def test_bit_counts_and_brev(backend, kb, rng, ty):
    dtype = INT_TYPES[ty]
    bits = np.dtype(dtype).itemsize * 8
    x = np.concatenate([edge_values(dtype), random_bits(rng, 2000, dtype)])
    n = len(x)
    counts = filled((n, 6), gn.i32, -99)
    reversed_ = gn.zeros(n, getattr(gn, ty))
    run(kb.bit_counts, (n + 127) // 128, 128, gn.to_device(x), counts, reversed_)
    got = counts.to_host()
    words = [int(v) for v in x.astype(np.uint64 if bits == 64 else np.uint32)]
    expected = np.array([[popc_ref(v, bits), clz_ref(v, bits), ctz_ref(v, bits),
                          ffs_ref(v, bits), ffs_ref(v, bits) - 1,
                          int(brev_ref(v, bits) == v)] for v in words], np.int32)
    np.testing.assert_array_equal(got, expected)
    unsigned = np.uint64 if bits == 64 else np.uint32
    np.testing.assert_array_equal(reversed_.to_host().view(unsigned),
                                  np.array([brev_ref(v, bits) for v in words], unsigned))


# ---- byte_perm and the funnel shifts -------------------------------------------------------------

SHIFTS = [0, 1, 7, 8, 31, 32, 33, 40, 63, 64, 65, 100, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]


def test_byte_perm_and_funnel_shifts(backend, kb, rng):
    edges = edge_values(np.uint32)
    n = 3000
    x = np.concatenate([np.repeat(edges, len(SHIFTS)), random_bits(rng, n, np.uint32)])
    y = np.concatenate([np.tile(edges[::-1], len(SHIFTS)), random_bits(rng, n, np.uint32)])
    s = np.concatenate([np.tile(np.array(SHIFTS, np.uint32), len(edges)),
                        rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)])
    s[-200:] = rng.integers(0, 70, 200)  # shifts around 32 and 64, selectors of small nibbles
    signed_y = y.view(np.int32)
    total = len(x)
    out = filled((total, 8), gn.u32, 0xDEADBEEF)
    run(kb.words, (total + 255) // 256, 256, *(gn.to_device(a) for a in (x, y, s, signed_y)),
        out)
    got = out.to_host()
    for row, (a, b, c) in enumerate(zip(x.tolist(), y.tolist(), s.tolist())):
        expected = [byte_perm_ref(a, b, c), funnel_ref(a, b, c, True, False),
                    funnel_ref(a, b, c, True, True), funnel_ref(a, b, c, False, False),
                    funnel_ref(a, b, c, False, True), byte_perm_ref(a, b, 0x7531),
                    funnel_ref(b, a, 8, True, False), byte_perm_ref(a, b, 0x3210)]
        assert got[row].tolist() == expected, (row, hex(a), hex(b), hex(c))


# ---- bit casts ---------------------------------------------------------------------------------

FLOAT32_BITS = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000,
                0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFC00123, 0x00000001,
                0x807FFFFF, 0x7F7FFFFF, 0x00800000]


def test_bitcasts_32(backend, kb, rng):
    u = np.concatenate([np.array(FLOAT32_BITS, np.uint32), random_bits(rng, 3000, np.uint32)])
    f = u.view(np.float32)
    n = len(u)
    as_u, trip, sign = (filled(n, gn.u32, 0) for _ in range(3))
    as_i, as_f = filled(n, gn.i32, 0), filled(n, gn.f32, 0)
    run(kb.bitcasts32, (n + 127) // 128, 128, gn.to_device(f), gn.to_device(u), as_u, as_i,
        as_f, trip, sign)
    np.testing.assert_array_equal(as_u.to_host(), u)
    np.testing.assert_array_equal(as_i.to_host(), u.view(np.int32))
    np.testing.assert_array_equal(as_f.to_host().view(np.uint32), u)  # NaN payloads too
    np.testing.assert_array_equal(trip.to_host(), u)
    numbers = ~np.isnan(f)  # -x of a NaN is some NaN: only numbers have a defined sign flip
    np.testing.assert_array_equal(sign.to_host()[numbers], 0x80000000)


def test_bitcasts_64(backend, kb, rng):
    edges = [0, 1 << 63, 0x3FF0000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
             0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000ABC, 1, (1 << 64) - 1]
    u = np.concatenate([np.array(edges, np.uint64), random_bits(rng, 2000, np.uint64)])
    d = u.view(np.float64)
    n = len(u)
    as_u, trip = filled(n, gn.u64, 0), filled(n, gn.u64, 0)
    as_i, as_d = filled(n, gn.i64, 0), filled(n, gn.f64, 0)
    run(kb.bitcasts64, (n + 127) // 128, 128, gn.to_device(d), gn.to_device(u), as_u, as_i,
        as_d, trip)
    np.testing.assert_array_equal(as_u.to_host(), u)
    np.testing.assert_array_equal(as_i.to_host(), u.view(np.int64))
    np.testing.assert_array_equal(as_d.to_host().view(np.uint64), u)
    np.testing.assert_array_equal(trip.to_host(), u)


def test_bitcasts_16_every_pattern(backend, kb):
    u = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    h = u.view(np.float16)
    f32 = (u.astype(np.uint32) << 16).view(np.float32)
    b_nan = np.isnan(f32)
    # Uploading a bf16 array rounds float32 to bf16, which quiets signalling NaNs: give it
    # only the numbers (the kernel's own bitcast from u16 covers the NaN patterns).
    b_in = np.where(b_nan, np.float32(0), f32)
    n = len(u)
    out = filled((n, 6), gn.u16, 0xABCD)
    as_h, as_b = gn.zeros(n, gn.f16), gn.zeros(n, gn.bf16)
    run(kb.bitcasts16, n // 256, 256, gn.to_device(u), gn.to_device(h),
        gn.to_device(b_in, gn.bf16), out, as_h, as_b)
    got = out.to_host()
    np.testing.assert_array_equal(got[:, 0], u)  # u16 -> f16 -> u16, NaN payloads included
    np.testing.assert_array_equal(got[:, 1], u)  # u16 -> bf16 -> u16
    np.testing.assert_array_equal(got[:, 2], u)
    np.testing.assert_array_equal(got[:, 3], np.where(b_nan, 0, u))
    np.testing.assert_array_equal(got[:, 4], u)
    np.testing.assert_array_equal(got[:, 5], u)
    np.testing.assert_array_equal(as_h.to_host().view(np.uint16), u)
    numbers = ~b_nan  # a stored bf16 NaN may be quieted on its way to the host: numbers only
    host = as_b.to_host()  # ml_dtypes' bfloat16 where it is installed, else exact float32
    stored = host.view(np.uint16) if host.dtype.itemsize == 2 else host.view(np.uint32) >> 16
    np.testing.assert_array_equal(stored[numbers], u[numbers])


# ---- block votes and fences ----------------------------------------------------------------------

@pytest.mark.parametrize("block", [32, 48, 128, 1024])
def test_block_votes(backend, kb, rng, block):
    blocks = 5
    n = blocks * block
    flags = rng.integers(0, 2, n).astype(np.int32) * rng.integers(1, 5, n).astype(np.int32)
    flags[:block] = 1  # a block of all true
    flags[block:2 * block] = 0  # a block of all false
    flags[2 * block:3 * block] = 0
    flags[3 * block - 1] = -7  # one true, the last thread's
    counts, alls, anys = (filled(n, gn.i32, -1) for _ in range(3))
    run(kb.block_votes, blocks, block, gn.to_device(flags), counts, alls, anys)
    per_block = (flags != 0).reshape(blocks, block)
    expected_count = np.repeat(per_block.sum(axis=1), block)
    np.testing.assert_array_equal(counts.to_host(), expected_count)
    np.testing.assert_array_equal(alls.to_host(), np.repeat(per_block.all(axis=1), block))
    np.testing.assert_array_equal(anys.to_host(), np.repeat(per_block.any(axis=1), block))


def test_block_vote_counts_only_threads_that_have_not_exited(backend, kb, rng):
    blocks, block, live = 3, 96, 70
    flags = rng.integers(-1, 2, blocks * block).astype(np.int32)
    counts = filled(blocks * block, gn.i32, -1)
    run(kb.votes_after_exit, blocks, block, gn.to_device(flags), np.int32(live), counts)
    got = counts.to_host().reshape(blocks, block)
    positive = (flags > 0).reshape(blocks, block)[:, :live].sum(axis=1)
    np.testing.assert_array_equal(got[:, :live], np.repeat(positive[:, None], live, axis=1))
    np.testing.assert_array_equal(got[:, live:], -1)


def test_block_vote_in_a_loop_condition(backend, kb, rng):
    blocks, block = 4, 64
    flags = rng.integers(0, 9, blocks * block).astype(np.int32)
    rounds = filled(blocks * block, gn.i32, -1)
    run(kb.vote_in_loop, blocks, block, gn.to_device(flags), rounds)
    # Every thread loops until no thread of its block wants another round.
    np.testing.assert_array_equal(rounds.to_host(),
                                  np.repeat(flags.reshape(blocks, block).max(axis=1), block))


@pytest.mark.parametrize("n", [1, 1000, 40000])
def test_fenced_last_block_reduction(backend, kb, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    block = 256
    blocks = (n + block - 1) // block
    partial, tickets, total = gn.zeros(blocks, gn.i32), gn.zeros(1, gn.i32), filled(1, gn.i32, -1)
    run(kb.count_positive, blocks, block, gn.to_device(x), partial, tickets, total)
    assert total.to_host()[0] == int((x > 0).sum())
    assert tickets.to_host()[0] == blocks


# ---- warps -------------------------------------------------------------------------------------

def match_any_ref(values: list, mask: int, lanes: range) -> list[int]:
    """Per lane: the lanes of ``mask`` with that lane's value (``values`` compared as bits)."""
    return [sum(1 << j for j in lanes if mask >> j & 1 and values[j] == values[k])
            for k in lanes]


def match_all_ref(values: list, mask: int, lanes: range) -> list[int]:
    named = [values[j] for j in lanes if mask >> j & 1]
    return [mask if len(set(named)) == 1 else 0 for _ in lanes]


def test_warp_matches(backend, kb, rng):
    warps = 24
    n = warps * 32
    keys = rng.integers(0, 4, n).astype(np.int32)
    keys[:32] = 7  # a warp of one value
    keys[32:64] = np.arange(32)  # a warp of all different values
    keys[64:96] = np.where(np.arange(32) < 12, 5, np.arange(32))  # the first 12 lanes agree
    fkeys = rng.integers(0, 3, n).astype(np.float32) - 1
    fkeys[96:128] = np.where(np.arange(32) % 2, np.float32(0.0), np.float32(-0.0))
    fkeys[128:160] = np.float32(np.nan)  # one NaN bit pattern: all equal
    fkeys[160:192] = 2.5
    dkeys = rng.integers(0, 3, n) * 1e300
    wkeys = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(40)
    out = filled((n, 9), gn.u32, 0xDEADBEEF)
    run(kb.warp_matches, warps // 4, 128, *(gn.to_device(a) for a in (keys, fkeys, dkeys,
                                                                      wkeys)), out)
    got = out.to_host()
    full, low = 0xFFFFFFFF, 0x00000FFF
    for w in range(warps):
        rows = slice(32 * w, 32 * w + 32)
        k = keys[rows].tolist()
        fbits = fkeys[rows].view(np.uint32).tolist()
        lanes = range(32)
        assert got[rows, 0].tolist() == match_any_ref(k, full, lanes), w
        assert got[rows, 1].tolist() == match_all_ref(k, full, lanes), w
        assert got[rows, 2].tolist() == match_any_ref(fbits, full, lanes), w
        assert got[rows, 3].tolist() == match_all_ref(fbits, full, lanes), w
        assert got[rows, 4].tolist() == match_any_ref(dkeys[rows].tolist(), full, lanes), w
        assert got[rows, 5].tolist() == match_any_ref(wkeys[rows].tolist(), full, lanes), w
        assert got[rows, 6].tolist() == [full] * 32, w
        odd = [v & 1 for v in k]
        assert got[rows, 7].tolist()[:12] == match_any_ref(k, low, range(12)), w
        assert got[rows, 8].tolist()[:12] == match_all_ref(odd, low, range(12)), w
        assert got[rows, 7].tolist()[12:] == [0xDEADBEEF] * 20, w
    # The warps built to agree, or not.
    assert got[0, 1] == full and got[32, 1] == 0 and got[64, 8] in (0, low)
    assert got[128, 3] == full and got[96, 3] == 0 and got[160, 3] == full


def test_partial_warps_see_only_their_lanes(backend, kb, rng):
    block, blocks = 48, 3  # the second warp of each block has 16 lanes
    n = block * blocks
    keys = (rng.integers(0, 3, n) + 1000 * (np.arange(n) % block >= 40)).astype(np.int32)
    out = filled((n, 3), gn.u32, 0)
    run(kb.partial_warps, blocks, block, gn.to_device(keys), out)
    got = out.to_host()
    for b in range(blocks):
        for first, size in ((0, 32), (32, 16)):
            rows = slice(b * block + first, b * block + first + size)
            mask = (1 << size) - 1
            k = keys[rows].tolist()
            assert got[rows, 0].tolist() == [mask] * size
            assert got[rows, 1].tolist() == match_any_ref(k, mask, range(size))
            assert got[rows, 2].tolist() == match_all_ref([v // 1000 for v in k], mask,
                                                          range(size))


def test_warp_size(backend, kb):
    block = 96
    out = filled((block, 3), gn.i32, -1)
    run(kb.warp_size_uses, 1, block, out)
    got = out.to_host()
    np.testing.assert_array_equal(got[:, 0], 1)
    np.testing.assert_array_equal(got[:, 1], np.arange(block) % 64 % 32)
    np.testing.assert_array_equal(got[:, 2], block // 32)
    assert gn.warp_size == 32


# ---- the simulator's checks of the barriers ----------------------------------------------------

SIM_KERNELS = """
from gpu_native import *

@gpu_kernel(Kernel1D)
def divergent_vote(out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    c = 0
    if thread_idx.x < 16:
        c = sync_threads_count(True)
    out[i] = c

@gpu_kernel(Kernel1D)
def vote_orders_shared(x: CUDASlice[f32], out: CUDASliceMut[f32], use_vote: bool_):
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    s[t] = x[i]
    if use_vote:
        sync_threads_and(True)
    with unsafe():  # without the vote it races, which the checker refuses
        out[i] = s[63 - t]

@gpu_kernel(Kernel1D)
def divergent_match(x: CUDASlice[i32], out: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    if lane_id() < 8:
        out[i] = match_any(x[i])
"""


@pytest.fixture(scope="module")
def sk(tmp_path_factory):
    return build(tmp_path_factory.mktemp("bitsync"), SIM_KERNELS)


def test_simulator_reports_a_block_vote_in_divergent_code(sk):
    errors = launch(sk["divergent_vote"], 1, 64, poisoned(64, np.int32))
    assert len(errors.races) == 1
    assert errors.races[0].startswith("sync_threads_count() at ")
    assert "a barrier in divergent code" in errors.races[0]
    assert "reach the same sync_threads_count()" in errors.races[0]


def test_a_block_vote_orders_shared_memory_like_sync_threads(sk):
    x = np.arange(64, dtype=np.float32)
    out = poisoned(64, np.float32)
    assert launch(sk["vote_orders_shared"], 1, 64, x, out, np.bool_(True)).races == []
    np.testing.assert_array_equal(out, x[::-1])
    errors = launch(sk["vote_orders_shared"], 1, 64, x, poisoned(64, np.float32),
                    np.bool_(False))
    assert errors.races and "sync_threads()" in errors.races[0]


def test_simulator_reports_a_match_mask_naming_absent_lanes(sk):
    errors = launch(sk["divergent_match"], 1, 32, np.zeros(32, np.int32),
                    poisoned(32, np.uint32))
    assert len(errors.races) == 1
    assert "match_any() at " in errors.races[0] and "mask 0xffffffff" in errors.races[0]


# ---- misuse: transpile errors --------------------------------------------------------------------

HEADER = """\
from gpu_native import *
"""

ERRORS = {
    "popc of a float": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f32(popc(a[i]))  # <-
""", "popc() takes a 32- or 64-bit integer (i32, u32, i64, u64), not f32"),
    "clz of a narrow integer": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[u8], b: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    b[i] = clz(a[i])  # <-
""", "clz() takes a 32- or 64-bit integer (i32, u32, i64, u64), not u8"),
    "brev of a bool": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[bool_], b: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    b[i] = i32(brev(a[i]))  # <-
""", "brev() takes a 32- or 64-bit integer (i32, u32, i64, u64), not bool_"),
    "funnel shift of a 64-bit word": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[u64], b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = funnelshift_l(u32(1), u32(2), a[i])  # <-
""", "funnelshift_l()'s shift must be a 32-bit integer (u32 or i32), not u64"),
    "byte_perm of a float": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = byte_perm(a[i], u32(0), u32(0x3210))  # <-
""", "byte_perm()'s x must be a 32-bit integer (u32 or i32), not f32"),
    "negative literal word": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[u32], b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = funnelshift_r(a[i], a[i], -1)  # <-
""", "funnelshift_r()'s shift: the literal -1 does not fit in u32"),
    "bitcast between widths": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], b: CUDASliceMut[u64]):
    i = FlatLayout1D.uid()
    b[i] = bitcast(a[i], u64)  # <-
""", "bitcast() needs two types of one width: f32 has 32 bits, u64 has 64"),
    "bitcast to bool": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[u8], b: CUDASliceMut[bool_]):
    i = FlatLayout1D.uid()
    b[i] = bitcast(a[i], bool_)  # <-
""", "bitcast() reinterprets the bits of numbers; bool_ is not one"),
    "bitcast to a non-type": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = bitcast(a[i], 32)  # <-
""", "unsupported annotation"),
    "bitcast without a type": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = bitcast(a[i])  # <-
""", "bitcast() is missing argument 'dtype'"),
    "match of a half": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f16], b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = match_any(a[i])  # <-
""", "match_any() compares a value of i32, u32, i64, u64, f32, f64, not f16"),
    "activemask with an argument": ("""
@gpu_kernel(Kernel1D)
def k(b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = activemask(FULL_MASK)  # <-
""", "activemask() takes no arguments"),
    "fence with an argument": ("""
@gpu_kernel(Kernel1D)
def k(b: CUDASliceMut[u32]):
    threadfence(1)  # <-
""", "threadfence() takes no arguments"),
    "fence used as a value": ("""
@gpu_kernel(Kernel1D)
def k(b: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    b[i] = threadfence_block()  # <-
""", "threadfence_block() is a statement, not a value"),
    "block vote without a predicate": ("""
@gpu_kernel(Kernel1D)
def k(b: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    b[i] = sync_threads_count()  # <-
""", "sync_threads_count() is missing argument 'predicate'"),
    "block vote of an array": ("""
@gpu_kernel(Kernel1D)
def k(b: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    b[i] = sync_threads_count(b)  # <-
""", "sync_threads_count()'s predicate must be a bool or a number"),
    "warp_size is not assignable": ("""
@gpu_kernel(Kernel1D)
def k(b: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    b[i] = warp_size()  # <-
""", "gpu_native.warp_size cannot be called in a kernel"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_misuse_is_a_transpile_error(name):
    body, message = ERRORS[name]
    source = HEADER + textwrap.dedent(body)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, "bad.py", "bad")
    text = str(info.value)
    assert message in text, text
    marked = [k for k, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith("# <-")]
    assert f"bad.py:{marked[0]}:" in text, text


# ---- the docs --------------------------------------------------------------------------------------

def _doc_snippets() -> list[str]:
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    start = text.index("## Bits, fences and block votes")
    part = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```python\n(.*?)```", part, re.S)


@pytest.mark.parametrize("index", range(3))
def test_docs_snippets_run(backend, tmp_path, monkeypatch, index, capsys):
    # Their asserts are on integers and masks, exact on both backends (the third asserts
    # nothing about activemask(), which the GPU may split further than the simulator).
    snippets = _doc_snippets()
    assert len(snippets) == 3
    name = f"doc_snippet_{index}_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippets[index])
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"
