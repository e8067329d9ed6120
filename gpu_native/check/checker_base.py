"""What the type pass's mixins share: the state of :class:`~.checker.FunctionChecker` and the
methods each mixin calls on another, declared once so that a type checker can read each mixin
on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from .. import ir
    from ..errors import SourceSpan, TranspileError
    from ..frontend import syntax as S
    from ..launchexpr import LaunchExpr
    from .bounds import BoundsProofs
    from .context import Definitions, FunctionContext
    from .nowrap import NoWrapProofs
    from .resolve import Declarations
    from .tail import GridTail
    from .traits import TraitNotes
    from .unique import UniqueWrites


class CheckerBase:
    """The base of the type pass's mixins (:mod:`.expressions`, :mod:`.calls`,
    :mod:`.statements`, :mod:`.control`, :mod:`.tuples`, :mod:`.generators`, :mod:`.vectors`).

    It adds nothing at run time: the attributes are set by
    :meth:`FunctionChecker.__init__ <.checker.FunctionChecker>` (documented there), and the
    method declarations below, seen only by a type checker, are those defined by one class of
    :class:`~.checker.FunctionChecker` and called from another.
    """

    ctx: FunctionContext
    fn: S.FunctionDef
    decl: Declarations
    is_kernel: bool
    vars: dict[str, ir.Var]
    locals: list[ir.Var]
    shared: list[ir.SharedDecl]
    local_arrays: list[ir.LocalArrayDecl]
    assigned: set[str]
    depth: int
    loop_depth: int
    unsafe_depth: int
    loop_broke: list[bool]
    temp_counter: int
    callees: list[ir.DeviceFunction]
    defs: Definitions
    bounds: BoundsProofs
    unique: UniqueWrites
    no_wrap: NoWrapProofs
    tail: GridTail
    traits: TraitNotes
    draws_random: bool
    const_names: dict[str, ir.Expr]
    unrolled_names: set[str]
    unrolled_loops: list[int]

    if TYPE_CHECKING:
        # .checker
        def expr(self, e: S.Expr, condition: bool = False) -> ir.Expr: ...

        def statement(self, s: S.Stmt) -> tuple[list[ir.Stmt], bool]: ...

        def annotation(self, e: S.Expr, allow_unique: bool = False, allow_array: bool = False
                       ): ...

        def new_var(self, name: str, ty: ir.Type, span: SourceSpan, register: bool = True
                    ) -> ir.Var: ...

        def merge_callee(self, callee: TraitNotes, function: ir.DeviceFunction) -> None: ...

        # .expressions
        def error(self, message: str, span: SourceSpan, hint: str | None = None
                  ) -> TranspileError: ...

        def promoted(self, a: ir.ScalarType, b: ir.ScalarType, span: SourceSpan
                     ) -> ir.ScalarType: ...

        def promoted_literal(self, t: ir.ScalarType, literal: int | float | bool,
                             span: SourceSpan) -> ir.ScalarType: ...

        def materialize(self, e: ir.Expr) -> ir.Expr: ...

        def scalar_of(self, e: ir.Expr, what: str = "this") -> ir.ScalarType: ...

        def coerce(self, e: ir.Expr, ty: ir.ScalarType | ir.VectorType | ir.TupleType |
                   ir.StructType, what: str,
                   explicit: bool = False) -> ir.Expr: ...

        def int_as_float(self, value: int | float, ty: ir.ScalarType, what: str,
                         span: SourceSpan) -> float: ...

        def to_bool(self, e: ir.Expr, what: str = "a condition") -> ir.Expr: ...

        def common_type(self, a: ir.Expr, b: ir.Expr, span: SourceSpan
                        ) -> ir.ScalarType | None: ...

        def from_symbol(self, sym, e: S.Expr) -> ir.Expr: ...

        def binop(self, op: str, left: ir.Expr, right: ir.Expr,
                  span: SourceSpan) -> ir.Expr: ...

        def is_local_root(self, e: S.Expr) -> bool: ...

        def shape_of(self, base: ir.ArrayRef, axis: int, span: SourceSpan) -> ir.Expr: ...

        def indices(self, base: ir.ArrayRef, raw: tuple[S.Expr, ...],
                    span: SourceSpan) -> tuple[ir.Expr, ...]: ...

        def const_int(self, e: S.Expr, what: str) -> int: ...

        def has_effects(self, e: ir.Expr) -> bool: ...

        # .warpgroup
        def swizzle_of(self, got: dict, elem, shape: tuple[int, ...], call: S.Call) -> int: ...

        def note_swizzled(self, name: str, call: S.Call) -> None: ...

        # .statements
        def block(self, stmts: tuple[S.Stmt, ...], kind: str = "body",
                  runs_once: bool = False, uniform: bool | None = None,
                  round: object = None) -> tuple[tuple[ir.Stmt, ...], bool]: ...

        def assign_name_value(self, target: S.Name, value: ir.Expr, span
                              ) -> list[ir.Stmt]: ...

        def store(self, target: S.Subscript, value_syntax: S.Expr | None, span,
                  augmented: bool, value: ir.Expr | None = None,
                  field: tuple[int, ...] = ()) -> ir.Stmt: ...

        # .calls
        def args(self, e: S.Call, names: tuple[str, ...], required: int,
                 what: str) -> dict[str, S.Expr]: ...

        def mask_arg(self, got: dict, span: SourceSpan) -> ir.Expr: ...

        def require_layout(self, layout: str, ndim: int, span: SourceSpan) -> None: ...

        # .vectors
        def vector_binop(self, op: str, left: ir.Expr, right: ir.Expr, span: SourceSpan
                         ) -> ir.Expr: ...

        def vector_unary(self, op: str, operand: ir.Expr, span: SourceSpan) -> ir.Expr: ...

        def vector_component(self, value: ir.Expr, attr: str, span: SourceSpan) -> ir.Expr: ...

        def vector_index(self, value: ir.Expr, index: S.Expr, span: SourceSpan) -> ir.Expr: ...

        def component_target(self, target: S.Attribute) -> tuple[ir.Var, int] | None: ...

        def item_target(self, target: S.Subscript) -> tuple[ir.Var, int] | None: ...

        def replace_component(self, var: ir.Var, index: int, value_syntax: S.Expr, span,
                              target_span) -> list[ir.Stmt]: ...

        def vector_minmax(self, name: str, values: list[ir.Expr], span: SourceSpan
                          ) -> ir.Expr: ...

        # .complexes
        def complex_coerce(self, e: ir.Expr, ty: ir.ComplexType, what: str,
                           explicit: bool = False) -> ir.Expr: ...

        def complex_binop(self, op: str, left: ir.Expr, right: ir.Expr, span: SourceSpan
                          ) -> ir.Expr: ...

        def complex_unary(self, op: str, operand: ir.Expr, span: SourceSpan) -> ir.Expr: ...

        def complex_compare(self, op: str, left: ir.Expr, right: ir.Expr, span: SourceSpan
                            ) -> ir.Expr: ...

        def complex_attribute(self, value: ir.Expr, attr: str, span: SourceSpan
                              ) -> ir.Expr: ...

        def complex_abs(self, value: ir.Expr, span: SourceSpan) -> ir.Expr: ...

        def complex_conditional(self, then: ir.Expr, orelse: ir.Expr
                                ) -> tuple[ir.ComplexType, ir.Expr, ir.Expr]: ...

        def refuse_complex(self, value: ir.Expr, what: str, hint: str | None = None
                           ) -> None: ...

        def call_conjugate(self, value: ir.Expr, e: S.Call) -> ir.Expr: ...

        def call_cmath(self, name: str, e: S.Call) -> ir.Expr: ...

        # .tuples
        def const_expr(self, value, span: SourceSpan) -> ir.Expr: ...

        def constant_of(self, e: ir.Expr): ...

        def bound_constant(self, name: str, span: SourceSpan) -> ir.Expr | None: ...

        def is_tuple(self, e: ir.Expr) -> bool: ...

        def tuple_items(self, e: ir.Expr) -> tuple[ir.Expr, ...]: ...

        def tuple_length(self, e: ir.Expr) -> int: ...

        def tuple_item(self, base: ir.Expr, index: tuple[S.Expr, ...],
                       span: SourceSpan) -> ir.Expr: ...

        def coerce_tuple(self, e: ir.Expr, ty: ir.TupleType, what: str) -> ir.Expr: ...

        def value_type(self, value: ir.Expr, what: str = "this") -> ir.Type: ...

        def unpack(self, target: S.Tuple, value_syntax: S.Expr,
                   span: SourceSpan) -> list[ir.Stmt]: ...

        def unpack_value(self, target: S.Tuple, value: ir.Expr,
                         span: SourceSpan) -> list[ir.Stmt]: ...

        def add_fits_checks(self, fits: list[tuple[LaunchExpr, ir.BinOp]]
                            ) -> list[tuple[ir.BinOp, int]]: ...

        def temporary(self, value: ir.Expr, out: list[ir.Stmt]) -> ir.Local: ...

        def for_tuple(self, s: S.For, value: ir.Expr,
                      counter: S.Expr | None = None, count_from: int = 0): ...

        def settle(self, e: ir.Expr, out: list[ir.Stmt]) -> ir.Expr: ...

        def unbind_constant(self, name: str) -> None: ...

        # .structs
        def call_struct_make(self, sym, e: S.Call) -> ir.Expr: ...

        def struct_field(self, value: ir.Expr, attr: str, span: SourceSpan) -> ir.Expr: ...

        def assign_field(self, target: S.Attribute, value_syntax: S.Expr, span,
                         augmented: bool) -> list[ir.Stmt] | None: ...

        # .generators
        def is_generator_declaration(self, value: S.Expr) -> TypeGuard[S.Call]: ...

        def declare_generator(self, target: S.Name, call: S.Call, span: SourceSpan,
                              annotation) -> list[ir.Stmt]: ...

        def call_generator(self, func: S.Attribute, e: S.Call) -> ir.Expr: ...

        def check_draw_order(self, stmts) -> None: ...
