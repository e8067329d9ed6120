"""N-body accelerations: every body against every other, softened gravity, one thread per body."""

import math

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice2D,
    CUDASliceMut2D,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    UniqueId,
    f32,
    gpu_kernel,
)


# gpu_native: kernel accelerations_kernel, lines 22-43 of examples/nbody.py, became the
# launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D accelerations_kernel(bodies: CUDASlice2D[f32], acc: CUDASliceMut2D[f32],
#       softening: f32)
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_accelerations_kernel (kernel id 0x0727ccc5af95ae5a)
#     traits: uid_only
#     error sites: 9 bounds checks (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 5,524 characters (`expand --cuda`); simulator IR: 2,996 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L22
def accelerations_kernel(_gn_context):  # L23
    _gn_fast = _gn_context.fast_path()              # L24
    _gn_DA = _gn_fast.DeviceArray                   # L24
    _gn_float = _gn_fast.float                      # L24
    _gn_sig_bodies = _gn_fast.signatures['bodies']  # L24
    _gn_sig_acc = _gn_fast.signatures['acc']        # L24
    _gn_pack = _gn_fast.pack                        # L24
    _gn_buf = _gn_fast.buffer                       # L24
    _gn_address = _gn_fast.address                  # L24
    _gn_launch = _gn_fast.launch                    # L24
    _gn_fn = _gn_fast.function                      # L24
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid          # L24
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block         # L24
    _gn_smem = _gn_fast.shared_mem_bytes            # L24
    _gn_stream = _gn_fast.stream                    # L24
    _gn_ok = _gn_fast.success                       # L24
    _gn_failed = _gn_fast.failed                    # L24
    _gn_slow = _gn_fast.slow                        # L24
    return lambda bodies, acc, softening: (                                               # L25
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L25
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L25
            (_gn_pack(                                                                    # L25
                _gn_buf, 0, bodies.launch_args, acc.launch_args, softening,               # L25
            ) or _gn_address),                                                            # L25
            0,                                                                            # L25
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L25
        # ... when every argument is exactly what the kernel was compiled for
        if bodies.__class__ is _gn_DA and bodies.launch_sig is _gn_sig_bodies             # L25
        and acc.__class__ is _gn_DA and acc.launch_sig_mut is _gn_sig_acc                 # L25
        and softening.__class__ is _gn_float                                              # L25
        and -3.4028235677973366e+38 < softening < 3.4028235677973366e+38                  # L25
        and acc.launch_base is not bodies.launch_base                                     # L25
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(bodies, acc, softening)                                             # L25
    )                                                                                     # L25


def accelerations(bodies, acc, softening: float = 0.01):
    n = bodies.shape[0]
    accelerations_kernel.launch(GridDim1D((n + 127) // 128), BlockDim1D(128), 0,
                                DEFAULT_STREAM)(bodies, acc, softening)


def reference(bodies: np.ndarray, softening: float = 0.01) -> np.ndarray:
    b = bodies.astype(np.float64)
    d = b[None, :, :3] - b[:, None, :3]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + softening * softening)
    return (d * (b[None, :, 3] * inv**3)[:, :, None]).sum(axis=1)


def run(n: int = 1000, seed=None):
    rng = np.random.default_rng(seed)
    bodies = np.concatenate([rng.standard_normal((n, 3)), rng.random((n, 1))], axis=1)
    bodies = bodies.astype(np.float32)
    acc = gn.empty((n, 3), gn.f32)
    acc.fill(np.nan)
    accelerations(gn.to_device(bodies), acc)
    return acc.to_host(), reference(bodies)


def main():
    out, ref = run()
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"nbody on {gn.backend()}: {len(out)} bodies, relative error {rel:.2e}")
    assert rel < 1e-4


if __name__ == "__main__":
    main()
