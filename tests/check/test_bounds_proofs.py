"""Which bounds checks the transpiler drops, and (as important) which it must keep.

A check is dropped only where the facts prove the index in range: dominating conditions, and
checks that already passed in an earlier statement (a failing check ends the thread).  Each case
lists the (line, array, axis) of every check that must remain; the line is counted from the
``def`` line of the kernel (1 = the first body line).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.launchexpr import tree_text
from gpu_native.rewrite import transpile_module
from gpu_native.runtime.launch_checks import check_launch
from gpu_native.spec import IndexFits

HEADER = """\
from gpu_native import *
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, FlatLayout1D, FlatLayout2D, f32, i32, u32, i64,
                        block_idx, block_dim, thread_idx)
"""


def remaining_checks(body: str) -> set[tuple[int, str, int]]:
    source = HEADER + textwrap.dedent(body)
    module = transpile_module(source, "proofs.py", "proofs")
    (kernel,) = module.kernels
    def_line = kernel.line
    return {(site.line - def_line, site.array, site.axis) for site in kernel.variants[0].sites
            if site.kind == "index"}


STENCIL = """
@gpu_kernel(Kernel2D)
def k(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    h = src.shape[0]
    w = src.shape[1]
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        dst[y, x] = src[y, x]
    else:
        c = src[y, x]
        around = src[y - 1, x] + src[y + 1, x] + src[y, x - 1] + src[y, x + 1]
        dst[y, x] = c + around
"""


def test_stencil_neighbours_are_proven_by_the_centre_check_and_the_border_test():
    assert remaining_checks(STENCIL) == {
        (6, "src", 0), (6, "src", 1), (6, "dst", 0), (6, "dst", 1),   # border copy
        (8, "src", 0), (8, "src", 1),                                 # centre: checked once
        (10, "dst", 0), (10, "dst", 1),                               # dst's extent is its own
    }


def test_checks_in_one_statement_do_not_prove_each_other():
    # C++ may evaluate a[i - 1] before the check of a[i]: only the next statement may rely on it.
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i != 0:
        v = a[i] + a[i - 1]
        w = a[i - 1]
        out[i] = v + w
""") == {(4, "a", 0), (6, "out", 0)}


def test_checks_under_short_circuits_and_conditional_expressions_prove_nothing_later():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], flag: i32):
    i = FlatLayout1D.uid()
    if flag > 0 and a[i] > 0.0:
        pass
    v = a[i] if flag > 1 else 0.0
    a[i] = v
""") == {(3, "a", 0), (5, "a", 0), (6, "a", 0)}


def test_a_check_in_the_first_operand_of_and_does_prove_later_statements():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], flag: i32):
    i = FlatLayout1D.uid()
    if a[i] > 0.0 and flag > 0:
        pass
    a[i] = 1.0
""") == {(3, "a", 0)}


def test_reassignment_forgets_what_a_check_proved():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32], step: i64):
    i = FlatLayout1D.uid()
    j = i
    v = a[j]
    j = j + step
    out[i] = v + a[j]
""") == {(4, "a", 0), (6, "out", 0), (6, "a", 0)}


def test_values_loaded_from_memory_are_never_facts():
    # Another thread may change idx[0] between the test and the store.
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], idx: CUDASlice[i64], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if idx[i] >= 0 and idx[i] < len(a):
        out[i] = a[idx[i]]
""") >= {(4, "a", 0)}


def test_signed_32_bit_arithmetic_that_can_wrap_keeps_its_check_or_becomes_a_launch_check():
    # A product of a parameter can wrap negative, and `x < len(a)` then lets it through: the
    # check stays.
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32], m: i32):
    i = FlatLayout1D.uid()
    x = m * 1000 + thread_idx.x
    if x < len(a):
        out[i] = a[x]
