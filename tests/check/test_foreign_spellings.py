"""Names from CUDA C++, Numba-CUDA and Triton in a kernel: the transpile error says how
gpu_native spells them (gpu_native/lang/spellings.py), and a mistyped name gets the closest
kernel-language name."""

from __future__ import annotations

import pytest

from gpu_native.lang import registry as R
from gpu_native.lang.spellings import FOREIGN, did_you_mean, gpu_native_spelling
from tests.helpers import located_transpile_error

HEADER = """\
import math
import gpu_native as gn
from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32, thread_idx
"""

CASES = {
    "CUDA's threadIdx": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[threadIdx.x] = 1.0  # <-
""", "name 'threadIdx' is not defined (gpu_native spells it thread_idx)"),
    "CUDA's __syncthreads": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    __syncthreads()  # <-
    out[thread_idx.x] = 1.0
""", "name '__syncthreads' is not defined (gpu_native spells it sync_threads())"),
    "CUDA's atomicAdd": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    atomicAdd(out, 0, 1.0)  # <-
""", "(gpu_native spells it x.atomic_ref(i).fetch_add(value))"),
    "Numba's shfl_down_sync on gpu_native": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    v = f32(thread_idx.x)
    v += gn.shfl_down_sync(0xffffffff, v, 16)  # <-
    out[thread_idx.x] = v
""", "gpu_native has no 'shfl_down_sync' (gpu_native spells it shfl_down(value, delta), the "
     "mask last and optional)"),
    "a foreign name imported from gpu_native": ("""
from gpu_native import syncthreads

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    syncthreads()  # <-
    out[thread_idx.x] = 1.0
""", "gpu_native has no 'syncthreads' (gpu_native spells it sync_threads())"),
    "Numba's cuda module": ("""
from numba_is_not_here import cuda

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    cuda.syncthreads()  # <-
    out[thread_idx.x] = 1.0
""", "cuda.syncthreads is not gpu_native's: gpu_native spells it sync_threads()"),
    "Numba's cuda.threadIdx": ("""
from numba_is_not_here import cuda

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[cuda.threadIdx.x] = 1.0  # <-
""", "hint: cuda.threadIdx is not gpu_native's: gpu_native spells it thread_idx"),
    "Numba's cuda.laneid": ("""
from numba_is_not_here import cuda

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[thread_idx.x] = f32(cuda.laneid)  # <-
""", "hint: cuda.laneid is not gpu_native's: gpu_native spells it lane_id()"),
    "Numba's cuda.atomic.add": ("""
from numba_is_not_here import cuda

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    cuda.atomic.add(out, 0, 1.0)  # <-
""", "hint: cuda.atomic.add is not gpu_native's: gpu_native spells it "
     "x.atomic_ref(i).fetch_add(value) and its siblings"),
    "Numba's cuda.shared.array": ("""
from numba_is_not_here import cuda

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = cuda.shared.array(32, f32)  # <-
    out[thread_idx.x] = 1.0
""", "hint: cuda.shared.array is not gpu_native's: gpu_native spells it "
     "shared_array(dtype, shape)"),
    "C's float spelling of a math function": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[thread_idx.x] = expf(1.0)  # <-
""", "name 'expf' is not defined (gpu_native spells it math.exp)"),
    "Triton's program_id": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[program_id.x] = 1.0  # <-
""", "(gpu_native spells it block_idx)"),
    "a mistyped math function": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[thread_idx.x] = math.sqrtt(2.0)  # <-
""", "math.sqrtt is not available in kernels (gpu_native spells it math.sqrt)"),
    "a mistyped gpu_native name": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    t = gn.shared_arr(f32, 32)  # <-
    out[thread_idx.x] = 1.0
""", "gpu_native has no 'shared_arr' (gpu_native spells it shared_array)"),
    "gpu_native's own name, not imported": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    sync_threads()  # <-
    out[thread_idx.x] = 1.0
""", "name 'sync_threads' is not defined (it is gpu_native's: from gpu_native import "
     "sync_threads)"),
    "NumPy's float32 as an annotation": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], s: float32):  # <-
    out[thread_idx.x] = s
""", "name 'float32' is not defined (gpu_native spells it f32)"),
    "a numpy function that is not element-wise math": ("""
import numpy as np

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[thread_idx.x] = np.minimum(f32(1.0), 2.0)  # <-
""", "numpy.minimum is a host-side name: of numpy, kernels take the scalar types, the "
     "constants and the element-wise math functions (np.float32(x), np.pi, np.sqrt(x))"),
    "another host library": ("""
import torch

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[thread_idx.x] = torch.float32(1.0)  # <-
""", "torch.float32 is a host-side name: torch is not supported in kernels (gpu_native spells "
     "it f32)"),
    # A Numba-CUDA kernel pasted with its `from numba import cuda` line dropped: the name is
    # not defined, and what gpu_native calls the attribute is the hint.
    "Numba's cuda.shfl_down_sync, cuda not imported": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    v = f32(thread_idx.x)
    v += cuda.shfl_down_sync(0xffffffff, v, 16)  # <-
    out[thread_idx.x] = v
""", "cuda.shfl_down_sync is not gpu_native's: gpu_native spells it shfl_down(value, delta)"),
    "Numba's cuda.grid, cuda not imported": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out[cuda.grid(1)] = 1.0  # <-
""", "cuda.grid is not gpu_native's: gpu_native spells it FlatLayout1D.uid()"),
    "a host API of gpu_native stays one": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    gn.synchronize()  # <-
    out[thread_idx.x] = 1.0
