"""Wrapping: when an index computed in a fixed-width type still tells threads apart.

The ownership proofs (:mod:`.ownership`) hold for indices as mathematical integers.  An index
computed in a fixed-width type is exact when its arithmetic is proven not to wrap
(:func:`index_is_exact`); otherwise, with no widening cast in between, it agrees with the exact
value modulo ``2**bits``, and two different exact values stay different when they differ by less
than that.  The largest difference (:func:`largest_difference`, :func:`param_difference`) is then
bounded from the hardware's limits, or checked by the launcher (:func:`fits_check`, an
:class:`~gpu_native.spec.IndexFits` record).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import HARDWARE, Affine, is_widening
from ..launchexpr import Arith, Const, LaunchExpr, LaunchIndex, ParamValue, largest_value
from ..spec import IndexFits
from .facts import ConstKey, OpKey, ShapeKey, SpecialKey, UidKey, VarKey, inlined_call
from .poly import (
    Poly,
    Quotient,
    coefficients,
    const,
    magnitude,
    mul,
    ordered_terms,
    positive_atom,
    substitute,
)

if TYPE_CHECKING:
    from .bounds import BoundsProofs
    from .ownership import Assumption


def index_is_exact(e: ir.Expr, bounds: BoundsProofs, single_def, depth: int = 0,
                   checks: list | None = None) -> bool | str:
    """Does the index ``e`` equal its mathematical value?  True when every ``+ - *`` on a
    thread-varying path is proven not to wrap; "ring" when some may, but none below a widening
    cast (then the value is right modulo ``2**bits``); False otherwise.  Where ``checks`` is
    given, a sum or product of launch indices below a split or a widening cast that may wrap
    (the block number ``block_idx.x + grid_dim.x * block_idx.y`` of ``bid % grid_dim.y``, and
    ``bid // grid_dim.y + bid % grid_dim.y``) is exact under a launch check, which ``checks``
    receives (:class:`~gpu_native.spec.IndexFits`); the caller records them unless the answer
    is False."""
    state = {"ring": False}

    def walk(x: ir.Expr, under_cast: bool, d: int) -> bool:
        if d > 48:
            return False
        if isinstance(x, ir.Local):
            v = single_def(x.var)
            return True if v is None else walk(v, under_cast, d + 1)
        if isinstance(x, ir.Cast):
            if is_widening(x):
                return walk(x.value, True, d + 1)
            return True  # a narrowing or float cast is an atom (uniform, or the form failed)
        if isinstance(x, ir.BinOp):
            # A split or an XOR of a wrapped value is no function of the exact one (.splits).
            inner = under_cast or x.op in ("//", "%", "&", ">>", "^", "|")
            ok = walk(x.left, inner, d + 1) and walk(x.right, inner, d + 1)
            if not ok:
                return False
            if x.op in ("+", "*", "-", "<<") and isinstance(x.ty, ir.ScalarType):
                # An unsigned value is never negative, wrapped or not: it is exact only where
                # the sum or product is proven to stay within its type.
                if (bounds.no_wrap.holds(x) if x.op in ("+", "*") else False) \
                        if x.ty.info.kind == "uint" else (bounds.is_nonneg(x)
                                                          or operands_keep_it(x, bounds)):
                    return True
                if under_cast and checks is not None and x.op in ("+", "*") and \
                        _launch_checked(x, single_def, checks):
                    return True
                if under_cast:
                    return False
                state["ring"] = True
            return True
        if isinstance(x, ir.UnaryOp):
            if not walk(x.operand, under_cast, d + 1):
                return False
            if x.op == "-":
                if under_cast:
                    return False
                state["ring"] = True
            return True
        if isinstance(x, ir.Call):
            # The proofs see a device function's returned arithmetic as if written here: it is
            # exact where that arithmetic is (an opaque call is an atom, as a load is).
            inlined = inlined_call(x)
            return True if inlined is None else walk(inlined, under_cast, d + 1)
        return True

    if not walk(e, False, depth):
        return False
    return "ring" if state["ring"] else True


def _launch_checked(x: ir.BinOp, single_def, checks: list) -> bool:
    """Is ``x`` made of thread coordinates, launch extents and constants of at most a block's
    extent by ``+``, ``*``, and ``//`` or ``%`` by a launch extent or a positive constant?
    Then a launch check keeps it from wrapping where the hardware's largest grid could wrap
    it; the check goes to ``checks``."""
    from .launch import launch_tree
    tree = launch_tree(x, _LAUNCH_INDICES, ("+", "*", "//", "%"), single_def)
    if tree is None or not _coordinate(tree) or not isinstance(x.ty, ir.ScalarType):
        return False
    check = fits_check(tree, x.ty, x.span)
    if check is not None:
        checks.append(check)
    return True


def operands_keep_it(x: ir.BinOp, bounds: BoundsProofs, here: bool = False) -> bool:
    """Does ``x`` stay within its type for any values its operands may hold where it is
    computed?  ``n - 1 - i`` in i64, ``n`` an extent and ``i`` a grid's uid or a loop's counter
    from 0, is at least ``-1 - i``: its operands keep it from wrapping, though it may be
    negative.  The facts that hold here bound the operands unless ``x`` is part of a local's
    value, computed before the conditions around its use (then only the launch facts do, as
    for :meth:`.nowrap.NoWrapProofs.prove`), unless the facts there kept it (``kept``, shown
    by a call with ``here`` where the value was computed)."""
    from ..analysis.ranges import BINARY, type_interval

    if id(x) in bounds.defs.kept:
        return True
    full = type_interval(x.ty)
    rule = BINARY.get(x.op)
    if full is None or rule is None:
        return False
    if id(x) in bounds.defs.binops and not here:
        with bounds.without_facts():
            left, right = bounds.interval(x.left), bounds.interval(x.right)
    else:
        left, right = bounds.interval(x.left), bounds.interval(x.right)
    if left.lo > left.hi or right.lo > right.hi:
        return False
    r = rule(left, right)
    return r is not None and r.within(full)


# The largest constant a thread coordinate may be scaled by in :func:`exact_value`: a block's
# extent (``block_idx.x * 256 + thread_idx.x``), not a hash's multiplier.
_COORDINATE_SCALE = 1024
_LAUNCH_INDICES = ("thread_idx", "block_idx", "block_dim", "grid_dim")


def exact_value(e: ir.Expr, proven: dict, single_def, checks: list, depth: int = 0,
                fits: Callable[[ir.BinOp], bool] | None = None) -> bool:
    """Is ``e``'s machine value its mathematical one, shown without new proofs: every ``+ - *
    <<`` on its way already proven not to wrap (``proven``, the no-wrap proofs' BinOps by id),
    or a thread coordinate ``block_idx.x * block_dim.x + thread_idx.x`` (or with a constant of
    at most a block's extent), for which ``checks`` receives the launch check that keeps it
    within its type (:class:`~gpu_native.spec.IndexFits`: only grids of 2**31 threads along
    an axis fail it in i32).  Reading a variable is exact: its value is what the proofs use.
    ``fits``, where given, tells a ``+ - *`` that its operands keep within its type (see
    :func:`operands_keep_it`)."""
    if depth > 48:
        return False
    if isinstance(e, (ir.Const, ir.Special, ir.Shape, ir.UidComponent, ir.LaneId)):
        return True
    if isinstance(e, ir.Local):
        d = single_def(e.var)
        return True if d is None else exact_value(d, proven, single_def, checks, depth + 1,
                                                  fits)
    if isinstance(e, ir.Cast):
        return is_widening(e) and exact_value(e.value, proven, single_def, checks, depth + 1,
                                              fits)
    if isinstance(e, ir.Call):
        inlined = inlined_call(e)
        return inlined is not None and exact_value(inlined, proven, single_def, checks,
                                                   depth + 1, fits)
    if isinstance(e, ir.BinOp) and isinstance(e.ty, ir.ScalarType):
        if e.op in ("+", "-", "*", "<<") and id(e) not in proven and not (
                fits is not None and e.op != "<<" and fits(e)):
            from .launch import launch_tree
            tree = launch_tree(e, _LAUNCH_INDICES, ("+", "*"), single_def)
            if tree is None or not _coordinate(tree):
                return False
            assert isinstance(e.ty.info.max, int)
            if hardware_value(tree) > e.ty.info.max:  # a grid the hardware allows could wrap it
                checks.append(IndexFits(tree, e.ty.info.max, str(e.ty), e.span.line,
                                        e.span.col, e.span.end_col))
            return True
        return all(exact_value(side, proven, single_def, checks, depth + 1, fits)
                   for side in (e.left, e.right))
    return False


def _coordinate(tree: LaunchExpr) -> bool:
    """A launch tree of thread coordinates whose constants are at most a block's extent, each
    ``//`` or ``%`` by a launch extent or a positive constant."""
    if isinstance(tree, Const):
        return 0 <= tree.value <= _COORDINATE_SCALE
    if isinstance(tree, LaunchIndex):
        return True
    assert isinstance(tree, Arith)  # launch_tree's, of arithmetic only
    if tree.op in ("//", "%"):
        from .launch import fixed_divisor
        return _coordinate(tree.left) and fixed_divisor(tree.right)
    return _coordinate(tree.left) and _coordinate(tree.right)


def digit_terms(p: Poly, ranges: dict) -> list[tuple[Poly, Poly | None]]:
    """The terms of ``p`` that hold one digit: (its coefficient, the digit's range)."""
    return [(c, ranges.get(d)) for d, c in sorted(coefficients(p).items(),
                                                   key=lambda t: repr(t[0]))]


def folded_terms(p: Poly, ranges: dict, bounded: Iterable[tuple[Poly, Poly]] = ()
                 ) -> list[tuple[Poly, Poly | None]]:
    """:func:`digit_terms`, with the digits of each bounded sum of the store (``P < U``, see
    :class:`~.ownership.StoreForm`) that ``p`` holds as ``s * P`` taken together as one term
    ``(s, U - P.const)``: ``row * n + col`` under ``if row < n and col < n:`` differs between
    two threads by at most ``(n - 1) + n * (n - 1)``, whatever the grid."""
    coeffs = coefficients(p)
    terms: list[tuple[Poly, Poly | None]] = []
    for q, u in bounded:
        qc = coefficients(q)
        if not qc or not set(qc) <= set(coeffs):
            continue
        scales = [_ratio(coeffs[d], qc[d]) for d in sorted(qc, key=repr)]
        scale = next((r for r in scales if r is not None), None)
        if scale is None or any(mul(scale, c) != coeffs[d] for d, c in qc.items()):
            continue
        terms.append((scale, u.plus(const(-q.const))))
        for d in qc:
            del coeffs[d]
    return terms + [(c, ranges.get(d)) for d, c in sorted(coeffs.items(), key=lambda t: repr(t[0]))]


def _ratio(c: Poly, k: Poly) -> Poly | None:
    """``c / k`` where ``k`` is ``c`` or a constant that divides each coefficient of ``c``;
    else ``None``."""
    if c == k:
        return const(1)
    if k.terms or k.const <= 0:
        return None
    if c.const % k.const or any(v % k.const for _, v in c.terms):
        return None
    return Affine(c.const // k.const, frozenset((m, v // k.const) for m, v in c.terms))


# An extent of an array, or a product of distinct extents of one array, counts at most its
# elements, which a GPU's 49-bit virtual address space bounds.
MAX_ELEMENTS = 1 << 48


def extent_difference(terms: Iterable[tuple[Poly, Poly | None]]) -> int | None:
    """An upper bound of ``sum(|c| * (n - 1))`` where coefficients and ranges are made of the
    launch's extents and the arrays' (``i * a.shape[1] + j`` under ``if i < a.shape[0]:`` and
    ``for j in range(a.shape[1])`` differs by at most ``a``'s element count): each monomial a
    product of launch extents and of distinct extents of at most one array; ``None`` where a
    term holds anything else (a parameter, an unbounded range, two arrays' extents)."""
    total = 0
    for c, n in terms:
        if n is None:
            return None
        m, nm = magnitude(c), magnitude(n.plus(const(-1)))
        if m is None and not _extents_only(c):
            return None
        product = mul(c if m is None else m, n.plus(const(-1)) if nm is None else nm)
        for mono, k in product.terms:
            if k < 0:
                continue  # a product of nonnegative extents: it only lowers the sum
            bound = _monomial_bound(mono)
            if bound is None:
                return None
            total += k * bound
        total += max(product.const, 0)
    return total


def _extents_only(c: Poly) -> bool:
    """Is ``c`` a nonnegative combination of extents (positive coefficients)?"""
    return c.const >= 0 and all(k > 0 for _, k in c.terms)


def _monomial_bound(mono: tuple) -> int | None:
    bound = 1
    arrays: dict[int, set[int]] = {}  # the axes of each array's extents in the monomial
    for a in mono:
        if isinstance(a, ShapeKey):
            axes = arrays.setdefault(id(a.array), set())
            if a.axis in axes:
                return None
            axes.add(a.axis)
        elif isinstance(a, SpecialKey) and a.name in ("block_dim", "grid_dim"):
            bound *= HARDWARE.special(a.name, a.axis).hi
        elif isinstance(a, Quotient):
            bound *= HARDWARE.special(a.extent.name, a.extent.axis).hi // a.k
        else:
            return None
    if len(arrays) > 1:
        return None
    return bound * (MAX_ELEMENTS if arrays else 1)


def largest_difference(terms: Iterable[tuple[Poly, Poly | None]]) -> LaunchExpr | None:
    """A launch-check tree (see :class:`~gpu_native.spec.LaunchCheck`) of the largest
    ``sum(|c| * (n - 1))``, or ``None`` when a range is not bounded by the launch."""
    tree: LaunchExpr = Const(0)
    for c, n in terms:
        if n is None:
            return None
        m, nm = magnitude(c), magnitude(n.plus(const(-1)))
        if m is None or nm is None:
            return None
        tree = Arith("+", tree, Arith("*", _tree(m), _tree(nm), "i64"), "i64")
    return tree


def _tree(p: Poly) -> LaunchExpr:
    out: LaunchExpr = Const(p.const)
    for m, k in ordered_terms(p.terms):
        t: LaunchExpr = Const(k)
        for a in m:
            t = Arith("*", t, _leaf(a), "i64")
        out = Arith("+", out, t, "i64")
    return out


def _leaf(a) -> LaunchExpr:
    """The launch-check tree of a positive launch atom: ``block_dim.x``, ``block_dim.x // 32``."""
    if isinstance(a, Quotient):
        return Arith("//", LaunchIndex(a.extent.name, a.extent.axis), Const(a.k), "i64")
    return LaunchIndex(a.name, a.axis)


def hardware_value(tree: LaunchExpr) -> int:
    """The largest value of a launch tree (one :func:`largest_difference` builds, or an
    :class:`~gpu_native.spec.IndexFits`'s) on any launch the hardware allows."""
    def extent(name: str, axis: int) -> tuple[int, int]:
        r = HARDWARE.special(name, axis)
        return r.lo, r.hi

    return largest_value(tree, extent)


def poly_tree(p: Poly, param_index: Callable[[str], int | None] = lambda name: None
              ) -> LaunchExpr | None:
    """``p`` as an exact launch-check tree (see :class:`~gpu_native.spec.ParamCheck`): its atoms
    ``block_dim``/``grid_dim`` and the scalar parameters ``param_index`` numbers; ``None`` for
    any other atom."""
    out: LaunchExpr | None = None
    for m, k in ordered_terms(p.terms):
        t: LaunchExpr | None = None if k == 1 else Const(k)
        for a in m:
            if positive_atom(a) and isinstance(a, (SpecialKey, Quotient)):
                leaf = _leaf(a)
            elif isinstance(a, VarKey) and (index := param_index(a.var.name)) is not None:
                leaf = ParamValue(index)
            else:
                return None
            t = leaf if t is None else Arith("*", t, leaf)
        assert t is not None  # a term's monomial holds an atom
        out = t if out is None else Arith("+", out, t)
    if out is None or p.const:
        c = Const(abs(p.const))
        out = Const(p.const) if out is None else Arith("+" if p.const > 0 else "-", out, c)
    return out


def param_difference(terms: Iterable[tuple[Poly, Poly | None]],
                     assumptions: Iterable[Assumption],
                     param_index: Callable[[str], int | None]) -> LaunchExpr | None:
    """As :func:`largest_difference`, for coefficients that hold scalar parameters whose sign
    the ``assumptions`` give: an exact tree over the launch and the parameters, or ``None``."""
    assumptions = list(assumptions)
    tree: LaunchExpr | None = None
    for c, n in terms:
        if n is None:
            return None
        signed, reach = c, n.plus(const(-1))  # a split's range may be a parameter (t % half)
        for a in assumptions:
            signed, reach = substitute(signed, a.replace), substitute(reach, a.replace)
        m = magnitude(signed)
        if magnitude(reach) != reach or m is None:
            return None
        ct = poly_tree(c if m == signed else c.scaled(-1), param_index)
        nt = poly_tree(n.plus(const(-1)), param_index)
        if ct is None or nt is None:
            return None
        product = ct if nt == Const(1) else nt if ct == Const(1) else Arith("*", ct, nt)
        tree = product if tree is None else Arith("+", tree, product)
    return tree


def fits_limit(ty: ir.ScalarType) -> int:
    """The largest difference of two exact values that ``ty``'s wrapped values keep apart."""
    return (1 << (ty.info.bits - 1)) - 1 if ty.info.kind == "int" else (1 << ty.info.bits) - 1


def fits_check(tree: LaunchExpr, ty: ir.ScalarType, span) -> IndexFits | None:
    """The launch check that keeps a ``ring`` index exact: ``None`` when the hardware's limits
    already do."""
    limit = fits_limit(ty)
    if hardware_value(tree) <= limit:
        return None
    return IndexFits(tree, limit, str(ty), span.line, span.col, span.end_col)




# The operations :func:`fits_in_i32` follows, on intervals of values never negative.
_SPLITS = ("//", ">>", "%", "&")


def fits_in_i32(k, launch: dict) -> bool:
    """Is every value the key ``k`` computes, and every partial result on the way, in ``[0,
    2**31 - 1]``, for every thread of a block (``launch``: the extents an assert fixed,
    ``("block_dim", 0) -> 128``)?  Then no step wraps, whatever integer type of 32 bits or more
    computes it: the machine value is the exact one.  Only constants, ``thread_idx``,
    ``block_dim`` and the block's uid are followed (a variable's or a narrowing cast's type may
    be narrower); a stride's loop variable has been written as its value there
    (:func:`.strides.substitute_keys`)."""
    top = (1 << 31) - 1

    def span(x, depth: int) -> tuple[int, int] | None:
        if depth > 48:
            return None
        if isinstance(x, ConstKey):
            v = x.integer
            return None if v is None or isinstance(x.value, bool) else (v, v)
        if isinstance(x, (SpecialKey, UidKey)):
            if isinstance(x, UidKey) and x.scope != "block":
                return None
            name = "block_dim" if isinstance(x, UidKey) else x.name
            if name not in ("thread_idx", "block_dim"):
                return None
            extent = launch.get(("block_dim", x.axis), HARDWARE.special("block_dim", x.axis).hi)
            if name == "block_dim":
                return (extent, extent) if ("block_dim", x.axis) in launch else (1, extent)
            return 0, extent - 1
        if not isinstance(x, OpKey):
            return None
        a, b = span(x.left, depth + 1), span(x.right, depth + 1)
        if a is None or b is None:
            return None
        if x.op in ("+", "-", "*"):
            ends = [p + q if x.op == "+" else p - q if x.op == "-" else p * q
                    for p in a for q in b]
            out = (min(ends), max(ends))
        elif x.op in _SPLITS and a[0] >= 0 and b[0] == b[1] and (b[0] > 0 or (
                x.op == ">>" and b[0] == 0)) and b[0] < 63:
            c = b[0]
            if x.op == "//":
                out = (a[0] // c, a[1] // c)
            elif x.op == ">>":
                out = (a[0] >> c, a[1] >> c)
            else:
                out = (0, min(a[1], c - 1 if x.op == "%" else c))
        elif x.op in ("^", "|") and a[0] >= 0 and b[0] >= 0:
            # Bits of two values below 2**m stay below 2**m (a bitonic step's `t ^ 4`).
            out = (0, (1 << max(a[1], b[1]).bit_length()) - 1)
        else:
            return None
        return out if out[0] >= 0 and out[1] <= top else None

    return span(k, 0) is not None
