"""A right shift by a constant of a value the proofs show nonnegative is emitted as the logical
shift (where an index or an assignment is proven), which the device compiler can fold into
address arithmetic; any other signed right shift
goes through ``gn_shr`` (a bit-field extract, see ``gn_asr32`` in the prelude for the ptxas fold
it avoids).  And the no-wrap marks reach the index arithmetic of ``cp_async`` and ``ldmatrix``
operands, as they do every other index."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpu_native.rewrite import transpile_module

ROOT = Path(__file__).resolve().parents[2]

SHIFTS = """\
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, i32, grid_dim, thread_idx

@gpu_kernel(Kernel1D)
def k(x: CUDASlice[i32], out: CUDASliceMut[i32]):
    assert grid_dim.x == 1
    t = thread_idx.x
    if t < len(out) and t < len(x):
        h = (t >> 1) & 3
        v = x[t] >> 2
        out[t] = h + v
"""


def cuda_of(source: str, name: str = "shifts") -> str:
    (kernel,) = transpile_module(textwrap.dedent(source), f"{name}.py", name).kernels
    return kernel.variants[0].cuda


def test_a_nonnegative_value_is_shifted_logically_and_a_signed_one_arithmetically():
    cuda = cuda_of(SHIFTS)
    start = cuda.index("h = ")
    body = cuda[start:cuda.find('extern "C"', start)]   # the first entry point's
    assert "((unsigned int)(t) >> 1)" in body          # thread_idx.x >= 0
    assert "gn_shr<int>(" in body                      # x[t] may be negative
    assert body.count("gn_shr<int>(") == 1


@pytest.mark.slow
def test_the_tensor_core_gemm_has_no_arithmetic_shift_and_plain_copy_addresses():
    path = ROOT / "examples" / "tensor_core" / "hgemm_tensor_core.py"
    module = transpile_module(path.read_text(), str(path), "hgemm_tensor_core")
    (kernel,) = module.kernels
    cuda = kernel.variants[0].cuda
    # Its swizzles (ra >> 1) & 3 and (r >> 1) & 3 are of nonnegative rows.
    assert "gn_shr" not in cuda.split("extern \"C\"", 1)[1]
    assert "(unsigned int)(ra) >> 1" in cuda