""") == {(5, "out", 0), (5, "a", 0)}
    # Built from launch indices alone, it is proven for the launches the launcher allows, and
    # the kernel records the expression for the launcher to check against each grid.
    source = HEADER + textwrap.dedent("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    x = block_idx.x * block_dim.x + thread_idx.x
    if x < len(a):
        out[i] = a[x]
""")
    (kernel,) = transpile_module(source, "proofs.py", "proofs").kernels
    variant = kernel.variants[0]
    assert {s.array for s in variant.sites if s.kind == "index"} == {"out"}
    fits = [c for c in variant.launch_checks if isinstance(c, IndexFits)]
    assert fits and all(c.limit == 2**31 - 1 and c.type == "i32" for c in fits)
    # One check, of the whole sum: its product term is never larger, so it is not checked apart.
    assert [tree_text(c.tree) for c in fits] == ["block_idx.x * block_dim.x + thread_idx.x"]
    with pytest.raises(gn.LaunchError, match="past the i32 maximum"):
        check_launch("k", "proofs.py", 0, variant.launch_checks, (2**24, 1, 1), (256, 1, 1))
    check_launch("k", "proofs.py", 0, variant.launch_checks, (2**23 - 1, 1, 1), (256, 1, 1))
    # The same in 64 bits cannot wrap: proven with no launch check.
    source = HEADER + textwrap.dedent("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    x = i64(block_idx.x) * i64(block_dim.x) + i64(thread_idx.x)
    if x < len(a):
        out[i] = a[x]
""")
    (kernel,) = transpile_module(source, "proofs.py", "proofs").kernels
    assert {s.array for s in kernel.variants[0].sites if s.kind == "index"} == {"out"}
    assert kernel.variants[0].launch_checks == ()


def test_u32_to_i32_cast_can_turn_negative():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32], u: u32):
    i = FlatLayout1D.uid()
    j = i32(u)
    if j < len(a):
        out[i] = a[j]
""") == {(5, "out", 0), (5, "a", 0)}


def test_plus_one_needs_the_not_last_fact_and_minus_one_the_not_zero_fact():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], b: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = a[i]
    b[i] = a[i + 1] + a[i - 1] + v
""") == {(3, "a", 0), (4, "b", 0), (4, "a", 0)}


def test_the_loop_condition_check_holds_in_the_body():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    while a[i] > 0:
        a[i] = a[i] - 1
""") == {(3, "a", 0)}


# ---- the checks that remain still catch what they must (simulator and GPU) -----------------

@pytest.fixture
def stencil(kernel_module):
    return kernel_module(HEADER + textwrap.dedent(STENCIL))


