"""tools/bench_suite.py's tensor-core benchmarks (``hgemm_tc``, ``bgemm_tc``, ``gemm_bias_gelu``,
``hgemm_wgmma``, ``bgemm_wgmma``, ``gemm_bias_gelu_wgmma``)
and the hand-written CUDA C++ they compare examples/tensor_core/ against.

Kept out of bench_suite.py so that module stays readable; :class:`TensorCoreBenches` is a base of
its ``Suite`` and uses the suite's ``add``, ``raw``, ``timed`` and ``unchecked``.
"""

from __future__ import annotations

import os

import numpy as np

import gpu_native as gn

# examples/tensor_core/hgemm_tensor_core.py, hand-written with inline PTX: 128 threads (4 warps,
# 2 x 2, each a 64 x 64 sub-tile as 4 x 8 m16n8k16 accumulators) compute a 128 x 128 tile of C.
# K is walked in 32-deep slices through a 3-stage ring of shared slices of A (128 x 32) and
# B (32 x 128) filled by 16-byte cp.async copies two slices ahead, with the example's XOR swizzle
# (A: chunk ^ ((row >> 1) & 3); B: chunk ^ (row & 7)).  Each 16-deep step: ldmatrix.x4 per 16
# rows of A, ldmatrix.x4.trans per 16 columns of B, 32 mma.sync.  The epilogue stores each
# accumulator element by element (store_matrix now stores aligned pairs, one store of two: the
# one place the two differ, docs/benchmarks.md run 32); GELU adds bias[col] and applies the
# tanh GELU first (examples/tensor_core/gemm_bias_gelu.py).  16-bit elements are passed as unsigned
# short and converted with cvt, so no header is needed.  M and N multiples of 128, K of 32.
# f32 to a 16-bit float (round to nearest even) and back, the type chosen by BF16; both CUDA
# sources below include it after a typedef of u16.
TO_FROM_16 = r"""template <bool BF16>
__device__ __forceinline__ u16 to16(float x) {
    u16 h;
    if (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}
template <bool BF16>
__device__ __forceinline__ float from16(u16 h) {
    float x;
    if (BF16) x = __uint_as_float((unsigned)h << 16);
    else asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
    return x;
}
"""

HGEMM_CUDA = (r"""
constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3, WM = 64, WN = 64, WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32, MI = WM / 16, NJ = WN / 8;
constexpr int A_CHUNKS = BM * BK / 8 / THREADS, B_CHUNKS = BK * BN / 8 / THREADS;
typedef unsigned short u16;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst)), "l"(src)
                 : "memory");
}
""" + TO_FROM_16 + r"""__device__ __forceinline__ float gelu_tanh(float x) {
    const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

template <bool BF16, bool GELU>
__device__ __forceinline__ void hgemm_tc_body(
        const u16* __restrict__ A, const u16* __restrict__ B, u16* __restrict__ C,
        const u16* __restrict__ bias, int M, int K, int N,
        u16 (*tile_a)[BM][BK], u16 (*tile_b)[BK][BN]) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_row = (warp / WARPS_N) * WM, warp_col = (warp % WARPS_N) * WN;
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
    const int ktiles = K / BK;
    float acc[MI][NJ][4];
    unsigned frag_a[MI][4], frag_b[NJ][2];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    auto load = [&](int stage, int kt) {
#pragma unroll
        for (int q = 0; q < A_CHUNKS; ++q) {
            const int ca = tid + q * THREADS, ra = ca / 4, ka = ca % 4;
            cp_async16(&tile_a[stage][ra][(ka ^ ((ra >> 1) & 3)) * 8],
                       A + (long long)(block_row + ra) * K + kt * BK + ka * 8);
        }
#pragma unroll
        for (int q = 0; q < B_CHUNKS; ++q) {
            const int cb = tid + q * THREADS, rb = cb / 16, nb = cb % 16;
            cp_async16(&tile_b[stage][rb][(nb ^ (rb & 7)) * 8],
                       B + (long long)(kt * BK + rb) * N + block_col + nb * 8);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();
        const int nxt = kt + STAGES - 1;
        if (nxt < ktiles) load(nxt % STAGES, nxt);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const int st = kt % STAGES;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int r = warp_row + i * 16 + lane % 16, ch = kk * 2 + lane / 16;
                const unsigned a = smem_addr(&tile_a[st][r][(ch ^ ((r >> 1) & 3)) * 8]);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(frag_a[i][0]), "=r"(frag_a[i][1]), "=r"(frag_a[i][2]),
                               "=r"(frag_a[i][3]) : "r"(a));
            }
#pragma unroll
            for (int j = 0; j < NJ / 2; ++j) {
                const int rk = kk * 16 + lane % 16, ch = (warp_col + j * 16) / 8 + lane / 16;
                const unsigned b = smem_addr(&tile_b[st][rk][(ch ^ (rk & 7)) * 8]);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(frag_b[2 * j][0]), "=r"(frag_b[2 * j][1]),
                               "=r"(frag_b[2 * j + 1][0]), "=r"(frag_b[2 * j + 1][1]) : "r"(b));
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    float* c = acc[i][j];
                    if (BF16)
                        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                            : "r"(frag_a[i][0]), "r"(frag_a[i][1]), "r"(frag_a[i][2]),
                              "r"(frag_a[i][3]), "r"(frag_b[j][0]), "r"(frag_b[j][1]));
                    else
                        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                            : "r"(frag_a[i][0]), "r"(frag_a[i][1]), "r"(frag_a[i][2]),
                              "r"(frag_a[i][3]), "r"(frag_b[j][0]), "r"(frag_b[j][1]));
                }
        }
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const int row = block_row + warp_row + i * 16 + (lane >> 2);
            const int col = block_col + warp_col + j * 8 + 2 * (lane & 3);
            float v[4] = {acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]};
            if (GELU) {
                const float b0 = from16<BF16>(bias[col]), b1 = from16<BF16>(bias[col + 1]);
                v[0] = gelu_tanh(v[0] + b0);
                v[1] = gelu_tanh(v[1] + b1);
                v[2] = gelu_tanh(v[2] + b0);
                v[3] = gelu_tanh(v[3] + b1);
            }
            u16* p = C + (long long)row * N + col;
            p[0] = to16<BF16>(v[0]);
            p[1] = to16<BF16>(v[1]);
            p[8 * (long long)N] = to16<BF16>(v[2]);
            p[8 * (long long)N + 1] = to16<BF16>(v[3]);
        }
}

#define HGEMM_TC_KERNEL(NAME, BF16, GELU)                                                      \
    extern "C" __global__ void __launch_bounds__(THREADS) NAME(                                \
            const u16* __restrict__ A, const u16* __restrict__ B, u16* __restrict__ C,         \
            const u16* __restrict__ bias, int M, int K, int N) {                               \
        __shared__ __align__(16) u16 tile_a[STAGES][BM][BK];                                   \
        __shared__ __align__(16) u16 tile_b[STAGES][BK][BN];                                   \
        hgemm_tc_body<BF16, GELU>(A, B, C, bias, M, K, N, tile_a, tile_b);                     \
    }
HGEMM_TC_KERNEL(hgemm_tc_f16, false, false)
HGEMM_TC_KERNEL(hgemm_tc_bf16, true, false)
HGEMM_TC_KERNEL(gemm_bias_gelu_f16, false, true)
""")
"""The hand-written tensor-core GEMMs: ``hgemm_tc_f16``, ``hgemm_tc_bf16`` (C = A @ B, output in
the input type) and ``gemm_bias_gelu_f16`` (C = gelu_tanh(A @ B + bias)); arguments
``(A, B, C, bias, M, K, N)`` (``bias`` unused but for the last), grid ``(N / 128, M / 128)``,
128 threads."""

