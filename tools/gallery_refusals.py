#!/usr/bin/env python3
"""What gpu_native's checker says about every write of the examples gallery once its
``with unsafe():`` blocks are taken away: one line per store, accepted or refused.

    python3 tools/gallery_refusals.py                     # every gallery file
    python3 tools/gallery_refusals.py --unsafe-only       # only what the unsafe blocks wrap
    python3 tools/gallery_refusals.py examples/gallery/bitonic_sort.py

Each line is ``file:line  accepted: <rule>`` or ``file:line  refused: <first line of the
checker's message>``, e.g.::

    examples/gallery/bitonic_sort.py:52  accepted: block-unique index (shared)
    examples/gallery/bitonic_sort.py:57  refused: 's_key' is written through two different ...

A line ends in ``[unsafe]`` when the gallery wraps that access in ``with unsafe():``: an
``accepted`` one of those means the block is no longer needed.  Plain stores, atomics and the
reads the checker refuses (a read of an array the kernel writes, at another thread's element)
are listed; stores into ``local_array``s are not (they cannot race).  The last lines, starting
with ``#``, sum up.

How: every ``with unsafe():`` line is blanked and its body moved out one level, so no line
moves.  The checker stops at its first refusal, so the tool notes it, puts that one statement
back under ``with unsafe():`` (on its own line: ``with unsafe(): x[i] = v``) and transpiles
again, until the file goes through; the accepted writes are then read from the checked IR,
with the rule that made each acceptable.  A statement with two refused accesses shows the first.
``tests/test_gallery.py`` uses this to check that every unsafe block of the gallery is still
needed.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GALLERY = ROOT / "examples" / "gallery"

# How the checker proved a store race-free (``ir.Store.unique``), by the memory it writes.
_RULES = {
    ("uid", "global"): "unique index (global)",
    ("uid", "shared"): "block-unique index (shared)",
    ("single", "global"): "one thread of the grid (global)",
    ("single", "shared"): "one thread of the block (shared)",
}
# A guard against a statement that stays refused with `with unsafe():` around it.
_MAX_ROUNDS = 200


@dataclass(frozen=True, order=True)
class UnsafeBlock:
    """One ``with unsafe():`` statement: the line of the ``with`` and the last line of its body
    (1-based, inclusive)."""

    line: int
    end_line: int

    def holds(self, line: int) -> bool:
        return self.line < line <= self.end_line


@dataclass(frozen=True)
class Verdict:
    """What the checker says about one access once the gallery's unsafe blocks are gone."""

    file: str
    line: int
    kind: str             # "store", "atomic" or "read"
    accepted: bool
    text: str             # the rule that accepted it, or the first line of the refusal
    in_unsafe: bool       # the gallery wraps it in `with unsafe():`

    def __str__(self) -> str:
        verdict = "accepted" if self.accepted else "refused"
        tag = "  [unsafe]" if self.in_unsafe else ""
        return f"{self.file}:{self.line}  {verdict}: {self.text}{tag}"


def _is_unsafe_with(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.With) or len(stmt.items) != 1:
        return False
    call = stmt.items[0].context_expr
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "unsafe" and not call.args and not call.keywords)


def unsafe_blocks(source: str) -> list[UnsafeBlock]:
    """The ``with unsafe():`` blocks of a module, in source order."""
    return sorted(UnsafeBlock(n.lineno, n.end_lineno or n.lineno)
                  for n in ast.walk(ast.parse(source)) if _is_unsafe_with(n))


def without_unsafe(source: str) -> str:
    """``source`` with every ``with unsafe():`` taken away and every line kept in place: the
    ``with`` line becomes blank and its body moves out by one level."""
    lines = source.splitlines(keepends=True)
    withs = [n for n in ast.walk(ast.parse(source)) if _is_unsafe_with(n)]
    # Innermost first, so that a nested block's body moves out by both levels.
    for node in sorted(withs, key=lambda n: -n.col_offset):
        if node.body[0].lineno == node.lineno:
            raise ValueError(f"line {node.lineno}: put the body of `with unsafe():` on its own "
                             "lines")
        shift = node.body[0].col_offset - node.col_offset
        lines[node.lineno - 1] = "\n"
        for n in range(node.lineno + 1, (node.end_lineno or node.lineno) + 1):
            text = lines[n - 1]
            spaces = len(text) - len(text.lstrip(" "))
            lines[n - 1] = text[min(shift, spaces):]
    return "".join(lines)


def _statement_at(source: str, line: int) -> ast.stmt | None:
    """The innermost simple statement whose lines include ``line``."""
    best = None
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.stmt) and not hasattr(node, "body")
                and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (best is None or node.lineno >= best.lineno)):
            best = node
    return best


