"""The launcher's fast path: an array passes the parameters it packed when it was made (its
address and extents), so views, reshapes and read-only views must each carry their own."""

from __future__ import annotations

import dis
import struct

import numpy as np

import gpu_native as gn

SOURCE = """
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, FlatLayout1D, FlatLayout2D, f32, i32)

@gpu_kernel(Kernel1D)
def affine(x: CUDASlice[f32], out: CUDASliceMut[f32], k: i32):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = x[i] * 2.0 + f32(k)

@gpu_kernel(Kernel2D)
def shifted_copy(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    if y < dst.shape[0] and x < dst.shape[1]:
        dst[y, x] = src[y, x] + 1.0
"""


def test_an_array_packs_its_address_and_extents_once(backend):
    base = gn.to_device(np.arange(60, dtype=np.float32).reshape(6, 10))
    for arr in (base, base[2:5], base[3], base.reshape(60), base.reshape(60)[7:19],
                base.reshape(3, 4, 5), base.readonly()):
        assert arr.launch_args == struct.pack("<Q" + "q" * arr.ndim, arr.ptr, *arr.shape)


def test_views_launch_through_the_fast_path_with_their_own_parameters(kernel_module, backend):
    k = kernel_module(SOURCE)
    rng = np.random.default_rng()
    host = rng.standard_normal(100, dtype=np.float32)
    whole = gn.to_device(host)
    out = gn.empty(100, gn.f32)
    launcher = k.affine.launch(gn.GridDim1D(1), gn.BlockDim1D(64))
    for start, stop, scale in ((0, 64, 3), (10, 40, -2), (36, 100, 7), (99, 100, 1)):
        out.fill(np.nan)
        launcher(whole[start:stop], out[start:stop], scale)
        got = out.to_host()
        want = host[start:stop].astype(np.float64) * 2.0 + scale
        np.testing.assert_allclose(got[start:stop], want, rtol=1e-6)
        assert np.isnan(np.delete(got, np.arange(start, stop))).all()

    grid = rng.standard_normal((6, 10), dtype=np.float32)
    src = gn.to_device(grid)
    dst = gn.empty((6, 10), gn.f32)
    copy = k.shifted_copy.launch(gn.GridDim2D(2, 1), gn.BlockDim2D(8, 8))
    for rows in (slice(0, 6), slice(1, 4), slice(5, 6)):
        dst.fill(np.nan)
        copy(src[rows], dst[rows])
        got = dst.to_host()
        np.testing.assert_allclose(got[rows], grid[rows].astype(np.float64) + 1.0, rtol=1e-6)
        assert np.isnan(np.delete(got, np.arange(6)[rows], axis=0)).all()


def test_the_launcher_reads_only_the_launch_protocol_and_its_closure(kernel_module, backend):
    """The generated launcher touches an array only through its documented launch attributes,
    and everything else through closure variables bound once per configuration: one attribute
    load per array and role (class, signature, packed arguments), two per overlap test, one per
    scalar (its class), and no global, builtin or module lookup."""
    k = kernel_module(SOURCE)
    launcher = k.affine.launch(gn.GridDim1D(1), gn.BlockDim1D(64))
    code = launcher.__code__
    ops = list(dis.get_instructions(code))
    attrs = [i.argval for i in ops if i.opname == "LOAD_ATTR"]
    assert sorted(set(attrs)) == ["__class__", "launch_args", "launch_base", "launch_sig",
                                  "launch_sig_mut"]
    # x, out (arrays) and k (i32): 3 classes, 2 signatures, 2 packed, out vs x's base.
    assert len(attrs) == 3 + 2 + 2 + 2
    assert not [i for i in ops if i.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_METHOD")]
    assert code.co_freevars and all(n.startswith("_gn_") for n in code.co_freevars)
