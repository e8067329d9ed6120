"""What a name in a kernel body refers to, decided statically from the module's source.

A kernel can name: its parameters and locals; module constants (ints, floats, bools and tuples of
them, evaluated without running the module); module-level ``const_array`` tables; ``TypeVar`` declarations; gpu_native's kernel API;
the ``math`` and ``cmath`` modules; a few builtins; and ``@gpu_device`` functions of this or another module.  The
other module is found on ``sys.path`` and parsed, never imported.

Names resolve in the module that defines the function, as Python resolves them: a device function
of ``helpers.py`` that writes ``math.sqrt`` needs ``import math`` in ``helpers.py``, whatever the
kernel's module imports.  A name used as a module (``math.sqrt``, ``np.sqrt``) that the module
neither defines nor imports is reported as such, at the name, saying what to import.
"""

from __future__ import annotations

import builtins
import os
import sys

from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..frontend.parse import PACKAGE, ModuleScan, scan_module
from ..frontend.source import decode_source, read_source
from ..lang import registry as R
from ..lang.spellings import NUMPY, did_you_mean, foreign_hint
from ..lang.structs import StructInfo
from ..locate import archived_bytes, display_file, find_module_file
from ..nodes import node

# The names kernels can use, from the language's registry.
GN_NAMES = frozenset(R.GPU_NATIVE)
MATH_FUNCTIONS = frozenset(name for name, e in R.MATH.items() if e.form == "call")
MATH_CONSTANTS = {name: e.value for name, e in R.MATH.items() if e.form == "constant"}
CMATH_FUNCTIONS = frozenset(name for name, e in R.CMATH.items() if e.form == "call")
CMATH_CONSTANTS = {name: e.value for name, e in R.CMATH.items() if e.form == "constant"}
BUILTINS = frozenset(R.BUILTINS)
# Python's other builtins (sum, sorted, str, ...): named as such when a kernel uses one.
PYTHON_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_")) - BUILTINS
# Host array libraries by the names modules usually bind them to: `np.sqrt` in a kernel is a
# reach for numpy, whether or not the module imports it.
#: The names other GPU languages' modules go by in kernels ported from them (Numba-CUDA's
#: ``cuda``, Triton's ``tl``, Warp's ``wp``): an attribute of one that is not imported is told
#: how gpu_native spells it.
FOREIGN_MODULES = ("cuda", "numba", "tl", "triton", "wp", "warp")
HOST_LIBRARIES = {"np": "numpy", "numpy": "numpy", "cp": "cupy", "cupy": "cupy",
                  "torch": "torch", "jnp": "jax.numpy", "jax": "jax", "scipy": "scipy"}


@node
class Sym:
    """A resolved name.

    ``kind`` is one of: ``gn`` (gpu_native API name in ``name``), ``math`` (math function),
    ``cmath`` (cmath function),
    ``builtin``, ``const`` (``value`` holds it), ``typevar`` (``value``: constraint names),
    ``device`` (``value``: (ModuleScan, FunctionDef)), ``constarray`` (a module-level
    ``const_array``; ``value``: (ModuleScan, ConstArrayDecl)), ``struct`` (a ``@gpu_struct``
    class; ``value``: (ModuleScan, StructDecl)), ``module`` (``name`` is the module),
    ``host`` (anything else; ``value`` describes it for the error message).
    """

    kind: str
    name: str
    value: object = None


_NAMESPACES = {"gn": R.GPU_NATIVE, "math": R.MATH, "cmath": R.CMATH, "builtin": R.BUILTINS}


def registry_entry(sym: Sym | None) -> R.Entry | None:
    """The language registry's entry of a resolved gpu_native, math or builtin name."""
    if sym is None:
        return None
    table = _NAMESPACES.get(sym.kind)
    return None if table is None else table.get(sym.name)


