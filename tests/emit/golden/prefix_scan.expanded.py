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
def block_scan_kernel(_gn_context):  # L29
    _gn_fast = _gn_context.fast_path()                      # L30
    _gn_DA = _gn_fast.DeviceArray                           # L30
    _gn_sig_x = _gn_fast.signatures['x']                    # L30
    _gn_sig_out = _gn_fast.signatures['out']                # L30
    _gn_sig_block_sums = _gn_fast.signatures['block_sums']  # L30
    _gn_pack = _gn_fast.pack                                # L30
    _gn_buf = _gn_fast.buffer                               # L30
    _gn_address = _gn_fast.address                          # L30
    _gn_launch = _gn_fast.launch                            # L30
    _gn_fn = _gn_fast.function                              # L30
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid                  # L30
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block                 # L30
    _gn_smem = _gn_fast.shared_mem_bytes                    # L30
    _gn_stream = _gn_fast.stream                            # L30
    _gn_ok = _gn_fast.success                               # L30
    _gn_failed = _gn_fast.failed                            # L30
    _gn_slow = _gn_fast.slow                                # L30
    return lambda x, out, block_sums: (                                                   # L31
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L31
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L31
            (_gn_pack(                                                                    # L31
                _gn_buf, 0, x.launch_args, out.launch_args, block_sums.launch_args,       # L31
            ) or _gn_address),                                                            # L31
            0,                                                                            # L31
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L31
        # ... when every argument is exactly what the kernel was compiled for
        if x.__class__ is _gn_DA and x.launch_sig is _gn_sig_x                            # L31
        and out.__class__ is _gn_DA and out.launch_sig_mut is _gn_sig_out                 # L31
        and block_sums.__class__ is _gn_DA                                                # L31
        and block_sums.launch_sig_mut is _gn_sig_block_sums                               # L31
        and out.launch_base is not x.launch_base                                          # L31
        and out.launch_base is not block_sums.launch_base                                 # L31
        and block_sums.launch_base is not x.launch_base                                   # L31
        and block_sums.launch_base is not out.launch_base                                 # L31
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(x, out, block_sums)                                                 # L31
    )                                                                                     # L31


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
def add_offsets_kernel(_gn_context):  # L55
    _gn_fast = _gn_context.fast_path()                          # L56
    _gn_DA = _gn_fast.DeviceArray                               # L56
    _gn_sig_out = _gn_fast.signatures['out']                    # L56
    _gn_sig_scanned_sums = _gn_fast.signatures['scanned_sums']  # L56
    _gn_pack = _gn_fast.pack                                    # L56
    _gn_buf = _gn_fast.buffer                                   # L56
    _gn_address = _gn_fast.address                              # L56
    _gn_launch = _gn_fast.launch                                # L56
    _gn_fn = _gn_fast.function                                  # L56
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid                      # L56
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block                     # L56
    _gn_smem = _gn_fast.shared_mem_bytes                        # L56
    _gn_stream = _gn_fast.stream                                # L56
    _gn_ok = _gn_fast.success                                   # L56
    _gn_failed = _gn_fast.failed                                # L56
    _gn_slow = _gn_fast.slow                                    # L56
    return lambda out, scanned_sums: (                                                    # L57
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L57
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L57
            (_gn_pack(                                                                    # L57
                _gn_buf, 0, out.launch_args, scanned_sums.launch_args,                    # L57
            ) or _gn_address),                                                            # L57
            0,                                                                            # L57
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L57
        # ... when every argument is exactly what the kernel was compiled for
        if out.__class__ is _gn_DA and out.launch_sig_mut is _gn_sig_out                  # L57
        and scanned_sums.__class__ is _gn_DA                                              # L57
        and scanned_sums.launch_sig is _gn_sig_scanned_sums                               # L57
        and out.launch_base is not scanned_sums.launch_base                               # L57
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(out, scanned_sums)                                                  # L57
    )                                                                                     # L57


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
