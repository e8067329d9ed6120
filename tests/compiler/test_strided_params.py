"""Kernels with Strided array parameters compile cleanly to cubin, every entry point."""

from __future__ import annotations

import pytest

from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from tests.runtime.test_strided_views import SOURCE


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_strided_kernels_compile_to_cubin(kernel_module, arch):
    m = kernel_module(SOURCE)
    compiled = 0
    for k in (m.axpy2d, m.row_sums, m.scale_vectors):
        for variant in k.variants.values():
            cuda = variant.cuda
            # The strides are parameters, and indexing scales each index by its own.
            assert "_s0" in cuda and "* __gn_" in cuda
            image = compile_request(BuildRequest(source=cuda, symbol=variant.symbol, arch=arch,
                                                 label=variant.symbol))
            assert image.kind == "cubin" and image.image[:4] == b"\x7fELF"
            assert image.log.strip("\x00").strip() == ""
            compiled += 1
    assert compiled == 3


def test_a_contiguous_parameter_keeps_row_major_indexing(kernel_module):
    """The contiguous fast path is unchanged: no strides in its parameters or its indexing."""
    m = kernel_module(SOURCE)
    (variant,) = m.copy2d.variants.values()
    assert "_s0" not in variant.cuda and "_s1" not in variant.cuda
