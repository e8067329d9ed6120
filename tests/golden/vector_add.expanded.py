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


@gpu_kernel(Kernel1D, _spec=('gpu_native.KernelSpec', 3, '0.1.0', 'add_kernel', 'vector_add', 'examples/vector_add.py', 23, 1, (('a', 'f32', 1, False), ('b', 'f32', 1, False), ('c', 'f32', 1, True)), (), (True, False, None), (((), 'gn_add_kernel', 6671476822783955899, '// gpu_native 0.1.0: kernel add_kernel of vector_add (generated; do not edit)\n#define GN_KERNEL_ID 0x5c95d8d2c54a13bbull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_add_kernel(\n    const float* __restrict__ a,\n    gn_i64 __gn_a_n0,\n    const float* __restrict__ b,\n    gn_i64 __gn_b_n0,\n    float* __restrict__ c,\n    gn_i64 __gn_c_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long idx{};\n#line 24 "vector_add.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if ((((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_a_n0) & (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_b_n0) & (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_c_n0)) return;\n#line 25 "vector_add.py"\n    idx = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);\n#line 26 "vector_add.py"\n    c[gn_chk(__gn_err, idx, __gn_c_n0, 2u)] = (a[gn_chk(__gn_err, idx, __gn_a_n0, 0u)] + b[gn_chk(__gn_err, idx, __gn_b_n0, 1u)]);\n}\n\n// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).\nextern "C" __global__ void gn_add_kernel_uids(\n    const float* __restrict__ a,\n    gn_i64 __gn_a_n0,\n    const float* __restrict__ b,\n    gn_i64 __gn_b_n0,\n    float* __restrict__ c,\n    gn_i64 __gn_c_n0,\n    gn_error_record* __restrict__ __gn_err,\n    gn_i64 __gn_total,\n    unsigned int __gn_block)\n{\n    long long idx{};\n    // Every uid-indexed array is read and written 16 bytes (4 uids) at a time where the pointers are aligned and the 4 uids lie inside every array.\n    gn_i64 __gn_n = __gn_total; __gn_n = __gn_b_n0 < __gn_n ? __gn_b_n0 : __gn_n; __gn_n = __gn_a_n0 < __gn_n ? __gn_a_n0 : __gn_n; __gn_n = __gn_c_n0 < __gn_n ? __gn_c_n0 : __gn_n;\n    const bool __gn_aligned = (((gn_u64)b | (gn_u64)a | (gn_u64)c) & 15) == 0;\n    const gn_i64 __gn_chunks = (__gn_total + 3) / 4;\n    for (gn_i64 __gn_chunk = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_chunk < __gn_chunks; __gn_chunk += (gn_i64)gridDim.x * blockDim.x) {\n        const gn_i64 __gn_base = __gn_chunk * 4;\n        if (__gn_aligned && __gn_base + 4 <= __gn_n) {\n            float4 __gnv_b = *reinterpret_cast<const float4*>(b + __gn_base);\n            float4 __gnv_a = *reinterpret_cast<const float4*>(a + __gn_base);\n            float4 __gnv_c;\n#line 24 "vector_add.py"\n#line 25 "vector_add.py"\n            idx = (__gn_base + 0);\n#line 26 "vector_add.py"\n            __gnv_c.x = (__gnv_a.x + __gnv_b.x);\n#line 24 "vector_add.py"\n#line 25 "vector_add.py"\n            idx = (__gn_base + 1);\n#line 26 "vector_add.py"\n            __gnv_c.y = (__gnv_a.y + __gnv_b.y);\n#line 24 "vector_add.py"\n#line 25 "vector_add.py"\n            idx = (__gn_base + 2);\n#line 26 "vector_add.py"\n            __gnv_c.z = (__gnv_a.z + __gnv_b.z);\n#line 24 "vector_add.py"\n#line 25 "vector_add.py"\n            idx = (__gn_base + 3);\n#line 26 "vector_add.py"\n            __gnv_c.w = (__gnv_a.w + __gnv_b.w);\n            *reinterpret_cast<float4*>(c + __gn_base) = __gnv_c;\n        } else {\n            for (gn_i64 __gn_uid = __gn_base; __gn_uid < __gn_base + 4 && __gn_uid < __gn_total; ++__gn_uid) {\n#line 24 "vector_add.py"\n                // grid tail: this thread\'s uid lies past every array it indexes\n                if ((__gn_uid >= __gn_a_n0) & (__gn_uid >= __gn_b_n0) & (__gn_uid >= __gn_c_n0)) goto __gn_next;\n#line 25 "vector_add.py"\n                idx = __gn_uid;\n#line 26 "vector_add.py"\n                c[gn_chk_at(__gn_err, idx, __gn_c_n0, 2u, __gn_uid, __gn_block)] = (a[gn_chk_at(__gn_err, idx, __gn_a_n0, 0u, __gn_uid, __gn_block)] + b[gn_chk_at(__gn_err, idx, __gn_b_n0, 1u, __gn_uid, __gn_block)]);\n                __gn_next:;\n            }\n        }\n    }\n}\n\n', (('index', 26, 13, 19, 'a', 0, 1, ''), ('index', 26, 22, 28, 'b', 0, 1, ''), ('index', 26, 4, 10, 'c', 0, 1, '')), ('uid_only', 'uid_vector4'), (), b'x\xda\xc5W\xddS\x131\x10\xbf\x96\x16\x8a\n( \xf2\xa5\x9e\xa0x\x08\xf2\xa1\xe0\x033> \xd8\x19\x06\x84\x19[|a\x18&\xbdK;\x19\x8f\xbb\xf3z\xe7\xb4\xff\xbd\xd9\xa4\xd9p|84\xad\xe3=\xecl\xb2\xd9\xe4\xb7\x9b\xdf&9g\xc0\xb2,\x96\xe3"}\xcc\xc5\xd6\xd6\xc66\xf1H}\xc3\xad\x91\x9a\xe7m8\x9b\xbc\xd3\x11\xe6\x02\x17\x1es\x13g\x10Z\x0f\xb8\xa8\x84i\xec\xd2JD\x82t\x8a7i\x8b\\F>m\xae\xff\xa6n\x12\xc6\x17\xc4\xf3\xd6\xa26\x9b\x86\x05\xc0\x99\x8d\x82\xe3!LC\xeb6\xb7^\xfc\xa4q@}\x87\xec\xd8{\xa7\xfb\xbb\x15\x9f\xb9\xf4\xac\xfe\xf1\xc3\xf9\xaa]\xbb\xd9\xe5^\xe9\xfa\x96&\xa2wy\xc7)\xc1\xa4\x8f\xb88\x14\x93Uc\xc2\x92f\xb5,>\x07\x96MG\xd0x\x12%,\x0c\xb8\xf5\xb8\xdb f1\x08\xf0I\xe7\xb9\xb0\xf9\xe7\x9e1\xafun\x7f\xb6\x89TV\xec\x9aP$*\x18_a\teyh\x15\xc1;\xf0h\xeb,\xa7&KAs\x99\x85[\x00\x9a\x114\xb0\xb3y\x03h\xb9[\xa0\r*h\xb5~@\x83\xf4\xb3\t\x03h\xd6-\xd0J\n\x1a\xe9\x11\xda\x0cn\xe8\x108.u\xa0q\x18;\xf6i\xc0~\xa5\xf4\xc0\xe3\x08\xcb>I\x8eH;L\x93\xcd\xfd\xb5\x94y\xce\xb2\x93\xc7\x85\\\xe2\x93\xf8 \xa8\x87\xa9(\xa2O[\xd7m\xd5vD%\xee\x87\x00\x11b\x11C\x7f\x90X\xbax\x9d\xb0\x80\xbfR\x03\xe7\xb2Q\x9eE\x9d\xcd\xdd+\xcf\x05\x95\xd9\xa3\x90\xe3\x94\x0b\x8f"\x04\rf\xc4 \xb1\x02\xc6\x02\x88\xc5\x7fQ\xeewe\x9f\x9b\xef\xce\xfe\x13\x8cc\x98\x8b\xdd8&mm\x1cW<*\xa70\xa4\xe1\x875\xe2\x1fg7K\x14\x83\x1c>\x81\xd9\x81\xf3\xb2j^\xad\xcf\xee\xbfU%\x85\xfa;\xad\xcb\xb5\x9f"\n\x8dg\x12\xa3,\x88\xad%\x9e.g\x1d\xaa\xd4\xa6\xd4\xb1.\x9bc\xaa)\x12a\x14\xd3\x98Z\xc0\x8c~\xd3\xfd\xa4\xdf\x98\xda\x9e\xbe\xd3\xafW\x12\x119|\x0ec\x9c5&\xd1\x08^\xa9\xa6$z\x8e(4\x9e\xf9;HT\xba\x85D/\xb2$\x9aA\x12\xf5vWtq\x8dA~\xbf\xb0\xe0$\x92\x08\xec\x0cH\x91\xf0\x15\xd9~\x89\x16(\xbbc\xb3\x13\x16|\xd8\xb01\xc5\x17\xfaI\xf1mq\xe3\xfc\x17\x8aW\xffNqW\x0e\x7f\x831\xbe6\xa6\xb8\xb8\x9f\x8b\xbdP\xfc-\xa2\xd0x\x96L\xd9Y\xb8?;\x87\xd4\xfeW\xf8$\x9d\x04.#\x02\'[8\x8bX8y\xec{\xa5\xd2\n\x8f\x0e\x93\xb7\xcd\xa4\n\xb5\x9b\xb7MQ=\xa6O\x99\xb7\x17^Fa@\x83D\x02Z\xc9\xb0W\x9c\x0e\x8d\x98y\xac\xb7\xc7W\xb7\x00\xc56\xc3j\xbb\xcd&k\x04\x12\xd0\xfbL9Im\x15`\r(RT\t\xf3\xbf\xb6X\'\x94\x9c\xb29\xf9\x9bg\x99\x0c(\x7f\xf3\xa6\xbcnp\xb2\x86q\x85L\xfej\x88l\xe8\x92\x14M\x9d\x04\xf1O\xd2\x08.\xf4\x00\rJ\x9f\xc3\xfaZ\xbfB\xdc\\\xf6\xec\xb0Ph\xdfu\xd4\xd6P{\x97\x1d2\x8c\xda\x10jE\xd4\xf48\x1dn.\xbb\x9a\x85\x06\xd0\xfe\x00\xeeR\xee\x1c'),)))
def add_kernel(_gn_context):
    _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; _gn_sig_a = _gn_fast.signatures['a']; _gn_sig_b = _gn_fast.signatures['b']; _gn_sig_c = _gn_fast.signatures['c']; _gn_pack = _gn_fast.pack; _gn_buf = _gn_fast.buffer; _gn_address = _gn_fast.address; _gn_launch = _gn_fast.launch; _gn_fn = _gn_fast.function; _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid; _gn_bx, _gn_by, _gn_bz = _gn_fast.block; _gn_smem = _gn_fast.shared_mem_bytes; _gn_stream = _gn_fast.stream; _gn_ok = _gn_fast.success; _gn_failed = _gn_fast.failed; _gn_slow = _gn_fast.slow
    return lambda a, b, c: (((_gn_err := _gn_launch(_gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream, (_gn_pack(_gn_buf, 0, a.launch_args, b.launch_args, c.launch_args) or _gn_address), 0)[0]) is _gn_ok or _gn_failed(_gn_err)) and None) if a.__class__ is _gn_DA and a.launch_sig is _gn_sig_a and b.__class__ is _gn_DA and b.launch_sig is _gn_sig_b and c.__class__ is _gn_DA and c.launch_sig_mut is _gn_sig_c and c.launch_base is not a.launch_base and c.launch_base is not b.launch_base else _gn_slow(a, b, c)


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
