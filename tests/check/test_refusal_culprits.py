"""A store refused because its index has no affine form names the part of the index that has
none: a value loaded from memory, a local whose value at the store is not known, an operation of
thread values the rules do not follow (instead of a list of every possible cause)."""

from __future__ import annotations

import textwrap

import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

HEAD = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, f32, i32, u32, block_dim,
                        thread_idx, FlatLayout1D)
"""


def refusal(body: str) -> str:
    source = HEAD + textwrap.dedent(body)
    with pytest.raises(TranspileError) as info:
        transpile_module(source, "culprit.py", "culprit")
    return str(info.value)


def test_a_gather_names_the_array_it_reads():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(perm: CUDASlice[i32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(perm):
        out[perm[i]] = 1.0
""")
    assert "'perm[...]' is read at an index that differs between threads" in text, text
    assert "culprit.py:" in text
    # A scatter through a permutation: the hint names the atomic store, which is accepted.
    assert "write c.atomic_ref(i).store(v) for a scatter whose indices only the data keep " \
           "apart" in text, text


def test_the_atomic_store_a_scatter_is_told_of_runs(sim, kernel_module):
    import numpy as np

    import gpu_native as gn

    m = kernel_module(HEAD + textwrap.dedent("""
        @gpu_kernel(Kernel1D)
        def k(perm: CUDASlice[i32], x: CUDASlice[f32], out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            if i < len(perm):
                out.atomic_ref(perm[i]).store(x[i])
        """))
    rng = np.random.default_rng(3)
    perm = rng.permutation(200).astype(np.int32)
    x = rng.standard_normal(200).astype(np.float32)
    out = gn.empty(200, gn.f32)
    out.fill(np.nan)
    m.k.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(perm), gn.to_device(x), out)
    want = np.empty(200, np.float32)
    want[perm] = x
    np.testing.assert_array_equal(out.to_host(), want)


def test_a_load_from_an_array_the_kernel_writes_names_it():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(slots: CUDASliceMut[i32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(slots):
        out[slots[0] + i] = 1.0
""")
    assert "'slots[...]' is read from a global array the kernel may change" in text, text


def test_a_local_assigned_under_a_thread_dependent_branch_is_named():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    t = thread_idx.x
    j = t
    if t % 3 == 0:
        j = t + 1
    out[j] = 1.0
""")
    assert "'j' is assigned more than once" in text, text


def test_a_warp_aggregated_ticket_is_named_as_a_shuffled_value():
    # Adinets' warp-aggregated filter: the slot is the leader's ticket shuffled to the warp,
    # plus the lane's rank; the refusal says the proofs do not follow a shuffle's result (it
    # spoke only of while-loop counters).
    text = refusal("""
from gpu_native import ballot, popc, lane_id, shfl_idx, ffs

@gpu_kernel(Kernel1D)
def k(src: CUDASlice[f32], dst: CUDASliceMut[f32], nres: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    pred = i < len(src) and src[i] > 0.0
    mask = ballot(pred)
    lane = lane_id()
    leader = ffs(mask) - 1
    base = 0
    if lane == leader:
        base = nres.atomic_ref(0).fetch_add(popc(mask))
    base = shfl_idx(base, leader)
    if pred:
        dst[base + popc(mask & ((u32(1) << u32(lane)) - u32(1)))] = src[i]
""")
    assert ("'base' is assigned more than once" in text
            and "not a value chosen under a condition or returned by a shuffle, an atomic or a "
                "call" in text), text
    # The hint names the idiom, why no rule follows it, and the two ways out.
    assert "a lane's rank among its warp's passing lanes (popc of a ballot)" in text, text
    assert "fetch_add(1)` (one draw per thread, proven unique)" in text, text
    assert "with the store in `with unsafe():`" in text, text


def test_a_remainder_by_a_thread_value_is_named():
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    t = thread_idx.x
    out[t % (t + 1)] = 1.0
""")
    assert "a '%' of thread-dependent values" in text, text


def test_a_product_of_two_thread_values_has_a_form_and_a_witness():
    # t * t is a polynomial: the refusal shows two threads that write one element instead.
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    t = thread_idx.x
    out[t * t] = 1.0
""")
    assert "both write out[0]" in text, text


TILED = """
from gpu_native import Kernel2D, CUDASliceMut2D, block_idx

@gpu_kernel(Kernel2D)
def k(c: CUDASliceMut2D[f32]):
    x = block_idx.x * 16 + thread_idx.x
    y = block_idx.y * 16 + thread_idx.y
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = 1.0
"""


