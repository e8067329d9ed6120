"""The type pass over random number generators: ``rng = philox(seed, subsequence, offset)``
and its draws ``rng.uniform()``, ``rng.normal()``, ``rng.randint(n)``, ``rng.random_u32()``,
``rng.uniform4()``, ``rng.normal4()`` (the registry's ``generator`` entries).

A generator is not a value of the IR: it is three ``u64`` locals that the checker makes for
it (the key, the subsequence and the block counter, named like its other temporaries), which
the declaration assigns and every :class:`~gpu_native.ir.RandomDraw` reads, and whose counter
the draw advances.  So both backends keep it as they keep any local (the simulator masks and
compacts it with the others), and the name ``rng`` itself lives only here, as a
:class:`~.expressions.GeneratorType` local that is never declared.
"""

from __future__ import annotations

from typing import TypeGuard

from .. import ir
from ..frontend import syntax as S
from ..lang import registry as R
from ..lang.types import VECTORS
from ..nodes import fields
from . import promote as P
from .checker_base import CheckerBase
from .expressions import GeneratorType, GeneratorValue, WeakConst

RANDINT_MAX = 0xFFFFFFFF  # randint draws from 32-bit words (gn_philox_randint, philox.randint)
_METHODS = ", ".join(f"rng.{name}()" for name in R.GENERATOR_METHODS)


