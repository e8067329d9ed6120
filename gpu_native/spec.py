"""The records the transpiler hands the runtime: one :class:`KernelSpec` per ``@gpu_kernel``.

The rewrite embeds each kernel's spec in the rewritten module as a plain-data literal
(``@gpu_kernel(Kernel1D, _spec=(...))``); the decorator turns it back into a :class:`KernelSpec`
with :meth:`KernelSpec.from_literal`.  Both sides import this module, which imports nothing of the
transpiler (like :mod:`gpu_native.abi`), so the runtime, the caches and ``gpu-native precompile``
all read the same typed fields.

The literal is nested tuples of ``str``, ``int``, ``bool``, ``None`` and ``bytes`` only: the
compiler folds it into one constant of the module's code object (so a warm import neither
builds it nor evaluates anything), and reading it back runs no code from the module.  Its layout
is :meth:`to_literal`'s, and :data:`SCHEMA` numbers it: a module rewritten by a gpu_native whose
layout differs (a stale ``__pycache__``, a copied rewritten module) gets a clear error telling
the user to import it again, never a ``KeyError`` or an ``IndexError`` from the runtime.
"""

from __future__ import annotations

import enum
import functools
import operator

from ._version import __version__
from .errors import GpuNativeError
from .launchexpr import LaunchExpr, from_literal, to_literal
from .nodes import fields, node

__all__ = [
    "SCHEMA",
    "ConstArray",
    "IndexFits",
    "KernelOptions",
    "KernelSpec",
    "LaunchAssert",
    "LaunchCheck",
    "Param",
    "ParamCheck",
    "ShapeAssert",
    "Site",
    "TensorMap",
    "Trait",
    "VariantSpec",
]

# The layout of the spec literal and the protocol of the launcher factory with the runtime
# (``LaunchContext.fast_path``): 9, variants list their tensor maps; 8, variants name the oldest architecture they build for; 7,
# parameters say whether they are strided; 6, variants list their constant arrays; 5, the
# options hold ``cooperative``; 4, sites and launch checks name their file; 3, typed records, a
# FastPath record and the arrays' launch attributes; 2, a dict literal, a positional tuple from
# fast_path.
SCHEMA = 10
# The first element of every spec literal: anything else is not a spec (a foreign ``_spec=``).
_TAG = "gpu_native.KernelSpec"


class Trait(enum.Flag):
    """Facts about one kernel specialisation that the launcher and the compiler use."""

    #: Depends on nothing but its 1-D grid uid: the launcher may run its logical grid on a grid
    #: sized for the device (the ``_uids`` entry point).
    UID_ONLY = enum.auto()
    #: The ``_uids`` entry point takes four uids per thread (16-byte accesses).
    UID_VECTOR4 = enum.auto()
    #: Has a ``_i32`` entry point computing its indices in 32 bits (see gpu_native.abi).
    INDEX32 = enum.auto()
    USES_BARRIERS = enum.auto()
    USES_SHARED = enum.auto()
    USES_DYNAMIC_SHARED = enum.auto()
    USES_WARP = enum.auto()
    #: Includes the CUDA half-precision headers (a compile option: part of the cache key).
    USES_HALF = enum.auto()
    USES_PRINT = enum.auto()
    #: Calls ``grid_sync()``: includes ``<cooperative_groups.h>`` (a compile option, as USES_HALF).
    USES_GRID_SYNC = enum.auto()
    #: Uses warpgroup MMA (``warpgroup_mma``, PTX ``wgmma``): compiled for ``sm_90a``, which runs
    #: on sm_90 devices only (an arch-specific target is not forward compatible).
    USES_WGMMA = enum.auto()

    @classmethod
    def from_names(cls, names: tuple[str, ...]) -> Trait:
        """The flags named by ``names`` (lower case, as :meth:`names` spells them)."""
        return _traits_named(cls, names)

    def names(self) -> tuple[str, ...]:
        """The names of the flags set, lower case, in declaration order."""
        # __members__ spells each name as a str (Flag.name is Optional: a combination has none).
        return tuple(name.lower() for name, t in type(self).__members__.items() if t in self)


