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

**The proof.**  Two threads ``T != T'`` collide on a pair of stores ``(s, s')`` of one array when
every index dimension agrees.  In each dimension the difference is ``sum(c_d * delta_d)`` over
the digits plus the difference of the two stores' uniform parts.  When the digits of a dimension
form a *mixed radix* (sorted by coefficient, each coefficient exceeds the largest sum the smaller
digits can make: ``c_k > sum(|c_j| * (n_j - 1))``), the only solution has every ``delta`` zero;
those digits are then equal in both threads, drop out of the other dimensions, and the rule is
applied again.  The pair is race-free when every digit of every thread coordinate that must be
unique (the grid's for global memory, the block's for shared memory) is shown equal, or when a
dimension has no solution at all (the stores' offsets differ by a multiple the digits cannot
make up).  A coordinate pinned by a condition (``if lane == 0:``) is equal in both threads when
both stores are under the same pin.

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
    OpKey,
    ShapeKey,
    SpecialKey,
    UidKey,
    UnaryKey,
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
    ordered_terms,
    poly_text,
    positive_atom,
    substitute,
    unassume,
)

if TYPE_CHECKING:
    from .context import Definitions

__all__ = ["Assumption", "Digit", "Forms", "LoopDigit", "Pin", "StoreForm", "assume",
           "param_atoms", "prove_pair"]


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
                     form.whole, form.launch, bounded)


