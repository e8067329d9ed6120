"""The type pass over tuples: displays, items, unpacking, and loops over tuples.

A tuple in a kernel holds scalars (numbers and bools).  Until it meets a type it is a
:class:`~.expressions.TupleValue` whose items may still be weak literals (``return 1, 2.0``
takes the declared result type); a constant tuple (a module constant, a ``Const`` parameter, a
tuple of literals) is one whose items are all literals.  A tuple-typed value
(:class:`~gpu_native.ir.TupleType`: a device function's result, a local holding a tuple) is read
item by item with :class:`~gpu_native.ir.TupleItem`.

A ``for`` loop over a tuple is unrolled here, in the checker: each copy of the body is checked
with the loop variable bound to that item.  A constant item is substituted for the variable (so
``shfl_down(v, off)`` gets the literal, and the bounds proofs know each value); any other item is
assigned to the variable at the top of its copy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..nodes import replace
from .checker_base import CheckerBase
from .expressions import AtomicHandle, TupleValue, UidValue, WeakConst

if TYPE_CHECKING:
    from .scope import Resolver

# A loop over a tuple is unrolled: past this many items the code would only grow.
MAX_UNROLL = 256

NOT_CONSTANT = object()


class TupleChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: tuple values, unpacking, tuple loops."""

    # ---- values -----------------------------------------------------------------------------

    def visit_Tuple(self, e: S.Tuple) -> ir.Expr:
        items = []
        for elt in e.elts:
            item = self.expr(elt)
            if isinstance(item, ir.ArrayRef):
                raise self.error(f"a tuple cannot hold the array '{item.var.name}': tuples in "
                                 "kernels hold numbers and bools", item.span,
                                 "pass arrays to device functions one by one")
            if isinstance(item, (UidValue, AtomicHandle)):
                self.materialize(item)
            items.append(item)
        return TupleValue(e.span, ir.VOID, tuple(items))

    def const_expr(self, value, span: SourceSpan) -> ir.Expr:
        """The checked expression of a compile-time constant (a module constant's value)."""
        if isinstance(value, bool):
            return ir.Const(span, ir.BOOL, value)
        if isinstance(value, (int, float)):
            return WeakConst(span, ir.I64, value)
        assert isinstance(value, tuple), value
        return TupleValue(span, ir.VOID, tuple(self.const_expr(v, span) for v in value))

    def constant_of(self, e: ir.Expr):
        """The Python value of a compile-time constant expression, or ``NOT_CONSTANT``."""
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, TupleValue):
            items = tuple(self.constant_of(i) for i in e.items)
            return NOT_CONSTANT if any(i is NOT_CONSTANT for i in items) else items
        return NOT_CONSTANT

    def bound_constant(self, name: str, span: SourceSpan) -> ir.Expr | None:
        """The constant a name stands for here (a ``Const`` parameter, the variable of a loop
        over a constant tuple), written at ``span``; None for other names."""
        value = self.const_names.get(name)
        return None if value is None else _respan(value, span)

    def is_tuple(self, e: ir.Expr) -> bool:
        return isinstance(e, TupleValue) or isinstance(e.ty, ir.TupleType)

    def tuple_items(self, e: ir.Expr) -> tuple[ir.Expr, ...]:
        """The items of a tuple whose evaluation has no effects (a TupleValue, a local)."""
        if isinstance(e, TupleValue):
            return e.items
        ty = e.ty
        assert isinstance(ty, ir.TupleType)
        return tuple(ir.TupleItem(e.span, t, e, k) for k, t in enumerate(ty.elems))

    def tuple_length(self, e: ir.Expr) -> int:
        if isinstance(e, TupleValue):
            return len(e.items)
        ty = e.ty
        assert isinstance(ty, ir.TupleType)
        return len(ty.elems)

    def tuple_item(self, base: ir.Expr, index: tuple[S.Expr, ...],
                   span: SourceSpan) -> ir.Expr:
        """``t[k]`` with a constant ``k`` (negative counts from the end, as in Python)."""
        if len(index) != 1:
            raise self.error("a tuple takes one index", span)
        k = self.const_int(index[0], "a tuple index")
        n = self.tuple_length(base)
        if not -n <= k < n:
            raise self.error(f"tuple index {k} is out of range for a tuple of {n} "
                             f"item{'s' if n != 1 else ''}", span)
        k %= n
        if isinstance(base, TupleValue):
            if not any(self.has_effects(i) for j, i in enumerate(base.items) if j != k):
                return base.items[k]
            base = self.materialize(base)
        ty = base.ty
        assert isinstance(ty, ir.TupleType)
        return ir.TupleItem(span, ty.elems[k], base, k)

    def coerce_tuple(self, e: ir.Expr, ty: ir.TupleType, what: str) -> ir.Expr:
        """``e`` converted to the tuple type ``ty`` item by item (the assignment rules)."""
        if isinstance(e, TupleValue):
            if len(e.items) != len(ty.elems):
                raise self.error(f"{what} must be a {ty}, not a tuple of {len(e.items)} "
                                 f"item{'s' if len(e.items) != 1 else ''}", e.span)
            items = tuple(self.coerce(item, t, f"{what} (item {k})")
                          for k, (item, t) in enumerate(zip(e.items, ty.elems)))
            return ir.MakeTuple(e.span, ty, items)
        e = self.materialize(e)
        if e.ty == ty:
            return e
        if not isinstance(e.ty, ir.TupleType) or len(e.ty.elems) != len(ty.elems):
            raise self.error(f"{what} must be a {ty}, not {e.ty}", e.span)
        if self.has_effects(e):
            raise self.error(f"{what} must be a {ty}, not {e.ty}", e.span,
                             "unpack the value into locals first, then build the tuple")
        return self.coerce_tuple(TupleValue(e.span, ir.VOID, self.tuple_items(e)), ty, what)

    def value_type(self, value: ir.Expr, what: str = "this") -> ir.Type:
        """The type a new local holding ``value`` gets: a scalar type, a vector type or a
        tuple type."""
        if self.is_tuple(value):
            return self.materialize(value).ty
        value = self.materialize(value)
        if isinstance(value.ty, (ir.VectorType, ir.StructType)):
            return value.ty
        return self.scalar_of(value, what)

    # ---- unpacking --------------------------------------------------------------------------

    def unpack(self, target: S.Tuple, value_syntax: S.Expr,
               span: SourceSpan) -> list[ir.Stmt]:
        value = self.expr(value_syntax)
        if isinstance(value, UidValue):
            if len(target.elts) != value.ndim or not all(
                    isinstance(t, S.Name) for t in target.elts):
                raise self.error(f"a {value.ndim}-D unique id unpacks into {value.ndim} names "
                                 "(x, y[, z])", span)
            out: list[ir.Stmt] = []
            for axis, name_syntax in enumerate(target.elts):
                assert isinstance(name_syntax, S.Name)  # (every one, above)
                comp = ir.UidComponent(value.span, ir.I64, value.scope, axis)
                out += self.assign_name_value(name_syntax, comp, span)
            return out
        return self.unpack_value(target, value, span)

    def unpack_value(self, target: S.Tuple, value: ir.Expr,
                     span: SourceSpan) -> list[ir.Stmt]:
        """``a, b = value`` for a tuple ``value``: the right side is evaluated first, as in
        Python (``a, b = b, a`` swaps)."""
        if not self.is_tuple(value):
            what = "an array" if isinstance(value, ir.ArrayRef) else f"a {value.ty}"
            if isinstance(value, WeakConst):
                what = "a number"
            raise self.error(f"cannot unpack {what}: only tuples and multi-dimensional unique "
                             "ids can be unpacked", value.span)
        n, m = self.tuple_length(value), len(target.elts)
        if n != m:
            raise self.error(f"cannot unpack a tuple of {n} item{'s' if n != 1 else ''} into "
                             f"{m} name{'s' if m != 1 else ''}", span)
        out: list[ir.Stmt] = []
        if isinstance(value, TupleValue):
            items = value.items
            # Assigning item by item is right unless an item reads a variable assigned before
            # it is evaluated: then every item goes to a temporary first.
            targets = {id(v) for name in _names(target)
                       for v in (self.vars.get(name), self.decl.param_vars.get(name)) if v}
            stores = any(not isinstance(t, (S.Name, S.Tuple)) for t in target.elts)
            if any((stores and self.constant_of(i) is NOT_CONSTANT)
                   or targets & ir.variables_read(self.materialize(i)) for i in items):
                items = tuple(self.temporary(self.materialize(i), out) for i in items)
        else:
            if not isinstance(value, ir.Local):
                value = self.temporary(value, out)
            items = self.tuple_items(value)
        for elt, item in zip(target.elts, items):
            if isinstance(elt, S.Name):
                out += self.assign_name_value(elt, item, span)
            elif isinstance(elt, S.Tuple):
                out += self.unpack_value(elt, item, span)
            elif isinstance(elt, S.Subscript):
                out.append(self.store(elt, None, span, False, value=item))
            else:
                raise self.error("only names, array elements and tuples of them can be "
                                 "unpacked into", elt.span)
        return out

    def temporary(self, value: ir.Expr, out: list[ir.Stmt]) -> ir.Local:
        """A new temporary holding ``value`` (its assignment appended to ``out``)."""
        value = self.materialize(value)
        temp = self.new_var(f"{ir.TEMP_PREFIX}t{self.temp_counter}",
                            self.value_type(value, "an unpacked value"), value.span)
        self.temp_counter += 1
        self.assigned.add(temp.name)
        out.append(ir.Assign(value.span, temp, value))
        return ir.Local(value.span, temp.ty, temp)

    # ---- loops over tuples ------------------------------------------------------------------

    def for_tuple(self, s: S.For, value: ir.Expr,
                  counter: S.Expr | None = None, count_from: int = 0):
        """``for x in t:`` (``for i, x in enumerate(t)`` with ``counter``): the body once per
        item, the loop variable bound to it."""
        if not self.is_tuple(value):
            raise self.error("kernels loop over range(...), FlatLayout1D.grid_stride(n) or a "
                             f"tuple, not over {_what(value)}", value.span,
                             "for an array, loop over its indices: range(len(a))")
        out: list[ir.Stmt] = []
        # As in Python, the tuple is evaluated once, before the loop: what its copies of the
        # body could change goes to temporaries first (constants and launch shapes stay, for
        # the proofs).
        if isinstance(value, TupleValue):
            value = self.settle(value, out)
        elif not _is_temporary(value):
            value = self.temporary(value, out)
        items = self.tuple_items(value)
        if len(items) > MAX_UNROLL:
            raise self.error(f"a loop over a tuple is unrolled; this tuple has {len(items)} "
                             f"items (at most {MAX_UNROLL})", value.span,
                             "loop over range(len(...)) of an array instead")
        copies = [((counter, WeakConst(s.span, ir.I64, count_from + k)), (s.target, item))
                  if counter is not None else ((s.target, item),)
                  for k, item in enumerate(items)]
        return self.unrolled(s, copies, out)

    def settle(self, e: ir.Expr, out: list[ir.Stmt]) -> ir.Expr:
        """``e`` as a value that evaluating it again later gives unchanged: its items that
        read variables or memory, or have effects, go to temporaries (assigned to ``out``)."""
        if isinstance(e, TupleValue):
            return replace(e, items=tuple(self.settle(i, out) for i in e.items))
        if self.constant_of(e) is not NOT_CONSTANT or _is_temporary(e) or _stable(
                self.materialize(e)):
            return e
        return self.temporary(e, out)

    def unrolled(self, s: S.For, copies, out: list[ir.Stmt]):
        """The body of ``s`` once per entry of ``copies``, each a tuple of (target, value)
        bindings; break and continue are refused (there is no loop left to leave)."""
        names: set[str] = set()
        for bindings in copies[:1]:
            for target, _ in bindings:
                names |= _names(target)
        saved_consts = dict(self.const_names)
        still_bound: set[str] = set()
        exits = False
        self.depth += 1
        self.unrolled_loops.append(self.loop_depth)
        try:
            for bindings in copies:
                self.const_names = dict(saved_consts)
                fixed: list[ir.Var] = []
                for target, value in bindings:
                    out += self.bind_loop_target(target, value, s.span, fixed)
                body, exits = self.block(s.body)
                out += body
                for var in fixed:
                    self.defs.forget(var)
                still_bound = {n for n in names if n in self.const_names}
                if exits:
                    break  # the copies after one that always leaves are unreachable
        finally:
            self.unrolled_loops.pop()
            self.depth -= 1
        for name in names:
            saved_consts.pop(name, None)
        # A name bound to a constant in the last copy has no variable holding it after the loop.
        self.const_names = saved_consts
        self.unrolled_names |= still_bound
        return out, exits

    def bind_loop_target(self, target: S.Expr, value: ir.Expr, span,
                         fixed: list[ir.Var]) -> list[ir.Stmt]:
        if isinstance(target, S.Tuple):
            if not self.is_tuple(value):
                raise self.error(f"cannot unpack {_what(value)} into {len(target.elts)} names",
                                 target.span)
            n = self.tuple_length(value)
            if n != len(target.elts):
                raise self.error(f"cannot unpack a tuple of {n} item{'s' if n != 1 else ''} "
                                 f"into {len(target.elts)} names", target.span)
            out: list[ir.Stmt] = []
            for elt, item in zip(target.elts, self.tuple_items(value)):
                out += self.bind_loop_target(elt, item, span, fixed)
            return out
        if not isinstance(target, S.Name):
            raise self.error("the loop variable must be a name or a tuple of names", target.span)
        if self.constant_of(value) is not NOT_CONSTANT:
            self.unbind_constant(target.id)
            self.const_names[target.id] = value
            return []
        out = self.assign_name_value(target, value, span)
        var = self.vars[target.id]
        if _stable(value):
            # `for n in a.shape:` — the proofs may use each copy's value.
            self.defs.fix(var, self.materialize(value))
            fixed.append(var)
        return out

    def unbind_constant(self, name: str) -> None:
        """``name`` is assigned: it no longer stands for a loop's constant."""
        self.const_names.pop(name, None)
        self.unrolled_names.discard(name)


