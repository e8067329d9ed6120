"""Warpgroup MMA and swizzled shared arrays (docs/language.md, "Warpgroup matrices"): the docs
snippet on the simulator (and on an sm_90 GPU), the swizzled layout the CUDA emitter writes, the
launch checks."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT


def _snippet() -> str:
    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n## Warpgroup matrices"):text.index("\n## Tensor copies")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    return snippet


def _import_snippet(tmp_path, monkeypatch, name: str = "wg_doc_snippet"):
    (tmp_path / f"{name}.py").write_text(_snippet())
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_the_docs_snippet_runs(hopper, tmp_path, monkeypatch, capsys):
    # A module of its own per backend: an import of a name another test imported first would
    # return that module without running the snippet again.
    _import_snippet(tmp_path, monkeypatch, f"wg_doc_snippet_{hopper}")
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_the_emitter_stores_swizzled_elements_where_wgmma_reads_them(tmp_path, monkeypatch,
                                                                     sim):
    mod = _import_snippet(tmp_path, monkeypatch)
    cuda = mod.mm64.cuda_source
    # Every access to the tiles goes through the 128-byte swizzle, in the dynamic memory.
    assert "gn_swz128<64, 64>" in cuda and "gn_swz128<16, 64>" in cuda
    assert "extern __shared__ __align__(1024) unsigned char __gn_swz_smem[];" in cuda
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in cuda
    assert "gn_fence_proxy_async();" in cuda   # before the barrier


def _swz128(r: int, c: int, rows: int, cols: int) -> int:
    """The prelude's gn_swz128 for one leading index 0."""
    return (c >> 6) * (rows * 64) + r * 64 + ((((c >> 3) & 7) ^ (r & 7)) << 3) + (c & 7)


def test_the_swizzle_is_the_hand_written_kernels_layout():
    """gn_swz128 puts A's and B's 16-byte chunks where tools/_bench_hgemm.py's verified
    HGEMM_WGMMA_CUDA copies them (A: r * 128 + ((ch ^ (r & 7)) << 4) bytes; B, 64-column
    blocks of BK rows: blk * BK * 128 + r * 128 + ((ch ^ (r & 7)) << 4)), and is a permutation."""
    for r in range(128):
        for ch in range(8):
            assert 2 * _swz128(r, ch * 8, 128, 64) == r * 128 + ((ch ^ (r & 7)) << 4)
    for r in range(64):
        for nc in range(32):
            blk, ch = nc >> 3, nc & 7
            assert 2 * _swz128(r, nc * 8, 64, 256) == blk * 64 * 128 + r * 128 + (
                (ch ^ (r & 7)) << 4)
    seen = {_swz128(r, c, 64, 256) for r in range(64) for c in range(256)}
    assert seen == set(range(64 * 256))


def test_a_block_that_is_not_whole_warpgroups_is_refused_at_launch(tmp_path, monkeypatch, sim):
    mod = _import_snippet(tmp_path, monkeypatch)
    a = gn.zeros((64, 16), gn.f16)
    b = gn.zeros((16, 64), gn.f16)
    c = gn.zeros((64, 64), gn.f32)
    with pytest.raises(gn.KernelAssertionError, match="multiple of 128"):
        mod.mm64.launch(gn.GridDim1D(1), gn.BlockDim1D(96), 16384)(a, b, c)
    assert not c.to_host().any()   # refused before any thread ran


TWO_WARPGROUPS = """
from gpu_native import (CUDASlice2D, CUDASliceMut2D, Kernel1D, f16, f32, gpu_kernel, local_array,
                        shared_array, sync_threads, thread_idx, unsafe, warpgroup_arrive,
                        warpgroup_commit, warpgroup_mma, warpgroup_store, warpgroup_wait)


@gpu_kernel(Kernel1D)
def twice(a: CUDASlice2D[f16], b: CUDASlice2D[f16], c: CUDASliceMut2D[f32]):
    ta = shared_array(f16, (64, 64), swizzle=128)
    tb = shared_array(f16, (16, 64), swizzle=128)
    acc = local_array(f32, (32,))
    t = thread_idx.x
    if t < 128:
        for q in range(8):
            e = t + q * 128
            with unsafe():
                ta[e // 16, e % 16] = a[e // 16, e % 16]
                tb[e // 64, e % 64] = b[e // 64, e % 64]
    for i in range(32):
        acc[i] = 0.0
    sync_threads()
    warpgroup_arrive()
    warpgroup_mma(acc, ta, (0, 0), tb, (0, 0), 64)
    warpgroup_commit()
    warpgroup_wait(0)
    with unsafe():   # a race: both warpgroups write the one tile
        warpgroup_store(c, (0, 0), acc)
"""


def test_the_race_detector_watches_warpgroup_store(tmp_path, monkeypatch, sim):
    """Two warpgroups storing their tiles at one origin (inside `with unsafe():`) are reported
    as a race on the simulator: warpgroup_store's destination is shadowed like any written
    array."""
    (tmp_path / "wg_twice.py").write_text(TWO_WARPGROUPS)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("wg_twice")
    a = gn.zeros((64, 16), gn.f16)
    b = gn.zeros((16, 64), gn.f16)
    c = gn.zeros((64, 64), gn.f32)
    with pytest.raises(gn.DeviceRaceError, match=r"data race on c\["):
        mod.twice.launch(gn.GridDim1D(1), gn.BlockDim1D(256), 16384)(a, b, c)
        c.to_host()


