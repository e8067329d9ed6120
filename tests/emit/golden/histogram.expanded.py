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
def histogram_kernel(_gn):  # L28
    return lambda data, hist: (                                                          # L29
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn.launch(                                                         # L29
            _gn.function, _gn.grid_x, _gn.grid_y, _gn.grid_z, _gn.block_x, _gn.block_y,  # L29
            _gn.block_z, _gn.shared_mem_bytes, _gn.stream,                               # L29
            (_gn.pack(                                                                   # L29
                _gn.buffer, 0, data.launch_args, hist.launch_args,                       # L29
            ) or _gn.address),                                                           # L29
            0,                                                                           # L29
        )[0]) is _gn.success or _gn.failed(_gn_err)) and None                            # L29
        # ... when every argument is exactly what the kernel was compiled for
        if data.__class__ is _gn.DeviceArray and data.launch_sig is _gn.sig_data         # L29
        and hist.__class__ is _gn.DeviceArray and hist.launch_sig_mut is _gn.sig_hist    # L29
        and hist.launch_base is not data.launch_base                                     # L29
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn.slow(data, hist)                                                        # L29
    )                                                                                    # L29


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
