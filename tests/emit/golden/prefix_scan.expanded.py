"""Inclusive prefix sum: a Hillis-Steele scan inside each block, a scan of the block totals,
then a pass adding each block's offset."""

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
    UniqueId,
    block_dim,
    block_idx,
    gpu_kernel,
    i32,
    shared_array,
    sync_threads,
    thread_idx,
)

BLOCK = 256


# gpu_native: kernel block_scan_kernel, lines 28-51 of examples/prefix_scan.py, became
# the launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D block_scan_kernel(x: CUDASlice[i32], out: CUDASliceMut[i32], block_sums:
#       CUDASliceMut[i32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_block_scan_kernel (kernel id 0x23c439211d768510)
#     traits: index32, uses_barriers, uses_shared
#     error sites: 1 assert, 2 bounds checks (`expand --proofs` lists them)
#     launch check: assert block_dim.x == 256 (line 30), once per launch shape
#     CUDA C++: 4,073 characters (`expand --cuda`); simulator IR: 2,351 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L28
def block_scan_kernel(_gn):  # L29
    return lambda x, out, block_sums: (                                                  # L30
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn.launch(                                                         # L30
            _gn.function, _gn.grid_x, _gn.grid_y, _gn.grid_z, _gn.block_x, _gn.block_y,  # L30
            _gn.block_z, _gn.shared_mem_bytes, _gn.stream,                               # L30
            (_gn.pack(                                                                   # L30
                _gn.buffer, 0, x.launch_args, out.launch_args, block_sums.launch_args,   # L30
            ) or _gn.address),                                                           # L30
            0,                                                                           # L30
        )[0]) is _gn.success or _gn.failed(_gn_err)) and None                            # L30
        # ... when every argument is exactly what the kernel was compiled for
        if x.__class__ is _gn.DeviceArray and x.launch_sig is _gn.sig_x                  # L30
        and out.__class__ is _gn.DeviceArray and out.launch_sig_mut is _gn.sig_out       # L30
        and block_sums.__class__ is _gn.DeviceArray                                      # L30
        and block_sums.launch_sig_mut is _gn.sig_block_sums                              # L30
        and out.launch_base is not x.launch_base                                         # L30
        and out.launch_base is not block_sums.launch_base                                # L30
        and block_sums.launch_base is not x.launch_base                                  # L30
        and block_sums.launch_base is not out.launch_base                                # L30
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn.slow(x, out, block_sums)                                                # L30
    )                                                                                    # L30


# gpu_native: kernel add_offsets_kernel, lines 54-59 of examples/prefix_scan.py, became
# the launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D add_offsets_kernel(out: CUDASliceMut[i32], scanned_sums: CUDASlice[i32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_add_offsets_kernel (kernel id 0x796f7e652fffc607)
#     traits: index32
#     error sites: 1 bounds check (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 2,063 characters (`expand --cuda`); simulator IR: 1,084 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L54
def add_offsets_kernel(_gn):  # L55
    return lambda out, scanned_sums: (                                                   # L56
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn.launch(                                                         # L56
            _gn.function, _gn.grid_x, _gn.grid_y, _gn.grid_z, _gn.block_x, _gn.block_y,  # L56
            _gn.block_z, _gn.shared_mem_bytes, _gn.stream,                               # L56
            (_gn.pack(                                                                   # L56
                _gn.buffer, 0, out.launch_args, scanned_sums.launch_args,                # L56
            ) or _gn.address),                                                           # L56
            0,                                                                           # L56
        )[0]) is _gn.success or _gn.failed(_gn_err)) and None                            # L56
        # ... when every argument is exactly what the kernel was compiled for
        if out.__class__ is _gn.DeviceArray and out.launch_sig_mut is _gn.sig_out        # L56
        and scanned_sums.__class__ is _gn.DeviceArray                                    # L56
        and scanned_sums.launch_sig is _gn.sig_scanned_sums                              # L56
        and out.launch_base is not scanned_sums.launch_base                              # L56
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn.slow(out, scanned_sums)                                                 # L56
    )                                                                                    # L56


def inclusive_scan(x):
    """Scan up to BLOCK * BLOCK elements."""
    n = len(x)
    blocks = (n + BLOCK - 1) // BLOCK
    if blocks > BLOCK:
        raise ValueError(f"this example scans at most {BLOCK * BLOCK} elements")
    out = gn.empty(n, gn.i32)
    sums = gn.empty(blocks, gn.i32)
    scanned = gn.empty(blocks, gn.i32)
    spare = gn.empty(1, gn.i32)
    block = BlockDim1D(BLOCK)
    block_scan_kernel.launch(GridDim1D(blocks), block, 0, DEFAULT_STREAM)(x, out, sums)
    block_scan_kernel.launch(GridDim1D(1), block, 0, DEFAULT_STREAM)(sums, scanned, spare)
    add_offsets_kernel.launch(GridDim1D(blocks), block, 0, DEFAULT_STREAM)(out, scanned)
    return out


def run(n: int = 50_000, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, n, dtype=np.int32)
    return inclusive_scan(gn.to_device(x)).to_host(), np.cumsum(x.astype(np.float64))


def main():
    out, ref = run()
    print(f"prefix_scan on {gn.backend()}: {len(out)} elements, exact: {np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
