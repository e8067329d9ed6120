"""The typed kernel IR: what the checker produces and every backend consumes.

Every node is a frozen record (:func:`~gpu_native.nodes.node`) carrying its :class:`~gpu_native.errors.SourceSpan`; every
expression carries its type.  The checker has already applied the promotion rules (operands of a
``BinOp`` have the result type, implicit conversions are explicit ``Cast`` nodes), resolved every
name, decided which bounds checks remain (``check`` fields hold a site id, or ``None`` where the
index is proven in range) and verified the safety rules.  Backends therefore only translate.

The IR is designed for 1-D, 2-D and 3-D kernels, shared and local memory, atomics and warp
operations; see ``docs/language.md`` for the language it encodes.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import SourceSpan
from .lang.structs import StructInfo
from .lang.types import COMPLEXES, SCALARS, VECTORS, ComplexInfo, ScalarInfo, VectorInfo
from .nodes import Factory, fields, node, replace
from .spec import KernelOptions, LaunchCheck

# ============================================================================================
# Types


@node
class Type:
    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


@node
class ScalarType(Type):
    info: ScalarInfo

    @property
    def name(self) -> str:
        return self.info.name

    def __str__(self) -> str:
        return self.info.name


@node
class VectorType(Type):
    """A small vector (``vec3f`` ...): ``info.n`` components of type ``elem``."""

    info: VectorInfo

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def elem(self) -> ScalarType:
        return _SCALAR_TYPES[self.info.elem.name]

    @property
    def n(self) -> int:
        return self.info.n

    def __str__(self) -> str:
        return self.info.name


@node
class ComplexType(VectorType):
    """A complex number (``complex64``, ``complex128``): a pair like a ``vec2`` (real part
    first, ``elem`` the type of each part) wherever a value goes (locals, parameters, array
    elements, selects), with arithmetic of its own (:class:`ComplexCall`).  Every construct
    that takes vectors and not complex numbers checks for this subclass first."""


@node
class StructType(Type):
    """A ``@gpu_struct`` type: ``info`` has its fields (each a scalar, vector or struct type, see
    :meth:`field_type`) and their C layout."""

    info: StructInfo

    @property
    def name(self) -> str:
        return self.info.title

    def field_type(self, index: int) -> ScalarType | VectorType | StructType:
        """The type of field ``index``."""
        return value_type(self.info.fields[index].info)

    def __str__(self) -> str:
        return self.info.title


# What a value of an array (or a local, a parameter, a device function's result) may be.
ValueType = ScalarType | VectorType | StructType


def value_type(info: ScalarInfo | VectorInfo | StructInfo) -> ScalarType | VectorType | StructType:
    """The IR type of a scalar, vector or struct info."""
    if isinstance(info, StructInfo):
        return StructType(info)
    if isinstance(info, ComplexInfo):
        return _COMPLEX_TYPES[info.name]
    if isinstance(info, VectorInfo):
        return _VECTOR_TYPES[info.name]
    return _SCALAR_TYPES[info.name]


@node
class VoidType(Type):
    def __str__(self) -> str:
        return "None"


@node
class ArrayType(Type):
    """An array: a global parameter (``space="global"``), shared, per-thread local or constant
    memory (``"const"``: a module-level ``const_array``, never mutable).

    ``shape`` is known statically for shared, local and constant arrays (``None`` for global arrays, whose
    shape comes with the launch).  The dynamic shared array has ``shape == (-1,)``.
    """

    elem: ScalarType | VectorType | StructType
    ndim: int
    mutable: bool
    space: str = "global"
    shape: tuple[int, ...] | None = None
    # A global array annotated `CUDASlice2D[T, Strided]`: addressed through element strides
    # passed with the launch, not row-major (see docs/language.md, Array views).
    strided: bool = False
    # A shared array declared `shared_array(T, shape, swizzle=128)`: indexed logically, stored in
    # the 128-byte swizzle warpgroup MMA reads (gpu_native.emit.cuda.array_offset), in the
    # dynamic shared memory (see docs/language.md, Warpgroup matrices).
    swizzle: int = 0

    def __str__(self) -> str:
        if self.space == "global":
            dims = "" if self.ndim == 1 else f"{self.ndim}D"
            layout = ", Strided" if self.strided else ""
            return f"CUDASlice{'Mut' if self.mutable else ''}{dims}[{self.elem}{layout}]"
        return f"{self.space}_array({self.elem}, {self.shape})"


@node
class UidType(Type):
    """A multi-dimensional unique id (``FlatLayout2D.uid()``): components ``.x .y .z``."""

    ndim: int
    scope: str  # "grid" or "block"

    def __str__(self) -> str:
        return f"UniqueId{self.ndim}D({self.scope})"


@node
class TupleType(Type):
    """A tuple of scalars (``tuple[f32, i32]``): what a device function may return, and the type
    of a local that holds one.  The CUDA emitter declares one struct per tuple type."""

    elems: tuple[ScalarType, ...]

    def __str__(self) -> str:
        return f"tuple[{', '.join(str(e) for e in self.elems)}]"


def scalar(name: str) -> ScalarType:
    return _SCALAR_TYPES[name]


_SCALAR_TYPES = {name: ScalarType(info) for name, info in SCALARS.items()}
_VECTOR_TYPES = {name: VectorType(info) for name, info in VECTORS.items()}
_COMPLEX_TYPES = {name: ComplexType(info) for name, info in COMPLEXES.items()}


def complex_type(name: str) -> ComplexType:
    """``complex64`` or ``complex128``."""
    return _COMPLEX_TYPES[name]


def complex_of(elem: ScalarType) -> ComplexType:
    """The complex type whose parts are ``elem`` (``f32`` or ``f64``)."""
    return _COMPLEX_TYPES["complex64" if elem.info.bits <= 32 else "complex128"]


def vector(name: str) -> VectorType:
    return _VECTOR_TYPES[name]


def vector_of(elem: ScalarType, n: int) -> VectorType | None:
    """The vector type of ``n`` components of ``elem``, or None when there is none."""
    for ty in _VECTOR_TYPES.values():
        if ty.n == n and ty.info.elem == elem.info:
            return ty
    return None

VOID = VoidType()
BOOL = scalar("bool_")
I32 = scalar("i32")
I64 = scalar("i64")
U32 = scalar("u32")
U64 = scalar("u64")
F32 = scalar("f32")
F16 = scalar("f16")
BF16 = scalar("bf16")
F64 = scalar("f64")


# ============================================================================================
# Variables and error sites

# The checker names its own temporaries ``$t0``, ``$t1``, ...: no Python name starts with "$", so
# they can never meet a user's variable; each emitter maps them into its own reserved names.
TEMP_PREFIX = "$"


@node(eq=False)
class Var:
    """A local variable or parameter.  Identity matters: two ``Var`` objects are two variables."""

    name: str  # the Python name
    ty: Type
    span: SourceSpan
    is_param: bool = False

    def __repr__(self) -> str:
        return f"Var({self.name}: {self.ty})"


@node(eq=False)
class ConstVar(Var):
    """The variable of a module-level constant array (see :class:`ConstDecl`): its C++ name is
    ``symbol``, a name of the translation unit (the runtime finds the array by it)."""

    symbol: str = ""


@node
class Site:
    """A place where a running kernel can report an error, numbered per kernel.

    ``kind`` is ``"index"`` (bounds check), ``"vector"`` (the bounds check of the four
    elements of a ``load_vec4``), ``"align"`` (its alignment check), ``"assert"``, or
    ``"zerodiv"``; ``array`` and ``axis`` name what an index check guards; ``message`` is an
    assert's message.
    """

    id: int
    kind: str
    span: SourceSpan
    array: str = ""
    axis: int = 0
    ndim: int = 1
    message: str = ""


# ============================================================================================
# Expressions


@node
class Expr:
    # A subclass whose values are always scalars (or arrays) says so by narrowing ``ty``: the
    # field keeps its place, and backends may read ``e.ty.info`` (or ``.elem``) without a test.
    span: SourceSpan
    ty: Type


@node
class Const(Expr):
    ty: ScalarType
    value: int | float | bool


@node
class Local(Expr):
    var: Var


@node
class BinOp(Expr):
    """Arithmetic with both operands already of type ``ty`` (shifts: right operand any int).

    ``op`` is one of ``+ - * / // % ** << >> & | ^``.  ``//`` and ``%`` follow Python (floor)
    semantics; ``zero_check`` is the site that reports an integer division by zero, or ``None``
    when the divisor is a nonzero constant or floats are divided.  ``no_wrap`` says the bounds
    proofs showed that an integer ``+ - *`` stays within its type (for the launches the launcher
    lets through), so the emitter may write it as plain signed arithmetic.
    """

    ty: ScalarType
    op: str
    left: Expr
    right: Expr
    zero_check: int | None = None
    no_wrap: bool = False


@node
class UnaryOp(Expr):
    ty: ScalarType
    op: str  # "-", "~", "not"
    operand: Expr


@node
class Compare(Expr):
    """One comparison; ``left`` and ``right`` have a common type.  ``ty`` is bool."""

    ty: ScalarType
    op: str  # "<", "<=", ">", ">=", "==", "!="
    left: Expr
    right: Expr


@node
class BoolOp(Expr):
    """Short-circuit ``and`` / ``or`` over bool operands."""

    ty: ScalarType
    op: str
    values: tuple[Expr, ...]


@node
class Select(Expr):
    """``a if cond else b``: only the chosen side is evaluated."""

    cond: Expr
    then: Expr
    orelse: Expr


@node
class Cast(Expr):
    """Conversion to ``ty``.  Float to int truncates toward zero and saturates; NaN gives 0."""

    ty: ScalarType
    value: Expr


@node
class ArrayRef(Expr):
    """An array value: a parameter or a shared / local array (``ty`` is ``var.ty``)."""

    ty: ArrayType
    var: Var


@node
class Load(Expr):
    """``array[indices]``.  ``checks[k]`` is the bounds-check site for axis k, or None if proven.
    ``ty`` is the array's element type: a scalar, or a vector for an array of vectors (the
    indices count elements, as for scalars).

    ``width`` > 1 is ``load_vec4(array, *indices)``: the ``width`` consecutive scalars from
    ``indices`` along the last axis, read as one aligned vector (``ty``).  Then the check of the
    last axis covers all of them, and ``align`` is the site of the run-time check that their
    address is aligned to the vector's size (None where proven, or with the checks off)."""

    ty: ScalarType | VectorType | StructType
    array: ArrayRef
    indices: tuple[Expr, ...]
    checks: tuple[int | None, ...]
    width: int = 1
    align: int | None = None


