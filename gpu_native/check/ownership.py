"""Race-freedom of stores through affine indices: which thread owns which elements.

The classic unique-write rule (:mod:`.unique`) accepts an index that is a unique id transformed in
a few fixed ways.  The standard race-free idioms of CUDA need more: several stores per thread at
disjoint offsets (``s[tid]`` and ``s[tid + HALF]``), constant-trip loops over per-thread offsets
(``out[row, col + i * BX]``), one writer per warp (``lane = tid % 32``, ``if lane == 0:
partial[wid] = v``), transposed ownership (``counts[tid * grid_dim.x + block_idx.x]``) and
block-stride loops in single-block kernels.  This module proves them.

**Forms.**  Each index is written as a polynomial (an :class:`~gpu_native.analysis.ranges.Affine`
form whose symbols are monomials) over *digits* and launch-uniform atoms.  A digit is a value
that differs between threads or between a thread's iterations, with a known range ``[0, n)``: a
thread coordinate (``thread_idx.x``, ``block_idx.y``), its low or high part in some radix
(``tid % 32``, ``tid // 32``), or the iteration count of an enclosing ``range()`` loop (the loop
variable is ``start + step * k``).  Uniform atoms are values every thread of the launch shares
(``block_dim``, ``grid_dim``, unchanged scalar parameters, extents, reads of read-only memory at
uniform indices).

**The proof** for a pair of stores, the mixed-radix rule, is :mod:`.radix`'s.

**Splits.**  A digit may also be *derived*: ``f // K``, ``f % K`` of a never-negative flat value
``f`` (``ty * TX + tx + load * THREADS``, the FFT's ``t % half``), or ``x ^ g``.  Where both parts
of a split are shown equal in two threads, ``f`` is a further dimension of the proof; where an
XOR is, and ``g`` depends only on equal digits, so is ``x`` (:mod:`.splits`).  The two stores'
ranges of a digit are merged to the wider one.

**Wrapping.**  Forms are exact for the values as mathematical integers; where an index is
computed in a fixed-width type, :mod:`.wrapping` shows it still tells the threads apart (or
has the launcher check that it does).  The polynomials themselves are :mod:`.poly`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import HARDWARE, Affine
from ..nodes import Factory, node
from .facts import (
    CastKey,
    ConstKey,
    Equal,
    Exact,
    Key,
    LaneKey,
    Less,
    LoadKey,
    MathKey,
    NonNegative,
    NotEqual,
    OpKey,
    ShapeKey,
    SpecialKey,
    UidKey,
    UnaryKey,
    Unread,
    VarKey,
)
from .poly import (
    Digit,
    Poly,
    Quotient,
    Slack,
    atom,
    coefficients,
    const,
    digits_of,
    is_uniform,
    magnitude,
    mul,
    nonnegative,
    positive_atom,
    substitute,
)
from .residues import residue_conditions

if TYPE_CHECKING:
    from .context import Definitions

__all__ = ["FOLDED", "Assumption", "Digit", "Forms", "Guard", "LoopDigit", "Pin", "StoreForm",
           "assume", "param_atoms"]


# ---- assumptions on scalar parameters ---------------------------------------------------------
#
# An unchanged scalar parameter is a uniform atom of unknown sign, so the mixed-radix rule cannot
# order its coefficient against a digit's reach (``block_idx.x * stride + thread_idx.x``).  The
# launcher can check ``stride >= E`` at every launch (E a polynomial of block_dim and grid_dim);
# under that assumption ``stride == E - 1 + S`` with ``S = stride - E + 1 >= 1``, a positive atom
# like block_dim, and the forms with that substitution are exact for every launch that passes.


@node
class Assumption:
    """The parameter ``var`` (a :class:`~.facts.VarKey` atom) is at least ``bound``."""

    var: VarKey
    bound: Affine

    def replace(self, a) -> Poly | None:
        if a == self.var:
            return self.bound.plus(atom(Slack(self.var, self.bound))).plus(const(-1))
        return None


def param_atoms(forms: Iterable[StoreForm]) -> list[VarKey]:
    """The integer scalar parameters that appear as atoms in ``forms``' indices."""
    found: dict[str, VarKey] = {}
    from .splits import nested_atoms
    for f in forms:
        for p in f.dims:
            for m, _ in p.terms:
                for a in nested_atoms(m):  # a split's radix may be a parameter (t % half)
                    if isinstance(a, VarKey) and a.var.is_param and isinstance(
                            a.var.ty, ir.ScalarType) and a.var.ty.info.kind in ("int", "uint"):
                        found.setdefault(a.var.name, a)
    return [found[n] for n in sorted(found)]


def _steps_by(n: Poly, stepped) -> bool:
    """Whether every atom of the symbolic bound ``n`` is a factor of some index term."""
    return all(a in stepped for mono, _ in n.terms for a in mono)