def _is_temporary(e: ir.Expr) -> bool:
    """A checker's temporary: assigned once, never by the user's code."""
    return isinstance(e, ir.Local) and e.var.name.startswith(ir.TEMP_PREFIX)


def _respan(e: ir.Expr, span: SourceSpan) -> ir.Expr:
    if isinstance(e, TupleValue):
        return replace(e, span=span, items=tuple(_respan(i, span) for i in e.items))
    return replace(e, span=span)


def _names(target: S.Expr) -> set[str]:
    if isinstance(target, S.Name):
        return {target.id}
    if isinstance(target, S.Tuple):
        return {n for e in target.elts for n in _names(e)}
    return set()


def _what(value: ir.Expr) -> str:
    if isinstance(value, ir.ArrayRef):
        return f"the array '{value.var.name}' ({value.ty})"
    if isinstance(value, WeakConst):
        return "a number"
    return f"a {value.ty}"


_STABLE = (ir.Const, ir.Shape, ir.ArrayRef, ir.Special, ir.UidComponent, ir.LaneId, ir.BinOp,
           ir.UnaryOp, ir.Cast)


def _stable(e: ir.Expr) -> bool:
    """A value no assignment or store can change (launch shapes and coordinates, literals)."""
    return all(isinstance(n, _STABLE) and not (isinstance(n, ir.BinOp) and n.zero_check is not None)
               for n in ir.walk(e))


