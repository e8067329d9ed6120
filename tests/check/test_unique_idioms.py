"""The unique-write proofs accept the standard race-free CUDA idioms and refuse their near misses.

Accepted idioms (tests/kernels_unique_idioms.py) run on the simulator with its race detector
watching every written array, and (marked ``gpu``) on the GPU, against NumPy.  Near misses are
refused with a message that says which threads meet.  A generated family of index expressions
checks soundness: whatever the checker accepts runs race-free on several launch shapes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelAssertionError, TranspileError
from gpu_native.expand import Expansion
from tests.simulator.support import build, race_free_draws
from tools.fuzz import indices, warps


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """The simulator shadows only arrays a launch both reads and writes; here every written
    array is watched, so a race between two plain stores is reported too."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


@pytest.fixture(scope="module")
def ki():
    from tests.helpers import kernels_unique_idioms

    return kernels_unique_idioms


def run(kernel, grid, block):
    return kernel.launch(grid, block, 0, gn.DEFAULT_STREAM)


def filled(shape, value=-1):
    out = gn.empty(shape, gn.i32)
    out.fill(value)
    return out


# ---- the idioms, run ---------------------------------------------------------------------------


@pytest.mark.slow
def test_two_stores_per_thread_at_disjoint_offsets(backend, ki):
    x = np.arange(256 * 3, dtype=np.int32)
    out = filled(len(x))
    run(ki.reverse_pairs, gn.GridDim1D(3), gn.BlockDim1D(128))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x.reshape(3, 256)[:, ::-1].reshape(-1))


def test_thread_coarsening_through_a_2d_tile(backend, ki):
    x = np.arange(16 * 128, dtype=np.int32).reshape(16, 128)
    out = filled(x.shape)
    run(ki.coarsened_double, gn.GridDim2D(2, 2), gn.BlockDim2D(16, 8))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x * 2 + 1)


def test_thread_coarsening_by_a_chunk_of_a_range(backend, ki):
    rng = np.random.default_rng()
    for n in (1, 37, 256):
        x = rng.integers(-1000, 1000, n, dtype=np.int32)
        out = filled(n)
        run(ki.chunked, gn.GridDim1D(2), gn.BlockDim1D(32))(gn.to_device(x), out)
        np.testing.assert_array_equal(out.to_host(), x * 3)
        out = filled(n)
        run(ki.chunked_clamped, gn.GridDim1D(2), gn.BlockDim1D(16))(gn.to_device(x), out)
        expected = np.full(n, -1, np.int32)
        expected[::2] = x[::2] + 1
        np.testing.assert_array_equal(out.to_host(), expected)


def test_an_interior_and_its_border_through_one_flat_index(backend, ki):
    rng = np.random.default_rng()
    src = rng.standard_normal((19, 37)).astype(np.float32)
    out = gn.to_device(np.full(src.size, np.nan, np.float32))
    run(ki.border_flat, gn.GridDim2D(3, 2), gn.BlockDim2D(16, 16))(gn.to_device(src), out)
    expected = np.full(src.shape, -1.0)
    expected[:, 1:-1] = src[:, :-2].astype(np.float64) + src[:, 2:]
    np.testing.assert_allclose(out.to_host().reshape(src.shape), expected, rtol=1e-6)
    w, h = 21, 5
    flat = filled(w * h)
    run(ki.border_param, gn.GridDim2D(2, 1), gn.BlockDim2D(16, 8))(flat, w, h)
    expected = np.ones((h, w), np.int32)
    expected[:, -1] = 2
    np.testing.assert_array_equal(flat.to_host().reshape(h, w), expected)


def test_antidiagonal_sweeps_through_a_local_column(backend, ki):
    nw, width = 16, 33
    out = filled(2 * nw * width)
    run(ki.antidiagonals, gn.GridDim1D(2), gn.BlockDim1D(nw))(out)
    tile = np.full((nw + 1, width), -1)  # what the sweeps write; the rest is not compared
    for m in range(nw):
        for tx in range(m + 1):
            tile[m - tx + 1, tx + 1] = m + 1
    for m in range(nw - 1):
        for tx in range(m + 1):
            tile[nw - tx, tx + nw - m] = 100 + m
    got = out.to_host().reshape(2, nw, width)
    written = tile[1:] != -1
    for block in got:
        np.testing.assert_array_equal(block[written], tile[1:][written])