class ModuleLocator:
    """Finds and parses the source of other modules (for their device functions and constants)."""

    def __init__(self, extra_roots: tuple[str, ...] = ()):
        self.extra_roots = extra_roots
        self._scans: dict[str, ModuleScan | None] = {}
        self._asked: dict[str, tuple[str, str | None, str | None]] = {}
        self._added: set[str] = set()
        self._provided: dict[str, ModuleScan] = {}
        # The struct types resolved so far by their C++ name (see .structs.struct_type).
        self.struct_names: dict[str, StructInfo] = {}

    def find_path(self, module: str, near: str | None = None) -> str | None:
        """The source file of ``module`` (see :func:`.locate.find_module_file`), or None."""
        return find_module_file(module, near, self.extra_roots)

    def scan(self, module: str, near: str | None = None) -> ModuleScan | None:
        provided = self._provided.get(module)
        if provided is not None:
            return provided
        key = f"{module}@{near and os.path.dirname(os.path.abspath(near))}"
        if key not in self._scans:
            path = self.find_path(module, near)
            self._asked[key] = (module, near, path)
            if path is None:
                self._scans[key] = None
            else:
                archived = archived_bytes(path)
                text = read_source(path) if archived is None else decode_source(archived, path)
                self._scans[key] = scan_module(text, path, module)
        return self._scans[key]

    def used_paths(self) -> list[str]:
        """Files of other modules read so far (a rewrite depends on them)."""
        return [scan.path for key, scan in self._scans.items()
                if scan is not None and key not in self._added]

    def resolutions(self) -> tuple[tuple[str, str | None, str | None], ...]:
        """How every module name looked up so far resolved: ``(module, near, path)``, where
        ``path`` is what :func:`.locate.find_module_file` returned (None: not found).  A rewrite
        depends on these too: the same name may find another file once ``sys.path`` changes."""
        return tuple(asked for key, asked in self._asked.items() if key not in self._added)

    def provide(self, scan: ModuleScan) -> None:
        """Make ``scan`` the module named ``scan.module_name``, which has no file to find: code
        the decorator transpiles at run time (a notebook cell, a registered source)."""
        self._provided[scan.module_name] = scan

    def add(self, scan: ModuleScan) -> None:
        key = f"{scan.module_name}@{os.path.dirname(os.path.abspath(scan.path))}"
        self._scans[key] = scan
        self._added.add(key)


