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

Their trees are plain tuples: ``("c", value)``, ``("sp", name, axis)``, ``(op, left, right[,
type])``, ``("and" | "or", parts)``, ``("not", tree)``.
"""

from __future__ import annotations

import linecache

from ..errors import LaunchError, SourceSpan, format_caret
from ..spec import (
    IndexFits,
    LaunchAssert,
    LaunchCheck,
    ParamCheck,
    ShapeAssert,
    largest_value,
    tree_text,
)
from .records import launch_assertion

__all__ = ["check_launch", "check_params", "check_shapes"]

_BITS = {"i8": (8, True), "i16": (16, True), "i32": (32, True), "i64": (64, True),
         "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
         "bool": (1, False)}


def _wrap(value: int, ty: str) -> int:
    bits, signed = _BITS.get(ty, (64, True))
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def _floordiv(a: int, b: int, ty: str) -> int:
    if b == 0:
        raise ZeroDivisionError
    return _wrap(a // b, ty)


def _value(tree, special) -> int:
    """Evaluate ``tree`` with ``special(name, axis)`` giving the launch indices."""
    op = tree[0]
    if op == "c":
        return tree[1]
    if op == "sp":
        return special(tree[1], tree[2])
    if op == "and":
        return int(all(_value(t, special) for t in tree[1]))
    if op == "or":
        return int(any(_value(t, special) for t in tree[1]))
    if op == "not":
        return int(not _value(tree[1], special))
    a, b = _value(tree[1], special), _value(tree[2], special)
    if len(tree) == 4:
        ty = tree[3]
        if op == "+":
            return _wrap(a + b, ty)
        if op == "-":
            return _wrap(a - b, ty)
        if op == "*":
            return _wrap(a * b, ty)
        if op == "//":
            return _floordiv(a, b, ty)
        if op == "%":
            return _wrap(a - b * _floordiv(a, b, ty), ty)
    return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                ">=": a >= b}[op])


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
    shared memory (a swizzled shared array's check, ``("sp", "shared_mem_bytes", 0)``)."""
    def special(name: str, axis: int) -> int:
        if name == "shared_mem_bytes":
            return shared_mem_bytes
        return {"block_dim": block, "grid_dim": grid}[name][axis]

    for check in checks:
        if isinstance(check, LaunchAssert):
            try:
                ok = _value(check.tree, special)
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


def _exact(tree, special, args) -> int:
    """A :class:`~gpu_native.spec.ParamCheck` tree's value, in exact integers."""
    op = tree[0]
    if op == "c":
        return tree[1]
    if op == "sp":
        return special(tree[1], tree[2])
    if op == "param":
        return args[tree[1]]
    if op == "shape":
        return args[tree[1]].shape[tree[2]]
    if op == "ptr":
        return args[tree[1]].ptr
    if op == "and":
        return int(all(_exact(t, special, args) for t in tree[1]))
    if op == "or":
        return int(any(_exact(t, special, args) for t in tree[1]))
    if op == "not":
        return int(not _exact(tree[1], special, args))
    a, b = _exact(tree[1], special, args), _exact(tree[2], special, args)
    if op in ("+", "-", "*"):
        return a + b if op == "+" else a - b if op == "-" else a * b
    if op in ("//", "%"):
        # A positive constant divisor (see gpu_native.check.launch.shape_tree): Python's
        # floor division is C's on the nonnegative values a shape tree computes.
        return a // b if op == "//" else a % b
    return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                ">=": a >= b}[op])


def check_params(kernel_name: str, names: tuple[str, ...], checks: tuple[ParamCheck, ...],
                 args, grid, block) -> None:
    """Raise ``ValueError`` if the scalar arguments ``args`` (converted, in parameter order)
    fail one of ``checks`` on the launch shape ``grid``/``block`` (the kernel's own, 3-tuples).
    """
    def special(name: str, axis: int) -> int:
        return {"block_dim": block, "grid_dim": grid}[name][axis]

    for check in checks:
        if _exact(check.tree, special, args):
            continue
        name = names[check.param]
        tree = check.tree
        text = tree_text(tree, 0, names)
        shown = ""
        if tree[0] in (">=", ">", "<=", "<", "==", "!="):
            # The value the parameter was compared with (or, against a constant, the side
            # that holds it).
            # The parameter alone (`s >= 1`) shows nothing its value above does not.
            side = tree[1] if tree[2][0] == "c" else tree[2]
            if side[0] != "c" and side != ("param", check.param):
                shown = f" ({_exact(side, special, args):,})"
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
        if not _exact(check.tree, special, arrays):
            threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
            depends = ("an argument's address" if _reads_address(check.tree)
                       else "the arguments' shapes and the launch shape")
            raise launch_assertion(kernel_id, check.site, threads, depends)


def _reads_address(tree) -> bool:
    """Does the check's tree read an argument's address (a ``("ptr", param)`` leaf)?"""
    if type(tree) is not tuple:
        return False
    return tree[:1] == ("ptr",) or any(_reads_address(t) for t in tree[1:])