def _rewrap(source: str, line: int) -> str:
    """``source`` with the statement at ``line`` under ``with unsafe():``, on the same line."""
    stmt = _statement_at(source, line)
    if stmt is None:
        raise ValueError(f"line {line} is not in a simple statement that `with unsafe():` could "
                         "wrap")
    lines = source.splitlines(keepends=True)
    text = lines[stmt.lineno - 1]
    lines[stmt.lineno - 1] = text[:stmt.col_offset] + "with unsafe(): " + text[stmt.col_offset:]
    return "".join(lines)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _writes(module) -> Iterator[tuple[int, str, str]]:
    """``(line, kind, rule)`` for every store and atomic write of a transpiled module's kernels
    and the device functions they call (first specialisation of each kernel)."""
    from gpu_native import ir

    seen = set()
    for checked in module.checked:
        kernel = checked.specializations[0]
        bodies = [kernel.body, *(fn.body for fn in kernel.device_functions)]
        for body in bodies:
            for n in ir.walk(body):
                if isinstance(n, ir.Store) and n.array.ty.space != "local":
                    item = (n.span.file, n.span.line, "store",
                            _RULES.get((n.unique, n.array.ty.space),
                                       f"{n.unique} ({n.array.ty.space})"))
                elif isinstance(n, ir.Atomic) and n.op != "load":
                    item = (n.span.file, n.span.line, "atomic", f"atomic {n.op}")
                else:
                    continue
                if item not in seen:
                    seen.add(item)
                    yield item


def verdicts(path: Path) -> list[Verdict]:
    """Every write of ``path`` (and every refused read), with the checker's verdict once the
    file's ``with unsafe():`` blocks are taken away."""
    from gpu_native.errors import TranspileError
    from gpu_native.rewrite import transpile_module

    source = path.read_text()
    name = _display(path)
    blocks = unsafe_blocks(source)
    text = without_unsafe(source)
    refused: dict[int, tuple[int, str]] = {}      # statement line -> (access line, message)
    for _ in range(_MAX_ROUNDS):
        try:
            module = transpile_module(text, name, path.stem)
            break
        except TranspileError as err:
            if err.span is None:
                raise
            stmt = _statement_at(text, err.span.line)
            if stmt is None or stmt.lineno in refused:
                raise RuntimeError(f"{name}:{err.span.line}: refused even under `with unsafe():` "
                                   f"(or outside a simple statement): {err.message}") from err
            refused[stmt.lineno] = (err.span.line, err.message.splitlines()[0])
            text = _rewrap(text, err.span.line)
    else:
        raise RuntimeError(f"{name}: more than {_MAX_ROUNDS} refusals")

    def inside(line: int) -> bool:
        return any(b.holds(line) for b in blocks)

    out = []
    reported = set()
    for file, line, kind, rule in _writes(module):
        if file != name:
            continue      # a device function of another module: its own file's business
        if rule.startswith("unsafe") and line in refused:
            message = refused[line][1]
            reported.add(line)
            out.append(Verdict(name, line, kind, False, message, inside(line)))
        else:
            out.append(Verdict(name, line, kind, True, rule, inside(line)))
    for stmt_line, (line, message) in refused.items():
        if stmt_line not in reported:      # a refused read (or a store the IR shows elsewhere)
            out.append(Verdict(name, line, "read", False, message, inside(line)))
    return sorted(out, key=lambda v: (v.line, v.kind))


def gallery_files() -> list[Path]:
    """The gallery's kernel modules (``_gallery.py`` and other private helpers left out)."""
    return sorted(p for p in GALLERY.glob("*.py") if not p.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="gallery files (default: all)")
    parser.add_argument("--unsafe-only", action="store_true",
                        help="list only the accesses the gallery wraps in `with unsafe():`")
    args = parser.parse_args(argv)
    totals = {"blocks": 0, "wrapped": 0, "refused": 0, "needless": 0}
    for path in args.files or gallery_files():
        blocks = unsafe_blocks(path.read_text())
        found = verdicts(path)
        for v in found:
            if v.in_unsafe or not args.unsafe_only:
                print(v)
        wrapped = [v for v in found if v.in_unsafe]
        totals["blocks"] += len(blocks)
        totals["wrapped"] += len(wrapped)
        totals["refused"] += sum(not v.accepted for v in wrapped)
        totals["needless"] += sum(
            not any(b.holds(v.line) and not v.accepted for v in found) for b in blocks)
    print(f"# {totals['blocks']} unsafe blocks wrap {totals['wrapped']} accesses: "
          f"{totals['refused']} refused, {totals['wrapped'] - totals['refused']} accepted; "
          f"{totals['needless']} blocks no longer needed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
