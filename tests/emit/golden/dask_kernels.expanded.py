"""The kernel that examples/dask_map_blocks.py maps over the chunks of a Dask array.

It lives in a module of its own because kernels travel to Dask workers by module and name (as
pickle sends functions): a worker imports this module (through the import hook, or from the
precompiled directory the client built) and takes the kernel from it; no compiled code travels.
"""

import numpy as np

import gpu_native as gn
from gpu_native import CUDASlice, CUDASliceMut, FlatLayout1D, Kernel1D, UniqueId, f32, gpu_kernel


# gpu_native: kernel smoothstep_kernel, lines 14-18 of examples/dask_kernels.py, became
# the launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D smoothstep_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32], lo: f32, hi:
#       f32)
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_smoothstep_kernel (kernel id 0xd207e482b78468bf)
#     traits: uid_only, uid_vector4
#     error sites: 2 bounds checks (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 4,236 characters (`expand --cuda`); simulator IR: 1,163 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L14
def smoothstep_kernel(_gn_context):  # L15
    _gn_fast = _gn_context.fast_path()        # L16
    _gn_DA = _gn_fast.DeviceArray             # L16
    _gn_float = _gn_fast.float                # L16
    _gn_sig_x = _gn_fast.signatures['x']      # L16
    _gn_sig_out = _gn_fast.signatures['out']  # L16
    _gn_pack = _gn_fast.pack                  # L16
    _gn_buf = _gn_fast.buffer                 # L16
    _gn_address = _gn_fast.address            # L16
    _gn_launch = _gn_fast.launch              # L16
    _gn_fn = _gn_fast.function                # L16
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid    # L16
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block   # L16
    _gn_smem = _gn_fast.shared_mem_bytes      # L16
    _gn_stream = _gn_fast.stream              # L16
    _gn_ok = _gn_fast.success                 # L16
    _gn_failed = _gn_fast.failed              # L16
    _gn_slow = _gn_fast.slow                  # L16
    return lambda x, out, lo, hi: (                                                       # L17
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L17
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L17
            (_gn_pack(                                                                    # L17
                _gn_buf, 0, x.launch_args, out.launch_args, lo, hi,                       # L17
            ) or _gn_address),                                                            # L17
            0,                                                                            # L17
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L17
        # ... when every argument is exactly what the kernel was compiled for
        if x.__class__ is _gn_DA and x.launch_sig is _gn_sig_x                            # L17
        and out.__class__ is _gn_DA and out.launch_sig_mut is _gn_sig_out                 # L17
        and lo.__class__ is _gn_float                                                     # L17
        and -3.4028235677973366e+38 < lo < 3.4028235677973366e+38                         # L17
        and hi.__class__ is _gn_float                                                     # L17
        and -3.4028235677973366e+38 < hi < 3.4028235677973366e+38                         # L17
        and out.launch_base is not x.launch_base                                          # L17
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(x, out, lo, hi)                                                     # L17
    )                                                                                     # L17


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