HGEMM_CUDA_KERNELS = ("hgemm_tc_f16", "hgemm_tc_bf16", "gemm_bias_gelu_f16")


# examples/tensor_core/sgemm_tf32.py, hand-written with inline PTX: 128 threads (4 warps, 2 x 2,
# each a 64 x 64 sub-tile as 4 x 8 m16n8k8 accumulators) compute a 128 x 128 tile of C.  K is
# walked in 8-deep slices through a 4-stage ring of shared slices of A (128 x 8, rows padded to
# 12 floats) and B (8 x 128, rows padded to 136) filled by 16-byte cp.async copies three slices
# ahead.  Each slice: every lane loads its A fragments (rows g, g + 8 at columns t, t + 4) and B
# fragments (column g at rows t, t + 4) element by element, rounds them with cvt.rna.tf32.f32,
# and issues 32 mma.sync.  M and N multiples of 128, K of 8.
SGEMM_TF32_CUDA = r"""
constexpr int BM = 128, BN = 128, BK = 8, STAGES = 4, WM = 64, WN = 64, WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32, MI = WM / 16, NJ = WN / 8;
constexpr int A_ROW = BK + 4, B_ROW = BN + 8;
constexpr int A_CHUNKS = BM * BK / 4 / THREADS, B_CHUNKS = BK * BN / 4 / THREADS;

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ unsigned tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

extern "C" __global__ void __launch_bounds__(THREADS) sgemm_tf32(
        const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
        int M, int K, int N) {
    __shared__ __align__(16) float tile_a[STAGES][BM][A_ROW];
    __shared__ __align__(16) float tile_b[STAGES][BK][B_ROW];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int warp_row = (warp / WARPS_N) * WM, warp_col = (warp % WARPS_N) * WN;
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
    const int ktiles = K / BK;
    float acc[MI][NJ][4];
    unsigned frag_a[MI][4], frag_b[NJ][2];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    auto load = [&](int stage, int kt) {
#pragma unroll
        for (int q = 0; q < A_CHUNKS; ++q) {
            const int ca = tid + q * THREADS, ra = ca / 2, ka = ca % 2;
            cp_async16(&tile_a[stage][ra][ka * 4],
                       A + (long long)(block_row + ra) * K + kt * BK + ka * 4);
        }
#pragma unroll
        for (int q = 0; q < B_CHUNKS; ++q) {
            const int cb = tid + q * THREADS, rb = cb / 32, nb = cb % 32;
            cp_async16(&tile_b[stage][rb][nb * 4],
                       B + (long long)(kt * BK + rb) * N + block_col + nb * 4);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();
        const int nxt = kt + STAGES - 1;
        if (nxt < ktiles) load(nxt % STAGES, nxt);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const int st = kt % STAGES;
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            const int r = warp_row + i * 16 + g;
            frag_a[i][0] = tf32(tile_a[st][r][t]);
            frag_a[i][1] = tf32(tile_a[st][r + 8][t]);
            frag_a[i][2] = tf32(tile_a[st][r][t + 4]);
            frag_a[i][3] = tf32(tile_a[st][r + 8][t + 4]);
        }
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const int col = warp_col + j * 8 + g;
            frag_b[j][0] = tf32(tile_b[st][t][col]);
            frag_b[j][1] = tf32(tile_b[st][t + 4][col]);
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                float* c = acc[i][j];
                asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                    : "r"(frag_a[i][0]), "r"(frag_a[i][1]), "r"(frag_a[i][2]),
                      "r"(frag_a[i][3]), "r"(frag_b[j][0]), "r"(frag_b[j][1]));
            }
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const int row = block_row + warp_row + i * 16 + g;
            const int col = block_col + warp_col + j * 8 + 2 * t;
            float* p = C + (long long)row * N + col;
            p[0] = acc[i][j][0];
            p[1] = acc[i][j][1];
            p[8 * (long long)N] = acc[i][j][2];
            p[8 * (long long)N + 1] = acc[i][j][3];
        }
}
"""
"""The hand-written TF32 GEMM ``sgemm_tf32``: arguments ``(A, B, C, M, K, N)`` (f32), grid
``(N / 128, M / 128)``, 128 threads."""


