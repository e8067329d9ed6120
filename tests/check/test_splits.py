"""Splits of a unique flat value and XOR swizzles (gpu_native/check/splits.py, the gallery's R6).

``tile[flat // K, flat % K]`` with ``flat = ty * TX + tx + load * THREADS`` is unique because
``flat`` is (the mixed-radix rule) and ``(flat // K, flat % K)`` is one-to-one for ``K >= 1``;
the FFT's ``j = (t // half) * (2 * half) + t % half`` and ``j + half`` are apart for a launch
parameter ``half`` the launcher checks ``>= 1``; ``ka ^ g(ra)`` permutes a row's chunks when
``g`` depends only on the row.  Accepted kernels run on the simulator with its race detector
watching every written array; each near miss differs from an accepted kernel in one place and
is refused (most with two threads that do meet).
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.expand import Expansion
from tests.simulator.support import HEADER, build


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed, so a race between two plain stores is reported."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def launch(kernel, grid, block):
    return kernel.launch(grid, block, 0, gn.DEFAULT_STREAM)


TILE = """
@gpu_kernel(Kernel2D)
def k(out: CUDASliceMut2D[i32]):
    assert block_dim.x == 16 and block_dim.y == 8 and grid_dim.y == 1
    s = shared_array(i32, (32, 8))
    tid = thread_idx.y * 16 + thread_idx.x
    for load in range(2):
        flat = tid + load * 128
        s[flat // 8, flat % 8] = flat
    sync_threads()
    for load in range(2):
        flat = tid + load * 128
        out[block_idx.x * 32 + flat // 8, flat % 8] = s[flat // 8, flat % 8]
"""

FFT = """
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32], half: i64):
    t: UniqueId = FlatLayout1D.uid()
    if t < len(a) // 2:
        j = (t // half) * (2 * half) + t % half
        a[j] = a[j] + 1
        a[j + half] = a[j + half] + 10
"""

SWIZZLE = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == 64
    s = shared_array(i32, (64, 4))
    tid = thread_idx.x
    for q in range(4):
        c = tid + q * 64
        r = c // 4
        kk = c % 4
        s[r, kk ^ ((r >> 1) & 3)] = c
    sync_threads()
    for q in range(4):
        c = tid + q * 64
        out[block_idx.x * 256 + c] = s[c // 4, c % 4]
"""


def test_a_flat_value_split_in_two_indices(backend, kernel_module):
    kernel = kernel_module(HEADER + TILE).k
    out = gn.empty((64, 8), gn.i32)
    launch(kernel, gn.GridDim2D(2, 1), gn.BlockDim2D(16, 8))(out)
    np.testing.assert_array_equal(out.to_host(), np.tile(np.arange(256).reshape(32, 8), (2, 1)))
    text = Expansion.of(HEADER + TILE, "k.py", "k").proofs()
    assert "(128 * load + thread_idx.x + 16 * thread_idx.y) // 8 (stride 1)" in text, text
    assert "thread_idx.y (stride 16)" in text and "load (stride 128)" in text, text


def test_the_fft_butterfly_with_a_parameter_half(backend, kernel_module):
    kernel = kernel_module(HEADER + FFT).k
    for half in (1, 2, 4, 16):
        a = gn.to_device(np.zeros(64, np.int32))
        launch(kernel, gn.GridDim1D(1), gn.BlockDim1D(32))(a, half)
        want = np.where((np.arange(64) // half) % 2 == 0, 1, 10)
        np.testing.assert_array_equal(a.to_host(), want)
    text = Expansion.of(HEADER + FFT, "k.py", "k").proofs()
    assert "when half >= 1 (the launcher checks it)" in text, text
    assert "disjoint from the stores at line" in text, text


def test_the_launcher_refuses_a_half_below_one(backend, kernel_module):
    kernel = kernel_module(HEADER + FFT).k
    a = gn.to_device(np.zeros(64, np.int32))
    for half in (0, -4):
        with pytest.raises(ValueError, match=rf"'half' is {half} .* half >= 1"):
            launch(kernel, gn.GridDim1D(1), gn.BlockDim1D(32))(a, half)
    np.testing.assert_array_equal(a.to_host(), 0)  # nothing ran


def test_an_xor_swizzle_of_a_rows_chunks(backend, kernel_module):
    kernel = kernel_module(HEADER + SWIZZLE).k
    out = gn.empty(512, gn.i32)
    launch(kernel, gn.GridDim1D(2), gn.BlockDim1D(64))(out)
    c = np.arange(256)
    r, kk = c // 4, c % 4
    want = np.empty(256, np.int64)
    want[r * 4 + (kk ^ ((r >> 1) & 3))] = c
    np.testing.assert_array_equal(out.to_host(), np.tile(want, 2))


def test_xor_with_a_constant_is_a_permutation(tmp_path):
    build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid ^ 1] = 1.0
""")


# ---- near misses, refused ----------------------------------------------------------------------

NEAR_MISSES = {
    "split by two radices": (TILE.replace("s[flat // 8, flat % 8] = flat",
                                          "s[flat // 8, flat % 4] = flat"),
                             ["store into 's'", "differ only in thread_idx.x and thread_idx.y"]),
    "flat value without the block size": (
        TILE.replace("block_dim.x == 16 and block_dim.y == 8 and ", ""),
        ["store into 's'", "(thread_idx.x = 0, thread_idx.y = 1) and (thread_idx.x = 16, "
         "thread_idx.y = 0) both write s[2, 0]"]),
    "a loop stride one short of the block": (
        TILE.replace("flat = tid + load * 128\n        s[", "flat = tid + load * 127\n        s["),
        ["store into 's'", "(thread_idx.x = 0, thread_idx.y = 0) and (thread_idx.x = 15, "
         "thread_idx.y = 7) both write s[15, 7]"]),
    "a split of a value that can be negative": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut2D[f32]):
    assert block_dim.x == 64
    flat = thread_idx.x - 32
    out[flat // 8, flat % 8] = 1.0
""", ["store into 'out'", "not an affine function"]),
    "the second store one short of half": (
        FFT.replace("a[j + half] = a[j + half] + 10", "a[j + half - 1] = a[j + half - 1] + 10"),
        # No example: the small launch's only meetings were of one store with itself, at
        # a[-1] with half = 0, which no launch runs.
        ["store into 'a'", "can reach the same element through this store and the one at "
                            "line 18"]),
    "a stride of half, not 2 * half": (
        FFT.replace("(t // half) * (2 * half)", "(t // half) * half"),
        ["store into 'a'", "and the one at line"]),
    "a divisor the launcher cannot check": (
        FFT.replace("half: i64):", "half: i64, other: i64):").replace(
            "(t // half) * (2 * half) + t % half",
            "(t // half) * (2 * half) + t % other"),
        ["store into 'a'"]),
    "a device function's divisor": ("""
@gpu_device
def butterfly(a: CUDASliceMut[i32], t: i64, half: i64):
    j = (t // half) * (2 * half) + t % half
    a[j] = 1
    a[j + half] = 2

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32], half: i64):
    t: UniqueId = FlatLayout1D.uid()
    butterfly(a, t, half)
""", ["store into 'a'"]),
    "a swizzle that leaves the row": (
        SWIZZLE.replace("s = shared_array(i32, (64, 4))", "s = shared_array(i32, 256)")
        .replace("s[r, kk ^ ((r >> 1) & 3)] = c", "s[r * 4 + (kk ^ (r & 7))] = c")
        .replace("s[c // 4, c % 4]", "s[c]"),
        ["thread_idx.x = 31 and thread_idx.x = 32 both write s[32]"]),
    "XOR with the digit's own bits": (
        SWIZZLE.replace("kk ^ ((r >> 1) & 3)", "kk ^ (kk & 1)"),
        ["thread_idx.x = 0 and thread_idx.x = 1 both write s[0, 0]"]),
    "XOR with another thread value": (
        SWIZZLE.replace("kk ^ ((r >> 1) & 3)", "kk ^ (tid & 3)"),
        ["store into 's'", "can reach the same element"]),
}


