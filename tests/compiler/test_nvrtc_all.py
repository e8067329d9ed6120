"""Every generated kernel (examples, examples/tensor_core and the gallery, test and benchmark
kernels) compiles with NVRTC to cubin for sm_80 and sm_90 with an empty log: no errors and no
warnings; and for sm_75 (Turing, the oldest GPU of CUDA 13) each that uses nothing of newer GPUs
(its ``min_arch``).  NVRTC runs on the CPU, so this runs in CI."""

from __future__ import annotations

import pytest

from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.rewrite import transpile_module
from gpu_native.spec import Trait
from tests.helpers import HELPERS, ROOT

FILES = sorted([*(ROOT / "examples").glob("*.py"),
                *(ROOT / "examples" / "tensor_core").glob("*.py"),
                *(p for p in (ROOT / "examples" / "gallery").glob("*.py")
                  if not p.name.startswith("_")),
                HELPERS / "kernels_runtime.py",
                HELPERS / "kernels_language.py",
                HELPERS / "kernels_bits.py",
                HELPERS / "kernels_random.py",
                HELPERS / "kernels_unique_idioms.py",
                HELPERS / "kernels_guarded.py",
                HELPERS / "kernels_padded.py",
                HELPERS / "kernels_tuples.py",
                HELPERS / "kernels_vectors.py",
                HELPERS / "kernels_vector_loads.py",
                HELPERS / "kernels_vector_atomics.py",
                HELPERS / "kernels_half2.py",
                HELPERS / "kernels_complex.py",
                HELPERS / "kernels_unroll.py",
                HELPERS / "kernels_structs.py",
                HELPERS / "kernels_tf32.py",
                HELPERS / "kernels_typevar_casts.py",
                HELPERS / "kernels_reversed.py",
                *(ROOT / "tools").glob("_bench*.py")])


def _variants():
    for path in FILES:
        source = path.read_text()
        if "gpu_kernel" not in source:
            continue
        for kernel in transpile_module(source, str(path), path.stem).kernels:
            for variant in kernel.variants:
                yield pytest.param(kernel, variant, id=f"{path.stem}.{variant.symbol}")


@pytest.mark.parametrize("kernel, variant", list(_variants()))
@pytest.mark.parametrize("arch", [pytest.param("sm_75", marks=pytest.mark.slow),
                                  pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"])
def test_compiles_cleanly(kernel, variant, arch):
    if variant.min_arch > int(arch[3:]):
        pytest.skip(f"uses {variant.arch_use}, of sm_{variant.min_arch} and newer GPUs")
    if Trait.USES_WGMMA in variant.traits:
        # Warpgroup MMA builds for sm_90a only (gpu_native.build.wgmma_arch).
        if arch != "sm_90":
            pytest.skip("warpgroup MMA compiles for sm_90a only")
        arch = "sm_90a"
    request = BuildRequest(source=variant.cuda, symbol=variant.symbol, arch=arch,
                           fastmath=kernel.options.fastmath,
                           max_registers=kernel.options.max_registers,
                           uses_half=Trait.USES_HALF in variant.traits,
                           uses_grid_sync=Trait.USES_GRID_SYNC in variant.traits,
                           label=variant.symbol)
    image = compile_request(request)
    assert image.kind == "cubin"
    assert image.log.strip("\x00").strip() == ""
    assert image.image[:4] == b"\x7fELF"
