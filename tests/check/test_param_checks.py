"""Stores whose race-freedom holds only for some values of a scalar parameter.

``out[block_idx.x * stride + thread_idx.x]`` is race-free when ``stride >= block_dim.x`` (and
the index does not wrap); a block-stride loop ``range(tid, n, step)`` when ``step >=
block_dim.x``.  The checker accepts them under that assumption and records a
:class:`gpu_native.spec.ParamCheck`; the generated launcher tests it at every launch and a call
that fails it raises ``ValueError`` naming the parameter, on either backend.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import DeviceRaceError, TranspileError
from gpu_native.expand import Expansion
from gpu_native.launchexpr import Compare, LaunchIndex, ParamValue
from gpu_native.runtime.backend import use
from gpu_native.spec import KernelSpec, ParamCheck

HEAD = """\
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASliceMut, f32, i32, i64, unsafe,
                        thread_idx, block_idx, block_dim, grid_dim)
"""

STRIDED = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], stride: i32):
    out[block_idx.x * stride + thread_idx.x] = f32(block_idx.x + 1)

@gpu_kernel(Kernel1D)
def loop(out: CUDASliceMut[f32], n: i32, step: i32):
    assert grid_dim.x == 1
    for i in range(thread_idx.x, n, step):
        out[i] = f32(thread_idx.x + 1)

@gpu_kernel(Kernel2D)
def pitched(out: CUDASliceMut[f32], pitch: i64):
    y = block_idx.y * block_dim.y + thread_idx.y
    x = block_idx.x * block_dim.x + thread_idx.x
    out[y * pitch + x] = f32(1)
"""

UNSAFE = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], stride: i32):
    with unsafe():
        out[block_idx.x * stride + thread_idx.x] = f32(block_idx.x + 1)

@gpu_kernel(Kernel1D)
def loop(out: CUDASliceMut[f32], n: i32, step: i32):
    assert grid_dim.x == 1
    for i in range(thread_idx.x, n, step):
        with unsafe():
            out[i] = f32(thread_idx.x + 1)
"""


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed, so a race between two plain stores is reported."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def launch(kernel, grid, block):
    return kernel.launch(grid, block, 0, gn.DEFAULT_STREAM)


def zeros(n):
    return gn.to_device(np.zeros(n, np.float32))


# ---- accepted, checked at launch --------------------------------------------------------------


def test_a_stride_at_least_the_block_runs_race_free(backend, kernel_module):
    m = kernel_module(STRIDED)
    out = zeros(4 * 40)
    launch(m.k, gn.GridDim1D(4), gn.BlockDim1D(32))(out, 40)
    want = np.zeros(160, np.float32)
    for b in range(4):
        want[b * 40:b * 40 + 32] = b + 1
    np.testing.assert_array_equal(out.to_host(), want)


def test_a_stride_below_the_block_is_refused_before_the_launch(backend, kernel_module):
    m = kernel_module(STRIDED)
    out = zeros(4 * 32)
    with pytest.raises(ValueError) as info:
        launch(m.k, gn.GridDim1D(4), gn.BlockDim1D(32))(out, 16)
    assert str(info.value).startswith(
        "k(): parameter 'stride' is 16 but the writes to out (line 6) were proven race-free for "
        "stride >= block_dim.x (32) only (the proof's condition, which may be stricter than the "
        "kernel needs)")
    np.testing.assert_array_equal(out.to_host(), 0)  # nothing ran
    with pytest.raises(ValueError, match="'stride' is -32"):
        launch(m.k, gn.GridDim1D(4), gn.BlockDim1D(32))(out, -32)


SPREAD = HEAD + """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], s: i64):
    i = block_idx.x * block_dim.x + thread_idx.x
    out[i * s] = f32(i)
"""


def test_a_bound_on_the_parameter_alone_is_said_once(backend, kernel_module):
    """`s >= 1` is not followed by the parameter's value again (it read `s >= 1 (0)`), and
    the advice names the parameter in quotes (it read "pass a s")."""
    m = kernel_module(SPREAD)
    out = zeros(64)
    with pytest.raises(ValueError) as info:
        launch(m.k, gn.GridDim1D(1), gn.BlockDim1D(32))(out, 0)
    text = str(info.value)
    assert "were proven race-free for s >= 1 only (" in text, text
    assert "pass a value of 's' that satisfies it" in text, text
    np.testing.assert_array_equal(out.to_host(), 0)


BATCHED = HEAD + """
@gpu_kernel(Kernel2D)
def saxpy(n: i32, a: f32, x: CUDASliceMut[f32], y: CUDASliceMut[f32], stride: i32):
    assert block_dim.y == 1
    i = block_idx.x * block_dim.x + thread_idx.x
    if i < n:
        y[block_idx.y * stride + i] = a * x[block_idx.y * stride + i] + y[block_idx.y * stride + i]
