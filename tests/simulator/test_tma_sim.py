"""Tensor copies (``tma_load`` / ``tma_wait``) on the simulator: the copies against NumPy, the
barriers' phases (a wait that would hang or pass on a wrong fill, two threads closing one fill)
and the race detector around copies in flight."""

from __future__ import annotations

import importlib
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from tests.simulator.support import build, launch

THREADS = 128

# A ring of STAGES slices of R x C: thread 0 fills, every thread waits for the slice of its
# step and copies it out, a barrier, the refill.  Block b copies a's rows b * per onwards into
# out[b] (its own axis: the checker proves the stores unique).
RING = """
@gpu_kernel(Kernel1D)
def {name}(a: CUDASlice2D[T], out: CUDASliceMut3D[T]):
    assert block_dim.x == 128 and a.shape[1] == {C} and out.shape[2] == {C}
    assert out.shape[0] == grid_dim.x and a.shape[0] == grid_dim.x * out.shape[1]
    assert out.shape[1] % {R} == 0
    tile = shared_array(T, {shape}, swizzle=128)
    tid = thread_idx.x
    per = out.shape[1]
    base = block_idx.x * per
    nt = per // {R}
    if tid == 0:
        for s in range({STAGES}):
            if s < nt:
                tma_load(tile, (s,), a, (base + s * {R}, 0))
    for t in range(nt):
        st = t % {STAGES}
        tma_wait(tile, (st,))
        for i in range(tid, {R} * {C}, 128):
            out[block_idx.x, t * {R} + i // {C}, i % {C}] = tile[st, i // {C}, i % {C}]
        sync_threads()
        if tid == 0 and t + {STAGES} < nt:
            tma_load(tile, (st,), a, (base + (t + {STAGES}) * {R}, 0))
"""


def _ring(name: str, rows: int, cols: int, stages: int) -> str:
    """The ring kernel of ``stages`` slices of rows x cols."""
    return RING.format(name=name, R=rows, C=cols, STAGES=stages, shape=(stages, rows, cols))


