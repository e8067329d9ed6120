"""Write the README's Python code blocks out as modules, for the type checkers (``.ci/run``).

``python3 -m tools.readme_snippets OUTDIR [README]`` writes each ```` ```python ```` block of the
README (``README.md`` by default) to OUTDIR: a block whose first line is a comment naming a file
(``# mykernels.py``) under that name, so that a later block's ``import mykernels`` finds it, and
every other block as ``readme_<line>.py``, after the line its fence opens on.  A block preceded
by the comment ``<!-- not type-checked: ... -->`` (saying why: a fragment of names defined
elsewhere) is left out.  Each module starts with as many blank lines as the README has before
the block, so a checker's ``readme_39.py:45`` is the README's line 45.

CI then runs ``mypy`` and ``pyright`` over OUTDIR with ``examples/``, so that what the README
shows a user type-checks as it is.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

__all__ = ["Snippet", "snippets", "write"]

FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
FILE_NAME = re.compile(r"#\s*([A-Za-z_]\w*\.py)\s*$")
SKIP = re.compile(r"<!--\s*not type-checked\b.*?-->\s*\Z", re.S)


class Snippet:
    """One code block: the module name it is written as, its first line in the README (the
    fence's), and its source."""

    def __init__(self, name: str, line: int, source: str) -> None:
        self.name = name
        self.line = line
        self.source = source

    def __repr__(self) -> str:
        return f"Snippet({self.name!r}, line {self.line})"


def snippets(text: str) -> list[Snippet]:
    """The README's Python blocks that are to be type-checked, in order."""
    out = []
    for match in FENCE.finditer(text):
        before = text[:match.start()]
        if SKIP.search(before.rstrip("\n") + "\n"):
            continue
        fence_line = before.count("\n") + 1
        body = match.group(1)
        first = body.split("\n", 1)[0]
        named = FILE_NAME.match(first)
        name = named.group(1) if named else f"readme_{fence_line}.py"
        out.append(Snippet(name, fence_line, body))
    return out


def write(text: str, outdir: Path) -> list[Path]:
    """Write the blocks of ``text`` into ``outdir`` (made if missing); return the files.

    Raises ``ValueError`` when two blocks name the same file.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for snippet in snippets(text):
        path = outdir / snippet.name
        if path in written:
            raise ValueError(f"README line {snippet.line}: a second block named {snippet.name}")
        # The fence is line N; the block's first line is N + 1, so N blank lines come first.
        path.write_text("\n" * snippet.line + snippet.source, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("readme", type=Path, nargs="?", default=Path("README.md"))
    args = parser.parse_args(argv)
    files = write(args.readme.read_text(encoding="utf-8"), args.outdir)
    if not files:
        print(f"{args.readme}: no Python code blocks to check", file=sys.stderr)
        return 1
    for path in files:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
