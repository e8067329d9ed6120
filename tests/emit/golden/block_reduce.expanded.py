"""Sum reduction: a shared-memory tree inside each block, then warp shuffles, then one partial
sum per block (written by a single thread).  The host adds the partial sums."""

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
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    shfl_down,
    sync_threads,
    thread_idx,
)

THREADS = 256


# gpu_native: kernel block_sum_kernel, lines 28-51 of examples/block_reduce.py, became
# the launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D block_sum_kernel(x: CUDASlice[f32], partial: CUDASliceMut[f32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_block_sum_kernel (kernel id 0x1297cfe703e7cc62)
#     traits: index32, uses_barriers, uses_shared, uses_warp
#     error sites: 1 assert, 2 bounds checks (`expand --proofs` lists them)
#     launch check: assert block_dim.x == 256 (line 30), once per launch shape
#     CUDA C++: 4,415 characters (`expand --cuda`); simulator IR: 2,578 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L28
def block_sum_kernel(_gn_context):  # L29
    _gn_fast = _gn_context.fast_path()                # L30
    _gn_DA = _gn_fast.DeviceArray                     # L30
    _gn_sig_x = _gn_fast.signatures['x']              # L30
    _gn_sig_partial = _gn_fast.signatures['partial']  # L30
    _gn_pack = _gn_fast.pack                          # L30
    _gn_buf = _gn_fast.buffer                         # L30
    _gn_address = _gn_fast.address                    # L30
    _gn_launch = _gn_fast.launch                      # L30
    _gn_fn = _gn_fast.function                        # L30
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid            # L30
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block           # L30
    _gn_smem = _gn_fast.shared_mem_bytes              # L30
    _gn_stream = _gn_fast.stream                      # L30
    _gn_ok = _gn_fast.success                         # L30
    _gn_failed = _gn_fast.failed                      # L30
    _gn_slow = _gn_fast.slow                          # L30
    return lambda x, partial: (                                                           # L31
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L31
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L31
            (_gn_pack(_gn_buf, 0, x.launch_args, partial.launch_args) or _gn_address),    # L31
            0,                                                                            # L31
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L31
        # ... when every argument is exactly what the kernel was compiled for
        if x.__class__ is _gn_DA and x.launch_sig is _gn_sig_x                            # L31
        and partial.__class__ is _gn_DA and partial.launch_sig_mut is _gn_sig_partial     # L31
        and partial.launch_base is not x.launch_base                                      # L31
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(x, partial)                                                         # L31
    )                                                                                     # L31


def device_sum(x, blocks: int = 264) -> float:
    partial = gn.empty(blocks, gn.f32)
    block_sum_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, DEFAULT_STREAM)(x, partial)
    return float(partial.to_host().astype(np.float64).sum())


def run(n: int = 1 << 20, seed=None):
    rng = np.random.default_rng(seed)
    x_host = rng.standard_normal(n, dtype=np.float32)
    return device_sum(gn.to_device(x_host), blocks=64), float(x_host.astype(np.float64).sum())


def main():
    total, ref = run()
    print(f"block_reduce on {gn.backend()}: sum = {total:.4f}, reference = {ref:.4f}")
    assert abs(total - ref) <= 1e-3 * (1 + abs(ref))


if __name__ == "__main__":
    main()
