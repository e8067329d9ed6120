"""The one entry point of the transpiler: Python module source in, rewritten module out.

The import hook, the ``gpu_kernel`` decorator's fallback (for ``__main__`` scripts and notebook
cells), ``gpu-native expand`` and ``gpu-native precompile`` all call :func:`rewrite_module` or
:func:`transpile_module`, so what ``expand --exact`` shows is exactly what gets imported (and
``expand``'s readable form is the same code, laid out; see :mod:`gpu_native.expand`).  Each kernel
becomes a :class:`~gpu_native.spec.KernelSpec`, embedded in the rewritten module as its literal.
Nothing here executes the user's module.
"""

from __future__ import annotations

import os

from . import abi, ir
from .check.program import CheckedKernel, Program
from .check.scope import ModuleLocator
from .emit.cuda import emit_kernel
from .emit.host import kernel_block, param_trees
from .emit.index32 import wants_index32
from .emit.tma import tensor_maps
from .emit.uid_stride import vector_plan
from .frontend.parse import ModuleScan, ScanHints, has_gpu_decorators, scan_module
from .frontend.source import source_lines, too_deep
from .ircodec import encode_kernel
from .locate import display_file
from .nodes import node, replace
from .spec import (
    ConstArray,
    IndexFits,
    KernelSpec,
    LaunchCheck,
    Param,
    Site,
    TensorMap,
    Trait,
    VariantSpec,
)
from .tracebacks import boundary


@node(frozen=False)
class TranspiledModule:
    scan: ModuleScan
    kernels: list[KernelSpec]
    checked: list[CheckedKernel]
    dependencies: tuple[str, ...] = ()


@node
class RewriteResult:
    """The rewritten module source, its kernels, and the other files it was derived from."""

    source: str
    kernels: tuple[KernelSpec, ...]
    dependencies: tuple[str, ...]

    @property
    def has_kernels(self) -> bool:
        return bool(self.kernels)


class _Files:
    """A kernel's file table (:attr:`KernelSpec.files`): the files of other modules its sites
    and launch checks are in, numbered from 1 in the order met (0 is the kernel's own)."""

    def __init__(self, path: str):
        self.path = path
        self.others: list[str] = []

    def index(self, file: str) -> int:
        if file == self.path:
            return 0
        if file not in self.others:
            self.others.append(file)
        return self.others.index(file) + 1


def _tensor_maps(kernel: ir.Kernel) -> tuple[TensorMap, ...]:
    """The tensor maps of a kernel's ``tma_load`` copies, as the launcher encodes them."""
    index = {id(p): i for i, p in enumerate(kernel.params)}
    out = []
    for var, rows, cols in tensor_maps(kernel.body):
        assert isinstance(var.ty, ir.ArrayType)  # a 2-D array parameter (gpu_native.check.tma)
        out.append(TensorMap(index[id(var)], str(var.ty.elem), rows, cols))
    return tuple(out)


def _sites(kernel: ir.Kernel, files: _Files) -> tuple[Site, ...]:
    return tuple(Site(s.kind, s.span.line, s.span.col, s.span.end_col, s.array, s.axis, s.ndim,
                      s.message, files.index(s.span.file)) for s in kernel.sites)


def _traits(kernel: ir.Kernel) -> Trait:
    t = kernel.traits
    traits = Trait(0)
    for name in ("uid_only", "uses_barriers", "uses_shared", "uses_dynamic_shared", "uses_warp",
                 "uses_half", "uses_print", "uses_grid_sync", "uses_wgmma"):
        if getattr(t, name):
            traits |= Trait[name.upper()]
    if t.uid_only and vector_plan(kernel) is not None:
        traits |= Trait.UID_VECTOR4
    if wants_index32(kernel):
        traits |= Trait.INDEX32
    return traits


def _launch_checks(kernel: ir.Kernel, files: _Files) -> tuple[LaunchCheck, ...]:
    """The checker's launch checks, each :class:`IndexFits` given its file's index in ``files``
    (the checker's records leave it 0)."""
    out: list[LaunchCheck] = []
    elsewhere = None
    for check in kernel.launch_checks:
        if isinstance(check, IndexFits):
            if elsewhere is None:
                elsewhere = _spans_elsewhere(kernel)
            file = elsewhere.get((check.line, check.col, check.end_col), files.path)
            check = replace(check, file=files.index(file))
        out.append(check)
    return tuple(out)


def _spans_elsewhere(kernel: ir.Kernel) -> dict[tuple, str]:
    """The file of each ``(line, col, end_col)`` that only a device function of another module
    has: the checker's no-wrap launch checks name a place, not its file."""
    own = {(n.span.line, n.span.col, n.span.end_col) for n in ir.walk(kernel.body)}
    for fn in kernel.device_functions:
        if fn.span.file == kernel.span.file:
            own.update((n.span.line, n.span.col, n.span.end_col) for n in ir.walk(fn.body))
    out: dict[tuple, str] = {}
    for fn in kernel.device_functions:
        if fn.span.file != kernel.span.file:
            for n in ir.walk(fn.body):
                where = (n.span.line, n.span.col, n.span.end_col)
                if where not in own:
                    out.setdefault(where, fn.span.file)
    return out