class GeneratorChecker(CheckerBase):
    """Mixin of :class:`~.checker.FunctionChecker`: random number generators."""

    def is_generator_declaration(self, value: S.Expr) -> TypeGuard[S.Call]:
        """Whether ``value`` is a call of ``philox(...)``."""
        if not isinstance(value, S.Call) or not isinstance(value.func, (S.Name, S.Attribute)):
            return False
        if self.is_local_root(value.func):
            return False
        sym = self.ctx.resolver.dotted(value.func)
        return sym is not None and sym.kind == "gn" and sym.name in R.GPU_NATIVE and \
            R.GPU_NATIVE[sym.name].form == "generator"

    def declare_generator(self, target: S.Name, call: S.Call, span,
                          annotation) -> list[ir.Stmt]:
        """``rng = philox(seed, subsequence=0, offset=0)``: assign the generator's three locals
        (made at its first declaration; a later one re-seeds the same generator)."""
        name = target.id
        entry = R.GPU_NATIVE["philox"]
        if annotation is not None:
            raise self.error(f"'{name}' holds a random number generator and takes no "
                             "annotation", target.span)
        var = self.vars.get(name) or self.decl.param_vars.get(name)
        if var is not None and not isinstance(var.ty, GeneratorType):
            raise self.error(f"'{name}' was declared {var.ty} at {var.span}; it cannot hold a "
                             "random number generator", target.span, "use a new name")
        got = self.args(call, entry.param_names, entry.required, "philox()")
        values: list[ir.Expr] = []
        for param in entry.params:
            if param.name not in got:
                values.append(ir.Const(call.span, ir.U64, 0))
                continue
            value = self.materialize(self.expr(got[param.name]))
            ty = self.scalar_of(value, f"philox()'s {param.name}")
            if not ty.info.is_int:
                raise self.error(f"philox()'s {param.name} must be an integer, not {ty}",
                                 value.span)
            values.append(self.coerce(value, ir.U64, f"philox()'s {param.name}",
                                      explicit=True))
        out: list[ir.Stmt] = []
        if any(self.has_effects(v) for v in values):
            # Every argument is evaluated before the generator changes, as Python binds the
            # name only after the call (`rng = philox(seed, rng.random_u32())`).
            temps: list[ir.Expr] = []
            for v in values:
                temp = self.new_var(f"{ir.TEMP_PREFIX}t{self.temp_counter}", ir.U64, v.span)
                self.temp_counter += 1
                out.append(ir.Assign(v.span, temp, v))
                temps.append(ir.Local(v.span, ir.U64, temp))
            values = temps
        if var is None:
            state = []
            for _ in range(3):
                state.append(self.new_var(f"{ir.TEMP_PREFIX}t{self.temp_counter}", ir.U64,
                                          target.span))
                self.temp_counter += 1
            var = self.new_var(name, GeneratorType(*state), target.span, register=False)
        gen = var.ty
        assert isinstance(gen, GeneratorType)
        for local, value in zip((gen.key, gen.subsequence, gen.counter), values):
            self.bounds.kill({local})
            self.defs.forget(local)
            out.append(ir.Assign(span, local, value))
        self.bounds.commit()
        self.draws_random = True
        self.vars[name] = var
        self.assigned.add(name)
        return out

    def call_generator(self, func: S.Attribute, e: S.Call) -> ir.Expr:
        """``rng.method(...)``: a draw (see :class:`~gpu_native.ir.RandomDraw`)."""
        generator = self.expr(func.value)
        assert isinstance(generator, GeneratorValue)
        entry = R.GENERATOR_METHODS.get(func.attr)
        if entry is None:
            raise self.error(f"a philox generator has no method {func.attr}(); it has "
                             f"{_METHODS}", func.span)
        ty = generator.ty
        assert isinstance(ty, GeneratorType)
        state = tuple(ir.Local(func.span, ir.U64, v) for v in (ty.key, ty.subsequence,
                                                                ty.counter))
        what = f"rng.{entry.name}()"
        if entry.result in VECTORS and (e.args or e.keywords):
            single = entry.name[:-1]
            raise self.error(f"{what} takes no arguments: it draws four f32 numbers (a "
                             f"{entry.result})", e.span,
                             f"for f64 numbers draw rng.{single}(f64) once per number")
        got = self.args(e, entry.param_names, entry.required, what)
        if entry.result == "u32":
            return ir.RandomDraw(e.span, ir.U32, entry.name, state)
        if entry.result in VECTORS:  # the whole block: uniform4(), normal4()
            return ir.RandomDraw(e.span, ir.vector(entry.result), entry.name, state)
        if entry.result == "dtype":
            result = ir.F32
            if "dtype" in got:
                result = self.annotation(got["dtype"])
                if result not in (ir.F32, ir.F64):
                    raise self.error(f"{what}'s dtype must be f32 or f64, not {result}",
                                     got["dtype"].span)
            return ir.RandomDraw(e.span, result, entry.name, state)
        return self.randint(entry, state, got["n"], e)

    def randint(self, entry: R.Entry, state, n_syntax: S.Expr,
                e: S.Call) -> ir.Expr:
        what = f"rng.{entry.name}()'s n"
        n = self.expr(n_syntax)
        if isinstance(n, WeakConst):
            if not isinstance(n.value, int) or isinstance(n.value, bool):
                raise self.error(f"{what} must be an integer, not {n.value!r}", n.span)
            if not 1 <= n.value <= RANDINT_MAX:
                raise self.error(f"{what} must be between 1 and 2**32 - 1, not {n.value}",
                                 n.span)
            n = self.materialize(n)
            return ir.RandomDraw(e.span, n.ty, entry.name, state, (n,))
        ty = self.scalar_of(n, what)
        if not ty.info.is_int:
            raise self.error(f"{what} must be an integer, not {ty}", n.span)
        ty = P.arithmetic_type(ty)
        n = self.coerce(n, ty, what, explicit=True)
        site = self.ctx.kernel.new_site(
            "assert", n_syntax.span,
            message=f"rng.{entry.name}(n) needs 1 <= n <= 2**32 - 1 (4294967295)")
        return ir.RandomDraw(e.span, ty, entry.name, state, (n,), site)

    def check_draw_order(self, stmts) -> None:
        """Refuse two draws from one generator where C++ leaves their order open (the operands
        of an operator, the arguments of a call, the indices of an element): the simulator
        evaluates left to right, the device compiler in any order, so the two backends would
        give the numbers to different operands.  ``and``, ``or`` and conditional expressions
        order their operands, and so do separate statements."""
        for s in stmts:
            groups: list[list[ir.Expr]] = [[]]
            for field in fields(s):
                value = getattr(s, field)
                if isinstance(s, ir.Store) and field == "value":
                    groups.append([value])  # evaluated before the element, in both backends
                elif isinstance(value, ir.Expr):
                    groups[0].append(value)
                elif isinstance(value, tuple):
                    groups[0].extend(v for v in value if isinstance(v, ir.Expr))
            for group in groups:
                self._unsequenced(group, s.span)

    def _unsequenced(self, operands: list[ir.Expr], span) -> None:
        seen: dict[int, ir.RandomDraw] = {}
        for operand in operands:
            for counter, draw in _draws(operand).items():
                if counter in seen:
                    raise self.error(
                        "two draws from one generator in one expression: CUDA C++ leaves their "
                        "order unspecified, so the numbers could reach other operands on the "
                        "GPU than in the simulator", draw.span,
                        "draw into locals first, one per statement: `x = rng.uniform()`, "
                        "`y = rng.uniform()`")
                seen[counter] = draw
        for operand in operands:
            if isinstance(operand, (ir.BoolOp, ir.Select)):
                for child in _children(operand):
                    self._unsequenced([child], span)
            elif not isinstance(operand, ir.RandomDraw):
                self._unsequenced(list(_children(operand)), span)
            else:
                self._unsequenced(list(operand.args), span)


def _children(e: ir.Expr):
    for field in fields(e):
        value = getattr(e, field)
        if isinstance(value, ir.Expr):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if isinstance(v, ir.Expr))


def _draws(e: ir.Expr) -> dict[int, ir.RandomDraw]:
    """The draws in ``e``, one per generator (by its counter variable)."""
    return {id(n.state[2].var): n for n in ir.walk(e) if isinstance(n, ir.RandomDraw)}
