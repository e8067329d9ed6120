"""The one entry point of the transpiler: Python module source in, rewritten module out.

The import hook, the ``gpu_kernel`` decorator's fallback (for ``__main__`` scripts and notebook
cells), ``gpu-native expand`` and ``gpu-native precompile`` all call :func:`rewrite_module` or
:func:`transpile_module`, so what ``expand`` shows is exactly what gets imported.  Nothing here
executes the user's module.
"""

from __future__ import annotations

import os
import re

from . import abi, ir
from ._version import __version__
from .check.program import CheckedKernel, Program
from .check.scope import ModuleLocator
from .emit.cuda import emit_kernel
from .emit.host import LauncherParam, kernel_block
from .emit.index32 import wants_index32
from .emit.uid_stride import vector_plan
from .frontend.parse import ModuleScan, has_gpu_decorators, scan_module
from .frontend.source import source_lines, too_deep
from .ircodec import encode_kernel
from .nodes import node

# The spec's layout and the launcher factory's protocol with the runtime (LaunchContext.fast_path);
# 2: the factory takes its classes from fast_path and names everything with a reserved prefix.
SPEC_SCHEMA = 2


@node
class KernelVariant:
    """One specialisation of a kernel: its CUDA translation unit, error-site table, and the
    encoded IR the simulator runs (:mod:`gpu_native.ircodec`; never part of a cache key)."""

    types: tuple[tuple[str, str], ...]  # (TypeVar, scalar type) pairs; () for plain kernels
    symbol: str
    kernel_id: int
    cuda: str
    sites: tuple[tuple, ...]
    traits: tuple[str, ...]
    launch_checks: tuple = ()
    ir: bytes = b""


@node
class KernelBuild:
    """Everything the runtime needs about one ``@gpu_kernel`` function."""

    name: str
    module: str
    file: str
    line: int
    ndim: int
    params: tuple[LauncherParam, ...]
    typevars: tuple[str, ...]
    options: dict
    variants: tuple[KernelVariant, ...]

    def spec(self) -> dict:
        """The literal embedded in the rewritten module (see ``gpu_native.runtime.kernel``)."""
        return {
            "schema": SPEC_SCHEMA,
            "version": __version__,
            "module": self.module,
            "name": self.name,
            "file": self.file,
            "line": self.line,
            "ndim": self.ndim,
            "params": tuple((p.name, p.dtype, p.ndim, p.mutable) if p.kind == "array"
                            else (p.name, p.dtype, 0, False) for p in self.params),
            "typevars": self.typevars,
            "options": self.options,
            "variants": tuple({
                "types": v.types, "symbol": v.symbol, "id": v.kernel_id, "cuda": v.cuda,
                "sites": v.sites, "traits": v.traits, "launch_checks": v.launch_checks,
                "ir": v.ir,
            } for v in self.variants),
        }


@node(frozen=False)
class TranspiledModule:
    scan: ModuleScan
    kernels: list[KernelBuild]
    checked: list[CheckedKernel]
    dependencies: tuple[str, ...] = ()


@node
class RewriteResult:
    """The rewritten module source, its kernels, and the other files it was derived from."""

    source: str
    kernels: tuple[KernelBuild, ...]
    dependencies: tuple[str, ...]

    @property
    def has_kernels(self) -> bool:
        return bool(self.kernels)


def display_file(module_name: str, path: str) -> str:
    """The file name written into ``#line`` directives: stable across machines, so a kernel
    precompiled in one directory matches its artifact when installed in another."""
    base = os.path.basename(path)
    if module_name in ("", "__main__") or ("." not in module_name and base != "__init__.py"):
        return base
    parts = module_name.split(".")
    if base == "__init__.py":
        return "/".join(parts) + "/__init__.py"
    return "/".join(parts[:-1] + [base])


def _sites(kernel: ir.Kernel) -> tuple[tuple, ...]:
    return tuple((s.kind, s.span.line, s.span.col, s.span.end_col, s.array, s.axis, s.ndim,
                  s.message) for s in kernel.sites)


def _traits(kernel: ir.Kernel) -> tuple[str, ...]:
    t = kernel.traits
    names = tuple(name for name in ("uid_only", "uses_barriers", "uses_shared",
                                    "uses_dynamic_shared", "uses_warp", "uses_half", "uses_print")
                  if getattr(t, name))
    if t.uid_only and vector_plan(kernel) is not None:
        names += ("uid_vector4",)
    if wants_index32(kernel):
        names += ("index32",)
    return names


