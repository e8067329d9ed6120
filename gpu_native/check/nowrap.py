"""The no-wrap proofs: integer ``+ - *`` that provably stays within its type.

The bounds proofs need them (a sum of nonnegative values is nonnegative only if it does not
wrap), and the CUDA emitter writes a BinOp marked ``no_wrap`` as plain signed arithmetic, which
lets the device compiler fold it into 64-bit address arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..launchexpr import Arith, Const, LaunchExpr, LaunchIndex, subtrees
from ..spec import IndexFits
from .launch import fixed_divisor, launch_tree

if TYPE_CHECKING:
    from .bounds import BoundsProofs
    from .context import Definitions, FunctionContext

_LAUNCH_INDICES = ("thread_idx", "block_idx", "block_dim", "grid_dim")


class NoWrapProofs:
    """The no-wrap proofs of one function, made while the bounds proofs run; :meth:`mark` then
    writes them into the body.

    Reads: the bounds proofs' upper bounds and facts, the type pass's
    :class:`~.context.Definitions` (which BinOps are inside the value of a local assigned once).
    Produces: the ``no_wrap`` flags of integer BinOps, and an
    :class:`~gpu_native.spec.IndexFits` launch check for each sum or product of launch indices
    that only the largest grids could make wrap.

    State:

    ``proven``
        The BinOps proven never to wrap, by id (the values keep them alive, so no id is reused).
    """

    def __init__(self, ctx: FunctionContext, defs: Definitions):
        self.ctx = ctx
        self.defs = defs
        self.bounds: BoundsProofs  # wired by the type pass
        self.proven: dict[int, ir.BinOp] = {}

    def holds(self, e: ir.BinOp) -> bool:
        """Does ``e`` (a ``+`` or ``*`` of nonnegative integers) stay within its type?

        When only the hardware's largest grid could make it wrap, and it is built from launch
        indices alone (``block_idx.x * 32 + thread_idx.x`` in i32), the answer is yes *for the
        launches the launcher lets through*: the expression is recorded as a launch check, and a
        launch whose grid would make it wrap is refused before it runs."""
        if not self.fits(e):
            return False
        self.prove(e, self.fits)
        return True

    def fits(self, e: ir.BinOp) -> bool:
        if not isinstance(e.ty, ir.ScalarType):
            return False
        bound = self.bounds.upper(e, operation=True)
        if bound is not None and bound <= e.ty.info.max:
            return True
        tree = launch_tree(e, _LAUNCH_INDICES, ("+", "*", "//", "%"), self.defs.single_def)
        if tree is None or not _checkable(tree):
            return False
        span = e.span
        assert isinstance(e.ty.info.max, int)  # launch indices are integers
        self.ctx.kernel.add_launch_check(IndexFits(tree, e.ty.info.max, str(e.ty), span.line,
                                                   span.col, span.end_col))
        return True

    def prove(self, e: ir.BinOp, proof: Callable[[ir.BinOp], bool]) -> None:
        """Mark ``e`` to be emitted as plain signed arithmetic, ``proof(e)`` having just held.

        A proof holds where it is made: the facts are those of the current statement.  ``e`` is
        evaluated there, unless it was reached through the value of a single-assignment local
        (``j = i + 1`` earlier, ``a[j]`` here under ``if i < n - 1``): that value was computed
        on every path, so it is marked only if the proof also holds with no facts at all."""
        if id(e) in self.proven:
            return
        if id(e) in self.defs.binops:
            with self.bounds.without_facts():
                if not proof(e):
                    return
        self.proven[id(e)] = e

    def mark(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        """``body`` with ``no_wrap=True`` on every BinOp proven."""
        if self.proven:
            body = ir.mark_no_wrap(body, self.proven)
        return body


def _checkable(tree: LaunchExpr) -> bool:
    """Can the launcher bound ``tree``'s largest value (see ``_largest`` in
    :mod:`gpu_native.runtime.launch_checks`)?  Sums and products of launch indices, as before;
    with a ``//`` or ``%`` in it (``tile_col * 32 + tx``, ``tile_col`` a block order's ``(bid //
    grid_dim.y + r) % grid_dim.x``), only where every constant is nonnegative and every divisor
    a launch extent or a positive constant."""
    def plain(t: LaunchExpr) -> bool:
        if isinstance(t, Const):
            return t.value >= 0
        if isinstance(t, LaunchIndex):
            return True
        assert isinstance(t, Arith)  # launch_tree's, of arithmetic only
        if t.op in ("//", "%"):
            return plain(t.left) and fixed_divisor(t.right)
        return plain(t.left) and plain(t.right)

    splits = any(isinstance(t, Arith) and t.op in ("//", "%") for t in subtrees(tree))
    return not splits or plain(tree)
