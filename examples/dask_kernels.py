"""The kernel that examples/dask_map_blocks.py maps over the chunks of a Dask array.

It lives in a module of its own because kernels travel to Dask workers by module and name (as
pickle sends functions): a worker imports this module (through the import hook, or from the
precompiled directory the client built) and takes the kernel from it; no compiled code travels.
"""

import numpy as np

import gpu_native as gn
from gpu_native import CUDASlice, CUDASliceMut, FlatLayout1D, Kernel1D, UniqueId, f32, gpu_kernel


@gpu_kernel(Kernel1D)
def smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi: f32):
    i: UniqueId = FlatLayout1D.uid()
    t = min(max((x[i] - lo) / (hi - lo), f32(0.0)), f32(1.0))
    out[i] = t * t * (3.0 - 2.0 * t)


def smoothstep_reference(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The same function in NumPy, float64."""
    t = np.clip((x.astype(np.float64) - lo) / (hi - lo), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def run_chunk(chunk: np.ndarray, kernel, lo: float, hi: float) -> np.ndarray:
    """What a worker runs for one chunk: copy it to the device, launch ``kernel`` over it, copy
    the result back.  ``kernel`` arrives pickled by module and name."""
    x = gn.to_device(np.ascontiguousarray(chunk, dtype=np.float32))
    out = gn.empty(len(x), gn.f32)
    kernel.forall(len(x))(x, out, lo, hi)
    return out.to_host()