# ---- constant defaults ------------------------------------------------------------------------

_UNARY: dict[str, Callable] = {"-": operator.neg, "+": operator.pos, "~": operator.invert,
                               "not": operator.not_}
_BINARY: dict[str, Callable] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "<<": operator.lshift, ">>": operator.rshift,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
}


def constant_value(resolver: Resolver, e: S.Expr, what: str):
    """The value of a constant expression written in the module of ``resolver`` (a parameter's
    default): numbers, bools, module constants, ``math.pi`` and friends, tuples of them, and
    the operators over them."""
    def fail() -> TranspileError:
        return TranspileError(f"{what} must be a compile-time constant: a number, a bool, a "
                              "module constant or a tuple of them", e.span)

    if isinstance(e, S.Num):
        return e.value
    if isinstance(e, S.Tuple):
        return tuple(constant_value(resolver, x, what) for x in e.elts)
    if isinstance(e, (S.Name, S.Attribute)):
        sym = resolver.dotted(e)
        if sym is None or sym.kind != "const":
            raise fail()
        return sym.value
    if isinstance(e, (S.UnaryOp, S.BinOp)):
        values = ([constant_value(resolver, e.operand, what)] if isinstance(e, S.UnaryOp) else
                  [constant_value(resolver, e.left, what), constant_value(resolver, e.right,
                                                                          what)])
        fn = (_UNARY if isinstance(e, S.UnaryOp) else _BINARY).get(e.op)
        if fn is None or any(isinstance(v, tuple) for v in values) or any(
                isinstance(v, int) and v.bit_length() > 128 for v in values):
            raise fail()
        try:
            return fn(*values)
        except (ArithmeticError, TypeError, ValueError):
            raise fail() from None
    raise fail()