@node
class Shape(Expr):
    """``len(a)`` (axis 0) or ``a.shape[axis]``; type i64."""

    ty: ScalarType
    array: ArrayRef
    axis: int


@node
class Special(Expr):
    """A CUDA built-in index: ``name`` in thread_idx / block_idx / block_dim / grid_dim; type i32."""

    ty: ScalarType
    name: str
    axis: int  # 0, 1, 2 for .x .y .z


@node
class LaneId(Expr):
    """``lane_id()``: the lane of this thread in its warp (i32)."""

    ty: ScalarType


@node
class UidComponent(Expr):
    """Component ``axis`` of this thread's unique id; type i64.

    ``scope="grid"``: ``block_idx * block_dim + thread_idx`` along ``axis``;
    ``scope="block"``: ``thread_idx`` along ``axis``.
    """

    ty: ScalarType
    scope: str
    axis: int


@node
class MathCall(Expr):
    """A math-library function (``math.sqrt``, ``abs``, ``min``, ...) on operands of type ``ty``.

    ``name`` is the Python name without module (``sqrt``, ``exp``, ``abs``, ``min``, ``max``,
    ``floor``, ...); all arguments already have the function's operand type.
    """

    ty: ScalarType
    name: str
    args: tuple[Expr, ...]


@node
class VecMake(Expr):
    """A vector from its components (``items``, each already of the element type), in order."""

    ty: VectorType
    items: tuple[Expr, ...]