def _launcher_params(checked: CheckedKernel) -> tuple[Param, ...]:
    out = []
    first = checked.specializations[0]
    typevar_of: dict[str, str] = {}
    for p in checked.fn.params:
        ann = p.annotation
        from .frontend import syntax as S

        if isinstance(ann, S.Name) and ann.id in checked.typevars:
            typevar_of[p.name] = ann.id
        elif isinstance(ann, S.Subscript) and len(ann.index) in (1, 2) and isinstance(
                ann.index[0], S.Name) and ann.index[0].id in checked.typevars:
            typevar_of[p.name] = ann.index[0].id
    for var in first.params:
        ty = var.ty
        if isinstance(ty, ir.ArrayType):
            out.append(Param(var.name, typevar_of.get(var.name, ty.elem.info.name), ty.ndim,
                             ty.mutable, ty.strided))
        else:
            assert isinstance(ty, (ir.ScalarType, ir.VectorType, ir.StructType))
            out.append(Param(var.name, typevar_of.get(var.name, ty.info.name)))
    return tuple(out)


@boundary
def transpile_module(source: str, path: str, module_name: str | None = None,
                     locator: ModuleLocator | None = None, hints: ScanHints | None = None
                     ) -> TranspiledModule:
    """Check every kernel of a module and generate its CUDA C++ (no host rewrite).

    ``hints``: what the decorator found at run time for a source no import hook rewrote (names
    bound in a notebook's earlier cells, a kernel's closure; see
    :class:`~gpu_native.frontend.parse.ScanHints`).
    """
    scan = scan_module(source, path, module_name, hints)
    locator = locator or ModuleLocator()
    checked = Program(scan, locator).check()
    shown = display_file(scan.module_name, path)
    kernels = []
    for ck in checked:
        variants = []
        files = _Files(path)
        for k in ck.specializations:
            try:
                cuda = emit_kernel(k, shown)
                encoded = encode_kernel(k)
            except RecursionError:  # the front end bounds depth; a backstop, never a traceback
                raise too_deep(f"kernel '{ck.fn.name}'", ck.fn.span) from None
            variants.append(VariantSpec(
                types=k.specialization, symbol=k.symbol,
                kernel_id=abi.kernel_id(k.module, k.symbol), cuda=cuda,
                sites=_sites(k, files), traits=_traits(k),
                launch_checks=_launch_checks(k, files), ir=encoded,
                consts=tuple(ConstArray(d.name, d.module, d.ty.elem.name, d.shape, d.symbol)
                             for d in k.consts),
                min_arch=k.traits.min_arch, arch_use=k.traits.arch_use,
                tensor_maps=_tensor_maps(k)))
        options = ck.options  # the checker's options are the spec's record
        kernels.append(KernelSpec(
            name=ck.fn.name, module=scan.module_name, file=path, line=ck.fn.first_line,
            ndim=ck.ndim,
            params=_launcher_params(ck), typevars=ck.typevars, options=options,
            variants=tuple(variants), files=tuple(files.others)))
    deps = tuple(sorted(p for p in locator.used_paths() if os.path.abspath(p) != os.path.abspath(
        path)))
    return TranspiledModule(scan, kernels, checked, deps)


@boundary
def rewrite_module(source: str, path: str, module_name: str | None = None,
                   locator: ModuleLocator | None = None, hints: ScanHints | None = None
                   ) -> RewriteResult:
    """Rewrite a module that defines kernels; every original line keeps its line number.

    A module of device functions only is checked (a ``TranspileError`` as for a kernel) and
    returned unchanged: it has nothing to rewrite.
    """
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
        indent = original[:len(original) - len(original.lstrip(" \t"))]
        block = kernel_block(fn, indent, repr(build.to_literal()), build.params,
                             bool(build.typevars), param_trees(build))
        trailing = lines[last - 1][len(lines[last - 1].rstrip("\r\n")):] or ending
        new = [text + ending for text in block[:-1]] + [block[-1] + trailing]
        lines[first - 1:last] = new
    return RewriteResult("".join(lines), tuple(mod.kernels), mod.dependencies)


def find_kernel(result: RewriteResult, name: str, line: int | None = None) -> KernelSpec | None:
    """The kernel called ``name`` (defined at ``line``, when several share a name)."""
    matches = [k for k in result.kernels if k.name == name]
    if line is not None:
        exact = [k for k in matches if k.line == line]
        matches = exact or matches
    return matches[0] if matches else None


__all__ = [
    "RewriteResult",
    "TranspiledModule",
    "display_file",
    "find_kernel",
    "rewrite_module",
    "transpile_module",
]
