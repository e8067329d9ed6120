"""SAXPY with a grid-stride loop: ``out = alpha * x + y`` with any grid size."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    f32,
    gpu_kernel,
)


# gpu_native: kernel saxpy_kernel, lines 19-22 of examples/saxpy.py, became the launcher
# factory below (`gpu-native expand --exact` prints the module as imported, with the
# full spec).
#   Kernel1D saxpy_kernel(alpha: f32, x: CUDASlice[f32], y: CUDASlice[f32], out:
#       CUDASliceMut[f32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_saxpy_kernel (kernel id 0x363cd11b8e83e2f1)
#     traits: uid_only
#     error sites: 2 bounds checks (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 1,859 characters (`expand --cuda`); simulator IR: 838 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L19
def saxpy_kernel(_gn):  # L20
    return lambda alpha, x, y, out: (                                                    # L21
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn.launch(                                                         # L21
            _gn.function, _gn.grid_x, _gn.grid_y, _gn.grid_z, _gn.block_x, _gn.block_y,  # L21
            _gn.block_z, _gn.shared_mem_bytes, _gn.stream,                               # L21
            (_gn.pack(                                                                   # L21
                _gn.buffer, 0, alpha, x.launch_args, y.launch_args, out.launch_args,     # L21
            ) or _gn.address),                                                           # L21
            0,                                                                           # L21
        )[0]) is _gn.success or _gn.failed(_gn_err)) and None                            # L21
        # ... when every argument is exactly what the kernel was compiled for
        if alpha.__class__ is _gn.float                                                  # L21
        and -3.4028235677973366e+38 < alpha < 3.4028235677973366e+38                     # L21
        and x.__class__ is _gn.DeviceArray and x.launch_sig is _gn.sig_x                 # L21
        and y.__class__ is _gn.DeviceArray and y.launch_sig is _gn.sig_y                 # L21
        and out.__class__ is _gn.DeviceArray and out.launch_sig_mut is _gn.sig_out       # L21
        and out.launch_base is not x.launch_base                                         # L21
        and out.launch_base is not y.launch_base                                         # L21
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn.slow(alpha, x, y, out)                                                  # L21
    )                                                                                    # L21


def saxpy(alpha, x, y, out, blocks: int = 256, threads: int = 256):
    saxpy_kernel.launch(GridDim1D(blocks), BlockDim1D(threads), 0, DEFAULT_STREAM)(
        alpha, x, y, out)


def run(n: int = 1_000_003, seed=None):
    rng = np.random.default_rng(seed)
    alpha = float(rng.standard_normal())
    x_host = rng.standard_normal(n, dtype=np.float32)
    y_host = rng.standard_normal(n, dtype=np.float32)
    out = gn.empty(n, gn.f32)
    out.fill(np.nan)
    saxpy(alpha, gn.to_device(x_host), gn.to_device(y_host), out, blocks=37)
    ref = np.float32(alpha).astype(np.float64) * x_host + y_host
    return out.to_host(), ref


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref) / (1 + np.abs(ref)))
    print(f"saxpy on {gn.backend()}: {len(out)} elements, max relative error {err:.2e}")
    assert err < 1e-5


if __name__ == "__main__":
    main()