def _wgmma_asm(dtype: str) -> str:
    """The inline-PTX statement of one ``wgmma.mma_async ... m64n256k16.f32.<dtype>.<dtype>``
    (B MN-major: the transpose bit set) accumulating into ``float acc[128]`` from the shared
    descriptors ``da`` and ``db``: 128 "+f" operands, written out here rather than by hand."""
    regs = ", ".join(f"%{i}" for i in range(128))
    outs = ", ".join(f'"+f"(acc[{i}])' for i in range(128))
    # scale-d is a predicate (accumulate: D = A B + D), set from operand %130 (always 1).
    return (f'asm volatile("{{ .reg .pred p; setp.ne.b32 p, %130, 0; '
            f'wgmma.mma_async.sync.aligned.m64n256k16.f32.{dtype}.{dtype} '
            f'{{{regs}}}, %128, %129, p, 1, 1, 0, 1; }}" : {outs} : "l"(da), "l"(db), "r"(1));')


# The device helpers of the Hopper GEMMs (this file's HGEMM_WGMMA_CUDA, tools/tma_probe.py's
# kernels), after typedefs of u16 and u64: the 128-byte-swizzle shared-memory descriptor, f32
# pairs and singles to 16 bits, and one m64n256k16 wgmma (its @WGMMA_F16@ / @WGMMA_BF16@ filled
# by the including source with _wgmma_asm).
WGMMA_DEVICE_HELPERS = (r"""// Shared-memory matrix descriptor: start, leading and stride byte offsets (each >> 4), 128B
// swizzle (layout type 1 in bits 62-63).
__device__ __forceinline__ u64 smem_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32)
           | (1ull << 62);
}
template <bool BF16>
__device__ __forceinline__ unsigned pack16(float lo, float hi) {
    unsigned r;
    if (BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

""" + TO_FROM_16 + r"""
template <bool BF16>
__device__ __forceinline__ void wgmma_tile(float* acc, u64 da, u64 db) {
    if (BF16) { @WGMMA_BF16@ }
    else { @WGMMA_F16@ }
}
""")


