"""Padded shared-memory indices are proven race-free (rule R10, gpu_native/check/monotone.py).

GPU Gems 3's scan pads its shared index against bank conflicts: ``temp[ai + (ai >> 5)]`` and
``temp[bi + (bi >> 5)]`` with ``ai = tid`` and ``bi = tid + HALF``.  ``h(x) = x + (x >> 5)`` is
strictly increasing, so the two stores meet only where ``ai == bi``, which ``tid < HALF`` rules
out.  The kernels of tests/helpers/kernels_padded.py run on the simulator with its race
detector watching every written array, against NumPy; near misses stay refused with a hint that
names what the rule lacks, and ``expand --proofs`` names the rule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.expand import Expansion
from tests.simulator.support import build


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


@pytest.fixture(scope="module")
def kp():
    from tests.helpers import kernels_padded

    return kernels_padded


def _poisoned(n: int) -> gn.DeviceArray:
    out = gn.empty(n, gn.i32)
    out.fill(-1)
    return out


# ---- accepted, and run ---------------------------------------------------------------------------


def test_gpu_gems_padded_pair_by_shifts(backend, kp):
    blocks = 3
    x = np.arange(blocks * kp.SPAN, dtype=np.int32) * 7 - 100
    out = _poisoned(len(x))
    kp.padded_pair[blocks, kp.HALF](gn.to_device(x), out)
    expected = x.reshape(blocks, kp.SPAN)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(out.to_host(), expected)


def test_padded_pair_by_floor_division(backend, kp):
    blocks = 2
    x = np.arange(blocks * kp.SPAN, dtype=np.int32)
    out = _poisoned(len(x))
    kp.padded_pair_div[blocks, kp.HALF](gn.to_device(x), out)
    pairs = x.reshape(blocks, 2, kp.HALF) * 2
    expected = np.concatenate([pairs.sum(axis=1), np.full((blocks, kp.HALF), -1)], axis=1)
    np.testing.assert_array_equal(out.to_host().reshape(blocks, kp.SPAN)[:, :kp.HALF],
                                  expected[:, :kp.HALF])


def test_padded_by_two_shifts_from_a_launch_offset(backend, kp):
    out = _poisoned(2 * kp.HALF)
    kp.padded_launch_offset[2, kp.HALF](out)
    np.testing.assert_array_equal(out.to_host(), np.tile(np.arange(kp.HALF, 2 * kp.HALF), 2))


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_padded_global_array_through_the_grid_uid(backend, kp, n):
    x = np.arange(n, dtype=np.int32)
    out = _poisoned(n + n // 32 + 1)
    kp.padded_global[-(-n // 128), 128](gn.to_device(x), out)
    expected = np.full(len(out), -1, np.int32)
    expected[x + (x >> 5)] = x + 1
    np.testing.assert_array_equal(out.to_host(), expected)


def test_expand_proofs_name_the_padding_rule(kp):
    source = Path(kp.__file__).read_text()
    text = Expansion.of(source, "k.py", "k").proofs()
    assert "through the padded index thread_idx.x + 64 + (thread_idx.x + 64) // 32 (strictly " \
           "increasing: R10, padding)" in text, text
    # The asserted block size is a constant in the proofs: u = block_dim.x + tid is tid + 64.
    assert "the padded index thread_idx.x + 64 + (thread_idx.x + 64) // 16 + 2 * " \
           "((thread_idx.x + 64) // 64)" in text, text
    assert "R10" in text[text.index("padded_global"):]


# ---- near misses ---------------------------------------------------------------------------------

_PAIR = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[i32]):
    assert block_dim.x == 128
    s = shared_array(i32, 1024)
    tid = thread_idx.x
    {body}
"""