def test_one_writer_per_warp(backend, ki):
    x = np.arange(128 * 2, dtype=np.int32)
    out = filled(8)
    run(ki.warp_sums, gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x.reshape(8, 32).sum(axis=1))


def test_one_writer_per_warp_with_bit_operations(backend, ki):
    out = filled(64)
    run(ki.warp_leaders, gn.GridDim1D(2), gn.BlockDim1D(96))(out)
    expected = np.full(64, -1, np.int32)
    for b in range(2):
        expected[b * 32:b * 32 + 3] = [0, 32, 64]
    np.testing.assert_array_equal(out.to_host(), expected)


def test_warp_per_row_with_several_warps_per_block(backend, ki):
    x = np.arange(8 * 96, dtype=np.int32).reshape(8, 96)
    y = filled(x.shape)
    run(ki.warp_per_row, gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x), y)
    np.testing.assert_array_equal(y.to_host(), x * 3)


def test_transposed_ownership(backend, ki):
    counts = filled(5 * 64)
    run(ki.transposed_counts, gn.GridDim1D(5), gn.BlockDim1D(64))(counts)
    t, b = np.meshgrid(np.arange(64), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(counts.to_host(), (b * 1000 + t).reshape(-1))


def test_single_block_stride_loop(backend, ki):
    x = np.arange(1000, dtype=np.int32)
    out = filled(len(x))
    run(ki.single_block_stride, gn.GridDim1D(1), gn.BlockDim1D(96))(gn.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x + 1)


def test_halo_cell_beside_the_centre_cells(backend, ki):
    x = np.arange(16 * 32, dtype=np.int32).reshape(16, 32)
    out = filled(x.shape)
    run(ki.halo_shift, gn.GridDim2D(2, 2), gn.BlockDim2D(16, 8))(gn.to_device(x), out)
    expected = np.roll(x.reshape(16, 2, 16), 1, axis=2)
    expected[:, :, 0] = -7
    np.testing.assert_array_equal(out.to_host(), expected.reshape(16, 32))


@pytest.mark.parametrize("colour", [0, 1])
def test_red_black_update_in_place(backend, ki, colour):
    """Neighbour reads of the other parity than every store writes (see check/parity.py)."""
    u0 = np.random.default_rng(colour).standard_normal((20, 37)).astype(np.float32)
    u = gn.to_device(u0)
    run(ki.red_black, gn.GridDim2D(3, 3), gn.BlockDim2D(16, 8))(u, colour)
    expected = u0.copy()
    y, x = np.mgrid[1:19, 1:36]
    cells = (x + y) % 2 == colour
    around = u0[:-2, 1:-1] + u0[2:, 1:-1] + u0[1:-1, :-2] + u0[1:-1, 2:]
    expected[1:-1, 1:-1][cells] = (np.float32(0.25) * around)[cells]
    np.testing.assert_allclose(u.to_host(), expected, rtol=1e-6)


def test_single_block_kernel_refuses_two_blocks(ki):
    """The proof assumed one block; the launcher holds the launch to it."""
    x = gn.to_device(np.arange(100, dtype=np.int32))
    with pytest.raises(KernelAssertionError):
        run(ki.single_block_stride, gn.GridDim1D(2), gn.BlockDim1D(32))(x, filled(100))
        gn.DEFAULT_STREAM.synchronize()


@pytest.mark.slow
def test_expand_proofs_name_the_rule():
    from tests.helpers import kernels_unique_idioms

    source = Path(kernels_unique_idioms.__file__).read_text()
    text = Expansion.of(source, "k.py", "k").proofs()
    assert "unique: affine in thread_idx.x (stride 1); apart from the store at line 39: the " \
        "stores' index ranges do not meet (128 to 255 here, 0 to 127 at line 39)" in text
    assert "block_idx.x (stride 1), thread_idx.x (stride grid_dim.x)" in text
    assert "one thread by thread_idx.x % 32" in text
    assert "thread_idx.x // 32 (stride 1)" in text


# ---- near misses, refused ----------------------------------------------------------------------

NEAR_MISSES = {
    "scatter": ("""
@gpu_kernel(Kernel1D)
def k(idx: CUDASlice[i32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[idx[i]] = 1.0
""", ["not provably unique", "not an affine function"]),
    "XOR with a bit of the same digit": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid ^ (tid & 1)] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["thread_idx.x = 0 and thread_idx.x = 1 both write s[0]"]),
    "half the threads": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    out[block_idx.x * 32 + thread_idx.x // 2] = 1.0
""", ["thread_idx.x = 0, block_idx.x = 0) and (thread_idx.x = 1, block_idx.x = 0) both "
      "write out[0]"]),
    "lane without one warp": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 32)
    lane = thread_idx.x % 32
    s[lane] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[0]
""", ["thread_idx.x = 0 and thread_idx.x = 32 both write s[0]",
      "differ only in thread_idx.x // 32", "if lane == 0"]),
    "modulus smaller than the block": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 16)
    s[thread_idx.x % 16] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[0]