"""


def test_a_batch_stride_needs_only_the_bound_of_the_condition(backend, kernel_module, rng):
    """Under `if i < n:`, rows `stride` apart are apart for `stride >= n`: a packed batch
    (`stride == n`, n no multiple of the block) runs; a stride below n is refused at launch."""
    m = kernel_module(BATCHED)
    batch, n = 3, 100
    x = rng.standard_normal(batch * n).astype(np.float32)
    y = rng.standard_normal(batch * n).astype(np.float32)
    out = gn.to_device(y)
    launch(m.saxpy, gn.GridDim2D(2, batch), gn.BlockDim2D(64, 1))(
        n, 2.0, gn.to_device(x), out, n)
    np.testing.assert_allclose(out.to_host(), 2.0 * x.astype(np.float64) + y, rtol=1e-6)
    with pytest.raises(ValueError) as info:
        launch(m.saxpy, gn.GridDim2D(2, batch), gn.BlockDim2D(64, 1))(
            n, 2.0, gn.to_device(x), gn.to_device(y), n - 1)
    assert "parameter 'stride' is 99 but the writes to y (line 9) were proven race-free " \
        "for stride >= n (100) only" in str(info.value), str(info.value)


def test_a_stride_that_would_wrap_is_refused(backend, kernel_module):
    m = kernel_module(STRIDED)
    with pytest.raises(ValueError, match=r"'stride' is 1073741824 .* <= 2147483647"):
        launch(m.k, gn.GridDim1D(4), gn.BlockDim1D(32))(zeros(8), 2**30)


def test_the_check_follows_the_launch_shape(backend, kernel_module):
    m = kernel_module(STRIDED)
    out = zeros(2 * 16)
    launch(m.k, gn.GridDim1D(2), gn.BlockDim1D(16))(out, 16)  # valid for 16, not for 32
    np.testing.assert_array_equal(out.to_host(), np.repeat([1, 2], 16).astype(np.float32))
    with pytest.raises(ValueError, match=r"stride >= block_dim.x \(32\)"):
        launch(m.k, gn.GridDim1D(2), gn.BlockDim1D(32))(zeros(64), 16)


def test_a_block_stride_loop_with_a_parameter_step(backend, kernel_module):
    m = kernel_module(STRIDED)
    out = zeros(100)
    launch(m.loop, gn.GridDim1D(1), gn.BlockDim1D(32))(out, 100, 32)
    np.testing.assert_array_equal(out.to_host(), np.arange(100) % 32 + 1)
    with pytest.raises(ValueError, match=r"'step' is 8 .* step >= block_dim.x \(32\)"):
        launch(m.loop, gn.GridDim1D(1), gn.BlockDim1D(32))(out, 100, 8)


def test_a_row_pitch_at_least_the_launch_width(backend, kernel_module):
    m = kernel_module(STRIDED)
    out = zeros(8 * 20)
    launch(m.pitched, gn.GridDim2D(2, 2), gn.BlockDim2D(8, 4))(out, 20)
    want = np.zeros((8, 20), np.float32)
    want[:, :16] = 1
    np.testing.assert_array_equal(out.to_host(), want.reshape(-1))
    with pytest.raises(ValueError, match=r"'pitch' is 12 .* pitch >= block_dim.x \* grid_dim.x \(16\)"):
        launch(m.pitched, gn.GridDim2D(2, 2), gn.BlockDim2D(8, 4))(out, 12)


def test_a_valid_call_keeps_the_fast_path(kernel_module, launch_paths):
    m = kernel_module(STRIDED)
    launcher = launch(m.k, gn.GridDim1D(2), gn.BlockDim1D(32))
    out = zeros(64)
    launcher(out, 32)
    launcher(out, 32)
    assert len(launch_paths["fast"]) == 2 and launch_paths["slow"] == 0


# ---- what the check prevents: the same stores, unchecked, race -------------------------------


def test_without_the_proof_an_invalid_stride_races_on_the_simulator(kernel_module):
    m = kernel_module(UNSAFE)
    with use("sim"):
        with pytest.raises(DeviceRaceError):
            launch(m.k, gn.GridDim1D(4), gn.BlockDim1D(32))(zeros(4 * 32), 16)
            gn.DEFAULT_STREAM.synchronize()
        with pytest.raises(DeviceRaceError):
            launch(m.loop, gn.GridDim1D(1), gn.BlockDim1D(32))(zeros(100), 100, 8)
            gn.DEFAULT_STREAM.synchronize()


# ---- refused: no assumption on a parameter helps -----------------------------------------------


@pytest.mark.parametrize("body, reason", [
    # Every thread of a block writes the same element, whatever the stride.
    ("out[block_idx.x * stride] = f32(1)", "thread_idx.x"),
    # Every block writes the same elements, whatever the stride.
    ("out[thread_idx.x * stride] = f32(1)", "block_idx.x"),
    # Two parameters: the checker assumes one at a time.
    ("out[block_idx.x * stride + thread_idx.x * other] = f32(1)", "not provably unique"),
])
def test_refused_where_no_parameter_assumption_helps(kernel_module, body, reason):
    source = HEAD + textwrap.dedent(f"""
        @gpu_kernel(Kernel1D)
        def bad(out: CUDASliceMut[f32], stride: i32, other: i32):
            {body}
        """)
    with pytest.raises(TranspileError, match=reason):
        Expansion.of(source, "bad.py", "bad")


def test_a_parameter_assigned_in_the_kernel_is_not_assumed(kernel_module):
    source = HEAD + textwrap.dedent("""
        @gpu_kernel(Kernel1D)
        def bad(out: CUDASliceMut[f32], stride: i32):
            stride = stride - 1
            out[block_idx.x * stride + thread_idx.x] = f32(1)
        """)
    with pytest.raises(TranspileError, match="not provably unique"):
        Expansion.of(source, "bad.py", "bad")


SHIFTED = HEAD + """
@gpu_kernel(Kernel1D)
def shifted(out: CUDASliceMut[f32], log2n: i32):
    base = block_idx.x << log2n
    if thread_idx.x < (1 << log2n):
        out[base + thread_idx.x] = f32(block_idx.x + 1)
