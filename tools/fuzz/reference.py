"""The reference semantics of generated kernels, written from ``docs/language.md``.

It interprets a :class:`~tools.fuzz.generator.Kernel` lane by lane in plain Python: integers are Python ints
wrapped to their width after every operation, ``//`` and ``%`` are Python's, shifts are clamped,
float-to-int conversions truncate and saturate (NaN gives 0), ``min``/``max`` follow Python's
argument order, ``f32`` arithmetic is IEEE single precision (NumPy ``float32`` scalars, one
rounding per operation) and ``f64`` is IEEE double.  It shares no code with the transpiler or the
simulator.

Where the documentation is silent, the GPU is the reference, and this module says so:

* float ``//`` and ``%`` follow CPython's algorithm (``float_floor_div``/``float_rem``) evaluated in
  the operand type; a zero divisor gives NaN (Python raises; CUDA's ``fmod(x, 0)`` is NaN);
* float ``/`` by zero is IEEE (inf or NaN), as on the GPU;
* ``round(x)`` of NaN or ±inf follows the float-to-int rule (0, or saturation) — Python raises.

Floats are compared with a *derived* tolerance, integers and booleans exactly.  Each value carries
an error bound ``e``: 0 when every backend must produce exactly this value (IEEE ``+ - * /``,
``sqrt``, ``floor``..., conversions), positive when a backend may legitimately differ, and
``inf`` when the value is unknown.  Two things make GPU floats legitimately differ:

* **contraction**: NVRTC fuses ``a*b + c`` into one ``fma`` (``-fmad=true`` is its default), so a
  value computed by a multiply carries its rounding error as a *fusion potential* ``p`` that an
  addition consuming it adds to its bound (conservatively also through variables, ``f32→f64``
  casts, negation, conditional expressions and ``min``/``max``).  ptxas also folds an ``f32``
  product scaled by ``±2**k`` (``1 <= |k| <= 3``) into one rounding (``FMUL.D8``); the generated
  code prevents that for a literal factor, not for one held in a variable (``docs/language.md``),
  so a product scaled so, whose value or result overflows or is subnormal, is unknown;
* **library math** (``exp``, ``sin``, ``pow``...) is accurate to a few ulps on the GPU and in NumPy,
  not correctly rounded: :data:`MATH_ULPS` ulps of the result.

Bounds propagate through arithmetic (first-order, with the rounding of each step), and a
discontinuous operation (comparison, float-to-int cast, ``floor``, ``//``...) whose operand's
interval straddles a discontinuity gives an *unknown* result.  A lane whose control flow depends
on an unknown value is *poisoned*: its outputs are not compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .generator import (
    COMPLEX,
    FLOATS,
    INT_RANGE,
    INTS,
    NUMPY,
    VECTORS,
    Abs,
    Assign,
    AugAssign,
    Bin,
    Bitcast,
    Bits,
    BoolOp,
    Break,
    Cast,
    CBin,
    CNew,
    Compare,
    Component,
    ComponentAssign,
    Continue,
    CReal,
    CUnary,
    Decl,
    DivmodAssign,
    For,
    If,
    Index,
    Item,
    Kernel,
    Lit,
    Load,
    Math,
    MinMax,
    MultiAssign,
    Not,
    Return,
    Round,
    Select,
    Shape,
    Special,
    Store,
    TupleFor,
    Unary,
    Var,
    VecBin,
    VecFn,
    VecNeg,
    VecNew,
    While,
    initial_outputs,
    promote,
    walk,
    with_literal,
)
from .records_reference import RecordsLane, collect_types, compare_structs, struct_value

INF = math.inf
BITS_OF = {"i32": 32, "u32": 32, "i64": 64}
EPS = {"f32": 2.0 ** -23, "f64": 2.0 ** -52}
FMAX = {"f32": float(np.finfo(np.float32).max), "f64": float(np.finfo(np.float64).max)}
# The smallest normal, and (at least) half the smallest subnormal: the most a rounding there can
# move.  For f64 that half is not a double (2.0 ** -1075 is 0.0, which made every underflowing f64
# product look unfusable: seed 45065), so the bound is the smallest subnormal itself.
FMIN = {"f32": 2.0 ** -126, "f64": 2.0 ** -1022}
HALF_TINY = {"f32": 2.0 ** -150, "f64": 2.0 ** -1074}
# GPU (CUDA math library) plus reference error, in ulps of the result, for inexact functions.
MATH_ULPS = {"f32": 10.0, "f64": 8.0}
EXACT_MATH = frozenset({"sqrt", "floor", "ceil", "trunc", "fabs", "copysign", "fmod"})
# Functions whose slope is at most this much, so an input error passes through scaled by it.
LIPSCHITZ = {"sin": 1.0, "cos": 1.0, "atan": 1.0, "tanh": 1.0, "erf": 1.2}


class V:
    """A value, its error bound ``e`` (0 exact, inf unknown) and its fusion potential ``p``."""

    __slots__ = ("e", "p", "v")

    def __init__(self, v, e: float = 0.0, p: float = 0.0):
        self.v, self.e, self.p = v, e, p

    def __repr__(self) -> str:
        return f"V({self.v!r}, e={self.e:g}, p={self.p:g})"

    @property
    def known(self) -> bool:
        return self.e == 0.0


class Poison(Exception):
    """The lane's behaviour depends on a value no backend is bound to."""


class LaneError(Exception):
    """The lane stops with a device error (integer division by zero)."""


class LaneFailure(Exception):
    """The lane stops at a statement with failing checks: any of them may be the one reported.

    C++ leaves the order of an expression's operands unspecified, so of the checks that fail in
    one statement the device may report any; a lane that fails records them all: the
    out-of-range ``indices``, and ``zerodiv`` when a divisor is zero."""

    def __init__(self, indices: set[int], zerodiv: bool):
        super().__init__(indices, zerodiv)
        self.indices, self.zerodiv = indices, zerodiv