""", ["thread_idx.x = 0 and thread_idx.x = 16 both write s[0]"]),
    "overlapping second store": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, 65)
    tid = thread_idx.x
    s[tid] = 1.0
    s[tid + 1] = 2.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["written through two different indices", "thread_idx.x = 0 and thread_idx.x = 1 both "
      "write s[1]", "disjoint offsets"]),
    "stride smaller than the block": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    s = shared_array(f32, 256)
    for j in range(2):
        s[thread_idx.x + j * 64] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[0]
""", ["thread_idx.x = 0 and thread_idx.x = 64 both write s[64]"]),
    "last block": ("""
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], out: CUDASliceMut[f32], is_last: bool_):
    if thread_idx.x == 0 and is_last:
        out[0] = x[0]
""", ["(thread_idx.x = 0, block_idx.x = 0) and (thread_idx.x = 0, block_idx.x = 1) both "
      "write out[0]", "last-block pattern"]),
    "chunks that overlap": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    t = FlatLayout1D.uid()
    for j in range(t * 4, (t + 1) * 4 + 1):
        if j < len(out):
            out[j] = 1.0
""", ["not provably unique"]),
    "a chunk whose ends wrap in i64": ("""
@gpu_kernel(Kernel1D)
def k(y: CUDASliceMut[f32]):
    t = FlatLayout1D.uid() * 4
    for m in range(t * 4611686018427387903, min(t * 4611686018427387903 + 4611686018427387903,
                                                len(y))):
        if m >= 0:
            y[m] = 1.0
""", ["not provably unique"]),
    "a chunk stepped past its stride": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    t = FlatLayout1D.uid()
    for j in range(t * 4, min(t * 4 + 8, len(out)), 2):
        out[j] = 1.0
""", ["not provably unique"]),
    "a bound that may wrap": ("""
@gpu_kernel(Kernel2D)
def k(out: CUDASliceMut[f32], w: i32, h: i32):
    x = block_idx.x * block_dim.x + thread_idx.x
    y = block_idx.y * block_dim.y + thread_idx.y
    if x < w - 1 and y < h:
        out[y * w + x] = 1.0
    elif x < w and y < h:
        out[y * w + x] = 0.0
""", ["not provably unique", "`w - 1` may wrap around in its type",
      "`x + 1 < w` for `x < w - 1`"]),
    "a lower bound on a coordinate inside a sum": ("""
@gpu_kernel(Kernel1D)
def k(img: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 18
    col = block_idx.x * 16 + thread_idx.x - 1
    t = thread_idx.x - 1
    if t >= 0 and t < 16 and col < len(out):
        out[col] = img[col]
""", ["not provably unique", "the proofs do not use a lower bound `thread_idx.x - 1 >= ...` "
      "on a thread's coordinate inside a sum", "`... + (thread_idx.x - 1)`"]),
    "unknown block size": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 256)
    s[thread_idx.x] = 1.0
    s[thread_idx.x + 128] = 2.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[0]
