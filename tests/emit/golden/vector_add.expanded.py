"""Vector add: the seed example, exactly as a user writes it.

Run it: ``python examples/vector_add.py`` (on the GPU if there is one, else on the simulator).
"""

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
    f32,
    gpu_kernel,
)


# gpu_native: kernel add_kernel, lines 23-26 of examples/vector_add.py, became the
# launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel1D add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_add_kernel (kernel id 0x5c95d8d2c54a13bb)
#     traits: uid_only, uid_vector4
#     error sites: 3 bounds checks (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 3,719 characters (`expand --cuda`); simulator IR: 797 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L23
def add_kernel(_gn_context):  # L24
    _gn_fast = _gn_context.fast_path()       # L25
    _gn_DA = _gn_fast.DeviceArray            # L25
    _gn_sig_a = _gn_fast.signatures['a']     # L25
    _gn_sig_b = _gn_fast.signatures['b']     # L25
    _gn_sig_c = _gn_fast.signatures['c']     # L25
    _gn_pack = _gn_fast.pack                 # L25
    _gn_buf = _gn_fast.buffer                # L25
    _gn_address = _gn_fast.address           # L25
    _gn_launch = _gn_fast.launch             # L25
    _gn_fn = _gn_fast.function               # L25
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid   # L25
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block  # L25
    _gn_smem = _gn_fast.shared_mem_bytes     # L25
    _gn_stream = _gn_fast.stream             # L25
    _gn_ok = _gn_fast.success                # L25
    _gn_failed = _gn_fast.failed             # L25
    _gn_slow = _gn_fast.slow                 # L25
    return lambda a, b, c: (                                                              # L26
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L26
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L26
            (_gn_pack(                                                                    # L26
                _gn_buf, 0, a.launch_args, b.launch_args, c.launch_args,                  # L26
            ) or _gn_address),                                                            # L26
            0,                                                                            # L26
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L26
        # ... when every argument is exactly what the kernel was compiled for
        if a.__class__ is _gn_DA and a.launch_sig is _gn_sig_a                            # L26
        and b.__class__ is _gn_DA and b.launch_sig is _gn_sig_b                           # L26
        and c.__class__ is _gn_DA and c.launch_sig_mut is _gn_sig_c                       # L26
        and c.launch_base is not a.launch_base and c.launch_base is not b.launch_base     # L26
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(a, b, c)                                                            # L26
    )                                                                                     # L26


def add(a, b, c):
    block_dim = 128
    grid_dim = (len(c) + block_dim - 1) // block_dim
    add_kernel.launch(GridDim1D(grid_dim), BlockDim1D(block_dim), 0, DEFAULT_STREAM)(a, b, c)


def run(n: int = 1_000_000, seed=None):
    """Add two random vectors on the device; return (result, float64 reference)."""
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal(n, dtype=np.float32)
    b_host = rng.standard_normal(n, dtype=np.float32)
    a, b = gn.to_device(a_host), gn.to_device(b_host)
    c = gn.empty(n, gn.f32)
    c.fill(np.nan)  # poison: every element must be written
    add(a, b, c)
    return c.to_host(), a_host.astype(np.float64) + b_host


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref))
    print(f"vector_add on {gn.backend()}: {len(out)} elements, max |error| = {err:.2e}")
    print("first elements:", out[:4])
    assert err < 1e-6


if __name__ == "__main__":
    main()
