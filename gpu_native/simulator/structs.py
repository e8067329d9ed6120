"""Structs on the simulator: a struct value is a tuple of its fields' values (a vector field a
tuple of components, a struct field a tuple again), each scalar a NumPy scalar or a vector of
lanes as :mod:`.ops` carries it; an array of structs is a NumPy structured array of the struct's
dtype (its C layout, :attr:`~gpu_native.lang.structs.StructInfo.dtype`).

:func:`to_value` reads elements into values and :func:`to_record` writes values back, field by
field: every scalar keeps its bits, as a GPU's copy of the struct does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lang.structs import StructInfo
from ..lang.types import VectorInfo
from . import ops

__all__ = ["field_view", "swhere", "to_record", "to_value", "with_field", "zero"]


def zero(info: StructInfo) -> tuple:
    """The zero of a struct: every scalar zero."""
    return tuple(_zero(f.info) for f in info.fields)


def _zero(info):
    if isinstance(info, StructInfo):
        return zero(info)
    if info.kind == "vector":
        return (ops.zero(info.elem),) * info.n
    return ops.zero(info)


def to_value(record, info: StructInfo) -> tuple:
    """The value of ``record``: one element (``np.void``) or one per lane (a 1-D structured
    array), as a tuple of its fields (copies: memory may change under them)."""
    out: list[Any] = []
    for f in info.fields:
        v = record[f.name]
        if isinstance(f.info, StructInfo):
            out.append(to_value(v, f.info))
        elif isinstance(f.info, VectorInfo):
            out.append(tuple(np.array(v[..., k]) if np.ndim(v) > 1 else v[k]
                             for k in range(f.info.n)))
        else:
            out.append(np.array(v) if np.ndim(v) else v)
    return tuple(out)


def _lanes(value) -> int | None:
    if isinstance(value, tuple):
        for v in value:
            n = _lanes(v)
            if n is not None:
                return n
        return None
    return len(value) if isinstance(value, np.ndarray) and value.ndim == 1 else None


def to_record(value: tuple, info: StructInfo):
    """``value`` as one record (``np.void``) or, when a field varies by lane, a 1-D structured
    array of one record per lane."""
    lanes = _lanes(value)
    out = np.zeros(() if lanes is None else lanes, dtype=info.dtype)
    _fill(out, value, info)
    return out[()] if lanes is None else out


def _fill(out: np.ndarray, value: tuple, info: StructInfo) -> None:
    for f, v in zip(info.fields, value):
        if isinstance(f.info, StructInfo):
            _fill(out[f.name], v, f.info)
        elif f.info.kind == "vector":
            view = out[f.name]
            for k, c in enumerate(v):
                view[..., k] = c
        else:
            out[f.name] = v


def field_view(data: np.ndarray, info: Any, path: tuple[int, ...]):
    """The view of ``data`` (structured, the struct's elements) that holds field ``path`` of
    each element, and that field's info (a vector's component: its element type); ``info`` is
    the elements' :class:`~gpu_native.lang.structs.StructInfo`."""
    for k in path:
        if isinstance(info, StructInfo):
            f = info.fields[k]
            data, info = data[f.name], f.info
        else:  # a component of a vector field
            data, info = data[..., k], info.elem
    return data, info


def with_field(value: tuple, index: int, item) -> tuple:
    """``value`` with field ``index`` replaced by ``item``."""
    return (*value[:index], item, *value[index + 1:])


def swhere(m, a, b):
    """:func:`.machine.where` field by field, through nested tuples."""
    if m is None:
        return a
    if m is False:
        return b
    if isinstance(a, tuple):
        return tuple(swhere(m, x, y) for x, y in zip(a, b))
    if isinstance(m, np.ndarray) and m.ndim:  # as machine.where
        return np.where(m, a, b)
    return a if m else b
