"""Random, valid kernels for differential fuzzing of code generation.

A kernel is generated as a small typed syntax tree of our own (the classes below), printed as a
``@gpu_kernel(Kernel1D)`` module, and evaluated by an independent reference
(:mod:`tools.fuzz.reference`) that implements ``docs/language.md`` directly.  Nothing here uses the
transpiler: the tree is typed with the documented promotion rules (re-implemented in
:func:`promote`), so a disagreement between our types and the checker's shows up as a transpile
error or a wrong result.

Randomness comes from a *drawer*: :class:`RandomDrawer` (a seeded ``random.Random``, for the GPU
driver's thousands of cases) or :class:`HypothesisDrawer` (``data.draw``, so that Hypothesis can
shrink a failing kernel to a small one).  :func:`kernel_cases` is the Hypothesis strategy.

What the generator produces: expression trees over f32/f64/i32/i64/u32 (and bool conditions) with
``+ - * / // % ** << >> & | ^``, unary ``- ~ not``, comparisons (also chained), ``and``/``or``,
conditional expressions, casts (``f32() i32() u32() int() float() bool()``), ``math.*``,
``min``/``max``/``abs``/``round``, and with ``Config(bits=True)`` the bit intrinsics (``popc clz ctz
ffs brev byte_perm funnelshift_*``) and ``bitcast``; with ``Config(tuples=True)`` ``q, r =
divmod(a, b)``, ``x, y = e1, e2``, ``for off in (c1, c2):`` and ``enumerate(range(...))``; with ``Config(vectors=True)`` vector locals (``vec2f`` ... ``vec4i``),
their ``+ - *``, ``dot``, ``length_sq``, ``length`` and components; with ``Config(complex=True)``
``complex64``/``complex128`` locals, ``+ - * /``, ``-``, ``conjugate()``, ``.real``, ``.imag``
and ``abs``; with ``Config(structs=True)``, ``Config(tables=True)`` and ``Config(rng=True)``
``@gpu_struct`` values and arrays, ``const_array`` tables and Philox draws (see
:mod:`tools.fuzz.records`); statements: annotated declarations, assignments, augmented
assignments, ``if``/``else``, ``for ... in range(...)`` (constant and data-dependent bounds and
steps), ``while`` loops with a counter, ``break``/``continue``, early ``return`` and stores into the
outputs through the uid.  Every loop carries a guard counter that breaks out after far more
iterations than Python's semantics allow, so a miscompiled loop ends with a wrong answer instead
of hanging the GPU.
"""

from __future__ import annotations

import itertools
import math
import random
import struct
from dataclasses import dataclass, field

import numpy as np

FLOATS = ("f32", "f64")
INTS = ("i32", "i64", "u32")
TYPES = FLOATS + INTS
INT_RANGE = {"i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1),
             "u32": (0, (1 << 32) - 1)}
BITS = {"i32": 32, "i64": 64, "u32": 32, "f32": 32, "f64": 64}
NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u32": np.uint32}
# A loop guard breaks out after this many iterations; no generated loop legitimately runs it.
GUARD_LIMIT = 100

# ---- the documented promotion rules (docs/language.md, "Promotion rules") -----------------------


def arith(t: str) -> str:
    """bool (and narrow ints, which we do not generate) compute as i32."""
    return "i32" if t == "bool" else t


def promote(a: str, b: str) -> str:
    """The common type of two typed operands."""
    a, b = arith(a), arith(b)
    if a == b:
        return a
    if a in FLOATS and b in FLOATS:
        return "f64"
    if a in FLOATS:
        return a
    if b in FLOATS:
        return b
    a_signed, b_signed = a != "u32", b != "u32"
    if a_signed == b_signed:
        return a if BITS[a] >= BITS[b] else b
    signed = a if a_signed else b
    return signed if BITS[signed] > 32 else "i64"  # i32 with u32: the smallest signed type


def with_literal(t: str, lit: Lit) -> str:
    """The type of ``typed OP literal``: the literal is weak and adopts the typed side's type.

    An integer literal that does not fit the typed side widens it, as C would type the literal
    (i32 if it fits, else i64); the docs do not say, the checker and the GPU do this."""
    t = arith(t)
    if isinstance(lit.value, float):
        return t if t in FLOATS else "f64"
    lo, hi = INT_RANGE.get(t, (-math.inf, math.inf))
    if lo <= lit.value <= hi:
        return t
    return promote(t, "i32" if -(1 << 31) <= lit.value < (1 << 31) else "i64")


def assignable(src: str, dst: str) -> bool:
    """Implicit conversion on assignment: anything but float → int and number → bool."""
    if dst == "bool":
        return src == "bool"
    return not (src in FLOATS and dst in INTS)


# ---- the syntax tree ---------------------------------------------------------------------------


class Expr:
    ty: str


def _literals_only(e) -> bool:
    """Is ``e`` built from literals alone (no variable, load or launch index)?"""
    if isinstance(e, (Var, Load, Index, Shape, Special)):
        return False
    if isinstance(e, Expr):
        return all(_literals_only(v) for v in vars(e).values())
    if isinstance(e, (list, tuple)):
        return all(_literals_only(v) for v in e)
    return True


@dataclass
class Lit(Expr):
    """A literal: weak, it takes the type of the operand it meets."""

    value: int | float
    ty: str = "lit"


@dataclass
class Item(Lit):
    """The variable of a loop over a constant tuple (``for off in (1, 2, 3):``).  The loop is
    unrolled and each copy of its body sees the variable as that item, a weak literal; ``value``
    is the largest item (what the typing rules must allow for)."""

    name: str = ""


@dataclass
class Var(Expr):
    name: str
    ty: str


@dataclass
class Load(Expr):
    """An input element: ``in_f32[i, 1]`` (2-D layout) or ``a_f32[i]`` (1-D layout)."""

    array: str
    slot: int
    ty: str


@dataclass
class Index(Expr):
    """An input element at a computed index, which may lie outside the array:
    ``a_f32[i + 1]`` (1-D layout) or ``in_f32[i - 2, 1]`` (2-D layout, along the first axis).
    The index is an integer expression of the uid, never a bare variable, so that it is not a
    bare-uid access (docs/language.md, "The grid tail")."""

    slot: int
    index: Expr
    ty: str


@dataclass
class Shape(Expr):
    """The first extent of an input array, ``len(a)`` or ``a.shape[0]``: the launch's ``n``."""

    array: str
    spelling: str  # "len" or "shape"
    ty: str = "i64"


@dataclass
class Special(Expr):
    name: str  # thread_idx, block_idx, block_dim, grid_dim (.x)
    ty: str = "i32"


@dataclass
class Bin(Expr):
    op: str
    left: Expr
    right: Expr
    ty: str  # result type
    opty: str  # the operands' common type (shifts: the left operand's)


@dataclass
class Unary(Expr):
    op: str  # "-" or "~"
    operand: Expr
    ty: str


@dataclass
class Compare(Expr):
    ops: list[str]
    operands: list[Expr]
    optys: list[str]
    ty: str = "bool"


@dataclass
class BoolOp(Expr):
    op: str
    values: list[Expr]
    ty: str = "bool"


@dataclass
class Not(Expr):
    operand: Expr  # bool, or a number tested against zero
    ty: str = "bool"


@dataclass
class Select(Expr):
    cond: Expr
    then: Expr
    orelse: Expr
    ty: str


@dataclass
class Cast(Expr):
    fn: str  # f32 f64 i32 i64 u32 int float bool
    operand: Expr
    ty: str


@dataclass
class Math(Expr):
    fn: str
    args: list[Expr]
    ty: str  # result type (bool for isnan/isinf/isfinite)
    argty: str


@dataclass
class MinMax(Expr):
    fn: str
    args: list[Expr]
    ty: str


@dataclass
class Abs(Expr):
    operand: Expr
    ty: str


@dataclass
class Round(Expr):
    operand: Expr
    ty: str = "i64"


@dataclass
class Bits(Expr):
    """A bit intrinsic: ``popc clz ctz ffs brev`` of one integer, ``byte_perm(x, y, s)`` and the
    funnel shifts ``funnelshift_l/lc/r/rc(lo, hi, shift)`` of 32-bit words."""

    fn: str
    args: list[Expr]
    ty: str  # result type
    argty: str  # the operands' type (the words' for byte_perm and the funnel shifts)


@dataclass
class Bitcast(Expr):
    """``bitcast(x, ty)``: the bits of ``x`` read as a ``ty`` of the same width."""

    operand: Expr
    ty: str


