"""Mandelbrot set: escape-time iteration per pixel, written to a PNG (no imaging library)."""

import struct
import sys
import zlib

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASliceMut2D,
    FlatLayout2D,
    GridDim2D,
    Kernel2D,
    f32,
    gpu_kernel,
    i32,
    u8,
)


@gpu_kernel(Kernel2D, _spec={'schema': 1, 'version': '0.1.0', 'module': 'mandelbrot', 'name': 'mandelbrot_kernel', 'file': 'examples/mandelbrot.py', 'line': 24, 'ndim': 2, 'params': (('image', 'u8', 2, True), ('x0', 'f32', 0, False), ('y0', 'f32', 0, False), ('dx', 'f32', 0, False), ('dy', 'f32', 0, False), ('max_iter', 'i32', 0, False)), 'typevars': (), 'options': {'bounds_check': True, 'fastmath': False, 'max_registers': None}, 'variants': ({'types': (), 'symbol': 'gn_mandelbrot_kernel', 'id': 15746425396505326211, 'cuda': '// gpu_native 0.1.0: kernel mandelbrot_kernel of mandelbrot (generated; do not edit)\n#define GN_KERNEL_ID 0xda868a7850e3b283ull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_mandelbrot_kernel(\n    unsigned char* __restrict__ image,\n    gn_i64 __gn_image_n0,\n    gn_i64 __gn_image_n1,\n    float x0,\n    float y0,\n    float dx,\n    float dy,\n    int max_iter,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long px{};\n    long long py{};\n    float cr{};\n    float ci{};\n    float zr{};\n    float zi{};\n    int n{};\n    float __gn_t0{};\n    float __gn_t1{};\n#line 25 "mandelbrot.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_image_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_image_n1))) return;\n#line 27 "mandelbrot.py"\n    px = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);\n    py = ((gn_i64)blockIdx.y * blockDim.y + threadIdx.y);\n#line 28 "mandelbrot.py"\n    cr = (x0 + (((float)(px)) * dx));\n#line 29 "mandelbrot.py"\n    ci = (y0 + (((float)(py)) * dy));\n#line 30 "mandelbrot.py"\n    zr = 0.0f;\n#line 31 "mandelbrot.py"\n    zi = 0.0f;\n#line 32 "mandelbrot.py"\n    n = 0;\n#line 33 "mandelbrot.py"\n    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {\n#line 34 "mandelbrot.py"\n        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);\n        __gn_t1 = (((2.0f * zr) * zi) + ci);\n        zr = __gn_t0;\n        zi = __gn_t1;\n#line 35 "mandelbrot.py"\n        n = ((int)((unsigned int)(n) + (unsigned int)(1)));\n    }\n#line 36 "mandelbrot.py"\n    image[gn_at2(__gn_err, py, __gn_image_n0, 1u, px, __gn_image_n1, 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));\n}\n\n// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.\nextern "C" __global__ void gn_mandelbrot_kernel_i32(\n    unsigned char* __restrict__ image,\n    gn_i64 __gn_image_n0,\n    gn_i64 __gn_image_n1,\n    float x0,\n    float y0,\n    float dx,\n    float dy,\n    int max_iter,\n    gn_error_record* __restrict__ __gn_err)\n{\n    int px{};\n    int py{};\n    float cr{};\n    float ci{};\n    float zr{};\n    float zi{};\n    int n{};\n    float __gn_t0{};\n    float __gn_t1{};\n#line 25 "mandelbrot.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_image_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_image_n1)))) return;\n#line 27 "mandelbrot.py"\n    px = ((int)(blockIdx.x * blockDim.x + threadIdx.x));\n    py = ((int)(blockIdx.y * blockDim.y + threadIdx.y));\n#line 28 "mandelbrot.py"\n    cr = (x0 + (((float)(((gn_i64)px))) * dx));\n#line 29 "mandelbrot.py"\n    ci = (y0 + (((float)(((gn_i64)py))) * dy));\n#line 30 "mandelbrot.py"\n    zr = 0.0f;\n#line 31 "mandelbrot.py"\n    zi = 0.0f;\n#line 32 "mandelbrot.py"\n    n = 0;\n#line 33 "mandelbrot.py"\n    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {\n#line 34 "mandelbrot.py"\n        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);\n        __gn_t1 = (((2.0f * zr) * zi) + ci);\n        zr = __gn_t0;\n        zi = __gn_t1;\n#line 35 "mandelbrot.py"\n        n = ((int)((unsigned int)(n) + (unsigned int)(1)));\n    }\n#line 36 "mandelbrot.py"\n    image[gn_at2_32(__gn_err, py, ((int)__gn_image_n0), 1u, px, ((int)__gn_image_n1), 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));\n}\n\n', 'sites': (('zerodiv', 36, 23, 42, '', 0, 1, 'integer // by zero'), ('index', 36, 4, 17, 'image', 0, 2, ''), ('index', 36, 4, 17, 'image', 1, 2, '')), 'traits': ('index32',), 'launch_checks': (), 'ir': b'x\xda\xbd[\xf7_\xdbF\x147Y@\x12(\xa4\r\t3\x82$\xad\x19\x01\xb3R \xa6\x85\x90\xd0\xa6!\xa4\rN\xd2\x96\xa6\xae\xb0\x85\xa3\xc6\xc8\xae\xb0\x12\x8b\xee\xbdw\xba\xf7H\xf7\xde\x9f\xfes\xadN\xe7{\xb2\xec;0Or\xfc\xc3}\x9e\xf4t\xba\xef\xbd}\xbaspc \x10P+\xac\xc6\xa8\xb3\x9a\xa1\xa1\xd0\xb0\x1c\x97\x17C\xb1\x05y!\x1e\x0f\x05\xff\xb5n\x06m\xf6&\xab\x89\xab\xb1Lp\x0b\xb9\xdaj5s)C\x8f)siY3\x1a\xacK%+/\xa5\x93\xcar\xdf\x92\xac\xc5\x95\xe4\x82\x9e\xca\xf4\xa6M\xb5\x91\x0c@:\xab;I\xc7\x08y\x8d\xb2(9\x0fE/(\xba\xa6$\x83\xea\x92\x9cP\xc6\xa4\xa9\xd3G&\xe7\x92jL9ad\x06\x8e\xcc\x1b#\xe7z\xa4lhLZ\x1c\x1c\xe8\x91LF\xc4\xb3\x8c0)\x11\xac"o\xdfn5\xc7\xed\xd7EtY\xcd,O\xd3_\x90\x8co\xd4\x00\xf3d:\xa3\xa6\xb4\xe5\xc8\xf4\xeczg\xb3\x0ffSO:v[\x8dd\xfdl\xec\xf3i\xb3GJg\xcfI\xe3\x921\x12\x1c\x18\x1e\x96\xba$M\xea\xeb\xb3\xe6\x9a\x8d\xaa\x19E\xef\xa4 I\xf79\xebZ\xdd@\xae6\x93\x97YCd\xe7+\xd8\xbb\xe9=\xf2J[3\xf4\xb9\x00\xd1\x84\xbb\x7f\xc5\xda\xfd\x03\xee\xfe\x98\xd9\xee"M\x97\xf7\xd9\x12\x00F\xa5\xd5\xac(z*\xae^\xa4x+\x196\n\xd5\x9e\xd2\x0e{J\x19%\xa1\xe8\xe4\x85\x0b\xa6D\xba\xac\x17|\x13y\x0b\xe1\xabm\xa4\xe3\xfe\x1c\xf8\xe2\x1f\x03<&\xa9\x83\x03\x9dc\xc1\r0NLN\xca\xfa1m1e\xd8n28P\xc8\x8b\x98i\x85\xce\x83\xdc\x0b\x12\xb9\xdb\x8f\x9e\x91u\x83\xcc\x9e\xbd\x9a>\xb3\xcdj(Um5\x11\x946:\xd0\xda\x00\xcb\x98IY\xd8)\x8e\x1a@\xe4`\xdb\x8e0\x14\t\xdc\xc2\x16Au\x0e\x9af\xc1\t\xb9\xa5B\x86\xd0\n\x87\xbc\xc6j\xa6Q\xe2h\x05\xfd\xfa!\x8ez\x8e8\xea<\xf9M\x93\'hSV\x90\xcaP\x18\xd7\xba\xa0\xa9\xffyB\xd5\x86\xf6f\x82\xea\xb0\xaa\x9dLS,;]\xa8l\xe5v\xd1\xeb\xeb\x80C\xbcyv\x9a\xdb\xbd\xd2\xdd\x9d8W_\x1f\xbd\xd1\x00\xacZ\x16\x1c\xa6\xb9\x9ei\xdf\x1b\x11;\xe6n"\xa9M,\x12M\xc9L\xa0\xce\xd8\x8d@\xedBH\xb5\x19L\xdf\xee\xb8\'\'\xd5t\xd6\x92\xa7i\x89s:)gfd3E\xb2Y\xaf\xa1\xc6\x83\x9d\xe2\x00spH<\x8f\x96\xa2\x00C\x1eM\xe7\xc2~+\xcc\xa1\x19\xedK\xb5\xcc\xdc}\xf1\xa5=\x80\xc8\xc1\xd6\x86\x95o\x15\x0b\xb1%\xc9\xb7XJf!\x92v\xb4\x94\xb6\xb2\x18\xe9\x8b\x94\xf6r\xa4\xd4\x81\x90R#$\xbb\xe6\xb2VY[Xx\x9f\xd4u\xd9t\xac\xb3\x91\xd5\x19\x11\x83<\x92H\xa6\x16\xe4\xe4\xac[\x13P\x95\xd0.\xd7\xc3\x84\xf7\xa3\xb3\xe1&\x96Lq\xca\xa8b\x139\xa5,R(A\x00\xe5\xc0\xbb\x01\x1bkmt\xdd\x18t\x95\xccT\xe62)=\'\xaf.\x00\xd4I\x00m\x80\xcb}@I\x8c\xe1\xd4\x8d\x94\xd1\xc4\xf4@\x1cd\x9dS\xd9\xcb\n\x05;@\x18\xb5yu\x94&u\x8fK\xfd\xdc|\xd5\xe3\xceW\x15\x08\x19\xee\x05\xcf\xaf^k\xe0<\x8f\xea\xf5)\x87;\xa3\x8b\xa6\xcd\xcbh\xa1\xe2\x84\xd8M\xaf\xfb\x80s\x80&D\x1b<\x015\xb9\xbc\xac&\xb4\xc2\xfeu@\xf5#\xd0w0;Q\x0f\x91\x8e\x87\xf2\xd0\xaf\xe8=\xd2\x8aj\x19\xdf\x8an\x19\x9e\xd5\x1c \x97]\xa4\xe9\x96b\x16s\xa07D\x19\xec\x9e*\xccX\x8b\xab\x95\xc4CE\x19\x8b\x98u4\x9a\xd0\xa2\x99~\xfa\xc80Lr\xd0\x0e\xc8<\x85\x0e\xc23\xce\xd3\x07\x11"\xd9\xe3N\xd4\xf59\x91\xd8\xa2 \xf3\x08\xf5\x868\xa9cE-\x1c{\x04\x93::\xc0\x9a|\xd1\x07\xd7v\xc6\x00\xe2(P7bm\xa7\x9eE>\xcfX\x05\x16\x10*\x94kXh\x01a\x8e\x05\x8c#&\xd6&\xb0\x00}u\x0b\xd0\x0b\xc7\xbe\xd9A*\xd6\xc1\x04P7!\xa0\xb6\xba\xa16\xe5\xa0\xc6\x88\xec\xcd\x90%X\x827mvZr\x8e\x9b\xc5\x98cEV{\x18m\xb5\xa3\xfeZm\x81n\x8fpt;\x855\xda!\x16\x1b\xca\x02u\x9a\x03u\x14\x0b\xb5\x8fE\xf6\xb2@\xbd\x95\x03u\xc2S\x1a\xe9\xf1\x15j^\xa1p\x9b\x0bj"@\x7f\x13x\xa4\xbe\x08\x95\x97\xdbg\\H\xf3\x17\xbb\xc7\x81s\x8c\xe6v4\xf8\x83\xe5\x02?+\x04\x7f\x028\xb7\x88W\xea\x83\xc5\xddsu\xcdI\xe0\x1c]\xa5\xae\x19t\xa5nJ\xdd\x8e0\xc8\x16A\\$!<\x0bq1k\xc7\xc5,\'.\x16\xc5\xf2S\xe8\xb8\xb8\xdf\xb7\x0c\xc9\xf3\xe0\x08\xc7\x83\xe7\xb0\x1e,\xb1eeY\xa0\x9e\xf13.6\xb3\xb5pY\xa0\xde\xe9;\xd4\x8er9\xec\xddB\x87\xbd\x0b8g\xf1\xd1\xa6\x81}\x1b+\x8b\x9c\xef\xf13\xff\xd4\xb3\xef\x9fe\x81z\xaf\xefPw\x97\xcb$\xee\x13\x9aD\x148\xe7\xf0&Q_V{^(\x06\x7f\x80^\xcb\xc0\x99\x17\'\xa0\xb00\x01\xc5\x80sz\x95\x04\x14v\xad\x1c(\x15G\xa8\xb9\x9d\xad\xd2\xed\x94f\x0c\xe5$u\xe9\xbc\x9aT$M\n\xc3G\x1c\xc9\xea\x062\xeb\x06\x99\x85\xc7\xa5\xa1\xde\xd0\x18\xb7\x14Z\xe4\x95Bu\x13(\x88]P\xb4y\x87\x98\xe7-\xe7}\n\xa0\xed\xee\x0c\xea+\xc6\xfb}\xc7\xe8M\x8e<sN\n]\xf9\x02pT\x94+\xb7\xbb\x13\xbe\xaf\x92\xd5|\x8a\x95\xed\xeeL\xef+\xc6\xb4\xef\x18;|\xd7\xbe.\xd4\xfe\x03\xc0I\xe1\xb5\xdf\\\x1e\x9b\xcd\x08C\xf02p\x96(j\xde\xf7B\xf2\xb6\x85T*\x19\x15\x7f1\xbc\xe8IO\xde\x02\xf2\x16v<a*\xb5\x94\x96\xd9G\xf7,\xcc\xec\x12\xdb\xa1\x0c\x8f\xd3\x1b\x06\xb0\x12X\xd8\xb5\xac\x12\xf3\xd7\x05V|\xda\xd5o\x87\xfd\xaem\xbec|\xc8\xa7\xcf\xf4\x0e\xc6\x862\xa8\xff\x11\xb7\xfa\t\x15\xa6\xd7\x0f\x03\xe7AO\xa8\xbd\x19\xedfV\xea\x1c\xb6\x1c\x8b\xf9\xe9cn\xd0d\xfdk\xbd%o\xc3\xe8Q\xa0L,v\xa2\xd2Y\x1f,\xe2,\xe9I\xb1<\x01\xa8\x1eg\x1b\x07\xf4R\x01\xea\x0e\xa0&\x81:\x04\xd4\x00\xf6\xe0\x8a\xb3\xc7\xe4>\xb8\xc2\xab\xd1\x9er\xefk\x05<\x1d\x96\x11\x8dYX\xbc>\xc3\xd9\x15z\x1a\xbb\x05R\x03\xdb\xfc\xfc-\x10\xde\xac\x9f\xe3~\xa4\xf3\xb0\x05S\xbf\xc6\xf8\x85\x12x\x81\xb3\xb7\xf1<v\x0b\x80#\x01}-\t\xbc\xe4\x8f\x04\xda\x04\x12\xd0\xd7\x94\xc0+\x9c\x9d\x85\x97\xb1\'\x05f\xd8\'\xc1\xf2\x9d\x14(\xfa\xf6\x167\x0b\xcb\xb2\xd70\xfb\xfe\xadl\x89M7\xb5\xd7\xd8\x19\xe1\xa5\x9e78\x15\xe2\xeb\xd8=\x9a\x1d\xec\xb0\x13\x06\xc9e\xd1\xe9\x0f\xcey\xa5\xcb\x1c\xd4oaQ\xd7\x96*?^\x1d\xf8\x8e\xb0z}\x1b8o\xa2\xaa\xd7F\xb6\x85f/\xd7\xaf\xa2m\x9aE\xbb\x91\xef\xa1m\xb3\x1a\n&\x84E|\xc0\xd1\xf2\xfbX-W{\xd1\xf2G\xc2j\xffC\xe0\xbc\x8b\xd2\xb2\xb3\xb7Y\xb2\x07\x17\x06\xc3O\\{\x85\x94\xfa\x18\x1b\x0c\xa7\xd8\xe6\xc5\xd5\x0c\x86\xd9B-\x7f\x861\xb8\x16A0\xe4o\x87\xf0\x0c\xee\x0b\x8e\xc1}\x8e\xdd\x98\xe1\x04\xc3\xd2\x91\\\x11\x1d\x18\xe4\x04\xc3+\x1c\xd4_aQ\xd7\x96*?\x9e\x9b|#\x0c\x86_\x03\xe7K|0\xec\x875\xc2\xd5\xb3\xcdlQ0\xfc\x0em\x9b\x9c`X\xbaE\xfc\xc0\xd1\xf2\xf7X-W{\xd1\xf2O\xc2`\xf8#p\xbeEi\xb9E\x10\x0cW\x91Ra0\xfc\xc5\xb5AH\xa9\x9f\xb1\'mk\xd8\xd9\xdd\xd2O\xda\x92O\x0b\xa7\xd58Y8\xa74E\xcb\xb9\xe8o.w\xb6\xfd7\xa1\xabq\xd4I@\xe7\x8cu\xc9\xc8\xb8\x92\xfa\xc3UeQ\xeaw8\xa5\xb6\xbey\x04 4\x89Gi\x03\xea/\xf2\xf4Fv\xe64"\xab\xc9\xa3Y57B\x05\xfb\x8fU\xde\x12\xbd\xd3}\x92\xd3\x1el\x07\x1b\x8c\xfe\x89\xc9^<\x14E\x03[\xaa\xce]\x83D\xe3\x84\x16-z\xce>\x1cj\xeb\xc19\xe4\xeax\x98Sx8\x19\xc1)\x94\xf3\xbe(Us\xe6\xda\xc1\xb1\xc7)\xce\xeae\x94\xb3\xaa\x1dw\x1f\xf1\x0b@\xb3\x15\x18\xff\x00\xf57P\x7f\x02\xf5+P\x9f\x02\xf5*P/\x02\xf5,PO\x02\xd5\xcd\x94D/\xab\x80r\xc4\xe4|\x95p\x9es\xb4V\xe1\xc6\x1c\x00\x06\xa1\xfe\x07SY{R'},)})
def mandelbrot_kernel(__gn):
    DA, (sig_image,), pack, buf, args, launch, (fn, gx, gy, gz, bx, by, bz, smem, stream), ok, failed, slow = __gn.fast_path()
    return lambda image, x0, y0, dx, dy, max_iter: (((err := launch(fn, gx, gy, gz, bx, by, bz, smem, stream, (pack(buf, 0, image._gn_args, x0, y0, dx, dy, max_iter) or args), 0)[0]) is ok or failed(err)) and None) if image.__class__ is DA and image._gn_wsig is sig_image and x0.__class__ is float and y0.__class__ is float and dx.__class__ is float and dy.__class__ is float and max_iter.__class__ is int and -2147483648 <= max_iter <= 2147483647 else slow(image, x0, y0, dx, dy, max_iter)