@pytest.mark.parametrize("case", list(NEAR_MISSES))
def test_near_miss_is_refused(tmp_path, case):
    body, messages = NEAR_MISSES[case]
    assert body not in (TILE, FFT, SWIZZLE), "the replacement did not apply"
    with pytest.raises(TranspileError) as info:
        build(tmp_path, body)
    text = str(info.value)
    for message in messages:
        assert message in text, text


def test_a_condition_narrows_only_its_own_stores_range(tmp_path):
    """``if tid < 16: s[tid + 16]`` beside ``s[tid]``: thread 4's first store and thread 20's
    second both write ``s[20]``; the pair proof must use the wider range of ``tid`` (the pair's
    ranges used to be merged by taking the first store's, narrowed by its condition)."""
    with pytest.raises(TranspileError, match="written through two different indices"):
        build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, 64)
    s[thread_idx.x] = 2.0
    if thread_idx.x < 16:
        s[thread_idx.x + 16] = 1.0
""")


# ---- cp_async: a run of elements per thread ----------------------------------------------------

CP_ASYNC = HEADER.replace("lane_id,", "lane_id, cp_async, cp_async_commit, cp_async_wait,") + """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f16], out: CUDASliceMut[f16]):
    assert block_dim.x == 64
    tile = shared_array(f16, (32, 32))
    tid = thread_idx.x
    for q in range(2):
        c = tid + q * 64
        r = c // 4
        kk = c % 4
        if i64(block_idx.x) * 1024 + r * 32 + kk * 8 + 8 <= len(a):
            cp_async(tile, (r, (kk ^ ((r >> 1) & 3)) * 8), a, (block_idx.x * 1024 + r * 32 + kk * 8,), 16)
    cp_async_commit()
    cp_async_wait(0)
    sync_threads()
    for q in range(2):
        c = tid + q * 64
        for e in range(8):
            out[block_idx.x * 1024 + c * 8 + e] = tile[c // 4, ((c % 4) ^ (((c // 4) >> 1) & 3)) * 8 + e]
"""


def test_cp_async_into_a_swizzled_tile_needs_no_unsafe(backend, kernel_module):
    kernel = kernel_module(CP_ASYNC).k
    x = np.arange(2048).astype(np.float16)
    out = gn.empty(2048, gn.f16)
    launch(kernel, gn.GridDim1D(2), gn.BlockDim1D(64))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x)


@pytest.mark.parametrize("change", [
    ("(kk ^ ((r >> 1) & 3)) * 8), a", "kk * 4), a"),        # 8-element runs 4 apart overlap
    ("(kk ^ ((r >> 1) & 3)) * 8), a", "(kk ^ (kk & 1)) * 8), a"),
    ("c = tid + q * 64\n        r", "c = tid + q * 63\n        r"),
])
def test_cp_async_near_miss_is_refused(tmp_path, change):
    source = CP_ASYNC.replace(*change)
    assert source != CP_ASYNC
    with pytest.raises(TranspileError, match="cp_async"):
        from gpu_native.rewrite import transpile_module
        transpile_module(source, str(tmp_path / "k.py"), "k")


CP_ASYNC_THEN_STORE = HEADER.replace("lane_id,", "lane_id, cp_async,") + """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f16]):
    assert block_dim.x == 64
    tile = shared_array(f16, (2, 512))
    tid = thread_idx.x
    cp_async(tile, (0, tid * 8), a, (tid * 8,), 16)
    tile[ROW, tid] = f16(1.0)
"""


def test_a_plain_store_after_cp_async_is_proven_against_its_run(tmp_path):
    """Thread 1's ``tile[0, 1]`` lies in thread 0's run ``tile[0, 0:8]``: the plain store, which
    the classic rule accepts on its own (``tid`` is unique), was not proven against the run."""
    build(tmp_path, CP_ASYNC_THEN_STORE.replace("ROW", "1"))
    with pytest.raises(TranspileError, match=r"thread_idx.x = 0 and thread_idx.x = 1 both "
                                             r"write tile\[0, 1\]"):
        build(tmp_path, CP_ASYNC_THEN_STORE.replace("ROW", "0"))
