"""Time Hopper GEMM designs beyond examples/tensor_core/hgemm_wgmma.py's on a GPU: TMA loads
(``cp.async.bulk.tensor`` into the 128-byte swizzle, completion on mbarriers) instead of
per-thread ``cp.async``, a producer warpgroup beside two consumer warpgroups (warp
specialisation, with and without ``setmaxnreg``), and a persistent grid whose producer loads
the next tile while the consumers store the last.

Measurement only (not a benchmark of the suite): it answers which of these the language would
need to beat Triton's tutorial kernel.  Self-contained apart from tools/wgmma_probe.py (NVRTC,
driver, timing) and, when importable, gpu_native's example and Triton's tutorial kernel, all
timed in the same run, interleaved, best of ``--rounds``::

    python3 tools/tma_probe.py [--out LOG] [--variants NAME,...] [--rounds 3] [--sustain 2]

``--sustain SECONDS`` then runs each row back to back that long and logs its SM clock, power,
energy and clock cycles a call from NVML (tools/nvml_meter.py): at the GPU's power limit a
kernel can be faster by taking fewer cycles or by drawing less power and being clocked higher.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "tensor_core"))

import wgmma_probe as wp  # noqa: E402

say = wp.say

SOURCE = r"""
#ifndef TS_STAGES
#define TS_STAGES 4
#endif
#ifndef TS_MODE
#define TS_MODE 1      // 0: every thread computes, thread 0 issues the TMA loads; 1: producer WG
#endif
#ifndef TS_PERSIST
#define TS_PERSIST 0
#endif
#ifndef TS_REG
#define TS_REG 0       // setmaxnreg: producer 40, consumers 232 (TS_MODE 1)
#endif
#ifndef TS_EPI
#define TS_EPI 0       // 0: staged through the ring; 1: a staging buffer of its own; 2: direct
#endif
#ifndef TS_GROUP
#define TS_GROUP 8
#endif
// The example's generated code spelled by hand, one difference at a time (TS_MODE 0 only):
#ifndef TS_ERRFLAG
#define TS_ERRFLAG 0   // a failed try_wait reads an error flag (gn_mbar_wait's): 1 in device
#endif             // memory; 2 in mapped host memory (where the error record is); 3 the same,
                   // read once every 64 failed tries
#ifndef TS_SPLIT
#define TS_SPLIT 0     // A and B on barriers of their own, arrival deferred to the wait
#endif
#ifndef TS_PFENCE
#define TS_PFENCE 0    // fence.proxy.async before each slice's __syncthreads
#endif
#ifndef TS_GELU
#define TS_GELU 0      // c = gelu_tanh(a @ b + bias), in f32 before the store (TS_MODE 0 only):
#endif             // examples/tensor_core/gemm_bias_gelu_wgmma.py
constexpr int BM = 128, BN = 256, BK = 64, STAGES = TS_STAGES;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int CONSUMERS = 256, THREADS = TS_MODE == 1 ? 384 : 256;
constexpr int STAGING = TS_EPI == 1 ? 2 * 64 * BN * 2 : 0;
typedef unsigned short u16;
typedef unsigned long long u64;
struct __align__(64) TmaDesc { u64 v[16]; };

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ unsigned ts_error_flag = 0;
__device__ const unsigned* ts_host_flag;   // set by the host: a mapped host word, zero
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
#if TS_ERRFLAG == 3
    unsigned tries = 0;
#endif
    for (;;) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        if (done) return;
#if TS_ERRFLAG == 1
        if (*(const volatile unsigned*)&ts_error_flag != 0u) return;
#elif TS_ERRFLAG == 2
        if (*(const volatile unsigned*)ts_host_flag != 0u) return;
#elif TS_ERRFLAG == 3
        if ((++tries & 63u) == 0u && *(const volatile unsigned*)ts_host_flag != 0u) return;
