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
#line 25 "mandelbrot.py"
    // grid tail: this thread's uid lies past every array it indexes
    if (((((gn_i64)blockIdx.y * blockDim.y + threadIdx.y) >= __gn_image_n0) | (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_image_n1))) return;
#line 27 "mandelbrot.py"
    px = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
    py = ((gn_i64)blockIdx.y * blockDim.y + threadIdx.y);
#line 28 "mandelbrot.py"
    cr = (x0 + (((float)(px)) * dx));
#line 29 "mandelbrot.py"
    ci = (y0 + (((float)(py)) * dy));
#line 30 "mandelbrot.py"
    zr = 0.0f;
#line 31 "mandelbrot.py"
    zi = 0.0f;
#line 32 "mandelbrot.py"
    n = 0;
#line 33 "mandelbrot.py"
    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {
#line 34 "mandelbrot.py"
        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);
        __gn_t1 = (((2.0f * zr) * zi) + ci);
        zr = __gn_t0;
        zi = __gn_t1;
#line 35 "mandelbrot.py"
        n = ((int)((unsigned int)(n) + (unsigned int)(1)));
    }
#line 36 "mandelbrot.py"
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
#line 25 "mandelbrot.py"
    // grid tail: this thread's uid lies past every array it indexes
    if (((((int)(blockIdx.y * blockDim.y + threadIdx.y)) >= ((int)__gn_image_n0)) | (((int)(blockIdx.x * blockDim.x + threadIdx.x)) >= ((int)__gn_image_n1)))) return;
#line 27 "mandelbrot.py"
    px = ((int)(blockIdx.x * blockDim.x + threadIdx.x));
    py = ((int)(blockIdx.y * blockDim.y + threadIdx.y));
#line 28 "mandelbrot.py"
    cr = (x0 + (((float)(((gn_i64)px))) * dx));
#line 29 "mandelbrot.py"
    ci = (y0 + (((float)(((gn_i64)py))) * dy));
#line 30 "mandelbrot.py"
    zr = 0.0f;
#line 31 "mandelbrot.py"
    zi = 0.0f;
#line 32 "mandelbrot.py"
    n = 0;
#line 33 "mandelbrot.py"
    while (((n < max_iter) && gn_le_ord(((zr * zr) + (zi * zi)), 4.0f))) {
#line 34 "mandelbrot.py"
        __gn_t0 = (((zr * zr) - (zi * zi)) + cr);
        __gn_t1 = (((2.0f * zr) * zi) + ci);
        zr = __gn_t0;
        zi = __gn_t1;
#line 35 "mandelbrot.py"
        n = ((int)((unsigned int)(n) + (unsigned int)(1)));
    }
#line 36 "mandelbrot.py"
    image[gn_at2_32(__gn_err, py, ((int)__gn_image_n0), 1u, px, ((int)__gn_image_n1), 2u)] = ((unsigned char)(gn_floordiv_chk<int>(__gn_err, ((int)((unsigned int)(255) * (unsigned int)(n))), max_iter, 0u)));
}

