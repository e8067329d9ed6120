"""What a kernel build is: one translation unit for one GPU architecture (:class:`BuildRequest`),
and the architecture names it accepts (:func:`parse_arch`).

Both sides of a build read this module: :mod:`gpu_native.compiler` (NVRTC) compiles a request,
and :mod:`gpu_native.cache` keys, finds and stores what it produced.  It lives below both, so that
neither has to import the other to know what a request is; the cache asks the compiler only when
it has to compile (see ``docs/architecture.md``).
"""

from __future__ import annotations

from .errors import CompileError
from .nodes import node
from .spec import KernelSpec, Trait, VariantSpec

__all__ = ["BuildRequest", "arch_refusal", "kernel_label", "parse_arch", "uses_wgmma",
           "wgmma_arch"]

# The architecture warpgroup MMA (PTX ``wgmma``) compiles for: sm_90's arch-specific target,
# whose code runs on sm_90 devices only (not forward compatible, as plain sm_90 code is).
WGMMA_ARCH = "sm_90a"


def parse_arch(arch: str) -> tuple[int, str]:
    """Split ``"sm_90a"`` into ``(90, "a")``; raise ``ValueError`` for anything else."""
    if isinstance(arch, str) and arch.startswith("sm_"):
        digits = arch[3:]
        suffix = digits[-1:] if digits[-1:] in ("a", "f") else ""
        digits = digits[: len(digits) - len(suffix)]
        # No leading zero: NVRTC knows sm_90, not sm_090.
        if 2 <= len(digits) <= 3 and digits.isascii() and digits.isdigit() and digits[0] != "0":
            # The architecture-specific targets begin at sm_90a, the family ones at sm_100f.
            first = {"": 0, "a": 90, "f": 100}[suffix]
            if int(digits) < first:
                raise ValueError(f"invalid GPU architecture {arch!r}: '{suffix}' targets begin "
                                 f"at sm_{first}{suffix}; write 'sm_{digits}'")
            return int(digits), suffix
    raise ValueError(f"invalid GPU architecture {arch!r}: expected a name like 'sm_90' "
                     "(for a device of compute capability 9.0)")


def uses_wgmma(variant: VariantSpec) -> bool:
    """Does the variant use warpgroup MMA (and so build for sm_90a only)?"""
    return Trait.USES_WGMMA in variant.traits


def wgmma_arch(arch: str, label: str = "") -> str:
    """The architecture to build a kernel that uses warpgroup MMA for, on a device of ``arch``:
    ``sm_90a`` for an sm_90 device (or ``arch`` already ``sm_90a``).

    Raises
    ------
    CompileError
        ``arch`` is not sm_90: ``wgmma`` exists on sm_90a only, and sm_90a code runs on no other
        architecture.
    """
    number, _ = parse_arch(arch)
    if number != 90:
        who = f"kernel {label}" if label else "a kernel"
        raise CompileError(
            f"{who} uses warpgroup MMA (warpgroup_mma, PTX wgmma), which exists only on sm_90 "
            f"GPUs (Hopper: H100, H200; built for {WGMMA_ARCH}, which no other architecture "
            f"runs); this device is {arch}. Use mma_sync (examples/tensor_core/"
            "hgemm_tensor_core.py) on other GPUs")
    return WGMMA_ARCH


def arch_refusal(variant: VariantSpec, arch: str, label: str = "") -> str | None:
    """Why ``variant`` cannot be built for ``arch``: it uses a construct that only newer GPUs
    have (:attr:`~gpu_native.spec.VariantSpec.min_arch`); ``None`` where it can."""
    if not variant.min_arch or parse_arch(arch)[0] >= variant.min_arch:
        return None
    who = f"kernel {label}" if label else "the kernel"
    return (f"{who} cannot be built for {arch}: it uses {variant.arch_use}, which only GPUs of "
            f"sm_{variant.min_arch} (compute capability {variant.min_arch // 10}."
            f"{variant.min_arch % 10}) and newer have")


def kernel_label(module: str, name: str, types: tuple[tuple[str, str], ...] = ()) -> str:
    """The human name of one kernel specialisation: ``"pkg.mod.add_kernel[T=f32]"``."""
    base = f"{module}.{name}" if module else name
    if types:
        base += "[" + ",".join(f"{var}={ty}" for var, ty in types) + "]"
    return base


@node
class BuildRequest:
    """One kernel translation unit to build for one GPU architecture.

    Only ``source``, ``symbol``, ``arch`` and the compile options enter the cache key; ``label``,
    ``module`` and ``module_file`` are for messages and for finding a directory of precompiled
    artifacts shipped beside the module.  ``driver_version`` is ``cuDriverGetVersion`` of the
    process that will load the result (``12040`` for CUDA 12.4), or ``None`` when that is not known
    (``gpu-native precompile`` builds for other machines): it decides which kinds of code are
    loadable (:func:`gpu_native.toolkit.choose_target`), and is in no key.
    """

    source: str
    symbol: str
    arch: str
    fastmath: bool = False
    max_registers: int | None = None
    uses_half: bool = False
    uses_grid_sync: bool = False
    label: str = ""
    module: str = ""
    module_file: str | None = None
    driver_version: int | None = None

    @classmethod
    def for_variant(cls, spec: KernelSpec, variant: VariantSpec, arch: str,
                    module_file: str | None = None,
                    driver_version: int | None = None) -> BuildRequest:
        """The request for one variant of a kernel spec (the :class:`~gpu_native.spec.KernelSpec`
        the rewritten module embeds).  ``gpu-native precompile`` builds its requests this way, so
        the runtime does too: then both compute the same keys.

        Raises
        ------
        CompileError
            The variant cannot be built for ``arch`` (:func:`wgmma_arch`, :func:`arch_refusal`).
        """
        options = spec.options
        label = kernel_label(spec.module, spec.name, variant.types)
        if Trait.USES_WGMMA in variant.traits:
            arch = wgmma_arch(arch, label)
        refusal = arch_refusal(variant, arch, label)
        if refusal is not None:
            raise CompileError(refusal)
        return cls(
            source=variant.cuda, symbol=variant.symbol, arch=arch,
            fastmath=bool(options.fastmath), max_registers=options.max_registers,
            uses_half=Trait.USES_HALF in variant.traits,
            uses_grid_sync=Trait.USES_GRID_SYNC in variant.traits,
            label=label, module=spec.module, module_file=module_file, driver_version=driver_version)
