"""Histogram of bytes: per-block histograms in shared memory with atomics, merged into the global
histogram with one atomic per bin per block."""

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
    gpu_kernel,
    shared_array,
    sync_threads,
    thread_idx,
    u8,
    u32,
)

BINS = 256


@gpu_kernel(Kernel1D, _spec=('gpu_native.KernelSpec', 3, '0.1.0', 'histogram_kernel', 'histogram', 'examples/histogram.py', 27, 1, (('data', 'u8', 1, False), ('hist', 'u32', 1, True)), (), (True, False, None), (((), 'gn_histogram_kernel', 7405002998405304583, '// gpu_native 0.1.0: kernel histogram_kernel of histogram (generated; do not edit)\n#define GN_KERNEL_ID 0x66c3dafe60a69107ull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_histogram_kernel(\n    const unsigned char* __restrict__ data,\n    gn_i64 __gn_data_n0,\n    unsigned int* __restrict__ hist,\n    gn_i64 __gn_hist_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    __shared__ __align__(16) unsigned int local[256];\n    int tid{};\n    long long i{};\n#line 29 "histogram.py"\n    // assert checked by the launcher (it depends only on the launch shape)\n#line 31 "histogram.py"\n    tid = ((int)threadIdx.x);\n#line 32 "histogram.py"\n    local[tid] = 0u;\n#line 33 "histogram.py"\n    __syncthreads();\n#line 34 "histogram.py"\n    {\n        const gn_i64 __gn_stop0 = __gn_data_n0;\n        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {\n            i = __gn_i0;\n#line 35 "histogram.py"\n            atomicAdd(&local[data[i]], 1u);\n        }\n    }\n#line 36 "histogram.py"\n    __syncthreads();\n#line 37 "histogram.py"\n    atomicAdd(&hist[gn_chk(__gn_err, (gn_i64)tid, __gn_hist_n0, 1u)], local[tid]);\n}\n\n// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.\nextern "C" __global__ void gn_histogram_kernel_i32(\n    const unsigned char* __restrict__ data,\n    gn_i64 __gn_data_n0,\n    unsigned int* __restrict__ hist,\n    gn_i64 __gn_hist_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    __shared__ __align__(16) unsigned int local[256];\n    int tid{};\n    long long i{};\n#line 29 "histogram.py"\n    // assert checked by the launcher (it depends only on the launch shape)\n#line 31 "histogram.py"\n    tid = ((int)threadIdx.x);\n#line 32 "histogram.py"\n    local[tid] = 0u;\n#line 33 "histogram.py"\n    __syncthreads();\n#line 34 "histogram.py"\n    {\n        const gn_i64 __gn_stop0 = __gn_data_n0;\n        for (gn_i64 __gn_i0 = ((gn_i64)((int)(blockIdx.x * blockDim.x + threadIdx.x))); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {\n            i = __gn_i0;\n#line 35 "histogram.py"\n            atomicAdd(&local[((int)(data[i]))], 1u);\n        }\n    }\n#line 36 "histogram.py"\n    __syncthreads();\n#line 37 "histogram.py"\n    atomicAdd(&hist[gn_chk32(__gn_err, tid, ((int)__gn_hist_n0), 1u)], local[tid]);\n}\n\n', (('assert', 29, 4, 85, '', 0, 1, 'launch histogram_kernel with BINS threads per block'), ('index', 37, 4, 46, 'hist', 0, 1, '')), ('index32', 'uses_barriers', 'uses_shared'), (('assert', ('==', ('sp', 'block_dim', 0), ('c', 256)), 0),), b'x\xda\xbdY\xfbS\x1b7\x106\xefGBKih\xda4\x8f\x0bN\xe89\x05\x87WRJKS\x1eqJCH\x1b\x9bt:\x0c\xe3\x11w2\xd6\xe4\xec\xf3\xdccj\xfe\xfbj\xa5\xd3\xcagl\xa8eS~\x10\xab\xd7\xea\xd3\xee\xa7]\x9dl\x8fd2\x196\xc4\x8bx\x96\x17\x1b\x1b+/\x88K*+\xce\x199s\xdd\x15\xfbo\xdeh\x8b\xeeQ^\xb8\xcc\x89\xecq\xa8M\xf3\xa2\xe8\xc7\x81C\x8b\rR\x8f\xe7y\x956I\xad\xe1\xd1\xf0y\x95\x85\x91\x7f\x1e\x90Z\xbeq\xc1\xee\x83~\x98\xcb\xee\xc0\xbc=\xd0B+\x16\x8e)\x7f\xa2A\x9dz\xb6K"\xb2e\xed\x1d\xef\xef\x14=\xe6\xd0\x93x\xf3tI\x8cji|\x17G\'\xf1\xfa\xdain\xcb\x9e\x04e\xb7y\xf1VL/\x05\x84Ea\xa1T*\xf0?\x1b\x96\x8bg\xb0\xf3}#b~=,\x15\x8ez\xc4\xfe\x14\xb1\xe7a\x1e\x14\x16\xff\x831y\x12\xf95\xe6\x94\x03Z\xb1#\xe6\xe6\xf2\x15\x1a9\xd52q]\xdb\xf3\x1d\xe2\x9d\xf0\xc6\xd3\x9c\x84\t\x1a\x8a,\xa2\xd2\xccc\xa0\xaf\xee\xd2\xe6\xc9\x90R/F\x80V\x96Ao\x80\xd4#\xdc\x07\x08\xf7\x18\xe6\x1d\'pI\x18\xd2 \xb2\xce8\xaeOe\x97\xd5\xf2Mk{\xdb\xda=8*.Y\x0b\x1e\x89\xebN\xf5\x92;\xac\x7fXT\x15c\xac\xa8\x1aP\xe2\x86V\x83\x06R\xc7B\xdb\xae\x00i\x0cH\xe5Br[\xe3j\x0f-[Z\xe7\x85\xc1z=Z\xe1\x11Za\x02\xe6}\x95X\x81\xfb\xc3\xdaN\x94\x97\x99\xdb\xcc7\xeda\xd4\xcb\x1dF\x82\x83z\xc5\x8f\xc5qX_k\xef+]4\xa8\xdc\xd8\x14\xf8\x05|(\x86~$\x81\xf8\xcf\xb5\xcbn\x98"%0R\xc1\x84p9(\x96\x0c\t7\xaa(v(\x1a\x05\x92\xdb\x88I\xa3\xbb\xd5;\xbd\x1e*]l\x11\xe6-&\xe0\xc4\xea\xdc\xb4a\x95\x04\xd4-\x93  \x176?\xa5K\x96-8\x96\xcbu5t|\x95\xa1?G\x84`\xf2\x1dP\xab;g\x15\xa9J\x82yrm\x11\xa7Xf\xa8\xddAP\xf1\xb49\xbe@#|f\xea\xa2,\x14v?.\x9aT{\xfa@+\x12\xcc\x97\x08K\x03\x9c\xeb\xddK\x1a\xdf\xb2!\xbequ\xba\x0f}\x92\xb0z\x1e\x11\xcd\xa2tGe\x06Y\x9dQU\xa3 \x0b\xca\xd8\xdd\x01r\xfe\xee`8/\xb2\xd73\xcc\x00\x83\xca^\xff\x91\xd6\xe7\x9e\x7fF\xbc\xa34\x9bU\xae\x903\xee\xe1\xee\xbe\x81i\xc6\tnr\xb0d\xbe\x8f\xb04\xc0o\xc1\xfcS*Y\xec\x08\xf5:\x07j\x03\x88\x9d\xf2ud\xcb\x834\xcd\xbeVUa\xa6\x96\x0e\x88\xf31D\xfc\x80z\xa4\xc9\x83\xc1\xff\x9d\xeaG\x94%^7\x1bA1\xaa%\x0ez\x84\x08\x1f\xf6N\xbf\'\x88\n"A<\x97\xa0\n/\xeaN9\xc9\x93v\xe2\x03\xd8\xfa.\x0f\xbe\x8c\x06r\xb9\xc7\xeaT\x88$\xda\xeb\xa9\xcc\xaa$\x94\x0e#\x18\xf0[\x8d\x02\xe4?a\xa7\xad\x86Ym9\x95{\xfc\xee\x95\x18#\x9br\xb4tao\xb8\x16\x14YE"\x8eW\x13\\\x15?\xb0\x98\xc5\xeaV\xc1#\xd1!\xb9\xf0\xe3hu?\x7f\x1e0\xb7\x1cF\xbc\xa4\xb6G\xeb\x02h\x8e\x1f\xbf\xae\x89\xff\xe5F\xf7|\xb4x)\xf1\x8bf\xd9\xf9\x1dn\xec\xa9AN\xc9*z\x08\xb6\xf4e\xec\x96\x10\x98CL\x1a\x9dm\x18\x02\xe7U\x84\x19X\x08\xec\xe4\x03\xd1\xb6\xd9\xdd\x05KW]\t\x96\x15\xa3\nW\xc7Na\xc0!u\xd2\xa5\xf4\xbdA\xec\xcc*\x93\x88\x10e\xec\xb4\xcb\xb1s\x05ai\x80\xcf{\xf7\x9b\xc6g\x19\xe2\xebp\x11XCD\xcb(\xad\xa6\x03\xf13\xd3\x8b@\x16\x8f\xf6\xcc`\r\xba1\x98\x9b\x95\xc6\x977\xc4\xd71\xf9\xbd\xbc"\xf9\xbdH\x9bv]\x9bV7>\xe9/\xf1\xf5\xbf\xab.\x89o\x13\x11\xfe`\x18\xe6\xf5\xbd\xcb,\xccw\xa1\xc3\xd6`\xce\xd7\x82J\nb\xb2!\xc41\x15\xb7\x8bU\xa2\x02\xd9\xcf\x1d\xe2\xf6O\xeaK\xda\x04$\xd8\xe1\xa8\x1f\x80\xb0\xdc\x1b\xdeU\x14\xfd\x12\xd1/\xa9\x9c"\xa5\xed4]\x7f\xec\x1d\xef\xe3>.<\xbf\xf6u\xe1\xb1T|H\xaf\xacox\xfc\x13w\xa5\xe3\xa5f7}\xa91\xf0\x92\xa5\xbeSd\xe4\xbbn\xed\x96\x1c\xbf?\x98\xcf\x1c\x0b\xcd>u\x1d\x80\xcb\xe7\xa90\x98\xf0juv}\x1b\x86\t<0\x91\x1f$T\xfc\r\x97}\x93&\xe0k\x8c\x97\xb2\xbe\xa7\x02l\xcc\\\x93W\xa5i\xfc\xd0\xb8\xe2UiL\x91\xb3\xd8\xa0\x0eS\x8e\xfa=\xe5(\xb1\xae\x9ee\xc2\x19\xfd\xccu\x1d\xa0Q\xcc:a\xc8\xce\xeb\x12\xc5a\x8a.Rzk\xf8\xe4xO]_o\xf0\xc9\xb1\xd3\xc1;J\xd9T>\xfc\x18\xc0\xbf\x85F\xbc9\xf8\x9dI\xf1G\x9a\x14S*v\xc1\x9a\x92\x13\x9dn\xc9"\xc4\xf9\xbeW\xee~Q\xfe\x90\xe9\xc3\x147\xec\xc9qe\x8a=\xbf\xd6 \xea\x0c\x97\xd0\x14E\xe8\x87\x9dmo\xcb\x86?\xb1\xeb=~\x82%tN=7K\xe9X\xc5\xe0\x92\xbc\x98L\xcb\xe4\x1aPw\x9f:\x9e\x8eN\x05{N)\x92\xbf\x12\x88\xdf?\xda\xb7"|\x82\x8d1\xbc\xd1\x9d\xd7\xcb\xed\xa3\xe4\x87\xecp\xea6\xd1\xf2\xe61\xdc\xe1\xac\xd9\xe9H\xf5\x17T\x85\xc7\'\xb0\xed#J\xefP:@i\x07\xa5W(-\xa0d\xa5\xd7\xd5J\xc7P\x1aAI\x8f\x1bB\x18\x19\x85OZQ?\xefK^\x8eh\'i9lt\xa50hr\xc4\t\x95\x0bA\xcf\xbf\x8f\xdd\xf3{'),)))
def histogram_kernel(_gn_context):
    _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; _gn_sig_data = _gn_fast.signatures['data']; _gn_sig_hist = _gn_fast.signatures['hist']; _gn_pack = _gn_fast.pack; _gn_buf = _gn_fast.buffer; _gn_address = _gn_fast.address; _gn_launch = _gn_fast.launch; _gn_fn = _gn_fast.function; _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid; _gn_bx, _gn_by, _gn_bz = _gn_fast.block; _gn_smem = _gn_fast.shared_mem_bytes; _gn_stream = _gn_fast.stream; _gn_ok = _gn_fast.success; _gn_failed = _gn_fast.failed; _gn_slow = _gn_fast.slow
    return lambda data, hist: (((_gn_err := _gn_launch(_gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream, (_gn_pack(_gn_buf, 0, data.launch_args, hist.launch_args) or _gn_address), 0)[0]) is _gn_ok or _gn_failed(_gn_err)) and None) if data.__class__ is _gn_DA and data.launch_sig is _gn_sig_data and hist.__class__ is _gn_DA and hist.launch_sig_mut is _gn_sig_hist and hist.launch_base is not data.launch_base else _gn_slow(data, hist)









def histogram(data, blocks: int = 128):
    hist = gn.zeros(BINS, gn.u32)
    histogram_kernel.launch(GridDim1D(blocks), BlockDim1D(BINS), 0, DEFAULT_STREAM)(data, hist)
    return hist


def run(n: int = 3_000_001, seed=None):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    # Skew the data so that some bins see heavy contention.
    data[: n // 4] = 7
    out = histogram(gn.to_device(data), blocks=48).to_host()
    return out, np.bincount(data, minlength=BINS).astype(np.float64)


def main():
    out, ref = run()
    print(f"histogram on {gn.backend()}: {int(out.sum())} samples, exact: "
          f"{np.array_equal(out, ref)}")
    assert np.array_equal(out, ref)


if __name__ == "__main__":
    main()
