// gpu_native 0.1.0: kernel mandelbrot_kernel of mandelbrot (generated; do not edit)
#define GN_KERNEL_ID 0xda868a7850e3b283ull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_mandelbrot_kernel(
    unsigned char* __restrict__ image,
    gn_i64 __gn_image_n0,
    gn_i64 __gn_image_n1,
    float x0,
    float y0,
    float dx,
    float dy,
    int max_iter,
    gn_error_record* __restrict__ __gn_err)
{
    long long px{};
    long long py{};
    float cr{};
    float ci{};
    float zr{};
    float zi{};
    int n{};
    float __gn_t0{};
    float __gn_t1{};
#line 25 "mandelbrot.py"  // mandelbrot.py:25  def mandelbrot_kernel(image: CUDASliceMut2D[u8], x0: f32, y0: f32, dx: f32, dy: f32,
    // grid tail: this thread's uid lies past every array it indexes
    if (((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_image_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_image_n1))) return;
#line 27 "mandelbrot.py"  // mandelbrot.py:27  px, py = FlatLayout2D.uid()
    px = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
    py = ((gn_i64)blockIdx.y * blockDim.y + threadIdx.y);
#line 28 "mandelbrot.py"  // mandelbrot.py:28  cr = x0 + f32(px) * dx
    cr = (x0 + (((float)(px)) * dx));
#line 29 "mandelbrot.py"  // mandelbrot.py:29  ci = y0 + f32(py) * dy
    ci = (y0 + (((float)(py)) * dy));
#line 30 "mandelbrot.py"  // mandelbrot.py:30  zr = f32(0.0)
    zr = 0.0f;
#line 31 "mandelbrot.py"  // mandelbrot.py:31  zi = f32(0.0)
    zi = 0.0f;
#line 32 "mandelbrot.py"  // mandelbrot.py:32  n = 0
    n = 0;
#line 33 "mandelbrot.py"  // mandelbrot.py:33  while n < max_iter and zr * zr + zi * zi <= 4.0:
    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {
#line 34 "mandelbrot.py"  // mandelbrot.py:34  zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);
        __gn_t1 = (((2.0f * zr) * zi) + ci);
        zr = __gn_t0;
        zi = __gn_t1;
#line 35 "mandelbrot.py"  // mandelbrot.py:35  n += 1
        n = ((int)((unsigned int)(n) + (unsigned int)(1)));
    }
#line 36 "mandelbrot.py"  // mandelbrot.py:36  image[py, px] = u8(255 * n // max_iter)
    image[gn_at2(__gn_err, py, __gn_image_n0, 1u, px, __gn_image_n1, 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));
}

// The same kernel with 32-bit index arithmetic, where it gives the same values: the launcher runs it when no array has more than 2**31 - 2**20 elements and the grid no more threads along any axis.
extern "C" __global__ void gn_mandelbrot_kernel_i32(
    unsigned char* __restrict__ image,
    gn_i64 __gn_image_n0,
    gn_i64 __gn_image_n1,
    float x0,
    float y0,
    float dx,
    float dy,
    int max_iter,
    gn_error_record* __restrict__ __gn_err)
{
    int px{};
    int py{};
    float cr{};
    float ci{};
    float zr{};
    float zi{};
    int n{};
    float __gn_t0{};
    float __gn_t1{};
#line 25 "mandelbrot.py"  // mandelbrot.py:25  def mandelbrot_kernel(image: CUDASliceMut2D[u8], x0: f32, y0: f32, dx: f32, dy: f32,
    // grid tail: this thread's uid lies past every array it indexes
    if (((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_image_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_image_n1)))) return;
#line 27 "mandelbrot.py"  // mandelbrot.py:27  px, py = FlatLayout2D.uid()
    px = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
    py = ((int)(blockIdx.y * blockDim.y + threadIdx.y));
#line 28 "mandelbrot.py"  // mandelbrot.py:28  cr = x0 + f32(px) * dx
    cr = (x0 + (((float)(((gn_i64)px))) * dx));
#line 29 "mandelbrot.py"  // mandelbrot.py:29  ci = y0 + f32(py) * dy
    ci = (y0 + (((float)(((gn_i64)py))) * dy));
#line 30 "mandelbrot.py"  // mandelbrot.py:30  zr = f32(0.0)
    zr = 0.0f;
#line 31 "mandelbrot.py"  // mandelbrot.py:31  zi = f32(0.0)
    zi = 0.0f;
#line 32 "mandelbrot.py"  // mandelbrot.py:32  n = 0
    n = 0;
#line 33 "mandelbrot.py"  // mandelbrot.py:33  while n < max_iter and zr * zr + zi * zi <= 4.0:
    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {
#line 34 "mandelbrot.py"  // mandelbrot.py:34  zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);
        __gn_t1 = (((2.0f * zr) * zi) + ci);
        zr = __gn_t0;
        zi = __gn_t1;
#line 35 "mandelbrot.py"  // mandelbrot.py:35  n += 1
        n = ((int)((unsigned int)(n) + (unsigned int)(1)));
    }
#line 36 "mandelbrot.py"  // mandelbrot.py:36  image[py, px] = u8(255 * n // max_iter)
    image[gn_at2_32(__gn_err, py, ((int)__gn_image_n0), 1u, px, ((int)__gn_image_n1), 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));
}

