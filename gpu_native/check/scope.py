"""What a name in a kernel body refers to, decided statically from the module's source.

A kernel can name: its parameters and locals; module constants (ints, floats, bools and tuples of
them, evaluated without running the module); ``TypeVar`` declarations; gpu_native's kernel API;
the ``math`` module; a few builtins; and ``@gpu_device`` functions of this or another module.  The
other module is found on ``sys.path`` and parsed, never imported.
"""

from __future__ import annotations

import math
import os
import sys

from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..frontend.parse import PACKAGE, ModuleScan, scan_module
from ..frontend.source import read_source
from ..nodes import node

# Every public name of gpu_native that means something inside a kernel.
GN_NAMES = frozenset({
    "f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool_",
    "CUDASlice", "CUDASliceMut", "CUDASlice2D", "CUDASliceMut2D", "CUDASlice3D", "CUDASliceMut3D",
    "UniqueId", "FlatLayout1D", "FlatLayout2D", "FlatLayout3D", "BlockLayout1D", "BlockLayout2D",
    "BlockLayout3D", "thread_idx", "block_idx", "block_dim", "grid_dim", "shared_array",
    "local_array", "sync_threads", "sync_warp", "shfl_down", "shfl_up", "shfl_xor", "shfl_idx",
    "ballot", "all_sync", "any_sync", "lane_id", "unsafe", "MemoryOrder", "FULL_MASK",
    "Kernel1D", "Kernel2D", "Kernel3D", "gpu_kernel", "gpu_device",
})

MATH_FUNCTIONS = frozenset({
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "pow", "fabs",
    "floor", "ceil", "trunc", "fmod", "hypot", "erf", "erfc", "copysign", "isnan", "isinf",
    "isfinite", "lgamma", "gamma", "cbrt", "rsqrt", "fma",
})
MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}

BUILTINS = frozenset({"len", "range", "min", "max", "abs", "int", "float", "bool", "print", "round"})


@node
class Sym:
    """A resolved name.

    ``kind`` is one of: ``gn`` (gpu_native API name in ``name``), ``math`` (math function),
    ``builtin``, ``const`` (``value`` holds it), ``typevar`` (``value``: constraint names),
    ``device`` (``value``: (ModuleScan, FunctionDef)), ``module`` (``name`` is the module),
    ``host`` (anything else; ``value`` describes it for the error message).
    """

    kind: str
    name: str
    value: object = None


class ModuleLocator:
    """Finds and parses the source of other modules (for their device functions and constants)."""

    def __init__(self, extra_roots: tuple[str, ...] = ()):
        self.extra_roots = extra_roots
        self._scans: dict[str, ModuleScan | None] = {}
        self._added: set[str] = set()

    def find_path(self, module: str, near: str | None = None) -> str | None:
        parts = module.split(".")
        roots: list[str] = []
        if near:
            # The directory holding the top-level package of `near` comes first.
            d = os.path.dirname(os.path.abspath(near))
            while os.path.exists(os.path.join(d, "__init__.py")):
                d = os.path.dirname(d)
            roots.append(d)
            roots.append(os.path.dirname(os.path.abspath(near)))
        roots.extend(self.extra_roots)
        roots.extend(p or os.getcwd() for p in sys.path)
        for root in roots:
            base = os.path.join(root, *parts)
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if os.path.isfile(candidate):
                    return candidate
        return None

    def scan(self, module: str, near: str | None = None) -> ModuleScan | None:
        key = f"{module}@{near and os.path.dirname(os.path.abspath(near))}"
        if key not in self._scans:
            path = self.find_path(module, near)
            if path is None:
                self._scans[key] = None
            else:
                self._scans[key] = scan_module(read_source(path), path, module)
        return self._scans[key]

    def used_paths(self) -> list[str]:
        """Files of other modules read so far (a rewrite depends on them)."""
        return [scan.path for key, scan in self._scans.items()
                if scan is not None and key not in self._added]

    def add(self, scan: ModuleScan) -> None:
        key = f"{scan.module_name}@{os.path.dirname(os.path.abspath(scan.path))}"
        self._scans[key] = scan
        self._added.add(key)


