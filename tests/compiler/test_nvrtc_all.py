"""Every generated kernel (examples, examples/tensor_core and the gallery, test and benchmark
kernels) compiles with NVRTC to cubin for sm_80 and sm_90 with an empty log: no errors and no
warnings; and for sm_75 (Turing, the oldest GPU of CUDA 13) each that uses nothing of newer GPUs
(its ``min_arch``).  NVRTC runs on the CPU, so this runs in CI.

The quick loop (``-m "not slow"``) compiles each kernel to PTX for compute_90: NVRTC's front end
and NVVM, where the C++ we generate is checked, without the device assembler (ptxas), which is
two fifths of the time; the cubins are the slow tier's."""

from __future__ import annotations

import pytest

from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_for
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


# One test per file and architecture, each transpiling its file when it runs: parametrising by
# kernel meant transpiling every file at collection, about 12 s in each pytest worker.
PATHS = [path for path in FILES if "gpu_kernel" in path.read_text()]

# The files whose PTX took 1.5 s or more on the 2-core development machine (5.4 s for
# hgemm_tensor_core), about half of the quick tier's time: compiled in the slow tier only, with
# their cubins, so that `-m "not slow"` stays under two minutes.
HEAVY = {"hgemm_tensor_core", "hgemm_wgmma", "gemm_bias_gelu_wgmma", "kernels_language",
         "grid_sync_standardize", "kernels_vector_atomics", "kernels_random", "bitonic_sort",
         "kernels_complex", "kernels_typevar_casts", "kernels_bits", "kernels_unique_idioms"}


def _build(kernel, variant, arch):
    """The variant's image for ``arch`` (PTX for ``compute_*``), or why it is not built there."""
    if variant.min_arch > int(arch.split("_")[1]):
        return f"uses {variant.arch_use}, of sm_{variant.min_arch} and newer GPUs"
    if Trait.USES_WGMMA in variant.traits:
        # Warpgroup MMA builds for sm_90a only (gpu_native.build.wgmma_arch).
        if arch not in ("sm_90", "compute_90"):
            return "warpgroup MMA compiles for sm_90a only"
        arch += "a"
    request = BuildRequest(source=variant.cuda, symbol=variant.symbol,
                           arch=arch.replace("compute_", "sm_"),
                           fastmath=kernel.options.fastmath,
                           max_registers=kernel.options.max_registers,
                           uses_half=Trait.USES_HALF in variant.traits,
                           uses_grid_sync=Trait.USES_GRID_SYNC in variant.traits,
                           label=variant.symbol)
    return compile_for(request, arch)


def _cases():
    """(path, arch) for each file: PTX for compute_90 in the quick tier (but the HEAVY files'),
    cubins for sm_75, sm_80 and sm_90 in the slow one."""
    for arch in ("sm_75", "sm_80", "sm_90", "compute_90"):
        for path in PATHS:
            slow = arch != "compute_90" or path.stem in HEAVY
            yield pytest.param(path, arch, id=f"{arch}-{path.parent.name}/{path.stem}",
                               marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("path, arch", _cases())
def test_compiles_cleanly(path, arch):
    built, skipped, failed = 0, [], []
    for kernel in transpile_module(path.read_text(), str(path), path.stem).kernels:
        for variant in kernel.variants:
            image = _build(kernel, variant, arch)
            if isinstance(image, str):
                skipped.append(f"{variant.symbol}: {image}")
                continue
            built += 1
            log = image.log.strip("\x00").strip()
            if log or not (image.image[:4] == b"\x7fELF" if image.kind == "cubin"
                           else image.image.startswith(b"//") and b".entry" in image.image):
                failed.append(f"{variant.symbol}: {image.kind} {image.image[:4]!r}\n{log}")
    assert not failed, "\n\n".join(failed)
    if not built:
        pytest.skip("; ".join(skipped))