KERNELS = "from gpu_native import tma_load, tma_wait, warpgroup_arrive, warpgroup_commit, " \
    "warpgroup_mma, warpgroup_wait\n\nT = TypeVar('T', f16, bf16)\n" + "".join([
        _ring("ring", 16, 64, 2),
        _ring("ring_two_boxes", 8, 128, 3),
        _ring("ring_four_boxes", 8, 256, 2),
    ]) + """
@gpu_kernel(Kernel1D)
def one_slice(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], row: int, col: int):
    assert block_dim.x == 128 and grid_dim.x == 1
    assert out.shape[0] == 64 and out.shape[1] == 64
    tile = shared_array(f16, (64, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 0:
        tma_load(tile, (), a, (row, col))
    tma_wait(tile, ())
    for i in range(tid, 64 * 64, 128):
        out[i // 64, i % 64] = tile[i // 64, i % 64]

@gpu_kernel(Kernel1D)
def after_exits(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 128
    tile = shared_array(f16, (16, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 127:
        tma_load(tile, (), a, (0, 0))
    if tid % 2 == 0:
        return
    tma_wait(tile, ())
    out[0, tid] = tile[tid // 64, tid % 64]

@gpu_kernel(Kernel1D)
def read_in_flight(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 128
    tile = shared_array(f16, (2, 16, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 0:
        tma_load(tile, (1,), a, (0, 0))
    early = tile[1, 3, tid % 64]
    tma_wait(tile, (1,))
    out[0, tid] = early

@gpu_kernel(Kernel1D)
def read_unwaited(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], barrier: int):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 128
    tile = shared_array(f16, (16, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 0:
        tma_load(tile, (), a, (0, 0))
        tma_wait(tile, ())
    if barrier != 0:
        sync_threads()
    out[0, tid] = tile[tid // 64, tid % 64]

@gpu_kernel(Kernel1D)
def refill_unsynced(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 64
    assert a.shape[0] == 32 and out.shape[0] == 32
    tile = shared_array(f16, (16, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 0:
        tma_load(tile, (), a, (0, 0))
    tma_wait(tile, ())
    for i in range(tid, 16 * 64, 128):
        out[i // 64, i % 64] = tile[i // 64, i % 64]
    if tid == 0:
        tma_load(tile, (), a, (16, 0))
    tma_wait(tile, ())
    for i in range(tid, 16 * 64, 128):
        out[16 + i // 64, i % 64] = tile[i // 64, i % 64]

@gpu_kernel(Kernel1D)
def never_filled(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], fill: int):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 128
    tile = shared_array(f16, (2, 16, 64), swizzle=128)
    tid = thread_idx.x
    if tid == 0 and fill != 0:
        tma_load(tile, (1,), a, (0, 0))
    tma_wait(tile, (1,))
    out[0, tid] = tile[1, tid // 64, tid % 64]

@gpu_kernel(Kernel1D)
def skipped_wait(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], skipper: int):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 128
    tile = shared_array(f16, (16, 64), swizzle=128)
    tid = thread_idx.x
    for k in range(3):
        if tid == 0:
            tma_load(tile, (), a, (16 * k, 0))
        if tid != skipper or k != 1:
            tma_wait(tile, ())
        sync_threads()
    out[0, tid] = tile[tid // 64, tid % 64]

@gpu_kernel(Kernel1D)
def two_issuers(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16]):
    assert block_dim.x == 128 and grid_dim.x == 1 and out.shape[1] == 128
    tile = shared_array(f16, (16, 64), swizzle=128)
    tid = thread_idx.x
    with unsafe():
        if tid < 2:
            tma_load(tile, (), a, (0, 0))
    tma_wait(tile, ())
    out[0, tid] = tile[tid // 64, tid % 64]

@gpu_kernel(Kernel1D)
def mma_before_wait(a: CUDASlice2D[f16], b: CUDASlice2D[f16], out: CUDASliceMut2D[f32]):
    assert block_dim.x == 128 and grid_dim.x == 1
    assert out.shape[0] == 128 and out.shape[1] == 32
    ta = shared_array(f16, (64, 64), swizzle=128)
    tb = shared_array(f16, (16, 64), swizzle=128)
    acc = local_array(f32, (32,))
    tid = thread_idx.x
    for i in range(32):
        acc[i] = 0.0
    if tid == 0:
        tma_load(ta, (), a, (0, 0))
        tma_load(tb, (), b, (0, 0))
    tma_wait(tb, ())
    warpgroup_arrive()
    warpgroup_mma(acc, ta, (0, 0), tb, (0, 0), 64)
    warpgroup_commit()
    warpgroup_wait(0)
    tma_wait(ta, ())
    for i in range(32):
        out[tid, i] = acc[i]
"""


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tma"), KERNELS, name="tmakernels")


def lines_in(k, kernel: str, text: str) -> str:
    """``tmakernels.py:N`` for the first line after ``def kernel(`` whose stripped text is
    ``text``."""
    lines = k.path.read_text().splitlines()
    start = next(n for n, s in enumerate(lines) if s.startswith(f"def {kernel}("))
    return f"{k.path.name}:{next(n for n in range(start, len(lines)) if lines[n].strip() == text) + 1}"


def _f16(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


def _bf16_bits(shape, seed: int) -> np.ndarray:
    """Random bf16 numbers as their bit patterns (how the simulator takes bf16 arrays)."""
    f = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16)


