"""The checker's passes, and the driver that runs them over one function.

A function is checked by the passes below, in this order (a device function by the first four);
each reads what the ones before it produced into the :class:`FunctionUnit` and adds its own:

=====================  =========================================================================
``resolve``            :mod:`.resolve`: the signature's types, the assignment counts of the body.
``type``               :mod:`.checker` and its mixins: the typed body.  The proofs that need the
                       facts of the point they are about run inside this walk, with their state
                       in their own objects: ``bounds proofs`` (:mod:`.bounds`), ``unique-write
                       proofs`` (:mod:`.unique`), ``no-wrap`` (:mod:`.nowrap`), and the grid-tail
                       and trait notes.  One walk, because the facts at each point are those of
                       the path that reaches it, which only the walk knows.
``unique-write         :meth:`.unique.UniqueWrites.check_reads`: reads of written arrays, once
proofs``               every store is known.
``no-wrap``            :meth:`.nowrap.NoWrapProofs.mark`: the proven BinOps marked in the body.
``grid tail``          :meth:`.tail.GridTail.apply`: a kernel's ``TailExit`` (kernels only).
``traits``             :func:`.traits.kernel_traits`: a kernel's ``KernelTraits`` (kernels only).
=====================  =========================================================================

A failure of our own code in a pass (anything but a :class:`~gpu_native.errors.GpuNativeError`,
which includes every error about the user's code) is raised as an
:class:`~gpu_native.errors.InternalError` that names the pass, and the proof within the type walk
where one was running.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import ir
from ..errors import GpuNativeError, InternalError
from ..frontend import syntax as S
from ..nodes import node
from .checker import FunctionChecker
from .context import FunctionContext
from .resolve import Declarations, resolve
from .traits import kernel_traits


@node(frozen=False, eq=False)
class FunctionUnit:
    """One function as its passes see it: the input, then what each pass produced."""

    ctx: FunctionContext
    fn: S.FunctionDef
    #: resolve
    declarations: Declarations | None = None
    #: type (with the proofs it runs; later passes finish their work)
    checker: FunctionChecker | None = None
    #: type, then no-wrap and grid tail
    body: tuple[ir.Stmt, ...] = ()
    #: traits (kernels)
    traits: ir.KernelTraits | None = None

    @property
    def device_functions(self) -> tuple[ir.DeviceFunction, ...]:
        """Every device function reached, callees before callers (the order C++ needs)."""
        assert self.checker is not None
        return tuple(_ordered_callees(self.checker.callees))


class CheckPass:
    """A named step over a :class:`FunctionUnit`; its docstring says what it reads and writes."""

    name = ""

    def run(self, unit: FunctionUnit) -> None:  # pragma: no cover - every pass overrides it
        raise NotImplementedError


class ResolvePass(CheckPass):
    """Reads the function's syntax and context; writes ``declarations``."""

    name = "resolve"

    def run(self, unit: FunctionUnit) -> None:
        unit.declarations = resolve(unit.ctx, unit.fn)


class TypePass(CheckPass):
    """Reads ``declarations``; writes ``checker`` (with the state of the proofs made on the
    way) and ``body``.  Error sites and launch checks go to the kernel's context."""

    name = "type"

    def run(self, unit: FunctionUnit) -> None:
        assert unit.declarations is not None
        unit.checker = FunctionChecker(unit.ctx, unit.fn, unit.declarations)
        unit.body = unit.checker.check_body()


class UniqueWritesPass(CheckPass):
    """Reads the stores and reads the type pass noted; writes nothing (refuses a racy read)."""

    name = "unique-write proofs"

    def run(self, unit: FunctionUnit) -> None:
        assert unit.checker is not None
        unit.checker.unique.check_deferred_pairs()
        unit.checker.unique.check_reads()
        unit.checker.unique.check_tickets()
        unit.checker.unique.check_calls()
        assert unit.body is not None
        unit.checker.unique.check_scaled(unit.body)
        unit.checker.unique.check_ticket_pins(unit.body)
        unit.checker.unique.check_atomic_reads()
        unit.checker.unique.check_atomic_stores()
        unit.checker.unique.check_shared_reads()