def render(width: int, height: int, max_iter: int = 200):
    image = gn.empty((height, width), gn.u8)
    x0, x1, y0, y1 = -2.2, 0.8, -1.2, 1.2
    grid = GridDim2D((width + 15) // 16, (height + 15) // 16)
    mandelbrot_kernel.launch(grid, BlockDim2D(16, 16), 0, DEFAULT_STREAM)(
        image, x0, y0, (x1 - x0) / width, (y1 - y0) / height, max_iter)
    return image.to_host()


def reference(width: int, height: int, max_iter: int = 200) -> np.ndarray:
    """The same iteration in float32 NumPy, for checking."""
    x0, x1, y0, y1 = -2.2, 0.8, -1.2, 1.2
    dx, dy = np.float32((x1 - x0) / width), np.float32((y1 - y0) / height)
    cr = np.float32(x0) + np.arange(width, dtype=np.float32)[None, :] * dx
    ci = np.float32(y0) + np.arange(height, dtype=np.float32)[:, None] * dy
    cr, ci = np.broadcast_to(cr, (height, width)), np.broadcast_to(ci, (height, width))
    zr = np.zeros((height, width), np.float32)
    zi = np.zeros((height, width), np.float32)
    n = np.zeros((height, width), np.int32)
    for _ in range(max_iter):
        active = (zr * zr + zi * zi) <= 4.0
        zr, zi = (np.where(active, zr * zr - zi * zi + cr, zr),
                  np.where(active, np.float32(2.0) * zr * zi + ci, zi))
        n += active
    return (255 * n // max_iter).astype(np.uint8)


def write_png(path: str, gray: np.ndarray) -> None:
    height, width = gray.shape
    raw = b"".join(b"\x00" + gray[row].tobytes() for row in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def run(width: int = 160, height: int = 120, max_iter: int = 100, seed=None):
    return render(width, height, max_iter), reference(width, height, max_iter).astype(np.float64)


def main(path: str = "mandelbrot.png"):
    image = render(800, 600)
    write_png(path, image)
    print(f"mandelbrot on {gn.backend()}: wrote {path} ({image.shape[1]}x{image.shape[0]})")


if __name__ == "__main__":
    main(*sys.argv[1:2])