class Resolver:
    """Resolves names and dotted attributes for the functions of one module."""

    def __init__(self, scan: ModuleScan, locator: ModuleLocator,
                 local_names: frozenset[str] = frozenset()):
        self.scan = scan
        self.locator = locator
        # The parameters and assigned locals of the function being checked: a name among them
        # is never "not imported", even where it is used before its assignment.
        self.local_names = local_names

    def within(self, fn: S.FunctionDef) -> Resolver:
        """This resolver for the body of ``fn`` (which knows ``fn``'s local names)."""
        return Resolver(self.scan, self.locator, function_locals(fn))

    def name(self, name: str, span: SourceSpan) -> Sym:
        scan = self.scan
        sites = scan.reassigned.get(name)
        if sites is not None:
            shown = [site.described() for site in sites[:3]]
            more = f", and {len(sites) - 3} more" if len(sites) > 3 else ""
            raise TranspileError(
                f"'{name}' is assigned more than once at module level, so a kernel cannot use it "
                "as a compile-time constant", span,
                f"it is {', '.join(shown[:-1])} and {shown[-1]}{more}; assign module constants "
                "used by kernels exactly once, with =",
            )
        if name in scan.typevars:
            return Sym("typevar", name, scan.typevars[name])
        if name in scan.constants:
            return Sym("const", name, scan.constants[name])
        if name in scan.const_arrays:
            return Sym("constarray", name, (scan, scan.const_arrays[name]))
        if name in scan.structs:
            return Sym("struct", name, (scan, scan.structs[name]))
        fn = scan.function(name)
        if fn is not None:
            if fn.kind == "device":
                return Sym("device", name, (scan, fn))
            return Sym("host", name, f"'{name}' is a kernel; kernels cannot launch kernels")
        imported = scan.imports.get(name)
        if imported is not None:
            return self._imported(imported.module, imported.attr, span)
        if name in scan.described:
            return Sym("host", name, scan.described[name])
        if name in scan.host_names:
            kind = scan.host_names[name]
            if kind == "variable" and name in scan.failed:
                raise TranspileError(
                    f"'{name}' cannot be used in a kernel: it is a module constant whose "
                    f"value cannot be computed: {scan.failed[name]}", span,
                    "correct the expression: a kernel reads a module constant only where "
                    "the transpiler can compute its value, as Python would")
            if kind == "variable":  # a table computed at import, most likely
                return Sym("host", name, f"'{name}' is a host variable of this module "
                           "whose value the transpiler cannot compute (a module constant is "
                           "folded from numbers and tuples, arithmetic, math's functions and "
                           "constants, int(), float(), abs(), min(), max(), round() and NumPy's "
                           "scalar types such as np.float32(0.5); a module-level array "
                           "reaches kernels as a constant array: "
                           f"{name} = const_array(values, dtype, shape))")
            return Sym("host", name, f"'{name}' is a host {kind} of this module")
        if name in BUILTINS:
            return Sym("builtin", name)
        if name == "complex":  # Python's complex is a complex128: complex(re, im), annotations
            return Sym("gn", "complex128")
        if name == "None":
            return Sym("host", name, "None has no value in kernels")
        site = scan.unfoldable.get(name)
        if site is not None:
            raise TranspileError(
                f"'{name}' is not a constant a kernel can use: it is {site.described()}, "
                "and a kernel folds only module constants assigned once, at the top level of "
                "the module", span,
                f"assign it once at module level ({name} = 4, a number, bool or tuple of them), "
                "or pass it to the kernel as a parameter")
        return Sym("undefined", name)

    def _imported(self, module: str, attr: str | None, span: SourceSpan) -> Sym:
        if attr is None:
            return Sym("module", module)
        if module == PACKAGE:
            return Sym("gn", attr) if attr in GN_NAMES else _not_kernel_api(attr)
        if module == "math":
            if attr in MATH_FUNCTIONS:
                return Sym("math", attr)
            if attr in MATH_CONSTANTS:
                return Sym("const", attr, MATH_CONSTANTS[attr])
            return Sym("host", attr, f"math.{attr} is not available in kernels"
                       f"{did_you_mean(attr, 'math')}")
        if module == "cmath":
            if attr in CMATH_FUNCTIONS:
                return Sym("cmath", attr)
            if attr in CMATH_CONSTANTS:
                return Sym("const", attr, CMATH_CONSTANTS[attr])
            return Sym("host", attr, f"cmath.{attr} is not available in kernels")
        if module == "numpy" and attr in NUMPY:
            space, ours = NUMPY[attr]
            if space == "gpu_native":
                return Sym("gn", ours)
            if space == "builtins":
                return Sym("builtin", ours)
            if ours in MATH_CONSTANTS:
                return Sym("const", ours, MATH_CONSTANTS[ours])
            return Sym("math", ours)
        library = _host_library(module)
        if module == "numpy":
            return Sym("host", attr, f"numpy.{attr} is a host-side name: of numpy, kernels "
                       "take the scalar types, the constants and the element-wise math "
                       f"functions (np.float32(x), np.pi, np.sqrt(x)){did_you_mean(attr)}")
        if library is not None:
            return Sym("host", attr, f"{module}.{attr} is a host-side name: {library} is not "
                       f"supported in kernels{did_you_mean(attr)}")
        if module == "typing":
            return Sym("host", attr, f"{module}.{attr} is a host-side name")
        sym = self.from_module(module, attr, span)
        foreign = foreign_hint([module, attr]) if sym.kind == "host" and \
            module.partition(".")[0] in FOREIGN_MODULES else None
        if foreign is not None:  # `from numba import cuda` kept in a kernel ported from it
            return Sym("host", attr, foreign)
        return sym

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
        if attr in other.constants or attr in other.typevars or attr in other.const_arrays or \
                attr in other.structs or other.function(attr) is not None or \
                attr in other.reassigned or attr in other.unfoldable:
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
                Sym("gn", attr) if attr in GN_NAMES else _not_kernel_api(attr))
        if base.kind == "gn" and R.GPU_NATIVE[base.name].form == "enum":
            return Sym("order", attr.lower())
        if base.kind == "gn" and base.name in ("Kernel1D", "Kernel2D", "Kernel3D") \
                and attr in R.LAYOUT_METHODS:
            # The decorator's argument is not a layout: the uid and its loops live on
            # FlatLayoutND (a common first guess, after `@gpu_kernel(Kernel1D)`).
            layout = f"FlatLayout{base.name[6:]}"
            return Sym("host", attr, f"'{base.name}.{attr}' is not available in kernels; "
                       f"{base.name} only says how the kernel is launched, and a thread's "
                       f"unique id and grid loops come from its layout: {layout}.{attr}()")
        return Sym("host", attr, f"'{base.name}.{attr}' is not available in kernels")

    def dotted(self, expr: S.Expr) -> Sym | None:
        """Resolve a Name or a dotted Attribute chain of module names; None for anything else."""
        if isinstance(expr, S.Name):
            return self.name(expr.id, expr.span)
        if isinstance(expr, S.Attribute):
            base = self.dotted(expr.value)
            if base is not None and base.kind == "undefined" and base.name not in \
                    self.local_names:
                raise self.not_imported(base.name, expr)
            if base is None or base.kind not in ("module", "gn"):
                return None
            return self.attribute(base, expr.attr, expr.span)
        return None

    def not_imported(self, name: str, use: S.Attribute) -> TranspileError:
        """The error for ``name.attr`` where this module neither defines nor imports ``name``."""
        root = use.value
        while isinstance(root, S.Attribute):
            root = root.value
        span = root.span
        shown = display_file(self.scan.module_name, self.scan.path)
        library = HOST_LIBRARIES.get(name)
        if library is not None:
            hint = "kernels use the math module (math.sqrt, math.exp, ...), abs, min, max and " \
                "gpu_native's intrinsics"
            if use.attr in MATH_FUNCTIONS and use.value is root:
                hint = f'use math.{use.attr} (with "import math" in {shown})'
            return TranspileError(
                f"{library} is not supported in kernels ('{name}' is not defined in {shown}, "
                f"and {library} runs on the host)", span, hint)
        names = dotted_names(use)
        foreign = foreign_hint(names) if names and name in FOREIGN_MODULES else None
        if foreign is not None:  # `cuda.shfl_down_sync` in a kernel ported from Numba-CUDA
            return TranspileError(f"name '{name}' is not defined in {shown}", span, foreign)
        if name in ("gn", PACKAGE):
            statement = f"import {PACKAGE}" + (" as gn" if name == "gn" else "")
        elif name in ("math", "cmath") or self.locator.find_path(name, self.scan.path) is not None:
            statement = f"import {name}"
        else:
            return TranspileError(
                f"name '{name}' is not defined in {shown}{did_you_mean(name)}", span,
                f"'{name}' is used as a module here: import it in {shown}, or use math, "
                "gpu_native and @gpu_device functions")
        return TranspileError(f"name '{name}' is not defined in {shown}: it is not imported there",
                              span,
                              f'add "{statement}" to {shown} (names in a function resolve in the '
                              "module that defines it)")


