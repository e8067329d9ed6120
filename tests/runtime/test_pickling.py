"""What gpu_native objects do under ``pickle`` (in this process; ``test_distributed_workers``
sends them to ``spawn`` workers).

Kernels pickle by reference (module and name; the receiver re-imports them), device arrays,
streams and events refuse with a message that says what to send instead, devices pickle as their
ordinal, and every gpu_native exception survives the trip, so an error in a worker reaches its
parent intact.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import SourceSpan

KERNELS = '''\
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32


@gpu_kernel(Kernel1D)
def double(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = x[i] * 2.0


def make_nested():
    @gpu_kernel(Kernel1D)
    def nested(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = x[i]

    return nested
'''


@pytest.fixture
def mod(kernel_module):
    return kernel_module(KERNELS)


def test_a_kernel_pickles_by_module_and_name(mod):
    data = pickle.dumps(mod.double)
    assert pickle.loads(data) is mod.double
    # A reference, not the kernel: no CUDA source, no compiled image travels.
    assert mod.__name__.encode() in data and b"double" in data
    assert b"__global__" not in data and len(data) < 200


def test_a_kernel_that_cannot_be_found_by_name_refuses_to_pickle(mod):
    nested = mod.make_nested()
    with pytest.raises(pickle.PicklingError, match=r"cannot pickle kernel nested: it is not "
                                                   r"reachable as .*define it at the top level"):
        pickle.dumps(nested)


def test_a_renamed_module_attribute_refuses_to_pickle(mod):
    kernel = mod.double
    mod.double = None
    try:
        with pytest.raises(pickle.PicklingError, match="not reachable as"):
            pickle.dumps(kernel)
    finally:
        mod.double = kernel


def test_device_arrays_streams_and_events_refuse_with_advice(backend):
    arr = gn.to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match=r"send arr.to_host\(\) \(a NumPy array\) and call "
                                        r"gn.to_device\(\) on the other side"):
        pickle.dumps(arr)
    with pytest.raises(TypeError, match=r"create a gn\.Stream"):
        pickle.dumps(gn.Stream())
    with pytest.raises(TypeError, match=r"record a new gn\.Event"):
        pickle.dumps(gn.Event())
    assert pickle.loads(pickle.dumps(gn.DEFAULT_STREAM)) is gn.DEFAULT_STREAM
    assert pickle.loads(pickle.dumps(gn.Device(0))) == gn.Device(0)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(arr.to_host())), np.arange(4))


def test_copy_module_copies_a_device_array_s_data(backend):
    """``copy.copy`` and ``copy.deepcopy`` copy the data, as NumPy's (they said "cannot be
    pickled", from the pickle protocol copy falls back on)."""
    import copy

    arr = gn.to_device(np.arange(4, dtype=np.float32))
    for dup in (copy.copy(arr), copy.deepcopy(arr)):
        assert isinstance(dup, gn.DeviceArray) and dup.ptr != arr.ptr
        np.testing.assert_array_equal(dup.to_host(), np.arange(4))
    dup.fill(7.0)
    np.testing.assert_array_equal(arr.to_host(), np.arange(4))


SPAN = SourceSpan("k.py", 3, 4, 9, "    out[j] = x[i]\n")


@pytest.mark.parametrize("error", [
    gn.CudaError("CUDA_ERROR_OUT_OF_MEMORY", 2, "allocating 8 bytes: out of memory"),
    gn.ContextLostError("CUDA_ERROR_ILLEGAL_ADDRESS", 700, "the process's CUDA context is lost"),
    gn.TranspileError("writes must use a unique index", SPAN, "use atomic_ref"),
    gn.CompileError("NVRTC failed", "k.py(3): error: bad"),
    gn.LaunchError("block too large"),
    gn.MissingArtifactError("no precompiled sm_90 artifact"),
    gn.DeviceRaceError("two threads wrote out[3]"),
    gn.GpuNativeError("plain"),
], ids=lambda e: type(e).__name__)
def test_every_error_survives_pickle(error):
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    assert copy.__dict__ == error.__dict__


def test_a_kernel_error_keeps_its_origin():
    err = gn.KernelIndexError("double: index 9 is out of bounds")
    err._set_origin("double", SPAN, (1, 0, 0), (5, 0, 0))
    err.index, err.length = 9, 8
    copy = pickle.loads(pickle.dumps(err))
    assert isinstance(copy, IndexError) and str(copy) == str(err)
    assert (copy.kernel, copy.span, copy.block, copy.thread, copy.index) == (
        "double", SPAN, (1, 0, 0), (5, 0, 0), 9)