class NoWrapPass(CheckPass):
    """Reads ``body`` and the BinOps the proofs showed never wrap; writes ``body``."""

    name = "no-wrap"

    def run(self, unit: FunctionUnit) -> None:
        assert unit.checker is not None
        unit.body = unit.checker.no_wrap.mark(unit.body)


class GridTailPass(CheckPass):
    """Reads ``body``, the grid-tail and trait notes; writes ``body``."""

    name = "grid tail"

    def run(self, unit: FunctionUnit) -> None:
        checker = unit.checker
        assert checker is not None
        unit.body = checker.tail.apply(unit.body, checker.traits, unit.fn.span)


class TraitsPass(CheckPass):
    """Reads the trait notes and everything the kernel declares; writes ``traits``."""

    name = "traits"

    def run(self, unit: FunctionUnit) -> None:
        checker = unit.checker
        assert checker is not None and unit.declarations is not None
        parts = (unit.declarations.params, tuple(checker.locals), unit.body,
                 tuple(checker.shared), tuple(checker.local_arrays))
        unit.traits = kernel_traits(checker.traits, unit.ctx.ndim, parts,
                                    unit.device_functions)


DEVICE_FUNCTION_PASSES: tuple[CheckPass, ...] = (
    ResolvePass(), TypePass(), UniqueWritesPass(), NoWrapPass())
KERNEL_PASSES: tuple[CheckPass, ...] = (*DEVICE_FUNCTION_PASSES, GridTailPass(), TraitsPass())

# The proofs that run inside the type walk, by the module their code is in: a failure there is
# reported as theirs.
_PROOF_MODULES = {
    f"{__package__}.bounds": "bounds proofs",
    f"{__package__}.unique": "unique-write proofs",
    f"{__package__}.nowrap": "no-wrap",
    f"{__package__}.tail": "grid tail",
    f"{__package__}.traits": "traits",
}


def check_function(ctx: FunctionContext, fn: S.FunctionDef,
                   passes: Sequence[CheckPass] | None = None) -> FunctionUnit:
    """Run ``passes`` (by default those of the function's kind) over ``fn``, in order."""
    if passes is None:
        passes = KERNEL_PASSES if fn.kind == "kernel" else DEVICE_FUNCTION_PASSES
    unit = FunctionUnit(ctx, fn)
    for step in passes:
        try:
            step.run(unit)
        except (GpuNativeError, RecursionError, MemoryError):
            # The user's errors, a device function's own pass failure (already named), and
            # nesting too deep (reported at the kernel, see program._no_recursion_error).
            raise
        except Exception as exc:
            raise _internal_error(step.name, fn, exc) from exc
    return unit


def _internal_error(name: str, fn: S.FunctionDef, exc: Exception) -> InternalError:
    """The error for ``exc`` raised in pass ``name``; the innermost proof module on the
    traceback, if any, names the proof that failed within the type walk."""
    inner = None
    tb = exc.__traceback__
    while tb is not None:
        inner = _PROOF_MODULES.get(tb.tb_frame.f_globals.get("__name__", "")) or inner
        tb = tb.tb_next
    where = f"'{name}' pass"
    if inner is not None and inner != name:
        where = f"'{inner}' (run within its '{name}' pass)"
    return InternalError(
        f"internal error in the checker's {where}, checking {fn.kind} function '{fn.name}' at "
        f"{fn.span}: {type(exc).__name__}: {exc}; this is a bug in gpu_native, please report "
        "it with the function's source", stage=inner or name)


def _ordered_callees(direct: list[ir.DeviceFunction]) -> list[ir.DeviceFunction]:
    out: list[ir.DeviceFunction] = []
    seen: set[int] = set()

    def visit(f: ir.DeviceFunction) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        for c in f.callees:
            visit(c)
        out.append(f)

    for f in direct:
        visit(f)
    return out