def _reference(u):
    out = u.copy()
    around = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
    out[1:-1, 1:-1] = u[1:-1, 1:-1] + around
    return out


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_stencil_with_dropped_checks_is_right_and_a_short_output_is_caught(stencil, backend):
    rng = np.random.default_rng()
    h, w = 37, 53
    u = rng.standard_normal((h, w)).astype(np.float32)
    dst = gn.to_device(np.full((h, w), np.nan, np.float32))
    grid, block = gn.GridDim2D((w + 15) // 16, (h + 15) // 16), gn.BlockDim2D(16, 16)
    stencil.k.launch(grid, block)(gn.to_device(u), dst)
    np.testing.assert_allclose(dst.to_host(), _reference(u.astype(np.float64)), rtol=1e-5,
                               atol=1e-5)
    short = gn.to_device(np.zeros((h - 1, w), np.float32))
    with pytest.raises(gn.KernelIndexError, match="dst"):
        stencil.k.launch(grid, block)(gn.to_device(u), short)
        gn.synchronize()


# ---- what the proofs let the emitter write as plain signed arithmetic ----------------------------

def generated_cuda(body: str) -> str:
    source = HEADER + textwrap.dedent(body)
    (kernel,) = transpile_module(source, "proofs.py", "proofs").kernels
    cuda = kernel.variants[0].cuda
    return cuda[cuda.index('extern "C" __global__'):]


def test_arithmetic_proven_not_to_wrap_is_plain_signed_arithmetic_only_where_proven():
    # `j = p + 1` runs for every thread, also where p is huge: it keeps the wrapping form even
    # though `a[p + 1]` under the guard below (where p < 100) is proven and written signed.
    cuda = generated_cuda("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32], m: i32):
    i = FlatLayout1D.uid()
    p = i32(thread_idx.x) * m
    j = p + 1
    if p >= 0 and p < 100:
        out[i] = a[j] + a[p + 1]
""")
    assert "j = ((int)((unsigned int)(p) + (unsigned int)(1)));" in cuda
    assert "(gn_i64)((int)(p + 1))" in cuda
    # Launch-index arithmetic: proven for the launches the launcher allows (a launch check).
    cuda = generated_cuda("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    x = block_idx.x * 32 + thread_idx.x
    if x < len(a):
        out[i] = a[x]
""")
    assert "x = ((int)(((int)(((int)blockIdx.x) * 32)) + ((int)threadIdx.x)));" in cuda


def test_a_range_counter_steps_plainly_when_its_stop_leaves_room():
    cuda = generated_cuda("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32], m: i64, m32: i32):
    i = FlatLayout1D.uid()
    acc = f32(0)
    for t in range(0, len(a), 32):
        acc += a[t]
    for s in range(0, m, 32):
        acc += 1.0
    for r in range(0, m32, 4):
        acc += 2.0
    for q in range(len(a) - 1, -1, -1):
        acc += 3.0
    out[i] = acc
""")
    # An array extent is below 2**48: the counter may step past it.
    assert "__gn_i0 += 32LL" in cuda
    # A parameter can be 2**63 - 1: the counter must stop at it instead of overflowing ...
    assert "__gn_i1 = (__gn_i1 > __gn_stop1 - 32LL) ? __gn_stop1" in cuda
    # ... and an i32 one gets a 64-bit counter.
    assert "for (gn_i64 __gn_i2 = " in cuda
    assert "--__gn_i3" in cuda


REGISTER_TILE = """
TM = 4
TN = 4
TX = 16
TY = 16
BK = 8

@gpu_kernel(Kernel2D)
def k(out: CUDASliceMut2D[f32]):
    assert block_dim.x == TX and block_dim.y == TY, "launch with TX x TY threads"
    tile_a = shared_array(f32, (TY * TM, BK))
    tile_b = shared_array(f32, (BK, TX * TN))
    tx = thread_idx.x
    ty = thread_idx.y
    acc = f32(0.0)
    for k in range(BK):
        for i in range(ROWS):
            acc += tile_a[ty * TM + i, k]
        for j in range(TN):
            acc += tile_b[k, tx * TN + j]
    x, y = FlatLayout2D.uid()
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = acc
"""


def test_a_register_tile_index_is_proven_from_the_pinned_block_and_the_loop_bound():
    # ty < TY (the assert) and i < TM (the loop): ty * TM + i <= (TY - 1) * TM + TM - 1, the
    # last row of the tile, although no one fact bounds the sum itself.
    assert remaining_checks(REGISTER_TILE.replace("ROWS", "TM")) == set()


def test_a_register_tile_index_that_can_reach_past_the_tile_keeps_its_check():
    # One row too many: the last thread's ty * TM + TM is the tile's height.
    assert remaining_checks(REGISTER_TILE.replace("ROWS", "TM + 1")) == {(10, "tile_a", 0)}
    # Without the assert a block may have more than TY rows of threads.
    unpinned = REGISTER_TILE.replace("ROWS", "TM").replace(
        '    assert block_dim.x == TX and block_dim.y == TY, "launch with TX x TY threads"\n', "")
    assert remaining_checks(unpinned) == {(9, "tile_a", 0), (11, "tile_b", 1)}
    # Pinning only x proves only the x index.
    only_x = REGISTER_TILE.replace("ROWS", "TM").replace(
        "block_dim.x == TX and block_dim.y == TY", "block_dim.x == TX")
    assert remaining_checks(only_x) == {(10, "tile_a", 0)}


# ---- a local read through its definition holds the value it had there ----------------------------

STALE_COPY = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32], n: i32):
    t = local_array(i32, 4)
    i = n
    r = i
    for i in range(4):
        t[r] = i
    out[FlatLayout1D.uid()] = t[0]
"""


def test_a_copy_of_a_variable_keeps_its_check_after_the_variable_is_reassigned():
    # `r` holds the old `i` (n); the loop's facts (0 <= i < 4) are about the new one.
    assert remaining_checks(STALE_COPY) == {(6, "t", 0), (7, "out", 0)}


def test_a_copy_keeps_its_check_where_a_later_iteration_reassigned_the_variable():
    # The test `i < 4` is about this iteration's `i`; from the second on, `r` is still n.
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32], n: i32, m: i32):
    t = local_array(i32, 4)
    i = n
    r = i
    for s in range(m):
        if i >= 0 and i < 4:
            t[r] = s
        i = s
    out[FlatLayout1D.uid()] = t[0]