def candidate_bounds(ndim: int) -> list[Poly]:
    """The bounds a parameter is tried against: a block's extent along an axis, then the grid's
    (a row pitch at least the width of the launch)."""
    out = [const(1)]  # a positive radix (t % half: see .splits)
    out += [atom(SpecialKey("block_dim", a)) for a in range(ndim)]
    out += [mul(atom(SpecialKey("grid_dim", a)), atom(SpecialKey("block_dim", a)))
            for a in range(ndim)]
    return out


def assume(form: StoreForm, assumption: Assumption) -> StoreForm:
    """``form`` under ``assumption`` (its bound written with the launch's known extents)."""
    from .splits import deep
    bound = substitute(assumption.bound, form.launch.get)
    replace = deep(Assumption(assumption.var, bound).replace)

    def digit(d):  # a derived digit may hold the parameter (t % half)
        (mono, _), = substitute(atom(d), replace).terms
        return mono[0]

    dims = tuple(substitute(p, replace) for p in form.dims)
    ranges = {digit(d): None if n is None else substitute(n, replace)
              for d, n in form.ranges.items()}
    pins = {digit(d): v for d, v in form.pins.items()}
    bounded = tuple((substitute(q, replace), substitute(u, replace)) for q, u in form.bounded)
    return StoreForm(dims, pins, ranges, form.line, form.text, form.single,
                     form.whole, form.launch, bounded, form.spans, form.guards, form.unread_guards)


def guard_assumptions(forms: Iterable[StoreForm]) -> list[Assumption]:
    """What the conditions around the stores show of uniform atoms, where the stores run: ``P <
    U`` with ``P >= c`` (``if col < n:``) makes ``U >= c + 1``, so a launch-uniform atom ``v``
    with ``U == v + k`` is at least ``c + 1 - k``; where that is 1 or more, ``v`` is a positive
    atom there, as the pair proof needs it, with no check by the launcher.  ``v`` is any value
    every thread of the launch shares: an unchanged parameter, an extent, or one the forms keep
    opaque (``len(a) // 2``, ``(n + 1) // 2``), since a pair of stores meets only where both
    run, and where one runs the condition holds of the one value every thread sees."""
    best: dict = {}
    for f in forms:
        for q, u in f.bounded:
            if len(u.terms) != 1:
                continue
            (mono, k), = u.terms
            if k != 1 or len(mono) != 1 or not _opaque_uniform(mono[0]):
                continue
            bound = q.const + 1 - u.const
            if bound >= 1 and bound > best.get(mono[0], 0):
                best[mono[0]] = bound
    return [Assumption(v, const(n)) for v, n in sorted(best.items(), key=lambda t: repr(t[0]))]


def _opaque_uniform(a) -> bool:
    """Is the atom ``a`` a launch-uniform value of unknown sign (a parameter, an extent, a
    quotient of them: any key but a digit and the launch extents, which are positive already)?
    A value read from memory is left out: that it is the same in every thread rests on no
    other thread writing it, which a condition's bound should not lean on."""
    return isinstance(a, Key) and not isinstance(a, (SpecialKey, UidKey, LaneKey)) \
        and not a.reads_memory()


# ---- forms of indices -----------------------------------------------------------------------


@node
class LoopDigit:
    """An enclosing ``for var in range(start, stop, step)``: ``var == start + step * k`` with
    ``0 <= k < trip`` (``trip`` ``None``: not bounded)."""

    digit: Digit
    start: Poly
    step: Poly
    trip: int | None


@node
class Pin:
    """A condition around a store leaves one value of a digit: ``source`` names the condition
    (two stores under the same one see the same value), ``value`` is it where known.
    ``rounds``: the loop counters the value is computed from (``t % 2 == phase % 2``), which
    two threads share only in one round of their loops (:func:`.phases.round_digits`): the pin
    holds the digit equal in a pair only where the pair is proven in one round."""

    source: tuple
    value: int | None = None
    rounds: frozenset = frozenset()
    # The value as a polynomial of values every thread shares, where the condition gives one
    # (``tx == block_dim.x - 1``): the store's index with the digit written as it.
    poly: Poly | None = None


@node
class Guard:
    """A condition around a store as a comparison of two polynomials (``op`` one of ``==``,
    ``!=``, ``<``, ``>=``): what an example of two threads that meet must pass (:mod:`.witness`)."""

    op: str
    left: Poly
    right: Poly