@functools.lru_cache(maxsize=256)
def _traits_named(cls, names: tuple[str, ...]) -> Trait:
    # Kernels share a few combinations; enum.Flag's `|` costs a microsecond each.
    return functools.reduce(operator.or_, (cls[n.upper()] for n in names), cls(0))


@node
class Param:
    """A kernel parameter as the launcher sees it: an array (``ndim`` > 0) or a scalar."""

    name: str
    dtype: str  # a scalar type name, or a TypeVar name in generic kernels
    ndim: int = 0  # 0 for scalars
    mutable: bool = False
    strided: bool = False  # an array annotated `CUDASlice2D[T, Strided]`: its strides are passed

    @property
    def is_array(self) -> bool:
        return self.ndim > 0

    @property
    def slots(self) -> int:
        """An array's parameter slots: its address, its extents and, strided, its strides."""
        return 1 + self.ndim * (2 if self.strided else 1)

    def annotation(self, dtype: str | None = None) -> str:
        """The parameter's annotation, with ``dtype`` for its element type (default its own)."""
        dtype = dtype or self.dtype
        if not self.ndim:
            return dtype
        dims = "" if self.ndim == 1 else f"{self.ndim}D"
        layout = ", Strided" if self.strided else ""
        return f"CUDASlice{'Mut' if self.mutable else ''}{dims}[{dtype}{layout}]"


@node
class Site:
    """A place where a running kernel can report an error; its id is its index in the table.

    ``kind`` is ``"index"`` (a bounds check), ``"assert"`` or ``"zerodiv"``; ``array``,
    ``axis`` and ``ndim`` describe what an index check guards; ``message`` is an assert's.
    ``file`` says which file ``line`` is in (see :meth:`KernelSpec.file_at`): 0, the kernel's
    own, unless the site is in a device function of another module.
    """

    kind: str
    line: int
    col: int
    end_col: int | None
    array: str = ""
    axis: int = 0
    ndim: int = 1
    message: str = ""
    file: int = 0


@node
class LaunchCheck:
    """A check the launcher makes once per launch shape instead of in every thread (see
    :mod:`gpu_native.runtime.launch_checks`).  ``tree`` is an expression over the launch, made
    of the typed nodes of :mod:`gpu_native.launchexpr`: constants, launch indices
    (:class:`~gpu_native.launchexpr.LaunchIndex`: ``thread_idx`` ... ``grid_dim``), arithmetic
    that carries the type it wraps in, comparisons, ``and``, ``or`` and ``not``.  The literal
    keeps the compact tagged-tuple form of the tree (:func:`~gpu_native.launchexpr.to_literal`:
    ``("sp", "block_dim", 0)``, ``("*", left, right, "i32")``, ...)."""

    tree: LaunchExpr


@node
class LaunchAssert(LaunchCheck):
    """An ``assert`` that depends only on ``block_dim`` and ``grid_dim``; ``site`` is its error
    site (the launcher raises the same ``KernelAssertionError`` the device would)."""

    site: int


@node
class IndexFits(LaunchCheck):
    """A sum or product of launch indices that a bounds proof assumes does not wrap: its largest
    value over the launch must stay within ``limit`` (the maximum of ``type``).  ``file`` is as
    a :class:`Site`'s."""

    limit: int
    type: str
    line: int
    col: int
    end_col: int | None
    file: int = 0


@node
class ParamCheck(LaunchCheck):
    """A condition on scalar parameters that a store's race-freedom proof assumed (``stride >=
    block_dim.x``): the launcher checks it at every launch and raises ``ValueError`` naming the
    parameter when it fails.  Its ``tree`` may hold :class:`~gpu_native.launchexpr.ParamValue`
    leaves (the kernel's ``index``-th parameter) beside the launch's; its arithmetic is exact
    (no type, no wrap), but for a launch extent's ``//`` by a constant, typed ``i64``, which
    never wraps.
    ``param`` is the parameter the message names, ``array`` the array whose writes need it,
    ``line`` the store's (the loop's); ``file`` is as a :class:`Site`'s.  A check that keeps a
    ``while`` loop's counter from wrapping around past the parameter (``while i < n:``) names
    the ``counter`` instead of an array (``array`` is then "")."""

    param: int
    array: str
    line: int
    file: int = 0
    counter: str = ""


