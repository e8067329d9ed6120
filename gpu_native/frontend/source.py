"""A module's source as the interpreter reads it, and CPython's verdict on it.

Every command reads source files through :func:`read_source`: a PEP 263 coding cookie or a BOM
is honoured (as ``import`` honours it), and anything that is not a regular file — a FIFO,
``/dev/zero``, a terminal — is refused before a byte is read, so it can neither block the
command nor feed it forever.

:func:`parse_python` runs CPython's own parser before libcst ever sees a module.  CPython is the
reference for what a module is: a file it rejects gets its ``SyntaxError``, at its line and
column.  It also guards libcst, whose native parser overflows its stack — and kills the
process — on nesting CPython refuses (3,000 brackets), and whose tree walks, like ours, recurse
once per nesting level.  Only kernel and device functions are then handed to libcst, each after
:func:`check_depth` has bounded how deeply it nests; host code is never walked recursively.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from importlib.util import decode_source as _decode_source

from ..errors import GpuNativeError, SourceSpan, TranspileError
from ..files import NotRegularFileError, read_regular

# How deeply a kernel or device function may nest, in levels of CPython's tree where a statement
# or a conditional expression counts two (see _levels).  The transpiler's passes (libcst's
# position walk, the converter, the checker, the emitters, the simulator's code generator) recurse
# per level, measured (Python 3.11) at about 3.4 frames per expression level and 7 per nested
# block: a function at this limit needs at most about 600 frames, leaving some 400 of Python's
# default 1,000 to the code that imports it.  A 140-term sum fits; a 400-term one, generated, is
# refused with a located error rather than a RecursionError.  Counting a nested block or
# conditional expression twice also keeps the simulator's generated code under CPython's 100
# levels of indentation (it opens a block for each).
MAX_DEPTH = 150

_NEWLINE = re.compile(r"\r\n|\r|\n")
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]")


def source_lines(source: str) -> list[str]:
    """``source`` split into lines the way Python's tokenizer counts them (at ``\\n``, ``\\r\\n``
    and ``\\r`` only: ``str.splitlines`` also splits at form feeds and other separators, which
    would shift every line after them), line endings kept."""
    lines = [m for m in _NEWLINE.split(source)]
    ends = _NEWLINE.findall(source)
    out = [text + end for text, end in zip(lines, ends)]
    if lines[-1]:
        out.append(lines[-1])
    return out


def line_texts(source: str) -> list[str]:
    """:func:`source_lines` without their line endings (for error messages)."""
    return [line.rstrip("\r\n") for line in source_lines(source)]


def read_source_bytes(path: str) -> bytes:
    """The bytes of the regular file ``path``; ``GpuNativeError`` for anything else.

    The file is opened without blocking and checked on the open descriptor, so a FIFO (which
    would block in ``open`` until a writer came) or a device swapped in after a check of the
    path is refused all the same.
    """
    try:
        return read_regular(path)
    except NotRegularFileError as exc:
        what = "a directory" if exc.kind == "a directory" else "not a regular file"
        raise GpuNativeError(f"cannot read {path}: {what} (gpu_native reads Python source "
                             "files only)") from None
    except OSError as exc:
        raise GpuNativeError(f"cannot read {path}: {exc.strerror or exc}") from None


def decode_source(data: bytes, path: str) -> str:
    """Decode a module's bytes as ``import`` does (coding cookie, BOM, universal newlines).

    Raises ``TranspileError`` at the offending line when Python could not decode it either.
    """
    try:
        return _decode_source(data)
    except UnicodeDecodeError as exc:
        raise _undecodable_byte(data, path, exc) from None
    except (SyntaxError, LookupError) as exc:  # a bad or unknown coding cookie
        line = _cookie_line(data)
        if not line:
            # No cookie: the tokenizer looked for one in the first two lines and could not
            # decode them as UTF-8; the byte it stopped at is the one to show.
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as undecodable:
                raise _undecodable_byte(data, path, undecodable) from None
        line = line or 1
        texts = data.split(b"\n", 2)
        text = texts[line - 1].decode("utf-8", errors="replace").rstrip("\r") \
            if line <= len(texts) else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise TranspileError(f"cannot decode the file: {message}",
                             SourceSpan(path, line, 0, None, text)) from None


def _undecodable_byte(data: bytes, path: str, exc: UnicodeDecodeError) -> TranspileError:
    """The error for the byte ``exc`` could not decode, at its line and column."""
    line = data.count(b"\n", 0, exc.start) + 1
    start = data.rfind(b"\n", 0, exc.start) + 1
    end = data.find(b"\n", exc.start)
    raw = data[start:end if end >= 0 else len(data)]
    col = len(data[start:exc.start].decode(exc.encoding, errors="replace"))
    text = raw.decode(exc.encoding, errors="replace").rstrip("\r")
    byte = data[exc.start:exc.start + 1].hex()
    declared = "declares no other encoding" if not _cookie_line(data) else \
        f"is not valid {exc.encoding} as its coding line declares"
    return TranspileError(
        f"cannot decode the file: byte 0x{byte} is not valid {exc.encoding}, and the file "
        f"{declared}", SourceSpan(path, line, col, col + 1, text),
        "save the file as UTF-8, or declare its encoding on its first or second line, e.g. "
        "`# -*- coding: latin-1 -*-`")


def _cookie_line(data: bytes) -> int:
    """The line (1 or 2) of a PEP 263 coding declaration, or 0."""
    for number, line in enumerate(data.split(b"\n", 2)[:2], 1):
        if _COOKIE.match(line):
            return number
    return 0


def read_source(path: str) -> str:
    """Read and decode the Python source file ``path`` as ``import`` would."""
    return decode_source(read_source_bytes(path), path)


# ---- CPython's parser ---------------------------------------------------------------------------


def python_error(source: str, path: str) -> BaseException | None:
    """What CPython's parser raises for ``source`` (None when it parses).

    A ``SyntaxError`` always carries a location: CPython reports a NUL byte without one (3.11
    and later raise ``SyntaxError``, 3.10 a ``ValueError``), so it is located here.
    """
    try:
        parse_python(source, path)
    except TranspileError as exc:
        return exc.__cause__ or exc
    return None


def parse_python(source: str, path: str) -> ast.Module:
    """Parse ``source`` with CPython's parser; ``TranspileError`` at CPython's location when it
    rejects it (the Python exception is its ``__cause__``)."""
    nul = source.find("\0")
    if nul >= 0:
        line = source.count("\n", 0, nul) + 1
        start = source.rfind("\n", 0, nul) + 1
        end = source.find("\n", nul)
        text = source[start:end if end >= 0 else len(source)]
        col = nul - start
        exc = SyntaxError("source code cannot contain null bytes",
                          (path, line, col + 1, text, line, col + 2))
        raise _syntax_transpile_error(exc, path, source) from exc
    try:
        tree = compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise _syntax_transpile_error(exc, path, source) from exc
    except (RecursionError, MemoryError) as exc:
        # CPython's parser gives up on very deep nesting this way; `import` would too.
        raise TranspileError(
            f"the module nests too deeply for Python's parser ({type(exc).__name__}: {exc})",
            SourceSpan(path, 1), "split deeply nested expressions into several statements") \
            from exc
    assert isinstance(tree, ast.Module)  # what compiling with PyCF_ONLY_AST in "exec" mode gives
    return tree


def _syntax_transpile_error(exc: SyntaxError, path: str, source: str) -> TranspileError:
    lines = line_texts(source)
    line = exc.lineno or 1
    text = lines[line - 1] if 0 < line <= len(lines) else (exc.text or "").rstrip("\r\n")
    col = max(0, (exc.offset or 1) - 1)
    end_col = None
    end_offset = getattr(exc, "end_offset", None)
    if getattr(exc, "end_lineno", None) == exc.lineno and end_offset and end_offset > (
            exc.offset or 0):
        end_col = end_offset - 1
    kind = "syntax error" if type(exc) is SyntaxError else \
        f"syntax error ({type(exc).__name__})"
    return TranspileError(f"{kind}: {exc.msg}", SourceSpan(path, line, col, end_col, text))


# ---- bounding how deeply a kernel nests -----------------------------------------------------------


def check_depth(fn: ast.AST, path: str, lines: list[str]) -> None:
    """Refuse a kernel or device function that nests more than :data:`MAX_DEPTH` levels.

    An explicit stack, not recursion: this walk is what keeps the recursive passes safe.  An
    expression that goes too deep is shown whole, from its outermost node (a long sum nests
    one level per term, so its innermost node says little).
    """
    stack: list[tuple[ast.AST, int, ast.AST | None]] = [(fn, 1, None)]
    while stack:
        node, depth, outermost = stack.pop()
        if depth > MAX_DEPTH:
            if outermost is not None:
                raise TranspileError(
                    "expression too deep: it nests more levels than gpu_native transpiles "
                    f"(at most {MAX_DEPTH}, with the statements around it)",
                    ast_span(outermost, path, lines),
                    "split it into several statements with named intermediate values (a sum "
                    "a + b + c + ... nests one level per term)")
            raise TranspileError(
                "statements nested too deeply: the function nests more blocks than gpu_native "
                f"transpiles (at most {MAX_DEPTH // 2})", ast_span(node, path, lines),
                "move the inner blocks into a @gpu_device function")
        for child in ast.iter_child_nodes(node):
            top = outermost if outermost is not None else (
                child if isinstance(child, ast.expr) else None)
            stack.append((child, depth + _levels(child, depth, lines), top))


def too_deep(what: str, span: SourceSpan | None) -> TranspileError:
    """The error for a RecursionError in a pass: the backstop behind :func:`check_depth` (a
    chain of device functions calling each other nests the checker, for one)."""
    return TranspileError(
        f"expression too deep: {what} nests too deeply for the transpiler (its expressions, "
        "statements and the device functions it calls, together)", span,
        "split deep expressions into statements, and flatten long chains of device functions")


def _levels(node: ast.AST, depth: int, lines: list[str]) -> int:
    """How many levels ``node`` adds to the passes after this one.

    A statement or a conditional expression counts two: the checker spends more frames on a
    nested block, and the simulator's code nests a block for each.  libcst nests what CPython
    keeps flat: ``a and b and c`` is one ``BoolOp`` here but two nested operations there
    (libcst's parser crashes on a 20,000-term ``and``, which CPython accepts), and
    ``"a" "b" "c"`` one constant but two nested concatenations.
    """
    if isinstance(node, (ast.stmt, ast.IfExp)):
        return 2
    if isinstance(node, ast.BoolOp):
        return len(node.values)
    if isinstance(node, (ast.Constant, ast.JoinedStr)) and isinstance(
            getattr(node, "value", ""), (str, bytes)) and node.end_lineno is not None:
        segment = _segment(node, lines)
        if depth + len(segment) // 2 > MAX_DEPTH:  # each literal takes two characters or more
            return _string_literals(segment)
    return 1


def _segment(node: ast.expr, lines: list[str]) -> str:
    first, last = node.lineno, node.end_lineno or node.lineno
    text = "\n".join(lines[first - 1:last]).encode("utf-8")
    end = len(text) - len(lines[last - 1].encode("utf-8")) + (node.end_col_offset or 0)
    return text[node.col_offset:end].decode("utf-8", errors="replace")


def _string_literals(segment: str) -> int:
    """How many string literals (f-strings included) a segment of source holds."""
    count = 0
    starts = {tokenize.STRING, getattr(tokenize, "FSTRING_START", tokenize.STRING)}
    try:
        for token in tokenize.generate_tokens(io.StringIO(f"({segment})").readline):
            count += token.type in starts
    except (tokenize.TokenError, SyntaxError):
        pass
    return max(1, count)


def ast_span(node: ast.AST, path: str, lines: list[str]) -> SourceSpan:
    """The :class:`SourceSpan` of a CPython ``ast`` node (whose columns count UTF-8 bytes)."""
    line = getattr(node, "lineno", 0)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    col = _char_col(text, getattr(node, "col_offset", 0))
    end_col = None
    end_byte_col = getattr(node, "end_col_offset", None)
    if getattr(node, "end_lineno", None) == line and end_byte_col is not None:
        end_col = _char_col(text, end_byte_col)
    return SourceSpan(path, line, col, end_col, text)


def _char_col(text: str, byte_col: int) -> int:
    if text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))
