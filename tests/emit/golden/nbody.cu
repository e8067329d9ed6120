// gpu_native 0.1.0: kernel accelerations_kernel of nbody (generated; do not edit)
#define GN_KERNEL_ID 0x0727ccc5af95ae5aull
#include "gpu_native/prelude.cuh"
extern "C" __global__ void gn_accelerations_kernel(
    const float* __restrict__ bodies,
    gn_i64 __gn_bodies_n0,
    gn_i64 __gn_bodies_n1,
    float* __restrict__ acc,
    gn_i64 __gn_acc_n0,
    gn_i64 __gn_acc_n1,
    float softening,
    gn_error_record* __restrict__ __gn_err)
{
    long long i{};
    float xi{};
    float yi{};
    float zi{};
    float ax{};
    float ay{};
    float az{};
    float eps2{};
    long long j{};
    float dx{};
    float dy{};
    float dz{};
    float inv{};
    float s{};
#line 23 "nbody.py"  // nbody.py:23  def accelerations_kernel(bodies: CUDASlice2D[f32], acc: CUDASliceMut2D[f32], softening: f32):
    // grid tail: this thread's uid lies past every array it indexes
    if ((((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_bodies_n0) & (((gn_i64)blockIdx.x * blockDim.x + threadIdx.x) >= __gn_acc_n0)) return;
#line 24 "nbody.py"  // nbody.py:24  i: UniqueId = FlatLayout1D.uid()
    i = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x);
#line 25 "nbody.py"  // nbody.py:25  xi = bodies[i, 0]
    xi = bodies[gn_at2(__gn_err, i, __gn_bodies_n0, 0u, 0LL, __gn_bodies_n1, 1u)];
#line 26 "nbody.py"  // nbody.py:26  yi = bodies[i, 1]
    yi = bodies[i * __gn_bodies_n1 + gn_chk(__gn_err, 1LL, __gn_bodies_n1, 2u)];
#line 27 "nbody.py"  // nbody.py:27  zi = bodies[i, 2]
    zi = bodies[i * __gn_bodies_n1 + gn_chk(__gn_err, 2LL, __gn_bodies_n1, 3u)];
#line 28 "nbody.py"  // nbody.py:28  ax = f32(0.0)
    ax = 0.0f;
#line 29 "nbody.py"  // nbody.py:29  ay = f32(0.0)
    ay = 0.0f;
#line 30 "nbody.py"  // nbody.py:30  az = f32(0.0)
    az = 0.0f;
#line 31 "nbody.py"  // nbody.py:31  eps2 = softening * softening
    eps2 = (softening * softening);
#line 32 "nbody.py"  // nbody.py:32  for j in range(bodies.shape[0]):
    {
        const long long __gn_stop0 = __gn_bodies_n0;
        for (long long __gn_i0 = 0LL; __gn_i0 < __gn_stop0; ++__gn_i0) {
            j = (long long)__gn_i0;
#line 33 "nbody.py"  // nbody.py:33  dx = bodies[j, 0] - xi
            dx = (bodies[j * __gn_bodies_n1 + 0LL] - xi);
#line 34 "nbody.py"  // nbody.py:34  dy = bodies[j, 1] - yi
            dy = (bodies[j * __gn_bodies_n1 + 1LL] - yi);
#line 35 "nbody.py"  // nbody.py:35  dz = bodies[j, 2] - zi
            dz = (bodies[j * __gn_bodies_n1 + 2LL] - zi);
#line 36 "nbody.py"  // nbody.py:36  inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + eps2)
            inv = gn_fdiv(1.0f, sqrtf(((((dx * dx) + (dy * dy)) + (dz * dz)) + eps2)));
#line 37 "nbody.py"  // nbody.py:37  s = bodies[j, 3] * inv * inv * inv
            s = (((bodies[j * __gn_bodies_n1 + gn_chk(__gn_err, 3LL, __gn_bodies_n1, 4u)] * inv) * inv) * inv);
#line 38 "nbody.py"  // nbody.py:38  ax += dx * s
            ax = (ax + (dx * s));
#line 39 "nbody.py"  // nbody.py:39  ay += dy * s
            ay = (ay + (dy * s));
#line 40 "nbody.py"  // nbody.py:40  az += dz * s
            az = (az + (dz * s));
        }
    }
#line 41 "nbody.py"  // nbody.py:41  acc[i, 0] = ax
    acc[gn_at2(__gn_err, i, __gn_acc_n0, 5u, 0LL, __gn_acc_n1, 6u)] = ax;
#line 42 "nbody.py"  // nbody.py:42  acc[i, 1] = ay
    acc[i * __gn_acc_n1 + gn_chk(__gn_err, 1LL, __gn_acc_n1, 7u)] = ay;
#line 43 "nbody.py"  // nbody.py:43  acc[i, 2] = az
    acc[i * __gn_acc_n1 + gn_chk(__gn_err, 2LL, __gn_acc_n1, 8u)] = az;
}

// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).
extern "C" __global__ void gn_accelerations_kernel_uids(
    const float* __restrict__ bodies,
    gn_i64 __gn_bodies_n0,
    gn_i64 __gn_bodies_n1,
    float* __restrict__ acc,
    gn_i64 __gn_acc_n0,
    gn_i64 __gn_acc_n1,
    float softening,
    gn_error_record* __restrict__ __gn_err,
    gn_i64 __gn_total,
    unsigned int __gn_block)
{
    long long i{};
    float xi{};
    float yi{};
    float zi{};
    float ax{};
    float ay{};
    float az{};
    float eps2{};
    long long j{};
    float dx{};
    float dy{};
    float dz{};
    float inv{};
    float s{};
    for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {
#line 23 "nbody.py"  // nbody.py:23  def accelerations_kernel(bodies: CUDASlice2D[f32], acc: CUDASliceMut2D[f32], softening: f32):
        // grid tail: this thread's uid lies past every array it indexes
        if ((__gn_uid >= __gn_bodies_n0) & (__gn_uid >= __gn_acc_n0)) goto __gn_next;
#line 24 "nbody.py"  // nbody.py:24  i: UniqueId = FlatLayout1D.uid()
        i = __gn_uid;
#line 25 "nbody.py"  // nbody.py:25  xi = bodies[i, 0]
        xi = bodies[gn_at2_at(__gn_err, i, __gn_bodies_n0, 0u, 0LL, __gn_bodies_n1, 1u, __gn_uid, __gn_block)];
#line 26 "nbody.py"  // nbody.py:26  yi = bodies[i, 1]
        yi = bodies[i * __gn_bodies_n1 + gn_chk_at(__gn_err, 1LL, __gn_bodies_n1, 2u, __gn_uid, __gn_block)];
#line 27 "nbody.py"  // nbody.py:27  zi = bodies[i, 2]
        zi = bodies[i * __gn_bodies_n1 + gn_chk_at(__gn_err, 2LL, __gn_bodies_n1, 3u, __gn_uid, __gn_block)];
#line 28 "nbody.py"  // nbody.py:28  ax = f32(0.0)
        ax = 0.0f;
#line 29 "nbody.py"  // nbody.py:29  ay = f32(0.0)
        ay = 0.0f;
#line 30 "nbody.py"  // nbody.py:30  az = f32(0.0)
        az = 0.0f;
#line 31 "nbody.py"  // nbody.py:31  eps2 = softening * softening
        eps2 = (softening * softening);
#line 32 "nbody.py"  // nbody.py:32  for j in range(bodies.shape[0]):
        {
            const long long __gn_stop0 = __gn_bodies_n0;
            for (long long __gn_i0 = 0LL; __gn_i0 < __gn_stop0; ++__gn_i0) {
                j = (long long)__gn_i0;
#line 33 "nbody.py"  // nbody.py:33  dx = bodies[j, 0] - xi
                dx = (bodies[j * __gn_bodies_n1 + 0LL] - xi);
#line 34 "nbody.py"  // nbody.py:34  dy = bodies[j, 1] - yi
                dy = (bodies[j * __gn_bodies_n1 + 1LL] - yi);
#line 35 "nbody.py"  // nbody.py:35  dz = bodies[j, 2] - zi
                dz = (bodies[j * __gn_bodies_n1 + 2LL] - zi);
#line 36 "nbody.py"  // nbody.py:36  inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + eps2)
                inv = gn_fdiv(1.0f, sqrtf(((((dx * dx) + (dy * dy)) + (dz * dz)) + eps2)));
#line 37 "nbody.py"  // nbody.py:37  s = bodies[j, 3] * inv * inv * inv
                s = (((bodies[j * __gn_bodies_n1 + gn_chk_at(__gn_err, 3LL, __gn_bodies_n1, 4u, __gn_uid, __gn_block)] * inv) * inv) * inv);
#line 38 "nbody.py"  // nbody.py:38  ax += dx * s
                ax = (ax + (dx * s));
#line 39 "nbody.py"  // nbody.py:39  ay += dy * s
                ay = (ay + (dy * s));
#line 40 "nbody.py"  // nbody.py:40  az += dz * s
                az = (az + (dz * s));
            }
        }
#line 41 "nbody.py"  // nbody.py:41  acc[i, 0] = ax
        acc[gn_at2_at(__gn_err, i, __gn_acc_n0, 5u, 0LL, __gn_acc_n1, 6u, __gn_uid, __gn_block)] = ax;
#line 42 "nbody.py"  // nbody.py:42  acc[i, 1] = ay
        acc[i * __gn_acc_n1 + gn_chk_at(__gn_err, 1LL, __gn_acc_n1, 7u, __gn_uid, __gn_block)] = ay;
#line 43 "nbody.py"  // nbody.py:43  acc[i, 2] = az
        acc[i * __gn_acc_n1 + gn_chk_at(__gn_err, 2LL, __gn_acc_n1, 8u, __gn_uid, __gn_block)] = az;
        __gn_next:;
    }
}