# Vector types: (element type, length) (docs/language.md, "Vectors").
VECTORS = {f"vec{n}{c}": (elem, n) for c, elem in (("f", "f32"), ("d", "f64"), ("i", "i32"))
           for n in (2, 3, 4)}
# Scalar operand types a vector's element type takes in ``v * s`` (a literal always works).
VECTOR_SCALARS = {"f32": ("f32", "i32", "u32", "i64"), "f64": ("f64", "f32", "i32"),
                  "i32": ("i32",)}


@dataclass
class VecNew(Expr):
    """``vec3f(x, y, z)`` (components converted as an assignment would) or ``vec3f(s)``."""

    args: list[Expr]
    ty: str


@dataclass
class VecBin(Expr):
    """``a op b`` component by component: two vectors of one type, or a vector and a scalar
    (either side) broadcast to every component."""

    op: str
    left: Expr
    right: Expr
    ty: str


@dataclass
class VecNeg(Expr):
    operand: Expr
    ty: str


@dataclass
class VecFn(Expr):
    """``dot(a, b)``, ``length_sq(v)`` or ``length(v)``: a scalar of the element type."""

    fn: str
    args: list[Expr]
    ty: str


@dataclass
class Component(Expr):
    """``v.x`` ... ``v.w``."""

    operand: Expr
    index: int
    ty: str


# Complex types: their part type (docs/language.md, "Complex numbers").
COMPLEX = {"complex64": "f32", "complex128": "f64"}
# Real operand types that promote to each complex type (i64 is refused; a literal always works).
COMPLEX_SCALARS = {"complex64": ("f32",), "complex128": ("f64", "f32", "i32", "u32")}


@dataclass
class CNew(Expr):
    """``complex64(re, im)``: the parts converted as a cast converts."""

    args: list[Expr]
    ty: str


@dataclass
class CBin(Expr):
    """``a op b`` of complex numbers (``+ - * /``), or with a real operand on either side,
    promoted to ``x + 0j``."""

    op: str
    left: Expr
    right: Expr
    ty: str


@dataclass
class CUnary(Expr):
    """``-z`` or ``z.conjugate()``."""

    op: str  # "-" or "conjugate"
    operand: Expr
    ty: str


@dataclass
class CReal(Expr):
    """``z.real``, ``z.imag`` or ``abs(z)``: a real of the part type."""

    fn: str  # "real", "imag", "abs"
    operand: Expr
    ty: str


class Stmt:
    pass


@dataclass
class Decl(Stmt):
    name: str
    ty: str
    value: Expr


@dataclass
class Assign(Stmt):
    name: str
    value: Expr


@dataclass
class AugAssign(Stmt):
    name: str
    op: str
    value: Expr
    ty: str  # the type the operation is computed in
    target_ty: str


@dataclass
class ComponentAssign(Stmt):
    """``v.y = value`` into a vector local."""

    name: str
    index: int
    value: Expr


@dataclass
class If(Stmt):
    cond: Expr
    body: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)


@dataclass
class For(Stmt):
    var: str
    ty: str
    args: list[Expr]  # range(...) arguments, 1 to 3
    body: list[Stmt]
    guard: str
    counter: str | None = None  # for counter, var in enumerate(range(...)): an i64 from 0


@dataclass
class TupleFor(Stmt):
    """``for var in (c1, c2, c3):`` over integer constants, unrolled by the transpiler."""

    var: str
    items: list[int]
    body: list[Stmt]


@dataclass
class MultiAssign(Stmt):
    """``x, y = e1, e2``: every value is computed before any local is assigned."""

    names: list[str]
    values: list[Expr]


@dataclass
class DivmodAssign(Stmt):
    """``q, r = divmod(left, right)``: Python's floor division and modulo in ``ty``."""

    q: str
    r: str
    left: Expr
    right: Expr
    ty: str  # the operands' common type


@dataclass
class While(Stmt):
    counter: str
    bound: Expr  # the loop runs while counter < bound (and cond)
    cond: Expr | None
    body: list[Stmt]
    guard: str


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    pass


@dataclass
class Store(Stmt):
    array: str
    slot: int
    ty: str
    value: Expr


def input_name(layout: str, t: str, slot: int) -> str:
    """The input array of element type ``t`` and slot ``slot`` (see Kernel.layout)."""
    return f"in_{t}" if layout == "2d" else f"{'ab'[slot]}_{t}"


def walk(node):
    """Every node of a statement list or tree, depth first."""
    if isinstance(node, list):
        for x in node:
            yield from walk(x)
    elif isinstance(node, (Expr, Stmt)):
        yield node
        for f in node.__dataclass_fields__:
            yield from walk(getattr(node, f))


@dataclass
class Kernel:
    """One generated kernel and the launch it is fuzzed with."""

    name: str
    layout: str  # "2d": in_T[i, k], out_T[i, k];  "1d": a_T[i], b_T[i], o_T[i]
    types: tuple[str, ...]  # element types of the arrays
    n_in: int  # input slots per type
    n_out: int  # output slots per type
    body: list[Stmt]
    n: int  # elements (the extent of every array)
    block: int
    grid: int
    input_seed: int
    known_bugs: tuple[str, ...] = ()  # which PATTERNS (past or open bugs) this kernel contains
    records: object = None  # records.Records: structs, tables, device functions (or None)

    def arrays(self) -> list[tuple[str, str, bool]]:
        """(name, element type, writable) of every array parameter, in order."""
        out = []
        for t in self.types:
            if self.layout == "2d":
                out.append((f"in_{t}", t, False))
            else:
                out.extend((f"{c}_{t}", t, False) for c in "ab"[: self.n_in])
        for t in self.types:
            if self.layout == "2d":
                out.append((f"out_{t}", t, True))
            else:
                out.append((f"o_{t}", t, True))
        if self.records is not None:
            out += self.records.arrays()  # 1-D arrays of structs
        return out

    def input_name(self, t: str, slot: int) -> str:
        return input_name(self.layout, t, slot)

    def output_name(self, t: str) -> str:
        return f"out_{t}" if self.layout == "2d" else f"o_{t}"


# ---- values ------------------------------------------------------------------------------------

F32_MAX = float(np.finfo(np.float32).max)
EDGE_INTS = {
    "i32": [0, 1, -1, 2, -2, 3, 7, -7, 31, 32, 33, 63, 64, 65, 255, 1 << 16, -(1 << 16),
            (1 << 31) - 1, -(1 << 31), -(1 << 31) + 1, (1 << 31) - 2, 100, -100],
    "i64": [0, 1, -1, 2, -2, 3, -7, 31, 32, 63, 64, 65, (1 << 31) - 1, -(1 << 31), 1 << 31,
            1 << 32, -(1 << 32), (1 << 53) + 1, (1 << 63) - 1, -(1 << 63), -(1 << 63) + 1, 1000],
    "u32": [0, 1, 2, 3, 7, 31, 32, 33, 64, 255, 1 << 16, (1 << 31) - 1, 1 << 31, (1 << 32) - 1,
            (1 << 32) - 2, 1000],
}
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 0.1, -0.1, 1 / 3,
               math.nan, math.inf, -math.inf, 2.0 ** 24, 2.0 ** 24 + 2, 2.0 ** 31, -2.0 ** 31,
               2147483520.0, 2.0 ** 32, 4294967040.0, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64,
               1e30, -1e30, 1e-30, 7.0, -7.0, 100.0, 1e10]
EDGE_F32 = [F32_MAX, -F32_MAX, float(np.finfo(np.float32).tiny), 1e-45, -1e-45, 3e-39]
EDGE_F64 = [1.7976931348623157e308, -1.7976931348623157e308, 2.2250738585072014e-308, 5e-324,
            2.0 ** 53, 2.0 ** 53 + 2, 9007199254740993.0, 1e300, -1e300, 1e-300]


def edge_values(t: str) -> list:
    if t in INTS:
        return EDGE_INTS[t]
    return EDGE_FLOATS + (EDGE_F32 if t == "f32" else EDGE_F64)