NEAR_MISSES = {
    # h(31) == h(32): u - (u >> 5) is non-decreasing, not strictly increasing.
    "minus_shift": ("u = tid\n    s[u - (u >> 5)] = 1",
                    ["thread_idx.x = 31 and thread_idx.x = 32 both write s[31]",
                     "is not strictly increasing in thread_idx.x"]),
    # A remainder wraps around: no monotone function of u.
    "remainder": ("u = tid + 128\n    s[u + (u * 7) % 32] = 1",
                  ["could write the same element", "a remainder wraps around to 0"]),
    "mask": ("u = tid\n    s[u + (u & 31)] = 1",
             ["thread_idx.x = 16 and thread_idx.x = 32 both write s[32]",
              "a remainder wraps around to 0"]),
    # u may be negative: no split of it is modelled (its floor is not its truncation).
    "negative_u": ("u = tid - 64\n    s[u + (u >> 5) + 70] = 1",
                   ["a '>>' of thread-dependent values"]),
    # The values overlap: tid + 64 for tid < 64 is tid' for tid' >= 64.
    "overlapping_values": ("s[tid + (tid >> 5)] = 1\n    v = tid + 64\n    s[v + (v >> 5)] = 2",
                           ["thread_idx.x = 0 and thread_idx.x = 64 both write s[66]",
                            "through the padded indices"]),
    # Padded by different shifts: h1 != h2.
    # (With v = tid + 128 the two stores' index ranges, 0 to 130 and 136 to 270, do not meet:
    # that pair is race-free, and accepted by the range rule.)
    "different_shifts": ("s[tid + (tid >> 5)] = 1\n    v = tid + 64\n    s[v + (v >> 4)] = 2",
                         ["thread_idx.x = 0 and thread_idx.x = 66 both write s[68]",
                          "the two stores pad their indices differently (thread_idx.x + 64 + "
                          "(thread_idx.x + 64) // 16 and thread_idx.x + thread_idx.x // 32)"]),
    # Padded alike, but another offset after the padding.
    "offset_after_padding": ("s[tid + (tid >> 5)] = 1\n    s[tid + (tid >> 5) + 1] = 2",
                             ["thread_idx.x = 0 and thread_idx.x = 1 both write s[1]",
                              "are padded alike but add different offsets (1 and 0)"]),
    # Only one store pads, and the ranges meet (tid = 66 and tid + 64 + 2 for tid = 0).
    "one_store_padded": ("s[tid] = 1\n    v = tid + 64\n    s[v + (v >> 5)] = 2",
                         ["thread_idx.x = 0 and thread_idx.x = 66 both write s[66]",
                          "only one of the two stores pads its index"]),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_refused_with_what_is_missing(tmp_path, name):
    body, messages = NEAR_MISSES[name]
    with pytest.raises(TranspileError) as info:
        build(tmp_path, _PAIR.format(body=body), name=name)
    text = str(info.value)
    for message in messages:
        assert message in text, text


def test_a_padded_i32_grid_uid_may_wrap(tmp_path):
    """``u + (u >> 5)`` of an i32 grid uid can pass 2**31 - 1: refused, with the i64 hint."""
    with pytest.raises(TranspileError, match=r"may wrap around in i32(.|\n)*compute the index "
                                             r"in i64"):
        build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    u = block_idx.x * block_dim.x + thread_idx.x
    if u < len(x):
        out[u + (u >> 5)] = x[u]
""")


# ---- the padded tree sweeps of a scan -----------------------------------------------------------

_SWEEP = """
@gpu_kernel(Kernel1D)
def k(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    assert block_dim.x == 64 and grid_dim.x == 1
    temp = shared_array(i32, (132,))
    tid = thread_idx.x
    temp[tid + (tid >> 5)] = x[tid]
    v = tid + 64
    temp[v + (v >> 5)] = x[v]
    offset = 1
    d = 64
    while d > 0:
        {barrier}
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            ai += ai >> 5
            bi += bi {shift}
            temp[bi] += temp[ai]
            temp[ai] = 0
        offset *= 2
        d >>= 1
    sync_threads()
    out[tid] = temp[tid + (tid >> 5)]
    out[v] = temp[v + (v >> 5)]
"""


def test_padded_up_sweep_is_proven_and_runs_race_free(tmp_path):
    from tools.fuzz.indices import run_sim

    kernel = build(tmp_path, _SWEEP.format(barrier="sync_threads()", shift=">> 5"))["k"]
    x = np.arange(128, dtype=np.int32)
    out = np.zeros(128, np.int32)
    errors = run_sim(kernel, 1, 64, x, out)
    assert errors.races == [] and errors.fails == []
    # Each level adds the left child into the right one and clears the left: the root keeps all.
    assert out[127] == x.sum() and (out[:127] == 0).all()


@pytest.mark.parametrize("barrier, shift, message", [
    # Without the barrier, one level's bi meets the next level's bi in another thread.
    ("pass", ">> 5", "through the padded indices"),
    # bi padded by another shift than ai: one thread's bi may be another's ai.
    ("sync_threads()", ">> 4", "may meet the store at line"),
])
def test_padded_sweep_near_misses_are_refused(tmp_path, barrier, shift, message):
    with pytest.raises(TranspileError, match=message):
        build(tmp_path, _SWEEP.format(barrier=barrier, shift=shift))
