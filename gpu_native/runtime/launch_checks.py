"""Checks a kernel asks the launcher to make once per launch shape, instead of every thread.

The transpiler records two kinds (in each variant's ``launch_checks``, see
:mod:`gpu_native.spec`):

* :class:`~gpu_native.spec.LaunchAssert`: an ``assert`` whose condition depends only on
  ``block_dim`` and ``grid_dim`` (``assert block_dim.x == TILE``).  It is evaluated here,
  exactly, and raises the same :class:`~gpu_native.errors.KernelAssertionError` the device would
  have.
* :class:`~gpu_native.spec.IndexFits`: a sum or product of launch indices that a bounds proof
  assumes does not wrap (``block_idx.x * 32 + thread_idx.x`` in i32).  Its largest value over
  the launch must stay within ``limit``; a grid that would make it wrap is refused with a
  :class:`~gpu_native.errors.LaunchError` naming the expression, before anything runs.

A third kind, :class:`~gpu_native.spec.ParamCheck`, depends on scalar arguments too (``stride
>= block_dim.x``, which a race-freedom proof assumed): the generated launcher tests it inline at
every launch and sends a failing call to the checked path, where :func:`check_params` raises a
``ValueError`` naming the parameter.

A fourth, :class:`~gpu_native.spec.ShapeAssert`, is an ``assert`` over the shapes of array
arguments (``a.shape[0] == grid_dim.y * BM``): the generated launcher tests it inline at every
launch too, and :func:`check_shapes` raises the assert's
:class:`~gpu_native.errors.KernelAssertionError` on the checked path.

Their trees are the typed nodes of :mod:`gpu_native.launchexpr` (a
:class:`~gpu_native.launchexpr.LaunchIndex` for ``block_dim.x``, an
:class:`~gpu_native.launchexpr.Arith` that wraps in its type, ...), which
:func:`~gpu_native.launchexpr.evaluate` computes; the spec literal keeps them in their compact
tagged-tuple form (``("sp", "block_dim", 0)``), read back into nodes when a kernel module is
imported.
"""

from __future__ import annotations

import linecache

from ..errors import LaunchError, SourceSpan, format_caret
from ..launchexpr import (
    AddressOf,
    Compare,
    Const,
    ParamValue,
    evaluate,
    largest_value,
    subtrees,
    tree_text,
)
from ..spec import IndexFits, LaunchAssert, LaunchCheck, ParamCheck, ShapeAssert
from .records import launch_assertion

__all__ = ["check_launch", "check_params", "check_shapes"]


def _largest(tree, grid, block) -> int:
    """The largest value of an :class:`~gpu_native.spec.IndexFits` tree on this launch."""
    def extent(name: str, axis: int) -> tuple[int, int]:
        if name in ("thread_idx", "block_idx"):
            return 0, (block if name == "thread_idx" else grid)[axis] - 1
        value = (block if name == "block_dim" else grid)[axis]
        return value, value

    return largest_value(tree, extent)


def _span(file: str, line: int, col: int, end_col: int | None) -> SourceSpan:
    return SourceSpan(file, line, col, end_col, linecache.getline(file, line))


def check_launch(kernel_name: str, file: str, kernel_id: int, checks: tuple[LaunchCheck, ...],
                 grid, block, files: tuple[str, ...] = (), shared_mem_bytes: int = 0) -> None:
    """Raise if the launch shape ``grid``/``block`` (3-tuples) fails one of ``checks``.

    ``file`` is the kernel's file, ``files`` those of other modules a check may be in
    (:attr:`~gpu_native.spec.KernelSpec.files`); ``shared_mem_bytes`` is the launch's dynamic
    shared memory (a swizzled shared array's check reads ``LaunchIndex("shared_mem_bytes",
    0)``)."""
    def special(name: str, axis: int) -> int:
        if name == "shared_mem_bytes":
            return shared_mem_bytes
        return {"block_dim": block, "grid_dim": grid}[name][axis]

    for check in checks:
        if isinstance(check, LaunchAssert):
            try:
                ok = evaluate(check.tree, special)
            except ZeroDivisionError:
                ok = False
            if not ok:
                threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
                raise launch_assertion(kernel_id, check.site, threads)
        elif isinstance(check, IndexFits):
            limit, ty, line, col = check.limit, check.type, check.line, check.col
            largest = _largest(check.tree, grid, block)
            if largest > limit:
                where = files[check.file - 1] if check.file else file
                span = _span(where, line, col, check.end_col)
                lines = [f"{kernel_name}: this launch (grid {tuple(grid)}, block {tuple(block)}) "
                         f"makes `{span.source_line[col:check.end_col].strip() or '...'}` reach "
                         f"{largest:,}, past the {ty} maximum {limit:,}: the index would wrap",
                         f'  File "{where}", line {line}, in {kernel_name}']
                caret = format_caret(span)
                if caret:
                    lines.append(caret)
                lines.append("  compute it in i64, e.g. i64(block_idx.x) * ..., or launch a "
                             "smaller grid")
                raise LaunchError("\n".join(lines))


def check_params(kernel_name: str, names: tuple[str, ...], checks: tuple[ParamCheck, ...],
                 args, grid, block) -> None:
    """Raise ``ValueError`` if the scalar arguments ``args`` (converted, in parameter order)
    fail one of ``checks`` on the launch shape ``grid``/``block`` (the kernel's own, 3-tuples).
    """
    def special(name: str, axis: int) -> int:
        return {"block_dim": block, "grid_dim": grid}[name][axis]

    for check in checks:
        if evaluate(check.tree, special, args):
            continue
        name = names[check.param]
        tree = check.tree
        text = tree_text(tree, 0, names)
        shown = ""
        if isinstance(tree, Compare):
            # The value the parameter was compared with (or, against a constant, the side
            # that holds it).
            # The parameter alone (`s >= 1`) shows nothing its value above does not.
            side = tree.left if isinstance(tree.right, Const) else tree.right
            if not isinstance(side, Const) and side != ParamValue(check.param):
                shown = f" ({evaluate(side, special, args):,})"
        counter = check.counter
        if counter:
            raise ValueError(
                f"{kernel_name}(): parameter '{name}' is {args[check.param]}, too close to the "
                f"limit of the while loop's counter '{counter}' (line {check.line}): its last "
                f"step would wrap around, which {text}{shown} rules out; pass a smaller "
                f"'{name}', launch a smaller grid, or make the counter an i64")
        raise ValueError(
            f"{kernel_name}(): parameter '{name}' is {args[check.param]} but the writes to "
            f"{check.array} (line {check.line}) were proven race-free for {text}{shown} only "
            f"(the proof's condition, which may be stricter than the kernel needs); pass a "
            f"value of '{name}' that satisfies it, or launch another shape")


def check_shapes(kernel_id: int, checks: tuple[ShapeAssert, ...], arrays, grid, block) -> None:
    """Raise the ``KernelAssertionError`` of the first of ``checks`` that the array arguments
    (``arrays``: each parameter's ``DeviceArray``, ``None`` for a scalar, in parameter order;
    their shapes and addresses) fail on the launch shape ``grid``/``block`` (the kernel's own,
    3-tuples)."""
    def special(name: str, axis: int) -> int:
        return {"block_dim": block, "grid_dim": grid}[name][axis]

    for check in checks:
        if not evaluate(check.tree, special, arrays):
            threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
            reads_address = any(isinstance(t, AddressOf) for t in subtrees(check.tree))
            depends = ("an argument's address" if reads_address
                       else "the arguments' shapes and the launch shape")
            raise launch_assertion(kernel_id, check.site, threads, depends)
