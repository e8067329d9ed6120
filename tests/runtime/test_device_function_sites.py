"""A device function of another module reports its errors at its own file and line: bounds
checks, asserts and the launcher's launch checks, on the simulator and on the GPU."""

from __future__ import annotations

import itertools
import textwrap

import numpy as np
import pytest

import gpu_native as gn

HELPERS = textwrap.dedent("""\
    from gpu_native import (gpu_device, CUDASlice, f32, i32, i64, block_idx, thread_idx)


    @gpu_device
    def pick(a: CUDASlice[f32], i: i64) -> f32:
        return a[i + 1]


    @gpu_device
    def checked(x: f32) -> f32:
        assert x >= 0.0, "x must not be negative"
        return x


    @gpu_device
    def lane_of(a: CUDASlice[f32]) -> f32:
        x = block_idx.x * 64 + thread_idx.x
        if x < len(a):
            return a[x]
        return 0.0
    """)

KERNELS = textwrap.dedent("""\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
    from {helpers} import pick, checked, lane_of


    @gpu_kernel(Kernel1D)
    def shifted(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = pick(a, i)


    @gpu_kernel(Kernel1D)
    def guarded(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = checked(a[i]) + a[i + 1]


    @gpu_kernel(Kernel1D)
    def lanes(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = lane_of(a)
    """)


_ids = itertools.count()


@pytest.fixture
def modules(kernel_module):
    # A fresh helper module name per test: the import system caches modules by name.
    helpers_name = f"gn_site_helpers_{next(_ids)}"
    helpers = kernel_module(HELPERS, helpers_name)
    kernels = kernel_module(KERNELS.format(helpers=helpers_name))
    return helpers, kernels


def _line(path: str, text: str) -> int:
    with open(path) as f:
        return f.read().splitlines().index(text) + 1


def test_an_index_error_in_another_modules_device_function_names_its_file(modules, backend):
    helpers, kernels = modules
    a, out = gn.to_device(np.arange(64, dtype=np.float32)), gn.empty(64, gn.f32)
    kernels.shifted.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(a, out)
    with pytest.raises(gn.KernelIndexError) as info:
        gn.synchronize()
    err = info.value
    line = _line(helpers.__file__, "    return a[i + 1]")
    assert (err.span.file, err.span.line, err.span.col) == (helpers.__file__, line, 11)
    assert str(err).splitlines()[:4] == [
        "shifted: index 64 is out of bounds for array 'a' of length 64",
        f'  File "{helpers.__file__}", line {line}, in shifted',
        "        return a[i + 1]",
        "               ^^^^^^^^",
    ]
    assert err.thread == (63, 0, 0)


def test_an_assert_in_another_module_and_an_index_error_in_the_kernel_each_name_their_file(
        modules, backend):
    helpers, kernels = modules
    a = np.arange(64, dtype=np.float32)
    a[5] = -1.0
    kernels.guarded.launch(gn.GridDim1D(1), gn.BlockDim1D(32))(gn.to_device(a),
                                                             gn.empty(32, gn.f32))
    with pytest.raises(gn.KernelAssertionError) as info:
        gn.synchronize()
    err = info.value
    assert "x must not be negative" in str(err)
    line = _line(helpers.__file__, '    assert x >= 0.0, "x must not be negative"')
    assert (err.span.file, err.span.line) == (helpers.__file__, line)
    assert f'File "{helpers.__file__}", line {line}' in str(err)
    assert 'assert x >= 0.0, "x must not be negative"' in str(err)
    # The kernel's own site still names the kernel's file.
    kernels.guarded.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(
        gn.to_device(np.arange(64, dtype=np.float32)), gn.empty(64, gn.f32))
    with pytest.raises(gn.KernelIndexError) as info:
        gn.synchronize()
    err = info.value
    line = _line(kernels.__file__, "    out[i] = checked(a[i]) + a[i + 1]")
    assert (err.span.file, err.span.line) == (kernels.__file__, line)


def test_a_launch_check_from_another_modules_device_function_names_its_file(modules, backend):
    helpers, kernels = modules
    a = gn.to_device(np.arange(64, dtype=np.float32))
    kernels.lanes.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(a, gn.empty(64, gn.f32))
    gn.synchronize()
    # block_idx.x * 64 + thread_idx.x passes the i32 maximum from block 2**25 on.
    with pytest.raises(gn.LaunchError) as info:
        kernels.lanes.launch(gn.GridDim1D(2**25 + 1), gn.BlockDim1D(64))(a, gn.empty(64, gn.f32))
    line = _line(helpers.__file__, "    x = block_idx.x * 64 + thread_idx.x")
    assert f'File "{helpers.__file__}", line {line}, in lanes' in str(info.value)
    assert "x = block_idx.x * 64 + thread_idx.x" in str(info.value)