@node
class ShapeAssert(LaunchCheck):
    """An ``assert`` over the shapes of array parameters and the launch shape (``assert
    a.shape[0] == grid_dim.y * BM``): the launcher tests it at every launch (inline, as a
    :class:`ParamCheck`) and raises the ``KernelAssertionError`` of ``site`` when it fails, so
    the bounds proofs may use it.  Its ``tree`` may hold :class:`~gpu_native.launchexpr.ShapeOf`
    leaves (the extent of the ``param``-th parameter along ``axis``); its arithmetic is exact:
    the checker hoists only ``%`` and ``//`` by a positive constant, of shapes, and ``+``/``*``
    of launch indices that an :class:`IndexFits` keeps from wrapping.  The bounds proofs add
    their own, of :class:`~gpu_native.launchexpr.AddressOf` leaves (the address of an array
    argument, in bytes): ``address(a) % 16 == 0``, on which a proof of a global access's
    alignment rests."""

    site: int


@node
class KernelOptions:
    """The ``@gpu_kernel`` options that change the generated code or its compilation."""

    bounds_check: bool = True
    fastmath: bool = False
    max_registers: int | None = None
    #: Launched with ``cuLaunchCooperativeKernel``, every block resident at once: the kernel may
    #: call ``grid_sync()``.
    cooperative: bool = False


@node
class ConstArray:
    """A module-level ``const_array`` a kernel variant reads: the ``__constant__`` variable
    ``symbol`` of its CUDA, which the runtime sets when it loads the variant from the array that
    ``name`` holds in ``module`` (of element type ``dtype`` and shape ``shape``, which the
    runtime checks it still has)."""

    name: str
    module: str
    dtype: str
    shape: tuple[int, ...]
    symbol: str

    @property
    def label(self) -> str:
        """``module.name``, as messages name it."""
        return f"{self.module}.{self.name}"


@node
class TensorMap:
    """A tensor map a kernel variant's ``tma_load`` copies read through (a hidden 128-byte
    ``__grid_constant__`` parameter after the user's): the launcher encodes it for the array
    passed as parameter ``param`` (an index into the kernel's parameters), a 2-D array of
    ``dtype``, in boxes of ``box_rows`` x ``box_cols`` elements in the 128-byte swizzle."""

    param: int
    dtype: str
    box_rows: int
    box_cols: int


@node
class VariantSpec:
    """One specialisation of a kernel: its CUDA translation unit, its error sites, its traits and
    launch checks, and the encoded IR the simulator runs (:mod:`gpu_native.ircodec`; never part
    of a cache key)."""

    types: tuple[tuple[str, str], ...]  # (TypeVar, scalar type) pairs; () for plain kernels
    symbol: str
    kernel_id: int
    cuda: str
    sites: tuple[Site, ...] = ()
    traits: Trait = Trait(0)
    launch_checks: tuple[LaunchCheck, ...] = ()
    ir: bytes = b""
    consts: tuple[ConstArray, ...] = ()
    #: The oldest architecture the variant builds for, as its compute capability times ten (80:
    #: sm_80), or 0 for every one; ``arch_use`` names what needs it and where.
    min_arch: int = 0
    arch_use: str = ""
    tensor_maps: tuple[TensorMap, ...] = ()