class BreakLoop(Exception):
    pass


class ContinueLoop(Exception):
    pass


class ReturnLane(Exception):
    pass


# ---- scalar semantics ---------------------------------------------------------------------------


def wrap(v: int, t: str) -> int:
    bits = 64 if t == "i64" else 32
    v &= (1 << bits) - 1
    if t != "u32" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_to_float(v: int, t: str):
    """An integer rounded once to ``t`` (to nearest, ties to even), as ``cvt.rn`` does."""
    if t == "f64":
        return np.float64(float(v))  # Python rounds int → float correctly
    a = abs(v)
    if a >= 1 << 24:
        shift = a.bit_length() - 24
        q, rem = divmod(a, 1 << shift)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
        a = q << shift
    return np.float32(-float(a) if v < 0 else float(a))


def float_to_int(x: float, t: str) -> int:
    """Truncate toward zero, saturate at the type's range, NaN gives 0."""
    if x != x:
        return 0
    lo, hi = INT_RANGE[t]
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return int(x)


def ulp(x, t: str) -> float:
    x = abs(float(x))
    if not math.isfinite(x):
        return INF
    return float(np.spacing(NUMPY[t](x))) if x < FMAX[t] else float(np.spacing(NUMPY[t](FMAX[t])))


def _scales_a_product(x: V, c: V) -> bool:
    """``x`` came from a multiply (it has a fusion potential) and ``c`` is ``±2**k``,
    ``1 <= |k| <= 3``: ptxas may fold the two into one ``FMUL`` with a scale."""
    if not (x.p and c.known):
        return False
    f = abs(float(c.v))
    return f in (0.125, 0.25, 0.5, 2.0, 4.0, 8.0)


def bounded(r, e: float, t: str, p: float = 0.0) -> V:
    """``r`` with error bound ``e``: unknown when the bound is useless (non-finite, overflow)."""
    if e == 0.0:
        return V(r, 0.0, p)
    fr = float(r)
    if not (math.isfinite(fr) and math.isfinite(e)) or abs(fr) + e >= FMAX[t]:
        return V(r, INF, p)
    return V(r, e, p)


def py_divmod(a, b, t: str):
    """Python's float ``//`` and ``%`` (CPython's algorithm) in ``t``; by a zero divisor,
    NumPy's values (``a / b`` and NaN), where Python raises."""
    with np.errstate(all="ignore"):
        return _py_divmod(NUMPY[t], a, b)


def _py_divmod(ft, a, b):
    a, b = ft(a), ft(b)
    if b == 0:
        return ft(a / b), ft(np.fmod(a, b))
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod:
        if (b < 0) != (mod < 0):
            mod = ft(mod + b)
            div = ft(div - ft(1))
    else:
        mod = ft(math.copysign(0.0, float(b)))
    if div:
        floordiv = ft(np.floor(div))
        if div - floordiv > ft(0.5):
            floordiv = ft(floordiv + ft(1))
    else:
        floordiv = ft(math.copysign(0.0, float(a / b)))
    return floordiv, mod


def _erf(x: float) -> float:
    return math.erf(x) if not math.isnan(x) else math.nan


def _c_pow(x, y):
    """C's pow. NumPy's ``x ** 0.5`` is ``sqrt(x)``: NaN for -inf, -0.0 for -0.0 (fuzz seed 12265)."""
    if y == 0.5 and (x == -math.inf or x == 0):
        return type(x)(math.inf if x < 0 else 0.0)
    return np.power(x, y)


MATH64 = {
    "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "fabs": np.fabs,
    "copysign": np.copysign, "fmod": np.fmod, "exp": np.exp, "log": np.log, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "atan": np.arctan, "atan2": np.arctan2, "hypot": np.hypot,
    "pow": _c_pow, "expm1": np.expm1, "log1p": np.log1p, "log2": np.log2, "exp2": np.exp2,
    "cbrt": np.cbrt, "erf": lambda x: np.float64(_erf(float(x))),
}


# ---- the interpreter ----------------------------------------------------------------------------


@dataclass
class Expected:
    """What the reference says a launch produces."""

    outputs: dict[str, np.ndarray]  # object arrays of V (or None: not compared)
    poisoned: np.ndarray  # per lane: its outputs (and errors) are not compared
    error: str  # "none", "zerodiv" (some lane divides by zero) or "maybe"
    notes: list[str] = field(default_factory=list)
    # Lanes that index out of range: uid -> (the indices it may report, may it report zerodiv)
    index_errors: dict[int, tuple[set[int], bool]] = field(default_factory=dict)