def random_inputs(kernel: Kernel) -> dict[str, np.ndarray]:
    """The input arrays of a case: half edge values, half random (seeded by the case)."""
    rng = np.random.default_rng(kernel.input_seed)
    out = {}
    shape = (kernel.n, kernel.n_in) if kernel.layout == "2d" else (kernel.n,)
    for name, t, writable in kernel.arrays():
        if writable:
            continue
        if kernel.records is not None and kernel.records.is_struct(t):
            from .records import random_struct_array

            out[name] = random_struct_array(kernel.records, t, kernel.n, rng)
            continue
        size = int(np.prod(shape))
        edges = edge_values(t)
        pick = rng.integers(0, len(edges), size)
        values = []
        for k in range(size):
            r = rng.random()
            if r < 0.5:
                values.append(edges[pick[k]])
            elif t in INTS:
                lo, hi = INT_RANGE[t]
                values.append(int(rng.integers(-50, 51)) if r < 0.75 and t != "u32" else
                              int(rng.integers(0, 101)) if r < 0.75 else
                              int(rng.integers(lo, hi, endpoint=True, dtype=np.int64
                                               if t != "u32" else np.uint64)))
            else:
                if r < 0.75:
                    values.append(float(rng.normal(0, 10)))
                else:
                    values.append(float(rng.choice([-1, 1]) * 2.0 ** rng.uniform(-60, 60)))
        arr = np.array(values, dtype=object)
        if t in INTS:
            arr = np.array([int(v) for v in values], dtype=NUMPY[t])
        else:
            with np.errstate(over="ignore"):
                arr = np.array(values, dtype=np.float64).astype(NUMPY[t])
        out[name] = arr.reshape(shape)
    return out


OUTPUT_SENTINEL = {"f32": -7.25, "f64": -7.25, "i32": -12345, "i64": -12345, "u32": 12345}


def initial_outputs(kernel: Kernel) -> dict[str, np.ndarray]:
    shape = (kernel.n, kernel.n_out) if kernel.layout == "2d" else (kernel.n,)
    out = {}
    for name, t, writable in kernel.arrays():
        if not writable:
            continue
        if kernel.records is not None and kernel.records.is_struct(t):
            from .records import initial_struct_array

            out[name] = initial_struct_array(kernel.records, t, kernel.n)
        else:
            out[name] = np.full(shape, OUTPUT_SENTINEL[t], dtype=NUMPY[t])
    return out


# ---- drawers -----------------------------------------------------------------------------------


class RandomDrawer:
    """Choices from a seeded ``random.Random`` (fast; used by tools/fuzz_gpu.py)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, seq):
        return seq[self.integer(0, len(seq) - 1)]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def real(self) -> float:
        return self.rng.random()


class HypothesisDrawer(RandomDrawer):
    """Choices drawn from Hypothesis, which can then shrink a failing kernel.

    Every choice shrinks toward its first option and ``chance`` toward False, so a shrunk kernel
    has fewer statements, shallower expressions and simpler leaves."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def chance(self, p: float) -> bool:
        return self.draw(self.st.integers(0, 999)) >= 1000 - int(p * 1000)

    def real(self) -> float:
        return self.draw(self.st.integers(0, 10**6)) / 10**6


# ---- the generator -----------------------------------------------------------------------------

# math functions by name: (arity, exact) — "exact" ones are correctly rounded on every backend.
MATH = {
    "sqrt": (1, True), "floor": (1, True), "ceil": (1, True), "trunc": (1, True),
    "fabs": (1, True), "copysign": (2, True), "fmod": (2, True),
    "exp": (1, False), "log": (1, False), "sin": (1, False), "cos": (1, False),
    "tanh": (1, False), "atan": (1, False), "atan2": (2, False), "hypot": (2, False),
    "pow": (2, False), "expm1": (1, False), "log1p": (1, False), "log2": (1, False),
    "exp2": (1, False), "cbrt": (1, False), "erf": (1, False),
}
PREDICATES = ("isnan", "isinf", "isfinite")
# f32 literals that lie exactly halfway between two float32 values: the documented value is the
# Python float rounded to f32 (ties to even); see test_fuzz_regressions.
F32_MIDPOINTS = [1.0000000596046448, -1.0000000596046448, 2.0000001192092896, 1.5000000596046448]
# Python floats beyond float32 (inf, or 0 when tiny, in an f32 context), which NVRTC refuses as
# "floating constant is out of range" when written as decimal float literals.
F32_OUT_OF_RANGE = [1e300, -1e300, 3.5e38, 1e-50]

# Patterns that once broke a backend, tagged on the kernels that contain them.  Those of bugs still
# open are generated only with ``Config(known_bugs=True)`` (so that a known bug does not drown
# every other finding); fixed ones are generated always, as regression coverage.
PATTERNS = {
    "f32-literal-rounding": "a float literal at a float32 tie (fixed: const_code emits the f32 value)",
    "f32-literal-out-of-range": "a literal beyond float32 in an f32 context (fixed: emitted as inf)",
    "negated-constant": "unary minus of a negative float constant (fixed: emitted as -(x))",
}
OPEN_BUGS: frozenset[str] = frozenset()


@dataclass
class Config:
    max_depth: int = 4
    max_statements: int = 9
    layout: str | None = None  # None: chosen at random
    straight: bool | None = None  # straight-line elementwise body (the 16-byte vector path)
    specials: bool = True  # thread_idx & co. (disables the uid-only entry point)
    math: bool = True
    known_bugs: bool = False  # also generate the patterns of bugs still open (OPEN_BUGS)
    # Loads at computed indices (Index), some out of bounds: the bounds checks, and the proofs
    # that drop them, against the reference.  Off by default, so that a seed gives the kernel it
    # gave before this option existed.
    indexing: bool = False
    # Bit intrinsics and bit casts (Bits, Bitcast).  Off by default, for the same reason.
    bits: bool = False
    # Tuples: divmod, tuple assignments, loops over constant tuples, enumerate(range(...))
    # (DivmodAssign, MultiAssign, TupleFor, For.counter).  Off by default, likewise.
    tuples: bool = False
    # Vector locals and arithmetic, dot, length_sq, length and components (VecNew, VecBin,
    # VecNeg, VecFn, Component, ComponentAssign).  Off by default, likewise.
    vectors: bool = False
    # Complex locals and arithmetic, .real, .imag, abs and conjugate (CNew, CBin, CUnary,
    # CReal).  Off by default, likewise.
    complex: bool = False
    # @gpu_struct locals, fields, device functions and arrays of structs; const_array tables;
    # Philox generators and their draws (tools/fuzz/records.py).  Off by default, likewise.
    structs: bool = False
    tables: bool = False
    rng: bool = False