@node
class KernelSpec:
    """Everything the runtime needs about one ``@gpu_kernel`` function.

    ``file`` is the kernel's source file, as the rewrite was given it; ``files`` the files of
    other modules whose device functions hold error sites or launch checks of the kernel, as the
    rewrite found them (a site's ``file`` indexes ``(file, *files)``: see :meth:`file_at`).
    """

    name: str
    module: str
    file: str
    line: int
    ndim: int
    params: tuple[Param, ...]
    typevars: tuple[str, ...]
    options: KernelOptions
    variants: tuple[VariantSpec, ...]
    files: tuple[str, ...] = ()

    @property
    def source_files(self) -> tuple[str, ...]:
        """The kernel's file, then :attr:`files`: what a site's ``file`` indexes."""
        return (self.file, *self.files)

    def file_at(self, index: int) -> str:
        """The file a site or launch check with ``file == index`` is in."""
        return self.source_files[index]

    def to_literal(self) -> tuple:
        """The plain-data literal the rewritten module embeds (see the module docstring)."""
        return (_TAG, SCHEMA, __version__, self.name, self.module, self.file, self.line,
                self.ndim, tuple(_fields(p) for p in self.params), self.typevars,
                _fields(self.options), tuple(_variant_literal(v) for v in self.variants),
                self.files)

    @classmethod
    def from_literal(cls, literal, where: str = "a kernel") -> KernelSpec:
        """Read a literal made by :meth:`to_literal`, checking its layout as it goes.

        A literal of another schema, or anything that is not one, raises
        :class:`~gpu_native.errors.GpuNativeError` naming ``where`` and what to do.
        """
        if type(literal) is not tuple or len(literal) < 3 or literal[0] != _TAG:
            old = literal.get("schema") if isinstance(literal, dict) else None
            if isinstance(old, int):
                raise _stale(where, old, literal.get("version"))
            raise GpuNativeError(
                f"{where} was given a _spec that is not a gpu_native kernel spec; _spec= is "
                "written by gpu_native's rewrite, not by hand")
        # The schema before the length: each schema has its own length.
        if literal[1] != SCHEMA:
            raise _stale(where, literal[1], literal[2])
        try:
            return _read_kernel(literal)
        except (TypeError, ValueError, KeyError) as exc:
            raise GpuNativeError(
                f"{where} carries a malformed kernel spec ({exc}); delete the module's "
                "__pycache__ and import it again") from None


def _stale(where: str, schema, version) -> GpuNativeError:
    made = f"gpu_native {version}" if isinstance(version, str) else "another gpu_native"
    return GpuNativeError(
        f"{where} was rewritten by {made} (kernel spec schema {schema}), which this gpu_native "
        f"{__version__} (schema {SCHEMA}) cannot read; delete the module's __pycache__ (and "
        "any copy of the rewritten module) and import it again")


def _fields(record) -> tuple:
    return tuple(getattr(record, name) for name in fields(record))


def _check_literal(c: LaunchCheck) -> tuple:
    tree = to_literal(c.tree)
    if isinstance(c, LaunchAssert):
        return ("assert", tree, c.site)
    if isinstance(c, ShapeAssert):
        return ("shape", tree, c.site)
    # The tree is the first field of the other two.
    return ("param" if isinstance(c, ParamCheck) else "fits", tree, *_fields(c)[1:])


def _variant_literal(v: VariantSpec) -> tuple:
    return (v.types, v.symbol, v.kernel_id, v.cuda, tuple(_fields(s) for s in v.sites),
            v.traits.names(), tuple(_check_literal(c) for c in v.launch_checks), v.ir,
            tuple(_fields(c) for c in v.consts), v.min_arch, v.arch_use,
            tuple(_fields(t) for t in v.tensor_maps))


# ---- reading a literal back ------------------------------------------------------------------
# Each reader checks the types it relies on and raises TypeError/ValueError otherwise;
# from_literal turns those into one clear error.


def _check(value, kinds, what: str):
    if not isinstance(value, kinds) or (kinds is int and isinstance(value, bool)):
        raise TypeError(f"{what} is {type(value).__name__}")
    return value


def _tuple(value, what: str, length: int | None = None) -> tuple:
    if type(value) is not tuple or (length is not None and len(value) != length):
        raise TypeError(f"{what} is not a tuple" + (f" of {length}" if length else ""))
    return value


def _strings(value, what: str) -> tuple[str, ...]:
    for item in _tuple(value, what):
        _check(item, str, what)
    return value


def _optional_int(value, what: str) -> int | None:
    return None if value is None else _check(value, int, what)


def _read_check(value, files: int) -> LaunchCheck:
    value = _tuple(value, "a launch check")
    if value[:1] == ("assert",) and len(value) == 3:
        return LaunchAssert(from_literal(value[1]), _check(value[2], int, "an assert site"))
    if value[:1] == ("fits",) and len(value) == 8:
        _, tree, limit, ty, line, col, end_col, file = value
        return IndexFits(from_literal(tree), _check(limit, int, "a limit"),
                         _check(ty, str, "a type"), _check(line, int, "a line"),
                         _check(col, int, "a column"), _optional_int(end_col, "a column"),
                         _file_index(file, files))
    if value[:1] == ("shape",) and len(value) == 3:
        return ShapeAssert(from_literal(value[1], True),
                           _check(value[2], int, "an assert site"))
    if value[:1] == ("param",) and len(value) == 7:
        _, tree, param, array, line, file, counter = value
        return ParamCheck(from_literal(tree, True), _check(param, int, "a parameter index"),
                          _check(array, str, "an array"), _check(line, int, "a line"),
                          _file_index(file, files), _check(counter, str, "a counter"))
    raise ValueError(f"unknown launch check {value[:1]!r}")


