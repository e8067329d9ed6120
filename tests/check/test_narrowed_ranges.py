"""A condition that leaves a store to some threads (``if tid < 1:``) says nothing of the thread
that runs another store: two stores each left to one thread are apart only when they are left
to the same thread.  (Both refusals below were accepted before: a range of one value in one
store was taken for both threads, and the thread pinned by ``if tid == 3:`` was taken to run
the other store, which only thread 0 runs.)"""

from __future__ import annotations

import textwrap

import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

KERNEL = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, f32, block_dim, block_idx,
                        shared_array, sync_threads, thread_idx)

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    s = shared_array(f32, (256,))
    tid = thread_idx.x
    if {first}:
        s[{first_index}] = 1.0
    if {second}:
        s[{second_index}] = 2.0
    sync_threads()
    out[block_idx.x * 128 + tid] = s[tid]
"""


def transpile(**parts):
    return transpile_module(textwrap.dedent(KERNEL.format(**parts)), "narrowed.py", "narrowed")


def test_two_stores_left_to_the_same_thread_are_accepted():
    transpile(first="tid < 1", first_index="tid + 7", second="tid == 0", second_index="7")


@pytest.mark.parametrize("parts", [
    # thread 0 (the only one under tid < 1) and thread 3 both write s[7]
    dict(first="tid < 1", first_index="7", second="tid == 3", second_index="7"),
    dict(first="tid == 3", first_index="7", second="tid < 1", second_index="tid + 7"),
], ids=["constant index", "index of tid"])
def test_stores_left_to_different_threads_at_one_element_are_refused(parts):
    with pytest.raises(TranspileError) as info:
        transpile(**parts)
    assert "may meet the store at line" in str(info.value)