""") == {(7, "t", 0), (9, "out", 0)}


def test_a_copy_read_before_the_variable_is_reassigned_is_still_proven():
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32], n: i32):
    t = local_array(i32, 4)
    i = n
    r = i
    if i >= 0 and i < 4:
        t[r] = 1
    i = 0
    out[FlatLayout1D.uid()] = t[0]
""") == {(8, "out", 0)}


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_a_stale_copy_out_of_range_is_caught(kernel_module, backend):
    mod = kernel_module(HEADER + textwrap.dedent(STALE_COPY))
    out = gn.to_device(np.zeros(1, np.int32))
    mod.k.launch(gn.GridDim1D(1), gn.BlockDim1D(1))(out, 2)
    gn.synchronize()
    with pytest.raises(gn.KernelIndexError, match="'t'") as caught:
        mod.k.launch(gn.GridDim1D(1), gn.BlockDim1D(1))(out, 10)
        gn.synchronize()
    # The kernel's own check caught it: the simulator's backstop (which names a check it
    # dropped) is no stand-in for the GPU, where the access would be undefined behaviour.
    assert "proven unnecessary" not in str(caught.value)


# ---- swizzled indices: bitwise operators, and locals assigned more than once -----------------

SWIZZLE = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32], n: i32):
    assert block_dim.x == 64, "64 threads"
    tile = local_array(i32, (8, 32))
    t = thread_idx.x
    r = t // 8
    c = ((t % 4) ^ ((r >> 1) & 3)) * 8
    tile[r, c + 7] = 1
    r = t % 8
    c = (((t >> 2) & 3) | 1) * 8
    tile[r, c] = 2
    SECOND
    out[FlatLayout1D.uid()] = tile[0, 0]
"""


def test_a_swizzled_index_in_a_local_assigned_twice_is_proven_from_each_assignment():
    # c = (chunk ^ swizzle) * 8 with chunk, swizzle < 4: 0 <= c <= 24, so c + 7 < 32; r < 8.
    # Each assignment's interval holds until the next one, so both statements are proven.
    assert remaining_checks(SWIZZLE.replace("SECOND", "pass")) == {(12, "out", 0)}


@pytest.mark.parametrize("second, kept", [
    # The next value of c is not bounded: what the first assignment showed is forgotten.
    ("c = n\n    tile[0, c] = 3", {(12, "tile", 1)}),
    # An operand that may be negative: n ^ 3 (or n | 3, n >> 1) may be negative.
    ("c = n ^ 3\n    tile[0, c] = 3", {(12, "tile", 1)}),
    ("c = (n | 3) & 31\n    tile[0, c] = 3", set()),  # & 31 bounds it whatever n is
    ("c = n >> 1\n    tile[0, c] = 3", {(12, "tile", 1)}),
    # xor of values below 32 and 64 reaches 63, past the row.
    ("c = (t & 31) ^ 32\n    tile[0, c] = 3", {(12, "tile", 1)}),
    # Only one branch bounds c: after the join nothing does.
    ("if n > 0:\n        c = t & 7\n    else:\n        c = t\n    tile[0, c] = 3",
     {(15, "tile", 1)}),
    # Both branches do: after the join, c < 16.
    ("if n > 0:\n        c = t & 7\n    else:\n        c = t & 15\n    tile[0, c] = 3", set()),
    # A loop's later iterations see c + 8: nothing from before the loop holds in its body.
    ("c = 0\n    for s in range(n):\n        tile[0, c] = s\n        c = c + 8",
     {(13, "tile", 1)}),
])
def test_facts_from_an_assignment_last_until_the_next_and_need_nonnegative_operands(
        second, kept):
    body = SWIZZLE.replace("SECOND", second)
    shift = second.count("\n")
    assert remaining_checks(body) == {(12 + shift, "out", 0)} | kept


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sim"], indirect=True)
def test_swizzled_indices_the_proofs_accept_are_in_range_for_every_input(kernel_module,
                                                                         backend):
    # Soundness on the simulator, whose backstop raises where a dropped check would have
    # failed: every thread of a block and every n of a small domain (negative ones included)
    # reach only indices in range.
    body = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32], n: i32):
    assert block_dim.x == 64, "64 threads"
    tile = local_array(i32, (8, 32))
    for r in range(8):
        for c in range(32):
            tile[r, c] = r * 32 + c
    t = thread_idx.x
    r = (t ^ (n & 7)) >> 3
    c = ((t & 3) ^ ((n >> 1) & 3)) * 8 + ((n & 0xFF) % 8)
    s = tile[r, c]
    r = (n & 7) | (t & 7)
    c = ((t >> 2) ^ (n & 15)) | (t & 16)
    out[FlatLayout1D.uid()] = s + tile[r, c]
"""
    assert remaining_checks(body) == {(13, "out", 0)}
    mod = kernel_module(HEADER + textwrap.dedent(body))
    out = gn.empty(64, gn.i32)
    for n in range(-40, 40):
        mod.k.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(out, n)
        t = np.arange(64)
        r1 = (t ^ (n & 7)) >> 3
        c1 = ((t & 3) ^ ((n >> 1) & 3)) * 8 + ((n & 0xFF) % 8)
        r2 = (n & 7) | (t & 7)
        c2 = ((t >> 2) ^ (n & 15)) | (t & 16)
        np.testing.assert_array_equal(out.to_host(), r1 * 32 + c1 + r2 * 32 + c2)


