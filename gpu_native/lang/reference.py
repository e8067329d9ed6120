"""The reference tables of the kernel language in ``docs/language.md``, generated from
:mod:`gpu_native.lang.registry`.

``python -m gpu_native.lang.reference`` prints them; ``--write FILE`` replaces what lies
between the two marker comments in ``FILE``; ``--check FILE`` exits with status 1 when that text
is stale (tests/language/test_registry.py runs the same check).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping

from .registry import ENTRIES, Entry

BEGIN = "<!-- language reference: begin -->"
END = "<!-- language reference: end -->"
_NOTICE = ("<!-- generated from gpu_native/lang/registry.py by `python -m gpu_native.lang.reference "
           "--write docs/language.md`: do not edit by hand -->")

# The tables, in order: a title and the (namespace, form) pairs whose entries it lists, or
# (namespace, form, checker handlers) triples, which take their entries first.
SECTIONS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("Types (`from gpu_native import ...`)", (
        ("gpu_native", "type"), ("gpu_native", "array type"), ("gpu_native", "array layout"),
        ("gpu_native", "index type"),
        ("gpu_native", "const type"), ("builtins", "tuple type"))),
    ("Vectors", (("gpu_native", "vector type"), ("gpu_native", "call", "call_vector", "call_load_vec"),
                 ("vector", "attribute"))),
    ("Complex numbers", (("gpu_native", "complex type"), ("complex", "attribute"),
                         ("complex", "method"))),
    ("The `cmath` module", (("cmath", "call"), ("cmath", "constant"))),
    ("Kernels, layouts and launch coordinates", (
        ("gpu_native", "decorator"), ("gpu_native", "kernel kind"), ("gpu_native", "layout"),
        ("layout", "method"), ("layout", "loop"), ("gpu_native", "loop"), ("gpu_native", "dim3"),
        ("dim3", "attribute"))),
    ("Memory, barriers and warps", (
        ("gpu_native", "allocation"), ("gpu_native", "declaration"), ("gpu_native", "statement"),
        ("gpu_native", "call"),
        ("gpu_native", "constant"), ("gpu_native", "context"))),
    ("Bits", (("gpu_native", "call", "call_bits", "call_bitcast"),)),
    ("Atomics: `x.atomic_ref(i).fetch_add(v)` and friends", (
        ("array", "method"), ("atomic_ref", "method"), ("gpu_native", "enum"))),
    ("Random numbers: `rng = philox(seed, subsequence, offset)`", (
        ("gpu_native", "generator"), ("generator", "method"))),
    ("The `math` module", (("math", "call"), ("math", "constant"))),
    ("Builtins", (("builtins", "call"), ("builtins", "loop"), ("builtins", "statement"))),
)

_PREFIX = {"math": "math.", "cmath": "cmath.", "complex": "z.", "atomic_ref": ".", "layout": "Layout.", "dim3": ".", "array": "x.",
           "vector": "v.", "generator": "rng."}


def _name(entry: Entry) -> str:
    prefix = _PREFIX.get(entry.namespace, "")
    if entry.form in ("call", "statement", "allocation", "context", "method", "loop",
                      "generator", "declaration"):
        text = prefix + entry.signature()
        if entry.result and entry.result != "None":
            text += f" → {entry.result}"
        return f"`{text}`"
    return f"`{prefix}{entry.name}`"


def _cuda(entry: Entry) -> str:
    table = entry.cuda
    if table is None:
        return ""
    values: Iterable = table.values() if isinstance(table, Mapping) else (table,)
    seen: list[str] = []
    for value in values:
        text = str(value).replace("{T}", "T").replace("{R}", "R")
        if text not in seen:
            seen.append(text)
    return " / ".join(f"`{v}`" for v in seen)


def _claimed() -> set[int]:
    """The entries that a group naming checker handlers lists (no other group lists them)."""
    return {id(e) for _, groups in SECTIONS for group in groups if len(group) > 2
            for e in ENTRIES if (e.namespace, e.form) == group[:2] and e.check in group[2:]}


def markdown() -> str:
    """The reference tables, between the markers."""
    lines = [BEGIN, _NOTICE]
    listed: set[int] = set()
    claimed = _claimed()
    for title, groups in SECTIONS:
        lines += ["", f"### {title}", "", "| name | meaning | CUDA | since |", "|---|---|---|---|"]
        for namespace, form, *checks in groups:
            for entry in ENTRIES:
                if entry.namespace == namespace and entry.form == form and (
                        entry.check in checks if checks else id(entry) not in claimed):
                    listed.add(id(entry))
                    doc = entry.doc.replace("|", "\\|")
                    if entry.arch:
                        doc += f" (sm_{entry.arch} and newer GPUs)"
                    lines.append(f"| {_name(entry)} | {doc} | {_cuda(entry)} | {entry.since} |")
    missing = [e.name for e in ENTRIES if id(e) not in listed]
    if missing:  # pragma: no cover - a new (namespace, form) pair needs a place in SECTIONS
        raise AssertionError(f"no section of the reference lists {missing}")
    lines += ["", END]
    return "\n".join(lines)


def rewrite(text: str) -> str:
    """``text`` with the reference tables between its markers replaced by :func:`markdown`."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError("the file has no language reference markers "
                         f"({BEGIN!r} ... {END!r})")
    return text[:start] + markdown() + text[end + len(END):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_native.lang.reference",
                                     description="The kernel language's reference tables.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="rewrite the tables in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 when FILE's tables are stale")
    args = parser.parse_args(argv)
    path = args.write or args.check
    if path is None:
        print(markdown())
        return 0
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = rewrite(text)
    if args.check:
        if new != text:
            print(f"{path}: the language reference is stale; run "
                  f"python -m gpu_native.lang.reference --write {path}", file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