def _poisoned_like(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.uint16:  # bf16 bits: a NaN
        return np.full(a.shape, 0x7FC1, np.uint16)
    return np.full(a.shape, np.nan, a.dtype)


def _copy(kernel, a: np.ndarray, blocks: int = 1):
    """Run a ring kernel over ``blocks`` blocks; (what it copied, as ``a``'s shape, errors)."""
    out = _poisoned_like(a).reshape(blocks, -1, a.shape[1])
    errors = launch(kernel, blocks, THREADS, a, out)
    return out.reshape(a.shape), errors


class TestCopies:
    @pytest.mark.slow
    @pytest.mark.parametrize("tiles", [1, 2, 3, 4, 7])
    def test_a_two_stage_ring_copies_every_tile(self, k, tiles):
        a = _f16((tiles * 16, 64), seed=tiles)
        out, errors = _copy(k["ring", "f16"], a)
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, a)

    def test_bf16(self, k):
        a = _bf16_bits((5 * 16, 64), seed=1)
        out, errors = _copy(k["ring", "bf16"], a)
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, a)

    @pytest.mark.parametrize(("name", "tiles"), [("ring_two_boxes", 7), ("ring_four_boxes", 5)])
    def test_slices_of_several_boxes(self, k, name, tiles):
        cols = 128 if name == "ring_two_boxes" else 256
        a = _f16((tiles * 8, cols), seed=cols)
        out, errors = _copy(k[name, "f16"], a)
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, a)

    def test_a_two_dimensional_destination(self, k):
        a = _f16((192, 256), seed=4)
        out = np.full((64, 64), np.nan, np.float16)
        errors = launch(k["one_slice"], 1, THREADS, a, out, np.int64(128), np.int64(64))
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, a[128:, 64:128])

    @pytest.mark.parametrize("blocks", [2, 5])
    def test_every_block_has_its_own_barriers(self, k, blocks):
        a = _f16((blocks * 3 * 16, 64), seed=blocks)
        out, errors = _copy(k["ring", "f16"], a, blocks)
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, a)

    def test_blocks_in_several_chunks(self, k, monkeypatch):
        monkeypatch.setenv("GPU_NATIVE_SIM_LANES", "256")  # two blocks a chunk
        a = _f16((5 * 2 * 16, 64), seed=6)
        out, errors = _copy(k["ring", "f16"], a, 5)
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, a)

    def test_the_threads_keep_their_barrier_state_when_others_leave(self, k):
        """Half the threads return before the wait (the chunk is compacted): the issuing thread
        still arrives, and every thread's count of waits is its own."""
        a = _f16((16, 64), seed=20)
        out = np.full((1, 128), np.nan, np.float16)
        errors = launch(k["after_exits"], 1, THREADS, a, out)
        assert errors.races == [] and errors.fails == []
        want = np.where(np.arange(128) % 2 == 1, a[:2].reshape(-1), np.nan)
        np.testing.assert_array_equal(out[0], want)

    def test_a_tile_past_the_source_is_an_index_error(self, k):
        a = _f16((128, 128), seed=7)
        errors = launch(k["one_slice"], 1, THREADS, a, np.zeros((64, 64), np.float16),
                        np.int64(96), np.int64(0))
        ((_site, index, length, block, thread),) = errors.fails
        assert (index, length, block, thread) == (159, 128, (0, 0, 0), (0, 0, 0))