class Lane(RecordsLane):
    """One thread's execution."""

    def __init__(self, kernel: Kernel, inputs: dict, uid: int, types: dict[str, str]):
        self.k = kernel
        self.inputs = inputs
        self.uid = uid
        self.types = types  # every local's declared type
        self.env: dict[str, V] = {"i": V(uid)}
        self.stores: dict[tuple[str, int], V] = {}
        # Kernels with computed indices finish a statement after a failing check (see
        # LaneFailure), collecting every failure; the others stop at the first.
        self.collect = False
        self.bad_indices: set[int] = set()
        self.bad_divisor = False

    def settle(self) -> None:
        """End of a statement's expressions: stop the lane if a check failed in them."""
        if self.bad_indices or self.bad_divisor:
            raise LaneFailure(set(self.bad_indices), self.bad_divisor)

    # ---- conversions ----

    def convert(self, x: V, src: str, dst: str) -> V:
        if src == dst or (src == "lit"):
            return x
        if dst == "bool":
            return self.truth(x, src)
        if src == "bool":
            x = V(int(bool(x.v)), x.e)
            src = "i32"
        if dst in INTS:
            if src in INTS:
                return V(wrap(x.v, dst), 0.0 if x.known else INF)
            if x.known:
                return V(float_to_int(float(x.v), dst))
            lo, hi = float(x.v) - x.e, float(x.v) + x.e
            if math.isnan(lo) or math.isnan(hi) or x.e == INF:
                return V(0, INF)
            a, b = float_to_int(lo, dst), float_to_int(hi, dst)
            return V(float_to_int(float(x.v), dst), 0.0 if a == b else INF)
        # to a float type
        if src in INTS:
            return V(int_to_float(x.v, dst), 0.0 if x.known else INF)
        if dst == "f64":
            return V(np.float64(x.v), x.e, x.p)  # f32 → f64 is exact; keep the fusion potential
        r = np.float32(x.v)
        return bounded(r, x.e + (ulp(r, "f32") if x.e else 0.0), "f32")

    def truth(self, x: V, t: str) -> V:
        """Python truthiness: a number is tested against zero."""
        if t == "bool":
            return x
        if t in INTS:
            return V(x.v != 0, x.e)
        if x.known:
            return V(bool(x.v != 0))
        if math.isfinite(float(x.v)) and abs(float(x.v)) > x.e:
            return V(True)
        return V(bool(x.v != 0), INF)

    def literal(self, lit: Lit, t: str) -> V:
        value = self.literal_value(lit)
        if t in INTS:
            return V(wrap(int(value), t))
        if isinstance(value, int):
            return V(int_to_float(value, t))
        return V(NUMPY[t](value))  # the Python float rounded to t (ties to even)

    def literal_value(self, lit: Lit) -> int | float:
        """A literal's value; a tuple loop's variable is the item of the current copy."""
        return self.env[lit.name].v if isinstance(lit, Item) else lit.value

    def operand(self, e, t: str) -> V:
        """Evaluate ``e`` and convert it to the operation type ``t``."""
        if isinstance(e, Lit):
            return self.literal(e, t)
        return self.convert(self.eval(e), e.ty, t)

    # ---- expressions ----

    def eval(self, e) -> V:
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Var(self, e: Var) -> V:
        return self.env[e.name]

    def e_Load(self, e: Load) -> V:
        arr = self.inputs[self.k.input_name(e.ty, e.slot)]
        return self.element(arr[self.uid, e.slot] if self.k.layout == "2d" else arr[self.uid],
                            e.ty)

    @staticmethod
    def element(value, t: str) -> V:
        """An array element as a reference value of type ``t``."""
        return V(int(value) if t in INTS else NUMPY[t](value))

    def e_Index(self, e: Index) -> V:
        idx = self.operand(e.index, e.index.ty)
        if not idx.known:
            raise Poison("an index is unknown")
        if not 0 <= idx.v < self.k.n:  # every array's first extent is n
            self.bad_indices.add(idx.v)
            return V(0 if e.ty in INTS else NUMPY[e.ty](0))
        arr = self.inputs[self.k.input_name(e.ty, e.slot)]
        return self.element(arr[idx.v, e.slot] if self.k.layout == "2d" else arr[idx.v], e.ty)

    def e_Shape(self, e: Shape) -> V:
        return V(self.k.n)

    def e_Special(self, e: Special) -> V:
        k = self.k
        return V({"thread_idx": self.uid % k.block, "block_idx": self.uid // k.block,
                  "block_dim": k.block, "grid_dim": k.grid}[e.name])

    def e_Bin(self, e: Bin) -> V:
        t = e.opty
        if e.op == "**":
            return self.power(e)
        if e.op in ("<<", ">>"):
            a = self.operand(e.left, t)
            n = self.operand(e.right, "i64" if isinstance(e.right, Lit) else e.right.ty)
            if not (a.known and n.known):
                return V(0, INF)
            bits = 64 if t == "i64" else 32
            if e.op == "<<":
                r = 0 if not 0 <= n.v < bits else wrap(a.v << n.v, t)
            else:
                r = (-1 if a.v < 0 else 0) if not 0 <= n.v < bits else a.v >> n.v
            return V(r)
        a = self.operand(e.left, t)
        if e.op in ("//", "%") and t in INTS:
            b = self.operand(e.right, t)
            if not b.known:
                raise Poison("a divisor is unknown")
            if b.v == 0:
                if not self.collect:
                    raise LaneError("zerodiv")
                self.bad_divisor = True
                return V(0)
            if not a.known:
                return V(0, INF)
            return V(wrap(a.v // b.v if e.op == "//" else a.v % b.v, t))
        b = self.operand(e.right, t)
        if t in INTS:
            if not (a.known and b.known):
                return V(0, INF)
            r = {"+": a.v + b.v, "-": a.v - b.v, "*": a.v * b.v, "&": a.v & b.v,
                 "|": a.v | b.v, "^": a.v ^ b.v}[e.op]
            return V(wrap(r, t))
        return self.float_op(e.op, a, b, t)

    def float_op(self, op: str, a: V, b: V, t: str) -> V:
        if op in ("+", "-"):
            r = a.v + b.v if op == "+" else a.v - b.v
            fused = a.p + b.p
            if a.known and b.known and not fused:
                return V(r)
            e = a.e + b.e
            if fused:
                e += fused + 2 * ulp(r, t)
            if a.e or b.e:
                e += ulp(r, t)
            return bounded(r, e if e == e else INF, t)
        if op in ("*", "/") and t == "f32" and (
                _scales_a_product(a, b) or (op == "*" and _scales_a_product(b, a))):
            r = a.v * b.v if op == "*" else a.v / b.v
            if not all(math.isfinite(float(v)) and abs(float(v)) >= FMIN[t]
                       for v in [x.v for x in (a, b) if x.p] + [r]):
                return V(r, INF)
        if op == "*":
            r = a.v * b.v
            # A rounding in the subnormal range moves the value by up to HALF_TINY.
            p = max(abs(float(r)) * EPS[t] / 2, HALF_TINY[t]) if math.isfinite(float(r)) else INF
            if a.known and b.known:
                return V(r, 0.0, p)
            e = abs(float(a.v)) * b.e + abs(float(b.v)) * a.e + a.e * b.e + ulp(r, t)
            return bounded(r, e if e == e else INF, t, p)
        if op == "/":
            r = a.v / b.v
            if a.known and b.known:
                return V(r)
            fb = abs(float(b.v))
            if not math.isfinite(fb) or fb <= 2 * b.e:
                return V(r, INF)
            e = (a.e + abs(float(r)) * b.e) / (fb - b.e) + ulp(r, t)
            return bounded(r, e if e == e else INF, t)
        # Python's // and %: after inlining, the prelude's `a - fmod(a, b)` and `m + b` may be
        # contracted with a product operand, so only exact, unfusable operands give exact results.
        if not (a.known and b.known) or a.p or b.p:
            return V(NUMPY[t](0), INF)
        floordiv, mod = py_divmod(a.v, b.v, t)
        return V(floordiv if op == "//" else mod)

    def power(self, e: Bin) -> V:
        t = e.opty
        base = self.operand(e.left, t)
        n = int(e.right.value)  # a constant integer exponent
        if t in INTS:
            return V(wrap(base.v ** n, t)) if base.known else V(0, INF)
        if n == 0:
            return V(NUMPY[t](1))
        if n == 1:
            return base
        if n == 2:
            return self.float_op("*", base, base, t)
        return self.math("pow", [base, V(NUMPY[t](n))], t)

    def e_Unary(self, e: Unary) -> V:
        x = self.operand(e.operand, e.ty)
        if e.ty in INTS:
            if not x.known:
                return V(0, INF)
            return V(wrap(-x.v if e.op == "-" else ~x.v, e.ty))
        return V(-x.v, x.e, x.p)

    def compare(self, op: str, a: V, b: V, t: str) -> V:
        fn = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
              ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}[op]
        result = bool(fn(a.v, b.v))
        if a.known and b.known:
            return V(result)
        if t in INTS or a.e == INF or b.e == INF:
            return V(result, INF)
        fa, fb = float(a.v), float(b.v)
        if math.isnan(fa) or math.isnan(fb) or abs(fa - fb) <= (a.e + b.e) * (1 + 1e-9):
            return V(result, INF)
        return V(result)

    def e_Compare(self, e: Compare) -> V:
        left = self.eval_typed(e.operands[0])
        result = V(True)
        for op, right_e, t in zip(e.ops, e.operands[1:], e.optys):
            right = self.eval_typed(right_e)
            c = self.compare(op, self.as_type(left, t), self.as_type(right, t), t)
            result = self.and_(result, c)
            if result.known and not result.v:
                return result  # a chained comparison stops at its first false part
            if not result.known and right_e is not e.operands[-1]:
                raise Poison("a chained comparison continues on an unknown part")
            left = right
        return result

    def eval_typed(self, e):
        """(expression, value) for an operand whose conversion depends on its partner."""
        return (e, None) if isinstance(e, Lit) else (e, self.eval(e))

    def as_type(self, item, t: str) -> V:
        e, value = item
        if value is None:
            return self.literal(e, t)
        return self.convert(value, e.ty, t)

    def and_(self, a: V, b: V) -> V:
        if a.known and not a.v:
            return a
        if b.known and not b.v:
            return b
        return V(bool(a.v and b.v), max(a.e, b.e))

    def e_BoolOp(self, e: BoolOp) -> V:
        for k, value in enumerate(e.values):
            x = self.eval(value)
            if not x.known:
                if k + 1 < len(e.values):
                    raise Poison("short-circuit on an unknown operand")
                return x
            if e.op == "and" and not x.v:
                return V(False)
            if e.op == "or" and x.v:
                return V(True)
        return V(e.op == "and")

    def e_Not(self, e: Not) -> V:
        x = self.truth(self.eval(e.operand), e.operand.ty)
        return V(not x.v, x.e)

    def e_Select(self, e: Select) -> V:
        c = self.eval(e.cond)
        if not c.known:
            raise Poison("a conditional expression's condition is unknown")
        return self.operand(e.then if c.v else e.orelse, e.ty)

    def e_Cast(self, e: Cast) -> V:
        target = {"int": "i64", "float": "f64"}.get(e.fn, e.fn)
        if isinstance(e.operand, Lit):
            value = self.literal_value(e.operand)
            if target in INTS:
                return V(wrap(int(value), target) if isinstance(value, int)
                         else float_to_int(value, target))
            if target == "bool":
                return V(bool(value))
            return self.literal(e.operand, target)
        return self.convert(self.eval(e.operand), e.operand.ty, target)

    def e_MinMax(self, e: MinMax) -> V:
        t = e.ty
        acc = self.operand(e.args[0], t)
        for arg in e.args[1:]:
            b = self.operand(arg, t)
            take = (b.v < acc.v) if e.fn == "min" else (b.v > acc.v)
            chosen = b if take else acc
            if acc.known and b.known:
                acc = V(chosen.v, 0.0, max(acc.p, b.p))
                continue
            if t in INTS:
                acc = V(chosen.v, INF)
                continue
            fa, fb = float(acc.v), float(b.v)
            if math.isnan(fa) or math.isnan(fb) or acc.e == INF or b.e == INF:
                acc = V(chosen.v, INF)
            elif abs(fa - fb) > (acc.e + b.e) * (1 + 1e-9):
                acc = V(chosen.v, chosen.e, max(acc.p, b.p))
            else:
                acc = V(chosen.v, max(acc.e, b.e), max(acc.p, b.p))
        return acc

    def e_Abs(self, e: Abs) -> V:
        x = self.operand(e.operand, e.ty)
        if e.ty == "u32":
            return x
        if e.ty in INTS:
            return V(wrap(abs(x.v), e.ty), x.e)
        # abs(x * x) + c may still be contracted to fma(x, x, c): the compiler knows x * x >= 0
        # and drops the abs (fuzz seed 8730).
        return V(abs(x.v), x.e, x.p)

    def e_Round(self, e: Round) -> V:
        x = self.eval(e.operand)
        t = e.operand.ty
        if t in INTS:
            return self.convert(x, t, "i64")
        r = float_to_int(float(np.rint(x.v)), "i64")
        if x.known:
            return V(r)
        if x.e == INF or math.isnan(float(x.v)):
            return V(r, INF)
        lo = float_to_int(float(np.rint(float(x.v) - x.e)), "i64")
        hi = float_to_int(float(np.rint(float(x.v) + x.e)), "i64")
        return V(r, 0.0 if lo == hi else INF)

    def e_Bits(self, e: Bits) -> V:
        """docs/language.md, "Bits, fences and block votes" (and CUDA's documentation of
        ``__byte_perm`` and ``__funnelshift_*``)."""
        if e.fn in ("popc", "clz", "ctz", "ffs", "brev"):
            x = self.operand(e.args[0], e.argty)
            width = BITS_OF[e.argty]
            bits = x.v & ((1 << width) - 1)
            if e.fn == "popc":
                r = bin(bits).count("1")
            elif e.fn == "clz":
                r = width - bits.bit_length()
            elif e.fn == "ctz":
                r = width if bits == 0 else (bits & -bits).bit_length() - 1
            elif e.fn == "ffs":
                r = 0 if bits == 0 else (bits & -bits).bit_length()
            else:
                r = wrap(int(format(bits, f"0{width}b")[::-1], 2), e.ty)
            return V(r, 0.0 if x.known else INF)
        # 32-bit words: an operand of at most 32 bits is taken as its bits.
        args = [self.eval(a) if not isinstance(a, Lit) else self.literal(a, "u32")
                for a in e.args]
        words = [a.v & 0xFFFFFFFF for a in args]
        known = all(a.known for a in args)
        if e.fn == "byte_perm":
            x, y, sel = words
            pool = (y << 32) | x  # bytes 0-3 of x, 4-7 of y
            r = 0
            for n in range(4):
                which = (sel >> (4 * n)) & 0x7  # bit 3 of each nibble ignored
                r |= ((pool >> (8 * which)) & 0xFF) << (8 * n)
        else:
            lo, hi, shift = words
            wide = (hi << 32) | lo
            amount = min(shift, 32) if e.fn.endswith("c") else shift & 31
            if e.fn.startswith("funnelshift_l"):
                r = ((wide << amount) >> 32) & 0xFFFFFFFF
            else:
                r = (wide >> amount) & 0xFFFFFFFF
        return V(r, 0.0 if known else INF)

    def e_Bitcast(self, e: Bitcast) -> V:
        x = self.eval(e.operand)
        src = e.operand.ty
        if src in INTS:
            width = BITS_OF[src]
            raw = np.array([x.v & ((1 << width) - 1)], np.uint64 if width == 64 else np.uint32)
            r = raw.view(NUMPY[e.ty])[0]
        else:
            raw = np.array([x.v], NUMPY[src]).view(np.uint64 if src == "f64" else np.uint32)
            r = wrap(int(raw[0]), e.ty)
        return V(r, 0.0 if x.known else INF)

    # ---- vectors (docs/language.md, "Vectors"): a list of component values ----

    def scalar_op(self, op: str, a: V, b: V, t: str) -> V:
        """One component's ``+ - *`` in ``t``: i32 wraps, floats round once (and may fuse)."""
        if t in INTS:
            if not (a.known and b.known):
                return V(0, INF)
            return V(wrap({"+": a.v + b.v, "-": a.v - b.v, "*": a.v * b.v}[op], t))
        return self.float_op(op, a, b, t)

    def e_VecNew(self, e: VecNew) -> list:
        elem, n = VECTORS[e.ty]
        parts = [self.operand(a, elem) for a in e.args]
        return parts * n if len(parts) == 1 else parts

    def e_VecBin(self, e: VecBin) -> list:
        elem, n = VECTORS[e.ty]
        left, right = [self.operand(x, elem) if x.ty not in VECTORS else self.eval(x)
                       for x in (e.left, e.right)]
        left = left if isinstance(left, list) else [left] * n  # a scalar is broadcast
        right = right if isinstance(right, list) else [right] * n
        return [self.scalar_op(e.op, a, b, elem) for a, b in zip(left, right)]

    def e_VecNeg(self, e: VecNeg) -> list:
        elem = VECTORS[e.ty][0]
        out = []
        for x in self.eval(e.operand):
            if elem in INTS:
                out.append(V(wrap(-x.v, elem), x.e))
            else:
                out.append(V(-x.v, x.e, x.p))
        return out

    def e_Component(self, e: Component) -> V:
        return self.eval(e.operand)[e.index]

    def e_VecFn(self, e: VecFn) -> V:
        """``dot`` sums the products x first: ``(a.x * b.x + a.y * b.y) + a.z * b.z``, each step
        rounded once (a product may fuse into the next sum); ``length_sq(v)`` is ``dot(v, v)``
        and ``length(v)`` its square root."""
        a = self.eval(e.args[0])
        b = self.eval(e.args[1]) if e.fn == "dot" else a
        t = e.ty
        acc = self.scalar_op("*", a[0], b[0], t)
        for x, y in zip(a[1:], b[1:]):
            acc = self.scalar_op("+", acc, self.scalar_op("*", x, y, t), t)
        if e.fn == "length":
            return self.math("sqrt", [acc], t)
        return acc

    # ---- complex numbers (docs/language.md, "Complex numbers"): a (re, im) pair of V ----
    # Every + - * / of a complex operation is a correctly rounded intrinsic that the device
    # compiler never contracts, so each step is one rounding and fuses with nothing: an operand's
    # fusion potential is dropped going in, and a step's result has none.

    def rn(self, op: str, a: V, b: V, t: str) -> V:
        r = self.float_op(op, V(a.v, a.e), V(b.v, b.e), t)
        return V(r.v, r.e)

    def complex_operand(self, e, ct: str) -> tuple:
        """A complex operand of type ``ct``; a real one (or a literal) is ``x + 0j``."""
        part = COMPLEX[ct]
        if e.ty in COMPLEX:
            re, im = self.eval(e)
            return self.convert(re, COMPLEX[e.ty], part), self.convert(im, COMPLEX[e.ty], part)
        return self.operand(e, part), V(NUMPY[part](0))

    def e_CNew(self, e: CNew) -> tuple:
        part = COMPLEX[e.ty]
        parts = [self.operand(a, part) for a in e.args]
        return (parts[0], parts[1]) if len(parts) == 2 else (parts[0], V(NUMPY[part](0)))

    def e_CUnary(self, e: CUnary) -> tuple:
        re, im = self.eval(e.operand)
        neg_im = V(-im.v, im.e)
        return (V(-re.v, re.e), neg_im) if e.op == "-" else (V(re.v, re.e), neg_im)

    def e_CBin(self, e: CBin) -> tuple:
        t = COMPLEX[e.ty]
        (a, b), (c, d) = (self.complex_operand(x, e.ty) for x in (e.left, e.right))
        rn = self.rn
        if e.op in ("+", "-"):
            return rn(e.op, a, c, t), rn(e.op, b, d, t)
        if e.op == "*":
            return (rn("-", rn("*", a, c, t), rn("*", b, d, t), t),
                    rn("+", rn("*", a, d, t), rn("*", b, c, t), t))
        # Smith's division as NumPy writes it (and the prelude's gn_cdiv).
        ft = NUMPY[t]
        abr, abi = abs(c.v), abs(d.v)
        if not (c.known and d.known):
            # The branch taken depends on |c| >= |d| and on both being zero: unknown if either
            # test is within the parts' error bounds.
            fr, fi = float(abr), float(abi)
            if (c.e == INF or d.e == INF or math.isnan(fr) or math.isnan(fi)
                    or abs(fr - fi) <= (c.e + d.e) * (1 + 1e-9) or max(fr, fi) <= c.e + d.e):
                return V(ft(0), INF), V(ft(0), INF)
        if abr >= abi:
            if abr == 0 and abi == 0:
                return rn("/", a, V(ft(abr), c.e), t), rn("/", b, V(ft(abi), d.e), t)
            rat = rn("/", d, c, t)
            scl = rn("/", V(ft(1)), rn("+", c, rn("*", d, rat, t), t), t)
            return (rn("*", rn("+", a, rn("*", b, rat, t), t), scl, t),
                    rn("*", rn("-", b, rn("*", a, rat, t), t), scl, t))
        rat = rn("/", c, d, t)
        scl = rn("/", V(ft(1)), rn("+", d, rn("*", c, rat, t), t), t)
        return (rn("*", rn("+", rn("*", a, rat, t), b, t), scl, t),
                rn("*", rn("-", rn("*", b, rat, t), a, t), scl, t))

    def e_CReal(self, e: CReal) -> V:
        re, im = self.eval(e.operand)
        if e.fn == "real":
            return re
        if e.fn == "imag":
            return im
        return self.math("hypot", [re, im], e.ty)

    def s_ComponentAssign(self, s: ComponentAssign) -> None:
        elem = VECTORS[self.types[s.name]][0]
        value = self.operand(s.value, elem)
        self.settle()
        vector = list(self.env[s.name])
        vector[s.index] = value
        self.env[s.name] = vector

    def e_Math(self, e: Math) -> V:
        if e.fn in ("isnan", "isinf", "isfinite"):
            x = self.operand(e.args[0], e.argty)
            f = float(x.v)
            r = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}[e.fn](f)
            if x.known or (math.isfinite(f) and abs(f) + x.e < FMAX[e.argty]):
                return V(r)
            return V(r, INF)
        args = [self.operand(a, e.argty) for a in e.args]
        return self.math(e.fn, args, e.argty)

    def math(self, fn: str, args: list[V], t: str) -> V:
        ft = NUMPY[t]
        if fn == "fmod" and any(a.p for a in args):
            return V(ft(0), INF)  # libdevice's fmod may contract a product argument
        if fn not in EXACT_MATH:
            # Inside an inlined library function a product argument may be used unrounded.
            args = [V(a.v, a.e + a.p) if a.p else a for a in args]
        if fn in EXACT_MATH:
            r = ft(MATH64[fn](*[ft(a.v) for a in args]))
            if fn == "copysign" and math.isnan(float(args[1].v)):
                # The sign bit of a NaN that arithmetic produced is not portable (x86 gives
                # -nan for 0/0, CUDA +nan): nothing to compare (fuzz seed 4039).
                return V(r, INF)
            if all(a.known for a in args):
                return V(r)
            x = args[0]
            if fn in ("floor", "ceil", "trunc"):
                if x.e == INF or not math.isfinite(float(x.v)):
                    return V(r, INF)
                f = MATH64[fn]
                spread = float(f(float(x.v) + x.e)) - float(f(float(x.v) - x.e))
                return V(r) if spread == 0 else bounded(r, spread, t)
            if fn == "fabs":
                return V(r, x.e)
            if fn == "sqrt":
                fx = float(x.v)
                if x.e == INF or fx - x.e < 0 <= fx:
                    return V(r, INF)
                if fx < 0:
                    return V(r)  # NaN either way
                e = x.e / (math.sqrt(fx - x.e) + math.sqrt(fx)) if fx > x.e else math.sqrt(x.e)
                return bounded(r, e + ulp(r, t), t)
            if fn == "copysign" and args[1].e != INF:
                sign = float(args[1].v)
                if not math.isnan(sign) and abs(sign) > args[1].e:
                    return bounded(r, args[0].e, t)
            return V(r, INF)
        # Library functions: computed in double, then rounded once to t.
        exact = np.float64(MATH64[fn](*[np.float64(a.v) for a in args]))
        r = ft(exact)
        fr = float(r)
        if math.isinf(fr):
            # Overflowed: certain only far beyond the largest finite value.
            certain = abs(float(exact)) > 2 * FMAX[t] and all(a.known for a in args)
            return V(r, 0.0 if certain else INF)
        if math.isnan(fr):
            return V(r, 0.0 if all(a.known for a in args) else INF)
        e = MATH_ULPS[t] * ulp(r, t)
        if not all(a.known for a in args):
            slope = LIPSCHITZ.get(fn)
            if slope is None or len(args) != 1:
                return V(r, INF)
            e += slope * args[0].e
        return bounded(r, e, t)

    # ---- statements ----

    def run(self, stmts) -> None:
        for s in stmts:
            getattr(self, "s_" + type(s).__name__)(s)

    def s_Decl(self, s: Decl) -> None:
        value = self.operand(s.value, s.ty)
        self.settle()
        self.env[s.name] = value

    def s_Assign(self, s: Assign) -> None:
        value = self.operand(s.value, self.types[s.name])
        self.settle()
        self.env[s.name] = value

    def s_MultiAssign(self, s: MultiAssign) -> None:
        """docs/language.md, "Tuples": the right side is computed before any assignment."""
        values = [self.operand(v, self.types[name]) for name, v in zip(s.names, s.values)]
        self.settle()
        for name, value in zip(s.names, values):
            self.env[name] = value

    def s_DivmodAssign(self, s: DivmodAssign) -> None:
        """``divmod(a, b)`` is ``(a // b, a % b)`` with each operand evaluated once."""
        a, b = self.operand(s.left, s.ty), self.operand(s.right, s.ty)
        self.env["__a"], self.env["__b"] = a, b
        q = self.eval(Bin("//", Var("__a", s.ty), Var("__b", s.ty), s.ty, s.ty))
        r = self.eval(Bin("%", Var("__a", s.ty), Var("__b", s.ty), s.ty, s.ty))
        del self.env["__a"], self.env["__b"]
        self.settle()
        self.env[s.q] = self.convert(q, s.ty, self.types[s.q])
        self.env[s.r] = self.convert(r, s.ty, self.types[s.r])

    def s_TupleFor(self, s: TupleFor) -> None:
        """Unrolled: each copy of the body sees the variable as its item (no break/continue)."""
        for item in s.items:
            self.env[s.var] = V(item)
            self.run(s.body)
        del self.env[s.var]

    def s_AugAssign(self, s: AugAssign) -> None:
        target = Var(s.name, s.target_ty)
        if s.op in ("<<", ">>"):
            e = Bin(s.op, target, s.value, s.target_ty, s.target_ty)
        else:
            ty = with_literal(s.target_ty, s.value) if isinstance(s.value, Lit) else s.ty
            e = Bin(s.op, target, s.value, ty, ty)
        value = self.convert(self.eval(e), e.ty, s.target_ty)
        self.settle()
        self.env[s.name] = value

    def s_Store(self, s: Store) -> None:
        value = self.operand(s.value, s.ty)
        self.settle()
        self.stores[(s.array, s.slot)] = value

    def condition(self, e) -> bool:
        value = self.eval(e)
        self.settle()
        c = self.truth(value, e.ty)
        if not c.known:
            raise Poison("a branch condition is unknown")
        return bool(c.v)

    def s_If(self, s: If) -> None:
        self.run(s.body if self.condition(s.cond) else s.orelse)

    def loop_body(self, body) -> bool:
        """Run one iteration; False when the loop breaks."""
        try:
            self.run(body)
        except ContinueLoop:
            pass
        except BreakLoop:
            return False
        return True

    def s_For(self, s: For) -> None:
        values = [self.operand(a, s.ty) for a in s.args]
        self.settle()
        if not all(v.known for v in values):
            raise Poison("a range() bound is unknown")
        for k, j in enumerate(range(*[v.v for v in values])):  # Python's: it never wraps
            self.env[s.var] = V(j)
            if s.counter:
                self.env[s.counter] = V(k)
            if not self.loop_body(s.body):
                break

    def s_While(self, s: While) -> None:
        while True:
            bound = self.operand(s.bound, "i32")
            self.settle()
            if not bound.known:
                raise Poison("a while bound is unknown")
            if not self.env[s.counter].v < bound.v:
                break
            if s.cond is not None and not self.condition(s.cond):
                break
            if not self.loop_body(s.body):
                break

    def s_Break(self, s: Break) -> None:
        raise BreakLoop

    def s_Continue(self, s: Continue) -> None:
        raise ContinueLoop

    def s_Return(self, s: Return) -> None:
        raise ReturnLane



