"""What a kernel build is: one translation unit for one GPU architecture (:class:`BuildRequest`),
and the architecture names it accepts (:func:`parse_arch`).

Both sides of a build read this module: :mod:`gpu_native.compiler` (NVRTC) compiles a request,
and :mod:`gpu_native.cache` keys, finds and stores what it produced.  It lives below both, so that
neither has to import the other to know what a request is; the cache asks the compiler only when
it has to compile (see ``docs/architecture.md``).
"""

from __future__ import annotations

from .nodes import node
from .spec import KernelSpec, Trait, VariantSpec

__all__ = ["BuildRequest", "kernel_label", "parse_arch"]


def parse_arch(arch: str) -> tuple[int, str]:
    """Split ``"sm_90a"`` into ``(90, "a")``; raise ``ValueError`` for anything else."""
    if isinstance(arch, str) and arch.startswith("sm_"):
        digits = arch[3:]
        suffix = digits[-1:] if digits[-1:] in ("a", "f") else ""
        digits = digits[: len(digits) - len(suffix)]
        if 2 <= len(digits) <= 3 and digits.isascii() and digits.isdigit():
            return int(digits), suffix
    raise ValueError(f"invalid GPU architecture {arch!r}: expected a name like 'sm_90' "
                     "(for a device of compute capability 9.0)")


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
    artifacts shipped beside the module.
    """

    source: str
    symbol: str
    arch: str
    fastmath: bool = False
    max_registers: int | None = None
    uses_half: bool = False
    label: str = ""
    module: str = ""
    module_file: str | None = None

    @classmethod
    def for_variant(cls, spec: KernelSpec, variant: VariantSpec, arch: str,
                    module_file: str | None = None) -> BuildRequest:
        """The request for one variant of a kernel spec (the :class:`~gpu_native.spec.KernelSpec`
        the rewritten module embeds).  ``gpu-native precompile`` builds its requests this way, so
        the runtime does too: then both compute the same keys."""
        options = spec.options
        return cls(
            source=variant.cuda, symbol=variant.symbol, arch=arch,
            fastmath=bool(options.fastmath), max_registers=options.max_registers,
            uses_half=Trait.USES_HALF in variant.traits,
            label=kernel_label(spec.module, spec.name, variant.types),
            module=spec.module, module_file=module_file)
