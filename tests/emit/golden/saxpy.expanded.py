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
def saxpy_kernel(_gn_context):  # L20
    _gn_fast = _gn_context.fast_path()        # L21
    _gn_DA = _gn_fast.DeviceArray             # L21
    _gn_float = _gn_fast.float                # L21
    _gn_sig_x = _gn_fast.signatures['x']      # L21
    _gn_sig_y = _gn_fast.signatures['y']      # L21
    _gn_sig_out = _gn_fast.signatures['out']  # L21
    _gn_pack = _gn_fast.pack                  # L21
    _gn_buf = _gn_fast.buffer                 # L21
    _gn_address = _gn_fast.address            # L21
    _gn_launch = _gn_fast.launch              # L21
    _gn_fn = _gn_fast.function                # L21
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid    # L21
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block   # L21
    _gn_smem = _gn_fast.shared_mem_bytes      # L21
    _gn_stream = _gn_fast.stream              # L21
    _gn_ok = _gn_fast.success                 # L21
    _gn_failed = _gn_fast.failed              # L21
    _gn_slow = _gn_fast.slow                  # L21
    return lambda alpha, x, y, out: (                                                     # L22
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L22
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L22
            (_gn_pack(                                                                    # L22
                _gn_buf, 0, alpha, x.launch_args, y.launch_args, out.launch_args,         # L22
            ) or _gn_address),                                                            # L22
            0,                                                                            # L22
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L22
        # ... when every argument is exactly what the kernel was compiled for
        if alpha.__class__ is _gn_float                                                   # L22
        and -3.4028235677973366e+38 < alpha < 3.4028235677973366e+38                      # L22
        and x.__class__ is _gn_DA and x.launch_sig is _gn_sig_x                           # L22
        and y.__class__ is _gn_DA and y.launch_sig is _gn_sig_y                           # L22
        and out.__class__ is _gn_DA and out.launch_sig_mut is _gn_sig_out                 # L22
        and out.launch_base is not x.launch_base                                          # L22
        and out.launch_base is not y.launch_base                                          # L22
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(alpha, x, y, out)                                                   # L22
    )                                                                                     # L22


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
