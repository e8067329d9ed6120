"""An index ``q * K + j`` told apart by ``j`` alone: each thread owns a residue class.

cuda-samples' ``histogram64`` gives each thread a column of a shared table, ``s[bin * THREADS +
pos]``, with ``bin`` loaded from the data and ``pos`` a permutation of ``thread_idx.x``'s bits
that spreads the threads over the banks.  With ``0 <= j < K`` and ``j`` unique, two threads
never write one element whatever their ``q``; ``(t & 15) << 2 | (t & 48) >> 4`` is unique for
``t < 64``.  A read beside such a store must be of the thread's own residue.

Every refused kernel here really races: the same kernel with the refused access under ``with
unsafe():`` makes the simulator's race detector report it.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch

HISTOGRAM = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 64 * 64)
    tid = thread_idx.x
    pos = (tid & ~63) | ((tid & 15) << 2) | ((tid & 48) >> 4)
    for i in range(64):
        hist[i * 64 + tid] = 0
    sync_threads()
    for n in range(4):
        v = data[FlatLayout1D.uid() * 4 + n] & 63
        hist[v * 64 + pos] += 1
    sync_threads()
    total = 0
    for j in range(64):
        total += hist[tid * 64 + j]
    out[FlatLayout1D.uid()] = f32(total)
"""


def test_per_thread_counters_through_a_bit_permutation_are_race_free(tmp_path):
    kernel = build(tmp_path, HISTOGRAM)["k"]
    rng = np.random.default_rng()
    data = rng.integers(0, 1 << 30, 2 * 64 * 4).astype(np.int32)
    out = np.full(128, np.nan, np.float32)
    result = launch(kernel, 2, 64, out, data)
    assert result.races == [] and result.fails == []
    for b in range(2):
        block = data[b * 256:(b + 1) * 256] & 63
        np.testing.assert_array_equal(out[b * 64:(b + 1) * 64], np.bincount(block, minlength=64))


ACCEPTED = {
    "another row of the thread's own column": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    for i in range(64):
        hist[i * 64 + tid] = 0
    sync_threads()
    v = data[tid] & 63
    hist[v * 64 + tid] += 1
    x = hist[(data[tid + 64] & 63) * 64 + tid]
    hist[(v ^ 1) * 64 + tid] = x
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""",
    "a row hashed with arithmetic that wraps, masked to the table": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    for i in range(64):
        hist[i * 64 + tid] = 0
    sync_threads()
    bucket = ((data[tid] * 40503 + 7919) >> 7) & 63
    hist[bucket * 64 + tid] += 1
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""",
    "a shift for the multiple, the digit first": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    for i in range(64):
        hist[tid + i * 64] = 0
    sync_threads()
    hist[tid + ((data[tid] & 63) << 6)] += 1
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""",
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_accepted_residue_kernel_is_race_free(tmp_path, case):
    kernel = build(tmp_path, ACCEPTED[case])["k"]
    data = np.random.default_rng().integers(0, 1 << 30, 256).astype(np.int32)
    result = launch(kernel, 2, 64, np.zeros(128, np.float32), data)
    assert result.races == [] and result.fails == []


# Each case: the kernel (the refused access marked `# <--`), words of the refusal or its hint,
# the block size and the data of a launch that races.
_SAME_BIN = np.zeros(256, np.int32)
_WRAPS = np.zeros(256, np.int32)
_WRAPS[0] = 178956971  # 48 * 178956971 is 16 modulo 2**32: thread 0 meets thread 16
REFUSED = {
    "the digit may reach the modulus": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    v = data[tid] & 31
    hist[v * 32 + tid] = 1  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""", ["not shown to stay below 32", "assert block_dim.x == 32"], 64,
        (np.arange(256) < 32).astype(np.int32)),  # thread 0 (bin 1) meets thread 32 (bin 0)
    "a neighbour's column read": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    v = data[tid] & 63
    hist[v * 64 + tid] = 1
    x = hist[v * 64 + (tid + 1) % 64]  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(x)
""", ["not at an index of the same residue"], 64, _SAME_BIN),
    "a neighbour's read under a condition": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    v = data[tid] & 63
    hist[v * 64 + tid] = 1
    x = 0
    if tid == 0:
        x = hist[v * 64 + 5]  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(x)
""", ["unique by the residue of its index alone"], 64, _SAME_BIN),
    "a global array told apart within a block only": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    v = data[FlatLayout1D.uid()] & 63
    out[v * 64 + thread_idx.x] = 1.0  # <--
""", ["not provably unique"], 64, _SAME_BIN),
    "a product that may wrap": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 48
    hist = shared_array(f32, 4096)
    tid = thread_idx.x
    hist[data[tid] * 48 + tid] = 1.0  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = hist[tid]
""", ["may wrap around in i32"], 48, _WRAPS),
    "two digits with no barrier between": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    pos = ((tid & 15) << 2) | ((tid & 48) >> 4)
    v = data[tid] & 63
    hist[v * 64 + tid] = 1
    hist[v * 64 + pos] = 2  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""", ["written through two different indices"], 64, _SAME_BIN),
    "a right shift that drops a bit": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    hist[(data[tid] & 63) * 64 + (((tid & 15) << 2) | ((tid & 48) >> 5))] = 1  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""", ["not a permutation of them"], 64, _SAME_BIN),
    "fields that overlap": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    hist[(data[tid] & 31) * 128 + (((tid & 15) << 2) | ((tid & 48) >> 3))] = 1  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""", ["not a permutation of them"], 64, _SAME_BIN),
    "a bit left out": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], data: CUDASlice[i32]):
    assert block_dim.x == 64
    hist = shared_array(i32, 4096)
    tid = thread_idx.x
    hist[(data[tid] & 63) * 64 + ((tid & 15) << 2)] = 1  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = f32(hist[tid])
""", ["not a permutation of them"], 64, _SAME_BIN),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_near_miss_is_refused_with_what_the_rule_needs(tmp_path, case):
    body, words, _, _ = REFUSED[case]
    with pytest.raises(TranspileError) as info:
        build(tmp_path, marked_unsafe(body, wrap=False))
    text = f"{info.value}\n{info.value.hint}"
    for word in words:
        assert word in text, text


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_residue_kernel_really_races(tmp_path, case):
    body, _, block, data = REFUSED[case]
    kernel = build(tmp_path, marked_unsafe(body, wrap=True), name="wrapped")["k"]
    result = launch(kernel, 2, block, np.zeros(8192, np.float32), data)
    assert result.races != [], result.fails


def test_expand_proofs_say_the_residue_store_is_block_unique(tmp_path, capsys):
    from gpu_native.cli import main
    from tests.simulator.support import HEADER

    path = tmp_path / "residue.py"
    path.write_text(HEADER + HISTOGRAM)
    assert main(["expand", "--proofs", str(path)]) == 0
    text = capsys.readouterr().out
    assert "hist[v * 64 + pos] += 1\n        block-unique index" in text, text
