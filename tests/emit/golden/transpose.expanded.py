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
def transpose_kernel(_gn):  # L26
    return lambda src, dst: (                                                            # L27
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn.launch(                                                         # L27
            _gn.function, _gn.grid_x, _gn.grid_y, _gn.grid_z, _gn.block_x, _gn.block_y,  # L27
            _gn.block_z, _gn.shared_mem_bytes, _gn.stream,                               # L27
            (_gn.pack(_gn.buffer, 0, src.launch_args, dst.launch_args) or _gn.address),  # L27
            0,                                                                           # L27
        )[0]) is _gn.success or _gn.failed(_gn_err)) and None                            # L27
        # ... when every argument is exactly what the kernel was compiled for
        if src.__class__ is _gn.DeviceArray and src.launch_sig is _gn.sig_src            # L27
        and dst.__class__ is _gn.DeviceArray and dst.launch_sig_mut is _gn.sig_dst       # L27
        and dst.launch_base is not src.launch_base                                       # L27
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn.slow(src, dst)                                                          # L27
    )                                                                                    # L27


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