def _launcher_params(checked: CheckedKernel) -> tuple[LauncherParam, ...]:
    out = []
    first = checked.specializations[0]
    typevar_of: dict[str, str] = {}
    for p in checked.fn.params:
        ann = p.annotation
        from .frontend import syntax as S

        if isinstance(ann, S.Name) and ann.id in checked.typevars:
            typevar_of[p.name] = ann.id
        elif isinstance(ann, S.Subscript) and len(ann.index) == 1 and isinstance(
                ann.index[0], S.Name) and ann.index[0].id in checked.typevars:
            typevar_of[p.name] = ann.index[0].id
    for var in first.params:
        ty = var.ty
        if isinstance(ty, ir.ArrayType):
            out.append(LauncherParam(var.name, "array", typevar_of.get(var.name, ty.elem.name),
                                     ty.ndim, ty.mutable))
        else:
            assert isinstance(ty, ir.ScalarType)
            out.append(LauncherParam(var.name, "scalar", typevar_of.get(var.name, ty.name)))
    return tuple(out)


def transpile_module(source: str, path: str, module_name: str | None = None,
                     locator: ModuleLocator | None = None, hints: dict | None = None
                     ) -> TranspiledModule:
    """Check every kernel of a module and generate its CUDA C++ (no host rewrite).

    ``hints`` supplies names a notebook cell imported or defined in earlier cells:
    ``{"imports": {name: (module, attr)}, "constants": {name: value}}``.
    """
    scan = scan_module(source, path, module_name, hints)
    locator = locator or ModuleLocator()
    checked = Program(scan, locator).check()
    shown = display_file(scan.module_name, path)
    kernels = []
    for ck in checked:
        variants = []
        for k in ck.specializations:
            try:
                cuda = emit_kernel(k, shown)
                encoded = encode_kernel(k)
            except RecursionError:  # the front end bounds depth; a backstop, never a traceback
                raise too_deep(f"kernel '{ck.fn.name}'", ck.fn.span) from None
            variants.append(KernelVariant(
                types=k.specialization, symbol=k.symbol,
                kernel_id=abi.kernel_id(k.module, k.symbol), cuda=cuda,
                sites=_sites(k), traits=_traits(k), launch_checks=k.launch_checks,
                ir=encoded))
        options = {"bounds_check": ck.options.bounds_check, "fastmath": ck.options.fastmath,
                   "max_registers": ck.options.max_registers}
        kernels.append(KernelBuild(
            name=ck.fn.name, module=scan.module_name, file=path, line=ck.fn.first_line,
            ndim=ck.ndim,
            params=_launcher_params(ck), typevars=ck.typevars, options=options,
            variants=tuple(variants)))
    deps = tuple(sorted(p for p in locator.used_paths() if os.path.abspath(p) != os.path.abspath(
        path)))
    return TranspiledModule(scan, kernels, checked, deps)


def rewrite_module(source: str, path: str, module_name: str | None = None,
                   locator: ModuleLocator | None = None, hints: dict | None = None
                   ) -> RewriteResult:
    """Rewrite a module that defines kernels; every original line keeps its line number."""
    if not has_gpu_decorators(source):
        return RewriteResult(source, (), ())
    mod = transpile_module(source, path, module_name, locator, hints)
    if not mod.kernels:
        return RewriteResult(source, (), mod.dependencies)
    lines = source_lines(source)  # numbered as Python numbers them (not at form feeds)
    ending = "\n"
    for ck, build in sorted(zip(mod.checked, mod.kernels), key=lambda kb: -kb[0].fn.first_line):
        fn = ck.fn
        first, last = fn.first_line, fn.last_line
        original = lines[first - 1]
        indent = re.match(r"[ \t]*", original).group(0)  # type: ignore[union-attr]
        generic = bool(build.typevars)
        block = kernel_block(fn, indent, repr(build.spec()), list(build.params), generic)
        trailing = lines[last - 1][len(lines[last - 1].rstrip("\r\n")):] or ending
        new = [text + ending for text in block[:-1]] + [block[-1] + trailing]
        lines[first - 1:last] = new
    return RewriteResult("".join(lines), tuple(mod.kernels), mod.dependencies)


def find_kernel(result: RewriteResult, name: str, line: int | None = None) -> KernelBuild | None:
    """The kernel called ``name`` (defined at ``line``, when several share a name)."""
    matches = [k for k in result.kernels if k.name == name]
    if line is not None:
        exact = [k for k in matches if k.line == line]
        matches = exact or matches
    return matches[0] if matches else None


__all__ = [
    "KernelBuild",
    "KernelVariant",
    "RewriteResult",
    "TranspiledModule",
    "display_file",
    "find_kernel",
    "rewrite_module",
    "transpile_module",
]
