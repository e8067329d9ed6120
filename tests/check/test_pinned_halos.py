"""A halo store under a condition that leaves one thread (``if tx == B - 1: tile[tx + 2]``)
beside the tile's own store (``tile[tx + 1]``): the condition fixes the digit in the halo
store's thread, so its element (``B + 1``) is compared with the range the other store writes
(``1`` to ``B``) as a constant, as ``tile[B + 1]`` is (:func:`gpu_native.check.radix._apart`).

Accepted kernels run on the simulator against NumPy with the race detector watching every write;
near misses (a pin one short, a condition that leaves several threads) are refused and race
once their stores are put under ``with unsafe():``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import build, launch


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


HALO_1D = """
    B = 32

    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        assert block_dim.x == B
        tile = shared_array(f32, (B + 2,))
        tx = thread_idx.x
        i = block_idx.x * B + tx
        n = len(a)
        tile[tx + 1] = a[min(i, n - 1)]  # <--
        if {right}:
            tile[tx + 2] = a[min(i + 1, n - 1)]  # <--
        if tx == 0:
            tile[tx] = a[max(i - 1, 0)]  # <--
        sync_threads()
        if i < n:
            out[i] = tile[tx] + tile[tx + 1] + tile[tx + 2]
    """


def _smooth(a: np.ndarray) -> np.ndarray:
    padded = np.concatenate([a[:1], a, a[-1:]]).astype(np.float64)
    return padded[:-2] + padded[1:-1] + padded[2:]


@pytest.mark.parametrize("right", ["tx == B - 1", "B - 1 == tx", "tx == 31"])
def test_a_halo_store_left_to_one_thread(tmp_path, right):
    kernel = build(tmp_path, marked_unsafe(HALO_1D.format(right=right), wrap=False),
                   name="halo")["k"]
    a = np.random.default_rng(5).standard_normal(80).astype(np.float32)
    out = np.full(80, np.nan, np.float32)
    errors = launch(kernel, 3, 32, a, out)
    assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_allclose(out, _smooth(a), rtol=1e-5, atol=1e-5)


HALO_2D = """
    B = 8

    @gpu_kernel(Kernel2D)
    def k(a: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
        assert block_dim.x == B and block_dim.y == B
        tile = shared_array(f32, (B, B + 2))
        tx = thread_idx.x
        ty = thread_idx.y
        x = block_idx.x * B + tx
        y = block_idx.y * B + ty
        h, w = a.shape
        yy = min(y, h - 1)
        tile[ty, tx + 1] = a[yy, min(x, w - 1)]  # <--
        if tx == B - 1:
            tile[ty, tx + 2] = a[yy, min(x + 1, w - 1)]  # <--
        if tx == 0:
            tile[ty, tx] = a[yy, max(x - 1, 0)]  # <--
        sync_threads()
        if y < h and x < w:
            out[y, x] = tile[ty, tx] + tile[ty, tx + 1] + tile[ty, tx + 2]
    """


def test_a_two_dimensional_halo(tmp_path):
    kernel = build(tmp_path, marked_unsafe(HALO_2D, wrap=False), name="halo2d")["k"]
    a = np.random.default_rng(6).standard_normal((10, 13)).astype(np.float32)
    out = np.full((10, 13), np.nan, np.float32)
    errors = launch(kernel, (2, 2), (8, 8), a, out)
    assert errors.races == [] and errors.fails == [], errors
    want = np.stack([_smooth(row) for row in a])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


NEAR_MISSES = {
    # Thread B - 2 writes tile[B], which thread B - 1 writes through tile[tx + 1].
    "one_short": "tx == B - 2",
    # Not one thread: threads 30 and 31 write tile[32] and tile[33], thread 31 tile[32] too.
    "several_threads": "tx >= B - 2",
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused_and_race(tmp_path, name):
    source = HALO_1D.format(right=NEAR_MISSES[name])
    with pytest.raises(TranspileError, match=r"may meet|not provably unique|could race"):
        build(tmp_path, marked_unsafe(source, wrap=False), name=name)
    kernel = build(tmp_path, marked_unsafe(source), name=f"{name}_unsafe")["k"]
    a = np.arange(64, dtype=np.float32)
    assert launch(kernel, 2, 32, a, np.zeros(64, np.float32)).races


WRAPPING_PIN = """
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[i32]):
        s = shared_array(i32, 1100)
        tx = thread_idx.x
        s[tx] = 1  # <--
        if tx == block_dim.x * 1073741824 * 4:
            s[tx + 1] = 2  # <--
        sync_threads()
        out[block_idx.x * block_dim.x + tx] = s[tx + 1]
    """


def test_a_pin_whose_value_wraps_is_not_written_into_the_index(tmp_path):
    """``block_dim.x * 2**32`` is 0 in i32, so thread 0 writes ``s[1]`` beside thread 1's own
    ``s[1]``; the pin's value as written (``block_dim.x * 2**32``, past the array) would prove
    the pair apart. A side of the condition that may wrap pins nothing: refused, and it races
    once the stores are under ``with unsafe():``."""
    with pytest.raises(TranspileError, match=r"may meet|not provably unique"):
        build(tmp_path, marked_unsafe(WRAPPING_PIN, wrap=False), name="wrapping_pin")
    kernel = build(tmp_path, marked_unsafe(WRAPPING_PIN), name="wrapping_pin_unsafe")["k"]
    assert launch(kernel, 1, 64, np.zeros(64, np.int32)).races


PITCHED = """
    @gpu_kernel(Kernel2D)
    def k(img: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
        h, w = img.shape
        bw = block_dim.x + 2
        tile = shared_array(f32, 0)
        tx = thread_idx.x
        ty = thread_idx.y
        x = block_idx.x * block_dim.x + tx
        y = block_idx.y * block_dim.y + ty
        cx = min(x, w - 1)
        cy = min(y, h - 1)
        tile[(ty + 1) * bw + tx + 1] = img[cy, cx]  # <--
        if tx == 0:
            tile[(ty + 1) * bw] = img[cy, max(x - 1, 0)]  # <--
        if {right}:
            tile[(ty + 1) * bw + tx + 2] = img[cy, min(x + 1, w - 1)]  # <--
        sync_threads()
        if x < w and y < h:
            out[y, x] = tile[(ty + 1) * bw + tx] + tile[(ty + 1) * bw + tx + 2]
    """


def test_a_halo_of_a_tile_pitched_by_the_block_size(tmp_path):
    """Rows of ``block_dim.x + 2`` in dynamic shared memory: the left halo's ``-tx - 1`` and the
    right halo's ``block_dim.x - tx`` (with ``tx == block_dim.x - 1`` written in) stay short of
    a row."""
    source = PITCHED.format(right="tx == block_dim.x - 1")
    kernel = build(tmp_path, marked_unsafe(source, wrap=False), name="pitched")["k"]
    a = np.random.default_rng(8).standard_normal((9, 11)).astype(np.float32)
    for block in ((4, 4), (8, 2)):
        out = np.full((9, 11), np.nan, np.float32)
        grid = (-(-11 // block[0]), -(-9 // block[1]))
        shared = (block[0] + 2) * (block[1] + 2) * 4
        errors = launch(kernel, grid, block, a, out, shared=shared)
        assert errors.races == [] and errors.fails == [], errors
        padded = np.pad(a.astype(np.float64), ((0, 0), (1, 1)), mode="edge")
        np.testing.assert_allclose(out, padded[:, :-2] + padded[:, 2:], rtol=1e-6)


def test_a_pitched_halo_pinned_one_short_is_refused_and_races(tmp_path):
    # Thread block_dim.x - 2 writes the element thread block_dim.x - 1 writes as its own.
    source = PITCHED.format(right="tx == block_dim.x - 2")
    with pytest.raises(TranspileError, match=r"not provably unique|may meet"):
        build(tmp_path, marked_unsafe(source, wrap=False), name="pitched_short")
    kernel = build(tmp_path, marked_unsafe(source), name="pitched_short_unsafe")["k"]
    a = np.ones((8, 8), np.float32)
    assert launch(kernel, (2, 2), (4, 4), a, np.zeros((8, 8), np.float32),
                  shared=6 * 6 * 4).races
