"""2-D heat equation: explicit 5-point stencil steps, ping-ponging between two grids."""

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASlice2D,
    CUDASliceMut2D,
    FlatLayout2D,
    GridDim2D,
    Kernel2D,
    f32,
    gpu_kernel,
)


# gpu_native: kernel heat_step, lines 19-29 of examples/heat_stencil.py, became the
# launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel2D heat_step(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32], alpha: f32)
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_heat_step (kernel id 0xdcd4fc537acef57d)
#     traits: index32
#     error sites: 8 bounds checks (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 4,082 characters (`expand --cuda`); simulator IR: 2,185 bytes
@gpu_kernel(Kernel2D, _spec=...)  # L19
def heat_step(_gn_context):  # L20
    _gn_fast = _gn_context.fast_path()        # L21
    _gn_DA = _gn_fast.DeviceArray             # L21
    _gn_float = _gn_fast.float                # L21
    _gn_sig_src = _gn_fast.signatures['src']  # L21
    _gn_sig_dst = _gn_fast.signatures['dst']  # L21
    _gn_pack = _gn_fast.pack                  # L21
    _gn_buf = _gn_fast.buffer                 # L21
    _gn_address = _gn_fast.address            # L21
    _gn_launch = _gn_fast.launch              # L21
    _gn_fn = _gn_fast.function                # L21
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid    # L21
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block   # L21
    _gn_smem = _gn_fast.shared_mem_bytes      # L21
    _gn_stream = _gn_fast.stream              # L21
    _gn_ok = _gn_fast.success                 # L21
    _gn_failed = _gn_fast.failed              # L21
    _gn_slow = _gn_fast.slow                  # L21
    return lambda src, dst, alpha: (                                                      # L22
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L22
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L22
            (_gn_pack(                                                                    # L22
                _gn_buf, 0, src.launch_args, dst.launch_args, alpha,                      # L22
            ) or _gn_address),                                                            # L22
            0,                                                                            # L22
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L22
        # ... when every argument is exactly what the kernel was compiled for
        if src.__class__ is _gn_DA and src.launch_sig is _gn_sig_src                      # L22
        and dst.__class__ is _gn_DA and dst.launch_sig_mut is _gn_sig_dst                 # L22
        and alpha.__class__ is _gn_float                                                  # L22
        and -3.4028235677973366e+38 < alpha < 3.4028235677973366e+38                      # L22
        and dst.launch_base is not src.launch_base                                        # L22
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(src, dst, alpha)                                                    # L22
    )                                                                                     # L22


def simulate(grid_host: np.ndarray, steps: int, alpha: float = 0.2) -> np.ndarray:
    h, w = grid_host.shape
    a = gn.to_device(grid_host)
    b = gn.empty((h, w), gn.f32)
    launch = heat_step.launch(GridDim2D((w + 15) // 16, (h + 15) // 16), BlockDim2D(16, 16), 0,
                              DEFAULT_STREAM)
    for _ in range(steps):
        launch(a, b, alpha)
        a, b = b, a
    return a.to_host()


def reference(grid_host: np.ndarray, steps: int, alpha: float = 0.2) -> np.ndarray:
    u = grid_host.astype(np.float32)
    a = np.float32(alpha)
    for _ in range(steps):
        v = u.copy()
        around = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + a * (around - np.float32(4.0) * u[1:-1, 1:-1])
        u = v
    return u.astype(np.float64)


def run(h: int = 97, w: int = 130, steps: int = 20, seed=None):
    rng = np.random.default_rng(seed)
    start = rng.random((h, w), dtype=np.float32)
    return simulate(start, steps), reference(start, steps)


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"heat_stencil on {gn.backend()}: {out.shape}, max |error| {err:.2e}")
    assert err < 1e-5


if __name__ == "__main__":
    main()