@node
class VecComponent(Expr):
    """Component ``index`` of a vector value (``v.x`` is 0); ``ty`` is the element type."""

    ty: ScalarType
    value: Expr
    index: int


@node
class VecBinOp(Expr):
    """Elementwise ``+ - * /`` on vectors of type ``ty``: each operand is a vector of ``ty`` or a
    scalar of its element type (broadcast to every component, evaluated once).  Component ``k``
    is ``left[k] op right[k]``, computed as the scalar operator computes it."""

    ty: VectorType
    op: str
    left: Expr
    right: Expr


@node
class VecUnary(Expr):
    """``-v``, component by component."""

    ty: VectorType
    op: str
    operand: Expr


@node
class ComplexCall(Expr):
    """An operation on complex numbers, computed by the prelude's ``gn_c<name>`` in CUDA and
    :mod:`gpu_native.simulator.complexes`'s ``<name>`` in the simulator, the same sequence of
    operations in both: ``mul``, ``div``, ``eq``, ``ne``, ``conj``, ``abs`` and the ``cmath``
    functions (``exp``, ``log``, ``phase``, ``rect``, ``isnan`` ...).  Complex arguments are of
    one complex type, real ones of its part type; ``ty`` is the result (complex, the part type,
    ``bool_``, or a tuple for ``polar``)."""

    name: str
    args: tuple[Expr, ...]


