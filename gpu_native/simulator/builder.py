"""The namespace a kernel's generated simulator functions share, and how each is compiled.

:class:`ProgramBuilder` holds what the Python that :mod:`.codegen` writes refers to by name: the
helpers it calls (``_gn_where``, ``_gn_shl`` ...), the constants, casts and math functions it
binds once per kernel (``_gn_K0`` ...), the device functions, and the table of source locations
that errors and race reports name.  :meth:`ProgramBuilder.compile_function` parses one emitted
function, gives every syntax node the user's line and columns, and compiles it under the user's
file name, so tracebacks, ``pdb`` and coverage see the kernel's own lines.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .. import ir
from ..errors import SourceSpan
from . import complexes, machine, ops, structs, vectors

if TYPE_CHECKING:
    from .codegen import FunctionEmitter

# The syntax nodes that carry a source position (their ``_attributes`` name ``lineno``; 3.12's
# type parameters too, which the generated source never has).
_LOCATED = (ast.stmt, ast.expr, ast.excepthandler, ast.arg, ast.keyword, ast.alias, ast.pattern)


class ProgramBuilder:
    """The namespace shared by a kernel's generated functions: helpers and named constants."""

    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self.ns: dict = {
            "_gn_u64": np.uint64, "_gn_i64": np.int64, "_gn_where": machine.where,
            "_gn_and": machine.m_and, "_gn_andnot": machine.m_andnot, "_gn_or": machine.m_or,
            "_gn_bf": _bf, "_gn_shl": ops.shl, "_gn_shr": ops.shr, "_gn_ipow": ops.ipow,
            "_gn_fpow": ops.fpow_const, "_gn_bfpow": _bfpow,
            "_gn_ifloordiv": ops.floordiv_int, "_gn_imod": ops.mod_int,
            "_gn_ffloordiv": ops.floordiv_py, "_gn_fmod": ops.fmod_py,
            "_gn_not": np.logical_not, "_gn_range_count": ops.range_count,
            "_gn_range_value": ops.range_value, "_gn_range_value_back": ops.range_value_back,
            "_gn_vwhere": vectors.vwhere,
            "_gn_twhere": _twhere, "_gn_swhere": structs.swhere,
            "_gn_swith": structs.with_field,
        }
        self.named: dict = {}
        self.const_index = {id(d.var): k for k, d in enumerate(kernel.consts)}
        self.locations: list[str] = []
        self.location_ids: dict[tuple[str, int], int] = {}
        self.sources: list[str] = []

    def bind(self, prefix: str, key, value) -> str:
        name = self.named.get(key)
        if name is None:
            name = f"_gn_{prefix.upper()}{len(self.named)}"
            self.named[key] = name
            self.ns[name] = value
        return name

    def const(self, value, ty: ir.ScalarType) -> str:
        v = ops.constant(value, ty.info)
        return self.bind("k", ("const", ty.info.name, repr(v), str(np.signbit(v))), v)

    def zero(self, ty: ir.Type) -> str:
        if isinstance(ty, ir.ScalarType):
            return self.const(0, ty)
        if isinstance(ty, ir.VectorType):
            value = (ops.constant(0, ty.elem.info),) * ty.n
            return self.bind("k", ("vzero", ty.name), value)
        if isinstance(ty, ir.TupleType):
            return "(" + "".join(f"{self.const(0, t)}, " for t in ty.elems) + ")"
        if isinstance(ty, ir.StructType):
            return self.bind("k", ("szero", ty.info.name), structs.zero(ty.info))
        return "None"

    def vector_function(self, name: str) -> str:
        """The simulator's ``dot``, ``cross`` ... (:mod:`.vectors`)."""
        return self.bind("vf", ("vector", name), getattr(vectors, name))

    def complex_function(self, name: str) -> str:
        """The simulator's ``mul``, ``div``, ``exp`` ... of complex numbers (:mod:`.complexes`)."""
        return self.bind("cf", ("complex", name), getattr(complexes, name))

    def cast(self, src: ir.ScalarType, dst: ir.ScalarType) -> str:
        return self.bind("cv", ("cast", src.info.name, dst.info.name),
                         ops.cast_function(src.info, dst.info))

    def math(self, name: str, ty: ir.ScalarType, result: ir.ScalarType) -> str:
        return self.bind("f", ("math", name, ty.info.name, result.info.name),
                         ops.math_function(name, ty.info, result.info))

    def location(self, span: SourceSpan | None) -> int:
        if span is None:
            span = self.kernel.span
        key = (span.file, span.line)
        loc = self.location_ids.get(key)
        if loc is None:
            loc = self.location_ids[key] = len(self.locations)
            self.locations.append(f"{os.path.basename(span.file)}:{span.line}")
        return loc

    def compile_function(self, emitter: FunctionEmitter) -> Callable:
        source, spans = emitter.render()
        self.sources.append(source)
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if not isinstance(node, _LOCATED) or node.lineno is None:
                continue
            span = spans[node.lineno - 1]
            col = span.col
            text = span.source_line.rstrip("\r\n")
            end = span.end_col if span.end_col is not None and span.end_col > col else max(
                len(text), col + 1)
            node.lineno = node.end_lineno = span.line
            node.col_offset, node.end_col_offset = col, end
        code = compile(tree, emitter.file, "exec")
        exec(code, self.ns)
        return self.ns.pop(emitter.pyname)


def _twhere(m, a, b):
    """``machine.where`` item by item, for a tuple value (a tuple of lane vectors)."""
    return tuple(machine.where(m, x, y) for x, y in zip(a, b))


def _bf(x):
    out = ops.round_bf16(x)
    return out[()] if out.ndim == 0 else out


def _bfpow(x, n: int):
    if n == 0:
        return np.float32(1.0)
    if n == 1:
        return x
    if n == 2:
        return _bf(np.asarray(x) * np.asarray(x))
    out = ops.round_bf16(np.power(np.asarray(x, np.float32), np.float32(n)))
    return out[()] if out.ndim == 0 else out
