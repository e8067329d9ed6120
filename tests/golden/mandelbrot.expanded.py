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


@gpu_kernel(Kernel2D, _spec=('gpu_native.KernelSpec', 3, '0.1.0', 'mandelbrot_kernel', 'mandelbrot', 'examples/mandelbrot.py', 24, 2, (('image', 'u8', 2, True), ('x0', 'f32', 0, False), ('y0', 'f32', 0, False), ('dx', 'f32', 0, False), ('dy', 'f32', 0, False), ('max_iter', 'i32', 0, False)), (), (True, False, None), (((), 'gn_mandelbrot_kernel', 15746425396505326211, '// gpu_native 0.1.0: kernel mandelbrot_kernel of mandelbrot (generated; do not edit)\n#define GN_KERNEL_ID 0xda868a7850e3b283ull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_mandelbrot_kernel(\n    unsigned char* __restrict__ image,\n    gn_i64 __gn_image_n0,\n    gn_i64 __gn_image_n1,\n    float x0,\n    float y0,\n    float dx,\n    float dy,\n    int max_iter,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long px{};\n    long long py{};\n    float cr{};\n    float ci{};\n    float zr{};\n    float zi{};\n    int n{};\n    float __gn_t0{};\n    float __gn_t1{};\n#line 25 "mandelbrot.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_image_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_image_n1))) return;\n#line 27 "mandelbrot.py"\n    px = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);\n    py = ((gn_i64)blockIdx.y * blockDim.y + threadIdx.y);\n#line 28 "mandelbrot.py"\n    cr = (x0 + (((float)(px)) * dx));\n#line 29 "mandelbrot.py"\n    ci = (y0 + (((float)(py)) * dy));\n#line 30 "mandelbrot.py"\n    zr = 0.0f;\n#line 31 "mandelbrot.py"\n    zi = 0.0f;\n#line 32 "mandelbrot.py"\n    n = 0;\n#line 33 "mandelbrot.py"\n    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {\n#line 34 "mandelbrot.py"\n        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);\n        __gn_t1 = (((2.0f * zr) * zi) + ci);\n        zr = __gn_t0;\n        zi = __gn_t1;\n#line 35 "mandelbrot.py"\n        n = ((int)((unsigned int)(n) + (unsigned int)(1)));\n    }\n#line 36 "mandelbrot.py"\n    image[gn_at2(__gn_err, py, __gn_image_n0, 1u, px, __gn_image_n1, 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));\n}\n\n// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.\nextern "C" __global__ void gn_mandelbrot_kernel_i32(\n    unsigned char* __restrict__ image,\n    gn_i64 __gn_image_n0,\n    gn_i64 __gn_image_n1,\n    float x0,\n    float y0,\n    float dx,\n    float dy,\n    int max_iter,\n    gn_error_record* __restrict__ __gn_err)\n{\n    int px{};\n    int py{};\n    float cr{};\n    float ci{};\n    float zr{};\n    float zi{};\n    int n{};\n    float __gn_t0{};\n    float __gn_t1{};\n#line 25 "mandelbrot.py"\n    // grid tail: this thread\'s uid lies past every array it indexes\n    if (((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_image_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_image_n1)))) return;\n#line 27 "mandelbrot.py"\n    px = ((int)(blockIdx.x * blockDim.x + threadIdx.x));\n    py = ((int)(blockIdx.y * blockDim.y + threadIdx.y));\n#line 28 "mandelbrot.py"\n    cr = (x0 + (((float)(((gn_i64)px))) * dx));\n#line 29 "mandelbrot.py"\n    ci = (y0 + (((float)(((gn_i64)py))) * dy));\n#line 30 "mandelbrot.py"\n    zr = 0.0f;\n#line 31 "mandelbrot.py"\n    zi = 0.0f;\n#line 32 "mandelbrot.py"\n    n = 0;\n#line 33 "mandelbrot.py"\n    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {\n#line 34 "mandelbrot.py"\n        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);\n        __gn_t1 = (((2.0f * zr) * zi) + ci);\n        zr = __gn_t0;\n        zi = __gn_t1;\n#line 35 "mandelbrot.py"\n        n = ((int)((unsigned int)(n) + (unsigned int)(1)));\n    }\n#line 36 "mandelbrot.py"\n    image[gn_at2_32(__gn_err, py, ((int)__gn_image_n0), 1u, px, ((int)__gn_image_n1), 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));\n}\n\n', (('zerodiv', 36, 23, 42, '', 0, 1, 'integer // by zero'), ('index', 36, 4, 17, 'image', 0, 2, ''), ('index', 36, 4, 17, 'image', 1, 2, '')), ('index32',), (), b'x\xda\xbd[\xf7_\xdbF\x147Y\xe0$PH\x1b\x12f\x04IZ3\x02f\xa5@L\x0b!\xa1MCH\x1b\x9c\xa4-M\xa9\xb0\x85\xa3\xc6\xc8\xae\xb0\x12\x8b\xee\xbdw\xba\xf7H\xf7\xde\x9f\xfes\xed\x9d\xce\xf7d\xd9\'0Or\xfc\xc3\xf1\xa4\xa7\xd3}\xef\xed\xd3\x1d\xa1\x8d\x81@@\xad \x8dQK\x9a\xc1\xc1\xf0\x90\x1c\x97\x17\xc3\xb1\x05y!\x1e\x0f\x87\xfe%7C\x16{\x13i\xe2j,\x13\xdaB\xaf\xb6\x92f6e\xe81e6-kF=\xb9T\xb2\xf2R:\xa9,\xf7.\xc9Z\\I.\xe8\xa9LO\xdaT\x1b\xe8\x00\xb4\xb3\xba\x93v\x8c\xd2\xd7(\x8b\x92\xfd\xd0\xfc\x05E\xd7\x94dH]\x92\x13\xca\xa84y\xfa\xc8\xc4lR\x8d)\'\x8cL\xff\x919c\xf8\\\xb7\x94\r\x8fJ\x8b\x03\xfd\xdd\x92\xc9\x89x\x96\x13&#BU\xf4\xed\xdbIs\xdcz]T\x97\xd5\xcc\xf2\x14\xfb\x85\xe8\xf8F50O\xa63jJ[\x8eN\xcd\xacw6\xfb`6u\xb4c\x17i$\xf2\xb3\xb0\xcf\xa5\xcdn)\x9d=\'\x8dI\xc6p\xa8\x7fhH\xea\x944\xa9\xb7\x97\xcc5;\xaff\x14\xbd\x83\x81\xa4\xddg\xc9\xb5\xba\x81^m\xa6/#Cd\xe7*\xf8\xbb\xd9=\xfaJK3\xec\xb9\x00\xd5\x84\xb3\x7f\xc5\xda\xfd\x03\xce\xfe\x98\xd9\xee\xa2M\xa7\xf7\xd9R\x00F%iV\x14=\x15W/2\xbc\x95\x1c\x1b\x83jMi\x875\xa5\x8c\x92Pt\xfa\xc2\x05S\xa2]\xd6\x0b\xbe\x91\xbe\x85\xf2\xd5V\xdaq\x7f\x0e|\xf1\x8f\x03\x1e\x95\xd4\x81\xfe\x8e\xd1\xd0\x06\x18\'&\'e\xfd\x98\xb6\x982,7\x19\xe8/\xe4E\xcd\xb4\xc2\xe6A\xef\x85\xa8\xdc\xadG\xcf\xc8\xbaAg\xcf_\xcd\x9e\xd9F\x1aF\x05I\x13Ei\xa3\x1d\xad\r\xb0\x8c\xe9\x14\xc1\xcepT\x03"\x1b\xdbv\x84\xa1H\xe0\x16\x96\x08\x829h\x1a\x81\x13vJ\x85\x0e\xa1\x15\x0ey\ri\xa6P\xe2h\x01\xfd\xfa!\x8e:\x818j=\xf9M\xa3\'h\x93$He\x18\x8ck\x1d\xd0\xd4\xff<\xa1jE{3EuX\xd5N\xa6\x19\x96\x9d\x0eT\x96r;\xd9\xf5u\xc0\xa1\xde<3%\xec^\xe9\xecN\x9d\xab\xb7\x97\xdd\xa8\x07V\r\x0f\x0eSB\xcf\xb4\xee\r\xbb;\xe6n*\xa9M<\x12M\xca\\\xa0\xf6\xd8\r@\xedBH\xb5\tL\xdf\xea\xb8\'\'\xd5t\x96\xc8\xd3$\xe2\x9cJ\xca\x99i\xd9L\xd1l\xd6c\xa8\xf1P\x87{\x8098\xe8>\x8f\xe6\xa2\x00C\x1fM\xe7\xc2~\x0b\xcc\xa1\t\xedK5\xdc\xdc}\xf1\xa5=\x80\xc8\xc6\xd6\x8a\x95o\x15\x0f\xb1%\xc9\xb7XJf!\x926\xb4\x94\xb6\xf2\x18\xe9\x8b\x94\xf6\n\xa4\xd4\x8e\x90R\x03$\xbb\xa6\xb2VY[xx\x9f\xd0u\xd9\xb4\xad\xb3\x81\xd7\x19Q\x83>\x92H\xa6\x16\xe4\xe4\x8cS\x13P\x95\xb0.\xd7\xc3\x84\xf7\xa3\xb3\xe1&\x9eLq\xca\xa8\xe2\x139\xa5,2(!\x00e\xc3\xbb\x01\x1bk-t]\x18t\x95\xdcTf3)=\'\xafN\x00\xd4A\x01m\x80\xcb}@I\x9ca\xd7\x8d\x8c\xd1\xc8\xf5@\x1dd\x9dS\xd9\xcb\x0b\x05+@\x185yu\x94&u\x8dI}\xc2|\xd5\xed\xccW\x15\x08\x19\xee\x05\xcf\x0f\xae5p\x9eG\xf5\xf8\x94\xc3\xed\xd1\xdd\xa6-\xcah\xe1\xe2\x84\xd8\xc5\xae{\x81s\x80%D\x0b<\x055\xb1\xbc\xac&\xb4\xc2\xfe\xb5@\xf5!\xd0\xb7s;Q\x0f\xd1\x8e\x87\xf2\xd0\xaf\xe8\xdd\xd2\x8aJ\x8coE\'\x86G\x9a\x03\xf4\xb2\x936]R\x8c0\xfb{\xc2\x8c\xc1\xef\xa9\xae\x19kq\xb5\x92x\xb0(c\xd1\xbf\xfb2}\x8c=\x04\x13\x1c\xb0\x82\xb1H\x99\x03\xf0\x8c\xfd\xf4A\x848\xf68\x93t]N\x1c\x96\x18\xe8\x1c\xc2=aA\xdaXQ\x0b\xc7\x1e\xc6\xa4\x8dv\xb0$_t!\xb4\x9bQ\x808\x02\xd4\x8dX\xbb\xa9\xe3Q\xcf3V\x81\xf6\xc3\x852\x8d\xb8j?"\xd0\xfe\x18bR\xad.\xda\xd7W\xd7\xbe^8\xf6\xcd6Rw\xf9\x8f\x03u\x13\x02j\x8b\x13jc\x0ej\x8c\xca\xdd\x0c\x13\xa1R\xbci\xb3\x83\xc88n\x16c\x8e\x15Y\xeca\xb4\xc5\x8e\xf8k\xb1\x05\xba="\xd0\xed$\xd6`\x07y\\(\x0b\xd4)\x01\xd4\x11,\xd4^\x1e\xd1\xcb\x02\xf5V\x01\xd4qO\xe9\xa3\xdbW\xa8y\x05\xc2m\x0e\xa8\x89\x00\xfb\x8d\xe3\x91\xfa"TQN\x9fv \xcd_\xe4\x1e\x07\xce1\x96\xd3\xd1\xe0\x0f\x96\x0b\xfc\x8c+\xf8\x13\xc0\xb9\xc5}\x85>P\xdc=W\xcf\x9c\x04\xce\xd1U\xea\x99\x01G\xdaf\xd4\xed\x08\x83lv\x89\x8b4\x84g!.f\xad\xb8\x98\x15\xc4\xc5\xa2X~\n\x1d\x17\xf7\xfb\x96\x1dE\x1e\x1c\x15x\xf0,\xd6\x83%\xbe\x9c,\x0b\xd43~\xc6\xc5&\xbe\x06.\x0b\xd4;}\x87\xda^.\x87\xbd\xdb\xd5a\xef\x02\xceY|\xb4\xa9\xe7\xdf\xc4\xca"\xe7{\xfc\xcc?u\xfc\xbbgY\xa0\xde\xeb;\xd4\xdd\xe52\x89\xfb\\Mb\x1e8\xe7\xf0&QWV{^(\x06\x7f\x80]\xcb\xc0\x99sO@\x11\xd7\x04\x14\x03\xce\xe9U\x12P\xc4\xb1r`T\x1c\xa1\xe66\xbe:\xb7R\x9a1\x98\x93\xd4\xa5\xf3jR\x914)\x02\x1fo$\xd2\rd\xd6\x052\x8b\x8cI\x83=\xe1Qa)\xb4(*\x85j\xc7Q\x10;\xa1h\xf3\x0e1\xcf[\xce\xfb\x14@\xdb\x9c\x19\xd4W\x8c\xf7\xfb\x8e\xd1\x9b\x1cE\xe6\x9ctu\xe5\x0b\xc0QQ\xae\xdc\xe6L\xf8\xbeJV\xf3)V\xb693\xbd\xaf\x18\xd3\xbecl\xf7]\xfb\xba\xab\xf6\x1f\x00N\n\xaf\xfd\xa6\xf2\xd8l\xc65\x04/\x03g\x89\xa1\x16}\'\xa4o[H\xa5\x92\xf3\xee_\n/z\xd2\x93\xb7\x80\xbc\x85\x1fK\x98L-\xa5e\xfe\xb1=\x0b3\xbb\xc4w&#c\xec\x86\x01\xac\x04\x16v\r\xaf\xc4\xfcu\x81\x15\x9fv\xf3\xdb`\x9fk\x9b\xef\x18\x1f\xf2\xe9\xf3\xbc\x8d\xb1\xbe\x0c\xea\x7f\xc4\xa9~JE\xd8\xf5\xc3\xc0y\xd0\x13joF\xbb\x99\x97:\x87\x89cq?}\xcc\t\x9a\xae\x7f\xc9[\xf26\x8a\x1e\x05\xca\xc4b\xa7*\x9d\xf1\xc1"\xce\xd2\x9e\x0c\xcb\x13\x80\xeaq\xbea\xc0.\x15\xa0\xee\x00j\x02\xa8C@\xf5c\x0f\xac\xd8{K\xce\x03+\xa2\x1a\xed)\xe7~V\xc0\xd3!\x19\xb71\x0b\x8b\xd7g\x04\xbbAOc\xb7?\xaaa{_\xbc\xfd!\x9a\xf5s\xc2\x8ft\x1e\xb6_\xea\xd6\x18\xbfP\x02/\x08\xf65\x9e\xc7n\x01\x08$\xa0\xaf%\x81\x97\xfc\x91@\xab\x8b\x04\xf45%\xf0\x8a`g\xe1e\xec\t\x81i\xfeI\xb0|\'\x04\x8a\xbe\xbd\xc5\xcd\xc2\xb2\xec5\xcc~\x7f\x0b_b\xb3\xcd\xec5vFD\xa9\xe7\rA\x85\xf8:v\x8ff\x07?\xe4\x84Ar\xd9\xed\xd4\x87\xe0\x9c\xd2e\x01\xea\xb7\xb0\xa8kJ\x95\x9f\xa8\x0e|\xc7\xb5z}\x1b8o\xa2\xaa\xd7\x06\xbe\x85f-\xd7\xaf\xa2m\x9aE\xbb\x91\xef\xa1m3\x08\x05\x13\xc2">\x10h\xf9}\xac\x96\x83^\xb4\xfc\x91k\xb5\xff!p\xdeEi\xd9\xde\xdb,\xd9\x83\x0b\x83\xe1\'\x8e\xbdBF}\x8c\r\x86\x93|\xf3\xe2j\x06\xc3l\xa1\x96?\xc3\x18\\\xb3K0\x14o\x87\x88\x0c\xee\x0b\x81\xc1}\x8e\xdd\x98\x11\x04\xc3\xd2\x91\\q;((\x08\x86W\x04\xa8\xbf\xc2\xa2\xae)U~"7\xf9\xc65\x18~\r\x9c/\xf1\xc1\xb0\x0f\xd6\x08W\xcf6\xb3E\xc1\xf0;\xb4m\n\x82a\xe9\x16\xf1\x83@\xcb\xdfc\xb5\x1c\xf4\xa2\xe5\x9f\\\x83\xe1\x8f\xc0\xf9\x16\xa5\xe5f\x97`\xb8\x8a\x94\n\x83\xe1/\x8e\rBF\xfd\x8c=a[\xcd\xcf\xec\x96~\xc2\x96~Z8\xad\xc6\xe9\xc29\xa5)Z\xceE\x7fs\xb8\xb3\xe5\xbf\t]\x8d\xa3N\x00\xdag\xabKF&\x94\xd4\x1f\x8e*\x8bQ\xbf\xc3\xe9\xb4\xf5\xcd#\x00\xa1\xc9}\x94V\xa0\xfe\xa2Oo\xe4gM\xa3\xb2\x9a<\x9aUs#T\xf0\xff\xad\xca[\xa2w8OpZ\x83\xed\xe0\x83\xb1\x7f^\xb2\x16\x0fE\xd1\xc0\x92\xaa}\xd7\xa0\xd18\xa1\xcd\x17=g\x1d\n\xb5\xf4`\x1fn\xb5=\xcc.<\xec\x8c`\x17\xcay_\x94\x82\x82\xb9\xb6\x0b\xecqR\xb0z\x19\x11\xacj\xc7\x9c\xc7\xfb\x02\xd0l\x05\xc6?@\xfd\r\xd4\x9f@\xfd\n\xd4\xa7@\xbd\n\xd4\x8b@=\x0b\xd4\x93@uq%\xb1\xcb*\xa0l1\xd9_%\xec\xe7l\xadU81\x07\x80A\xa9\xff\x01\xf2cw\xae'),)))
def mandelbrot_kernel(_gn_context):
    _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; _gn_int = _gn_fast.int; _gn_float = _gn_fast.float; _gn_sig_image = _gn_fast.signatures['image']; _gn_pack = _gn_fast.pack; _gn_buf = _gn_fast.buffer; _gn_address = _gn_fast.address; _gn_launch = _gn_fast.launch; _gn_fn = _gn_fast.function; _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid; _gn_bx, _gn_by, _gn_bz = _gn_fast.block; _gn_smem = _gn_fast.shared_mem_bytes; _gn_stream = _gn_fast.stream; _gn_ok = _gn_fast.success; _gn_failed = _gn_fast.failed; _gn_slow = _gn_fast.slow
    return lambda image, x0, y0, dx, dy, max_iter: (((_gn_err := _gn_launch(_gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream, (_gn_pack(_gn_buf, 0, image.launch_args, x0, y0, dx, dy, max_iter) or _gn_address), 0)[0]) is _gn_ok or _gn_failed(_gn_err)) and None) if image.__class__ is _gn_DA and image.launch_sig_mut is _gn_sig_image and x0.__class__ is _gn_float and -3.4028235677973366e+38 < x0 < 3.4028235677973366e+38 and y0.__class__ is _gn_float and -3.4028235677973366e+38 < y0 < 3.4028235677973366e+38 and dx.__class__ is _gn_float and -3.4028235677973366e+38 < dx < 3.4028235677973366e+38 and dy.__class__ is _gn_float and -3.4028235677973366e+38 < dy < 3.4028235677973366e+38 and max_iter.__class__ is _gn_int and -2147483648 <= max_iter <= 2147483647 else _gn_slow(image, x0, y0, dx, dy, max_iter)











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