def evaluate(kernel: Kernel, inputs: dict[str, np.ndarray]) -> Expected:
    """Run every lane of the launch through the reference."""
    outputs = {name: np.empty(arr.shape, dtype=object)
               for name, arr in initial_outputs(kernel).items()}
    initial = initial_outputs(kernel)
    records = kernel.records
    for name, arr in initial.items():
        t = next(t for n, t, _w in kernel.arrays() if n == name)
        flat = outputs[name].reshape(-1)
        for k, v in enumerate(arr.reshape(-1)):
            if records is not None and records.is_struct(t):
                flat[k] = struct_value(records, t, v)
            else:
                flat[k] = V(int(v) if t in INTS else NUMPY[t](v))
    # The grid tail (docs/language.md): a kernel that indexes an array with its bare uid (every
    # Load and Store) skips the threads past n; one that does not runs them all.
    lanes = kernel.n if _contains(kernel.body, (Load, Store)) else kernel.grid * kernel.block
    collect = _contains(kernel.body, (Index,))
    poisoned = np.zeros(lanes, dtype=bool)
    errors = set()
    index_errors: dict[int, tuple[set[int], bool]] = {}
    types = {"i": "i64"}
    _collect_types(kernel.body, types)
    if records is not None:
        collect_types(records, types, _collect_types)
    with np.errstate(all="ignore"):
        for uid in range(lanes):
            lane = Lane(kernel, inputs, uid, types)
            lane.initial = initial
            lane.collect = collect
            try:
                lane.run(kernel.body)
            except ReturnLane:
                pass
            except LaneError:
                errors.add("zerodiv")
            except LaneFailure as failure:
                if failure.indices:
                    index_errors[uid] = (failure.indices, failure.zerodiv)
                else:
                    errors.add("zerodiv")
            except Poison:
                poisoned[uid] = True
                continue
            if uid >= kernel.n:
                continue
            for (array, slot), value in lane.stores.items():
                if outputs[array].ndim == 2:
                    outputs[array][uid, slot] = value
                else:
                    outputs[array][uid] = value
    error = "zerodiv" if errors else "none"
    if poisoned.any() and error == "none":
        error = "maybe"  # a poisoned lane might divide by zero
    return Expected(outputs, poisoned, error, index_errors=index_errors)