# ---- the 16-byte alignment of ldmatrix rows and cp_async destinations ------------------------

WARP_TILE = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f16], out: CUDASliceMut[f32]):
    assert block_dim.x == 32, "one warp"
    tile = shared_array(f16, (16, WIDTH))
    frag = local_array(f16, (1, 8))
    lane = lane_id()
    r = lane % 16
    col = 0
    COL
    # unsafe: each lane copies its own 16 bytes
    with unsafe():
        cp_async(tile, (r, col), a, (lane * 8,), 16)
    cp_async_commit()
    cp_async_wait(0)
    sync_threads()
    ldmatrix(frag, 0, tile, (r, col))
    out[FlatLayout1D.uid()] = f32(frag[0, 0])
"""


def alignment_checks(width: int, col: str) -> list[str]:
    source = HEADER + "from gpu_native import f16, lane_id\n" + textwrap.dedent(
        WARP_TILE.replace("WIDTH", str(width)).replace("COL", col))
    (kernel,) = transpile_module(source, "proofs.py", "proofs").kernels
    return sorted(site.message.split(":")[0] for site in kernel.variants[0].sites
                  if site.kind == "assert" and site.message != "one warp")


@pytest.mark.parametrize("width, col, kept", [
    # A swizzled chunk times 8 halves (16 bytes) into rows of 64 halves: only the global
    # source of cp_async, whose pointer is known at run time, keeps its check.
    (64, "col = ((lane // 16) ^ (r & 7)) * 8", ["cp_async()"]),
    (64, "if lane < 8:\n        col = 8\n    else:\n        col = (lane % 2) * 16",
     ["cp_async()"]),
    # A multiple of 4 halves is 8 bytes: not enough.
    (64, "col = (lane // 16) * 4", ["cp_async()", "cp_async()", "ldmatrix()"]),
    (64, "if lane < 8:\n        col = 8\n    else:\n        col = 4",
     ["cp_async()", "cp_async()", "ldmatrix()"]),
    (64, "col = (lane // 16) * 8 + 1", ["cp_async()", "cp_async()", "ldmatrix()"]),
    # Rows of 36 halves: row r starts 72 * r bytes in, not on a 16-byte boundary.
    (36, "col = (lane // 16) * 8", ["cp_async()", "cp_async()", "ldmatrix()"]),
])
def test_ldmatrix_and_cp_async_alignment_is_proven_for_multiples_of_16_bytes(width, col, kept):
    assert alignment_checks(width, col) == kept


def test_a_descending_range_bounds_its_variable_as_an_ascending_one_does():
    # C's `for (m = B - 1; m >= 0; m--)`: stop < m <= start in the body, so `m` indexes an
    # array of B elements unchecked; `a[q]` from len(a) - 1 down to 0 likewise, and
    # `a[q - 1]` keeps its check (q - 1 is -1 on the last round).
    assert remaining_checks("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    t = local_array(f32, (16,))
    for m in range(15, -1, -1):
        t[m] = 1.0
    acc = t[0]
    for q in range(len(a) - 1, -1, -2):
        acc += a[q]
        acc += a[q - 1]
    for r in range(15, 3, -3):
        acc += t[r] + t[r - 4]
    for s in range(15, 2, -3):
        acc += t[s - 3] + t[s - 4]
    out[i] = acc
""") == {(9, "a", 0), (13, "t", 0), (14, "out", 0)}