# The Hopper (sm_90a) GEMM: warpgroup MMA (wgmma) from shared memory, the algorithm of Triton's
# best 4096^3 configuration (128 x 256 x 64 tile, 8 warps, cp.async, no TMA).  256 threads = 2
# warpgroups; warpgroup w computes rows 64w..64w+63 of the block's 128 x 256 tile of C with one
# m64n256k16 accumulator (128 f32 registers a thread).  K is walked in 64-deep slices through a
# WG_STAGES-deep ring of shared slices of A (128 x 64, K-major) and B (64 x 256, N-major) filled
# by 16-byte cp.async copies from all threads, in the 128-byte swizzle the descriptors name: a
# 128-byte row's 16-byte chunk c is stored at chunk c ^ (row & 7), 8-row groups 1024 bytes apart
# (the hardware applies the XOR to address bits 4-6 from bits 7-9, so tiles are 1024-aligned).
# A's rows are 64 K-elements; B is stored as 4 column blocks of 64 N-elements (8 KiB each, the
# descriptor's leading byte offset), each 64 K-rows of 128 bytes (stride byte offset 1024 per 8
# rows), and read with the transpose bit (MN-major B).  Per slice: wait for the copies
# (cp.async.wait_group), fence.proxy.async (generic-proxy writes made visible to wgmma's async
# proxy), barrier, wgmma.fence, 4 wgmma (k16 steps: A's descriptor advances 32 bytes inside the
# swizzle row, B's 2048 bytes = 16 rows), commit, wait until at most one group is in flight;
# with WG_EARLY_LOAD 1 (the default, and examples/tensor_core/hgemm_wgmma.py's order) the copies
# of slice kt + STAGES - 2 go right after the first barrier (one barrier, one slice less ahead);
# with 0 a second barrier (every warpgroup done with the previous slice) precedes the copies of
# slice kt + STAGES - 1 into the previous slice's stage.
# The epilogue (thread t holds rows 16*(t/32) + (t%32)/4 (+8), columns 8*j + 2*(t%4) (+1), j <
# 32): a 16-bit output (OUT 0, as examples/tensor_core/hgemm_wgmma.py's warpgroup_store with a
# staging region) passes through the ring's B slice of stage w and leaves in 16-byte row chunks;
# f32 (OUT 1) is stored by pairs straight from the fragment, OUT 2 element by element.  M a
# multiple of 128, N of 256, K of 64; no bounds checks.
#
# Until 2026-12-04 the epilogue loop ran j to 64, past the 128 accumulators of a thread: undefined
# behaviour: for the f32 output the compiler dropped the extra stores (64 STG, its results were
# right); the 16-bit output came out wrong (most of C zero, a later launch faulting), the
# "cause still open" of the earlier notes.  With j < 32 both are right (bench_suite checks
# every output it times against the float32 product).
# bench_suite's hgemm_wgmma and bgemm_wgmma rows time the 16-bit-output kernels (hgemm_wgmma_f16,
# hgemm_wgmma_bf16) beside examples/tensor_core/hgemm_wgmma.py.
HGEMM_WGMMA_CUDA = (r"""
#ifndef WG_STAGES
#define WG_STAGES 4
#endif
#ifndef WG_EARLY_LOAD
#define WG_EARLY_LOAD 1
#endif
#ifndef WG_GROUP
#define WG_GROUP 8
#endif
constexpr int BM = 128, BN = 256, BK = 64, STAGES = WG_STAGES, THREADS = 256;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int A_CHUNKS = A_BYTES / 16 / THREADS, B_CHUNKS = B_BYTES / 16 / THREADS;
typedef unsigned short u16;
typedef unsigned long long u64;

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
""" + WGMMA_DEVICE_HELPERS + r"""
template <bool BF16, int OUT>
__device__ __forceinline__ void hgemm_wgmma_body(
        const u16* __restrict__ A, const u16* __restrict__ B, void* __restrict__ C,
        int M, int K, int N, unsigned char* smem_raw) {
    const int tid = threadIdx.x, wg = tid >> 7, t = tid & 127;
    // Grouped block order (as Triton's tutorial): WG_GROUP consecutive block rows sweep the
    // block columns together, so the slices of B they share are read from L2.
    const int tiles_m = M / BM, tiles_n = N / BN, pid = blockIdx.y * gridDim.x + blockIdx.x;
    const int in_group = WG_GROUP * tiles_n, first_m = pid / in_group * WG_GROUP;
    const int group_m = min(tiles_m - first_m, WG_GROUP);
    const int block_row = (first_m + pid % in_group % group_m) * BM;
    const int block_col = (pid % in_group / group_m) * BN;
    const int ktiles = K / BK;
    const unsigned base = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    auto load = [&](int stage, int kt) {
        const unsigned sa = base + stage * STAGE_BYTES, sb = sa + A_BYTES;
#pragma unroll
        for (int q = 0; q < A_CHUNKS; ++q) {
            const int c = tid + q * THREADS, r = c >> 3, ch = c & 7;
            cp_async16(sa + r * 128 + ((ch ^ (r & 7)) << 4),
                       A + (long long)(block_row + r) * K + kt * BK + ch * 8);
        }
#pragma unroll
        for (int q = 0; q < B_CHUNKS; ++q) {
            const int c = tid + q * THREADS, r = c >> 5, nc = c & 31, blk = nc >> 3, ch = nc & 7;
            cp_async16(sb + blk * (BK * 128) + r * 128 + ((ch ^ (r & 7)) << 4),
                       B + (long long)(kt * BK + r) * N + block_col + nc * 8);
        }
    };
    constexpr int AHEAD = WG_EARLY_LOAD ? STAGES - 2 : STAGES - 1;
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (s < ktiles) load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" :: "n"(AHEAD - 1) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (WG_EARLY_LOAD) {
            const int nxt = kt + AHEAD;
            if (nxt < ktiles) load(nxt % STAGES, nxt);
            asm volatile("cp.async.commit_group;" ::: "memory");
        }
        const unsigned sa = base + (kt % STAGES) * STAGE_BYTES + wg * (64 * 128);
        const unsigned sb = base + (kt % STAGES) * STAGE_BYTES + A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            const u64 da = smem_desc(sa + kk * 32, 16, 1024);
            const u64 db = smem_desc(sb + kk * 2048, BK * 128, 1024);
            wgmma_tile<BF16>(acc, da, db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (!WG_EARLY_LOAD) {
            __syncthreads();
            const int nxt = kt + AHEAD;
            if (nxt < ktiles) load(nxt % STAGES, nxt);
            asm volatile("cp.async.commit_group;" ::: "memory");
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    // Operand fence on the accumulators (as CUTLASS's warpgroup_fence_operand): the asynchronous
    // MMA writes them behind the compiler's back.  (It did not change this kernel's SASS.)
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(acc[i]) :: "memory");
    if (OUT == 0) {
        // 16-bit output, staged: every warpgroup's products are retired past this barrier, so
        // warpgroup w writes its 64 x 256 tile into stage w's B slice (its shape, in the same
        // 128-byte swizzle: a warp's eight rows of pairs fall in distinct banks), waits for its
        // own 128 threads (named barrier 1 + w), then copies it out in 16-byte row chunks (a
        // warp stores 512 contiguous bytes of one row).
        __syncthreads();
        unsigned char* tile = smem_raw + (base - (unsigned)__cvta_generic_to_shared(smem_raw))
                              + wg * STAGE_BYTES + A_BYTES;
        auto at = [&](int r, int col) {    // byte offset of element (r, col) of the tile
            return (col >> 6) * (BK * 128) + r * 128 + ((((col >> 3) & 7) ^ (r & 7)) << 4)
                   + (col & 7) * 2;
        };
        const int r0 = (t >> 5) * 16 + ((t & 31) >> 2);
#pragma unroll
        for (int j = 0; j < 32; ++j) {
            const int col = 8 * j + 2 * (t & 3);
            *(unsigned*)(tile + at(r0, col)) = pack16<BF16>(acc[4 * j], acc[4 * j + 1]);
            *(unsigned*)(tile + at(r0 + 8, col)) = pack16<BF16>(acc[4 * j + 2], acc[4 * j + 3]);
        }
        asm volatile("bar.sync %0, 128;" :: "r"(1 + wg) : "memory");
        u16* c = (u16*)C + (long long)(block_row + wg * 64) * N + block_col;
#pragma unroll
        for (int q = 0; q < 16; ++q) {
            const int k = t + 128 * q, r = k >> 5, col = (k & 31) * 8;
            *(uint4*)(c + (long long)r * N + col) = *(const uint4*)(tile + at(r, col));
        }
        return;
    }
    const int row = block_row + wg * 64 + (t >> 5) * 16 + ((t & 31) >> 2);
    const int col0 = block_col + 2 * (t & 3);
#pragma unroll
    for (int j = 0; j < 32; ++j) {    // the m64n256 fragment: 32 column groups of 4 elements
        const long long o = (long long)row * N + col0 + 8 * j;
        if (OUT == 1) {
            float* c = (float*)C;
            *(float2*)(c + o) = make_float2(acc[4 * j], acc[4 * j + 1]);
            *(float2*)(c + o + 8ll * N) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
        } else {
            u16* c = (u16*)C;
            c[o] = to16<BF16>(acc[4 * j]);
            c[o + 1] = to16<BF16>(acc[4 * j + 1]);
            c[o + 8ll * N] = to16<BF16>(acc[4 * j + 2]);
            c[o + 8ll * N + 1] = to16<BF16>(acc[4 * j + 3]);
        }
    }
}

#define HGEMM_WGMMA_KERNEL(NAME, BF16, OUT)                                                  \
    extern "C" __global__ void __launch_bounds__(THREADS, 1) NAME(                             \
            const u16* __restrict__ A, const u16* __restrict__ B, void* __restrict__ C,        \
            int M, int K, int N) {                                                              \
        extern __shared__ __align__(1024) unsigned char smem_raw[];                            \
        hgemm_wgmma_body<BF16, OUT>(A, B, C, M, K, N, smem_raw);                                  \
    }
HGEMM_WGMMA_KERNEL(hgemm_wgmma_f16, false, 0)
HGEMM_WGMMA_KERNEL(hgemm_wgmma_bf16, true, 0)
HGEMM_WGMMA_KERNEL(hgemm_wgmma_f16_f32, false, 1)
HGEMM_WGMMA_KERNEL(hgemm_wgmma_bf16_f32, true, 1)
HGEMM_WGMMA_KERNEL(hgemm_wgmma_f16_e, false, 2)
HGEMM_WGMMA_KERNEL(hgemm_wgmma_bf16_e, true, 2)
""").replace("@WGMMA_F16@", _wgmma_asm("f16")).replace("@WGMMA_BF16@", _wgmma_asm("bf16"))
"""The hand-written Hopper GEMMs (compile for ``sm_90a``): ``hgemm_wgmma_f16``,
``hgemm_wgmma_bf16`` (output in the input type), ``hgemm_wgmma_f16_f32``, ``hgemm_wgmma_bf16_f32``
(f32 output); arguments ``(A, B, C, M, K, N)``, grid ``(N / 256, M / 128)``, 256 threads,
:func:`wgmma_shared_bytes` of dynamic shared memory (opt-in above 48 KiB)."""

