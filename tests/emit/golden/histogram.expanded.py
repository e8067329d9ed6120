"""Histogram of bytes: per-block histograms in shared memory with atomics, merged into the global
histogram with one atomic per bin per block."""

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
    block_dim,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
    u8,
    u32,
)

BINS = 256


# gpu_native: kernel histogram_kernel, lines 27-37 of examples/histogram.py, became the
# launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D histogram_kernel(data: CUDASlice[u8], hist: CUDASliceMut[u32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_histogram_kernel (kernel id 0x66c3dafe60a69107)
#     traits: index32, uses_barriers, uses_shared
#     error sites: 1 assert, 1 bounds check (`expand --proofs` lists them)
#     launch check: assert block_dim.x == 256 (line 29), once per launch shape
#     CUDA C++: 2,471 characters (`expand --cuda`); simulator IR: 1,383 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L27
def histogram_kernel(_gn_context):  # L28
    _gn_fast = _gn_context.fast_path()          # L29
    _gn_DA = _gn_fast.DeviceArray               # L29
    _gn_sig_data = _gn_fast.signatures['data']  # L29
    _gn_sig_hist = _gn_fast.signatures['hist']  # L29
    _gn_pack = _gn_fast.pack                    # L29
    _gn_buf = _gn_fast.buffer                   # L29
    _gn_address = _gn_fast.address              # L29
    _gn_launch = _gn_fast.launch                # L29
    _gn_fn = _gn_fast.function                  # L29
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid      # L29
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block     # L29
    _gn_smem = _gn_fast.shared_mem_bytes        # L29
    _gn_stream = _gn_fast.stream                # L29
    _gn_ok = _gn_fast.success                   # L29
    _gn_failed = _gn_fast.failed                # L29
    _gn_slow = _gn_fast.slow                    # L29
    return lambda data, hist: (                                                           # L30
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L30
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L30
            (_gn_pack(_gn_buf, 0, data.launch_args, hist.launch_args) or _gn_address),    # L30
            0,                                                                            # L30
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L30
        # ... when every argument is exactly what the kernel was compiled for
        if data.__class__ is _gn_DA and data.launch_sig is _gn_sig_data                   # L30
        and hist.__class__ is _gn_DA and hist.launch_sig_mut is _gn_sig_hist              # L30
        and hist.launch_base is not data.launch_base                                      # L30
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(data, hist)                                                         # L30
    )                                                                                     # L30


def histogram(data, blocks: int = 128):
    hist = gn.zeros(BINS, gn.u32)
    histogram_kernel.launch(GridDim1D(blocks), BlockDim1D(BINS), 0, DEFAULT_STREAM)(data, hist)
    return hist


def run(n: int = 3_000_001, seed=None):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    # Skew the data so that some bins see heavy contention.
    data[: n // 4] = 7
    out = histogram(gn.to_device(data), blocks=48).to_host()
    return out, np.bincount(data, minlength=BINS).astype(np.float64)


def main():
    out, ref = run()
    print(f"histogram on {gn.backend()}: {int(out.sum())} samples, exact: "
          f"{np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