STEPPED_TILE = """
@gpu_kernel(Kernel2D)
def k(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    assert block_dim.x == 32 and block_dim.y == 8
    tile = shared_array(f32, (32, 33))
    tx = thread_idx.x
    ty = thread_idx.y
    for j in range(0, STOP, 8):
        tile[ty + j, tx] = 1.0
    sync_threads()
    x, y = FlatLayout2D.uid()
    if y < dst.shape[0] and x < dst.shape[1]:
        dst[y, x] = tile[ty, tx]
"""


def test_a_stepped_range_ends_at_its_last_value():
    """``range(0, 32, 8)`` ends at 24, so ``ty + j`` stays within the tile's 32 rows where
    ``ty < 8`` (the transpose's 32 x 8 threads moving a 32 x 32 tile; it kept a check, which
    cost the gallery's transposes up to a third of their speed on the H100).  One step more
    reaches row 32 and keeps it."""
    assert remaining_checks(STEPPED_TILE.replace("STOP", "32")) == set()
    assert remaining_checks(STEPPED_TILE.replace("STOP", "33")) == {(7, "tile", 0)}
    assert remaining_checks(STEPPED_TILE.replace("STOP", "25")) == set()


def test_a_block_order_made_by_division_is_proven_under_a_launch_check():
    """``row = block_idx.x * 4 + tid // 32`` (several warps per block, one row each) and a
    diagonal order's ``(bid // grid_dim.y + r) % grid_dim.x * 32 + tx``: sums and products of
    launch indices with ``//`` and ``%`` by launch extents or constants are proven not to wrap
    for the launches the launcher allows, so a guard bounds them; a divisor that is no launch
    extent, or a negative constant, is left to wrap (and the read keeps its check)."""
    source = HEADER + textwrap.dedent("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    warp = thread_idx.x // 32
    row = block_idx.x * 4 + warp
    if thread_idx.x % 32 == 0 and row < len(a) and row < len(out):
        out[row] = a[row]
""")
    (kernel,) = transpile_module(source, "proofs.py", "proofs").kernels
    variant = kernel.variants[0]
    assert not [s for s in variant.sites if s.kind == "index"]
    fits = [c for c in variant.launch_checks if isinstance(c, IndexFits)]
    assert "block_idx.x * 4 + thread_idx.x // 32" in [tree_text(c.tree) for c in fits]
    check_launch("k", "proofs.py", 0, variant.launch_checks, (2**29 - 1, 1, 1), (128, 1, 1))
    with pytest.raises(gn.LaunchError, match="past the i32 maximum"):
        check_launch("k", "proofs.py", 0, variant.launch_checks, (2**29 + 1, 1, 1), (128, 1, 1))
    by_thread = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    row = block_idx.x * 4 + block_idx.x // (thread_idx.x + 1)
    if row < len(a):
        out[i] = a[row]
"""
    assert (5, "a", 0) in remaining_checks(by_thread)


NW_WAVEFRONTS = """
B = 16

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == B
    tx = thread_idx.x
    temp = shared_array(i32, (B + 1, B + 1))
    for m in range(B):
        if tx <= m:
            t_index_x = tx + 1
            t_index_y = m - tx + 1
            temp[t_index_y, t_index_x] = m
        sync_threads()
    for m in range(B - 2, -1, -1):
        if tx <= m:
            t_index_x = tx + B - m
            t_index_y = B - tx
            temp[t_index_y, t_index_x] = 100 + m
        sync_threads()
    for r in range(B):
        out[(block_idx.x * B + r) * B + tx] = temp[r + 1, tx + 1]
"""


def test_a_local_assigned_in_two_loops_keeps_each_sum_exact(tmp_path):
    """Rodinia nw's two in-tile wavefronts assign ``t_index_x`` in each loop (``tx + 1``, then
    ``tx + B - m``); each sum is computed under its loop's facts (``m <= 14``), so it does not
    wrap wherever the store reads it, as for a local assigned once.  It was "its index may
    wrap around in i32", with a hint to widen ``block_idx.x``, which the index does not hold."""
    from tests.simulator.support import build, launch

    kernel = build(tmp_path, NW_WAVEFRONTS)["k"]
    out = np.full(2 * 16 * 16, -1, np.int32)
    result = launch(kernel, 2, 16, out)
    assert result.races == [] and result.fails == []
    want = np.empty((16, 16), np.int64)
    for y in range(16):
        for x in range(16):
            d = x + y  # the anti-diagonal (0-based): the first loop's m, or the second's
            want[y, x] = d if d < 16 else 100 + (30 - d)
    np.testing.assert_array_equal(out.reshape(2, 16, 16), np.stack([want, want]))


WRAPPED_GUARD = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], m: i32):
    i = FlatLayout1D.uid()
    t = local_array(f32, 100)
    for j in range(100):
        t[j] = f32(j)
    if i < len(out) and m >= 0:
        if GUARD:
            out[i] = t[m * 4]