def _contains(node, kinds) -> bool:
    """Is there a node of one of ``kinds`` anywhere in ``node`` (a statement list or tree)?"""
    return any(isinstance(x, kinds) for x in walk(node))


def _collect_types(stmts, types: dict[str, str]) -> None:
    for s in stmts:
        if isinstance(s, Decl):
            types[s.name] = s.ty
        elif isinstance(s, If):
            _collect_types(s.body, types)
            _collect_types(s.orelse, types)
        elif isinstance(s, (For, While)):
            if isinstance(s, For):
                types[s.var] = s.ty
                if s.counter:
                    types[s.counter] = "i64"
            _collect_types(s.body, types)
        elif isinstance(s, TupleFor):
            _collect_types(s.body, types)


# ---- comparing a backend with the reference -----------------------------------------------------


@dataclass
class Verdict:
    mismatches: list[str] = field(default_factory=list)
    exact: int = 0
    tolerant: int = 0
    skipped: int = 0


def _same_float(got: float, want: V) -> bool:
    g, w = float(got), float(want.v)
    if math.isnan(w) or math.isnan(g):
        return math.isnan(w) and math.isnan(g)
    if want.known:
        return g == w and math.copysign(1.0, g) == math.copysign(1.0, w)
    return abs(g - w) <= want.e * (1 + 1e-9)