@node
class VecCall(Expr):
    """A vector function (``dot``, ``cross``, ``length``, ``length_sq``, ``normalize``, and
    elementwise ``min``/``max``) of vector arguments of one type; ``ty`` is its result (the
    element type for ``dot`` and the lengths).  The summations run in component order,
    ``x`` first, each product rounded (as ``a.x * b.x + a.y * b.y + ...`` is written)."""

    name: str
    args: tuple[Expr, ...]


@node
class StructMake(Expr):
    """A struct from the values of all its fields (``items``, each already of its field's type),
    in field order; evaluated in that order."""

    ty: StructType
    items: tuple[Expr, ...]


@node
class FieldGet(Expr):
    """Field ``index`` of a struct value (``p.x``); ``ty`` is the field's type."""

    value: Expr
    index: int


@node
class StructWith(Expr):
    """The struct ``value`` with field ``index`` replaced by ``item``: what ``p.x = item``
    assigns to the local ``p`` (``p.a.x = item`` nests one inside another)."""

    ty: StructType
    value: Expr
    index: int
    item: Expr


@node
class Call(Expr):
    """Call of a device function (one specialisation) with converted arguments."""

    function: DeviceFunction
    args: tuple[Expr, ...]


@node
class MakeTuple(Expr):
    """``(a, b)``: a tuple value (``ty`` is a ``TupleType``); each item already has its
    element's type.  Items are evaluated left to right."""

    items: tuple[Expr, ...]


@node
class TupleItem(Expr):
    """``t[index]`` of a tuple-typed value (a constant index, already in range)."""

    value: Expr
    index: int


@node
class WarpOp(Expr):
    """Warp intrinsic: ``op`` in shfl_down / shfl_up / shfl_xor / shfl_idx (``args`` = value, lane
    arg, width), ballot (u32), all_sync / any_sync (bool), match_any / match_all (u32; ``args`` =
    value), activemask (u32, no ``args``).  ``mask`` is the participating lanes (``None`` for
    activemask, which takes none)."""

    ty: ScalarType
    op: str
    args: tuple[Expr, ...]
    mask: Expr | None


