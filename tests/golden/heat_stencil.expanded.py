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


@gpu_kernel(Kernel2D, _spec=('gpu_native.KernelSpec', 3, '0.1.0', 'heat_step', 'heat_stencil', 'examples/heat_stencil.py', 19, 2, (('src', 'f32', 2, False), ('dst', 'f32', 2, True), ('alpha', 'f32', 0, False)), (), (True, False, None), (((), 'gn_heat_step', 15912620818879673725, '// gpu_native 0.1.0: kernel heat_step of heat_stencil (generated; do not edit)\n#define GN_KERNEL_ID 0xdcd4fc537acef57dull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_heat_step(\n    const float* __restrict__ src,\n    gn_i64 __gn_src_n0,\n    gn_i64 __gn_src_n1,\n    float* __restrict__ dst,\n    gn_i64 __gn_dst_n0,\n    gn_i64 __gn_dst_n1,\n    float alpha,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long x{};\n    long long y{};\n    long long h{};\n    long long w{};\n    float center{};\n    float around{};\n#line 20 "heat_stencil.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_src_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_src_n1)) & ((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_dst_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_dst_n1))) return;\n#line 21 "heat_stencil.py"\n    x = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);\n    y = ((gn_i64)blockIdx.y * blockDim.y + threadIdx.y);\n#line 22 "heat_stencil.py"\n    h = __gn_src_n0;\n#line 23 "heat_stencil.py"\n    w = __gn_src_n1;\n#line 24 "heat_stencil.py"\n    if (((x == 0LL) || (y == 0LL) || (x == ((long long)((unsigned long long)(w) - (unsigned long long)(1LL)))) || (y == ((long long)((unsigned long long)(h) - (unsigned long long)(1LL)))))) {\n#line 25 "heat_stencil.py"\n        dst[gn_at2(__gn_err, y, __gn_dst_n0, 2u, x, __gn_dst_n1, 3u)] = src[gn_at2(__gn_err, y, __gn_src_n0, 0u, x, __gn_src_n1, 1u)];\n    } else {\n#line 27 "heat_stencil.py"\n        center = src[gn_at2(__gn_err, y, __gn_src_n0, 4u, x, __gn_src_n1, 5u)];\n#line 28 "heat_stencil.py"\n        around = (((src[((long long)(y - 1LL)) * __gn_src_n1 + x] + src[((long long)(y + 1LL)) * __gn_src_n1 + x]) + src[y * __gn_src_n1 + ((long long)(x - 1LL))]) + src[y * __gn_src_n1 + ((long long)(x + 1LL))]);\n#line 29 "heat_stencil.py"\n        dst[gn_at2(__gn_err, y, __gn_dst_n0, 6u, x, __gn_dst_n1, 7u)] = (center + (alpha * (around - (4.0f * center))));\n    }\n}\n\n// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.\nextern "C" __global__ void gn_heat_step_i32(\n    const float* __restrict__ src,\n    gn_i64 __gn_src_n0,\n    gn_i64 __gn_src_n1,\n    float* __restrict__ dst,\n    gn_i64 __gn_dst_n0,\n    gn_i64 __gn_dst_n1,\n    float alpha,\n    gn_error_record* __restrict__ __gn_err)\n{\n    int x{};\n    int y{};\n    int h{};\n    int w{};\n    float center{};\n    float around{};\n#line 20 "heat_stencil.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_src_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_src_n1))) & ((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_dst_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_dst_n1)))) return;\n#line 21 "heat_stencil.py"\n    x = ((int)(blockIdx.x * blockDim.x + threadIdx.x));\n    y = ((int)(blockIdx.y * blockDim.y + threadIdx.y));\n#line 22 "heat_stencil.py"\n    h = ((int)__gn_src_n0);\n#line 23 "heat_stencil.py"\n    w = ((int)__gn_src_n1);\n#line 24 "heat_stencil.py"\n    if (((x == 0) || (y == 0) || (x == (w - 1)) || (y == (h - 1)))) {\n#line 25 "heat_stencil.py"\n        dst[gn_at2_32(__gn_err, y, ((int)__gn_dst_n0), 2u, x, ((int)__gn_dst_n1), 3u)] = src[gn_at2_32(__gn_err, y, ((int)__gn_src_n0), 0u, x, ((int)__gn_src_n1), 1u)];\n    } else {\n#line 27 "heat_stencil.py"\n        center = src[gn_at2_32(__gn_err, y, ((int)__gn_src_n0), 4u, x, ((int)__gn_src_n1), 5u)];\n#line 28 "heat_stencil.py"\n        around = (((src[(y - 1) * ((int)__gn_src_n1) + x] + src[(y + 1) * ((int)__gn_src_n1) + x]) + src[y * ((int)__gn_src_n1) + (x - 1)]) + src[y * ((int)__gn_src_n1) + (x + 1)]);\n#line 29 "heat_stencil.py"\n        dst[gn_at2_32(__gn_err, y, ((int)__gn_dst_n0), 6u, x, ((int)__gn_dst_n1), 7u)] = (center + (alpha * (around - (4.0f * center))));\n    }\n}\n\n', (('index', 25, 20, 29, 'src', 0, 2, ''), ('index', 25, 20, 29, 'src', 1, 2, ''), ('index', 25, 8, 17, 'dst', 0, 2, ''), ('index', 25, 8, 17, 'dst', 1, 2, ''), ('index', 27, 17, 26, 'src', 0, 2, ''), ('index', 27, 17, 26, 'src', 1, 2, ''), ('index', 29, 8, 17, 'dst', 0, 2, ''), ('index', 29, 8, 17, 'dst', 1, 2, '')), ('index32',), (), b'x\xda\xbd\\\xf7{\xd3F\x18v\x80\x10V\x80\xd0\xec\xd1\nJ\xa8C\x06IH(\r\xa4\x10 ))\xc1\xb4\xc4\xd0\x91\xa6\xa9b+\x89Zc\xb9\x1eM\xdc\xbd\x17\xdd{\xd3\xbd\xf7\xde{?\xfd\xa3\xaa\xbb\xd3}\xf2\xd9\'\xec\x9cN\xca\x0f\xf7|\xa7\xb3\xa4\xf7\x1b\xf7\xdewC\t.\r\x04\x02z\x99Yd\xd6\x9bE__w\xbf\x1aUg\xba#\xd3\xeat4\xda\x1d\xfc\xcf\xbc\x18\xc4\xcd\xcb\xcc"\xaaG\xd2\xc1\xe5\xa8\xb6\xca,\xc6\x8dL2\xa2\x8d\'\xd4x\xa6\xde\xacj\x0b\xea\x89DLKm\x9b\xd3\xd4\xf4T*\xad\xc5#z\xac+\x91\xd5\xab\xd1+\xd0\xedz%\xba\xf5\x10z\x906\xa3\xd0\x9f%\x82\xa9dd@\xd9\x7f\xec\xc0\xd0xL\x8fh\xbd\x07&f\xb6\xf7Nv(\xd1T:\xe7\xf2\xe1L\x1aZ\xd4XbN\x1dP\xccJ\xdb@p\x05z\xe8\x1a\xb38\xa4%\xe3Z,\x9cT\xf5tj\x84\xfc\x05\xd1k3\x95\xd0x$\x91\xd6\x8dx*<\x12Z\xbc\x1a-H\x03\xf42\xbd\n\xdd\xba\xdb,\x14\xeb\xcfD:\x91\xedP\x16&\x95A%\xa2\xc5\xd3ZRi\' \x95\xadJPM\x1a\x99xT\xe9T\xfa\xba\xba\xcd:\xf9A\x1b\xc1\x8d\xf0\x8d\xebiM\xaf@\xb5r\xf4\xf4xT[\x98(\xa36\xcb \x07\x99\xcf\xc7>\xd2\x97\xa0+\x01\xe4\x13\xf6\xee\xe5\xc5\xee\x0e\xb0w/Z\xf9&\xaa\xb7\xde\x88nm\xccQ\xdeRxP1\xddH\xac\x90\x07\xae\x9c\x03\xae\x82\x823o:\xbdj\xcb\x8a\xdd\xedV\xb5\x06\xd6\xaf-\x0e~u\xd2n)\x07\xdf\xaa\x92\x1d\xb7\xa4\xd8\xddR\xb4\xc3=\xb0ED\xbb2\x0e\xbe\xca\x92}\x17(v\xb7\x94\xb0\xc4\xbe[[BX.\x81\xc7G\xd4\x98\x9a\x1c\x8d\xcf\x18\x18\x89\xc9#\xf9m\xe1lB#xQP\x04\xcb)\xe8\xe3j2\x83P\x92\xa7\x93_l0\x0b"!\n\x1d\x11d\x96~T\xec\x92\xc2,\xd0e\xc6\x0cS\x19\x02\xad\x1a@\xdap\xcf\x10\xb29F\xbb\r\x15\xbdr\xd1\xee7\x999M\x90\xd52hg\x03\xf8o\xfd^7`w\xc9#m\x04v\x9f\x1e?\x92 \x10\xeb\x19\xb0\x19$m%\xf5:h\xa91\x8b\x90@h4\xb3\x01\x1e\xca\xc1o!\xb4\x02\xdcD\xda\x83\x95i\xb7\xea\xedl\xdd\x94\xd1O\x98\xba\xf9\x93\xc9\xc2\xd0&\xcf\xcd\x8f\x95F\x17\xa1\xbd\x05\x15\x1d\x9e\x85v3\'\xb4\x9b\xc4C{\x8b\xb7\xd1rfa\xb4t\x92z\x0b\xb44\x08F\x0b\xe6\xf9=\xa88\xe0E\xa6\xc5\x84\n\xaa\xe0\xd6|\xd3+f\x11\x16\xb4=.6y\x16)\x9b8\x91\xb2Q<Rp\xb1\xdb\xb3H\xd9\xec\xc8+gC\xcbY\x82\x91\xd2\x02iA\xa3g\xd6\xde"w\xc8\xa9\xf6\xd6\xda\xc1Bk\xb7\x93\xfa9\xd0\xd2*h\xed\x1a\x98\x01\x95\xe7&a\x0b\x1dJ\xd6\x84=\x12S\xd3cj\xd6@\xdd\xae+\xa3G\x83m\x8e\x99\x8a\xbe\xa3\xcf9Si/\xc8T\xd0e+\xed\xea\x00%\xb6\xba`\xf2u4\xcb\xf1&b\xba\x00\xa4\r\xb7S(bj\xe84\x01\x0f\x9e%X\xbc\xc0n\xd9| \xdd.\xec\xb6\x062_O\xec\xd6\xcb\xb1[\x8f\x90\xdd\xaai\x98\xe3\xfe }\x04\xc1xV\x9a\xc5P2\xa9f\xed\xd0\xdd@\xe7\x01a\x9c\x82\xcc\xc6\x8ci5\x16b\x9db\xcd\x88\xc8\r\xfd\xa0g\x9f\x8b\xe1\x06\'V\xab\xe5\xb9e\x05\xd5\xec\xa86C\xd0\x9d\x0b8m\xc4;\xc49p\x85<\x0e\x84\x05\x87\xf1\xb4\x91\xb4\xdcp\x1e`\xdc\x890.\x81\xeav\x90\xb6\xd1\x06\xbc\xe6\x80\xbb\x18ih\xa3\xbeB\xfdI,\xcf\x1dC\xc5a\x8f\xf2\\\xde4c\x17\xd3o\xf0\\V\x10\xfaAT\x8cz\r=\xa7\xcb\x0fJ\xa3J\x1b\xbfW\xa6\xe7\r\xb7{\x18\xfc\xb9\xc3\xed\xf9\xd0\x82b<\x14\x16\xd4h\x18\x15#>zdH.\t\xaf\x85\x15)\xdfIx\xe4\xf4$\x8cLQF\'\x19D\xda/F\xc2\xcd\xd4nd\xbe\xe2\x95\xa3\niy\x04\x90\xdb:\x0c\x8b\xf7\x1e\xacB\xc8#\x15\x96\xd3%\xb51C\xb5\xa6\xe5\x079\x99\xf5\x05,c\xef\x03i/m\x08\x85\x04\xd5\xdbM\t\xc7/^\xbeP\x1a/\xef\xa4\xc3\x9a_,0&\x97\x97wziz\x1e/\x87\ny\xd9Z\x9e8\x0c-\x87\xdc\xf0r?M\x81\xfc\xf2\xc8E\xd2x\xb9\x99\xde\x8a\x93N\x1f\xe9\xea\xa8\\\xba\xea\xa1\xc3\xacOt\x15\xe6\xd0\xd58KW\x17\x83t\xc45]u\xd0>\xe7W\x84\x1d\x97\xdb\xe7\xdb\xe8,\xdd/\xba\xbdT\x1a\xdd\xb6\xd2u\x1f\xbfL\x7f\xb9\xdc\xce\xdd\xea\xa5\xe9yt{\x85c\x1a<\x01-\x97\xb9\xa1\xdb\x8dt%\xd1G\xba\xbaR.]m\xa4KC>\xd1\xd5U\x1c\xba\x9ab\xe9j\x12\xa4K\\\xd3U3l\xce\xfa\xd4g\xa6\xe5\xd2U\x03\xac"\xfbDWQitUC\xf7\x1a\xfd2\xfd\x8c\\\xba\xaa\xf1\xd2\xf4<\xba\x9as\xcc\x0eg\xa1EsCWUt\xa5\xdfG\xba\xbaZ.]U\xd1]>\x9f\xe8*\xc6\xa1\xabkX\xba\xd2A\x8a\xb8\xa6\xab*/\xd9\x98\x17sq\xc7\x8d\x99\x13\xd0\xa2\xba\xd9^\xaf\xf22\x1d\xe6i\x94p\xd4\xc8\x80\x96c\xae5\n\xf9\xa8Q\xd2Q\xa3k\xa1e\xd4\xf5\x11\x88\x90\x97\xbc\x80p\r\xa5R\xfal\x9c\xc0M3g\t\x88\x94\x12?\xa4TO\x87\xcab\x87\x94x\xc3\xc6u\xd2F\xec&v\xd8\x13\xc0\xb2 m\x08kb\t\xbf\x14,\x85\xe4}\xfdi\xc9\x9be\xca\n\x0eS\xde\xc02e\x16\xa4y\xd8\xe8\x80\x8d[7\xe7\xd3\x1aKU1?\x0eob\xf6\xce\x89t\xa3\xf8Q\xc0&\x9ar\x96p\x14\x90\xe7\xfe[\xa4\x85b\x03\xdb-\xc4\xe0\xdc&-\x1a\xed\x83\x92u\x8b\x80S\x18\x90w," +9\x01y\'\x1b\x90\xb7\x83t+\x04d@<\xedm`w\xf1\xc5\x8c~\xb7\xdc\x18\xb07\xc7\xc5\xe0\xdc+7\x06\xecMa\xe1\x18\xb8_\xda\xae\xaf\x8d\xa8\xc4\xe3\xbb\xbcm\xdd\x07\x00\xc4I6\xb8\xee\x03\xe9\x1e\x08.\\,\x85\x86\xbb\\m\xeb\xd6\xd3\xd3\tx\x079\xd3g\xc1\xd7g\xcc\xa1wpP\xe9V\x8c$:\x90aI\xf8\xda<\x1a\xa3\xe1\xfa\x1c\xaa\rp\xa7\x81\x0f\xc9\x98\x06\xd6\xb2\'s\xaa-\x80s\xc4\xa6]\xa995\xa1MtO\x16\x1e\x0f\x99\xcb\x8f\xb8G\xc4\x8e\x87\xd4\xd3t\x1a\xef\xacK\xb0PN\xc7x\x8c\xd31\x1e\x152\x93\x8d\xd2\x9d\x1fy\xb9\xe3\x13\x8es\xca\xc7\xa1\xe5a\xc1\xdc\xb1\x9e]O\x95j\xdd\xa7\x9ch\x87wx\x0b\xdd;m\x18\xb1)\xe7\xe3[\xcf\x88{\xa6\xcd\xbdg\xf0\x8b+p\x0f;\x91P)s<\x07\x9a=\x8b\xda\x11\xf6\xc1Ar\xe1ihzR\x1c\xf8f\xba\xe8*\x97\x1a^\x90A\ru|j\x98g\xa8\xa1\x87C\r\xf3\xf9Q\xf1\x92\x0bjP\xe8\n\xa8\xdc\xe0}\x99\x13\xbc\xa7\xc4\xfd\xa8\xb8\xf7#\x8f\x1a^u\xa4\x86W\xa0\xe5E7\xd4`g\xc3R\xad\xfb\xba\xb4\x04\xc9F\xd9\xeaA\xf7~\xd3\xb9{\xbf\x01M\xaf\x89\x03\xaf\x85tZj\xf7~\x9b\xed\xde\x01q\x80U\xb0d!\xd5\xff\xefJ\xcbHm\x94u\x1e\xf8\xff}g\xff\xbf\x07M\xef\x88\x03\xb73{\xa9\xfe\xffP\x9a\xff\xed\x13\xc2R\xfd\xff\xb1\xdc\xfe_\xe1\xde\x8c|\xff\x7f\xea\xec\xffO\xa0\xe9#\x97\xc0\xdd\xe5%\xe5tMd\x9f\x99=\xd1q\xe1\xf3B\xdcF\x12{\x82\\\xfd\x0c\xa4\x0f@z\x0b\xa4\xe7\xc5\x15B\xaf\x08\xb9T\x06\xa1\x1d\xb5&\x8a_\x02\xa8/\xe8\x87\xd6\xa4\xfa \xaa\xda\xb3\xb0\x9bA\xca\x804 \x9e\xd5\xd8S\\\xc7\xac\xc6af\xfb\xb5\xb4\xbd\x12\x1bHu\xf1\xf4\nOh\xf1\x15\xfc\xc6o9\xfd\xeb\x1b\x19\x99^uq\x9b\xe4\xaf\xcf}\xcf\xe4OD\xfaN|.Z\xe8\x9a\x82\xb9\xa8\x83k~\x94\xe6\x9aZ\xbek\xf8\x93\xe2<\xd7\xfc\xccq\xcdO\xe2,]\xcbw\r\xdf&\xf9\xae\xf9\x95\x99\xf5\x12\xe9\x17\xf1\xcfIV\x17,\xc3\x14\xf9\x9c\x04\r\x7f\xc7\xf4(\xa2\\#\xae\xc5\xad\xd1\xebw6\xa9E\xc8g\x93zT0v\xedO\x8bJD\xc6\xb5\xd4\x9fL\x9aB\xa4?\xe0s\xa2\xc5\xe9\x81\x1d]\xe4-\x9d \xfdM\x89\x0eGtX\xd5c\xc3\x0b\xba\xf5\x862:\x9b\xceY\xb2\x82\xe5Q\xf2\xe5y\x80m=\xc9i\xdd@\xa1\x90\x7f\x01\x81O>\xc3Qj\xac[\xaeM\xf1\x85\xd9\xf8\x14\xfc\x02/\x88\xe5P\xf10\xb3\xa2\x97\xf7\ra\xbev=\x9c\x08<\xc5Y\xd0\xc7\x9f\xab\x06\xa0\xb0\x1f\xf5/H\xff\x80\xf4\x17H\xbf\x81\xf4\x03H_\xd1\xcf\xf0Iu\x1dHkAZ\x03\xd2j\x90V\x82d\xdfk\xc3(\x07\xc96\x84m\xf52\x16}\x00\x1a\x90\xf4?\x0f,\xb0\x1b'),)))
def heat_step(_gn_context):
    _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; _gn_float = _gn_fast.float; _gn_sig_src = _gn_fast.signatures['src']; _gn_sig_dst = _gn_fast.signatures['dst']; _gn_pack = _gn_fast.pack; _gn_buf = _gn_fast.buffer; _gn_address = _gn_fast.address; _gn_launch = _gn_fast.launch; _gn_fn = _gn_fast.function; _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid; _gn_bx, _gn_by, _gn_bz = _gn_fast.block; _gn_smem = _gn_fast.shared_mem_bytes; _gn_stream = _gn_fast.stream; _gn_ok = _gn_fast.success; _gn_failed = _gn_fast.failed; _gn_slow = _gn_fast.slow
    return lambda src, dst, alpha: (((_gn_err := _gn_launch(_gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream, (_gn_pack(_gn_buf, 0, src.launch_args, dst.launch_args, alpha) or _gn_address), 0)[0]) is _gn_ok or _gn_failed(_gn_err)) and None) if src.__class__ is _gn_DA and src.launch_sig is _gn_sig_src and dst.__class__ is _gn_DA and dst.launch_sig_mut is _gn_sig_dst and alpha.__class__ is _gn_float and -3.4028235677973366e+38 < alpha < 3.4028235677973366e+38 and dst.launch_base is not src.launch_base else _gn_slow(src, dst, alpha)









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