def test_a_constant_block_stride_asks_for_the_block_shape_assert():
    """The Numba documentation's tiled matmul indexes ``block_idx.x * TPB + thread_idx.x``:
    unique only in blocks of at most TPB threads, which the refusal says to assert."""
    text = refusal(TILED)
    assert ("steps by 16 per block (block_idx.y * 16 + thread_idx.y) and 16 per block "
            "(block_idx.x * 16 + thread_idx.x)") in text, text
    assert "`assert block_dim.y == 16 and block_dim.x == 16`" in text, text


TRANSPOSED = """
from gpu_native import Kernel2D, CUDASlice2D, CUDASliceMut2D, block_idx

@gpu_kernel(Kernel2D)
def k(odata: CUDASliceMut2D[f32], idata: CUDASlice2D[f32]):
    ox = block_idx.y * 32 + thread_idx.x
    oy = block_idx.x * 32 + thread_idx.y
    if ox < idata.shape[0] and oy < idata.shape[1]:
        odata[oy, ox] = idata[ox, oy]
"""


def test_a_transposed_block_stride_asks_for_the_block_shape_assert_too():
    # The CUDA samples' transpose writes block_idx.y * TILE + thread_idx.x: the block axis and
    # the thread axis differ, and the refusal gave the generic 1-D hint (FlatLayout1D.uid()).
    text = refusal(TRANSPOSED)
    assert "(block_idx.y * 32 + thread_idx.x)" in text, text
    assert "`assert block_dim.y == 32 and block_dim.x == 32`" in text, text
    assert "FlatLayout1D.uid()" not in text, text


ROWS_LOOP = """
from gpu_native import Kernel2D, CUDASlice2D, CUDASliceMut2D, block_idx

@gpu_kernel(Kernel2D)
def k(odata: CUDASliceMut2D[f32], idata: CUDASlice2D[f32]):
    x = block_idx.y * 32 + thread_idx.x
    y = block_idx.x * 32 + thread_idx.y
    for j in range(0, 32, 8):
        if y + j < odata.shape[0] and x < odata.shape[1]:
            odata[y + j, x] = idata[x, y + j]
"""


def test_a_tile_walked_in_rows_asks_for_the_rows_of_its_loop():
    """The CUDA samples' 32 x 8 transpose walks a 32-row tile in 4 rounds of 8 rows: the block
    is 8 rows high, and `block_dim.y == 32` (the hint before) is refused in its turn."""
    text = refusal(ROWS_LOOP)
    assert "(block_idx.x * 32 + thread_idx.y + a loop counter stepping by 8)" in text, text
    assert "`assert block_dim.y == 8 and block_dim.x == 32`" in text, text
    source = HEAD + textwrap.dedent(ROWS_LOOP).replace(
        "    x = block_idx.y", "    assert block_dim.y == 8 and block_dim.x == 32\n"
        "    x = block_idx.y")
    transpile_module(source, "culprit.py", "culprit")


def test_with_the_block_shape_asserted_the_store_is_proven():
    source = HEAD + textwrap.dedent(TILED).replace(
        "    x = block_idx.x", "    assert block_dim.x == 16 and block_dim.y == 16\n"
        "    x = block_idx.x")
    transpile_module(source, "culprit.py", "culprit")


FLAT_HALO = """
from gpu_native import Kernel2D, CUDASlice2D, CUDASliceMut2D, shared_array, sync_threads

TILE = 16
SW = TILE + 4

@gpu_kernel(Kernel2D)
def k(img: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    tile = shared_array(f32, (SW, SW))
    for i in range(thread_idx.y * TILE + thread_idx.x, SW * SW, TILE * TILE):
        tile[i // SW, i % SW] = img[i // SW, i % SW]
    sync_threads()
"""


def test_a_flat_thread_index_asks_for_the_block_shape_it_assumes():
    """A cooperative tile load flattens the thread by a constant row length: a 32 x 8 block
    collides.  The loop counter starts at a thread's value; no round chooses a parity."""
    text = refusal(FLAT_HALO)
    assert "flattens the thread as `thread_idx.y * 16 + thread_idx.x`" in text, text
    assert "`assert block_dim.x == 16 and block_dim.y == 16`" in text, text
    assert "parity" not in text, text


def test_with_the_flat_block_shape_asserted_the_tile_load_is_proven():
    source = HEAD + textwrap.dedent(FLAT_HALO).replace(
        "    tile = shared_array", "    assert block_dim.x == TILE and block_dim.y == TILE\n"
        "    tile = shared_array")
    transpile_module(source, "culprit.py", "culprit")