""", ["written through two different indices"]),
}


@pytest.mark.parametrize("case", list(NEAR_MISSES))
def test_near_miss_is_refused_with_the_reason(tmp_path, case):
    body, messages = NEAR_MISSES[case]
    with pytest.raises(TranspileError) as info:
        build(tmp_path, body)
    text = str(info.value)
    for message in messages:
        assert message in text, text


def test_typevar_used_as_a_value_gets_a_hint(tmp_path):
    with pytest.raises(TranspileError) as info:
        build(tmp_path, """
T = TypeVar("T", f32, f64)
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[T]):
    out[FlatLayout1D.uid()] = T
""")
    text = str(info.value)
    assert "'T' is a TypeVar" in text and "`acc = T(0)`" in text


# ---- soundness: generated index expressions ----------------------------------------------------

def _runs(shapes):
    """For :func:`race_free_draws`: a kernel ``k(out)`` on the simulator's race detector, on
    each launch shape ``shapes(k)`` gives."""
    return lambda k: ((f"grid {grid}, block {block}", lambda g=grid, b=block: indices.run_sim(
        k, g, b, np.zeros(indices.OUT_SIZE, np.int32))) for grid, block in shapes(k))


@pytest.mark.slow
def test_generated_indices_accepted_only_when_race_free(tmp_path):
    """Every generated kernel (tools/fuzz/indices.py) the checker accepts runs without a race on
    every launch shape its launch checks allow; the counts are printed (``pytest -s``).
    ``python3 -m tools.fuzz_races`` runs many more, and on a GPU too."""
    accepted, refused, launches = race_free_draws(
        tmp_path, indices.generated, 20261214, 400, "gen", _runs(indices.launch_shapes))
    print(f"\ngenerated kernels: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 40 and refused >= 40


@pytest.mark.slow
def test_whole_warps_steps_accepted_only_when_race_free(tmp_path):
    """The whole-warps draws of tools/fuzz/warps.py (``assert block_dim.x % d == 0``, a block
    stepping by ``block_dim.x // q``, a warp's slot ``tid // m``) the checker accepts run
    without a race on every launch shape their checks allow, blocks of 48 and 80 among them."""
    accepted, refused, launches = race_free_draws(
        tmp_path, warps.generated, 20261205, 140, "warps", _runs(warps.launch_shapes))
    print(f"\nwhole-warps kernels: {accepted} accepted, {refused} refused; "
          f"{launches} race-free launches of the accepted ones")
    assert accepted >= 15 and refused >= 15


@pytest.mark.slow
def test_proofs_are_the_same_whatever_the_hash_seed(tmp_path):
    """The launch checks an ownership proof adds enter the rewritten module: they must not
    depend on the order Python's hash seed gives sets."""
    import os
    import subprocess
    import sys

    script = (
        "from tests.simulator.support import HEADER\n"
        "from gpu_native.rewrite import transpile_module\n"
        "src = HEADER + '''\n"
        "@gpu_kernel(Kernel1D)\n"
        "def k(out: CUDASliceMut[i32]):\n"
        "    assert block_dim.x == 128\n"
        "    base = block_idx.x * 512\n"
        "    for j in range(4):\n"
        "        out[base + thread_idx.x + j * 128] = 1\n"
        "'''\n"
        "m = transpile_module(src, 'm.py', 'm')\n"
        "print(repr(m.checked[0].specializations[0].launch_checks))\n")
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, cwd=Path(__file__).resolve().parents[2], check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs
    assert "grid_dim" in outputs.pop()  # the wrap check of the affine index is there


def test_the_lower_bound_hint_s_form_is_accepted(tmp_path):
    """What the hint of the near miss "a lower bound on a coordinate inside a sum" says to
    write (PMPP's tiled convolution with a halo, IN = OUT + 2 threads a block)."""
    kernels = build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(img: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 18
    col = block_idx.x * 16 + (thread_idx.x - 1)
    t = thread_idx.x - 1
    if t >= 0 and t < 16 and col < len(out):
        out[col] = img[col]
""")
    assert kernels["k"]
