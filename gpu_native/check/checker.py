"""The type pass: one function's syntax tree in, typed IR out (see :class:`FunctionChecker`)."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ..errors import SourceSpan
from ..frontend import syntax as S
from .bounds import BoundsProofs
from .calls import CallChecker
from .complexes import ComplexChecker
from .context import Definitions, FunctionContext
from .control import ControlFlowChecker
from .expressions import ExpressionChecker
from .generators import GeneratorChecker
from .nowrap import NoWrapProofs
from .resolve import Declarations, annotation, assigned_names
from .statements import StatementChecker
from .structs import StructChecker
from .tail import GridTail
from .tma import TmaChecker, TmaUses
from .traits import TraitNotes
from .tuples import TupleChecker
from .unique import UniqueWrites
from .vectors import VectorChecker


class FunctionChecker(StatementChecker, ControlFlowChecker, TupleChecker, ExpressionChecker,
                      CallChecker, GeneratorChecker, VectorChecker, TmaChecker,
                      ComplexChecker, StructChecker):
    """The type pass over one function body: every expression typed, every name resolved,
    every conversion explicit (see :mod:`gpu_native.ir`).

    Reads: the function's syntax and context, and the resolve pass's :class:`Declarations`
    (``decl``).  Produces (:meth:`check_body`): the typed body, the locals and arrays it
    declares, and the device functions it calls directly.

    The proofs that need the facts of the point they are about run inside this walk, each an
    object that owns its state and documents it: ``bounds`` (:class:`.bounds.BoundsProofs`:
    the facts, and the checks that remain), ``unique`` (:class:`.unique.UniqueWrites`),
    ``no_wrap`` (:class:`.nowrap.NoWrapProofs`), ``tail`` (:class:`.tail.GridTail`) and
    ``traits`` (:class:`.traits.TraitNotes`).  Their remaining steps are passes of their own
    (:mod:`.passes`), run after this one.

    State of the walk itself:

    ``vars``
        Each name in scope (parameters included) and its variable.
    ``locals``, ``shared``, ``local_arrays``
        What the function declares, in order.
    ``assigned``
        The names assigned on every path to the statement being checked.
    ``depth``, ``loop_depth``, ``unsafe_depth``, ``loop_broke``
        How deep the statement is in blocks, loops and ``with unsafe():``, and whether each
        enclosing loop has a ``break``.
    ``temp_counter``
        Numbers the temporaries of tuple assignments (and a generator's locals).
    ``draws_random``
        A random number generator was declared: statements are checked for draws whose order
        C++ leaves open (:meth:`.generators.GeneratorChecker.check_draw_order`).
    ``const_names``
        The names that stand for a compile-time constant here: the ``Const`` parameters, and the
        variable of a loop over a constant tuple in each unrolled copy (see :mod:`.tuples`).
    ``unrolled_names``, ``unrolled_loops``
        The variables of loops over tuples that have no value after their loop; the loop depth
        at each enclosing unrolled loop (whose body cannot ``break`` or ``continue``).
    ``callees``
        The device functions called directly.
    ``defs``
        What is known of the locals so far (:class:`.context.Definitions`), which the proofs read.
    ``tma``
        The tensor copies' maps and destinations (:class:`.tma.TmaUses`).
    """

    def __init__(self, ctx: FunctionContext, fn: S.FunctionDef, decl: Declarations):
        self.ctx = ctx
        self.fn = fn
        self.decl = decl
        self.is_kernel = fn.kind == "kernel"
        self.vars: dict[str, ir.Var] = dict(decl.param_vars)
        self.locals: list[ir.Var] = []
        self.shared: list[ir.SharedDecl] = []
        self.local_arrays: list[ir.LocalArrayDecl] = []
        self.assigned: set[str] = set(decl.param_vars)
        self.depth = 0
        self.loop_depth = 0
        self.unsafe_depth = 0
        self.loop_broke: list[bool] = []
        self.temp_counter = 0
        self.draws_random = False  # a generator was declared (see GeneratorChecker)
        self.const_names: dict[str, ir.Expr] = {
            name: self.const_expr(value, fn.span) for name, value in decl.const_params.items()}
        self.unrolled_names: set[str] = set()
        self.unrolled_loops: list[int] = []
        self.callees: list[ir.DeviceFunction] = []
        self.defs = Definitions(decl.assign_counts, decl.unique_params)
        self.bounds = BoundsProofs(ctx, self.defs)
        self.unique = UniqueWrites(ctx, self.defs, self.is_kernel)
        self.unique.param_names = tuple(decl.param_vars)
        self.no_wrap = NoWrapProofs(ctx, self.defs)
        # The proofs lean on each other: a sum is nonnegative if it does not wrap, a fact about
        # `u * K + j` needs `j < K`, an equality with a unique index pins a coordinate.
        self.bounds.no_wrap = self.no_wrap
        self.bounds.unique = self.unique
        self.unique.bounds = self.bounds
        self.no_wrap.bounds = self.bounds
        self.tail = GridTail(self.is_kernel, self.defs.single_def)
        self.traits = TraitNotes()
        self.tma = TmaUses()

    # ---- the pass --------------------------------------------------------------------------

    def check_body(self) -> tuple[ir.Stmt, ...]:
        """Type the body; a device function with a return type must not fall off its end."""
        body, exits = self.block(self.fn.body)
        self.check_tma()
        ret_type = self.decl.ret_type
        if not self.is_kernel and ret_type != ir.VOID and not exits:
            raise self.error(f"{self.fn.name} can reach its end without returning a "
                             f"{ret_type}", self.fn.span, "add a return at the end")
        return body

    def expr(self, e: S.Expr, condition: bool = False) -> ir.Expr:
        handler = _EXPR_HANDLERS.get(type(e))
        if handler is None:  # pragma: no cover - the front end refuses other syntax
            raise self.error(f"unsupported expression {type(e).__name__}", e.span)
        if handler is ExpressionChecker.visit_BoolOp:
            return handler(self, e, condition)
        return handler(self, e)

    def statement(self, s: S.Stmt) -> tuple[list[ir.Stmt], bool]:
        spilled = self.spill_constants(s) if self.const_names else []
        stmts, exits = _STMT_HANDLERS[type(s)](self, s)
        return [*spilled, *stmts] if spilled else stmts, exits

    # ---- declarations ----------------------------------------------------------------------

    def annotation(self, e: S.Expr, allow_unique: bool = False, allow_array: bool = False):
        """Evaluate a type annotation (see :func:`.resolve.annotation`)."""
        return annotation(self.ctx, e, allow_unique, allow_array)

    def new_var(self, name: str, ty: ir.Type, span: SourceSpan, register: bool = True
                ) -> ir.Var:
        """A new local in scope; ``register`` declares it (arrays and uids are not)."""
        var = ir.Var(name, ty, span)
        self.vars[name] = var
        if register:
            self.locals.append(var)
        return var

    def spill_constants(self, s: S.Stmt) -> list[ir.Stmt]:
        """Before a branch or a loop that assigns a name standing for a constant (the variable
        of a loop over a tuple), the name becomes a variable holding it: after the branch, or
        in the loop's next iteration, it may hold something else."""
        if not isinstance(s, (S.If, S.While, S.For)):
            return []
        out: list[ir.Stmt] = []
        for name in sorted(assigned_names((s,)) & set(self.const_names)):
            out += self.assign_name_value(S.Name(s.span, name), self.const_names[name], s.span)
        return out

    def merge_callee(self, callee: TraitNotes, function: ir.DeviceFunction) -> None:
        """A call of ``function``, whose notes are ``callee``."""
        self.traits.merge(callee)
        if function not in self.callees:
            self.callees.append(function)


_EXPR_HANDLERS: dict[type, Callable] = {
    S.Num: FunctionChecker.visit_Num,
    S.Str: FunctionChecker.visit_Str,
    S.Name: FunctionChecker.visit_Name,
    S.BinOp: FunctionChecker.visit_BinOp,
    S.UnaryOp: FunctionChecker.visit_UnaryOp,
    S.BoolOp: FunctionChecker.visit_BoolOp,
    S.Compare: FunctionChecker.visit_Compare,
    S.IfExp: FunctionChecker.visit_IfExp,
    S.Call: FunctionChecker.visit_Call,
    S.Attribute: FunctionChecker.visit_Attribute,
    S.Subscript: FunctionChecker.visit_Subscript,
    S.Tuple: FunctionChecker.visit_Tuple,
}

_STMT_HANDLERS: dict[type, Callable] = {
    S.Pass: FunctionChecker.visit_Pass,
    S.Break: FunctionChecker.visit_Break,
    S.Continue: FunctionChecker.visit_Continue,
    S.Return: FunctionChecker.visit_Return,
    S.Assert: FunctionChecker.visit_Assert,
    S.ExprStmt: FunctionChecker.visit_ExprStmt,
    S.Assign: FunctionChecker.visit_Assign,
    S.AnnAssign: FunctionChecker.visit_AnnAssign,
    S.AugAssign: FunctionChecker.visit_AugAssign,
    S.If: FunctionChecker.visit_If,
    S.While: FunctionChecker.visit_While,
    S.For: FunctionChecker.visit_For,
    S.With: FunctionChecker.visit_With,
}


__all__ = ["FunctionChecker"]