@pytest.mark.parametrize("second", ["out[i + 1]", "out[2 * i]"])
def test_two_stores_into_a_global_array_get_a_hint_in_global_terms(second):
    # No `assert block_dim.x == B` tells a grid's uids apart: the shared-memory hint misled.
    text = refusal(f"""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if 2 * i + 1 < len(out):
        out[i] = 1.0
        {second} = 2.0
""")
    assert "into a global array must be provably apart: `out[i]` and `out[i + n]` with " \
           "`i < n` known from a condition around them" in text, text
    assert "block_dim" not in text.split("hint:")[1], text


@pytest.mark.parametrize("n", ["n: i64", "x: CUDASlice[f32]"])
def test_the_global_two_store_hint_s_fix_is_proven(n):
    bound = n.split(":")[0] if "i64" in n else "len(x)"
    transpile_module(HEAD + textwrap.dedent(f"""
from gpu_native import i64

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], {n}):
    i = FlatLayout1D.uid()
    if i < {bound}:
        out[i] = 1.0
        out[i + {bound}] = 2.0
"""), "culprit.py", "culprit")


REDUCE2 = """
from gpu_native import CUDASlice, block_idx, shared_array, sync_threads

@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    sdata = shared_array(f32, 1024)
    tid = thread_idx.x
    i = FlatLayout1D.uid()
    sdata[tid] = x[i] if i < len(x) else f32(0.0)
    sync_threads()
    s = 1
    while s < block_dim.x:
        index = 2 * s * tid
        if index < block_dim.x:
            sdata[index] += sdata[index + s]
        sync_threads()
        s *= 2
    if tid == 0:
        out[block_idx.x] = sdata[0]
"""


def test_a_round_loop_bounded_by_the_block_size_asks_for_its_assert():
    """Harris' reduction #2: the trace cannot count the rounds of `while s < block_dim.x`."""
    text = refusal(REDUCE2)
    assert "trip count the trace does not know" in text, text
    assert "hint: the loop at line 14 is bounded by block_dim.x, which the trace does not " \
           "know: assert the block's size (`assert block_dim.x == 128`" in text, text


def test_with_the_block_size_asserted_the_rounds_are_proven():
    source = HEAD + textwrap.dedent(REDUCE2).replace(
        "    sdata = shared_array", "    assert block_dim.x == 128\n    sdata = shared_array")
    transpile_module(source, "culprit.py", "culprit")


LAST_BLOCK = """
from gpu_native import grid_dim, block_idx, shared_array, sync_threads, threadfence

@gpu_kernel(Kernel1D)
def k(partial: CUDASliceMut[f32], count: CUDASliceMut[u32], out: CUDASliceMut[f32]):
    is_last = shared_array(i32, 1)
    if thread_idx.x == 0:
        partial[block_idx.x] = f32(block_idx.x)
        threadfence()
        drawn = count.atomic_ref(0).fetch_add(1)
        is_last[0] = 1 if drawn == grid_dim.x - 1 else 0
    sync_threads()
    if is_last[0] == 1 and thread_idx.x == 0:
        acc = f32(0.0)
        for b in range(grid_dim.x):
            acc += partial[b]
        out[0] = acc
        count[0] = 0
"""

LAST_BLOCK_ATOMIC = LAST_BLOCK.replace(
    "partial[block_idx.x] = f32(block_idx.x)",
    "partial.atomic_ref(block_idx.x).store(f32(block_idx.x))").replace(
    "acc += partial[b]", "acc += partial.atomic_ref(b).load()")


def test_a_read_of_other_blocks_writes_names_the_atomic_hand_off():
    text = refusal(LAST_BLOCK)
    assert "'partial' is read here at another index than it is written at" in text, text
    assert "make both atomic: write `partial.atomic_ref(block_idx.x).store(v)` and read " \
           "`partial.atomic_ref(b).load()`" in text, text


