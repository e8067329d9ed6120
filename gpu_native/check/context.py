"""What the passes over one function share with the rest of its kernel, and what they know of its
locals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..errors import SourceSpan
from ..launchexpr import Arith, Const, LaunchExpr, LaunchIndex
from ..nodes import Factory, fields, node, replace
from ..spec import IndexFits, LaunchCheck
from .facts import Key, key, returned_expression
from .scope import Resolver

if TYPE_CHECKING:
    from .passes import FunctionUnit
    from .program import Program


@node(frozen=False)
class KernelContext:
    """What every function checked for one kernel specialisation shares.

    ``sites``: the error sites, numbered in the order the type pass and the bounds proofs make
    them.  ``launch_checks``: what the launcher checks once per launch shape (hoisted asserts
    from the type pass, launch-shaped arithmetic from the no-wrap proofs), as the
    :class:`gpu_native.spec.LaunchCheck` records the runtime reads.  ``devices`` and ``checked``:
    each device function specialisation reached, and its passes' results, by
    ``(path, name, binding)``; ``stack``: the calls being checked (recursion is refused).
    ``consts``: the module-level constant arrays read so far, by ``(module, name)`` (see
    :mod:`.constarrays`).
    """

    program: Program
    ndim: int
    options: ir.KernelOptions
    sites: list[ir.Site] = Factory(list)
    devices: dict = Factory(dict)  # (path, name, binding) -> DeviceFunction
    checked: dict[tuple, FunctionUnit] = Factory(dict)
    stack: list = Factory(list)
    launch_checks: list[LaunchCheck] = Factory(list)
    consts: dict[tuple[str, str], ir.ConstDecl] = Factory(dict)  # (module, name) -> its table

    def new_site(self, kind: str, span: SourceSpan, array: str = "", axis: int = 0,
                 ndim: int = 1, message: str = "") -> int:
        """A new error site; its id."""
        site = ir.Site(len(self.sites), kind, span, array, axis, ndim, message)
        self.sites.append(site)
        return site.id

    def add_launch_check(self, check: LaunchCheck) -> None:
        """Record ``check``, unless one recorded implies it; drop those it implies.

        An :class:`IndexFits` of ``block_idx.x * 32`` is implied by one of ``block_idx.x * 32 +
        thread_idx.x`` with the same limit (the no-wrap proofs record both, one per operator):
        the launcher's largest value of a sum of nonnegative terms is at least each term's."""
        if check in self.launch_checks:
            return
        if isinstance(check, IndexFits):
            if any(_implies(other, check) for other in self.launch_checks):
                return
            self.launch_checks[:] = [c for c in self.launch_checks if not _implies(check, c)]
        self.launch_checks.append(check)


def _implies(wider: LaunchCheck, narrower: LaunchCheck) -> bool:
    return (isinstance(wider, IndexFits) and isinstance(narrower, IndexFits)
            and wider.limit == narrower.limit
            and _summand(_untyped(narrower.tree), _untyped(wider.tree)))


def _untyped(tree: LaunchExpr) -> LaunchExpr:
    """``tree`` without the types its ``+``/``*`` nodes may carry (``Arith("*", a, b, "i32")``,
    as the no-wrap proofs record them; a shape tree's have none): the launcher's largest value
    of either is the same exact integer."""
    if isinstance(tree, Arith) and tree.op in ("+", "*"):
        return Arith(tree.op, _untyped(tree.left), _untyped(tree.right))
    return tree


def _summand(part: LaunchExpr, whole: LaunchExpr) -> bool:
    """Is ``part`` ``whole``, or a term of it, added to terms that are never negative?"""
    if part == whole:
        return True
    if not (isinstance(whole, Arith) and whole.op == "+"):
        return False
    left, right = whole.left, whole.right
    return (_summand(part, left) and _nonnegative(right)) or \
        (_summand(part, right) and _nonnegative(left))


def _nonnegative(tree: LaunchExpr) -> bool:
    """A ``+``/``*`` tree of launch indices and constants of at least zero."""
    if isinstance(tree, Const):
        return tree.value >= 0
    if isinstance(tree, LaunchIndex):
        return True
    return isinstance(tree, Arith) and tree.op in ("+", "*") and _nonnegative(tree.left) and \
        _nonnegative(tree.right)


@node(frozen=False)
class FunctionContext:
    """The per-function view of the kernel being checked."""

    kernel: KernelContext
    resolver: Resolver
    binding: dict[str, ir.ScalarType]
    #: the values of the function's ``Const`` parameters (Python constants)
    constants: dict[str, object] = Factory(dict)

    @property
    def ndim(self) -> int:
        return self.kernel.ndim

    @property
    def program(self) -> Program:
        return self.kernel.program

    @property
    def options(self) -> ir.KernelOptions:
        return self.kernel.options


class Definitions:
    """What the type pass has learnt about a function's locals, which the proofs look through.

    Reads the resolve pass's ``assign_counts`` and ``unique_params``; the type pass writes the
    rest as it goes:

    ``values``
        The value of each local assigned exactly once (by ``id`` of its :class:`~gpu_native.ir.Var`):
        ``j = i + 1`` lets a proof about ``j`` use one about ``i``.
    ``binops``
        The ids of the BinOps inside those values (see
        :meth:`gpu_native.check.nowrap.NoWrapProofs.prove`); ``kept``, those the facts where the
        value is computed keep within their type.
    ``grid_stride_vars``
        The ids of the variables of ``grid_stride`` loops (unique and nonnegative).
    ``reaching``
        The value a local assigned more than once holds from an assignment to the end of the
        block it is in (``x = col + i * BX`` in each of two loops: in each, the stores after it
        see that value), unless it or a variable its value reads is assigned first.  Only
        values of plain arithmetic over locals and launch values (no memory, no call), and not
        one that reads the variable itself (``x = x + 1``).  Nested blocks drop what they add
        (:meth:`enter_block`, :meth:`leave_block`): after an ``if`` or a loop the variable may
        hold either branch's value.
    ``fixed``
        The value a variable assigned more than once holds over a stretch of code where it is
        known: each copy of a loop over a tuple (``for n in a.shape:``), the counter of
        ``enumerate(range(n))`` (the loop variable).  It ends at an assignment to the variable
        or to one its value reads.
    """

    def __init__(self, assign_counts: dict[str, int], unique_params: set[int]):
        self.assign_counts = assign_counts
        self.unique_params = unique_params
        self.values: dict[int, ir.Expr] = {}
        self.binops: set[int] = set()
        # Of those, the ``+ - *`` that the facts where the value is computed keep within their
        # type (:meth:`.bounds.BoundsProofs.assign`): exact wherever the local is read.  By id,
        # the nodes kept alive here (an id of a node dropped could be reused).
        self.kept: dict[int, ir.BinOp] = {}
        self.grid_stride_vars: set[int] = set()
        self.fixed: dict[int, ir.Expr] = {}
        self.reaching: dict[int, ir.Expr] = {}
        # The variables each value reads, by the value's id (the value kept, so no id is reused).
        self._reads: dict[int, tuple[ir.Expr, frozenset[int]]] = {}
        # For ``values``: the locals whose value reads each variable (an index, so that an
        # assignment finds what it ends without reading every value).
        self._readers: dict[int, set[int]] = {}

    def single_def(self, var: ir.Var) -> ir.Expr | None:
        """The value of ``var`` if it is a local assigned exactly once (and assigned by now),
        or one known where it is read (see ``fixed`` and ``reaching``)."""
        value = self.fixed.get(id(var))
        if value is not None:
            return value
        if var.is_param:
            return None
        if self.assign_counts.get(var.name, 0) != 1:
            return self.reaching.get(id(var))
        return self.values.get(id(var))

    def key(self, e: ir.Expr) -> Key:
        """The fact-matching key of ``e``, looking through locals assigned once."""
        return key(e, self.single_def)

    def fix(self, var: ir.Var, value: ir.Expr) -> None:
        """``var`` holds ``value`` from here until it (or what ``value`` reads) is assigned."""
        self.fixed[id(var)] = value

    def forget(self, var: ir.Var) -> None:
        """``var`` is assigned: a value fixed for it, or for a variable whose value reads it,
        no longer holds.  Nor does the value of a local assigned once that reads it: after
        ``r = i; i = n``, ``r`` still holds the old ``i``, and reading ``r`` as ``i`` would
        apply what is known of the new ``i`` to it.  ``r`` is opaque from here on."""
        gone = id(var)
        reads = self._variables_read
        if self.reaching:
            self.reaching = {k: v for k, v in self.reaching.items()
                             if k != gone and gone not in reads(v)}
        if self.fixed:
            self.fixed = {k: v for k, v in self.fixed.items()
                          if k != gone and gone not in reads(v)}
        for k in self._readers.pop(gone, ()):
            self.values.pop(k, None)

    def _variables_read(self, value: ir.Expr) -> frozenset[int]:
        """:func:`ir.variables_read` of a value, once per value: every assignment asks it of
        every value known (walking them each time made a kernel of n locals cost n**2 walks)."""
        cached = self._reads.get(id(value))
        if cached is None or cached[0] is not value:
            cached = self._reads[id(value)] = (value, frozenset(ir.variables_read(value)))
        return cached[1]

    def enter_loop(self, variables) -> None:
        """A loop whose body assigns ``variables`` begins: from its second iteration on, a
        value read before one of them is assigned in the body may be the previous
        iteration's, so what reads them is forgotten for the whole body (and after it)."""
        for var in variables:
            self.forget(var)

    def record(self, var: ir.Var, value: ir.Expr) -> None:
        """``var = value`` was checked: remember the value of a local assigned once, and the
        value that reaches the rest of the block of one assigned more than once.  A value that
        reads ``var`` itself (``bi += bi >> 5``) reaches as the value with the one of ``var``
        that reached it put in (that value's reads still hold: an assignment forgets it)."""
        earlier = self.reaching.get(id(var))
        self.forget(var)
        if var.is_param:
            return
        if self.assign_counts.get(var.name, 0) == 1:
            self.values[id(var)] = value
            for read in self._variables_read(value):
                self._readers.setdefault(read, set()).add(id(var))
            self.binops.update(id(n) for n in ir.walk(value) if isinstance(n, ir.BinOp))
        elif _plain(value):
            if id(var) in ir.variables_read(value):
                if earlier is None:
                    return
                value = _put_in(value, var, earlier)
            self.reaching[id(var)] = value
            self.binops.update(id(n) for n in ir.walk(value) if isinstance(n, ir.BinOp))

    def enter_block(self) -> dict[int, ir.Expr]:
        """A block begins: what reaches it (for :meth:`leave_block`)."""
        return dict(self.reaching)

    def leave_block(self, entry: dict[int, ir.Expr]) -> None:
        """The block ends: what it assigned no longer surely reaches what follows; what reached
        it still does unless the block ended it."""
        self.reaching = {k: v for k, v in entry.items() if self.reaching.get(k) is v}


_PLAIN = (ir.Const, ir.Local, ir.BinOp, ir.UnaryOp, ir.Cast, ir.Special, ir.LaneId,
          ir.UidComponent, ir.Shape, ir.ArrayRef)


def _plain(value: ir.Expr) -> bool:
    """Is ``value`` integer arithmetic over locals, constants and launch values alone (what a
    reaching definition may stand for: it reads no memory and has no effect)?  A call of a
    device function that only returns arithmetic of its arguments is such arithmetic."""
    return all(isinstance(n, _PLAIN) or (isinstance(n, ir.Call) and returned_expression(
        n.function) is not None) for n in ir.walk(value))


def _put_in(value: ir.Expr, var: ir.Var, earlier: ir.Expr) -> ir.Expr:
    """``value`` with every read of ``var`` replaced by ``earlier`` (which does not read it)."""
    def visit(item):
        if isinstance(item, ir.Local) and item.var is var:
            return earlier
        if not isinstance(item, ir.Expr):
            return item
        changes = {}
        for name in fields(item):
            old = getattr(item, name)
            if isinstance(old, ir.Expr):
                new = visit(old)
            elif isinstance(old, tuple) and any(isinstance(x, ir.Expr) for x in old):
                items = tuple(visit(x) for x in old)  # a call's arguments
                new = items if any(a is not b for a, b in zip(items, old)) else old
            else:
                new = old
            if new is not old:
                changes[name] = new
        return replace(item, **changes) if changes else item

    return visit(value)