"""

SCALED = HEAD + """
@gpu_kernel(Kernel1D)
def scaled(out: CUDASliceMut[f32], n: i32):
    base = block_idx.x * n
    if thread_idx.x < n:
        out[base + thread_idx.x] = f32(block_idx.x + 1)
"""


def test_a_shift_by_a_parameter_is_refused_with_the_product_to_write(backend, kernel_module):
    """`block_idx.x << log2n` is no product the proofs follow: the refusal says so and names
    the rewrite, `block_idx.x * n` with the power of two passed, which runs race-free."""
    with pytest.raises(TranspileError) as info:
        Expansion.of(SHIFTED, "bad.py", "shifted")
    message = str(info.value)
    assert "a '<<' by a count that is not a constant" in message, message
    assert "`n = 1 << log2n`, computed on the host" in message, message
    m = kernel_module(SCALED)
    out = gn.to_device(np.full(3 * 16, -1.0, np.float32))
    launch(m.scaled, gn.GridDim1D(3), gn.BlockDim1D(32))(out, 16)
    np.testing.assert_array_equal(out.to_host(), np.repeat(np.arange(1, 4), 16))


# ---- what the rewrite records and expand shows -------------------------------------------------


def test_expand_proofs_names_the_rule_and_the_check():
    expansion = Expansion.of(STRIDED, "strided.py", "strided")
    proofs = expansion.proofs()
    assert "when stride >= block_dim.x (the launcher checks it)" in proofs
    assert "block_idx.x (stride stride)" in proofs
    assert "when step >= block_dim.x (the launcher checks it)" in proofs
    text = expansion.readable()
    assert "launch check: stride >= block_dim.x, at every launch" in text


def test_the_spec_literal_carries_the_check():
    expansion = Expansion.of(STRIDED, "strided.py", "strided")
    spec = next(k for k in expansion.module.kernels if k.name == "k")
    again = KernelSpec.from_literal(spec.to_literal())
    checks = [c for c in again.variants[0].launch_checks if isinstance(c, ParamCheck)]
    assert checks[0].tree == Compare(">=", ParamValue(1), LaunchIndex("block_dim", 0))
    assert checks[0].array == "out" and checks[0].param == 1


def test_every_batch_stride_the_launcher_lets_through_is_race_free(sim, kernel_module):
    """The launch check `stride >= n` against the race detector: each (n, stride, block) the
    launcher accepts runs without a race report, and each it refuses would race."""
    m = kernel_module(BATCHED)
    ran = refused = 0
    for n in (1, 5, 37, 64):
        for stride in range(max(n - 3, 0), n + 3):
            for block in (32, 64):
                grid = gn.GridDim2D(-(-n // block), 3)
                size = 2 * stride + n
                x, y = gn.to_device(np.ones(size, np.float32)), zeros(size)
                try:
                    launch(m.saxpy, grid, gn.BlockDim2D(block, 1))(n, 2.0, x, y, stride)
                    gn.synchronize()
                    ran += 1
                except ValueError:
                    assert stride < n
                    refused += 1
    assert ran and refused
