"""The simulator reports device errors like the GPU, prints like printf, and reveals races."""

from __future__ import annotations

import bdb
import traceback

import numpy as np
import pytest

from gpu_native.errors import KernelIndexError
from gpu_native.simulator import compile_kernel
from tests.simulator.support import build, launch, poisoned

KERNELS = """
@gpu_kernel(Kernel1D)
def gather(x: CUDASlice[f32], idx: CUDASlice[i32], out: CUDASliceMut[f32],
           reached: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    v = x[idx[i]]
    out[i] = v
    reached[i] = 1

@gpu_kernel(Kernel2D)
def gather2d(x: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    c, r = FlatLayout2D.uid()
    out[r, c] = x[r, c + 3]

@gpu_kernel(Kernel1D)
def positive_sqrt(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    assert x[i] > 0.0, "x must be positive"
    out[i] = math.sqrt(x[i])

@gpu_kernel(Kernel1D)
def divide(a: CUDASlice[i32], b: CUDASlice[i32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    out[i] = a[i] // b[i]

@gpu_kernel(Kernel1D)
def copy_prefix(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i]

@gpu_kernel(Kernel1D)
def show(x: CUDASlice[f32], flags: CUDASlice[bool_]):
    i = FlatLayout1D.uid()
    if i < 3:
        print("thread", i, "x =", x[i], flags[i], u32(i) + u32(4000000000))

@gpu_kernel(Kernel1D, bounds_check=False)
def unchecked(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    acc: f32 = 0.0
    for k in range(3):
        acc += x[i + k]
    out[i] = acc

@gpu_kernel(Kernel1D)
def racy_unsafe(out: CUDASliceMut[i32], modulus: i32):
    i = FlatLayout1D.uid()
    with unsafe():
        out[i32(i) % modulus] = i32(i)

@gpu_kernel(Kernel1D)
def neighbour_unsafe(data: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i + 1 < len(data):
        with unsafe():
            data[i] = data[i] * 2.0
            data[i] = data[i] + data[i + 1]

@gpu_kernel(Kernel1D)
def missing_barrier(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    s[t] = x[i]
    with unsafe():  # the checker refuses the read (no barrier after the stores)
        out[i] = s[63 - t]

@gpu_kernel(Kernel1D)
def with_barrier(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    s[t] = x[i]
    sync_threads()
    out[i] = s[63 - t]

@gpu_kernel(Kernel1D)
def missing_second_barrier(x: CUDASlice[f32], out: CUDASliceMut[f32], second: bool_):
    s = shared_array(f32, 32)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    acc: f32 = 0.0
    for k in range(4):
        s[t] = x[32 * k + t]
        sync_threads()
        with unsafe():  # the checker refuses the read: the next round's store may come first
            acc += s[31 - t]
        if second:
            sync_threads()
    out[i] = acc

@gpu_kernel(Kernel1D)
def divergent_barrier(out: CUDASliceMut[i32]):
    t = thread_idx.x
    if t < 16:
        sync_threads()
    out[FlatLayout1D.uid()] = 1

@gpu_kernel(Kernel1D)
def warp_exchange(x: CUDASlice[f32], out: CUDASliceMut[f32], limit: i32, fence: bool_):
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    if t < limit:
        s[t] = x[i]
        if fence:
            sync_warp(0x0000FFFF)
        out[i] = s[t ^ 1]

@gpu_kernel(Kernel1D)
def inplace_scan(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    # The single-buffer Hillis-Steele scan: each step reads an element its owner writes.
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    s[t] = x[i]
    sync_threads()
    offset = 1
    while offset < 64:
        if t >= offset:
            with unsafe():  # the checker refuses the read, which thread t - offset writes
                s[t] = s[t] + s[t - offset]
        sync_threads()
        offset *= 2
    out[i] = s[t]

@gpu_kernel(Kernel1D)
def exchange_in_expression(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    s[t] = x[i]
    with unsafe():
        out[i] = s[t + 1] if t < 63 else f32(0.0)

@gpu_kernel(Kernel1D)
def exchange_in_branch(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    if t < 48:
        s[t] = x[i]
        with unsafe():
            out[i] = s[47 - t]

@gpu_kernel(Kernel1D)
def partial_warp_shuffle(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    v = x[i]
    if lane_id() < 16:
        v = shfl_down(v, 1)
    out[i] = v

@gpu_kernel(Kernel1D)
def masked_shuffle(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    v = x[i]
    if lane_id() < 16:
        v = shfl_down(v, 1, 16, 0xFFFF)
    out[i] = v

@gpu_kernel(Kernel1D)
def atomic_then_read(out: CUDASliceMut[i32], barrier: bool_):
    s = shared_array(i32, 1)
    t = BlockLayout1D.uid()
    if t == 0:
        s[0] = 0
    sync_threads()
    s.atomic_ref(0).fetch_add(1)
    if barrier:
        sync_threads()
    with unsafe():  # the checker refuses the read, which races where there is no barrier
        out[FlatLayout1D.uid()] = s[0]
"""


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return build(tmp_path_factory.mktemp("simerr"), KERNELS)


