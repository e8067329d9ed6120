"""Box blur of an 8-bit RGB image (height x width x 3 bytes), clamping at the edges, with
integer arithmetic and rounding to nearest.

Source algorithm: the box filter of image-processing texts (R. C. Gonzalez and R. E. Woods,
"Digital Image Processing", the smoothing spatial filters of chapter 3), in the
one-thread-per-pixel form of the CUDA image-processing tutorials (e.g. the Numba-CUDA and
"Programming Massively Parallel Processors" (Hwu, Kirk, El Hajj) blur kernels): thread (x, y)
averages the ``(2R + 1)^2`` pixels around it, channel by channel, with coordinates clamped into
the image, and writes its three output bytes.

What it exercises: ``u8`` arrays (3-D: rows, columns, channels), integer accumulation in ``i32``
and a narrowing store back to ``u8``, three stores per thread into its own pixel
(``out[y, x, c]`` for each channel), ``min``/``max`` clamping.
"""

import numpy as np
from _gallery import compare, poison

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim2D,
    CUDASlice3D,
    CUDASliceMut3D,
    FlatLayout2D,
    GridDim2D,
    Kernel2D,
    gpu_kernel,
    u8,
)

RADIUS = 2
TAPS = (2 * RADIUS + 1) * (2 * RADIUS + 1)
BX = 16
BY = 16

# Integer arithmetic with a fixed rounding: exact.
TOLERANCE = ("exact", 0)


@gpu_kernel(Kernel2D)
def blur_rgb_kernel(src: CUDASlice3D[u8], dst: CUDASliceMut3D[u8]):
    x, y = FlatLayout2D.uid()
    h = src.shape[0]
    w = src.shape[1]
    if y < h and x < w:
        for c in range(3):
            total = 0
            for dy in range(-RADIUS, RADIUS + 1):
                yy = min(max(y + dy, 0), h - 1)
                for dx in range(-RADIUS, RADIUS + 1):
                    xx = min(max(x + dx, 0), w - 1)
                    total += src[yy, xx, c]
            dst[y, x, c] = (total + TAPS // 2) // TAPS


def blur_rgb(src, dst):
    h, w, _ = src.shape
    grid = GridDim2D((w + BX - 1) // BX, (h + BY - 1) // BY)
    blur_rgb_kernel.launch(grid, BlockDim2D(BX, BY), 0, DEFAULT_STREAM)(src, dst)


def reference(image):
    h, w, _ = image.shape
    padded = np.pad(image.astype(np.int64), ((RADIUS, RADIUS), (RADIUS, RADIUS), (0, 0)),
                    mode="edge")
    total = np.zeros((h, w, 3), dtype=np.int64)
    for dy in range(2 * RADIUS + 1):
        for dx in range(2 * RADIUS + 1):
            total += padded[dy:dy + h, dx:dx + w]
    return ((total + TAPS // 2) // TAPS).astype(np.float64)


def run(h: int = 37, w: int = 50, seed=None):
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    out = gn.empty((h, w, 3), gn.u8)
    poison(out)
    blur_rgb(gn.to_device(image), out)
    return out.to_host(), reference(image)


def main():
    out, ref = run()
    compare(out, ref, *TOLERANCE)
    print(f"blur_rgb on {gn.backend()}: {out.shape} image blurred")


if __name__ == "__main__":
    main()