class Generator:
    def __init__(self, drawer: RandomDrawer, config: Config | None = None):
        self.d = drawer
        self.c = config or Config()
        self.counter = 0
        self.known: set[str] = set()  # the PATTERNS this kernel contains
        self.rec = None  # records.RecordGen, with Config(structs/tables/rng)

    def allowed(self, pattern: str) -> bool:
        return self.c.known_bugs or pattern not in OPEN_BUGS

    # ---- kernel ----

    def kernel(self, name: str = "fuzz_kernel") -> Kernel:
        d, c = self.d, self.c
        straight = c.straight if c.straight is not None else d.chance(0.2)
        layout = c.layout or ("1d" if straight or d.chance(0.3) else "2d")
        self.straight = straight
        self.types = ("f32", "i32", "u32") if straight else TYPES
        self.layout = layout
        self.n_in = 2 if layout == "1d" else 3
        self.n_out = 1 if layout == "1d" else 2
        self.use_specials = c.specials and not straight and d.chance(0.25)
        # Half the indexing kernels guard every computed index (no lane fails; the proofs and
        # the loads under their guards are compared value by value); the others may fail.
        self.index_safe = c.indexing and d.chance(0.5)
        # Locals: declared up front so that every later statement may read them.
        self.locals: list[Var] = [Var("i", "i64")]
        self.items: list[Item] = []  # the variables of the tuple loops around this point
        self.vlocals: list[Var] = []  # vector locals, apart: scalar code never picks them
        self.clocals: list[Var] = []  # complex locals, likewise
        body: list[Stmt] = []
        for _ in range(d.integer(1, 4)):
            t = d.choice(TYPES)
            var = Var(self.fresh("v"), t)
            body.append(Decl(var.name, t, self.expr(t, 2, self.locals)))
            self.locals.append(var)
        if c.complex:
            for _ in range(d.integer(1, 2)):
                ct = d.choice(sorted(COMPLEX))
                var = Var(self.fresh("z"), ct)
                body.append(Decl(var.name, ct, self.complex_expr(ct, 2)))
                self.clocals.append(var)
        if c.vectors:
            for _ in range(d.integer(1, 3)):
                vt = d.choice(sorted(VECTORS))
                var = Var(self.fresh("v"), vt)
                body.append(Decl(var.name, vt, self.vector(vt, 2)))
                self.vlocals.append(var)
        self.guards: list[str] = []
        self.counters: list[str] = []
        self.loop_depth = 0
        if c.structs or c.tables or c.rng:
            from .records import RecordGen

            self.rec = RecordGen(self)
            body += self.rec.setup()
        for _ in range(d.integer(1, c.max_statements)):
            body.extend(self.statement(0))
        for t in self.types:
            for slot in range(self.n_out):
                if d.chance(0.8):
                    body.append(Store(self.output(t), slot, t, self.value_for(t, c.max_depth)))
        decls = [Decl(g, "i32", Cast("i32", Lit(0), "i32")) for g in self.guards + self.counters]
        n = d.integer(1, 70)
        block = d.choice([32, 64, 128, 7, 1])
        grid = -(-n // block) + (1 if d.chance(0.2) else 0)
        return Kernel(name, layout, self.types, self.n_in, self.n_out, decls + body, n, block,
                      grid, d.integer(0, 2**31 - 1), tuple(sorted(self.known)),
                      self.rec.r if self.rec else None)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def output(self, t: str) -> str:
        return f"out_{t}" if self.layout == "2d" else f"o_{t}"

    # ---- statements ----

    def statement(self, depth: int) -> list[Stmt]:
        d = self.d
        kinds = ["assign", "aug", "store"]
        if not self.straight and depth < 3:
            kinds += ["if", "if"]
            if depth < 2:
                kinds += ["for", "while"]
                if self.c.tuples:
                    kinds += ["tuple-for", "tuple-for"]
        if self.c.tuples:
            kinds += ["divmod", "divmod", "multi"]
        if self.c.vectors:
            kinds += ["vassign", "vassign", "vcomponent"]
        if self.c.complex:
            kinds += ["cassign", "cassign"]
        if self.rec is not None:
            kinds += self.rec.statement_kinds(depth)
        if not self.straight:
            if self.loop_depth:
                kinds += ["break", "continue"]
            if d.chance(0.05):
                kinds.append("return")
        kind = d.choice(kinds)
        assignable_locals = [v for v in self.locals if v.name != "i"]
        if kind in ("assign", "aug", "divmod", "multi") and len(assignable_locals) < (
                2 if kind in ("divmod", "multi") else 1):
            kind = "store"
        if kind == "divmod":
            return [self.divmod_assign(assignable_locals)]
        if kind == "multi":
            targets = self.distinct(assignable_locals, d.integer(2, 3))
            return [MultiAssign([v.name for v in targets],
                                [self.value_for(v.ty, self.c.max_depth - 1) for v in targets])]
        if kind == "tuple-for":
            return [self.tuple_loop(depth)]
        if kind.startswith("rec-"):
            return self.rec.statement(kind, depth)
        if kind == "cassign":
            var = d.choice(self.clocals)
            return [Assign(var.name, self.complex_expr(var.ty, self.c.max_depth))]
        if kind == "vassign":
            var = d.choice(self.vlocals)
            return [Assign(var.name, self.vector(var.ty, self.c.max_depth))]
        if kind == "vcomponent":
            var = d.choice(self.vlocals)
            elem, n = VECTORS[var.ty]
            return [ComponentAssign(var.name, d.integer(0, n - 1),
                                    self.value_for(elem, self.c.max_depth - 1))]
        if kind == "assign":
            var = d.choice(assignable_locals)
            return [Assign(var.name, self.value_for(var.ty, self.c.max_depth))]
        if kind == "aug":
            return [self.aug_assign(d.choice(assignable_locals))]
        if kind == "store":
            t = d.choice(self.types)
            return [Store(self.output(t), d.integer(0, self.n_out - 1), t,
                          self.value_for(t, self.c.max_depth))]
        if kind == "if":
            body = self.block(depth + 1)
            orelse = self.block(depth + 1) if d.chance(0.5) else []
            return [If(self.condition(3, allow_number=True), body, orelse)]
        if kind in ("break", "continue", "return"):
            node = {"break": Break, "continue": Continue, "return": Return}[kind]()
            return [If(self.condition(2, allow_number=True), [node])]
        if kind == "for":
            return self.for_loop(depth)
        return self.while_loop(depth)

    def distinct(self, pool: list[Var], count: int) -> list[Var]:
        """``count`` different locals of ``pool`` (at most as many as it has)."""
        pool = list(pool)
        out = []
        for _ in range(min(count, len(pool))):
            out.append(pool.pop(self.d.integer(0, len(pool) - 1)))
        return out

    def divmod_assign(self, pool: list[Var]) -> Stmt:
        """``q, r = divmod(a, b)`` into two locals, of a type both take without a cast."""
        d = self.d
        q, r = self.distinct(pool, 2)
        t = d.choice([t for t in TYPES if assignable(t, q.ty) and assignable(t, r.ty)])
        left, right = self.operands(t, 3, self.locals)
        if isinstance(left, Lit):
            left = self.expr(t, 2, self.locals)  # two literals would fold in Python
        if t in INTS:
            right = self.nonzero(right)
        return DivmodAssign(q.name, r.name, left, right, t)

    def vector(self, vt: str, depth: int) -> Expr:
        """A vector expression of type ``vt``."""
        d = self.d
        elem, n = VECTORS[vt]
        locals_ = [v for v in self.vlocals if v.ty == vt]
        if depth <= 0 or d.chance(0.3):
            if locals_ and d.chance(0.6):
                return d.choice(locals_)
            if d.chance(0.2):
                return VecNew([self.value_for(elem, 1)], vt)  # every component the same
            return VecNew([self.value_for(elem, max(depth - 1, 1)) for _ in range(n)], vt)
        kind = d.integer(0, 9)
        if kind < 5:
            op = d.choice(["+", "-", "*"])
            return VecBin(op, self.vector(vt, depth - 1), self.vector(vt, depth - 1), vt)
        if kind < 9:
            op = d.choice(["*", "*", "+", "-"])
            if d.chance(0.3):
                scalar: Expr = self.literal(elem)
                if elem in INTS and not isinstance(scalar.value, int):  # pragma: no cover
                    scalar = Lit(2)
            else:
                scalar = self.expr(d.choice(VECTOR_SCALARS[elem]), depth - 1, self.locals)
            v = self.vector(vt, depth - 1)
            if d.chance(0.3):
                return VecBin(op, scalar, v, vt)
            return VecBin(op, v, scalar, vt)
        return VecNeg(self.vector(vt, depth - 1), vt)

    def complex_expr(self, ct: str, depth: int) -> Expr:
        """A complex expression of type ``ct``."""
        d = self.d
        part = COMPLEX[ct]
        locals_ = [v for v in self.clocals if v.ty == ct]
        if depth <= 0 or d.chance(0.3):
            if locals_ and d.chance(0.6):
                return d.choice(locals_)
            n = d.choice([1, 2, 2, 2])
            return CNew([self.expr(d.choice(TYPES), max(depth - 1, 1), self.locals)
                         for _ in range(n)], ct)
        kind = d.integer(0, 9)
        if kind < 5:
            return CBin(d.choice(["+", "-", "*", "/"]), self.complex_expr(ct, depth - 1),
                        self.complex_expr(ct, depth - 1), ct)
        if kind < 8:
            scalar: Expr = (self.literal(part) if d.chance(0.3) else
                            self.expr(d.choice(COMPLEX_SCALARS[ct]), depth - 1, self.locals))
            z = self.complex_expr(ct, depth - 1)
            op = d.choice(["+", "-", "*", "/"])
            return CBin(op, scalar, z, ct) if d.chance(0.3) else CBin(op, z, scalar, ct)
        return CUnary(d.choice(["-", "conjugate"]), self.complex_expr(ct, depth - 1), ct)

    def vector_scalar(self, t: str, depth: int) -> Expr:
        """A scalar ``t`` from vectors: ``dot``, ``length_sq``, ``length`` or a component."""
        d = self.d
        vt = d.choice([vt for vt, (elem, _n) in VECTORS.items() if elem == t])
        n = VECTORS[vt][1]
        fns = ["dot", "dot", "length_sq", "component", "component"]
        if t in FLOATS:
            fns.append("length")
        fn = d.choice(fns)
        if fn == "component":
            return Component(self.vector(vt, depth - 1), d.integer(0, n - 1), t)
        args = [self.vector(vt, depth - 1) for _ in range(2 if fn == "dot" else 1)]
        return VecFn(fn, args, t)

    def tuple_loop(self, depth: int) -> Stmt:
        """``for off in (c1, ...):``: unrolled, so no break or continue in its body."""
        d = self.d
        items = [d.integer(1, 9) if d.chance(0.8) else d.choice([16, 31, 64])
                 for _ in range(d.integer(1, 4))]
        item = Item(max(items), name=self.fresh("t"))
        self.items.append(item)
        outer, self.loop_depth = self.loop_depth, 0
        body = self.block(depth + 1)
        self.loop_depth = outer
        self.items.remove(item)
        return TupleFor(item.name, items, body)

    def block(self, depth: int) -> list[Stmt]:
        out: list[Stmt] = []
        for _ in range(self.d.integer(1, 3)):
            out.extend(self.statement(depth))
        return out

    def aug_assign(self, var: Var) -> Stmt:
        d = self.d
        ops = ["+", "-", "*"]
        if var.ty in INTS:
            ops += ["<<", ">>", "&", "|", "^"] + ([] if self.straight else ["//", "%"])
        else:
            ops += ["/", "//", "%"]
        op = d.choice(ops)
        if op in ("<<", ">>"):
            count = self.shift_count()
            return AugAssign(var.name, op, count, var.ty, var.ty)
        # The operation's type must convert back: float results only into float locals.
        candidates = [t for t in TYPES if assignable(promote(var.ty, t), var.ty)]
        if op in ("&", "|", "^"):
            candidates = [t for t in candidates if promote(var.ty, t) in INTS]
        if op == "/":
            candidates = [t for t in candidates if promote(var.ty, t) in FLOATS]
        t = d.choice(candidates)
        value = self.expr(t, 2, self.locals)
        ty = promote(var.ty, t)
        if op in ("//", "%") and ty in INTS:
            value = self.nonzero(value)
        return AugAssign(var.name, op, value, ty, var.ty)

    def loop_body(self, depth: int, guard: str, extra: list[Stmt]) -> list[Stmt]:
        self.loop_depth += 1
        body = [*extra,
                AugAssign(guard, "+", Lit(1), "i32", "i32"),
                If(Compare([">"], [Var(guard, "i32"), Lit(GUARD_LIMIT)], ["i32"]), [Break()])]
        body += self.block(depth + 1)
        self.loop_depth -= 1
        return body

    def small_int(self, lo: int, span: int) -> Expr:
        """An i32 expression in lo..lo+span-1, from the data (Python's % keeps it in range)."""
        d = self.d
        if d.chance(0.4):
            return Lit(d.integer(lo, lo + span - 1))
        t = d.choice(TYPES[2:])
        base = self.expr(t, 1, self.locals)
        mod = Bin("%", base, Lit(span), t, t)
        value = Cast("i32", mod, "i32")
        if lo:
            value = Bin("+", value, Lit(lo), "i32", "i32")
        return value

    def for_loop(self, depth: int) -> list[Stmt]:
        d = self.d
        guard = self.fresh("g")
        self.guards.append(guard)
        var = self.fresh("j")
        shape = d.integer(0, 4)
        if shape == 0:
            args = [self.small_int(0, 5)]
        elif shape == 1:
            args = [self.small_int(-3, 5), self.small_int(-1, 7)]
        elif shape == 2:
            step = d.choice([1, 2, 3, -1, -2, -3])
            args = [self.small_int(-3, 9), self.small_int(-3, 9), Lit(step)]
        elif shape == 3:
            step = Bin("+", self.small_int(0, 3), Lit(1), "i32", "i32")
            if d.chance(0.5):
                step = Unary("-", step, "i32")
            args = [self.small_int(-3, 9), self.small_int(-3, 9), step]
        else:
            # Constant bounds next to the type's limit: Python's range never overflows.
            hi = (1 << 31) - 1
            step = d.integer(2, 7)
            args = [Lit(hi - d.integer(1, 12)), Lit(hi - d.integer(0, 1)), Lit(step)]
        ty = "i32"
        if d.chance(0.2):
            args = [Cast("i64", a, "i64") if not isinstance(a, Lit) else a for a in args]
            ty = "i64" if any(not isinstance(a, Lit) for a in args) else "i32"
        loop_var = Var(var, ty)
        # enumerate(range(...)): a counter, an i64 from 0, beside the range's variable.
        counter = Var(self.fresh("k"), "i64") if self.c.tuples and d.chance(0.3) else None
        scope = [loop_var] + ([counter] if counter else [])
        self.locals.extend(scope)
        body = self.loop_body(depth, guard, [])
        for v in scope:
            self.locals.remove(v)
        reset = Assign(guard, Cast("i32", Lit(0), "i32"))
        return [reset, For(var, ty, args, body, guard, counter.name if counter else None)]

    def while_loop(self, depth: int) -> list[Stmt]:
        d = self.d
        guard = self.fresh("g")
        counter = self.fresh("w")
        self.guards.append(guard)
        self.counters.append(counter)
        bound = self.small_int(0, 6)
        cond = self.condition(2, allow_number=False) if d.chance(0.4) else None
        step = AugAssign(counter, "+", Lit(1), "i32", "i32")
        body = self.loop_body(depth, guard, [step])
        return [Assign(guard, Cast("i32", Lit(0), "i32")),
                Assign(counter, Cast("i32", Lit(0), "i32")),
                While(counter, bound, cond, body, guard)]

    # ---- expressions ----

    def value_for(self, t: str, depth: int) -> Expr:
        """An expression assignable to a ``t`` target (a cast where the rules demand one)."""
        d = self.d
        src = d.choice([t, t, t, *TYPES])
        e = self.expr(src, depth, self.locals)
        if not assignable(src, t):
            e = Cast(t, e, t)
        return e

    def leaf(self, t: str, scope: list[Var]) -> Expr:
        d = self.d
        options = ["load", "load", "cast-literal"] if t in self.types else ["cast-literal"]
        vars_ = [v for v in scope if v.ty == t]
        if vars_:
            options += ["var", "var", "var"]
        if t == "i32" and self.use_specials:
            options.append("special")
        if self.c.indexing and t in self.types:
            options.append("index")
        kind = d.choice(options)
        if kind == "var":
            return d.choice(vars_)
        if kind == "load":
            return Load("", d.integer(0, self.n_in - 1), t)
        if kind == "index":
            return self.indexed_load(t)
        if kind == "special":
            return Special(d.choice(["thread_idx", "block_idx", "block_dim", "grid_dim"]))
        if self.items and d.chance(0.4):
            return Cast(t, d.choice(self.items), t)
        return Cast(t, self.literal(t), t)

    def shape(self) -> Shape:
        d = self.d
        array = input_name(self.layout, d.choice(self.types), d.integer(0, self.n_in - 1))
        return Shape(array, d.choice(["len", "shape"]))

    def index_expr(self) -> Expr:
        """An integer index near the arrays' extent: in range for most uids, out of range for
        some (negative, past the end, or wrapped), in the forms the bounds proofs reason about."""
        d = self.d
        i = Var("i", "i64")
        k = d.integer(1, 3)
        loops = [v for v in self.locals if v.name.startswith("j")]
        form = d.integer(0, 11)
        if form == 0:
            return Bin("+", i, Lit(k), "i64", "i64")
        if form == 1:
            return Bin("-", i, Lit(k), "i64", "i64")
        if form == 2:  # 32-bit arithmetic
            op = d.choice(["+", "-"])
            return Bin(op, Cast("i32", i, "i32"), Lit(k), "i32", "i32")
        if form == 3:  # wraps to 2**32 - k below k
            return Bin("-", Cast("u32", i, "u32"), Lit(k), "u32", "u32")
        if form == 4:
            op, c = d.choice([("*", 2), ("//", 2), (">>", 1), ("*", 3), ("//", 3)])
            return Bin(op, i, Lit(c), "i64", "i64")
        if form == 5:  # mirrored: in range for every uid below n
            last = Bin("-", self.shape(), Lit(1), "i64", "i64")
            return Bin("-", last, Bin("+", i, Lit(k - 1), "i64", "i64"), "i64", "i64")
        if form == 6 and loops:  # a loop counter (small, possibly negative), alone or plus i
            j = d.choice(loops)
            if d.chance(0.5):
                return Bin("+", j, Lit(0), j.ty, j.ty) if j.ty == "i64" else Cast("i64", j, "i64")
            return Bin("+", i, j, "i64", "i64")
        if form == 7:  # Python's % keeps it in 0..n-1 (the shape is positive)
            t = d.choice(INTS)
            base = self.expr(t, 1, self.locals)
            return Bin("%", Cast("i64", base, "i64"), self.shape(), "i64", "i64")
        if form == 8:  # clamped into range
            lo = Bin("-", i, Lit(k), "i64", "i64")
            last = Bin("-", self.shape(), Lit(1), "i64", "i64")
            return MinMax("min", [MinMax("max", [lo, Lit(0)], "i64"), last], "i64")
        if form == 9:  # from the data: any value, mostly far out of range
            t = d.choice(INTS)
            return Bin("+", Cast("i64", self.expr(t, 1, self.locals), "i64"), Lit(0), "i64",
                       "i64")
        return Bin(d.choice(["+", "-"]), i, Lit(k), "i64", "i64")

    def indexed_load(self, t: str) -> Expr:
        """``a[idx]``, or ``a[idx] if 0 <= idx < len(a) else c``: a guard the proofs may use,
        and sometimes ``a[idx + 1]`` under that guard, which it does not prove in range."""
        d = self.d
        slot = d.integer(0, self.n_in - 1)
        idx = self.index_expr()
        if not self.index_safe and d.chance(0.6):
            return Index(slot, idx, t)
        inner = idx
        if not self.index_safe and d.chance(0.4):
            inner = Bin(d.choice(["+", "-"]), idx, Lit(1), idx.ty, idx.ty)
        shape = Shape(input_name(self.layout, t, slot), d.choice(["len", "shape"]))
        guard = Compare(["<=", "<"], [Lit(0), idx, shape], [idx.ty, promote(idx.ty, "i64")])
        return Select(guard, Index(slot, inner, t), Cast(t, self.literal(t), t), t)

    def literal(self, t: str, nonneg: bool = False) -> Lit:
        """A literal that adopts type ``t`` (integer literals fit ``t``)."""
        d = self.d
        if t in INTS:
            lo, hi = INT_RANGE[t]
            if nonneg:
                lo = max(lo, 0)
            r = d.integer(0, 9)
            if r < 6:
                v = d.integer(max(lo, -9), min(hi, 9))
            elif r < 8:
                v = d.choice([x for x in EDGE_INTS[t] if lo <= x <= hi])
            else:
                v = d.integer(lo, hi)
            return Lit(int(v))
        r = d.integer(0, 9)
        if r < 3:
            return Lit(d.integer(-9, 9))  # an integer literal meeting a float
        if r < 7:
            pool = EDGE_FLOATS + (EDGE_F32 if t == "f32" else EDGE_F64)
            if t == "f32":
                if self.allowed("f32-literal-rounding"):
                    pool = pool + F32_MIDPOINTS
                if self.allowed("f32-literal-out-of-range"):
                    pool = pool + F32_OUT_OF_RANGE
            v = d.choice(pool)
            if t == "f32" and v in F32_MIDPOINTS:
                self.known.add("f32-literal-rounding")
            if t == "f32" and v in F32_OUT_OF_RANGE:
                self.known.add("f32-literal-out-of-range")
            return Lit(float(v))
        return Lit(float(round(d.real() * 200 - 100, d.integer(0, 6))))

    def typed_pair(self, t: str) -> tuple[str, str | None]:
        """Operand types (left, right) whose common type is ``t``; None means a literal."""
        d = self.d
        if t == "f64":
            return d.choice([("f64", "f64"), ("f64", d.choice(TYPES)), (d.choice(TYPES), "f64"),
                             ("f64", None), ("f32", "f64"), (d.choice(INTS), "float-literal")])
        if t == "f32":
            return d.choice([("f32", "f32"), ("f32", d.choice(INTS)), (d.choice(INTS), "f32"),
                             ("f32", None)])
        if t == "i64":
            return d.choice([("i64", "i64"), ("i64", "i32"), ("i32", "i64"), ("i32", "u32"),
                             ("u32", "i32"), ("i64", "u32"), ("u32", "i64"), ("i64", None)])
        return d.choice([(t, t), (t, None)])

    def operands(self, t: str, depth: int, scope, literal_ok: bool = True):
        """(left, right, common type) for a binary operator whose common type is ``t``."""
        d = self.d
        lt, rt = self.typed_pair(t)
        if rt is None and not literal_ok:
            rt = lt
        left = self.expr(lt, depth - 1, scope)
        if rt == "float-literal":
            lit = self.literal("f64")
            if not isinstance(lit.value, float):
                lit = Lit(float(lit.value) + 0.5)
            right: Expr = lit
        elif rt is None:
            right = (d.choice(self.items) if self.items and d.chance(0.6)
                     else self.literal(t, nonneg=(t == "u32")))
        else:
            right = self.expr(rt, depth - 1, scope)
        if d.chance(0.5):
            left, right = right, left
        if isinstance(left, Lit) and isinstance(right, Lit):  # pragma: no cover - never drawn
            right = self.expr(t, 0, scope)
        return left, right

    def nonzero(self, e: Expr) -> Expr:
        """An integer divisor that is never zero (Python's semantics would raise)."""
        d = self.d
        constant = e.operand if isinstance(e, Cast) and isinstance(e.operand, Lit) else e
        if isinstance(constant, Lit):
            # A constant zero divisor is a compile error, not a run-time one.
            if constant.value != 0:
                return e
            # Keep the cast: a bare `3` would adopt the other operand's type (fuzz seed 12743).
            return Cast(e.fn, Lit(3), e.ty) if isinstance(e, Cast) else Lit(3)
        r = d.integer(0, 9)
        if r < 5:
            return Select(Compare(["!="], [e, Lit(0)], [e.ty]), e, Lit(d.choice([1, 3, 7])), e.ty)
        if r < 9 or _literals_only(e):
            # Literals alone (`abs(u32(0))`) the transpiler folds: a zero is a compile error
            # (fuzz seed 23063 on the H200).
            return Bin("|", e, Lit(1), e.ty, e.ty)
        return e  # sometimes a real division by zero: both must raise KernelZeroDivisionError

    def shift_count(self) -> Expr:
        d = self.d
        if d.chance(0.4):
            return Lit(d.choice([0, 1, 2, 5, 31, 32, 33, 63, 64, 65, -1, -3, 100]))
        return self.expr(d.choice(INTS), 1, self.locals)

    def expr(self, t: str, depth: int, scope: list[Var]) -> Expr:
        if t == "bool":
            return self.condition(depth, allow_number=False)
        d = self.d
        if depth <= 0 or d.chance(0.25):
            return self.leaf(t, scope)
        kinds = ["arith", "arith", "arith", "cast", "unary", "minmax", "abs"]
        if t in FLOATS:
            kinds += ["div", "floordiv", "pow"]
            if self.c.math:
                kinds += ["math", "math"]
        else:
            kinds += ["floordiv", "shift", "bitwise", "bitwise", "pow"]
            if t == "i64":
                kinds += ["round", "int"]
        if not self.straight:
            kinds += ["select"]
        if self.c.bits:
            kinds += ["bits", "bits"] if t in INTS else []
            kinds += ["bitcast"] if self.bitcast_source(t) is not None else []
        if self.c.vectors and t in ("f32", "f64", "i32"):
            kinds += ["vector", "vector"]
        if self.c.complex and t in FLOATS:
            kinds += ["complex", "complex"]
        if self.rec is not None:
            kinds += self.rec.expr_kinds(t)
        kind = d.choice(kinds)
        if kind.startswith("rec-"):
            return self.rec.expr(kind, t, depth)
        if kind == "complex":
            ct = "complex64" if t == "f32" else "complex128"
            return CReal(d.choice(["real", "imag", "abs"]), self.complex_expr(ct, depth - 1), t)
        if kind == "vector":
            return self.vector_scalar(t, depth)
        if kind == "bits":
            return self.bits(t, depth, scope)
        if kind == "bitcast":
            src = self.bitcast_source(t)
            assert src is not None
            if t in FLOATS:  # integer bits to a float: any integer expression
                return Bitcast(self.expr(src, depth - 1, scope), t)
            # A float's bits: only of an input element, whose bits are fixed (a NaN computed
            # here has a payload that no two backends need agree on).
            return Bitcast(Load("", d.integer(0, self.n_in - 1), src), t)
        if kind == "arith":
            left, right = self.operands(t, depth, scope)
            return Bin(d.choice(["+", "-", "*"]), left, right, t, t)
        if kind == "div":
            left, right = self.operands(t, depth, scope)
            return Bin("/", left, right, t, t)
        if kind == "floordiv":
            op = d.choice(["//", "%"])
            left, right = self.operands(t, depth, scope)
            if isinstance(left, Lit):
                left = self.expr(t, depth - 1, scope)  # two literals would fold in Python
            if t in INTS:
                if self.straight:
                    right = Lit(d.choice([1, 2, 3, 7, 16]) * (1 if t == "u32" else
                                                              d.choice([1, -1])))
                    if left.ty != t:
                        # A literal adopts the typed side's type: `u32 // 1` is u32, so make
                        # the left side the type this expression promises (fuzz seed 4516).
                        left = Cast(t, left, t)
                else:
                    right = self.nonzero(right)
            return Bin(op, left, right, t, t)
        if kind == "pow":
            base = self.expr(t, depth - 1, scope)
            if t in INTS:
                return Bin("**", base, Lit(d.integer(0, 5)), t, t)
            if d.chance(0.6):
                return Bin("**", base, Lit(d.choice([0, 1, 2, 2, 3, -1, -2])), t, t)
            exponent = self.literal(t) if d.chance(0.5) else self.expr(t, depth - 1, scope)
            return Math("pow", [base, exponent], t, t)
        if kind == "shift":
            base = self.expr(t, depth - 1, scope)
            return Bin(d.choice(["<<", ">>"]), base, self.shift_count(), t, t)
        if kind == "bitwise":
            left, right = self.operands(t, depth, scope)
            return Bin(d.choice(["&", "|", "^"]), left, right, t, t)
        if kind == "unary":
            op = d.choice(["-", "~"] if t in INTS else ["-"])
            operand = self.expr(t, depth - 1, scope)
            if t in FLOATS and is_constant(operand):
                # `-f32(-1.5)` (and `-(f32(-2) ** 1)`...) was emitted as `--1.5f`.
                if not self.allowed("negated-constant"):
                    return operand
                self.known.add("negated-constant")
            return Unary(op, operand, t)
        if kind == "cast":
            src = d.choice(TYPES + ("bool",))
            fn = t
            if t == "i64" and d.chance(0.3):
                fn = "int"
            if t == "f64" and d.chance(0.3):
                fn = "float"
            return Cast(fn, self.expr(src, depth - 1, scope), t)
        if kind == "minmax":
            args = list(self.operands(t, depth, scope))
            if d.chance(0.2):
                args.append(self.expr(t, depth - 1, scope))
            return MinMax(d.choice(["min", "max"]), args, t)
        if kind == "abs":
            return Abs(self.expr(t, depth - 1, scope), t)
        if kind == "round":
            return Round(self.expr(d.choice(FLOATS), depth - 1, scope))
        if kind == "int":
            return Cast("int", self.expr(d.choice(FLOATS), depth - 1, scope), "i64")
        if kind == "select":
            left, right = self.operands(t, depth, scope)
            return Select(self.condition(depth - 1, allow_number=False), left, right, t)
        # math
        fn = d.choice(sorted(MATH))
        arity = MATH[fn][0]
        if arity == 1:
            src = t if t == "f32" else d.choice(["f64", "f64", *INTS])
            return Math(fn, [self.expr(src, depth - 1, scope)], t, t)
        left, right = self.operands(t, depth, scope)
        return Math(fn, [left, right], t, t)

    def bitcast_source(self, t: str) -> str | None:
        """The type a ``bitcast(x, t)`` reads its bits from, or None if there is none here."""
        d = self.d
        if t == "f32":
            return d.choice(["i32", "u32"])
        if t == "f64":
            return "i64"
        src = {"i32": "f32", "u32": "f32", "i64": "f64"}[t]
        return src if src in self.types else None

    def bits(self, t: str, depth: int, scope: list[Var]) -> Expr:
        """A bit intrinsic whose result is a ``t``."""
        d = self.d
        if t == "i32" and d.chance(0.7):
            fn = d.choice(["popc", "clz", "ctz", "ffs"])
            argty = d.choice(INTS)
            return Bits(fn, [self.expr(argty, depth - 1, scope)], "i32", argty)
        if t == "u32" and d.chance(0.6):
            fn = d.choice(["byte_perm", "funnelshift_l", "funnelshift_lc", "funnelshift_r",
                           "funnelshift_rc"])
            # Words of at most 32 bits are taken as their bits: u32, or now and then i32.
            words = [self.expr(d.choice(["u32", "u32", "i32"]), depth - 1, scope)
                     for _ in range(2)]
            if fn == "byte_perm":
                last: Expr = (Lit(d.integer(0, 0xFFFF)) if d.chance(0.6)
                              else self.expr("u32", depth - 1, scope))
            else:
                last = (Lit(d.choice([0, 1, 8, 13, 31, 32, 33, 40]))
                        if d.chance(0.5) else self.expr(d.choice(["u32", "i32"]), depth - 1,
                                                        scope))
            return Bits(fn, [*words, last], "u32", "u32")
        return Bits("brev", [self.expr(t, depth - 1, scope)], t, t)

    def condition(self, depth: int, allow_number: bool) -> Expr:
        d = self.d
        kinds = ["compare", "compare", "compare"]
        if depth > 0:
            kinds += ["not", "chain"] + ([] if self.straight else ["boolop"])
        if allow_number:
            kinds.append("number")
        kinds += ["bool-cast", "predicate"]
        kind = d.choice(kinds)
        if kind == "compare" or kind == "chain":
            count = 3 if kind == "chain" else 2
            t = d.choice(TYPES)
            operands = [self.expr(d.choice(TYPES) if d.chance(0.5) else t, max(depth - 1, 0),
                              self.locals)]
            for _ in range(count - 1):
                if d.chance(0.2) and not isinstance(operands[-1], Lit):
                    # In a chain the literal also meets the next operand: a float literal must
                    # then suit f32 as well as f64.
                    t = "f32" if operands[-1].ty in FLOATS else operands[-1].ty
                    operands.append(self.literal(t, nonneg=operands[-1].ty == "u32"))
                else:
                    operands.append(self.expr(d.choice(TYPES), max(depth - 1, 0), self.locals))
            optys = []
            for a, b in itertools.pairwise(operands):
                optys.append(with_literal(a.ty, b) if isinstance(b, Lit) else
                             with_literal(b.ty, a) if isinstance(a, Lit) else promote(a.ty, b.ty))
            ops = [d.choice(["<", "<=", ">", ">=", "==", "!="]) for _ in optys]
            return Compare(ops, operands, optys)
        if kind == "boolop":
            values = [self.condition(depth - 1, False) for _ in range(d.integer(2, 3))]
            return BoolOp(d.choice(["and", "or"]), values)
        if kind == "not":
            return Not(self.condition(depth - 1, allow_number))
        if kind == "number":
            return self.expr(d.choice(TYPES), max(depth - 1, 0), self.locals)
        if kind == "bool-cast":
            return Cast("bool", self.expr(d.choice(TYPES), max(depth - 1, 0), self.locals), "bool")
        t = d.choice(FLOATS)
        return Math(d.choice(PREDICATES), [self.expr(t, max(depth - 1, 0), self.locals)], "bool",
                    t)


def is_constant(e: Expr) -> bool:
    """No variable, load or thread index inside: the checker may fold it to one constant."""
    if isinstance(e, (Var, Load, Index, Shape, Special)):
        return False
    for value in vars(e).values():
        items = value if isinstance(value, list) else [value]
        if any(isinstance(x, Expr) and not is_constant(x) for x in items):
            return False
    return True


# ---- printing ----------------------------------------------------------------------------------


def literal_text(value: int | float) -> str:
    if isinstance(value, int):
        return f"({value})" if value < 0 else str(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "(-math.inf)"
    text = repr(value)
    return f"({text})" if text.startswith("-") else text


class Printer:
    def __init__(self, kernel: Kernel):
        self.k = kernel

    def expr(self, e: Expr) -> str:
        method = getattr(self, "p_" + type(e).__name__, None)
        if method is None:
            from .records import print_expr

            return print_expr(self, e)
        return method(e)

    def p_Lit(self, e: Lit) -> str:
        return literal_text(e.value)

    def p_Item(self, e: Item) -> str:
        return e.name

    def p_Var(self, e: Var) -> str:
        return e.name

    def p_Load(self, e: Load) -> str:
        if self.k.layout == "2d":
            return f"in_{e.ty}[i, {e.slot}]"
        return f"{self.k.input_name(e.ty, e.slot)}[i]"

    def p_Index(self, e: Index) -> str:
        if self.k.layout == "2d":
            return f"in_{e.ty}[{self.expr(e.index)}, {e.slot}]"
        return f"{self.k.input_name(e.ty, e.slot)}[{self.expr(e.index)}]"

    def p_Shape(self, e: Shape) -> str:
        return f"len({e.array})" if e.spelling == "len" else f"{e.array}.shape[0]"

    def p_Special(self, e: Special) -> str:
        return f"{e.name}.x"

    def p_Bin(self, e: Bin) -> str:
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def p_Unary(self, e: Unary) -> str:
        return f"({e.op}{self.expr(e.operand)})"

    def p_Compare(self, e: Compare) -> str:
        parts = [self.expr(e.operands[0])]
        for op, x in zip(e.ops, e.operands[1:]):
            parts += [op, self.expr(x)]
        return "(" + " ".join(parts) + ")"

    def p_BoolOp(self, e: BoolOp) -> str:
        return "(" + f" {e.op} ".join(self.expr(v) for v in e.values) + ")"

    def p_Not(self, e: Not) -> str:
        return f"(not {self.expr(e.operand)})"

    def p_Select(self, e: Select) -> str:
        return f"({self.expr(e.then)} if {self.expr(e.cond)} else {self.expr(e.orelse)})"

    def p_Cast(self, e: Cast) -> str:
        return f"{e.fn}({self.expr(e.operand)})"

    def p_Math(self, e: Math) -> str:
        return f"math.{e.fn}({', '.join(self.expr(a) for a in e.args)})"

    def p_MinMax(self, e: MinMax) -> str:
        return f"{e.fn}({', '.join(self.expr(a) for a in e.args)})"

    def p_Abs(self, e: Abs) -> str:
        return f"abs({self.expr(e.operand)})"

    def p_Round(self, e: Round) -> str:
        return f"round({self.expr(e.operand)})"

    def p_VecNew(self, e: VecNew) -> str:
        return f"{e.ty}({', '.join(self.expr(a) for a in e.args)})"

    def p_VecBin(self, e: VecBin) -> str:
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def p_VecNeg(self, e: VecNeg) -> str:
        return f"(-{self.expr(e.operand)})"

    def p_VecFn(self, e: VecFn) -> str:
        return f"{e.fn}({', '.join(self.expr(a) for a in e.args)})"

    def p_Component(self, e: Component) -> str:
        return f"{self.expr(e.operand)}.{'xyzw'[e.index]}"

    def p_CNew(self, e: CNew) -> str:
        return f"{e.ty}({', '.join(self.expr(a) for a in e.args)})"

    def p_CBin(self, e: CBin) -> str:
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def p_CUnary(self, e: CUnary) -> str:
        if e.op == "-":
            return f"(-{self.expr(e.operand)})"
        return f"{self.expr(e.operand)}.conjugate()"

    def p_CReal(self, e: CReal) -> str:
        if e.fn == "abs":
            return f"abs({self.expr(e.operand)})"
        return f"{self.expr(e.operand)}.{e.fn}"

    def p_Bits(self, e: Bits) -> str:
        return f"{e.fn}({', '.join(self.expr(a) for a in e.args)})"

    def p_Bitcast(self, e: Bitcast) -> str:
        return f"bitcast({self.expr(e.operand)}, {e.ty})"

    def statements(self, stmts: list[Stmt], indent: int) -> list[str]:
        out = []
        pad = "    " * indent
        for s in stmts:
            if isinstance(s, Decl):
                out.append(f"{pad}{s.name}: {s.ty} = {self.expr(s.value)}")
            elif isinstance(s, Assign):
                out.append(f"{pad}{s.name} = {self.expr(s.value)}")
            elif isinstance(s, AugAssign):
                out.append(f"{pad}{s.name} {s.op}= {self.expr(s.value)}")
            elif type(s) is Store:  # not records.SStore, an element of a struct array
                index = f"i, {s.slot}" if self.k.layout == "2d" else "i"
                out.append(f"{pad}{s.array}[{index}] = {self.expr(s.value)}")
            elif isinstance(s, If):
                out.append(f"{pad}if {self.expr(s.cond)}:")
                out += self.statements(s.body, indent + 1)
                if s.orelse:
                    out.append(f"{pad}else:")
                    out += self.statements(s.orelse, indent + 1)
            elif isinstance(s, For):
                args = ", ".join(self.expr(a) for a in s.args)
                if s.counter:
                    out.append(f"{pad}for {s.counter}, {s.var} in enumerate(range({args})):")
                else:
                    out.append(f"{pad}for {s.var} in range({args}):")
                out += self.statements(s.body, indent + 1)
            elif isinstance(s, TupleFor):
                items = ", ".join(str(x) for x in s.items) + ("," if len(s.items) == 1 else "")
                out.append(f"{pad}for {s.var} in ({items}):")
                out += self.statements(s.body, indent + 1)
            elif isinstance(s, ComponentAssign):
                out.append(f"{pad}{s.name}.{'xyzw'[s.index]} = {self.expr(s.value)}")
            elif isinstance(s, MultiAssign):
                values = ", ".join(self.expr(v) for v in s.values)
                out.append(f"{pad}{', '.join(s.names)} = {values}")
            elif isinstance(s, DivmodAssign):
                out.append(f"{pad}{s.q}, {s.r} = divmod({self.expr(s.left)}, "
                           f"{self.expr(s.right)})")
            elif isinstance(s, While):
                cond = f"{s.counter} < {self.expr(s.bound)}"
                if s.cond is not None:
                    cond = f"({cond}) and {self.expr(s.cond)}"
                out.append(f"{pad}while {cond}:")
                out += self.statements(s.body, indent + 1)
            elif isinstance(s, Break):
                out.append(f"{pad}break")
            elif isinstance(s, Continue):
                out.append(f"{pad}continue")
            elif isinstance(s, Return):
                out.append(f"{pad}return")
            else:
                from .records import print_stmt

                out += print_stmt(self, s, pad)
        return out


HEADER = '''\
"""Generated by tools/fuzz/generator.py: {name} (n={n}, block={block}, grid={grid}, seed={seed})."""
import math

from gpu_native import (CUDASlice, CUDASlice2D, CUDASliceMut, CUDASliceMut2D, FlatLayout1D,
                        Kernel1D, bitcast, block_dim, block_idx, brev, byte_perm, clz, complex64,
                        complex128, ctz, dot,
                        f32, f64, ffs, funnelshift_l, funnelshift_lc, funnelshift_r,
                        funnelshift_rc, gpu_kernel, grid_dim, i32, i64, length, length_sq, popc,
                        thread_idx, u32, vec2d, vec2f, vec2i, vec3d, vec3f, vec3i, vec4d, vec4f,
                        vec4i)

'''


def kernel_source(k: Kernel) -> str:
    """The module that defines the kernel, as a user would write it."""
    params = []
    for name, t, writable in k.arrays():
        flat = k.layout != "2d" or (k.records is not None and k.records.is_struct(t))
        kind = ("CUDASliceMut" if writable else "CUDASlice") + ("" if flat else "2D")
        params.append(f"{name}: {kind}[{t}]")
    printer = Printer(k)
    lines = [HEADER.format(name=k.name, n=k.n, block=k.block, grid=k.grid, seed=k.input_seed)]
    if k.records is not None:
        from . import records

        lines[0] = lines[0].rstrip("\n") + "\n" + records.IMPORTS + "import numpy as np\n\n"
        lines += records.module_source(printer, k.records)
    lines += ["@gpu_kernel(Kernel1D)",
             f"def {k.name}(",
             *(f"    {p}," for p in params),
             "):",
             "    i = FlatLayout1D.uid()"]
    lines += printer.statements(k.body, 1)
    return "\n".join(lines) + "\n"


def generate(drawer: RandomDrawer, config: Config | None = None,
             name: str = "fuzz_kernel") -> Kernel:
    return Generator(drawer, config).kernel(name)


def random_kernel(seed: int, config: Config | None = None) -> Kernel:
    """The kernel of one seed (tools/fuzz_gpu.py and the seeded CI test)."""
    return generate(RandomDrawer(seed), config, name=f"fuzz_{seed}")


def kernel_cases(config: Config | None = None):
    """The Hypothesis strategy: random valid kernels (with their launch and input seed)."""
    from hypothesis import strategies as st

    @st.composite
    def kernels(draw):
        return generate(HypothesisDrawer(draw), config)

    return kernels()


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]