class TestDeviceErrors:
    @pytest.mark.slow
    def test_bounds_failure_reports_first_thread_and_stops_it(self, k):
        x = np.arange(10, dtype=np.float32)
        idx = np.array([0, 1, 12, 3, -1, 5, 40, 7], np.int32)
        out, reached = poisoned(8, np.float32), np.zeros(8, np.int32)
        errors = launch(k["gather"], 2, 4, x, idx, out, reached)
        assert len(errors.fails) == 1
        site, index, length, block, thread = errors.fails[0]
        s = k.site("gather", site)
        assert (s.kind, s.array, s.span.line) == ("index", "x", k.path.read_text().splitlines()
                                                  .index("    v = x[idx[i]]") + 1)
        assert (index, length, block, thread) == (12, 10, (0, 0, 0), (2, 0, 0))
        # Every failing thread stopped (2, 4, 6); the others went on.
        np.testing.assert_array_equal(reached, [1, 1, 0, 1, 0, 1, 0, 1])
        np.testing.assert_array_equal(out[[0, 1, 3, 5, 7]], [0, 1, 3, 5, 7])
        assert np.isnan(out[[2, 4, 6]]).all()

    def test_bounds_failure_in_2d_names_axis_block_and_thread(self, k):
        x = np.zeros((4, 8), np.float32)
        out = poisoned((4, 8), np.float32)
        errors = launch(k["gather2d"], (2, 2, 1), (4, 2, 1), x, out)
        site, index, length, block, thread = errors.fails[0]
        assert k.site("gather2d", site).axis == 1
        assert (index, length, block, thread) == (8, 8, (1, 0, 0), (1, 0, 0))

    def test_assert_failure(self, k):
        x = np.array([4.0, 1.0, -2.0, 9.0, -5.0], np.float32)
        out = poisoned(5, np.float32)
        errors = launch(k["positive_sqrt"], 1, 5, x, out)
        site, index, length, _block, thread = errors.fails[0]
        s = k.site("positive_sqrt", site)
        assert (s.kind, s.message) == ("assert", "x must be positive")
        assert (index, length, thread) == (0, 0, (2, 0, 0))
        np.testing.assert_array_equal(out[[0, 1, 3]], [2.0, 1.0, 3.0])
        assert np.isnan(out[[2, 4]]).all()

    def test_integer_division_by_zero(self, k):
        a = np.array([10, -7, 3, 8], np.int32)
        b = np.array([3, 0, 1, 0], np.int32)
        out = poisoned(4, np.int32)
        errors = launch(k["divide"], 1, 4, a, b, out)
        site, index, length, _block, thread = errors.fails[0]
        assert k.site("divide", site).kind == "zerodiv"
        assert (index, length, thread) == (-7, 0, (1, 0, 0))
        np.testing.assert_array_equal(out[[0, 2]], [3, 3])

    def test_tail_rule_exits_only_past_every_array(self, k):
        a = np.arange(100, dtype=np.float32)
        out = poisoned(200, np.float32)
        errors = launch(k["copy_prefix"], 2, 128, a, out)  # 256 threads
        # Threads 100..199 are inside `out` but past `a`: a bounds error (first: thread 100).
        # Threads 200..255 lie past both arrays and leave silently.
        site, index, length, block, thread = errors.fails[0]
        assert (k.site("copy_prefix", site).array, index, length) == ("a", 100, 100)
        assert (block, thread) == ((0, 0, 0), (100, 0, 0))
        np.testing.assert_array_equal(out[:100], a)

    def test_unchecked_out_of_range_access_raises_with_kernel_line(self, k):
        x = np.zeros(10, np.float32)
        out = poisoned(10, np.float32)
        with pytest.raises(KernelIndexError, match="bounds checks are off") as info:
            launch(k["unchecked"], 1, 10, x, out)
        frames = traceback.extract_tb(info.value.__traceback__)
        line = k.path.read_text().splitlines().index("        acc += x[i + k]") + 1
        assert any(f.filename == str(k.path) and f.lineno == line and f.name == "unchecked"
                   for f in frames)