@node
class BarrierVote(Expr):
    """``sync_threads_count/and/or(predicate)``: a barrier for the block, like ``sync_threads()``,
    that also returns how many of its threads (``op="count"``, i32), all of them (``"and"``,
    bool) or any of them (``"or"``, bool) passed a true predicate."""

    op: str
    predicate: Expr


@node
class Atomic(Expr):
    """An atomic operation on one element; the result is the old value (or the loaded value).

    ``op``: add, sub, min, max, and, or, xor, exchange, cas, load, store.  For ``cas`` the operands
    are (expected, desired).  ``order`` is a :class:`~gpu_native.lang.intrinsics.MemoryOrder` value
    string; ``scope`` is "device" or "block" (shared arrays).
    """

    op: str
    array: ArrayRef
    indices: tuple[Expr, ...]
    checks: tuple[int | None, ...]
    operands: tuple[Expr, ...]
    order: str = "relaxed"


@node
class RandomDraw(Expr):
    """A draw from a Philox4x32-10 generator (``rng.uniform()``): ``method`` names its registry
    entry (``random_u32``, ``uniform``, ``normal``, ``randint``, and ``uniform4``, ``normal4``,
    whose ``ty`` is ``vec4f``).  ``state`` reads the
    generator's three ``u64`` locals (key, subsequence, counter) and the draw advances the
    counter: by one block, and ``randint`` by one more for each block whose four words it
    rejects.  ``args`` are the method's operands (``randint``: the bound ``n``, of type ``ty``);
    ``check`` is the site that reports a ``randint`` bound outside 1..2**32 - 1, or ``None``
    when the bound is a constant in range."""

    method: str
    state: tuple[Local, ...]
    args: tuple[Expr, ...] = ()
    check: int | None = None


# ============================================================================================
# Statements


@node
class Stmt:
    span: SourceSpan


@node
class Assign(Stmt):
    """``var = value`` (value already converted to ``var.ty``)."""

    var: Var
    value: Expr


@node
class Store(Stmt):
    """``array[indices] = value`` (an element of an array of vectors is stored whole).

    ``unique`` tells how the checker proved the write race-free: "uid" (a unique index),
    "single" (only one thread of the block / grid runs it), or "unsafe" (inside ``with unsafe():``,
    where the simulator's race detector watches for two threads writing one element).
    ``proof`` is the rule of the ownership proofs that accepted it (``""``: the classic rule),
    for ``gpu-native expand --proofs``; it is not encoded for the simulator.  ``field`` is the
    path of field indices of a store into a field of a struct element (``a[i].pos.x = v``:
    ``value`` has that field's type); ``()`` stores the whole element.
    """

    array: ArrayRef
    indices: tuple[Expr, ...]
    checks: tuple[int | None, ...]
    value: Expr
    unique: str = "uid"
    proof: str = ""
    field: tuple[int, ...] = ()


@node
class ExprStmt(Stmt):
    value: Expr


@node
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@node
class While(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]


@node
class ForRange(Stmt):
    """``for var in range(start, stop, step)``: bounds evaluated once, ``var`` typed like them.

    ``step_sign`` is +1 or -1 when the step is a constant, else 0 (decided at run time).
    ``counter_fits``: ``stop + step`` provably stays within the variable's type, so the counter
    can step past ``stop`` without overflowing.
    ``unroll``: the user's ``unroll(range(...), factor)`` hint for the device compiler: ``None``
    for none, 0 to unroll fully (``#pragma unroll``), else the factor (``#pragma unroll N``).
    ``reverse``: ``for var in reversed(range(start, stop, step))``: the same values, last first
    (what is proven of the values holds as for the range; only the order differs).
    """

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    step_sign: int
    body: tuple[Stmt, ...]
    counter_fits: bool = False
    unroll: int | None = None
    reverse: bool = False