class Resolver:
    """Resolves names and dotted attributes for the functions of one module."""

    def __init__(self, scan: ModuleScan, locator: ModuleLocator):
        self.scan = scan
        self.locator = locator

    def name(self, name: str, span: SourceSpan) -> Sym:
        scan = self.scan
        if name in scan.reassigned:
            raise TranspileError(
                f"'{name}' is assigned more than once at module level, so a kernel cannot use it "
                "as a compile-time constant", span,
                "assign module constants used by kernels exactly once",
            )
        if name in scan.typevars:
            return Sym("typevar", name, scan.typevars[name])
        if name in scan.constants:
            return Sym("const", name, scan.constants[name])
        fn = scan.function(name)
        if fn is not None:
            if fn.kind == "device":
                return Sym("device", name, (scan, fn))
            return Sym("host", name, f"'{name}' is a kernel; kernels cannot launch kernels")
        imported = scan.imports.get(name)
        if imported is not None:
            return self._imported(imported.module, imported.attr, span)
        if name in scan.host_names:
            kind = scan.host_names[name]
            return Sym("host", name, f"'{name}' is a host {kind} of this module")
        if name in BUILTINS:
            return Sym("builtin", name)
        if name == "None":
            return Sym("host", name, "None has no value in kernels")
        return Sym("undefined", name)

    def _imported(self, module: str, attr: str | None, span: SourceSpan) -> Sym:
        if attr is None:
            return Sym("module", module)
        if module == PACKAGE:
            if attr in GN_NAMES:
                return Sym("gn", attr)
            return Sym("host", attr, f"gpu_native.{attr} is a host-side API")
        if module == "math":
            if attr in MATH_FUNCTIONS:
                return Sym("math", attr)
            if attr in MATH_CONSTANTS:
                return Sym("const", attr, MATH_CONSTANTS[attr])
            return Sym("host", attr, f"math.{attr} is not available in kernels")
        if module == "typing" or module.startswith(("numpy", "cupy", "torch")):
            return Sym("host", attr, f"{module}.{attr} is a host-side name")
        return self.from_module(module, attr, span)

    def from_module(self, module: str, attr: str, span: SourceSpan) -> Sym:
        """Resolve ``attr`` in another module by reading (not importing) its source."""
        other = self.locator.scan(module, self.scan.path)
        if other is None:
            # Might be a submodule: `from pkg import mod`.
            sub = self.locator.scan(f"{module}.{attr}", self.scan.path)
            if sub is not None:
                return Sym("module", f"{module}.{attr}")
            return Sym("host", attr, f"'{attr}' comes from module '{module}', whose source "
                       "gpu_native cannot find")
        resolver = Resolver(other, self.locator)
        if attr in other.constants or attr in other.typevars or other.function(attr) is not None:
            return resolver.name(attr, span)
        if attr in other.imports:
            imp = other.imports[attr]
            return resolver._imported(imp.module, imp.attr, span)
        sub = self.locator.scan(f"{module}.{attr}", self.scan.path)
        if sub is not None:
            return Sym("module", f"{module}.{attr}")
        return Sym("host", attr, f"'{module}.{attr}' is not a @gpu_device function or constant")

    def attribute(self, base: Sym, attr: str, span: SourceSpan) -> Sym:
        """Resolve ``base.attr`` where ``base`` is a module or gpu_native name."""
        if base.kind == "module":
            return self._imported(base.name, attr, span) if base.name != PACKAGE else (
                Sym("gn", attr) if attr in GN_NAMES
                else Sym("host", attr, f"gpu_native.{attr} is a host-side API"))
        if base.kind == "gn" and base.name == "MemoryOrder":
            return Sym("order", attr.lower())
        return Sym("host", attr, f"'{base.name}.{attr}' is not available in kernels")

    def dotted(self, expr: S.Expr) -> Sym | None:
        """Resolve a Name or a dotted Attribute chain of module names; None for anything else."""
        if isinstance(expr, S.Name):
            return self.name(expr.id, expr.span)
        if isinstance(expr, S.Attribute):
            base = self.dotted(expr.value)
            if base is None or base.kind not in ("module", "gn"):
                return None
            return self.attribute(base, expr.attr, expr.span)
        return None
