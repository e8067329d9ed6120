"""Checks the ``@gpu_device`` functions of a module that none of its kernels calls.

A device function is checked where a kernel calls it, with the types the call binds.  One that no
kernel of its module calls (a module of device functions only, a helper not used yet) is checked
here on its own, so that its errors show when its module is expanded or imported, not only when
some kernel, perhaps in another module, first calls it:

* its parameters' and return annotations give its types;
* a generic one is checked once per combination of its constrained TypeVars' types (the ones a
  kernel's call has not checked already); past :data:`~.program.MAX_SPECIALIZATIONS`
  combinations, each type of each TypeVar at least once;
* an unconstrained TypeVar (``TypeVar("T")``) may be any scalar type: the function passes if it
  checks for one of them (so a misspelt name or a bad call is still found, while ``x << 1`` is
  not held against the float types);
* a device function may use the layouts of a 1-, 2- or 3-D kernel: it passes if it checks in a
  kernel of one of those;
* a ``Const`` parameter takes its default; a function with one that has no default is checked
  only where it is called (it has no value before).

When every attempt fails, the error reported is the one found furthest into the function.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from .. import ir
from ..errors import TranspileError
from ..frontend import syntax as S
from .context import FunctionContext, KernelContext
from .passes import check_function

if TYPE_CHECKING:
    from .program import Program

# The types tried for an unconstrained TypeVar, the common ones first (the first that checks
# ends the search).
_FREE_ORDER = ("f32", "i32", "f64", "i64", *(n for n in ir.SCALARS if n not in
                                            ("f32", "i32", "f64", "i64")))


def check_uncalled(program: Program, fn: S.FunctionDef, covered: set[tuple]) -> None:
    """Check the device function ``fn`` of ``program``'s module for each binding of its TypeVars
    that no kernel has checked (``covered`` holds the checked ``(path, name, binding)`` keys
    and gains the ones checked here); raise the :class:`TranspileError` of a binding that fails
    in every context tried."""
    from .program import _is_annotation  # here: program imports this module

    scan = program.scan
    if any(p.default is None and _is_annotation(program.resolver, p.annotation, "const type")
           for p in fn.params):
        return  # a Const parameter without a default has a value only where it is called
    typevars = program.typevars_of(fn)
    constrained = [tv for tv in typevars if scan.typevars[tv]]
    free = [tv for tv in typevars if not scan.typevars[tv]]
    for tv in constrained:
        for n in scan.typevars[tv]:
            if n not in ir.SCALARS:
                raise TranspileError(f"TypeVar '{tv}' may only list gpu_native scalar types "
                                     f"('{n}' is not one)", fn.span)
    done = {frozenset((k, v) for k, v in key[2] if k in constrained)
            for key in covered if key[0] == scan.path and key[1] == fn.name}
    if free and done:
        return  # a kernel bound its free TypeVars: checked as far as it goes
    for combo in _combinations([scan.typevars[tv] for tv in constrained]):
        binding = {tv: ir.scalar(name) for tv, name in zip(constrained, combo)}
        if frozenset((tv, t.name) for tv, t in binding.items()) in done:
            continue
        _check_binding(program, fn, binding, free, covered)


def _combinations(constraints: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    from .program import MAX_SPECIALIZATIONS  # here: program imports this module

    combos = list(itertools.product(*constraints))
    if len(combos) > MAX_SPECIALIZATIONS:
        # Each type of each TypeVar once, paired along the diagonal.
        width = max(len(c) for c in constraints)
        combos = [tuple(c[min(i, len(c) - 1)] for c in constraints) for i in range(width)]
    return combos


def _check_binding(program: Program, fn: S.FunctionDef, binding: dict[str, ir.ScalarType],
                   free: list[str], covered: set[tuple]) -> None:
    errors: list[TranspileError] = []
    for free_type in _FREE_ORDER if free else (None,):
        full = dict(binding)
        full.update({tv: ir.scalar(free_type) for tv in free} if free_type else {})
        for ndim in (1, 2, 3):
            # As if called from a cooperative kernel: grid_sync() is checked where a kernel
            # calls the function (refused in kernels that are not cooperative).
            kctx = KernelContext(program, ndim, ir.KernelOptions(cooperative=True))
            types = tuple(sorted((k, v.name) for k, v in full.items()))
            key = (program.scan.path, fn.name, types, ())
            kctx.stack.append(key)  # a call back into fn is recursion, as from a kernel
            try:
                check_function(FunctionContext(kctx, program.resolver.within(fn), full), fn)
            except TranspileError as exc:
                errors.append(exc)
                continue
            covered.add(key)
            covered.update(kctx.devices)
            return
    error = max(errors, key=lambda e: _progress(e, fn))
    if binding:
        chosen = ", ".join(f"{tv} = {t.name}" for tv, t in binding.items())
        note = (f"{fn.name} was checked with {chosen}, one of the types its TypeVars allow "
                "(no kernel of this module calls it)")
        raise TranspileError(error.message, error.span,
                             f"{error.hint}; {note}" if error.hint else note) from None
    raise error.with_traceback(None) from None


def _progress(error: TranspileError, fn: S.FunctionDef) -> tuple:
    """How far into ``fn`` checking got before ``error`` (errors in ``fn``'s file by position;
    elsewhere, in a function it calls, less far)."""
    span = error.span
    if span is None:
        return (False, 0, 0)
    return (span.file == fn.span.file and span.line >= fn.span.line, span.line, span.col)
