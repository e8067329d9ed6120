"""Row softmax: one block per row; block-wide max and sum through shared memory."""

import math

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim1D,
    Kernel1D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

THREADS = 256


# gpu_native: kernel softmax_kernel, lines 27-62 of examples/softmax.py, became the
# launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D softmax_kernel(x: CUDASlice2D[f32], y: CUDASliceMut2D[f32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_softmax_kernel (kernel id 0x23e0d2e2f56b4347)
#     traits: index32, uses_barriers, uses_shared
#     error sites: 1 assert, 7 bounds checks (`expand --proofs` lists them)
#     launch check: assert block_dim.x == 256 (line 29), once per launch shape
#     CUDA C++: 6,231 characters (`expand --cuda`); simulator IR: 3,291 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L27
def softmax_kernel(_gn_context):  # L28
    _gn_fast = _gn_context.fast_path()       # L29
    _gn_DA = _gn_fast.DeviceArray            # L29
    _gn_sig_x = _gn_fast.signatures['x']     # L29
    _gn_sig_y = _gn_fast.signatures['y']     # L29
    _gn_pack = _gn_fast.pack                 # L29
    _gn_buf = _gn_fast.buffer                # L29
    _gn_address = _gn_fast.address           # L29
    _gn_launch = _gn_fast.launch             # L29
    _gn_fn = _gn_fast.function               # L29
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid   # L29
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block  # L29
    _gn_smem = _gn_fast.shared_mem_bytes     # L29
    _gn_stream = _gn_fast.stream             # L29
    _gn_ok = _gn_fast.success                # L29
    _gn_failed = _gn_fast.failed             # L29
    _gn_slow = _gn_fast.slow                 # L29
    return lambda x, y: (                                                                 # L30
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L30
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L30
            (_gn_pack(_gn_buf, 0, x.launch_args, y.launch_args) or _gn_address),          # L30
            0,                                                                            # L30
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L30
        # ... when every argument is exactly what the kernel was compiled for
        if x.__class__ is _gn_DA and x.launch_sig is _gn_sig_x                            # L30
        and y.__class__ is _gn_DA and y.launch_sig_mut is _gn_sig_y                       # L30
        and y.launch_base is not x.launch_base                                            # L30
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(x, y)                                                               # L30
    )                                                                                     # L30


def softmax(x, y):
    softmax_kernel.launch(GridDim1D(x.shape[0]), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, y)


def run(rows: int = 64, cols: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    y = gn.empty((rows, cols), gn.f32)
    y.fill(np.nan)
    softmax(gn.to_device(x), y)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return y.to_host(), e / e.sum(axis=1, keepdims=True)


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"softmax on {gn.backend()}: {out.shape}, max |error| {err:.2e}")
    assert err < 1e-6


if __name__ == "__main__":
    main()
