"""Reads of a shared array whose proof needs the values a loop gives a local (``XY[t -
stride]``), where the block's trace cannot follow the kernel (a loop bounded by an unasserted
``block_dim.x``, a barrier under a condition).  They were accepted with no proof, and only the
simulator's race detector caught the racing ones (PMPP's one-barrier Kogge-Stone scan).  Now a
read the trace followed before it gave up is proven with the values it saw, a read a barrier
parts from every store needs none, and any other is refused.  A condition the whole block takes
alike (``if is_last[0] == 1:``, a shared flag read after a barrier) is followed down both
branches, so the last-block reduction's second tree is proven.

Every refused kernel here really races: the same kernel with the refused read under ``with
unsafe():`` makes the simulator's race detector report it.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch

# Each case: the kernel k(out, x) (the refused read marked `# <--`), words of the refusal and
# its hint, and the block of a launch that races.
REFUSED = {
    "one barrier a round, the loop bounded by the block": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], x: CUDASlice[f32]):
    xy = shared_array(f32, 256)
    t = thread_idx.x
    xy[t] = x[t]
    stride = 1
    while stride < block_dim.x:
        sync_threads()
        if t >= stride:
            v = xy[t - stride]  # <--
            xy[t] += v
        stride *= 2
    out[FlatLayout1D.uid()] = xy[t]
""", ["whose values in each barrier interval are not known",
      "a barrier in a loop whose trip count the trace does not know",
      "assert block_dim.x == 128"], 64),
    "a barrier in a loop the threads leave at their own round": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], x: CUDASlice[f32]):
    xy = shared_array(f32, 256)
    t = thread_idx.x
    xy[t] = x[t]
    stride = 1
    while stride <= t:
        sync_threads()
        v = xy[t - stride]  # <--
        xy[t] += v
        stride *= 2
    out[FlatLayout1D.uid()] = xy[t]
""", ["whose values in each barrier interval are not known",
      "part the read from the stores with a sync_threads()"], 64),
    "the second tree of a last-block reduction with no barrier in its loop": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], x: CUDASlice[f32]):
    assert block_dim.x == 64
    cache = shared_array(f32, 64)
    flag = shared_array(i32, 1)
    t = thread_idx.x
    cache[t] = x[FlatLayout1D.uid()]
    if t == 0:
        flag[0] = 1 if x[0] > -1000.0 else 0
    sync_threads()
    if flag[0] == 1:
        sync_threads()
        s = 32
        while s > 0:
            if t < s:
                cache[t] += cache[t + s]  # <--
            s //= 2
        sync_threads()
    if t == 0:
        out[block_idx.x] = cache[0]
""", ["'cache' is read here", "in the same barrier interval"], 64),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_read_the_trace_cannot_prove_is_refused(tmp_path, case):
    body, words, _ = REFUSED[case]
    with pytest.raises(TranspileError) as info:
        build(tmp_path, marked_unsafe(body, wrap=False))
    text = f"{info.value}\n{info.value.hint}"
    for word in words:
        assert word in text, text


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_refused_read_really_races(tmp_path, case):
    body, _, block = REFUSED[case]
    kernel = build(tmp_path, marked_unsafe(body, wrap=True), name="wrapped")["k"]
    x = np.random.default_rng().standard_normal(256).astype(np.float32)
    try:
        races = launch(kernel, 2, block, np.zeros(256, np.float32), x).races
    except Exception as e:  # a divergent barrier is reported as it happens
        races = [str(e)]
    assert races != []


ACCEPTED = {
    "two barriers a round (PMPP's Kogge-Stone), the block unasserted": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], x: CUDASlice[f32]):
    xy = shared_array(f32, 256)
    t = thread_idx.x
    xy[t] = x[t]
    stride = 1
    while stride < block_dim.x:
        sync_threads()
        v = f32(0.0)
        if t >= stride:
            v = xy[t - stride]
        sync_threads()
        if t >= stride:
            xy[t] += v
        stride *= 2
    out[FlatLayout1D.uid()] = xy[t]
""",
    "the last-block reduction's second tree, under a shared flag": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], x: CUDASlice[f32]):
    assert block_dim.x == 64
    cache = shared_array(f32, 64)
    flag = shared_array(i32, 1)
    t = thread_idx.x
    cache[t] = x[FlatLayout1D.uid()]
    s = 32
    while s > 0:
        sync_threads()
        if t < s:
            cache[t] += cache[t + s]
        s //= 2
    if t == 0:
        flag[0] = 1 if cache[0] > -1000.0 else 0
    sync_threads()
    if flag[0] == 1:
        cache[t] = x[t]
        s = 32
        while s > 0:
            sync_threads()
            if t < s:
                cache[t] += cache[t + s]
            s //= 2
        if t == 0:
            out[block_idx.x] = cache[0]
""",
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_a_read_barriers_or_the_trace_prove_is_accepted_and_race_free(tmp_path, case):
    kernel = build(tmp_path, ACCEPTED[case])["k"]
    x = np.random.default_rng().standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    result = launch(kernel, 2, 64, out, x)
    assert result.races == [] and result.fails == []