class TestRaces:
    def test_a_read_while_the_copy_is_in_flight(self, k):
        a = _f16((16, 64), seed=8)
        out = np.zeros((1, 128), np.float16)
        errors = launch(k["read_in_flight"], 1, THREADS, a, out)
        assert errors.races == [
            f"data race on shared array tile[1, 3, 0] of block (0, 0, 0): thread (0, 0, 0) "
            f"reads it at {lines_in(k, 'read_in_flight', 'early = tile[1, 3, tid % 64]')} "
            f"while the tma_load issued by thread (0, 0, 0) at "
            f"{lines_in(k, 'read_in_flight', 'tma_load(tile, (1,), a, (0, 0))')} may still be "
            "writing it (the copy lands at an unknown moment before the tma_wait that completes "
            "it); touch slice tile[1] only after this thread's tma_wait for that fill, and "
            "issue a refill only after a sync_threads() that follows every thread's last use "
            "of the slice"]

    def test_a_read_by_a_thread_that_did_not_wait(self, k):
        a = _f16((16, 64), seed=9)
        out = np.zeros((1, 128), np.float16)
        errors = launch(k["read_unwaited"], 1, THREADS, a, out, np.int64(0))
        (msg,) = errors.races
        read = lines_in(k, "read_unwaited", "out[0, tid] = tile[tid // 64, tid % 64]")
        issue = lines_in(k, "read_unwaited", "tma_load(tile, (), a, (0, 0))")
        assert msg.startswith(
            f"data race on shared array tile[0, 1] of block (0, 0, 0): thread (1, 0, 0) reads "
            f"it at {read} before its own tma_wait for the copy that thread (0, 0, 0) issued at "
            f"{issue}: ")
        assert msg.endswith("call tma_wait for 'tile' in this thread before this access, or "
                            "put a sync_threads() between a wait and it")
        np.testing.assert_array_equal(out[0], a[:2].reshape(-1))  # it landed, in lockstep

    def test_a_barrier_after_the_wait_orders_the_copy_before_every_thread(self, k):
        a = _f16((16, 64), seed=10)
        out = np.zeros((1, 128), np.float16)
        errors = launch(k["read_unwaited"], 1, THREADS, a, out, np.int64(1))
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out[0], a[:2].reshape(-1))

    def test_a_refill_without_a_barrier_after_the_reads(self, k):
        a = _f16((32, 64), seed=11)
        out = np.full((32, 64), np.nan, np.float16)
        errors = launch(k["refill_unsynced"], 1, THREADS, a, out)
        issue = lines_in(k, "refill_unsynced", "tma_load(tile, (), a, (16, 0))")
        read = lines_in(k, "refill_unsynced", "out[i // 64, i % 64] = tile[i // 64, i % 64]")
        assert errors.races == [
            f"data race on shared array tile[0, 1] of block (0, 0, 0): thread (0, 0, 0) writes "
            f"it at {issue} after thread (1, 0, 0) read it at {read}; no barrier lies between "
            "the two accesses, so on the GPU the result depends on timing; add one between them "
            "where both threads run, outside this divergent branch (sync_warp() where the whole "
            "warp reaches it, sync_threads() where the whole block does)"]
        np.testing.assert_array_equal(out, a)  # lockstep hides it

    def test_a_warpgroup_mma_reading_a_slice_before_its_wait(self, k):
        a, b = _f16((64, 64), seed=12), _f16((16, 64), seed=13)
        out = np.zeros((128, 32), np.float32)
        errors = launch(k["mma_before_wait"], 1, THREADS, a, b, out)
        (msg,) = errors.races
        mma = lines_in(k, "mma_before_wait", "warpgroup_mma(acc, ta, (0, 0), tb, (0, 0), 64)")
        issue = lines_in(k, "mma_before_wait", "tma_load(ta, (), a, (0, 0))")
        assert msg.startswith(
            f"data race on shared array ta[0, 0] of block (0, 0, 0): thread (0, 0, 0) reads (by "
            f"a warpgroup_mma) it at {mma} while the tma_load issued by thread (0, 0, 0) at "
            f"{issue} may still be writing it")


