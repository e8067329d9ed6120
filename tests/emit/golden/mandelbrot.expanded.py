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


# gpu_native: kernel mandelbrot_kernel, lines 24-36 of examples/mandelbrot.py, became
# the launcher factory below (`gpu-native expand --exact` prints the module as imported,
# with the full spec).
#   Kernel2D mandelbrot_kernel(image: CUDASliceMut2D[u8], x0: f32, y0: f32, dx: f32, dy:
#       f32, max_iter: i32)
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_mandelbrot_kernel (kernel id 0xda868a7850e3b283)
#     traits: index32
#     error sites: 1 division check, 2 bounds checks (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 3,649 characters (`expand --cuda`); simulator IR: 2,097 bytes
@gpu_kernel(Kernel2D, _spec=...)  # L24
def mandelbrot_kernel(_gn_context):  # L25
    _gn_fast = _gn_context.fast_path()            # L26
    _gn_DA = _gn_fast.DeviceArray                 # L26
    _gn_int = _gn_fast.int                        # L26
    _gn_float = _gn_fast.float                    # L26
    _gn_sig_image = _gn_fast.signatures['image']  # L26
    _gn_pack = _gn_fast.pack                      # L26
    _gn_buf = _gn_fast.buffer                     # L26
    _gn_address = _gn_fast.address                # L26
    _gn_launch = _gn_fast.launch                  # L26
    _gn_fn = _gn_fast.function                    # L26
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid        # L26
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block       # L26
    _gn_smem = _gn_fast.shared_mem_bytes          # L26
    _gn_stream = _gn_fast.stream                  # L26
    _gn_ok = _gn_fast.success                     # L26
    _gn_failed = _gn_fast.failed                  # L26
    _gn_slow = _gn_fast.slow                      # L26
    return lambda image, x0, y0, dx, dy, max_iter: (                                      # L27
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L27
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L27
            (_gn_pack(                                                                    # L27
                _gn_buf, 0, image.launch_args, x0, y0, dx, dy, max_iter,                  # L27
            ) or _gn_address),                                                            # L27
            0,                                                                            # L27
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L27
        # ... when every argument is exactly what the kernel was compiled for
        if image.__class__ is _gn_DA and image.launch_sig_mut is _gn_sig_image            # L27
        and x0.__class__ is _gn_float                                                     # L27
        and -3.4028235677973366e+38 < x0 < 3.4028235677973366e+38                         # L27
        and y0.__class__ is _gn_float                                                     # L27
        and -3.4028235677973366e+38 < y0 < 3.4028235677973366e+38                         # L27
        and dx.__class__ is _gn_float                                                     # L27
        and -3.4028235677973366e+38 < dx < 3.4028235677973366e+38                         # L27
        and dy.__class__ is _gn_float                                                     # L27
        and -3.4028235677973366e+38 < dy < 3.4028235677973366e+38                         # L27
        and max_iter.__class__ is _gn_int and -2147483648 <= max_iter <= 2147483647       # L27
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(image, x0, y0, dx, dy, max_iter)                                    # L27
    )                                                                                     # L27


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
