"""SAXPY with a grid-stride loop: ``out = alpha * x + y`` with any grid size."""

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
    f32,
    gpu_kernel,
)


@gpu_kernel(Kernel1D, _spec=('gpu_native.KernelSpec', 3, '0.1.0', 'saxpy_kernel', 'saxpy', 'examples/saxpy.py', 19, 1, (('alpha', 'f32', 0, False), ('x', 'f32', 1, False), ('y', 'f32', 1, False), ('out', 'f32', 1, True)), (), (True, False, None), (((), 'gn_saxpy_kernel', 3908228492936078065, '// gpu_native 0.1.0: kernel saxpy_kernel of saxpy (generated; do not edit)\n#define GN_KERNEL_ID 0x363cd11b8e83e2f1ull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_saxpy_kernel(\n    float alpha,\n    const float* __restrict__ x,\n    gn_i64 __gn_x_n0,\n    const float* __restrict__ y,\n    gn_i64 __gn_y_n0,\n    float* __restrict__ out,\n    gn_i64 __gn_out_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long i{};\n#line 21 "saxpy.py"\n    {\n        const gn_i64 __gn_stop0 = __gn_out_n0;\n        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {\n            i = __gn_i0;\n#line 22 "saxpy.py"\n            out[i] = ((alpha * x[gn_chk(__gn_err, i, __gn_x_n0, 0u)]) + y[gn_chk(__gn_err, i, __gn_y_n0, 1u)]);\n        }\n    }\n}\n\n// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).\nextern "C" __global__ void gn_saxpy_kernel_uids(\n    float alpha,\n    const float* __restrict__ x,\n    gn_i64 __gn_x_n0,\n    const float* __restrict__ y,\n    gn_i64 __gn_y_n0,\n    float* __restrict__ out,\n    gn_i64 __gn_out_n0,\n    gn_error_record* __restrict__ __gn_err,\n    gn_i64 __gn_total,\n    unsigned int __gn_block)\n{\n    long long i{};\n    for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {\n#line 21 "saxpy.py"\n        {\n            const gn_i64 __gn_stop0 = __gn_out_n0;\n            for (gn_i64 __gn_i0 = __gn_uid; __gn_i0 < __gn_stop0; __gn_i0 += __gn_total) {\n                i = __gn_i0;\n#line 22 "saxpy.py"\n                out[i] = ((alpha * x[gn_chk_at(__gn_err, i, __gn_x_n0, 0u, __gn_uid, __gn_block)]) + y[gn_chk_at(__gn_err, i, __gn_y_n0, 1u, __gn_uid, __gn_block)]);\n            }\n        }\n    }\n}\n\n', (('index', 22, 25, 29, 'x', 0, 1, ''), ('index', 22, 32, 36, 'y', 0, 1, '')), ('uid_only',), (), b'x\xda\xcdW\xddS\xd3@\x10O\xa1@UP\xaa\x14\xe5C<>\xd4P\x10\nT\x1e\x98\xf1\x01a\xea8b\x99\xb1\xd5\x97\x0e\xc3\x1c\xcd\x15n\x8cI&Mf\x9a\xff\xde\xdb\xbb\xde\xa5\x81\xf6!\x17d\xec\xc3v\xf76w\xfb\xdb\xcf\\\xccq\xc30h\x8e\x91p\x96\x91j\xb5\xf2\x11[\xb8Si_\xe1+\xcb\xaa\x98\x87l\xd1\xe4\xea<#\x16m\x07\xe6$H\x8f\x19i\xb8\xa1\xdf&\r\x0f;a\x91\x89\xa4\x87\xffx6\xe9\xeevq\xcf\x8bv\xbc\x88\xce\xc1\xd9\xb0\x8f\xc2\xd9a\x0bN \x1d\xc4\xf5\x97\xbf\x89\xef\x10\xdb\xc4\xb6w\x83\x8fP\xe7`\x7f\x1b\xf5\x8e\xd0\xc9\xcf\xd3\xe3\x86M\xdb\xa4\xc5V.\xb6Qtw\xc9\r\x83\x81\xc5\xefa\xc0\xd77\x8f\xcc\x02\x18\x99f\xe4\x1b?\xba\xe9c\x1at\x9b5\xfe3\x01F8\xa3\x94\xe7^@]\x87i\xeb)\xfc\x99\x07W\x10\x90\r\xd8\x03\x04\xf5\x7f\x0cT\x8b^\xa0O\x88\xfb\x83\xca\xa8\x07\xe2\x16\x8a\xd8\x9f\x00\x06\x00\x1a4 "\xd8\x13p\x8ac\x91^+\'\x83\x14\x02\x17QC%\x04\xb8\xb4\xe8\x16\x80\xbc\xce\x80\xce\x18\x82nR\xa2\xeb\xe9\xa3+\xc1F0E\x1f\xc1\x9eJ\x1f]\xc7\xf5\x11E\xd4A5\x1b\x07g8bH\xf7Nw\xae}j]v\x03F\x89i\x13\xc7d\xab\x9b,\xc1c\xcaZ\x1b\xdb\xd8\xff\xeat\xdc\x90\xd7\xefa\xf5\xb6\xae\x19yD\x80\x07s&8\xc4\x1f\xfd\x85}\xee\t\x15J\xd8 8\x80VK\x1b\xed5 \xeb\xa9\xa2\x9d\x97\xf1=s\x19Pa{Z\xa1\x88\xf1<I\x17^\xdej\x10T\xba\xf7\x10\xad6*\x13L=:\x13\xcf\x94K\x90\x93c\xdf\xc7Q\xac\x9c\x95\x85U\x0b\xe1\x91k\xdb\xbd\xc2v\xfdn\xe2"\xf1xQ\x05\xea)#M\xad&^M\x9f\xb8\x82\x04\xfe\x83t\x84\xf9\x17\nH\x0c\xe9\xb9r4\xcf\x13\x8d\xad\xb8\xcbco\x057\'\x07\xac\x10g\xa4\xc8c\x91\xd6\xad% \xcb\x99\xebq\xfe\x9e\xea\x11\xe6\x10]y\x88z\xccZU\xfdA\xb7\xa0\xdc}\xa5SU|\xf8.\xdeGU-) 1\xa4\xc5\x11U59\xa4\xaa\x96\x93U\xf5RU\x95\xa1\x91\xc6\xa2\xac\x89\x7f\x9e\xc6D^@\xe0g\xdfvnE\'7\xb1\x13\x99Z\x03\r\t\xf6\x1b\x8dN-j\xbe\xa7\x01\xceg\xea\x9c{\xc2\xf4Z\x02\x0e/\xe5\xb2\x90W\x95\x06\xac\xd4kZ\x0072\x03\xdc\xb8\x0bpK\xc8\xebJS\xd2\x028-\xc7e\xb6\x84\xbe\xbb\xa7Yw\x02\xa4\xf6_\xcc\xba\xe6\xe8Y\x07\xff\x10"\xbeaS9l\xeatTA\x86*\xf3\xb4\xdbR@bHe\x8d\xa6*\xa4\xaf\xd9)Y\x12\x8d\xc0\xf5\xfb\x81\xfc\xa0@l\'\xc7\xe8{)\xd6\x85\xfcV\x866\xa4V\xda\xabpYZ\xd2\xbb\n\x8f\x88\xe4n\xf6H\x96dW\xd0\x1dmt\x13*\xaa7X\x96\xe7\xde\x90F\xabh\xbc\x92J\xf2&U\xcf\x80\r,}a\x9a\x06W\x0b0\x07\x89\xfe\x17\xdc~\xb2\x00 "&\xdc\xeex\x87\x89/I\xfe\xc59\xd8\xeb\xdcq\xbe\x10\xc2\x8d\xf7\xda\xb9\x1c\xd4\x8a{]>\xf1\xf2\x88\xdf\xef\xf1\xfdq w\xb9\xe4`2\x14\x89\x15U\x10\xc7\x948\xa5\xb8\t\xc5\x8d+.~.\x97<\xcfP\n\xe0\xfe\x02\x86ago'),)))
def saxpy_kernel(_gn_context):
    _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; _gn_float = _gn_fast.float; _gn_sig_x = _gn_fast.signatures['x']; _gn_sig_y = _gn_fast.signatures['y']; _gn_sig_out = _gn_fast.signatures['out']; _gn_pack = _gn_fast.pack; _gn_buf = _gn_fast.buffer; _gn_address = _gn_fast.address; _gn_launch = _gn_fast.launch; _gn_fn = _gn_fast.function; _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid; _gn_bx, _gn_by, _gn_bz = _gn_fast.block; _gn_smem = _gn_fast.shared_mem_bytes; _gn_stream = _gn_fast.stream; _gn_ok = _gn_fast.success; _gn_failed = _gn_fast.failed; _gn_slow = _gn_fast.slow
    return lambda alpha, x, y, out: (((_gn_err := _gn_launch(_gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream, (_gn_pack(_gn_buf, 0, alpha, x.launch_args, y.launch_args, out.launch_args) or _gn_address), 0)[0]) is _gn_ok or _gn_failed(_gn_err)) and None) if alpha.__class__ is _gn_float and -3.4028235677973366e+38 < alpha < 3.4028235677973366e+38 and x.__class__ is _gn_DA and x.launch_sig is _gn_sig_x and y.__class__ is _gn_DA and y.launch_sig is _gn_sig_y and out.__class__ is _gn_DA and out.launch_sig_mut is _gn_sig_out and out.launch_base is not x.launch_base and out.launch_base is not y.launch_base else _gn_slow(alpha, x, y, out)


def saxpy(alpha, x, y, out, blocks: int = 256, threads: int = 256):
    saxpy_kernel.launch(GridDim1D(blocks), BlockDim1D(threads), 0, DEFAULT_STREAM)(
        alpha, x, y, out)


def run(n: int = 1_000_003, seed=None):
    rng = np.random.default_rng(seed)
    alpha = float(rng.standard_normal())
    x_host = rng.standard_normal(n, dtype=np.float32)
    y_host = rng.standard_normal(n, dtype=np.float32)
    out = gn.empty(n, gn.f32)
    out.fill(np.nan)
    saxpy(alpha, gn.to_device(x_host), gn.to_device(y_host), out, blocks=37)
    ref = np.float32(alpha).astype(np.float64) * x_host + y_host
    return out.to_host(), ref


def main():
    out, ref = run()
    err = np.max(np.abs(out - ref) / (1 + np.abs(ref)))
    print(f"saxpy on {gn.backend()}: {len(out)} elements, max relative error {err:.2e}")
    assert err < 1e-5


if __name__ == "__main__":
    main()