def test_the_atomic_hand_off_is_proven_and_sums_every_block(sim, kernel_module):
    import numpy as np

    import gpu_native as gn

    m = kernel_module(HEAD + textwrap.dedent(LAST_BLOCK_ATOMIC))
    blocks = 7
    partial, count, out = gn.zeros(blocks, gn.f32), gn.zeros(1, gn.u32), gn.zeros(1, gn.f32)
    m.k.launch(gn.GridDim1D(blocks), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(
        partial, count, out)
    assert out.to_host()[0] == sum(range(blocks))
    np.testing.assert_array_equal(count.to_host(), [0])


def test_an_index_that_may_wrap_names_the_narrow_arithmetic_in_it():
    # `2 * j` of an i32 parameter, in an i64 index: what may wrap, and where, is named.
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(v: CUDASliceMut[f32], j: i32):
    t = FlatLayout1D.uid()
    if t < len(v) // 2:
        i = (t // j) * (2 * j) + t % j
        a = v[i]
        b = v[i + j]
        v[i] = b
        v[i + j] = a
""")
    assert "its index may wrap around in i32, and then two threads could write the same " \
           "element: `2 * j` (line 8) is computed in i32 before the index widens to i64" \
           in text, text
    assert "hint: compute `2 * j` in i64: convert an operand first (`i64(j)`), or declare 'j' " \
           "i64" in text, text


def test_a_hint_to_widen_names_a_parameter_only_where_one_is_read():
    # `y + j` reads the thread's row and a loop counter: declaring a parameter i64 (the
    # parameters already are) would not help, and the hint said to.
    text = refusal("""
from gpu_native import Kernel2D, block_idx, thread_idx

@gpu_kernel(Kernel2D)
def k(out: CUDASliceMut[f32], width: int, height: int):
    assert block_dim.x == 32 and block_dim.y == 8
    x = block_idx.y * 32 + thread_idx.x
    y = block_idx.x * 32 + thread_idx.y
    for j in range(0, 32, 8):
        if x < height and y + j < width:
            out[(y + j) * height + x] = 1.0
""")
    assert "`y + j` is computed in i32 before the index widens to i64" in text, text
    assert "declare" not in text.split("hint:")[1], text
    assert "convert an operand first (`i64(" in text, text


def test_a_shared_scratch_passed_to_a_device_function_is_told_it_is_checked_as_global():
    # PyTorch's BlockReduceSum(val, shared) as a device function: its per-warp store is checked
    # as a global array's, and the hint says so (not the grid or last-block advice).
    text = refusal("""
from gpu_native import gpu_device, shared_array, sync_threads, block_idx

@gpu_device
def block_sum(val: f32, shared: CUDASliceMut[f32]) -> f32:
    if thread_idx.x % 32 == 0:
        shared[thread_idx.x // 32] = val
    sync_threads()
    return shared[0]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    scratch = shared_array(f32, 4)
    total = block_sum(f32(1.0), scratch)
    if thread_idx.x == 0:
        out[block_idx.x] = total
""")
    assert "hint: 'shared' is a parameter of this device function, and an array passed to a " \
           "device function is checked as a global array, whatever the caller passes (a " \
           "shared_array too)" in text, text
    assert "do this part in the kernel that declares the shared array" in text, text
    assert "assert grid_dim.x == 1" not in text, text


def test_two_tickets_into_one_array_are_refused_for_the_race_not_the_wrap():
    """Two draws' indices meet whatever their width: the refusal says so, where it said the
    second index may wrap in i32 (and widening it only led to this reason)."""
    text = refusal("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], out: CUDASliceMut[f32], counter: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    if i < len(x):
        pos = counter.atomic_ref(0).fetch_add(1)
        out[pos] = x[i]
        pos2 = counter.atomic_ref(0).fetch_add(1)
        out[pos2 + 1] = x[i]
""")
    assert "'out' is written through two different indices" in text, text
    assert "wrap" not in text, text


HALO_LOOPS = """
from gpu_native import Kernel2D, CUDASlice2D, CUDASliceMut2D, block_idx, shared_array

TILE = 16
W = TILE + 4

@gpu_kernel(Kernel2D)
def k(img: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    tile = shared_array(f32, (W, W))
    for yy in range(thread_idx.y, W, TILE):
        for xx in range(thread_idx.x, W, TILE):
            gy = block_idx.y * TILE + yy
            gx = block_idx.x * TILE + xx
            v = f32(0.0)
            if gy < img.shape[0] and gx < img.shape[1]:
                v = img[gy, gx]
            tile[yy, xx] = v
"""


def test_a_halo_tile_walked_from_the_thread_asks_for_the_block_shape():
    """A halo tile loaded by loops that start at the thread and step by the tile: the hint
    names the assert that proves it (it offered only indexing by the thread or `unsafe`)."""
    text = refusal(HALO_LOOPS)
    assert "`range(thread_idx.y, ..., 16)` and `range(thread_idx.x, ..., 16)`" in text, text
    assert "`assert block_dim.y == 16 and block_dim.x == 16`" in text, text
    source = HEAD + textwrap.dedent(HALO_LOOPS).replace(
        "    tile = shared_array", "    assert block_dim.y == 16 and block_dim.x == 16\n"
        "    tile = shared_array")
    transpile_module(source, "culprit.py", "culprit")
