"""Tiled SGEMM: C = A @ B with 32x32 tiles staged through shared memory."""

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


# gpu_native: kernel sgemm_kernel, lines 25-50 of examples/sgemm.py, became the launcher
# factory below (`gpu-native expand --exact` prints the module as imported, with the
# full spec).
#   Kernel2D sgemm_kernel(a: CUDASlice2D[f32], b: CUDASlice2D[f32], c:
#       CUDASliceMut2D[f32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_sgemm_kernel (kernel id 0xe994eaacfea860e9)
#     traits: index32, uses_barriers, uses_shared
#     error sites: 1 assert (`expand --proofs` lists them)
#     launch check: assert block_dim.x == 32 and block_dim.y == 32 (line 27), once per
#       launch shape
#     launch check: block_idx.x * 32 + thread_idx.x stays within i32 (line 33), or the
#       launch is refused
#     CUDA C++: 5,193 characters (`expand --cuda`); simulator IR: 3,199 bytes
@gpu_kernel(Kernel2D, _spec=...)  # L25
def sgemm_kernel(_gn):  # L26
    return lambda a, b, c: (                                                             # L27
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn.launch(                                                         # L27
            _gn.function, _gn.grid_x, _gn.grid_y, _gn.grid_z, _gn.block_x, _gn.block_y,  # L27
            _gn.block_z, _gn.shared_mem_bytes, _gn.stream,                               # L27
            (_gn.pack(                                                                   # L27
                _gn.buffer, 0, a.launch_args, b.launch_args, c.launch_args,              # L27
            ) or _gn.address),                                                           # L27
            0,                                                                           # L27
        )[0]) is _gn.success or _gn.failed(_gn_err)) and None                            # L27
        # ... when every argument is exactly what the kernel was compiled for
        if a.__class__ is _gn.DeviceArray and a.launch_sig is _gn.sig_a                  # L27
        and b.__class__ is _gn.DeviceArray and b.launch_sig is _gn.sig_b                 # L27
        and c.__class__ is _gn.DeviceArray and c.launch_sig_mut is _gn.sig_c             # L27
        and c.launch_base is not a.launch_base and c.launch_base is not b.launch_base    # L27
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn.slow(a, b, c)                                                           # L27
    )                                                                                    # L27


def sgemm(a, b, c):
    m, n = c.shape
    grid = GridDim2D((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    sgemm_kernel.launch(grid, BlockDim2D(TILE, TILE), 0, DEFAULT_STREAM)(a, b, c)


def run(m: int = 256, k: int = 192, n: int = 160, seed=None):
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal((m, k), dtype=np.float32)
    b_host = rng.standard_normal((k, n), dtype=np.float32)
    c = gn.empty((m, n), gn.f32)
    c.fill(np.nan)
    sgemm(gn.to_device(a_host), gn.to_device(b_host), c)
    return c.to_host(), a_host.astype(np.float64) @ b_host.astype(np.float64)


def main():
    out, ref = run()
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"sgemm on {gn.backend()}: {out.shape}, relative error {rel:.2e}")
    assert rel < 1e-5


if __name__ == "__main__":
    main()