def test_print_formats_like_printf(k, capsys):
    x = np.array([1.5, -2.0, 1e-7, 4.0], np.float32)
    flags = np.array([True, False, True, True])
    launch(k["show"], 1, 4, x, flags)
    assert capsys.readouterr().out.splitlines() == [
        "thread 0 x = 1.5 True 4000000000",
        "thread 1 x = -2 False 4000000001",
        "thread 2 x = 1e-07 True 4000000002",
    ]


def at(k, kernel: str, *lines: str) -> list[str]:
    """``simkernels.py:N`` for each of ``lines``, the first such line after ``def kernel(``."""
    source = k.path.read_text().splitlines()
    start = next(n for n, text in enumerate(source) if text.startswith(f"def {kernel}("))
    out = []
    for line in lines:
        number = next(n for n in range(start, len(source)) if source[n].strip() == line) + 1
        out.append(f"{k.path.name}:{number}")
    return out


class TestRaces:
    def test_unsafe_store_two_threads_one_element(self, k):
        out = poisoned(8, np.int32)
        errors = launch(k["racy_unsafe"], 1, 16, out, np.int32(8))
        assert len(errors.races) == 1
        msg = errors.races[0]
        assert "data race on out[0]" in msg
        assert "thread (8, 0, 0) of block (0, 0, 0)" in msg
        assert "thread (0, 0, 0) of block (0, 0, 0)" in msg

    def test_unsafe_store_across_blocks(self, k):
        out = poisoned(4, np.int32)
        errors = launch(k["racy_unsafe"], 2, 4, out, np.int32(4))
        assert len(errors.races) == 1
        assert "of block (1, 0, 0)" in errors.races[0]
        assert "different blocks" in errors.races[0]

    def test_unique_unsafe_store_is_not_a_race(self, k):
        out = poisoned(32, np.int32)
        errors = launch(k["racy_unsafe"], 2, 16, out, np.int32(32))
        assert errors.races == []
        np.testing.assert_array_equal(out, np.arange(32))

    def test_unsafe_read_of_neighbour_written_by_another_thread(self, k):
        data = np.ones(16, np.float32)
        errors = launch(k["neighbour_unsafe"], 1, 16, data)
        # Thread 0 reads data[1] after thread 1 wrote it (read-after-write), and thread 1
        # writes data[1] after thread 0 read it (write-after-read): two reports.
        assert errors.races[0].startswith("data race on data[1]: thread (0, 0, 0) of block "
                                          "(0, 0, 0) reads it")
        assert "writes it" in errors.races[1]

    def test_missing_barrier_read_after_write_in_shared_memory(self, k):
        x = np.arange(128, dtype=np.float32)
        out = poisoned(128, np.float32)
        errors = launch(k["missing_barrier"], 2, 64, x, out)
        assert len(errors.races) == 1
        msg = errors.races[0]
        assert msg.startswith("data race on shared array s[63] of block (0, 0, 0)")
        assert "thread (0, 0, 0) reads it" in msg and "thread (63, 0, 0) wrote it" in msg
        assert "sync_threads()" in msg

    def test_missing_barrier_between_warps_asks_for_sync_threads(self, k):
        x = np.arange(128, dtype=np.float32)
        errors = launch(k["missing_barrier"], 2, 64, x, poisoned(128, np.float32))
        read, write = at(k, "missing_barrier", "out[i] = s[63 - t]", "s[t] = x[i]")
        assert errors.races[0].endswith(
            f"thread (0, 0, 0) reads it at {read} after thread (63, 0, 0) wrote it at {write}; "
            "no sync_threads() lies between the two accesses, so on the GPU the result depends "
            "on timing; add sync_threads() between them")

    def test_missing_barrier_between_warps_in_divergent_code(self, k):
        x = np.arange(64, dtype=np.float32)
        errors = launch(k["exchange_in_branch"], 1, 64, x, poisoned(64, np.float32))
        read, write = at(k, "exchange_in_branch", "out[i] = s[47 - t]", "s[t] = x[i]")
        assert errors.races == [
            "data race on shared array s[47] of block (0, 0, 0): thread (0, 0, 0) reads it at "
            f"{read} after thread (47, 0, 0) wrote it at {write}; no "
            "sync_threads() lies between the two accesses, so on the GPU the result depends on "
            "timing; add sync_threads() between them where every thread of the block reaches "
            "it: this access is in divergent code, so end the branch before the barrier and "
            "open another after it"]

    def test_a_read_in_a_conditional_expression_asks_for_sync_threads(self, k):
        # Only the expression's branch diverges: a sync_threads() before the statement is
        # reached by every thread (the advice was sync_warp, "sync_threads() cannot be used").
        x = np.arange(64, dtype=np.float32)
        errors = launch(k["exchange_in_expression"], 1, 64, x, poisoned(64, np.float32))
        read, write = at(k, "exchange_in_expression", "out[i] = s[t + 1] if t < 63 else "
                         "f32(0.0)", "s[t] = x[i]")
        assert errors.races == [
            "data race on shared array s[1] of block (0, 0, 0): thread (0, 0, 0) reads it at "
            f"{read} after thread (1, 0, 0) wrote it at {write}; no sync_threads() lies between "
            "the two accesses, so on the GPU the result depends on timing; add sync_threads() "
            "between them"]

    @pytest.mark.untrusted
    def test_missing_barrier_within_a_warp_in_divergent_code_asks_for_sync_warp(self, k):
        # Lanes 0..15 of warp 0 exchange through shared memory inside `if t < 16:`, where
        # sync_threads() is not allowed: the barrier they need is sync_warp with their mask.
        x = np.arange(64, dtype=np.float32)
        errors = launch(k["warp_exchange"], 1, 64, x, poisoned(64, np.float32), np.int32(16),
                        np.bool_(False))
        read, write = at(k, "warp_exchange", "out[i] = s[t ^ 1]", "s[t] = x[i]")
        assert errors.races == [
            "data race on shared array s[1] of block (0, 0, 0): thread (0, 0, 0) reads it at "
            f"{read} after thread (1, 0, 0) wrote it at {write}; no "
            "sync_warp() lies between the two accesses, and the threads of a warp do not run "
            "in lockstep on the GPU, so the result depends on timing; add sync_warp(0x0000ffff) "
            "between them, whose mask names the lanes of this warp that run it (sync_threads() "
            "cannot be used in divergent code)"]
        # The whole of warp 0 in the branch: the default mask is the right one.
        errors = launch(k["warp_exchange"], 1, 64, x, poisoned(64, np.float32), np.int32(32),
                        np.bool_(False))
        assert errors.races[0].endswith(
            "add sync_warp() between them (sync_threads() cannot be used in divergent code)")

    def test_a_block_wide_step_in_divergent_code_is_told_sync_warp_is_not_enough(self, k):
        # The first race is of two lanes of warp 0, but the same statement meets other warps'
        # threads in later steps: the advice names the block-wide fix too.
        x = np.arange(64, dtype=np.float32)
        errors = launch(k["inplace_scan"], 1, 64, x, poisoned(64, np.float32))
        line = at(k, "inplace_scan", "s[t] = s[t] + s[t - offset]",
                  "s[t] = s[t] + s[t - offset]")[0]
        assert errors.races[0].startswith("data race on shared array s[1] of block (0, 0, 0)")
        assert f"at {line}" in errors.races[0]
        assert errors.races[0].endswith(
            "(sync_threads() cannot be used in divergent code); if this statement is a step "
            "over the whole block (an in-place scan, `s[tid] += s[tid - offset]`), a "
            "sync_warp() does not order other warps' threads: read into a local, call "
            "sync_threads() where every thread of the block reaches it, then write (or write "
            "to a second buffer)"), errors.races[0]

    @pytest.mark.untrusted
    def test_the_suggested_sync_warp_makes_the_exchange_race_free(self, k):
        x = np.arange(64, dtype=np.float32)
        out = poisoned(64, np.float32)
        errors = launch(k["warp_exchange"], 1, 64, x, out, np.int32(16), np.bool_(True))
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out[:16], x[:16].reshape(8, 2)[:, ::-1].reshape(-1))

    def test_barrier_makes_the_same_kernel_race_free(self, k):
        x = np.arange(128, dtype=np.float32)
        out = poisoned(128, np.float32)
        errors = launch(k["with_barrier"], 2, 64, x, out)
        assert errors.races == [] and errors.fails == []
        np.testing.assert_array_equal(out, np.concatenate([x[63::-1], x[:63:-1]]))

    def test_missing_second_barrier_is_write_after_read(self, k):
        x = np.arange(128, dtype=np.float32)
        out = poisoned(32, np.float32)
        errors = launch(k["missing_second_barrier"], 1, 32, x, out, np.bool_(False))
        assert len(errors.races) == 1
        assert "writes it" in errors.races[0] and "read it" in errors.races[0]
        out2 = poisoned(32, np.float32)
        errors = launch(k["missing_second_barrier"], 1, 32, x, out2, np.bool_(True))
        assert errors.races == []
        np.testing.assert_array_equal(out, out2)  # lockstep hides the race in the result

    def test_divergent_barrier(self, k):
        out = poisoned(32, np.int32)
        errors = launch(k["divergent_barrier"], 1, 32, out)
        assert len(errors.races) == 1
        assert "reached by thread (0, 0, 0) but not by thread (16, 0, 0)" in errors.races[0]

    def test_shuffle_with_full_mask_in_divergent_code(self, k):
        x = np.arange(32, dtype=np.int32)
        out = poisoned(32, np.int32)
        errors = launch(k["partial_warp_shuffle"], 1, 32, x, out)
        # Lanes 16..31 are named by FULL_MASK but do not take part, and lane 15 reads lane 16.
        assert "names lane 16 of its warp in mask 0xffffffff" in errors.races[0]
        assert "thread (15, 0, 0) of block (0, 0, 0) reads lane 16" in errors.races[1]

    def test_shuffle_with_matching_mask_and_width(self, k):
        x = np.arange(32, dtype=np.int32)
        out = poisoned(32, np.int32)
        errors = launch(k["masked_shuffle"], 1, 32, x, out)
        assert errors.races == []
        np.testing.assert_array_equal(out, [*range(1, 16), 15, *range(16, 32)])

    def test_plain_read_of_atomically_updated_shared_element(self, k):
        out = poisoned(64, np.int32)
        errors = launch(k["atomic_then_read"], 1, 64, out, np.bool_(False))
        assert len(errors.races) == 1 and "updated it atomically" in errors.races[0]
        errors = launch(k["atomic_then_read"], 1, 64, out, np.bool_(True))
        assert errors.races == []
        np.testing.assert_array_equal(out, 64)

    def test_race_detection_can_be_turned_off(self, k, monkeypatch):
        monkeypatch.setenv("GPU_NATIVE_SIM_RACES", "0")
        out = poisoned(128, np.float32)
        errors = launch(k["missing_barrier"], 2, 64, np.arange(128, dtype=np.float32), out)
        assert errors.races == []