HGEMM_WGMMA_KERNELS = ("hgemm_wgmma_f16", "hgemm_wgmma_bf16", "hgemm_wgmma_f16_f32",
                       "hgemm_wgmma_bf16_f32")
WGMMA_BM, WGMMA_BN, WGMMA_BK, WGMMA_THREADS = 128, 256, 64, 256
# Interleaved timing rounds of the warpgroup GEMM rows (GN_BENCH_WGMMA_ROUNDS to change).
WGMMA_ROUNDS = int(os.environ.get("GN_BENCH_WGMMA_ROUNDS", "5"))


def wgmma_shared_bytes(stages: int = 4) -> int:
    """Dynamic shared memory of ``HGEMM_WGMMA_CUDA`` at ``stages`` (``-DWG_STAGES``): the ring
    plus 1 KiB to align it to 1024 bytes."""
    return stages * (WGMMA_BM + WGMMA_BN) * WGMMA_BK * 2 + 1024


class TensorCoreBenches:
    """The tensor-core rows of tools/bench_suite.py's ``Suite`` (a base class of it)."""

    def tc_problem(self, dtype):
        """Square inputs in ``dtype`` (4096, or 1024 with ``--quick``), the NaN-filled output
        ``c`` in ``dtype`` and the float32 reference of the product of the rounded inputs."""
        torch = self.torch
        m = 1024 if self.quick else 4096
        a, b = self.randn(m, m).to(dtype), self.randn(m, m).to(dtype)
        ref = a.float() @ b.float()
        c = torch.full((m, m), float("nan"), device="cuda", dtype=dtype)
        return m, a, b, c, ref

    def tc_measure(self, c, ref, tolerance):
        """``measure(fn) -> (ms, ok)``: one launch checked, then the timed launches' output
        checked (relative Frobenius error against ``ref`` at most ``tolerance``); each check
        refills ``c`` with NaN, so no variant is credited with an earlier one's output."""
        torch = self.torch

        def check():
            rel = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
            c.fill_(float("nan"))
            return rel <= tolerance      # NaN (an unwritten element) fails

        def measure(fn):
            fn()
            first = check()
            ms = self.timed(fn, iters=10, reps=2)
            return ms, first and check()

        return measure

    def tc_rows(self, bench, dtype, cuda_name, tolerance, label):
        import hgemm_tensor_core as ex

        torch, cp = self.torch, self.cp
        m, a, b, c, ref = self.tc_problem(dtype)
        work = 2.0 * m * m * m
        measure = self.tc_measure(c, ref, tolerance)
        ga, gb, gc = (gn.to_device(t) for t in (a, b, c))    # zero-copy views
        ms, ok = measure(lambda: ex.hgemm_tc(ga, gb, gc))
        self.add(bench, f"gpu_native (tensor_core/hgemm_tensor_core, {label})", ms, work,
                 "TFLOP/s", ok)
        un = self.unchecked("tensor_core/hgemm_tensor_core")
        ms, ok = measure(lambda: un.hgemm_tc(ga, gb, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", ok)
        k = self.raw(HGEMM_CUDA, cuda_name)
        # As int16 views: CuPy has no bfloat16 (the kernel takes unsigned short anyway).
        ca, cb, cc = (cp.asarray(t.view(torch.int16)) for t in (a, b, c))
        grid = (m // ex.BN, m // ex.BM)
        args = (ca, cb, cc, ca, np.int32(m), np.int32(m), np.int32(m))
        ms, ok = measure(lambda: k(grid, (ex.THREADS,), args))
        self.add(bench, "CUDA C++, same algorithm and launch (inline PTX)", ms, work, "TFLOP/s",
                 ok)
        ms, ok = measure(lambda: torch.matmul(a, b, out=c))
        self.add(bench, f"torch.matmul (cuBLAS, {label})", ms, work, "TFLOP/s", ok)
        self.triton_matmul_row(bench, a, b, c, measure, work)

    def triton_matmul_row(self, bench, a, b, c, measure, work, bias=None, activation=""):
        if not self.triton:
            self.add(bench, "Triton tutorial 03 matmul", None, work, "TFLOP/s", None,
                     "triton not importable")
            return
        import triton_matmul

        # Autotuning runs on the first call (inside measure's checked launch), not timed.
        ms, ok = measure(lambda: triton_matmul.matmul(a, b, out=c, bias=bias,
                                                      activation=activation))
        fused = ", + bias + gelu(tanh) epilogue" if activation else ""
        self.add(bench, f"Triton tutorial 03 matmul (autotuned{fused})", ms, work, "TFLOP/s", ok)

    def hgemm_tc(self):
        self.tc_rows("hgemm_tc", self.torch.float16, "hgemm_tc_f16", 2e-3,
                     "fp16 in, fp16 out")

    def bgemm_tc(self):
        self.tc_rows("bgemm_tc", self.torch.bfloat16, "hgemm_tc_bf16", 1e-2,
                     "bf16 in, bf16 out")

    def hand_wgmma(self, name: str, stages: int = 4):
        """The hand-written Hopper kernel ``name`` of ``HGEMM_WGMMA_CUDA``, compiled for sm_90a by
        gpu_native's NVRTC (CuPy's RawKernel picks the device's plain sm_90) and loaded by CuPy,
        opted in to :func:`wgmma_shared_bytes` of dynamic shared memory."""
        import os
        import tempfile

        from gpu_native.build import BuildRequest
        from gpu_native.compiler.nvrtc import compile_request

        source = f"#define WG_STAGES {stages}\n" + HGEMM_WGMMA_CUDA
        image = compile_request(BuildRequest(source, name, "sm_90a")).image
        fd, path = tempfile.mkstemp(suffix=".cubin")
        with os.fdopen(fd, "wb") as f:
            f.write(bytes(image))
        fn = self.cp.RawModule(path=path).get_function(name)
        fn.max_dynamic_shared_size_bytes = wgmma_shared_bytes(stages)
        return fn

    def wgmma_rows(self, bench, dtype, cuda_name, tolerance, label):
        """``hgemm_wgmma`` / ``bgemm_wgmma``: examples/tensor_core/hgemm_wgmma.py (C in the input
        type, through its staging region; TMA loads) against the hand-written kernel of the same
        algorithm (tools/tma_probe.py's ``sync4``, the example's grouped block order, and
        ``sync4flat`` in row-major block order), the hand-written per-thread ``cp.async`` kernel, cuBLAS (``torch.matmul``) and
        Triton's tutorial kernel, all writing the 16-bit type (sm_90 GPUs only)."""
        import hgemm_wgmma as ex

        torch, cp = self.torch, self.cp
        if torch.cuda.get_device_capability() != (9, 0):
            self.add(bench, "gpu_native (tensor_core/hgemm_wgmma)", None, 0, "TFLOP/s", None,
                     "warpgroup MMA needs an sm_90 GPU")
            return
        m = 1024 if self.quick else 4096
        work = 2.0 * m * m * m
        a, b = self.randn(m, m).to(dtype), self.randn(m, m).to(dtype)
        ref = a.float() @ b.float()
        c = torch.full((m, m), float("nan"), device="cuda", dtype=dtype)
        # One rounding of each output to the 16-bit type, as in hgemm_tc / bgemm_tc.
        measure = self.tc_measure(c, ref, tolerance)
        ga, gb, gc = (gn.to_device(t) for t in (a, b, c))
        un = self.unchecked("tensor_core/hgemm_wgmma")
        k = self.hand_wgmma(cuda_name, ex.STAGES)
        ca, cb, cc = (cp.asarray(t.view(torch.int16)) for t in (a, b, c))
        args = (ca, cb, cc, np.int32(m), np.int32(m), np.int32(m))
        grid = (m // WGMMA_BN, m // WGMMA_BM)
        shared = wgmma_shared_bytes(ex.STAGES)
        # The same algorithm by hand (tools/tma_probe.py): the example's grouped block order,
        # and the row-major one.
        import tma_probe

        hand = tma_probe.HandWritten(("sync4flat", "sync4"), self.torch.cuda.get_device_properties(
            0).multi_processor_count)
        kind = "f16" if dtype == torch.float16 else "bf16"
        variants = {
            f"gpu_native (tensor_core/hgemm_wgmma, {label})": lambda: ex.hgemm_wgmma(ga, gb, gc),
            "gpu_native, bounds_check=False": lambda: un.hgemm_wgmma(ga, gb, gc),
            "CUDA C++, same algorithm (TMA, inline PTX)": hand.call("sync4", kind, a, b, c),
            "CUDA C++, same in row-major block order": hand.call("sync4flat", kind, a, b, c),
            "CUDA C++, per-thread cp.async ring + grouped block order (the example before TMA)":
                lambda: k(grid, (WGMMA_THREADS,), args, shared_mem=shared),
            "torch.matmul (cuBLAS)": lambda: torch.matmul(a, b, out=c),
        }
        if self.triton:
            import triton_matmul

            # Autotuning runs on the first call (inside measure's checked launch), not timed.
            variants["Triton tutorial 03 matmul (autotuned)"] = (
                lambda: triton_matmul.matmul(a, b, out=c))
        self.interleaved(bench, variants, measure, work)
        if self.triton:
            print(f"  {bench} Triton's configuration:",
                  getattr(triton_matmul.matmul_kernel, "best_config", "unknown"))
        else:
            self.add(bench, "Triton tutorial 03 matmul", None, work, "TFLOP/s", None,
                     "triton not importable")

    def interleaved(self, bench, variants, measure, work):
        """Time each of ``variants`` (name -> launch) in WGMMA_ROUNDS interleaved rounds and add
        its best time: these GEMMs run at the GPU's power limit, where one timing of a kernel
        varied by 10% (run 35: the checked and unchecked kernels, whose SASS is the same,
        0.282 and 0.255 ms).  Each round starts one variant later, so none is always timed
        first; every round's time is printed with the variant's place in that round."""
        best: dict[str, tuple[float, bool]] = {}
        seen: dict[str, list[str]] = {name: [] for name in variants}
        names = list(variants)
        for r in range(WGMMA_ROUNDS):
            shift = r % len(names)
            for place, name in enumerate(names[shift:] + names[:shift]):
                ms, ok = measure(variants[name])
                seen[name].append(f"{ms:.4f}@{place}")
                old = best.get(name)
                best[name] = (min(ms, old[0]) if old else ms, ok and (old is None or old[1]))
        for name in names:
            print(f"  {bench} rounds (ms@place): {', '.join(seen[name])}  {name}")
        for name in names:
            ms, ok = best[name]
            self.add(bench, name, ms, work, "TFLOP/s", ok)

    def hgemm_wgmma(self):
        self.wgmma_rows("hgemm_wgmma", self.torch.float16, "hgemm_wgmma_f16", 2e-3,
                        "fp16 in, fp16 out")

    def bgemm_wgmma(self):
        self.wgmma_rows("bgemm_wgmma", self.torch.bfloat16, "hgemm_wgmma_bf16", 1e-2,
                        "bf16 in, bf16 out")

    def sgemm_tf32(self):
        import sgemm_tf32 as ex

        torch, cp = self.torch, self.cp
        bench = "sgemm_tf32"
        m = 1024 if self.quick else 4096
        work = 2.0 * m * m * m
        a, b = self.randn(m, m), self.randn(m, m)
        ref = a.double() @ b.double()
        c = torch.full((m, m), float("nan"), device="cuda", dtype=torch.float32)
        # TF32 rounds each input to 10 fraction bits: about 2**-11 relative per product, so the
        # Frobenius error against the f64 product of the f32 inputs is ~3e-4; an f32 kernel
        # (or a wrong fragment) would be at 1e-7 or at 1.
        measure = self.tc_measure(c, ref.float(), 1e-3)
        ga, gb, gc = (gn.to_device(t) for t in (a, b, c))
        ms, ok = measure(lambda: ex.sgemm_tf32(ga, gb, gc))
        self.add(bench, "gpu_native (tensor_core/sgemm_tf32, fp32 in and out, TF32 mma)", ms,
                 work, "TFLOP/s", ok)
        un = self.unchecked("tensor_core/sgemm_tf32")
        ms, ok = measure(lambda: un.sgemm_tf32(ga, gb, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", ok)
        k = self.raw(SGEMM_TF32_CUDA, "sgemm_tf32")
        ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
        args = (ca, cb, cc, np.int32(m), np.int32(m), np.int32(m))
        ms, ok = measure(lambda: k((m // ex.BN, m // ex.BM), (ex.THREADS,), args))
        self.add(bench, "CUDA C++, same algorithm and launch (inline PTX)", ms, work, "TFLOP/s",
                 ok)
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            ms, ok = measure(lambda: torch.matmul(a, b, out=c))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
        self.add(bench, "torch.matmul (cuBLAS, fp32 with allow_tf32)", ms, work, "TFLOP/s", ok)
        # tl.dot multiplies f32 inputs in TF32 by default (the tutorial's configurations, some
        # of which need more shared memory in f32 than a block has: the autotuner skips those).
        self.triton_matmul_row(bench, a, b, c, measure, work)

    def gelu_problem(self):
        """The fused benchmarks' inputs (f16, 4096^3, 1024^3 with --quick; b scaled by
        1/sqrt(K): pre-activations of order 1, where GELU is far from linear), the f32
        reference, a NaN-filled ``c``, the checked ``measure`` and the GEMM's flops (the
        epilogue's are not counted)."""
        torch = self.torch
        m = 1024 if self.quick else 4096
        a = self.randn(m, m).half()
        b = (self.randn(m, m) / m ** 0.5).half()
        bias = self.randn(m).half()
        ref = torch.nn.functional.gelu(a.float() @ b.float() + bias.float(), approximate="tanh")
        c = torch.full((m, m), float("nan"), device="cuda", dtype=torch.float16)
        return m, a, b, bias, c, self.tc_measure(c, ref, 2e-3), 2.0 * m * m * m

    def torch_gelu_unfused(self, a, b, bias, c):
        """PyTorch's two kernels: ``addmm`` (cuBLAS, the bias in its epilogue) into a
        temporary, then ``gelu(approximate="tanh")`` into ``c``."""
        torch = self.torch
        tmp = torch.empty_like(c)
        try:        # gelu straight into c where this PyTorch offers the out= overload
            gelu_out = torch.ops.aten.gelu.out
        except (AttributeError, RuntimeError):
            gelu_out = None

        def run():
            torch.addmm(bias, a, b, out=tmp)
            if gelu_out is not None:
                gelu_out(tmp, approximate="tanh", out=c)
            else:
                c.copy_(torch.nn.functional.gelu(tmp, approximate="tanh"))

        return run

    def gemm_bias_gelu_wgmma(self):
        """examples/tensor_core/gemm_bias_gelu_wgmma.py (the TMA + ``wgmma`` GEMM with the
        fused bias + GELU epilogue) against the same kernel by hand (tools/tma_probe.py's
        ``sync4gelu``), PyTorch's two kernels and Triton's tutorial matmul with the same
        epilogue (sm_90 GPUs only)."""
        import gemm_bias_gelu_wgmma as ex

        torch = self.torch
        bench = "gemm_bias_gelu_wgmma"
        if torch.cuda.get_device_capability() != (9, 0):
            self.add(bench, "gpu_native (tensor_core/gemm_bias_gelu_wgmma)", None, 0, "TFLOP/s",
                     None, "warpgroup MMA needs an sm_90 GPU")
            return
        _, a, b, bias, c, measure, work = self.gelu_problem()
        ga, gb, gbias, gc = (gn.to_device(t) for t in (a, b, bias, c))
        un = self.unchecked("tensor_core/gemm_bias_gelu_wgmma")
        import tma_probe

        hand = tma_probe.HandWritten(("sync4gelu",), torch.cuda.get_device_properties(
            0).multi_processor_count)
        variants = {
            "gpu_native (tensor_core/gemm_bias_gelu_wgmma, fp16, fused epilogue)":
                lambda: ex.gemm_bias_gelu_wgmma(ga, gb, gbias, gc),
            "gpu_native, bounds_check=False": lambda: un.gemm_bias_gelu_wgmma(ga, gb, gbias, gc),
            "CUDA C++, same algorithm (TMA, inline PTX)":
                hand.call("sync4gelu", "f16", a, b, c, bias),
            "torch: addmm (cuBLAS) then gelu(tanh), 2 kernels":
                self.torch_gelu_unfused(a, b, bias, c),
        }
        if self.triton:
            import triton_matmul

            variants["Triton tutorial 03 matmul (autotuned, + bias + gelu(tanh) epilogue)"] = (
                lambda: triton_matmul.matmul(a, b, out=c, bias=bias, activation="gelu_tanh"))
        self.interleaved(bench, variants, measure, work)
        if not self.triton:
            self.add(bench, "Triton tutorial 03 matmul", None, work, "TFLOP/s", None,
                     "triton not importable")

    def gemm_bias_gelu(self):
        import gemm_bias_gelu as ex

        cp = self.cp
        bench = "gemm_bias_gelu"
        m, a, b, bias, c, measure, work = self.gelu_problem()
        ga, gb, gbias, gc = (gn.to_device(t) for t in (a, b, bias, c))
        ms, ok = measure(lambda: ex.gemm_bias_gelu(ga, gb, gbias, gc))
        self.add(bench, "gpu_native (tensor_core/gemm_bias_gelu, fp16, fused epilogue)", ms,
                 work, "TFLOP/s", ok)
        un = self.unchecked("tensor_core/gemm_bias_gelu")
        ms, ok = measure(lambda: un.gemm_bias_gelu(ga, gb, gbias, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", ok)
        k = self.raw(HGEMM_CUDA, "gemm_bias_gelu_f16")
        ca, cb, cbias, cc = (cp.asarray(t.view(self.torch.int16)) for t in (a, b, bias, c))
        args = (ca, cb, cc, cbias, np.int32(m), np.int32(m), np.int32(m))
        ms, ok = measure(lambda: k((m // ex.BN, m // ex.BM), (ex.THREADS,), args))
        self.add(bench, "CUDA C++, same algorithm and launch (inline PTX)", ms, work, "TFLOP/s",
                 ok)
        ms, ok = measure(self.torch_gelu_unfused(a, b, bias, c))
        self.add(bench, "torch: addmm (cuBLAS) then gelu(tanh), 2 kernels", ms, work, "TFLOP/s",
                 ok)
        self.triton_matmul_row(bench, a, b, c, measure, work, bias=bias,
                               activation="gelu_tanh")
