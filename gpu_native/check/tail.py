"""The grid tail: threads past the end of every array a kernel indexes with its bare uid do
nothing.

A launch rounds its grid up to whole blocks, so the last block's last threads usually have no
element.  Where a kernel indexes arrays with its bare grid uid (``a[i]`` for ``i =
FlatLayout1D.uid()``), a thread whose uid lies outside every such array returns at once
(``ir.TailExit``, first in the body), instead of failing the first bounds check; an index out
of range anywhere else still raises.  Kernels with barriers, warp operations or shared memory
keep every thread: a returned thread would leave the others waiting at a barrier.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from .traits import TraitNotes


class GridTail:
    """The grid-tail notes of a kernel, taken as the type pass reaches each array access, and
    the ``TailExit`` they give (:meth:`apply`).

    Reads: the value of each local assigned once (to see the bare uid through ``i = uid``), the
    kernel's trait notes (barriers, warp operations, shared memory).
    Produces: a ``TailExit`` statement at the start of the body, or the body unchanged.

    State:

    ``extents``
        Per global array indexed with bare uids (by variable id): the array and, for each of its
        dimensions, the uid axis that indexes it (``None`` for a dimension indexed otherwise).
    """

    def __init__(self, is_kernel: bool, single_def: Callable[[ir.Var], ir.Expr | None]):
        self.is_kernel = is_kernel
        self.single_def = single_def
        self.extents: dict[int, tuple[ir.ArrayRef, tuple[int | None, ...]]] = {}

    def bare_uid_axis(self, e: ir.Expr) -> int | None:
        """The axis of ``e`` if it is a component of the grid uid (through casts and locals
        assigned once); ``None`` otherwise."""
        while isinstance(e, ir.Cast) and e.ty.info.is_int:
            e = e.value
        if isinstance(e, ir.UidComponent) and e.scope == "grid":
            return e.axis
        if isinstance(e, ir.Local):
            d = self.single_def(e.var)
            if d is not None:
                return self.bare_uid_axis(d)
        return None

    def note(self, base: ir.ArrayRef, indices) -> None:
        """``base[indices]`` is read or written."""
        if not self.is_kernel or base.ty.space != "global":
            return
        axes = tuple(self.bare_uid_axis(i) for i in indices)
        used = [a for a in axes if a is not None]
        if used and len(set(used)) == len(used):
            self.extents.setdefault(id(base.var), (base, axes))

    def apply(self, body: tuple[ir.Stmt, ...], traits: TraitNotes, span
              ) -> tuple[ir.Stmt, ...]:
        """The kernel's body, with the grid-tail exit first where the rule applies."""
        if not self.extents or traits.uses_barriers or traits.uses_warp or traits.uses_shared:
            return body
        return (ir.TailExit(span, tuple(self.extents.values())), *body)