def guard_assumptions(forms: Iterable[StoreForm]) -> list[Assumption]:
    """What the conditions around the stores show of uniform atoms, where the stores run: ``P <
    U`` with ``P >= c`` (``if col < n:``) makes ``U >= c + 1``, so an unchanged parameter or
    extent ``v`` with ``U == v + k`` is at least ``c + 1 - k``; where that is 1 or more, ``v`` is
    a positive atom there, as the pair proof needs it, with no check by the launcher."""
    best: dict = {}
    for f in forms:
        for q, u in f.bounded:
            if u.const or len(u.terms) != 1:
                continue
            (mono, k), = u.terms
            if k != 1 or len(mono) != 1 or not isinstance(mono[0], (VarKey, ShapeKey)):
                continue
            bound = q.const + 1
            if bound >= 1 and bound > best.get(mono[0], 0):
                best[mono[0]] = bound
    return [Assumption(v, const(n)) for v, n in sorted(best.items(), key=lambda t: repr(t[0]))]


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
    (two stores under the same one see the same value), ``value`` is it where known."""

    source: tuple
    value: int | None = None


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
        if isinstance(k, VarKey):
            return (f"'{k.var.name}' is assigned more than once, and its value at the store "
                    "is neither the one assignment that reaches it nor a value every thread "
                    "shares")
        if isinstance(k, LaneKey):
            return "lane_id() outside a kernel of one-dimensional blocks"
        if isinstance(k, OpKey):
            return (f"a '{k.op}' of thread-dependent values (a product of two thread values, "
                    "or a division, remainder or bit operation the split rules do not follow)")
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
                   start_min: int | None) -> None:
        """``for var in range(start, stop, step)`` (``step`` a nonzero constant, ``stop <=
        stop_max``, ``start >= start_min`` where known) begins; its body sees ``var`` as
        ``start + step * k`` with ``start + step * k < stop``."""
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
        digit = Digit(f"loop:{var.name}@{self.loop_count}")
        self.loops[id(var)] = LoopDigit(digit, start_poly, step_poly, trip)

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
        from .splits import deep, nested_digits
        subst = self._launch_equalities(facts)
        fold = self._folding(subst)
        dims = [substitute(p, deep(fold)) for p in dims]
        pins: dict = {}
        exact = {f.value for f in facts if isinstance(f, Exact)}
        for f in facts:
            if isinstance(f, Equal):
                for a, b in ((f.left, f.right), (f.right, f.left)):
                    pa, pb = self.poly(a), self.poly(b)
                    if pa is None or pb is None or not is_uniform(pb):
                        continue
                    pa = substitute(pa, subst)
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
                            pins[digit] = Pin((a, b), value)
        if space == "shared":
            # Threads of different blocks never share a shared array: block_idx is uniform.
            dims = [substitute(p, deep(lambda a: atom(("block", a)) if isinstance(a, Digit) and
                                    a.coord.startswith("bid") else None)) for p in dims]
        ranges: dict = {}
        for p in dims:
            for digit in nested_digits(p):  # and those a split is computed from (.splits)
                ranges[digit] = self._range(digit, facts, subst)
        for digit in pins:
            ranges.setdefault(digit, self._range(digit, facts, subst))
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
        return StoreForm(tuple(dims), pins, ranges, line, text, single, whole,
                         getattr(subst, "__self__", {}), tuple(bounded))

    def _launch_equalities(self, facts: list) -> Callable[[object], Poly | None]:
        """``assert block_dim.x == 256``: the atom ``block_dim.x`` is 256 here (the returned
        function is a dict's ``get``)."""
        known: dict = {}
        divisors: dict = {}
        for f in facts:
            if isinstance(f, Equal):
                for a, b in ((f.left, f.right), (f.right, f.left)):
                    if isinstance(a, SpecialKey) and a.name in ("block_dim", "grid_dim"):
                        pb = self.poly(b)
                        if pb is not None and not pb.terms and pb.const >= 1:
                            known[a] = const(pb.const)
                    divisor = _divisor(a, b)
                    if divisor is not None:
                        extent, k = divisor
                        divisors[extent] = math.lcm(divisors.get(extent, 1), k)
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
            if known is not None or not isinstance(a, OpKey) or a.op not in _FOLDED:
                return known
            left, right = self.poly(a.left), self.poly(a.right)
            if left is None or right is None:
                return None
            left, right = substitute(left, go), substitute(right, go)
            if right.terms:
                return None
            if left.terms:
                return _quotient_fold(a.op, left, right.const)
            value = _FOLDED[a.op](left.const, right.const)
            return None if value is None else const(value)

        return go

    def _range(self, digit: Digit, facts: list, subst) -> Poly | None:
        """The digit's range ``[0, n)``: ``n``, or ``None`` when not bounded; a fact ``digit <
        c`` (``if lane < WARPS:``) narrows it."""
        n = self._full_range(digit, facts, subst)
        for f in facts:
            if isinstance(f, Less) and f.right.integer is not None and \
                    self.poly(f.left) == atom(digit):
                bound = max(f.right.integer, 0)
                if n is None or n.terms or bound < n.const:
                    n = const(bound)
        return n

    def _full_range(self, digit: Digit, facts: list, subst) -> Poly | None:
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
_FOLDED: dict[str, Callable[[int, int], int | None]] = {
    "//": lambda a, b: a // b if b > 0 else None,
    "%": lambda a, b: a % b if b > 0 else None,
    ">>": lambda a, b: a >> b if 0 <= b < 63 else None,
    "<<": lambda a, b: a << b if 0 <= b < 31 and 0 <= a < 1 << 31 else None,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}


# ---- the proof for a pair of stores ----------------------------------------------------------


def _split(forms: tuple[StoreForm, StoreForm]) -> tuple[tuple[StoreForm, StoreForm], dict] | str:
    """Both forms with every thread coordinate written in one radix (``tid`` as ``32 * (tid //
    32) + tid % 32`` where either uses ``tid % 32``); the merged digit ranges."""
    radix: dict[str, int] = {}
    for f in forms:
        for digit in list(f.ranges) + list(f.pins):
            if digit.part != "all" and radix.setdefault(digit.coord, digit.radix) != digit.radix:
                return f"{Digit(digit.coord).text()} is split in two different radices"
    if not radix:
        return forms, {}

    def rewrite(a):
        if isinstance(a, Digit) and a.part == "all" and a.coord in radix:
            r = radix[a.coord]
            return atom(Digit(a.coord, "hi", r)).scaled(r).plus(atom(Digit(a.coord, "lo", r)))
        return None

    out = []
    for f in forms:
        dims = tuple(substitute(p, rewrite) for p in f.dims)
        pins = {}
        for digit, value in f.pins.items():
            if digit.part == "all" and digit.coord in radix:
                r = radix[digit.coord]
                v = value.value
                pins[Digit(digit.coord, "hi", r)] = Pin(("hi", value.source),
                                                        None if v is None else v // r)
                pins[Digit(digit.coord, "lo", r)] = Pin(("lo", value.source),
                                                        None if v is None else v % r)
            else:
                pins[digit] = value
        ranges = dict(f.ranges)
        # A split coordinate tells threads apart only by both of its parts: each is a digit of
        # the pair, in the index or not.
        for coord, r in radix.items():
            for part in ("lo", "hi"):
                ranges.setdefault(Digit(coord, part, r), None)
        items = list(f.ranges.items()) + [(Digit(c), (f.whole or {}).get(c)) for c in radix]
        for digit, n in items:
            if digit.part == "all" and digit.coord in radix:
                r = radix[digit.coord]
                lo = Digit(digit.coord, "lo", r)
                if ranges.get(lo) is None:
                    ranges[lo] = const(r) if n is None or n.terms else const(min(r, n.const))
                top = n
                if n is not None and n.terms:
                    name = "block_dim" if digit.coord.startswith("tid") else "grid_dim"
                    top = const(HARDWARE.special(name, int(digit.coord[3])).hi)
                hi = Digit(digit.coord, "hi", r)
                if ranges.get(hi) is None:
                    ranges[hi] = None if top is None else const(-(-top.const // r))
        for coord in radix:
            ranges.pop(Digit(coord), None)
        bounded = tuple((substitute(q, rewrite), u) for q, u in f.bounded)
        out.append(StoreForm(dims, pins, ranges, f.line, f.text, f.single, f.whole, f.launch,
                             bounded))
    return (out[0], out[1]), {}


@node
class PairProof:
    """The outcome for a pair of stores: ``ok``, and the rule (or the reason it failed)."""

    ok: bool
    text: str
    missing: tuple[Digit, ...] = ()
    hint: str = ""  # what would make the pair provable, where a rule knows (.monotone)


def prove_pair(a: StoreForm, b: StoreForm, required: frozenset[str]) -> PairProof:
    """Can a thread's store ``a`` and another thread's store ``b`` write the same element?
    ``required``: the thread coordinates that tell threads apart here."""
    from .splits import align_loops
    split = _split((a, align_loops(a, b)))  # one name per loop variable (.splits)
    if isinstance(split, str):
        return PairProof(False, split)
    (a, b), _ = split
    # Pins that both stores share (same digit, same value) hold the digit equal.
    equal = {d for d, v in a.pins.items() if b.pins.get(d) == v}
    ranges: dict = {}
    for f in (a, b):
        for d, n in f.ranges.items():
            # A digit's value in each thread lies in its own store's range (``if tid < 16:``
            # narrows one store only): the pair needs the larger of the two.
            ranges[d] = _wider(ranges[d], n) if d in ranges else n
    from .splits import implied, prepare
    ranges = prepare(ranges)  # a split by a K not shown >= 1 bounds nothing
    thread_digits = {d for d in ranges if d.is_thread and d.coord in required}
    pinned = {d for d in thread_digits if d in equal}
    rules: list[str] = []
    # A digit is the same in both threads where each store leaves it one known value, and the
    # two values agree (a range of one in one store says nothing of the other's thread).
    forced = set(pinned) | {d for d in ranges
                            if _fixed_value(a, d) is not None
                            and _fixed_value(a, d) == _fixed_value(b, d)}
    dims = list(zip(a.dims, b.dims))
    # A sum bounded in both stores bounds the difference of its digits between the threads.
    bounded = [pair for pair in a.bounded if pair in b.bounded]
    conditions: list[str] = []  # the bounds a step of the proof needed, for its rule's text
    used: set = set()
    progress = True
    while progress:
        progress = False
        for pa, pb in dims:
            verdict = _dimension(pa, pb, ranges, forced, _radix_bounds(bounded, forced),
                                 conditions)
            if verdict is None:
                continue
            if verdict is True:
                return PairProof(True, "the two stores' offsets never meet")
            new = verdict - forced
            if new:
                forced |= new
                progress = True
        # Splits and XORs of digits now equal (see .splits): a flat value equal in both
        # threads is one more dimension; an XOR's digit is equal.
        more_dims, more = implied(forced, ranges, used)
        if more_dims or more - forced:
            dims += more_dims
            forced |= more
            progress = True
    missing = sorted({d for d in thread_digits if d not in forced}, key=repr)
    uncovered = sorted(c for c in required if not any(d.coord == c for d in ranges)
                       and c not in a.single and c not in b.single)
    if missing or uncovered:
        names = [d.text() for d in missing] + [
            f"{'thread_idx' if c[0] == 't' else 'block_idx'}.{'xyz'[int(c[3])]}"
            for c in uncovered]
        return PairProof(False, "two threads that differ only in " + " and ".join(names) +
                         " can reach the same element",
                         tuple(missing) + tuple(Digit(c) for c in uncovered))
    for pa, _ in dims:
        for d, c in sorted(coefficients(pa).items(), key=lambda t: repr(t[0])):
            if d not in pinned:
                rules.append(f"{d.text()} (stride {poly_text(unassume(magnitude(c) or c))})")
    for d in sorted(pinned, key=repr):
        rules.append(f"one thread by {d.text()}")
    for text in dict.fromkeys(conditions):
        rules.append(f"the condition {text}")
    return PairProof(True, ", ".join(dict.fromkeys(rules)))


def _sum_of_digits(p: Poly) -> bool:
    """Is ``p`` a constant plus digits times nonnegative uniform coefficients, one digit a term
    (never below its constant: a digit is at least 0)?"""
    if not digits_of(p):
        return False
    for mono, _ in p.terms:
        if sum(isinstance(a, Digit) for a in mono) != 1:
            return False
    return all(magnitude(c) == c for c in coefficients(p).values())


def _radix_bounds(bounded, forced: set) -> list[tuple[frozenset, Poly, str]]:
    """For :func:`_mixed_radix`: each bounded sum as the set of its (digit, coefficient) terms
    that differ between the threads (a forced digit is equal in both: it adds nothing to the
    difference), the most that difference can be, ``U - 1 - P.const``, and the bound's text."""
    out = []
    for q, u in bounded:
        reach = u.plus(const(-1 - q.const))
        if magnitude(reach) != reach:
            continue
        key = frozenset((d, c) for d, c in coefficients(q).items() if d not in forced)
        if key:
            out.append((key, reach, f"{poly_text(unassume(q))} < {poly_text(unassume(u))}"))
    return out


def _fixed_value(f: StoreForm, d: Digit) -> int | None:
    """The one value the digit ``d`` can have in a thread that runs the store ``f``: 0 where
    its range there is one value, a pinned constant, else ``None``."""
    n = f.ranges.get(d) if d in f.ranges else (
        (f.whole or {}).get(d.coord) if d.is_thread else None)
    if n is not None and n == const(1):
        return 0
    pin = f.pins.get(d)
    return pin.value if pin is not None else None


def _wider(m: Poly | None, n: Poly | None) -> Poly | None:
    """The larger of two ranges (``None``, not bounded, where neither is shown larger)."""
    if m == n or m is None or n is None:
        return m if m == n else None
    if magnitude(m) is None or magnitude(n) is None:
        return None
    if nonnegative(m.plus(n.scaled(-1))):
        return m
    return n if nonnegative(n.plus(m.scaled(-1))) else None


def _dimension(pa: Poly, pb: Poly, ranges: dict, forced: set, bounds=(),
               conditions: list | None = None):
    """One index dimension of a pair: the digits it shows equal in both threads (a set), True
    when it shows the two stores never meet, or None when it shows nothing."""
    terms: list[tuple[Poly, Poly | None, set]] = []  # (coefficient, range, digits it stands for)
    offsets = Affine(pa.const - pb.const)
    coefficient: dict = {}
    for side, p in ((1, pa), (-1, pb)):
        for mono, k in ordered_terms(p.terms):
            ds = [x for x in mono if isinstance(x, Digit)]
            if len(ds) > 1:
                return None
            if not ds:
                offsets = offsets.plus(Affine(0, frozenset({(mono, side * k)})))
                continue
            (d,) = ds
            rest = tuple(x for x in mono if x is not d)
            c = Affine(0, frozenset({(rest, k)})) if rest else const(k)
            coefficient.setdefault(d, [Affine(), Affine()])
            coefficient[d][0 if side == 1 else 1] = coefficient[d][0 if side == 1 else 1].plus(c)
    for d, (ca, cb) in coefficient.items():
        if d in forced:
            # Equal in both threads: the difference is (ca - cb) * d, a known-range offset.
            diff = ca.plus(cb.scaled(-1))
            if diff.terms or diff.const:
                terms.append((diff, ranges.get(d), set()))
            continue
        if ca == cb:
            terms.append((ca, ranges.get(d), {d}))
        else:
            for c in (ca, cb):
                if c.terms or c.const:
                    terms.append((c, ranges.get(d), set()))
    if _apart(offsets, coefficient, ranges, forced):
        return True
    if offsets.terms or offsets.const:
        if any(not all(positive_atom(x) for x in m) for m, _ in offsets.terms):
            return None  # an unknown uniform difference: nothing is shown
        terms.append((offsets, const(2), {"offset"}))
    # A fixed order, whatever the hash order of the forms' sets: the same proof on every run.
    terms.sort(key=lambda t: (poly_text(t[0]), sorted(map(repr, t[2]))))
    if not terms:
        return set()
    ordered = _mixed_radix(terms, bounds, conditions)
    if ordered is None:
        return None
    shown = set()
    for _, _, ds in ordered:
        shown |= ds
    if "offset" in shown:
        return True  # the offset term can only be zero, but it is not: no solution
    return {d for d in shown if isinstance(d, Digit)}


def _apart(offsets: Poly, coefficient: dict, ranges: dict, forced: set) -> bool:
    """Interval disjointness: with constant coefficients and ranges, is the difference of the two
    stores' indices in this dimension never zero?  (A halo column 0 beside centre columns ``tx +
    1``: the difference is ``-(tx + 1) <= -1``.)  Each thread's digits are separate values,
    except those shown equal in both threads."""
    if offsets.terms:
        return False
    lo = hi = offsets.const
    for d, (ca, cb) in coefficient.items():
        n = ranges.get(d)
        if ca.terms or cb.terms or n is None or n.terms or n.const < 1:
            return False
        top = n.const - 1
        parts = [ca.const - cb.const] if d in forced else [ca.const, -cb.const]
        for c in parts:
            lo += min(0, c * top)
            hi += max(0, c * top)
    return lo > 0 or hi < 0


def _mixed_radix(terms, bounds=(), conditions: list | None = None):
    """``terms`` in an order where each coefficient exceeds what the smaller ones can sum to
    (then ``sum(c * delta) == 0`` with ``|delta| < n`` forces every delta to 0); ``None`` when
    no such order is shown.  ``bounds`` (see :func:`_radix_bounds`) give the most some sets of
    terms can sum to, where a condition bounds their sum (``row * n + col`` under ``if col <
    n:``: the column's digits reach n - 1 together, whatever the grid)."""
    items = []
    for c, n, ds in terms:
        m = magnitude(c)
        if m is None or (m.const == 0 and not m.terms):
            return None
        if n is not None and magnitude(n) is None:
            return None
        items.append((m, n, ds))
    ordered = []
    # Bounds of the largest |sum| of the digits placed so far, each with the condition it
    # rests on ("" for the digits' own ranges).
    reaches: list[tuple[Poly, str]] = [(const(0), "")]
    placed: set | None = set()  # their (digit, coefficient) terms, while each is a digit's
    needed: list[str] = []
    while items:
        by: dict[int, list[str]] = {}  # each item that fits: the reaches it fits under
        for i, (m, _, _) in enumerate(items):
            under = [text for r, text in reaches
                     if nonnegative(m.plus(r.scaled(-1)).plus(const(-1)))]
            if under:
                by[i] = under
        fits = list(by)
        if not fits:
            return None
        # The smallest coefficient goes next (a larger one placed early spends its reach).
        smallest = [i for i in fits if all(nonnegative(o.plus(items[i][0].scaled(-1)))
                                           for o, _, _ in items)]
        chosen = smallest[0] if smallest else fits[0]
        if "" not in by[chosen]:
            needed.append(by[chosen][0])
        m, n, ds = items.pop(chosen)
        ordered.append((m, n, ds))
        if items:
            digits = [d for d in ds if isinstance(d, Digit)]
            if placed is not None and len(ds) == 1 and len(digits) == 1:
                placed.add((digits[0], m))
            else:
                placed = None
            # Only the largest digit may be unbounded, unless a bounded sum covers it.
            reaches = [] if n is None else [(r.plus(mul(m, n.plus(const(-1)))), text)
                                            for r, text in reaches]
            if placed is not None:
                reaches += [(reach, text) for key, reach, text in bounds if key == placed]
            if not reaches:
                return None
    if conditions is not None:
        conditions.extend(needed)
    return ordered