def compare(kernel: Kernel, expected: Expected, got: dict[str, np.ndarray],
            got_error: str | None, label: str) -> Verdict:
    """Compare one backend's outputs and device error with the reference.

    ``got_error`` is None, ``"zerodiv"``, ``("index", uid, index, length)`` for a
    KernelIndexError, or the text of any other error.  After an index error no output is
    compared: a thread stops at its failing check, and under the launcher's uid remapping that
    thread may have had other uids still to run."""
    verdict = Verdict()
    failing = expected.index_errors
    if isinstance(got_error, tuple) and got_error[0] == "index":
        _, uid, index, length = got_error
        poisoned = 0 <= uid < len(expected.poisoned) and expected.poisoned[uid]
        allowed = failing.get(uid, (set(), False))[0]
        if not poisoned and (index not in allowed or length != kernel.n):
            verdict.mismatches.append(
                f"{label}: KernelIndexError for uid {uid}, index {index} of length {length}, "
                f"but the reference says {_index_story(failing, kernel.n)}")
        return verdict
    if got_error not in (None, "zerodiv"):
        verdict.mismatches.append(f"{label}: unexpected device error {got_error}")
        return verdict
    if failing and got_error is None:
        verdict.mismatches.append(f"{label}: no KernelIndexError was raised, but "
                                  f"{_index_story(failing, kernel.n)}")
    if expected.error == "zerodiv" and got_error is None:
        verdict.mismatches.append(f"{label}: a lane divides by zero but no "
                                  "KernelZeroDivisionError was raised")
    if (expected.error == "none" and got_error is not None
            and not any(zerodiv for _, zerodiv in failing.values())):
        verdict.mismatches.append(f"{label}: KernelZeroDivisionError, but no lane divides by zero")
    if failing:
        return verdict
    for name, t, writable in kernel.arrays():
        if not writable:
            continue
        if kernel.records is not None and kernel.records.is_struct(t):
            compare_structs(kernel, expected, name, t, got[name], verdict, label)
            continue
        want = expected.outputs[name]
        have = got[name]
        for index in np.ndindex(want.shape):
            uid = index[0]
            w = want[index]
            if expected.poisoned[uid] or w is None or w.e == INF:
                verdict.skipped += 1
                continue
            g = have[index]
            if t in INTS:
                ok = int(g) == w.v
                verdict.exact += 1
            else:
                ok = _same_float(g, w)
                if w.known:
                    verdict.exact += 1
                else:
                    verdict.tolerant += 1
            if not ok:
                shown = f"{float(w.v)!r} ± {w.e:g}" if t in FLOATS and not w.known else repr(w.v)
                verdict.mismatches.append(
                    f"{label}: {name}{list(index)} is {g!r}, the reference says {shown} "
                    f"({t}, uid {uid})")
    return verdict


def _index_story(failing: dict[int, tuple[set[int], bool]], n: int) -> str:
    if not failing:
        return "every index is in range"
    shown = ", ".join(f"uid {uid}: {sorted(indices)[:3]}" for uid, (indices, _z) in
                      sorted(failing.items())[:4])
    return f"{len(failing)} lanes index out of range (length {n}; {shown})"


__all__ = ["Expected", "Verdict", "compare", "evaluate", "float_to_int", "int_to_float",
           "promote", "py_divmod", "wrap"]