@node
class GridStride(Stmt):
    """``for var in FlatLayout1D.grid_stride(n)``: each value in range(n) visited by one thread."""

    var: Var
    stop: Expr
    body: tuple[Stmt, ...]


@node
class Break(Stmt):
    pass


@node
class Continue(Stmt):
    pass


@node
class Return(Stmt):
    value: Expr | None


@node
class Assert(Stmt):
    cond: Expr
    site: int
    at_launch: bool = False  # depends only on the launch shape: the launcher checks it instead


@node
class Barrier(Stmt):
    """``sync_threads()`` (``scope="block"``), ``sync_warp(mask)`` (``scope="warp"``) or
    ``grid_sync()`` (``scope="grid"``, cooperative kernels only)."""

    scope: str
    mask: Expr | None = None


@node
class Fence(Stmt):
    """``threadfence()`` (``scope="device"``), ``threadfence_block()`` (``"block"``) or
    ``threadfence_system()`` (``"system"``): a memory fence, not a barrier."""

    scope: str


@node
class Operand:
    """One array operand of a :class:`MatrixOp`: ``array[indices]`` is its first element and
    ``last`` the last element its footprint reaches (``()`` where the footprint is a whole
    fragment axis, known in bounds); ``checks`` and ``last_checks`` are the bounds-check sites
    per axis, None where proven."""

    array: ArrayRef
    indices: tuple[Expr, ...]
    checks: tuple[int | None, ...]
    last: tuple[Expr, ...] = ()
    last_checks: tuple[int | None, ...] = ()


@node
class MatrixOp(Stmt):
    """A warp matrix or asynchronous-copy statement (see the registry's ``matrix_op`` entries).

    ``op`` is ``ldmatrix`` (operands: fragment, shared source; ``params`` = (num, trans,
    alignment site)), ``mma`` (accumulator, a, b), ``store_matrix`` (destination, accumulator),
    ``cp_async`` (shared destination, global source; ``params`` = (nbytes, the destination's
    alignment site, the source's)), ``cp_async_commit`` (none) or
    ``cp_async_wait`` (none; ``params`` = (n,)); or a warpgroup statement
    (:mod:`gpu_native.check.warpgroup`): ``warpgroup_mma`` (accumulator, a, b; ``params`` = (n,
    the whole-warpgroups launch check's site, the slices' alignment site or -1)),
    ``warpgroup_store`` (destination, accumulator; ``params`` = (n,)), ``warpgroup_arrive``,
    ``warpgroup_commit``, ``warpgroup_wait`` (``params`` = (n,)).  ``unique`` is how a write to a
    shared or global destination was accepted, as :attr:`Store.unique`, and ``proof`` the rule
    that proved it (for ``expand --proofs``)."""

    op: str
    operands: tuple[Operand, ...] = ()
    params: tuple[int, ...] = ()
    unique: str = ""
    proof: str = ""


@node
class Print(Stmt):
    """Device ``print``: ``items`` are string literals and scalar expressions, space separated."""

    items: tuple[str | Expr, ...]


@node
class TailExit(Stmt):
    """The grid-tail rule: return at once when this thread's uid lies outside every array indexed
    with the bare uid.  ``extents`` pairs each such array with, for each of its dimensions, the uid
    axis that indexes it (``None`` for a dimension indexed otherwise, which is not checked)."""

    extents: tuple[tuple[ArrayRef, tuple[int | None, ...]], ...]


# ============================================================================================
# Functions


