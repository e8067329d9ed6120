"""tools/bench_suite.py's tensor-core benchmarks (``hgemm_tc``, ``bgemm_tc``, ``gemm_bias_gelu``)
and the hand-written CUDA C++ they compare examples/tensor_core/ against.

Kept out of bench_suite.py so that module stays readable; :class:`TensorCoreBenches` is a base of
its ``Suite`` and uses the suite's ``add``, ``raw``, ``timed`` and ``unchecked``.
"""

from __future__ import annotations

import numpy as np

import gpu_native as gn

# examples/tensor_core/hgemm_tensor_core.py, hand-written with inline PTX: 128 threads (4 warps,
# 2 x 2, each a 64 x 64 sub-tile as 4 x 8 m16n8k16 accumulators) compute a 128 x 128 tile of C.
# K is walked in 32-deep slices through a 3-stage ring of shared slices of A (128 x 32) and
# B (32 x 128) filled by 16-byte cp.async copies two slices ahead, with the example's XOR swizzle
# (A: chunk ^ ((row >> 1) & 3); B: chunk ^ (row & 7)).  Each 16-deep step: ldmatrix.x4 per 16
# rows of A, ldmatrix.x4.trans per 16 columns of B, 32 mma.sync.  The epilogue stores each
# accumulator element by element, as store_matrix does; GELU adds bias[col] and applies the tanh
# GELU first (examples/tensor_core/gemm_bias_gelu.py).  16-bit elements are passed as unsigned
# short and converted with cvt, so no header is needed.  M and N multiples of 128, K of 32.
HGEMM_CUDA = r"""
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
template <bool BF16>
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
__device__ __forceinline__ float gelu_tanh(float x) {
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
"""
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

    def gemm_bias_gelu(self):
        import gemm_bias_gelu as ex

        torch, cp = self.torch, self.cp
        gelu = torch.nn.functional.gelu
        bench = "gemm_bias_gelu"
        m = 1024 if self.quick else 4096
        work = 2.0 * m * m * m      # the GEMM's flops (the epilogue's are not counted)
        # b scaled by 1/sqrt(K): pre-activations of order 1, where GELU is far from linear.
        a = self.randn(m, m).half()
        b = (self.randn(m, m) / m ** 0.5).half()
        bias = self.randn(m).half()
        ref = gelu(a.float() @ b.float() + bias.float(), approximate="tanh")
        c = torch.full((m, m), float("nan"), device="cuda", dtype=torch.float16)
        measure = self.tc_measure(c, ref, 2e-3)
        ga, gb, gbias, gc = (gn.to_device(t) for t in (a, b, bias, c))
        ms, ok = measure(lambda: ex.gemm_bias_gelu(ga, gb, gbias, gc))
        self.add(bench, "gpu_native (tensor_core/gemm_bias_gelu, fp16, fused epilogue)", ms,
                 work, "TFLOP/s", ok)
        un = self.unchecked("tensor_core/gemm_bias_gelu")
        ms, ok = measure(lambda: un.gemm_bias_gelu(ga, gb, gbias, gc))
        self.add(bench, "gpu_native, bounds_check=False", ms, work, "TFLOP/s", ok)
        k = self.raw(HGEMM_CUDA, "gemm_bias_gelu_f16")
        ca, cb, cbias, cc = (cp.asarray(t.view(torch.int16)) for t in (a, b, bias, c))
        args = (ca, cb, cc, cbias, np.int32(m), np.int32(m), np.int32(m))
        ms, ok = measure(lambda: k((m // ex.BN, m // ex.BM), (ex.THREADS,), args))
        self.add(bench, "CUDA C++, same algorithm and launch (inline PTX)", ms, work, "TFLOP/s",
                 ok)
        tmp = torch.empty_like(c)

        try:        # gelu straight into c where this PyTorch offers the out= overload
            gelu_out = torch.ops.aten.gelu.out
        except (AttributeError, RuntimeError):
            gelu_out = None

        def torch_unfused():
            torch.addmm(bias, a, b, out=tmp)
            if gelu_out is not None:
                gelu_out(tmp, approximate="tanh", out=c)
            else:
                c.copy_(gelu(tmp, approximate="tanh"))

        ms, ok = measure(torch_unfused)
        self.add(bench, "torch: addmm (cuBLAS) then gelu(tanh), 2 kernels", ms, work, "TFLOP/s",
                 ok)
        self.triton_matmul_row(bench, a, b, c, measure, work, bias=bias,
                               activation="gelu_tanh")