#endif
    }
}
__device__ __forceinline__ void mbar_expect_tx_only(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                 :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma_load2d(unsigned dst, const TmaDesc* map, unsigned bar,
                                           int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(dst), "l"((u64)map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
@WGMMA_HELPERS@
// 0.5 x (1 + tanh(y)) as x sigmoid(2y), with the exp and division that the example's
// fastmath=True (--use_fast_math) compiles its x / (1 + exp(-2y)) to: ex2.approx.ftz of the
// argument times log2(e), and div.approx.ftz.
__device__ __forceinline__ float gelu_tanh(float x) {
    const float t = -1.5957691216057308f * 1.4426950408889634f * (x + 0.044715f * x * x * x);
    float e, r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t));
    asm("div.approx.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(1.0f + e));
    return r;
}
// One stage: A's 128 x 64 box (K-major rows of 128 bytes) and B's four 64 x 64 boxes (64
// K-rows of 64 N-elements each, 8 KiB apart), all in the 128-byte swizzle the descriptors name.
__device__ __forceinline__ void load_stage(unsigned stage, unsigned bar, const TmaDesc* am,
                                           const TmaDesc* bm, int row, int col, int kt) {
    mbar_expect_tx(bar, STAGE_BYTES);
    tma_load2d(stage, am, bar, kt * BK, row);
#pragma unroll
    for (int blk = 0; blk < 4; ++blk)
        tma_load2d(stage + A_BYTES + blk * (BK * 128), bm, bar, col + blk * 64, kt * BK);
}

__device__ __forceinline__ void tile_origin(int tile, int tiles_m, int tiles_n, int& row,
                                            int& col) {
    const int in_group = TS_GROUP * tiles_n, first_m = tile / in_group * TS_GROUP;
    const int group_m = min(tiles_m - first_m, TS_GROUP);
    row = (first_m + tile % in_group % group_m) * BM;
    col = (tile % in_group / group_m) * BN;
}

template <bool BF16>
__device__ __forceinline__ void mma_slice(float* acc, unsigned stage, int wg) {
    const unsigned sa = stage + wg * (64 * 128), sb = stage + A_BYTES;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
        wgmma_tile<BF16>(acc, smem_desc(sa + kk * 32, 16, 1024),
                         smem_desc(sb + kk * 2048, BK * 128, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Warpgroup wg's 64 x 256 fragment out to C (16-bit): through `tile` (the swizzled 64 x 256
// layout, 32 KiB) and out in 16-byte row chunks, or (tile == 0) straight from the fragment.
template <bool BF16>
__device__ __forceinline__ void store_tile(const float* acc, unsigned char* tile, u16* C, int N,
                                           int row0, int col0, int t, int wg) {
    const int r0 = (t >> 5) * 16 + ((t & 31) >> 2);
    if (tile == nullptr) {
        u16* c = C + (long long)(row0 + r0) * N + col0 + 2 * (t & 3);
#pragma unroll
        for (int j = 0; j < 32; ++j) {
            *(unsigned*)(c + 8 * j) = pack16<BF16>(acc[4 * j], acc[4 * j + 1]);
            *(unsigned*)(c + 8 * j + 8ll * N) = pack16<BF16>(acc[4 * j + 2], acc[4 * j + 3]);
        }
        return;
    }
    auto at = [&](int r, int col) {
        return (col >> 6) * (BK * 128) + r * 128 + ((((col >> 3) & 7) ^ (r & 7)) << 4)
               + (col & 7) * 2;
    };
    asm volatile("bar.sync %0, 128;" :: "r"(2 + wg) : "memory");   // the last tile's reads done
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int col = 8 * j + 2 * (t & 3);
        *(unsigned*)(tile + at(r0, col)) = pack16<BF16>(acc[4 * j], acc[4 * j + 1]);
        *(unsigned*)(tile + at(r0 + 8, col)) = pack16<BF16>(acc[4 * j + 2], acc[4 * j + 3]);
    }
    asm volatile("bar.sync %0, 128;" :: "r"(2 + wg) : "memory");
    u16* c = C + (long long)row0 * N + col0;
#pragma unroll
    for (int q = 0; q < 16; ++q) {
        const int k = t + 128 * q, r = k >> 5, col = (k & 31) * 8;
        *(uint4*)(c + (long long)r * N + col) = *(const uint4*)(tile + at(r, col));
    }
}

template <bool BF16>
__device__ __forceinline__ void body(const TmaDesc* am, const TmaDesc* bm, u16* C,
                                     const u16* bias, int M, int K, int N,
                                     unsigned char* smem_raw) {
    const int tid = threadIdx.x;
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    const unsigned base = (raw + 1023u) & ~1023u;
    unsigned char* gbase = smem_raw + (base - raw);
    const unsigned bars = base + STAGES * STAGE_BYTES + STAGING;   // full[s], then empty[s]
    const int tiles_m = M / BM, tiles_n = N / BN, ktiles = K / BK;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);
            mbar_init(bars + 8 * (STAGES + s), TS_SPLIT ? 1 : CONSUMERS / 32);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    float acc[128];
#if TS_MODE == 0
    // Every warpgroup computes; thread 0 issues each slice's loads STAGES - 2 slices ahead,
    // into the stage every warpgroup left before this step's barrier.
    const int wg = tid >> 7, t = tid & 127;
    int row, col;
    tile_origin(blockIdx.x, tiles_m, tiles_n, row, col);
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    constexpr int AHEAD = STAGES - 2;
#if TS_SPLIT
    // The example's protocol: A's barrier bars[s], B's bars[STAGES + s], each with an
    // expect_tx at issue and the issuing thread's arrival at its wait; phases in bit masks.
    unsigned phase_a = 0, phase_b = 0, issued_a = 0, issued_b = 0;
    auto issue = [&](int s, int kt) {
        const unsigned stage = base + s * STAGE_BYTES, ba = bars + 8 * s,
                       bb = bars + 8 * (STAGES + s);
        mbar_expect_tx_only(ba, A_BYTES);
        tma_load2d(stage, am, ba, kt * BK, row);
        issued_a |= 1u << s;
        mbar_expect_tx_only(bb, B_BYTES);
#pragma unroll
        for (int blk = 0; blk < 4; ++blk)
            tma_load2d(stage + A_BYTES + blk * (BK * 128), bm, bb, col + blk * 64, kt * BK);
        issued_b |= 1u << s;
    };
    if (tid == 0)
        for (int s = 0; s < AHEAD && s < ktiles; ++s) issue(s, s);
#else
    if (tid == 0)
        for (int s = 0; s < AHEAD && s < ktiles; ++s)
            load_stage(base + s * STAGE_BYTES, bars + 8 * s, am, bm, row, col, s);
#endif
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
#if TS_SPLIT
        {
            const unsigned ba = bars + 8 * s, bb = bars + 8 * (STAGES + s);
            if ((issued_a >> s) & 1u) { mbar_arrive(ba); issued_a &= ~(1u << s); }
            mbar_wait(ba, (phase_a >> s) & 1u);
            phase_a ^= 1u << s;
            if ((issued_b >> s) & 1u) { mbar_arrive(bb); issued_b &= ~(1u << s); }
            mbar_wait(bb, (phase_b >> s) & 1u);
            phase_b ^= 1u << s;
        }
#else
        mbar_wait(bars + 8 * s, (kt / STAGES) & 1);
#endif
#if TS_PFENCE
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
        __syncthreads();
        const int nxt = kt + AHEAD;
#if TS_SPLIT
        if (tid == 0 && nxt < ktiles) issue(nxt % STAGES, nxt);
#else
        if (tid == 0 && nxt < ktiles)
            load_stage(base + (nxt % STAGES) * STAGE_BYTES, bars + 8 * (nxt % STAGES), am, bm,
                       row, col, nxt);
#endif
        mma_slice<BF16>(acc, base + s * STAGE_BYTES, wg);
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(acc[i]) :: "memory");
#if TS_GELU
    // acc[4j + e]: column 8j + 2 (t % 4) + e % 2 of the warpgroup's tile.
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int cj = col + 8 * j + 2 * (t & 3);
        const float b0 = from16<BF16>(bias[cj]), b1 = from16<BF16>(bias[cj + 1]);
        acc[4 * j] = gelu_tanh(acc[4 * j] + b0);
        acc[4 * j + 1] = gelu_tanh(acc[4 * j + 1] + b1);
        acc[4 * j + 2] = gelu_tanh(acc[4 * j + 2] + b0);
        acc[4 * j + 3] = gelu_tanh(acc[4 * j + 3] + b1);
    }
#endif
    __syncthreads();
    unsigned char* tile = TS_EPI == 2 ? nullptr : gbase + wg * STAGE_BYTES + A_BYTES;
    store_tile<BF16>(acc, tile, C, N, row + wg * 64, col, t, wg);
#else
    const int wg = tid >> 7;
    const int first = TS_PERSIST ? blockIdx.x : blockIdx.x;
    const int step = TS_PERSIST ? gridDim.x : tiles_m * tiles_n;
    if (wg == 0) {
#if TS_REG
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
#endif
        if (tid == 0) {
            int it = 0;
            for (int tile = first; tile < tiles_m * tiles_n; tile += step) {
                int row, col;
                tile_origin(tile, tiles_m, tiles_n, row, col);
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(bars + 8 * (STAGES + s), ((it / STAGES) - 1) & 1);
                    load_stage(base + s * STAGE_BYTES, bars + 8 * s, am, bm, row, col, kt);
                }
            }
        }
        return;
    }
#if TS_REG
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
#endif
    const int cw = wg - 1, t = tid & 127, lane = tid & 31;
    int it = 0;
    for (int tile = first; tile < tiles_m * tiles_n; tile += step) {
        int row, col;
        tile_origin(tile, tiles_m, tiles_n, row, col);
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
        for (int kt = 0; kt < ktiles; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(bars + 8 * s, (it / STAGES) & 1);
            mma_slice<BF16>(acc, base + s * STAGE_BYTES, cw);
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            // The previous slice's products are retired: its stage goes back to the producer.
            if (kt > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(acc[i]) :: "memory");
        if (lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
        unsigned char* tile_buf;
        if (TS_EPI == 0) {
            // Non-persistent: past this barrier of the consumers no MMA reads the ring (and every
            // load has landed: each was waited for), so stage cw's B slice stages the output.
            asm volatile("bar.sync 1, 256;" ::: "memory");
            tile_buf = gbase + cw * STAGE_BYTES + A_BYTES;
        } else if (TS_EPI == 1) {
            tile_buf = gbase + STAGES * STAGE_BYTES + cw * (64 * BN * 2);
        } else {
            tile_buf = nullptr;
        }
        store_tile<BF16>(acc, tile_buf, C, N, row + cw * 64, col, t, cw);
    }
#endif
}

#define TS_KERNEL(NAME, BF16)                                                                 \
    extern "C" __global__ void __launch_bounds__(THREADS, 1) NAME(                              \
            const __grid_constant__ TmaDesc am, const __grid_constant__ TmaDesc bm,              \
            u16* __restrict__ C, const u16* __restrict__ bias, int M, int K, int N) {            \
        extern __shared__ __align__(1024) unsigned char smem_raw[];                             \
        body<BF16>(&am, &bm, C, bias, M, K, N, smem_raw);                                        \
    }
TS_KERNEL(tma_f16, false)
TS_KERNEL(tma_bf16, true)
"""

# name: (defines, threads, persistent)
VARIANTS = {
    "sync4": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0"), 256, False),
    # Row-major block order over the grid (the example before it took the grouped order).
    "sync4flat": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_GROUP=1"), 256, False),
    # sync4 with one of the example's differences each, then with all three.
    "sync4err": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_ERRFLAG=1"), 256, False),
    "sync4host": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_ERRFLAG=2"), 256, False),
    "sync4host64": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_ERRFLAG=3"), 256, False),
    "sync4split": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_SPLIT=1"), 256, False),
    "sync4fence": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_PFENCE=1"), 256, False),
    "sync4gn": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_ERRFLAG=1", "TS_SPLIT=1",
                 "TS_PFENCE=1"), 256, False),
    # The fused GEMM + bias + GELU (examples/tensor_core/gemm_bias_gelu_wgmma.py): c =
    # gelu_tanh(a @ b + bias); checked and timed by tools/bench_suite.py, not here.
    "sync4gelu": (("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_GELU=1"), 256, False),
    "ws4": (("TS_MODE=1", "TS_STAGES=4", "TS_EPI=0"), 384, False),
    "ws4reg": (("TS_MODE=1", "TS_STAGES=4", "TS_EPI=0", "TS_REG=1"), 384, False),
    "ws3": (("TS_MODE=1", "TS_STAGES=3", "TS_EPI=0"), 384, False),
    "pers3stage": (("TS_MODE=1", "TS_STAGES=3", "TS_EPI=1", "TS_PERSIST=1"), 384, True),
    "pers4direct": (("TS_MODE=1", "TS_STAGES=4", "TS_EPI=2", "TS_PERSIST=1"), 384, True),
    "pers4dreg": (("TS_MODE=1", "TS_STAGES=4", "TS_EPI=2", "TS_PERSIST=1", "TS_REG=1"), 384,
                  True),
}


def shared_bytes(defines) -> int:
    d = dict(x.split("=") for x in defines)
    stages = int(d.get("TS_STAGES", 4))
    staging = 2 * 64 * 256 * 2 if d.get("TS_EPI") == "1" else 0
    return stages * (128 + 256) * 64 * 2 + staging + 1024 + 2 * 8 * stages


def tensor_map(t, box_inner: int, box_outer: int):
    """A 2-D tensor map of the row-major 16-bit torch tensor ``t``: boxes of ``box_outer`` rows
    of ``box_inner`` elements, 128-byte swizzle."""
    from cuda.bindings import driver as drv

    rows, cols = t.shape
    kinds = drv.CUtensorMapDataType
    dtype = (kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT16 if str(t.dtype) == "torch.float16"
             else kinds.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)
    err, tmap = drv.cuTensorMapEncodeTiled(
        dtype, 2, t.data_ptr(), [drv.cuuint64_t(cols), drv.cuuint64_t(rows)],
        [drv.cuuint64_t(cols * 2)], [drv.cuuint32_t(box_inner), drv.cuuint32_t(box_outer)],
        [drv.cuuint32_t(1), drv.cuuint32_t(1)],
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled: {err}")
    return tmap


def source() -> str:
    """The CUDA of every variant (``-D`` defines choose one)."""
    src = wp.sources()
    asm = src["_wgmma_asm"]
    return (SOURCE.replace("@WGMMA_HELPERS@", src["WGMMA_DEVICE_HELPERS"])
            .replace("@WGMMA_F16@", asm("f16")).replace("@WGMMA_BF16@", asm("bf16")))


class HandWritten:
    """The variants ``names``, compiled for sm_90a and loaded into torch's context (those that
    fail to compile are reported and left out of :attr:`kernels`); :meth:`call` makes a
    launch of one on torch tensors (``sms``: the persistent grid's size)."""

    def __init__(self, names, sms: int):
        ks = wp.Kernels()
        text = source()
        self.sms = sms
        self.kernels: dict = {}
        for name in names:
            defines, threads, persistent = VARIANTS[name]
            shared = shared_bytes(defines)
            try:
                cubin = wp.nvrtc_compile(text, "sm_90a", defines)
                self.kernels[name] = (
                    {lab: ks.load(cubin, f"tma_{lab}", shared) for lab in ("f16", "bf16")},
                    threads, persistent, shared)
                for mod in ks.modules[-2:]:
                    self._point_host_flag(ks, mod)
                say(f"{name}: compiled, {threads} threads, shared {shared}")
            except Exception as exc:
                say(f"{name}: compile failed: {exc!r}"[:2000])

    _host_flag = None

    def _point_host_flag(self, ks, mod) -> None:
        """Point the module's ``ts_host_flag`` at a zero word of mapped host memory (the
        kind of memory gpu_native's error records live in)."""
        drv = ks.drv
        if self._host_flag is None:
            host = ks.check(drv.cuMemHostAlloc(4, drv.CU_MEMHOSTALLOC_DEVICEMAP))
            ctypes.memset(host, 0, 4)
            self._host_flag = (host, int(ks.check(drv.cuMemHostGetDevicePointer(host, 0))))
        dptr, _size = ks.check(drv.cuModuleGetGlobal(mod, b"ts_host_flag"))
        word = ctypes.c_uint64(self._host_flag[1])
        ks.check(drv.cuMemcpyHtoD(dptr, ctypes.addressof(word), 8))

    def call(self, name: str, label: str, a, b, c, bias=None):
        """A function that launches variant ``name`` (``label`` "f16" or "bf16") for ``c = a @
        b`` (``sync4gelu``: ``gelu_tanh(a @ b + bias)``) on torch's current stream (its tensor
        maps encoded once, here)."""
        fns, threads, persistent, shared = self.kernels[name]
        m, k = a.shape
        n = b.shape[1]
        tiles = (m // 128) * (n // 256)
        grid = min(tiles, self.sms) if persistent else tiles
        amap, bmap = tensor_map(a, 64, 128), tensor_map(b, 64, 64)
        bias_ptr = 0 if bias is None else bias.data_ptr()
        return lambda: _launch(fns[label], grid, threads, shared, amap, bmap, c, bias_ptr, m, k,
                               n)


def _launch(fn, grid, threads, shared, amap, bmap, c, bias_ptr, m, k, n):
    import torch
    from cuda.bindings import driver as drv

    keep = [ctypes.c_void_p(c.data_ptr()), ctypes.c_void_p(bias_ptr), ctypes.c_int(m),
            ctypes.c_int(k), ctypes.c_int(n)]
    ptrs = [amap.getPtr(), bmap.getPtr()] + [ctypes.addressof(x) for x in keep]
    params = (ctypes.c_void_p * len(ptrs))(*ptrs)
    stream = drv.CUstream(torch.cuda.current_stream().cuda_stream)
    err, = drv.cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, shared, stream,
                              ctypes.addressof(params), 0)
    if int(err) != 0:
        raise RuntimeError(f"launch: {err}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--variants", default=",".join(v for v in VARIANTS if v != "sync4gelu"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--sustain", type=float, default=0.0,
                    help="then run each row back to back for this many seconds, twice, and log "
                         "its SM clock, power and clock cycles a call (tools/nvml_meter.py)")
    wp.logged(run, ap.parse_args())


def run(opts):
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    from cuda.bindings import driver as drv

    _, dev = drv.cuDeviceGet(torch.cuda.current_device())
    _, sms = drv.cuDeviceGetAttribute(
        drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    say("device:", torch.cuda.get_device_name(), "SMs", sms, "torch", torch.__version__)
    hand = HandWritten(opts.variants.split(","), sms)
    kernels, call = hand.kernels, hand.call

    def rel(c, ref):
        d = c.double()
        if not torch.isfinite(d).all():
            return float("nan")
        return float((d - ref).norm() / ref.norm())

    example = None
    try:
        import hgemm_wgmma as ex

        import gpu_native as gn

        example = (gn, ex)
    except Exception as exc:
        say("gpu_native example not importable:", repr(exc)[:300])
    triton_mm = None
    try:
        import triton_matmul

        triton_mm = triton_matmul.matmul
    except Exception as exc:
        say("triton not importable:", repr(exc)[:300])

    def peers(a, b, c) -> dict:
        out = {}
        if example is not None:
            gn, ex = example
            ga, gb, gc = (gn.to_device(t) for t in (a, b, c))
            out["gpu_native example (hgemm_wgmma)"] = lambda: ex.hgemm_wgmma(ga, gb, gc)
        out["torch.matmul (cuBLAS)"] = lambda: torch.matmul(a, b, out=c)
        if triton_mm is not None:
            out["Triton tutorial (autotuned)"] = lambda: triton_mm(a, b, out=c)
        return out

    # Correctness first at a size with several tiles a block (persistent) and a ragged last wave.
    for size in (512, 1536):
        for label, dtype, tol in (("f16", torch.float16, 2e-3), ("bf16", torch.bfloat16, 1e-2)):
            g = torch.Generator(device="cuda").manual_seed(size)
            a = torch.randn(size, size, device="cuda", generator=g).to(dtype)
            b = torch.randn(size, size, device="cuda", generator=g).to(dtype)
            ref = a.double() @ b.double()
            for name in list(kernels):
                c = torch.full((size, size), float("nan"), device="cuda", dtype=dtype)
                try:
                    call(name, label, a, b, c)()
                    torch.cuda.synchronize()
                    e = rel(c, ref)
                except Exception as exc:
                    e = float("nan")
                    say(f"  {name} {label} {size}: {exc!r}"[:500])
                ok = e <= tol
                say(f"  check {size}^3 {label:4s} {name:12s} rel err {e:.2e} "
                    f"{'ok' if ok else 'WRONG'}")
                if not ok:
                    kernels.pop(name)

    m = opts.size
    work = 2.0 * m ** 3
    for label, dtype, tol in (("f16", torch.float16, 2e-3), ("bf16", torch.bfloat16, 1e-2)):
        g = torch.Generator(device="cuda").manual_seed(7)
        a = torch.randn(m, m, device="cuda", generator=g).to(dtype)
        b = torch.randn(m, m, device="cuda", generator=g).to(dtype)
        ref = a.float() @ b.float()
        c = torch.full((m, m), float("nan"), device="cuda", dtype=dtype)
        rows = {f"tma {name}": call(name, label, a, b, c) for name in kernels}
        rows.update(peers(a, b, c))
        best: dict = {}
        times: dict = {name: [] for name in rows}
        names = list(rows)
        for r in range(opts.rounds):
            # Each round starts one row later, so no row is always timed first (or right after
            # the same neighbour): a position effect shows up as spread, not as a ratio.
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                fn = rows[name]
                c.fill_(float("nan"))
                try:
                    fn()
                    torch.cuda.synchronize()
                    e1 = float(((c.float() - ref).norm() / ref.norm()).item())
                    ms = wp.timed(fn)
                    e2 = float(((c.float() - ref).norm() / ref.norm()).item())
                except Exception as exc:
                    say(f"  {name}: {exc!r}"[:500])
                    continue
                ok = e1 <= tol and e2 <= tol
                old = best.get(name)
                best[name] = (min(ms, old[0]) if old else ms, ok and (old is None or old[1]))
                times[name].append((ms, order.index(name)))
        for name, seen in times.items():
            say(f"  {label} {name}: " + ", ".join(f"{ms:.4f}@{pos}" for ms, pos in seen)
                + f"  (ms@position per round; median {statistics.median(ms for ms, _ in seen):.4f})")
        if triton_mm is not None:
            say(f"  Triton's {label} configuration:",
                getattr(triton_matmul.matmul_kernel, "best_config", "unknown"))
        if opts.sustain > 0:
            sustain(torch, rows, names, label, opts.sustain)
        cub = best.get("torch.matmul (cuBLAS)", (float("nan"),))[0]
        tri = best.get("Triton tutorial (autotuned)", (float("nan"),))[0]
        for name, (ms, ok) in best.items():
            say(f"  {m}^3 {label:4s} {name:36s} {ms:7.4f} ms {work / ms / 1e9:6.1f} TFLOP/s "
                f"{cub / ms:5.3f}x cuBLAS {tri / ms:5.3f}x Triton {'ok' if ok else 'WRONG'}")


def sustain(torch, rows: dict, names: list, label: str, seconds: float) -> None:
    """Each row back to back for ``seconds``, in two rounds (the second in reverse order), with
    the SM clock and the energy read from NVML: at the power limit a faster kernel may be one
    that spends fewer cycles or one that the GPU clocks higher, and ``kcycles`` (thousands of
    clock cycles a call) tells which."""
    import nvml_meter

    try:
        meter = nvml_meter.for_torch_device(torch)
    except Exception as exc:
        say("NVML not usable:", repr(exc)[:300])
        return
    seen: dict = {name: [] for name in names}
    for order in (names, names[::-1]):
        for name in order:
            seen[name].append(nvml_meter.sustained(torch, meter, rows[name], seconds))
    for name in names:
        r = {k: statistics.fmean(x[k] for x in seen[name]) for k in seen[name][0]}
        say(f"  sustained {label:4s} {name:36s} {r['ms']:.4f} ms  {r['mhz']:6.0f} MHz "
            f"{r['watts']:5.0f} W  {r['mj']:6.1f} mJ/call  {r['kcycles']:6.1f} kcycles/call  "
            f"(rounds: " + ", ".join(f"{x['ms']:.4f} ms@{x['mhz']:.0f}" for x in seen[name])
            + ")")


if __name__ == "__main__":
    main()
