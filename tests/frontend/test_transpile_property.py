"""Property: whatever a user types, the transpiler answers with a result or its own error.

Valid kernels (the examples and the runtime test kernels) are mutated at random — tokens deleted,
duplicated, swapped or replaced, lines deleted or indented, operators and names changed — and the
rewrite must either succeed or raise ``TranspileError``; never any other exception.
"""

from __future__ import annotations

import io
import tokenize

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module
from tests.helpers import HELPERS, ROOT

SOURCES = [p.read_text() for p in sorted((ROOT / "examples").glob("*.py"))] + [
    (HELPERS / "kernels_runtime.py").read_text()]
REPLACEMENTS = ["+", "-", "*", "/", "//", "%", "**", "<<", "&", "<", "==", "and", "not", "(", ")",
                "[", "]", ",", ":", "=", "+=", "0", "1", "-1", "2.5", "1e300", "True", "None",
                "x", "idx", "a", "len", "range", "f32", "i64", "u8", "thread_idx", "FlatLayout2D",
                "shared_array", "sync_threads", "unsafe", "math", "np", "lambda", "'s'", ".x",
                "return", "break", "yield", "global", "assert", "print", "a[idx]", "c.shape[5]"]


def _tokens(source: str) -> list[tuple[int, str, tuple[int, int], tuple[int, int]]]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                out.append((tok.type, tok.string, tok.start, tok.end))
    except (tokenize.TokenError, SyntaxError):
        pass  # an earlier mutation broke tokenisation; mutate what was read
    return out


def _replace(source: str, start, end, text: str) -> str:
    lines = source.splitlines(keepends=True)
    (sl, sc), (el, ec) = start, end
    before = "".join(lines[: sl - 1]) + lines[sl - 1][:sc]
    after = lines[el - 1][ec:] + "".join(lines[el:])
    return before + text + after


@st.composite
def mutated(draw):
    source = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 3))):
        tokens = _tokens(source)
        kind = draw(st.sampled_from(["replace", "delete", "duplicate", "line", "indent"]))
        if kind in ("replace", "delete", "duplicate") and tokens:
            _, text, start, end = tokens[draw(st.integers(0, len(tokens) - 1))]
            new = {"replace": draw(st.sampled_from(REPLACEMENTS)), "delete": "",
                   "duplicate": text + " " + text}[kind]
            source = _replace(source, start, end, new)
        else:
            lines = source.splitlines(keepends=True)
            i = draw(st.integers(0, len(lines) - 1))
            if kind == "line":
                del lines[i]
            else:
                lines[i] = "    " + lines[i]
            source = "".join(lines)
    return source


@pytest.mark.slow
@settings(max_examples=int(__import__("os").environ.get("GN_MUTANTS", "300")), deadline=None, derandomize=__import__("os").environ.get("GN_MUTANTS") is None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_kernels_give_a_result_or_a_transpile_error(source):
    try:
        result = rewrite_module(source, "mutant.py", "mutant")
    except TranspileError as exc:
        assert exc.span is None or exc.span.line >= 0
        assert str(exc)
    else:
        try:
            compile(source, "mutant.py", "exec")
        except SyntaxError:
            return  # libcst parses some code CPython rejects (`return` at module level...)
        compile(result.source, "mutant.py", "exec")  # so the rewrite is valid Python too