class _ArrayDecl:
    """The array a declaration declares, typed (not a node: it adds no fields)."""

    var: Var

    @property
    def ty(self) -> ArrayType:
        """The array's type, ``var.ty``."""
        ty = self.var.ty
        assert isinstance(ty, ArrayType)  # the checker declares array variables only
        return ty

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's static shape (``(-1,)`` for the dynamic shared array)."""
        shape = self.ty.shape
        assert shape is not None  # only global arrays take their shape from the launch
        return shape


@node(eq=False)
class SharedDecl(_ArrayDecl):
    var: Var  # ty is ArrayType(space="shared"); shape (-1,) for the dynamic shared array
    dynamic: bool = False


@node(eq=False)
class LocalArrayDecl(_ArrayDecl):
    var: Var


@node(eq=False)
class ConstDecl(_ArrayDecl):
    """A module-level ``const_array`` a kernel reads (``var.ty`` has ``space="const"``): declared
    ``__constant__`` as :attr:`symbol` in the kernel's translation unit, and set when the kernel
    is loaded from the array ``module.name`` holds (see :mod:`gpu_native.lang.constarrays`)."""

    var: ConstVar
    module: str
    name: str

    @property
    def symbol(self) -> str:
        """The ``__constant__`` variable's name in the translation unit."""
        return self.var.symbol

    @property
    def nbytes(self) -> int:
        """The bytes the array takes in the constant bank."""
        size = self.ty.elem.info.itemsize
        for n in self.shape:
            size *= n
        return size


# CUDA allows at most 48 KiB of *static* shared memory per block on every architecture; more
# needs the dynamic shared array and the opt-in function attribute (which the launcher sets).
STATIC_SHARED_LIMIT = 48 * 1024
# CUDA's local memory per thread (every GPU since Fermi): what one function's local arrays may
# take together.
LOCAL_MEMORY_LIMIT = 512 * 1024
SHARED_ALIGN = 16  # every shared array is declared __align__(16) (gpu_native.emit.cuda)


def swizzled_layout(shared: Iterable[SharedDecl]) -> list[tuple[SharedDecl, int]]:
    """The swizzled shared arrays of ``shared`` with their byte offsets from the 1024-aligned
    start of the dynamic shared memory, in declaration order (each a multiple of 1024 bytes)."""
    out, offset = [], 0
    for decl in shared:
        if decl.ty.swizzle:
            out.append((decl, offset))
            size = decl.ty.elem.info.itemsize
            for n in decl.shape:
                size *= n
            offset += size
    return out


SWIZZLE_ALIGN = 1024  # a 128-byte swizzle repeats every 8 rows: its arrays are 1024-aligned


def local_array_bytes(arrays: Iterable[LocalArrayDecl]) -> int:
    """The bytes the local arrays of ``arrays`` take together (per thread)."""
    total = 0
    for decl in arrays:
        size = decl.ty.elem.info.itemsize
        for n in decl.shape:
            size *= n
        total += size
    return total