def dotted_names(e: S.Attribute) -> list[str] | None:
    """``cuda.atomic.add`` as ``["cuda", "atomic", "add"]``; None where it is not reached from
    a name."""
    parts = []
    root: S.Expr = e
    while isinstance(root, S.Attribute):
        parts.append(root.attr)
        root = root.value
    return [root.id, *parts[::-1]] if isinstance(root, S.Name) else None


def _not_kernel_api(attr: str) -> Sym:
    """``gpu_native.<attr>`` that kernels cannot use: a host-side API of the package, or no name
    of it at all (then how gpu_native spells what was meant, where that is known: CUDA's
    ``shfl_down_sync`` is ``shfl_down``)."""
    # The package is imported before anything is transpiled; its attributes are the host API.
    if hasattr(sys.modules.get(PACKAGE), attr):
        return Sym("host", attr, f"gpu_native.{attr} is a host-side API")
    return Sym("host", attr, f"gpu_native has no '{attr}'{did_you_mean(attr)}")


def _host_library(module: str) -> str | None:
    """The host library ``module`` belongs to (numpy, cupy, torch, jax, scipy), or None."""
    top = module.split(".")[0]
    return top if top in ("numpy", "cupy", "torch", "jax", "scipy") else None


def function_locals(fn: S.FunctionDef) -> frozenset[str]:
    """The names ``fn`` binds: its parameters and every name it assigns (also as a loop
    variable), wherever in its body."""
    names = {p.name for p in fn.params}
    stack: list = list(fn.body)
    while stack:
        s = stack.pop()
        if isinstance(s, S.Assign):
            targets: tuple = s.targets
        elif isinstance(s, (S.AnnAssign, S.AugAssign, S.For)):
            targets = (s.target,)
        else:
            targets = ()
        while targets:
            t, targets = targets[0], targets[1:]
            if isinstance(t, S.Name):
                names.add(t.id)
            elif isinstance(t, S.Tuple):
                targets += t.elts
        for body in ("body", "orelse"):
            stack.extend(getattr(s, body, ()))
    return frozenset(names)