"""


def test_a_guard_on_a_product_does_not_prove_the_product_does_not_wrap():
    """`if m * 4 < 100` holds of the product as computed, which wraps for m >= 2**29 (to 4 for
    m = 2**30 + 1): it bounds the index, but says nothing of whether `m * 4` wrapped, so the
    product is not emitted as plain signed arithmetic (which the device compiler may widen to
    64 bits) and `t[m * 4]` keeps its check.  A guard on the operand (`m < 25`) proves both."""
    assert (8, "t", 0) in remaining_checks(WRAPPED_GUARD.replace("GUARD", "m * 4 < 100"))
    assert (8, "t", 0) not in remaining_checks(WRAPPED_GUARD.replace("GUARD", "m < 25"))
    source = HEADER + "from gpu_native import local_array\n" + textwrap.dedent(
        WRAPPED_GUARD.replace("GUARD", "m * 4 < 100"))
    (kernel,) = transpile_module(source, "proofs.py", "proofs").kernels
    cuda = kernel.variants[0].cuda
    assert "(int)((unsigned int)(m) * (unsigned int)(4))" in cuda.split("out[i] = t[")[1][:120]


@pytest.mark.parametrize("m", [3, 2**30 + 1, 2**29 + 30])
def test_a_wrapped_guard_reads_the_element_python_s_wrapping_arithmetic_names(
        kernel_module, backend, m):
    # m * 4 as the kernel computes it, in i32: 12; 4 for 2**30 + 1 (in range); -2**31 + 120 for
    # 2**29 + 30, which passes the guard and is out of bounds: the check that stays reports it
    # (with the product taken as never wrapping, nothing checked it).
    mod = kernel_module(HEADER + "from gpu_native import local_array\n" + textwrap.dedent(
        WRAPPED_GUARD.replace("GUARD", "m * 4 < 100")))
    out = gn.to_device(np.full(1, np.nan, np.float32))
    wrapped = (m * 4 + 2**31) % 2**32 - 2**31
    if 0 <= wrapped < 100:
        mod.k[1, 32](out, m)
        np.testing.assert_array_equal(out.to_host(), [np.float32(wrapped)])
    else:
        with pytest.raises(gn.KernelIndexError, match="out of bounds for array 't'"):
            mod.k[1, 32](out, m)
            gn.synchronize()
