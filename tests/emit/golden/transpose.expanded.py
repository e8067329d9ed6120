"""Matrix transpose through a padded shared-memory tile (the padding avoids bank conflicts)."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASlice2D,
    CUDASliceMut2D,
    GridDim2D,
    Kernel2D,
    block_dim,
    block_idx,
    f32,
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
)

TILE = 32


# gpu_native: kernel transpose_kernel, lines 25-39 of examples/transpose.py, became the
# launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel2D transpose_kernel(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_transpose_kernel (kernel id 0x24f25f25cdf98d35)
#     traits: index32, uses_barriers, uses_shared
#     error sites: 1 assert (`expand --proofs` lists them)
#     launch check: assert block_dim.x == 32 and block_dim.y == 32 (line 27), once per
#       launch shape
#     launch check: block_idx.x * 32 + thread_idx.x stays within i32 (line 31), or the
#       launch is refused
#     launch check: block_idx.x * 32 + thread_idx.y stays within i32 (line 37), or the
#       launch is refused
#     CUDA C++: 3,106 characters (`expand --cuda`); simulator IR: 2,233 bytes
@gpu_kernel(Kernel2D, _spec=...)  # L25
def transpose_kernel(_gn_context):  # L26
    _gn_fast = _gn_context.fast_path()        # L27
    _gn_DA = _gn_fast.DeviceArray             # L27
    _gn_sig_src = _gn_fast.signatures['src']  # L27
    _gn_sig_dst = _gn_fast.signatures['dst']  # L27
    _gn_pack = _gn_fast.pack                  # L27
    _gn_buf = _gn_fast.buffer                 # L27
    _gn_address = _gn_fast.address            # L27
    _gn_launch = _gn_fast.launch              # L27
    _gn_fn = _gn_fast.function                # L27
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid    # L27
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block   # L27
    _gn_smem = _gn_fast.shared_mem_bytes      # L27
    _gn_stream = _gn_fast.stream              # L27
    _gn_ok = _gn_fast.success                 # L27
    _gn_failed = _gn_fast.failed              # L27
    _gn_slow = _gn_fast.slow                  # L27
    return lambda src, dst: (                                                             # L28
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L28
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L28
            (_gn_pack(_gn_buf, 0, src.launch_args, dst.launch_args) or _gn_address),      # L28
            0,                                                                            # L28
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L28
        # ... when every argument is exactly what the kernel was compiled for
        if src.__class__ is _gn_DA and src.launch_sig is _gn_sig_src                      # L28
        and dst.__class__ is _gn_DA and dst.launch_sig_mut is _gn_sig_dst                 # L28
        and dst.launch_base is not src.launch_base                                        # L28
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(src, dst)                                                           # L28
    )                                                                                     # L28


def transpose(src, dst):
    rows, cols = src.shape
    grid = GridDim2D((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    transpose_kernel.launch(grid, BlockDim2D(TILE, TILE), 0, DEFAULT_STREAM)(src, dst)


def run(rows: int = 300, cols: int = 170, seed=None):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    dst = gn.empty((cols, rows), gn.f32)
    dst.fill(np.nan)
    transpose(gn.to_device(src), dst)
    return dst.to_host(), src.T.astype(np.float64)


def main():
    out, ref = run()
    print(f"transpose on {gn.backend()}: {ref.shape[::-1]} -> {out.shape}, "
          f"exact: {np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