def static_shared_bytes(shared: Iterable[SharedDecl]) -> int:
    """The bytes of static shared memory that the :class:`SharedDecl` entries of ``shared``
    occupy, laid out in order, each aligned to :data:`SHARED_ALIGN` as the CUDA emitter declares
    them (the dynamic shared array takes none)."""
    total = 0
    for decl in shared:
        if decl.dynamic or decl.ty.swizzle:  # swizzled arrays live in the dynamic memory
            continue
        size = decl.ty.elem.info.itemsize
        for n in decl.shape:
            size *= n
        total = -(-total // SHARED_ALIGN) * SHARED_ALIGN + size
    return total


@node(eq=False, frozen=False)
class DeviceFunction:
    """One specialisation of a ``@gpu_device`` function."""

    name: str  # Python name
    module: str
    symbol: str  # C++ name
    params: tuple[Var, ...]
    ret: Type
    span: SourceSpan
    locals: tuple[Var, ...] = ()
    local_arrays: tuple[LocalArrayDecl, ...] = ()
    body: tuple[Stmt, ...] = ()
    callees: tuple[DeviceFunction, ...] = ()

    def __repr__(self) -> str:
        return f"DeviceFunction({self.module}.{self.name} -> {self.symbol})"


@node
class KernelTraits:
    """Facts about a kernel that the launcher and code generator use.

    ``uid_only``: the kernel depends on nothing but its 1-D grid uid (no shared memory, barriers,
    thread/block indices or warp operations), so the launcher may run its logical grid on fewer
    physical threads.  ``uses_barriers``, ``uses_shared`` and ``uses_warp`` say what it does use.
    """

    uid_only: bool = False
    uses_barriers: bool = False
    uses_shared: bool = False
    uses_dynamic_shared: bool = False
    uses_warp: bool = False
    uses_half: bool = False
    uses_print: bool = False
    uses_grid_sync: bool = False
    uses_wgmma: bool = False  # warpgroup MMA: built for sm_90a only (gpu_native.build)
    min_arch: int = 0  # the oldest architecture it builds for (sm_80: 80), 0 for any
    arch_use: str = ""  # what needs min_arch, and where ("cp_async at kernels.py:42")


@node(eq=False, frozen=False)
class Kernel:
    """One specialisation of a ``@gpu_kernel`` function, ready for a backend."""

    name: str
    module: str
    symbol: str
    ndim: int
    params: tuple[Var, ...]
    locals: tuple[Var, ...]
    shared: tuple[SharedDecl, ...]
    local_arrays: tuple[LocalArrayDecl, ...]
    body: tuple[Stmt, ...]
    sites: tuple[Site, ...]
    options: KernelOptions
    traits: KernelTraits
    span: SourceSpan
    device_functions: tuple[DeviceFunction, ...] = ()  # every one reached, callees first
    specialization: tuple[tuple[str, str], ...] = ()  # (TypeVar name, scalar name) pairs
    # What the launcher checks against the grid and block before the first launch with them
    # (see gpu_native.runtime.launch_checks): hoisted asserts, and the launch-shaped integer
    # expressions that the bounds proofs assume do not wrap; the checker makes them as the
    # records the runtime reads (gpu_native.spec.LaunchAssert and IndexFits).
    launch_checks: tuple[LaunchCheck, ...] = ()
    # The constant arrays the kernel and its device functions read, in the order first read.
    consts: tuple[ConstDecl, ...] = ()
    extra: dict = Factory(dict)


def walk(node):
    """Yield ``node`` and every IR node below it (expressions and statements, depth first)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
            continue
        if isinstance(item, Operand):  # not a node of its own: only what it holds
            stack.extend(reversed((item.array, item.indices, item.last)))
            continue
        if not isinstance(item, (Expr, Stmt)):
            continue
        yield item
        for value in vars(item).values():
            if isinstance(value, (Expr, Stmt, tuple, list)):
                stack.append(value)


def mark_no_wrap(body, proven: dict[int, BinOp]):
    """``body`` with ``no_wrap=True`` on the BinOps in ``proven`` (by id; the dict keeps them
    alive so no id is reused), rebuilding only the nodes above them."""

    def visit(item):
        if isinstance(item, tuple):
            new = tuple(visit(x) for x in item)
            return item if all(a is b for a, b in zip(new, item)) else new
        # (A MatrixOp's operands are Operands, which hold index expressions too.)
        if not isinstance(item, (Expr, Stmt, Operand)):
            return item
        changes = {}
        for name in fields(item):
            value = getattr(item, name)
            if isinstance(value, (Expr, Stmt, Operand, tuple)):
                new = visit(value)
                if new is not value:
                    changes[name] = new
        if isinstance(item, BinOp) and proven.get(id(item)) is item:
            changes["no_wrap"] = True
        return replace(item, **changes) if changes else item

    return visit(body)


def variables_read(body) -> set[int]:
    """The ids of the variables an IR body reads."""
    return {id(n.var) for n in walk(body) if isinstance(n, Local)}
