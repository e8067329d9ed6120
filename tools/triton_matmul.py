"""Triton's tutorial 03 matrix multiplication (triton-lang.org, "Matrix Multiplication"): the
peer tools/bench_suite.py's tensor-core rows compare against.  Imported only where ``triton`` is
importable.

The kernel is the tutorial's (grouped program ordering for L2 reuse, autotuned over its CUDA
configurations, f32 accumulation through ``tl.dot``, the result stored in the output's type), with
one extension for the ``gemm_bias_gelu`` row: an optional bias added per column and the tanh GELU
applied to the accumulator before the store, as the tutorial's fused ``leaky_relu`` is.
"""

from __future__ import annotations

import triton
import triton.language as tl


def _configs():
    # The tutorial's CUDA configurations for 16-bit inputs.
    shapes = [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
              (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2),
              (32, 64, 32, 5, 2)]
    return [triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                           "GROUP_SIZE_M": 8}, num_stages=stages, num_warps=warps)
            for bm, bn, bk, stages, warps in shapes]


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if HAS_BIAS:
        accumulator += tl.load(bias_ptr + offs_bn).to(tl.float32)[None, :]
    if ACTIVATION == "gelu_tanh":
        # tanh(y) = 2 sigmoid(2y) - 1 (tl.sigmoid exists in every Triton version).
        inner = 0.7978845608028654 * (accumulator + 0.044715 * accumulator * accumulator
                                      * accumulator)
        accumulator = 0.5 * accumulator * (2.0 * tl.sigmoid(2.0 * inner))
    c = accumulator.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul(a, b, out, bias=None, activation: str = ""):
    """``out[...] = activation(a @ b + bias)`` for torch CUDA tensors ``a`` (M x K), ``b``
    (K x N), ``out`` (M x N, any float type), ``bias`` (N,) or None; ``activation`` ``""`` or
    ``"gelu_tanh"``."""
    if a.shape[1] != b.shape[0] or out.shape != (a.shape[0], b.shape[1]):
        raise ValueError(f"shapes do not multiply: a {tuple(a.shape)}, b {tuple(b.shape)}, "
                         f"out {tuple(out.shape)}")
    if activation not in ("", "gelu_tanh"):
        raise ValueError(f"activation must be '' or 'gelu_tanh', not {activation!r}")
    m, k = a.shape
    n = b.shape[1]

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)

    matmul_kernel[grid](a, b, out, a if bias is None else bias, m, n, k,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1),
                        HAS_BIAS=bias is not None, ACTIVATION=activation)
    return out