class TestDebugging:
    def test_generated_code_carries_the_kernel_file_and_lines(self, k):
        program = compile_kernel(k["with_barrier"])
        code = program._fn.__code__
        assert code.co_filename == str(k.path)
        lines = k.path.read_text().splitlines()
        first = lines.index("def with_barrier(x: CUDASlice[f32], out: CUDASliceMut[f32]):") + 1
        used = {ln for _, _, ln in code.co_lines() if ln is not None}
        assert used <= set(range(first - 1, first + 8)) and first + 5 in used

    def test_a_debugger_stops_on_a_kernel_line_and_sees_per_thread_vectors(self, k):
        lines = k.path.read_text().splitlines()
        line = lines.index("    out[i] = s[63 - t]", lines.index("def with_barrier(x: "
                                                                "CUDASlice[f32], out: "
                                                                "CUDASliceMut[f32]):")) + 1
        seen = []

        class Recorder(bdb.Bdb):
            def user_line(self, frame):
                if frame.f_code.co_filename == str(k.path) and frame.f_lineno == line:
                    chunk = frame.f_locals["_gn"]
                    seen.append((frame.f_locals["t"].copy(), chunk.show(frame.f_locals["i"])))
                self.set_continue()

        rec = Recorder()
        rec.set_break(str(k.path), line)
        x = np.arange(64, dtype=np.float32)
        out = poisoned(64, np.float32)
        errors = launch_in(rec, k["with_barrier"], x, out)
        assert errors.races == []
        t, by_thread = seen[0]
        np.testing.assert_array_equal(t, np.arange(64))
        assert by_thread[((0, 0, 0), (5, 0, 0))] == 5