@node(frozen=False, eq=False)
class StoreForm:
    """One store as the proof sees it: its index polynomials, the pins of the conditions around
    it (digit -> the key of its value), and the range of each of its digits (``None``: not
    bounded above)."""

    dims: tuple[Poly, ...]
    pins: dict
    ranges: dict
    line: int
    text: str
    single: frozenset = frozenset()  # coordinates the launch leaves one value (grid_dim.x == 1)
    whole: dict | None = None  # each thread coordinate's range
    launch: dict = Factory(dict)  # the launch extents an assert fixed (block_dim.x -> 256)
    # Sums a condition around the store bounds: (P, U) with ``P < U`` wherever it runs, P a
    # sum of digits with nonnegative coefficients, U uniform (``if col < n:``, col a thread's
    # column): the digits of P then reach at most U - 1 - P.const together.
    bounded: tuple = ()
    # Each index's values where the store runs, as the generated code computes them: (lo, hi)
    # from the bounds proofs' facts, or None; () where not computed.
    spans: tuple = ()
    # The comparisons around the store that depend on the thread, for examples (:mod:`.witness`);
    # ``unread_guards``: the lines of the conditions there that no guard reads.
    guards: tuple[Guard, ...] = ()
    unread_guards: tuple[int, ...] = ()
    # Every strict comparison around the store of exact values with polynomials, as (Q, U)
    # with ``Q < U``: Q the digits' part (any signs: ``x - y < 0`` of ``if x < y:``), U
    # uniform; and the floor divisions among their uniform values, as (``X // K`` atom, X, K):
    # ``X == K * (X // K) + r`` with ``0 <= r < K`` (:mod:`.apart`).  Only the forms
    # :meth:`Forms.store` makes carry them.
    relations: tuple[tuple[Poly, Poly], ...] = ()
    divisions: tuple[tuple[OpKey, Poly, int], ...] = ()
    # Whether each index is shown exact at the store (set by :meth:`.unique.UniqueWrites.store`;
    # () where not shown), and the launch checks that keeps some of them exact (a thread's
    # flat index in i32: see :func:`.wrapping.exact_value`), which a rule that relies on
    # them adds.
    exact: tuple[bool, ...] = ()
    exact_checks: tuple = ()
    # Each condition ``E % m == c`` around the store, ``m`` a power of two and ``c`` the same for
    # every thread, as (E, m, c) (:mod:`.residues`).  Only the forms :meth:`Forms.store` makes
    # carry them.
    residues: tuple[tuple[Poly, int, Poly], ...] = ()


_INTEGER_TYPES = frozenset(("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"))