def _file_index(value, files: int) -> int:
    if type(value) is not int or not 0 <= value < files:
        raise ValueError(f"file index {value!r:.20} is not one of the kernel's {files} files")
    return value


# The types a site's and a parameter's fields may have, checked at once (a module has many sites).
_SITE_TYPES = {(str, int, int, end, str, int, int, str, int) for end in (int, type(None))}
_PARAM_TYPES = (str, str, int, bool, bool)


def _read_site(value, files: int) -> Site:
    if type(value) is not tuple or tuple(map(type, value)) not in _SITE_TYPES or \
            not 0 <= value[-1] < files:
        raise TypeError(f"a site is {value!r:.80}")
    return Site(*value)


def _read_variant(value, files: int) -> VariantSpec:
    """A variant whose sites and checks may name ``files`` files (the kernel's and others)."""
    types, symbol, kernel_id, cuda, sites, traits, checks, ir, consts, min_arch, arch_use, \
        maps = _tuple(value, "a variant", 12)
    for pair in _tuple(types, "the variant's types"):
        _strings(_tuple(pair, "a specialisation", 2), "a specialisation")
    return VariantSpec(
        types, _check(symbol, str, "a symbol"), _check(kernel_id, int, "a kernel id"),
        _check(cuda, str, "the CUDA source"),
        tuple(_read_site(s, files) for s in _tuple(sites, "the sites")),
        Trait.from_names(_strings(traits, "the traits")),
        tuple(_read_check(c, files) for c in _tuple(checks, "the launch checks")),
        _check(ir, bytes, "the IR"),
        tuple(_read_const(c) for c in _tuple(consts, "the constant arrays")),
        _check(min_arch, int, "an architecture"), _check(arch_use, str, "an architecture's use"),
        tuple(_read_map(t) for t in _tuple(maps, "the tensor maps")))


def _read_map(value) -> TensorMap:
    param, dtype, rows, cols = _tuple(value, "a tensor map", 4)
    return TensorMap(_check(param, int, "a parameter index"), _check(dtype, str, "a dtype"),
                     _check(rows, int, "a box's rows"), _check(cols, int, "a box's columns"))


def _read_const(value) -> ConstArray:
    name, module, dtype, shape, symbol = _tuple(value, "a constant array", 5)
    for n in _tuple(shape, "a constant array's shape"):
        _check(n, int, "an extent")
    return ConstArray(_check(name, str, "a name"), _check(module, str, "a module"),
                      _check(dtype, str, "a dtype"), shape, _check(symbol, str, "a symbol"))


def _read_param(value) -> Param:
    if type(value) is not tuple or tuple(map(type, value)) != _PARAM_TYPES:
        raise TypeError(f"a parameter is {value!r:.80}")
    return Param(*value)


def _read_kernel(literal: tuple) -> KernelSpec:
    (_, _, _, name, module, file, line, ndim, params, typevars, options, variants,
     files) = _tuple(literal, "the spec", 13)
    bounds_check, fastmath, max_registers, cooperative = _tuple(options, "the options", 4)
    files = _strings(files, "the files")
    return KernelSpec(
        _check(name, str, "the name"), _check(module, str, "the module"),
        _check(file, str, "the file"), _check(line, int, "the line"),
        _check(ndim, int, "ndim"), tuple(_read_param(p) for p in _tuple(params, "the params")),
        _strings(typevars, "the TypeVars"),
        KernelOptions(_check(bounds_check, bool, "bounds_check"),
                      _check(fastmath, bool, "fastmath"),
                      _optional_int(max_registers, "max_registers"),
                      _check(cooperative, bool, "cooperative")),
        tuple(_read_variant(v, 1 + len(files)) for v in _tuple(variants, "the variants")),
        files)
