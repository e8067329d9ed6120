"""Stores into a shared array scaled by a loop variable the whole block shares (rule R3 for loop
variables, :mod:`gpu_native.check.strides`): the tree-indexed stores of a Blelloch scan and the
compare-and-swap of a bitonic network are proven per barrier interval, with the values the
block's loop variables take there; near misses (a scale that may be 0, differ between threads,
or not be a power of two; cofactors of equal parity; a wrapping product) stay refused."""

from __future__ import annotations

import textwrap

import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

HEAD = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, i32, block_dim, block_idx,
                        shared_array, sync_threads, thread_idx)
"""

SCAN = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == 64
    temp = shared_array(i32, (128,))
    tid = thread_idx.x
    temp[tid] = tid
    temp[tid + 64] = tid
    offset = 1
    d = 64
    while d > 0:
        sync_threads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d //= 2
    if tid == 0:
        temp[127] = 0
    d = 1
    while d < 128:
        offset //= 2
        sync_threads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    sync_threads()
    out[block_idx.x * 128 + tid] = temp[tid]
"""

BITONIC = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == 64
    s = shared_array(i32, (128,))
    tid = thread_idx.x
    s[tid] = tid
    s[tid + 64] = 64 - tid
    size = 2
    while size <= 128:
        stride = size // 2
        while stride > 0:
            sync_threads()
            pos = 2 * tid - (tid & (stride - 1))
            a = s[pos]
            b = s[pos + stride]
            if a > b:
                s[pos] = b
                s[pos + stride] = a
            stride //= 2
        size *= 2
    sync_threads()
    out[block_idx.x * 128 + tid] = s[tid]
"""


def transpile(source: str):
    return transpile_module(textwrap.dedent(source), "scaled.py", "scaled")


def refused(source: str) -> str:
    with pytest.raises(TranspileError) as info:
        transpile(source)
    return str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("source", [SCAN, BITONIC], ids=["blelloch", "bitonic"])
def test_the_tree_and_network_stores_are_proven(source):
    (kernel,) = transpile(source).kernels
    assert kernel.name == "k"


SCAN_MISSES = {
    # The scale starts at 0: every thread's index is -1 (or 0 * ... - 1) in the first interval.
    "starts at 0": ("    offset = 1\n", "    offset = 0\n"),
    # Assigned under a thread-dependent condition: it may differ between threads.
    "assigned under if tid": ("    offset = 1\n", "    offset = 1\n    if tid < 5:\n"
                              "        offset = 2\n"),
    # A value of the thread's own.
    "from tid": ("    offset = 1\n", "    offset = tid + 1\n"),
    # Cofactors of equal parity: s * (2t + 1) meets s * (2t' + 3) at t = t' + 1.
    "equal parity": ("            bi = offset * (2 * tid + 2) - 1\n            t = temp[ai]",
                     "            bi = offset * (2 * tid + 3) - 1\n            t = temp[ai]"),
    # Halved once too often: offset is 0 in the last down-sweep interval.
    "halved to 0": ("    d = 1\n    while d < 128:\n", "    d = 1\n    while d < 256:\n"),
    # The scale changes between a thread's store and another's in one interval.
    # The scale changes between one store and another in one interval: thread 2's bi is
    # thread 1's element at the doubled scale (4 * o - 1 == 2 * o * (2 * 1 + 1) - 1 - 2 * o).
    "changed between stores": ("            temp[bi] += t\n",
                               "            temp[bi] += t\n        offset *= 2\n"
                               "        if tid < d:\n"
                               "            temp[offset * (2 * tid + 1) - 1] = 0\n"
                               "        offset //= 2\n"),
}

BITONIC_MISSES = {
    # Not a power of two: tid & (3 - 1) is no split of tid.
    "starts at 3": ("        stride = size // 2\n", "        stride = size // 2 + 1\n"),
    # stride -= 1 goes through 3.
    "decrements": ("            stride //= 2\n", "            stride -= 1\n"),
    # A stride that differs between threads.
    "per thread": ("        stride = size // 2\n", "        stride = size // 2\n"
                   "        if tid == 3:\n            stride = 1\n"),
}


@pytest.mark.parametrize("name", sorted(SCAN_MISSES))
def test_near_misses_of_the_scan_stay_refused(name):
    old, new = SCAN_MISSES[name]
    assert old in SCAN
    message = refused(SCAN.replace(old, new, 1))
    assert "store into 'temp'" in message


@pytest.mark.parametrize("name", sorted(BITONIC_MISSES))
def test_near_misses_of_the_network_stay_refused(name):
    old, new = BITONIC_MISSES[name]
    assert old in BITONIC
    message = refused(BITONIC.replace(old, new, 1))
    assert "store into 's'" in message


WRAP = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == 64
    s = shared_array(i32, (128,))
    tid = thread_idx.x
    scale = 1
    while scale != {stop}:
        sync_threads()
        s[scale * tid] = tid
        scale *= 2
"""


def test_a_product_that_may_wrap_is_refused_and_its_control_accepted():
    transpile(WRAP.format(stop=2))
    # Doubled 31 times, scale is -2**31 in i32: scale * tid is 0 in every even thread.
    assert "wrap" in refused(WRAP.format(stop=0))


def test_rounds_the_block_cannot_count_are_each_followed():
    # A barrier in a loop whose trip count is a parameter: every round the block could run is
    # followed, and for n > 128 the down-sweep halves offset to 0, where every thread below d
    # writes temp[-1].
    source = SCAN.replace("def k(out: CUDASliceMut[i32]):", "def k(out: CUDASliceMut[i32], "
                          "n: i32):").replace("    while d < 128:", "    while d < n:")
    message = refused(source)
    assert "may meet itself in another thread in one barrier interval: with offset = 0" in \
        message, message
    assert "hint: bound the loop by constants" in message, message


ACROSS = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == 64
    s = shared_array(i32, (128,))
    tid = thread_idx.x
    scale = 1
    while scale < 16:
        {barrier}
        if tid < 8:
            s[scale * tid] = tid
        scale *= 2
"""


def test_iterations_that_no_barrier_separates_are_proven_against_each_other():
    transpile(ACROSS.format(barrier="sync_threads()"))
    # Without it thread 2 (scale 1) and thread 1 (scale 2) both write s[2] at once.
    message = refused(ACROSS.format(barrier="pass"))
    assert "scale = 1" in message and "one barrier interval" in message


BLOCK_STRIDE_BUTTERFLY = HEAD + """
N = 256

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    s = shared_array(i32, (N,))
    stride = N >> 1
    while stride >= 1:
        sync_threads()
        for pos in range(thread_idx.x, N // 2, block_dim.x):
            lo = pos & (stride - 1)
            i0 = ((pos - lo) << 1) + lo
            s[i0] = pos
        stride >>= 1
"""


def test_a_block_stride_counter_beside_a_round_value_names_the_loop():
    """The counter of a block-stride loop differs between threads: the message says so and
    the hint gives each thread its element from its index (it suggested the range() loop the
    kernel already has)."""
    message = refused(BLOCK_STRIDE_BUTTERFLY)
    assert "reads 'pos', the counter of a loop whose values differ between the threads of " \
        "the block (a block-stride loop)" in message, message
    assert "hint: give each thread its element of the round from its index" in message, message
    assert "write the loop as `for b in range(" not in message, message