def launch_in(debugger: bdb.Bdb, kernel, *args):
    from tests.simulator.support import Errors

    errors = Errors()
    program = compile_kernel(kernel)
    debugger.runcall(program.run, (1, 1, 1), (len(args[0]), 1, 1), 0, list(args), errors)
    return errors



def test_write_only_arrays_are_watched_when_asked(tmp_path, monkeypatch):
    # An array the launch only writes carries no shadow by default (its stores are proven
    # unique before launch); GPU_NATIVE_SIM_WRITE_RACES=1 gives it one, for checking those
    # proofs, and a race-free kernel then reports nothing.
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(y: CUDASliceMut[i32], z: CUDASliceMut[i32]):
            tid = FlatLayout1D.uid()
            y[tid] = i32(tid)
            with unsafe():
                z[tid // 128] = i32(tid)
        """, name="write_only")["k"]
    program = compile_kernel(kernel)
    assert program.shadowed == {1} and program.written == {0, 1}
    assert launch(kernel, 4, 64, np.zeros(256, np.int32), np.zeros(2, np.int32)).races
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")
    y = np.zeros(256, np.int32)
    errors = launch(kernel, 4, 64, y, np.zeros(2, np.int32))
    assert all("on z[" in r for r in errors.races) and errors.races
    np.testing.assert_array_equal(y, np.arange(256))