class Forms:
    """Builds :class:`StoreForm` records from keys (see the module docstring).

    ``uniform_var(var)`` tells whether a variable is the same for every thread of the launch;
    ``loops`` maps each active ``range()`` loop variable (by id) to its :class:`LoopDigit`."""

    def __init__(self, defs: Definitions, uniform_var: Callable[[ir.Var], bool], ndim: int,
                 is_kernel: bool):
        self.defs = defs
        self.uniform_var = uniform_var
        self.ndim = ndim
        self.is_kernel = is_kernel
        self.loops: dict[int, LoopDigit] = {}
        self.loop_count = 0

    # -- keys to polynomials --

    def poly(self, k: Key, depth: int = 0) -> Poly | None:
        """The polynomial of ``k``, or ``None`` when it is not one (a value read from writable
        memory, a variable assigned more than once, a non-affine use of a digit)."""
        if depth > 48:
            return None
        d = depth + 1
        if isinstance(k, ConstKey):
            return const(int(k.value)) if isinstance(k.value, (int, bool)) else None
        if isinstance(k, SpecialKey):
            if k.name == "thread_idx":
                return atom(Digit(f"tid{k.axis}"))
            if k.name == "block_idx":
                return atom(Digit(f"bid{k.axis}"))
            return atom(k)
        if isinstance(k, UidKey):
            tid = atom(Digit(f"tid{k.axis}"))
            if k.scope == "block":
                return tid
            return mul(atom(Digit(f"bid{k.axis}")), atom(SpecialKey("block_dim", k.axis))).plus(tid)
        if isinstance(k, LaneKey):
            # Kernel1D blocks are one-dimensional (the launcher refuses others).
            return atom(Digit("tid0", "lo", 32)) if self.ndim == 1 and self.is_kernel else None
        if isinstance(k, VarKey):
            loop = self.loops.get(id(k.var))
            if loop is not None:
                return loop.start.plus(mul(atom(loop.digit), loop.step))
            return atom(k) if self.uniform_var(k.var) else None
        if isinstance(k, ShapeKey):
            return atom(k)
        if isinstance(k, UnaryKey):
            inner = self.poly(k.operand, d)
            if inner is None:
                return None
            if k.op == "-":
                return inner.scaled(-1)
            return atom(k) if is_uniform(inner) else None
        if isinstance(k, OpKey):
            return self._op(k, d)
        if isinstance(k, (CastKey, MathKey)):
            parts = [self.poly(p, d) for p in k.parts()]
            return atom(k) if all(p is not None and is_uniform(p) for p in parts) else None
        if isinstance(k, LoadKey):
            ty = k.array.ty
            if isinstance(ty, ir.ArrayType) and ty.space == "global" and not ty.mutable:
                parts = [self.poly(p, d) for p in k.indices]
                if all(p is not None and is_uniform(p) for p in parts):
                    return atom(k)
            return None
        return None  # OpaqueKey and anything new

    def culprit(self, k: Key, depth: int = 0) -> str:
        """Why ``k`` has no polynomial, naming the innermost part that has none: what the
        refusal of a store through it says."""
        # A load is the reason whatever its index (a gather's value is data, not an index).
        for part in () if isinstance(k, LoadKey) else k.parts():
            if depth < 48 and self.poly(part) is None:
                return self.culprit(part, depth + 1)
        if isinstance(k, LoadKey):
            ty = k.array.ty
            space = ty.space if isinstance(ty, ir.ArrayType) else "memory"
            if isinstance(ty, ir.ArrayType) and ty.space == "global" and not ty.mutable:
                return (f"'{k.array.name}[...]' is read at an index that differs between "
                        "threads: a value loaded from memory, such as a permutation, which no "
                        "index rule follows")
            return (f"'{k.array.name}[...]' is read from a {space} array the kernel may "
                    "change: a value loaded from memory, which no index rule follows")
        if isinstance(k, VarKey) and k.var.is_param:
            return (f"'{k.var.name}' is a parameter of this device function, and the proofs "
                    "do not follow what its callers pass for it; declare it `"
                    f"{k.var.name}: UniqueId` where each caller passes a unique id (its callers "
                    "then prove that), or wrap the store in `with unsafe():`")
        if isinstance(k, VarKey):
            return (f"'{k.var.name}' is assigned more than once, and its value at the store "
                    "is neither the one assignment that reaches it nor a value every thread "
                    "shares (the proofs follow arithmetic over the thread's coordinates and "
                    "launch values, not a value chosen under a condition or returned by a "
                    "shuffle, an atomic or a call); a while loop's counter is followed "
                    f"where the loop requires `{k.var.name} < stop` and its body ends by "
                    f"stepping it (`{k.var.name} += step`, a step the loop does not change, "
                    "and no other assignment but the same step before a `continue`), as is "
                    f"`for {k.var.name} in range(start, stop, step)` whose start and step are "
                    "such arithmetic (a `min(...)` or `max(...)` start is not; the stop may "
                    f"be one) (a grid-stride loop: `for {k.var.name} in "
                    "FlatLayout1D.grid_stride(n)`)")
        if isinstance(k, LaneKey):
            return "lane_id() outside a kernel of one-dimensional blocks"
        count = self.poly(k.right) if isinstance(k, OpKey) and k.op == "<<" else None
        if count is not None and count.terms and is_uniform(count):
            # The proofs follow products with launch values, not powers of two of them: the
            # shift's value is known only as `1 << count` is, which no rule relates to `count`.
            return ("a '<<' by a count that is not a constant: the proofs follow a product "
                    "with a value every thread shares, but not a shift by one; pass the power "
                    "of two itself (`n = 1 << log2n`, computed on the host) and write "
                    "`block_idx.x * n`")
        if isinstance(k, OpKey):
            return (f"a '{k.op}' of thread-dependent values (a product of two thread values, "
                    "or a division, remainder or bit operation the split rules do not follow)")
        if isinstance(k, CastKey) and k.type in _INTEGER_TYPES:
            return (f"a cast to {k.type} that may change the value (`{k.type}(...)` of a "
                    "thread-dependent value: the proofs look through widening integer casts "
                    "only, i32 to i64 or u32 to i64; compute the index in i32 or i64, as "
                    "block_idx, thread_idx and the launch extents are)")
        if isinstance(k, (UnaryKey, CastKey, MathKey)):
            return "a conversion or function of a thread-dependent value"
        if isinstance(k, ConstKey):
            return "a constant that is not an integer"
        return "a value the proofs do not model (a call's result, an atomic's, a random draw)"

    def _op(self, k: OpKey, depth: int) -> Poly | None:
        left, right = self.poly(k.left, depth), self.poly(k.right, depth)
        if left is None or right is None:
            return None
        if k.op == "+":
            return left.plus(right)
        if k.op == "-":
            return left.plus(right.scaled(-1))
        if k.op == "*":
            return mul(left, right)
        if k.op == "<<" and not right.terms and 0 <= right.const < 63:
            return left.scaled(1 << right.const)
        if is_uniform(left) and is_uniform(right):
            return atom(k)
        radix = self._radix(k, left, right)
        if radix is not None:
            return radix
        from .splits import derive  # a split of a flat value, an XOR (see .splits)
        return derive(k.op, left, right)

    @staticmethod
    def _radix(k: OpKey, left: Poly, right: Poly) -> Poly | None:
        """A digit split in a radix: tid % 32, tid & 31, tid // 32, tid >> 5."""
        if right.terms or left.const or len(left.terms) != 1:
            return None
        (mono, coefficient), = left.terms
        if coefficient != 1 or len(mono) != 1 or not isinstance(mono[0], Digit):
            return None
        digit, c = mono[0], right.const
        if not digit.is_thread or digit.part != "all":
            return None
        if k.op == "%" and c > 0:
            return atom(Digit(digit.coord, "lo", c))
        if k.op == "&" and c > 0 and c & (c + 1) == 0:
            return atom(Digit(digit.coord, "lo", c + 1))
        if k.op == "//" and c > 0:
            return atom(Digit(digit.coord, "hi", c))
        if k.op == ">>" and 0 <= c < 31:
            return atom(Digit(digit.coord, "hi", 1 << c))
        return None

    # -- loops --

    def enter_loop(self, var: ir.Var, start: Key, stop_max: int | None, step: Key,
                   start_min: int | None, stop: Key | None = None) -> None:
        """``for var in range(start, stop, step)`` (``step`` a nonzero constant, ``stop <=
        stop_max``, ``start >= start_min`` where known) begins; its body sees ``var`` as
        ``start + step * k`` with ``start + step * k < stop``.  Where ``stop`` is ``start``
        plus a constant (``range(t * C, (t + 1) * C)``, a thread's chunk; or a ``min()`` one of
        whose arguments is), that bounds ``k`` as constant bounds do."""
        self.loop_count += 1
        start_poly, step_poly = self.poly(start), self.poly(step)
        # A constant step, or a positive one from the launch (range(tid, n, block_dim.x)), or
        # an unchanged scalar parameter's (its sign unknown until an assumption gives it one:
        # ``start + step * k`` is the loop variable's value whatever the step).
        if start_poly is None or step_poly is None or not (
                (not step_poly.terms and step_poly.const != 0)
                or (magnitude(step_poly) == step_poly and nonnegative(step_poly.plus(
                    const(-1))))
                or (is_uniform(step_poly) and param_atoms([StoreForm((step_poly,), {}, {}, 0,
                                                                     "")]))):
            self.loops.pop(id(var), None)
            return
        trip = None
        if not step_poly.terms and step_poly.const > 0 and stop_max is not None and \
                start_min is not None:
            trip = max(0, -(-(stop_max - start_min) // step_poly.const))
        if not step_poly.terms and step_poly.const > 0 and stop is not None:
            span = self._span(stop, start_poly)
            if span is not None:
                chunk = max(0, -(-span // step_poly.const))
                trip = chunk if trip is None else min(trip, chunk)
        digit = Digit(f"loop:{var.name}@{self.loop_count}")
        self.loops[id(var)] = LoopDigit(digit, start_poly, step_poly, trip)

    def _span(self, stop: Key, start: Poly) -> int | None:
        """The constant ``stop - start``, or the least of those of a ``min()``'s arguments
        that have one; ``None`` where none is constant."""
        parts = stop.args if isinstance(stop, MathKey) and stop.name == "min" else (stop,)
        spans = []
        for part in parts:
            p = self.poly(part)
            if p is not None:
                d = p.plus(start.scaled(-1))
                if not d.terms:
                    spans.append(d.const)
        return min(spans) if spans else None

    def enter_grid_stride(self, var: ir.Var, reassigned: bool) -> None:
        """``for var in FlatLayout1D.grid_stride(n)`` begins: its body sees ``var`` as ``uid + k
        * (grid_dim.x * block_dim.x)`` (nothing, where the body assigns ``var`` too)."""
        if reassigned:
            self.loops.pop(id(var), None)
            return
        self.loop_count += 1
        block = atom(SpecialKey("block_dim", 0))
        start = atom(Digit("tid0")).plus(mul(atom(Digit("bid0")), block))
        step = mul(atom(SpecialKey("grid_dim", 0)), block)
        digit = Digit(f"loop:{var.name}@{self.loop_count}")
        self.loops[id(var)] = LoopDigit(digit, start, step, None)

    def leave_loop(self, var: ir.Var) -> None:
        self.loops.pop(id(var), None)

    # -- a store --

    def store(self, indices: Iterable[Key], facts: Iterable, space: str, line: int,
              text: str) -> StoreForm | str:
        """The form of a store, or why there is none."""
        dims = []
        for k in indices:
            p = self.poly(k)
            if p is None:
                return ("depends on a value that is not an affine function of the thread's "
                        f"coordinates and loop counters ({self.culprit(k)}), so nothing shows "
                        "which thread writes which element")
            dims.append(p)
        facts = sorted(facts, key=repr)  # a fixed order: the same pins on every run
        from .splits import deep, lanes, nested_digits
        subst = self._launch_equalities(facts)
        fold = self._folding(subst)
        dims = [substitute(p, deep(fold)) for p in dims]
        pins: dict = {}
        exact = {f.value for f in facts if isinstance(f, Exact)}
        counters = {loop.digit for loop in self.loops.values()}
        for f in facts:
            if isinstance(f, Equal):
                for a, b in ((f.left, f.right), (f.right, f.left)):
                    pa, pb = self.poly(a), self.poly(b)
                    if pa is None or pb is None:
                        continue
                    # A value of the loops' counters alone (`t % 2 == phase % 2`) pins the
                    # thread's digit within one round of them.
                    rounds = frozenset(d for d in nested_digits(pb) if d.of is None)
                    if not rounds <= counters:
                        continue
                    pa = substitute(pa, subst)
                    if not any(d.is_thread for d in digits_of(pa)):
                        # The grid's lane where the block is a multiple of its modulus:
                        # `(block_idx.x * block_dim.x + tid) % 32 == 31` pins tid % 32.
                        lane = lanes(substitute(pa, deep(fold)))
                        if any(d.is_thread for d in digits_of(lane)):
                            pa = lane
                    if a in exact and pb == const(0):
                        for digit in _zero_sum_digits(pa):
                            pins[digit] = Pin((a, b), 0)
                    ds = digits_of(pa)
                    if len(ds) == 1 and next(iter(ds)).is_thread:
                        (digit,) = ds
                        c = pa.coefficient((digit,))
                        rest = pa.plus(atom(digit).scaled(-c))
                        if c != 0 and is_uniform(rest):
                            # The pinned value, where it is a known constant (for examples).
                            v = substitute(pb, subst).plus(rest.scaled(-1))
                            value = v.const // c if not v.terms and v.const % c == 0 else None
                            # Written into the index only where both sides are the machine
                            # values (a side that may wrap pins another thread than it says).
                            exact_value = v.scaled(c) if c in (1, -1) and not rounds and \
                                is_uniform(v) and a in exact and (
                                    b in exact or b.integer is not None) else None
                            pins[digit] = Pin((a, b), value, rounds, exact_value)
        if space == "shared":
            # Threads of different blocks never share a shared array: block_idx is uniform.
            dims = [substitute(p, deep(lambda a: atom(("block", a)) if isinstance(a, Digit) and
                                    a.coord.startswith("bid") else None)) for p in dims]
        ranges: dict = {}
        # Extents the indices step by (block_idx.x * block_dim.x + t): a digit bounded by one of
        # them keeps that bound, which the pair proof needs, over a constant one a fact gives
        # (t < 128 after a checked s[t], where block_dim.x may be smaller).
        stepped = {a for p in dims for mono, _ in p.terms for a in mono}
        for p in dims:
            for digit in nested_digits(p):  # and those a split is computed from (.splits)
                ranges[digit] = self._range(digit, facts, subst, stepped)
        for digit in pins:
            ranges.setdefault(digit, self._range(digit, facts, subst, stepped))
        whole = {c: self._range(Digit(c), facts, subst)
                 for c in (f"{t}{a}" for t in ("tid", "bid") for a in range(3))}
        single = frozenset(c for c, n in whole.items() if n == const(1))
        bounded = []
        for f in facts:
            # A bound on the machine values that are the mathematical ones (no wrap).
            if not isinstance(f, Less) or f.left not in exact or not (
                    f.right in exact or f.right.integer is not None):
                continue
            q, u = self.poly(f.left), self.poly(f.right)
            if q is None or u is None or not is_uniform(u) or not digits_of(q):
                continue
            q, u = substitute(q, deep(fold)), substitute(u, deep(fold))
            if space == "shared":
                q = substitute(q, deep(lambda a: atom(("block", a)) if isinstance(a, Digit) and
                                       a.coord.startswith("bid") else None))
            if _sum_of_digits(q):
                bounded.append((q, u))
        guards, unread = self._guards(facts, fold, space)
        relations, divisions = self._relations(facts, exact, fold, space)

        def folded(p: Poly) -> Poly:  # as the indices are (launch equalities, shared blocks)
            p = substitute(p, deep(fold))
            if space == "shared":
                p = substitute(p, deep(lambda a: atom(("block", a)) if isinstance(a, Digit) and
                                       a.coord.startswith("bid") else None))
            return p

        return StoreForm(tuple(dims), pins, ranges, line, text, single, whole,
                         getattr(subst, "__self__", {}), tuple(bounded), (), guards, unread,
                         relations, divisions,
                         residues=residue_conditions(facts, self.poly, folded))

    def _relations(self, facts: list, exact: set, fold, space: str) -> tuple[tuple, tuple]:
        """:attr:`StoreForm.relations` and :attr:`StoreForm.divisions` from ``facts``: each
        ``L < R`` of exact values (machine values that are the mathematical ones) as ``L - R <
        0`` split into its digits' part and its uniform part; each ``X // K`` (``K`` a positive
        constant) among the uniform parts, with ``X``'s polynomial (exact too: a comparison's
        side is exact only where everything under it is)."""
        from .splits import deep
        relations = []
        divisions: dict = {}
        for f in facts:
            if not isinstance(f, Less) or not all(
                    side in exact or side.integer is not None for side in (f.left, f.right)):
                continue
            left, right = self.poly(f.left), self.poly(f.right)
            if left is None or right is None:
                continue
            diff = substitute(left.plus(right.scaled(-1)), deep(fold))
            if space == "shared":
                diff = substitute(diff, deep(lambda a: atom(("block", a)) if isinstance(
                    a, Digit) and a.coord.startswith("bid") else None))
            q = Affine(0, frozenset(t for t in diff.terms if _digit_count(t[0])))
            u = Affine(-diff.const, frozenset((m, -k) for m, k in diff.terms
                                              if not _digit_count(m)))
            if not q.terms or any(_digit_count(m) > 1 for m, _ in q.terms):
                continue
            relations.append((q, u))
            for mono, _ in u.terms:
                for a in mono:
                    k = a.right.integer if isinstance(a, OpKey) and a.op == "//" else None
                    if k is None or isinstance(k, bool) or k <= 0 or a in divisions or \
                            a.reads_memory():  # two reads of memory may differ
                        continue
                    x = self.poly(a.left)
                    if x is not None and is_uniform(x):
                        divisions[a] = (a, substitute(x, deep(fold)), k)
        return tuple(relations), tuple(divisions[a] for a in sorted(divisions, key=repr))

    def _guards(self, facts: list, fold, space: str) -> tuple[tuple[Guard, ...], tuple[int, ...]]:
        """The comparisons among ``facts`` that depend on the thread, as :class:`Guard`
        records, and the lines of the conditions an example cannot check (:class:`~.facts.Unread`),
        and whether a comparison has a side with no polynomial (a variable assigned more than
        once: its line unknown, 0)."""
        from .splits import deep
        guards = []
        unread: set[int] = set()
        for f in facts:
            if isinstance(f, Unread):
                unread.add(f.line)
                continue
            if isinstance(f, (Equal, NotEqual, Less)):
                op = {Equal: "==", NotEqual: "!=", Less: "<"}[type(f)]
                sides = (f.left, f.right)
            elif isinstance(f, NonNegative):
                op, sides = ">=", (f.value, ConstKey(0))
            else:
                continue
            left, right = self.poly(sides[0]), self.poly(sides[1])
            if left is None or right is None:
                unread.add(0)
                continue
            left, right = (substitute(p, deep(fold)) for p in (left, right))
            if space == "shared":  # as the indices: block_idx is uniform in a shared array
                left, right = (substitute(p, deep(
                    lambda a: atom(("block", a)) if isinstance(a, Digit) and
                    a.coord.startswith("bid") else None)) for p in (left, right))
            if is_uniform(left) and is_uniform(right):
                continue  # the same in both threads of an example
            guards.append(Guard(op, left, right))
        return tuple(guards), tuple(sorted(unread))

    def _launch_equalities(self, facts: list) -> Callable[[object], Poly | None]:
        """``assert block_dim.x == 256``: the atom ``block_dim.x`` is 256 here; ``assert
        block_dim.x % 32 == 0``: it is ``32 * Q``, Q a :class:`~.poly.Quotient` (the returned
        function is a dict's ``get``)."""
        known: dict = {}
        divisors: dict = {}
        alike: list[tuple[SpecialKey, SpecialKey]] = []
        for f in facts:
            if isinstance(f, Equal):
                for a, b in ((f.left, f.right), (f.right, f.left)):
                    if isinstance(a, SpecialKey) and a.name in ("block_dim", "grid_dim"):
                        pb = self.poly(b)
                        if pb is not None and not pb.terms and pb.const >= 1:
                            known[a] = const(pb.const)
                        elif isinstance(b, SpecialKey) and b.name in ("block_dim", "grid_dim") \
                                and repr(b) < repr(a):
                            alike.append((a, b))
                    divisor = _divisor(a, b)
                    if divisor is not None:
                        extent, k = divisor
                        divisors[extent] = math.lcm(divisors.get(extent, 1), k)
        # ``assert grid_dim.x == grid_dim.y`` (a square grid): one extent is written as the
        # other (the later as the earlier, so that no two rewrite each other), or as the
        # constant either is known to be.
        for a, b in sorted(alike, key=repr):
            if a not in known:
                known[a] = known.get(b, atom(b))
            elif b not in known:
                known[b] = known[a]
        # ``assert block_dim.x % 32 == 0``: block_dim.x is 32 * Q, Q = block_dim.x // 32 >= 1.
        for extent, k in divisors.items():
            if extent not in known:
                known[extent] = atom(Quotient(extent, k)).scaled(k)
        return known.get

    def _folding(self, subst: Callable[[object], Poly | None]) -> Callable[[object], Poly | None]:
        """``subst`` (the launch's known extents), and a uniform ``//``, ``%``, shift or bit
        operation of values it makes constants folded to its value: ``block_dim.x // 32`` is 4
        under ``assert block_dim.x == 128``."""
        def go(a) -> Poly | None:
            known = subst(a)
            if known is not None or not isinstance(a, OpKey) or a.op not in FOLDED:
                return known
            left, right = self.poly(a.left), self.poly(a.right)
            if left is None or right is None:
                return None
            left, right = substitute(left, go), substitute(right, go)
            if right.terms:
                return None
            if left.terms:
                return _quotient_fold(a.op, left, right.const)
            value = FOLDED[a.op](left.const, right.const)
            return None if value is None else const(value)

        return go

    def _range(self, digit: Digit, facts: list, subst, stepped: frozenset | set = frozenset()
               ) -> Poly | None:
        """The digit's range ``[0, n)``: ``n``, or ``None`` when not bounded; a fact ``digit <
        c`` (``if lane < WARPS:``) narrows it, unless ``n`` is an extent in ``stepped`` (one
        the indices step by: both bounds hold, and the proof needs that one)."""
        n = self._full_range(digit, facts, subst, stepped)
        if n is not None and n.terms and _steps_by(n, stepped):
            return n
        for f in facts:
            if isinstance(f, Less) and f.right.integer is not None and \
                    self.poly(f.left) == atom(digit):
                bound = max(f.right.integer, 0)
                if n is None or n.terms or bound < n.const:
                    n = const(bound)
        return n

    def _full_range(self, digit: Digit, facts: list, subst,
                    stepped: frozenset | set = frozenset()) -> Poly | None:
        if digit.of is not None:
            from .splits import derived_range
            return derived_range(digit.of, lambda d: self._range(d, facts, subst))
        if not digit.is_thread:
            for loop in self.loops.values():
                if loop.digit == digit:
                    return const(loop.trip) if loop.trip is not None else None
            return None
        axis = int(digit.coord[3])
        if axis >= self.ndim and self.is_kernel:
            return const(1)  # a Kernel1D launch has one thread along y and z
        name = "block_dim" if digit.coord.startswith("tid") else "grid_dim"
        whole = substitute(atom(SpecialKey(name, axis)), subst)
        special = SpecialKey("thread_idx" if name == "block_dim" else "block_idx", axis)
        for f in facts:
            if whole.terms and _steps_by(whole, stepped):
                break   # the extent an index steps by stays the bound (see _range)
            if isinstance(f, Less) and f.left == special and f.right.integer is not None:
                bound = f.right.integer
                if not whole.terms:
                    bound = min(bound, whole.const)
                whole = const(max(bound, 0))
        if digit.part == "all":
            return whole
        if digit.part == "lo":
            return const(digit.radix if whole.terms else min(digit.radix, whole.const))
        if whole.terms:
            exact = _quotient_fold("//", whole, digit.radix)  # (32 * Q) // 32 is Q
            if exact is not None:
                return exact
            # At most the hardware's block (or grid) along this axis.
            whole = const(HARDWARE.special(name, axis).hi)
        return const(-(-whole.const // digit.radix))


def _divisor(a: Key, b: Key) -> tuple[SpecialKey, int] | None:
    """``(block_dim.x, k)`` where ``a == b`` reads ``block_dim.x % k == 0`` (or grid_dim's)."""
    if (isinstance(a, OpKey) and a.op == "%" and isinstance(a.left, SpecialKey)
            and a.left.name in ("block_dim", "grid_dim") and b.integer == 0):
        k = a.right.integer
        if k is not None and k > 1:
            return a.left, k
    return None


def _quotient_fold(op: str, left: Poly, c: int) -> Poly | None:
    """``left op c`` for ``left`` a multiple of one :class:`~.poly.Quotient` (``32 * Q``) where
    the division is exact: ``(32 * Q) // 8`` is ``4 * Q``, ``(32 * Q) % 8`` is 0."""
    if left.const or len(left.terms) != 1:
        return None
    (mono, m), = left.terms
    if len(mono) != 1 or not isinstance(mono[0], Quotient) or m <= 0:
        return None
    if op == ">>" and 0 <= c < 31:
        op, c = "//", 1 << c
    if op not in ("//", "%") or c <= 0 or m % c:
        return None
    return atom(mono[0]).scaled(m // c) if op == "//" else const(0)


def _zero_sum_digits(p: Poly) -> tuple[Digit, ...]:
    """The thread digits of ``p`` when ``p == 0`` leaves each of them 0: ``p`` a sum of terms
    each a thread digit times positive coefficients and launch extents (``block_idx.y *
    block_dim.y + thread_idx.y``), so each term is at least 0 and 0 only with its digit."""
    digits = []
    if p.const or not p.terms:
        return ()
    for mono, k in p.terms:
        ds = [a for a in mono if isinstance(a, Digit)]
        if k <= 0 or len(ds) != 1 or not ds[0].is_thread or ds[0].of is not None or not all(
                positive_atom(a) for a in mono if not isinstance(a, Digit)):
            return ()
        digits.append(ds[0])
    return tuple(digits)


# The uniform operations :meth:`Forms._folding` evaluates, as the language defines them (floor
# division and remainder, arithmetic shifts); None where the operand is out of their range.
FOLDED: dict[str, Callable[[int, int], int | None]] = {
    "//": lambda a, b: a // b if b > 0 else None,
    "%": lambda a, b: a % b if b > 0 else None,
    ">>": lambda a, b: a >> b if 0 <= b < 63 else None,
    "<<": lambda a, b: a << b if 0 <= b < 31 and 0 <= a < 1 << 31 else None,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}


def _digit_count(mono: tuple) -> int:
    return sum(isinstance(a, Digit) for a in mono)


def _sum_of_digits(p: Poly) -> bool:
    """Is ``p`` a constant plus digits times nonnegative uniform coefficients, one digit a term
    (never below its constant: a digit is at least 0, but an XOR with a value of unknown sign,
    which is no such sum)?"""
    from .splits import may_be_negative
    if not digits_of(p) or any(may_be_negative(d) for d in digits_of(p)):
        return False
    for mono, _ in p.terms:
        if sum(isinstance(a, Digit) for a in mono) != 1:
            return False
    return all(magnitude(c) == c for c in coefficients(p).values())
