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


def test_with_the_block_shape_asserted_the_store_is_proven():
    source = HEAD + textwrap.dedent(TILED).replace(
        "    x = block_idx.x", "    assert block_dim.x == 16 and block_dim.y == 16\n"
        "    x = block_idx.x")
    transpile_module(source, "culprit.py", "culprit")