def test_a_misaligned_slice_is_reported_at_its_line(tmp_path, monkeypatch, sim):
    """An A slice starting off a swizzle row group (row 4): checked with the bounds checks, it
    fails at the warpgroup_mma line on the simulator (the GPU checks the descriptor's start)."""
    source = _snippet().replace("warpgroup_mma(acc, ta, (0, 0), tb, (0, 0), 64)",
                                "warpgroup_mma(acc, ta, (t // 128 + 4, 0), tb, (0, 0), 64)")
    source = source[:source.index("rng = ")].replace("shared_array(f16, (64, 64), swizzle=128)",
                                                      "shared_array(f16, (128, 64), swizzle=128)")
    (tmp_path / "wg_misaligned.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("wg_misaligned")
    a, b, c = gn.zeros((64, 16), gn.f16), gn.zeros((16, 64), gn.f16), gn.zeros((64, 64), gn.f32)
    with pytest.raises(gn.KernelAssertionError, match="swizzle row group") as info:
        mod.mm64.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 32768)(a, b, c)
        c.to_host()   # the kernel's errors are reported at the next synchronizing call
    assert "warpgroup_mma(acc, ta, (t // 128 + 4, 0)" in str(info.value)


IN_FLIGHT = """
from gpu_native import (CUDASlice2D, CUDASliceMut2D, Kernel1D, cp_async, cp_async_commit,
                        cp_async_wait, f16, f32, gpu_kernel, local_array, shared_array,
                        sync_threads, thread_idx, unsafe, warpgroup_arrive, warpgroup_commit,
                        warpgroup_mma, warpgroup_store, warpgroup_wait, block_dim)


@gpu_kernel(Kernel1D)
def overwrite(a: CUDASlice2D[f16], b: CUDASlice2D[f16], c: CUDASliceMut2D[f32], when: int):
    ta = shared_array(f16, (2, 64, 64), swizzle=128)
    tb = shared_array(f16, (16, 64), swizzle=128)
    acc = local_array(f32, (32,))
    assert block_dim.x == 128
    t = thread_idx.x
    cp_async(ta, (0, t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
    cp_async_commit()
    cp_async_wait(0)
    for q in range(8):
        e = t + q * 128
        tb[e // 64, e % 64] = b[e // 64, e % 64]
    for i in range(32):
        acc[i] = 0.0
    sync_threads()
    warpgroup_arrive()
    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0), 64)
    warpgroup_commit()
    if when == 1:       # a race: the MMA may still read stage 0 (the barrier orders nothing)
        sync_threads()
        cp_async(ta, (0, t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
        cp_async_commit()
        cp_async_wait(0)
    warpgroup_wait(0)
    if when == 3:       # race-free: the MMA has retired, and a barrier orders every thread
        sync_threads()
        cp_async(ta, (0, t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
        cp_async_commit()
        cp_async_wait(0)
    if when == 4:       # race-free: the other stage, which no MMA reads
        cp_async(ta, (1, t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
        cp_async_commit()
        cp_async_wait(0)
    with unsafe():
        warpgroup_store(c, (0, 0), acc)


@gpu_kernel(Kernel1D)
def copy_in_flight(a: CUDASlice2D[f16], b: CUDASlice2D[f16], c: CUDASliceMut2D[f32]):
    ta = shared_array(f16, (64, 64), swizzle=128)
    tb = shared_array(f16, (16, 64), swizzle=128)
    acc = local_array(f32, (32,))
    assert block_dim.x == 128
    t = thread_idx.x
    cp_async(ta, (t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)
    cp_async_commit()
    cp_async_wait(0)
    for q in range(8):
        e = t + q * 128
        tb[e // 64, e % 64] = b[e // 64, e % 64]
    for i in range(32):
        acc[i] = 0.0
    sync_threads()
    warpgroup_arrive()
    warpgroup_mma(acc, ta, (0, 0), tb, (0, 0), 64)
    warpgroup_commit()
    cp_async(ta, (t // 2, (t % 2) * 8), a, (t // 2, (t % 2) * 8), 16)   # lands at the wait below
    cp_async_commit()
    warpgroup_wait(0)
    cp_async_wait(0)
    with unsafe():
        warpgroup_store(c, (0, 0), acc)
"""


@pytest.fixture
def in_flight(tmp_path, monkeypatch):
    (tmp_path / "wg_in_flight.py").write_text(IN_FLIGHT)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("wg_in_flight")


def _operands():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    b = rng.standard_normal((16, 64)).astype(np.float16)
    return gn.to_device(a), gn.to_device(b), gn.zeros((64, 64), gn.f32), a, b


@pytest.mark.slow
@pytest.mark.parametrize("when", [1, 3, 4])
def test_a_write_to_a_warpgroup_mma_operand_before_its_wait_is_a_race(in_flight, sim, when):
    """warpgroup_mma reads its shared operands until the warpgroup_wait that retires it: a
    copy into them before that wait is reported even with a barrier between (``when`` 1); one
    after the wait and a barrier (3), or into another stage (4), is not."""
    a, b, c, ha, hb = _operands()
    launch = in_flight.overwrite.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 24576)
    if when == 1:
        with pytest.raises(gn.DeviceRaceError, match=r"data race on shared array ta\[0, .*"
                           r"while the warpgroup_mma of thread .* may still be reading it"):
            launch(a, b, c, when)
            c.to_host()
        return
    launch(a, b, c, when)
    got = c.to_host().astype(np.float64)
    want = ha.astype(np.float64) @ hb.astype(np.float64)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_copy_issued_before_the_wait_lands_during_the_read(in_flight, sim):
    """A cp_async into an operand, issued while the MMA is in flight and waited for only after
    the MMA's wait, may land while the MMA reads: a race (the simulator lands it later)."""
    a, b, c, *_ = _operands()
    with pytest.raises(gn.DeviceRaceError, match="may still be reading it"):
        in_flight.copy_in_flight.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 16384)(a, b, c)
        c.to_host()