class TestBarriers:
    def test_a_wait_for_a_fill_never_issued_would_hang(self, k):
        a = _f16((16, 64), seed=14)
        errors = launch(k["never_filled"], 1, THREADS, a, np.zeros((1, 128), np.float16),
                        np.int64(0))
        assert errors.races == [
            f"tma_wait at {lines_in(k, 'never_filled', 'tma_wait(tile, (1,))')}: thread "
            "(0, 0, 0) of block (0, 0, 0) waits for fill 1 of slice tile[1], but no thread has "
            "completed that fill: no tma_load was issued into the slice since its last fill, or "
            "the thread that issued it has not reached its own tma_wait of it yet (its arrival "
            "completes the fill); on the GPU this thread waits forever.  Issue every fill "
            "before the waits for it, and make the issuing thread wait for it no later than the "
            "others"]

    def test_the_same_kernel_filled(self, k):
        a = _f16((16, 64), seed=15)
        out = np.zeros((1, 128), np.float16)
        errors = launch(k["never_filled"], 1, THREADS, a, out, np.int64(1))
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out[0], a[:2].reshape(-1))

    def test_a_thread_that_skips_a_wait(self, k):
        a = _f16((48, 64), seed=16)
        out = np.zeros((1, 128), np.float16)
        errors = launch(k["skipped_wait"], 1, THREADS, a, out, np.int64(5))
        assert errors.races == [
            f"tma_wait at {lines_in(k, 'skipped_wait', 'tma_wait(tile, ())')}: thread (5, 0, 0) "
            "of block (0, 0, 0) waits for fill 2 of 'tile', but the slice has been filled 3 "
            "times: this thread skipped 1 wait of it; on the GPU a wait checks only the parity "
            "of the fill, so it passes on a wrong fill, or hangs, and the thread may read the "
            "slice before its copies land or after it was refilled.  Wait for every fill of a "
            "slice once, in order, in every thread that reads it"]

    def test_no_thread_skips(self, k):
        a = _f16((48, 64), seed=17)
        out = np.zeros((1, 128), np.float16)
        errors = launch(k["skipped_wait"], 1, THREADS, a, out, np.int64(-1))
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out[0], a[32:34].reshape(-1))

    def test_two_threads_issuing_one_fill(self, k):
        a = _f16((16, 64), seed=18)
        errors = launch(k["two_issuers"], 1, THREADS, a, np.zeros((1, 128), np.float16))
        issue = lines_in(k, "two_issuers", "tma_load(tile, (), a, (0, 0))")
        wait = lines_in(k, "two_issuers", "tma_wait(tile, ())")
        assert errors.races == [
            f"data race on shared array tile[0, 0] of block (0, 0, 0): thread (0, 0, 0) writes "
            f"it at {issue} and thread (1, 0, 0) wrote it at {issue}; nothing orders the two "
            "writes, so the result depends on timing on the GPU; give each element one writer "
            "or use an atomic",
            f"tma_wait at {wait}: thread (1, 0, 0) and thread (0, 0, 0) of block (0, 0, 0) "
            "both issued tma_load copies into 'tile' for one fill, so both arrive on its "
            "barrier, which expects one arrival a fill: on the GPU the second arrival completes "
            "the next fill before its copies land, and the threads waiting for it read the "
            "slice too early; issue each fill of a slice from one thread (under `if "
            "thread_idx.x == 0:`)"]


def test_a_hang_raises_at_synchronisation(tmp_path, monkeypatch, sim):
    """Through the runtime: the report is a DeviceRaceError naming the wait's line."""
    (tmp_path / "tma_hang_kernels.py").write_text(textwrap.dedent("""\
        from gpu_native import (CUDASlice2D, CUDASliceMut2D, Kernel1D, f16, gpu_kernel,
                                grid_dim, shared_array, thread_idx, tma_load, tma_wait)

        @gpu_kernel(Kernel1D)
        def wait_alone(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16], fill: int):
            assert grid_dim.x == 1
            tile = shared_array(f16, (16, 64), swizzle=128)
            if thread_idx.x == 0 and fill != 0:
                tma_load(tile, (), a, (0, 0))
            tma_wait(tile, ())
            out[0, thread_idx.x] = tile[0, thread_idx.x]
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("tma_hang_kernels")
    a = gn.to_device(_f16((16, 64), seed=19))
    out = gn.to_device(np.zeros((1, 64), np.float16))
    mod.wait_alone.launch(gn.GridDim1D(1), gn.BlockDim1D(64), 4096)(a, out, 1)
    np.testing.assert_array_equal(out.to_host()[0], a.to_host()[0])
    mod.wait_alone.launch(gn.GridDim1D(1), gn.BlockDim1D(64), 4096)(a, out, 0)
    with pytest.raises(gn.DeviceRaceError, match=r"tma_wait at tma_hang_kernels\.py:10: thread "
                       r"\(0, 0, 0\) of block \(0, 0, 0\) waits for fill 1 of 'tile'"):
        gn.synchronize()
