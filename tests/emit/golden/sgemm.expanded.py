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
def sgemm_kernel(_gn_context):  # L26
    _gn_fast = _gn_context.fast_path()       # L27
    _gn_DA = _gn_fast.DeviceArray            # L27
    _gn_sig_a = _gn_fast.signatures['a']     # L27
    _gn_sig_b = _gn_fast.signatures['b']     # L27
    _gn_sig_c = _gn_fast.signatures['c']     # L27
    _gn_pack = _gn_fast.pack                 # L27
    _gn_buf = _gn_fast.buffer                # L27
    _gn_address = _gn_fast.address           # L27
    _gn_launch = _gn_fast.launch             # L27
    _gn_fn = _gn_fast.function               # L27
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid   # L27
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block  # L27
    _gn_smem = _gn_fast.shared_mem_bytes     # L27
    _gn_stream = _gn_fast.stream             # L27
    _gn_ok = _gn_fast.success                # L27
    _gn_failed = _gn_fast.failed             # L27
    _gn_slow = _gn_fast.slow                 # L27
    return lambda a, b, c: (                                                              # L28
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L28
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L28
            (_gn_pack(                                                                    # L28
                _gn_buf, 0, a.launch_args, b.launch_args, c.launch_args,                  # L28
            ) or _gn_address),                                                            # L28
            0,                                                                            # L28
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L28
        # ... when every argument is exactly what the kernel was compiled for
        if a.__class__ is _gn_DA and a.launch_sig is _gn_sig_a                            # L28
        and b.__class__ is _gn_DA and b.launch_sig is _gn_sig_b                           # L28
        and c.__class__ is _gn_DA and c.launch_sig_mut is _gn_sig_c                       # L28
        and c.launch_base is not a.launch_base and c.launch_base is not b.launch_base     # L28
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(a, b, c)                                                            # L28
    )                                                                                     # L28


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