""", "gpu_native.synchronize is a host-side API"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_foreign_name_is_refused_with_gpu_natives_spelling(name, tmp_path):
    body, message = CASES[name]
    located_transpile_error(HEADER + body, tmp_path / "k.py", message)


def test_every_spelling_names_a_real_kernel_api():
    """The table cannot point at a name the language does not have: each spelling starts with a
    gpu_native kernel name, a math function, or an atomic_ref call (whose methods exist)."""
    atomic_methods = {e.name for e in R.ENTRIES if e.namespace == "atomic_ref"}
    for foreign, ours in FOREIGN.items():
        head = ours.split("(")[0].split(" ")[0].rstrip(",")
        if head.startswith("math."):
            assert head[5:] in R.MATH, (foreign, ours)
        elif head.startswith("x.atomic_ref"):
            method = ours.split(").")[1].split("(")[0]
            assert method in atomic_methods, (foreign, ours)
        elif head == "a":      # "a plain read, x[i] ..."
            continue
        else:
            assert head.split(".")[0] in R.GPU_NATIVE, (foreign, ours)
        assert foreign not in R.GPU_NATIVE, foreign   # a foreign name, not one of ours


def test_nothing_is_suggested_for_an_unrelated_name():
    assert gpu_native_spelling("my_helper_table") is None
    assert did_you_mean("tid2") == ""


def test_a_kernels_own_names_are_never_taken_for_foreign_ones(tmp_path, monkeypatch, sim):
    """A device function called atomicAdd, parameters called threadIdx and float32 and locals
    called grid and shared are the kernel's own: they resolve and run as written."""
    import importlib

    import numpy as np

    import gpu_native as gn

    (tmp_path / "own_names.py").write_text("""\
from gpu_native import gpu_kernel, gpu_device, Kernel1D, CUDASliceMut, f32, FlatLayout1D

@gpu_device
def atomicAdd(x: f32, y: f32) -> f32:
    return x + y

@gpu_kernel(Kernel1D)
def k(threadIdx: CUDASliceMut[f32], float32: f32):
    grid = FlatLayout1D.uid()
    shared = float32
    if grid < threadIdx.shape[0]:
        threadIdx[grid] = atomicAdd(shared, 1.0)
""")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("own_names")
    out = gn.zeros((300,), gn.f32)
    module.k.launch(gn.GridDim1D(3), gn.BlockDim1D(128))(out, 2.0)
    assert np.all(out.to_host() == 3.0)


def test_numpy_names_kernels_take_are_the_languages_own(tmp_path, monkeypatch, sim):
    """np.float32(x), np.sqrt, np.pi ... in a kernel are f32(x), math.sqrt, math.pi: each in
    the table names an entry of the language, and a kernel using them runs as NumPy computes."""
    import importlib

    import numpy as np

    import gpu_native as gn
    from gpu_native.lang.spellings import NUMPY

    spaces = {"gpu_native": R.GPU_NATIVE, "math": R.MATH, "builtins": R.BUILTINS}
    for np_name, (space, ours) in NUMPY.items():
        assert ours in spaces[space], (np_name, space, ours)
        assert hasattr(np, np_name), np_name
    (tmp_path / "numpy_spellings.py").write_text("""\
import numpy as np
from numpy import float32 as F, arctan2
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, f32, FlatLayout1D

@gpu_kernel(Kernel1D)
def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(x):
        v = np.float32(np.sqrt(np.abs(x[i]))) + np.float32(np.pi) * F(np.floor(x[i]))
        w = np.float32(arctan2(x[i], np.float32(2.0))) + np.float32(np.int32(x[i] * 3.0))
        z = np.complex64(x[i], np.float32(1.0)) * np.complex128(2.0)
        out[i] = v + w + np.float32(np.isnan(x[i])) + np.float32(z.imag)
""")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("numpy_spellings")
    x = np.random.default_rng(7).standard_normal(300).astype(np.float32)
    x[5] = np.nan
    out = gn.empty(300, gn.f32)
    out.fill(np.nan)
    module.k.launch(gn.GridDim1D(3), gn.BlockDim1D(128))(gn.to_device(x), out)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = (np.sqrt(np.abs(x64)) + np.pi * np.floor(x64) + np.arctan2(x64, 2.0)
                + np.trunc(x64 * 3.0) + np.isnan(x64) + 2.0)
    got = out.to_host()
    assert np.isnan(got[5]) and np.isnan(want[5])
    np.testing.assert_allclose(np.delete(got, 5), np.delete(want, 5), rtol=1e-5, atol=1e-5)


def test_an_imported_numba_cuda_name_gets_gpu_natives_spelling(tmp_path, monkeypatch):
    """A kernel ported with its `from numba import cuda` kept: the attribute of Numba's module
    is told how gpu_native spells it (it was "not a @gpu_device function or constant").  A
    stand-in `numba` package: the checker reads modules' sources, never imports them."""
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / "__init__.py").write_text("")
    (tmp_path / "numba" / "cuda.py").write_text("def shfl_down_sync(*args):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    body = HEADER + """from numba import cuda

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    v = f32(thread_idx.x)
    v += cuda.shfl_down_sync(0xffffffff, v, 16)  # <-
    out[thread_idx.x] = v
"""
    located_transpile_error(body, tmp_path / "k.py", "numba.cuda.shfl_down_sync is not "
                            "gpu_native's: gpu_native spells it shfl_down(value, delta)")
