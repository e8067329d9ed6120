"""Atomic read-modify-write operations, sequentially consistent in lane (thread) order.

The executing lanes apply their operations one after another in lane order, so each gets the
value its predecessors left (``fetch_add`` on one counter hands out 0, 1, 2, ...).  Lanes that hit
distinct elements are applied together; lanes that share an element are applied in *rounds* (the
first access of every element, then the second, ...), and elements hit by very many lanes are
folded with one ``ufunc.accumulate`` each where the operation allows it.

On an array of vectors an atomic is one atomic of the element type per component, as the
prelude's ``gn_vatomic_*`` do: the lanes update every ``x`` in lane order, then every ``y``
... (on the GPU the threads interleave their components in any order, which changes no
component's final value where the scalar atomic's order does not change it).
"""

from __future__ import annotations

import numpy as np

from . import ops

I64 = np.dtype(np.int64)
_ROUNDS = 64  # elements hit more often than this are folded one by one


def _step(op: str, info, is_float: bool, dtype: np.dtype):
    """The update ``new = f(cur, *operands)`` on distinct elements, in value dtype."""
    bf16 = info.name == "bf16"

    def add(cur, v):
        out = cur + v
        return ops.round_bf16(out) if bf16 else out

    if op == "add":
        return add
    if op == "sub":
        return lambda cur, v: cur - v
    if op == "min":
        if is_float:
            return lambda cur, v: np.where(v < cur, v, cur)
        return np.minimum
    if op == "max":
        if is_float:
            return lambda cur, v: np.where(v > cur, v, cur)
        return np.maximum
    if op == "and":
        return np.bitwise_and
    if op == "or":
        return np.bitwise_or
    if op == "xor":
        return np.bitwise_xor
    if op in ("exchange", "store"):
        return lambda cur, v: v
    if op == "load":
        return lambda cur: cur
    if op == "cas":
        if is_float:
            ibits = np.dtype(f"u{dtype.itemsize}")
            return lambda cur, exp, des: np.where(
                np.asarray(cur).view(ibits) == np.asarray(exp).view(ibits), des, cur)
        return lambda cur, exp, des: np.where(cur == exp, des, cur)
    raise AssertionError(op)  # pragma: no cover


def _fold(op: str, info, is_float: bool, cur, vals: list[np.ndarray], count: int):
    """All old values and the final value of one element updated by ``count`` lanes in order,
    or None when the operation has no exact vectorised fold."""
    if op == "load":
        return np.full(count, cur), cur
    v = vals[0]  # every other operation has an operand
    if op in ("exchange", "store"):
        seq = np.concatenate([[cur], v])
        return seq[:-1], seq[-1]
    if info.name in ("bf16",) or op == "cas":
        return None
    if is_float and op in ("min", "max"):
        return None
    ufunc = {"add": np.add, "sub": np.add, "and": np.bitwise_and, "or": np.bitwise_or,
             "xor": np.bitwise_xor, "min": np.minimum, "max": np.maximum}[op]
    if op == "sub":
        v = -v  # wraps for integers; exact for floats
    seq = ufunc.accumulate(np.concatenate([np.asarray([cur], dtype=v.dtype), v]))
    return seq[:-1], seq[-1]


def _sequential(read, write, step, fold, e: np.ndarray, vals: list[np.ndarray], dtype):
    """Apply ``step`` lane by lane in order; ``e`` may repeat elements."""
    k = len(e)
    old = np.zeros(k, dtype)
    if k == 0:
        return old
    order = np.argsort(e, kind="stable")
    se = e[order]
    first = np.empty(k, bool)
    first[0] = True
    first[1:] = se[1:] != se[:-1]
    if first.all():
        cur = read(e)
        write(e, step(cur, *vals))
        return cur
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    sizes = np.diff(np.append(starts, k))
    rank_sorted = np.arange(k) - starts[group]
    big = sizes[group] > _ROUNDS
    if big.any():
        for g in np.flatnonzero(sizes > _ROUNDS):
            members = order[starts[g]:starts[g] + sizes[g]]  # lane order (stable sort)
            elem = e[members[:1]]
            cur = read(elem)[0]
            gv = [v[members] for v in vals]
            folded = fold(cur, gv, len(members))
            if folded is None:
                olds = np.zeros(len(members), dtype)
                for n in range(len(members)):
                    olds[n] = cur
                    cur = np.asarray(step(np.asarray([cur]), *[x[n:n + 1] for x in gv]))[0]
                final = cur
            else:
                olds, final = folded
            old[members] = olds
            write(elem, np.asarray([final], dtype))
        keep = ~big
        order, rank_sorted = order[keep], rank_sorted[keep]
    if len(order):
        rank = np.empty(k, I64)
        rank[order] = rank_sorted
        for r in range(int(rank_sorted.max()) + 1):
            sel = order[rank_sorted == r]
            ee = e[sel]
            cur = read(ee)
            write(ee, step(cur, *[v[sel] for v in vals]))
            old[sel] = cur
    return old


def apply(chunk, op: str, array, off, operands, m):
    """Run one atomic for the executing lanes; return the old values as a lane vector."""
    info = array.info
    lanes = chunk.active(m)
    e = chunk.full(off)[lanes]
    dtype = ops.value_dtype(info)
    vals = [chunk.full(np.asarray(o))[lanes].astype(dtype, copy=False) for o in operands]
    data = array.data
    if array.is_bf16:
        def read(ix):
            return ops.bits_to_bf16(data[ix])

        def write(ix, v):
            data[ix] = ops.bf16_to_bits(v)
    else:
        def read(ix):
            return data[ix]

        def write(ix, v):
            data[ix] = v
    if op == "store":
        # The last lane (in order) to store to an element wins.
        if len(e):
            write(e, vals[0])
        return array.vzero
    step = _step(op, info, info.is_float, dtype)
    def fold(cur, gv, count):
        return _fold(op, info, info.is_float, cur, gv, count)
    old = _sequential(read, write, step, fold, e, vals, dtype)
    if m is None:
        return old
    out = np.zeros(chunk.L, dtype)
    out[lanes] = old
    return out


class _Component:
    """Component ``k`` of an array of vectors, seen as an array of its element type (its
    ``data`` a view of the array's column ``k``, written in place)."""

    def __init__(self, array, k: int):
        self.info = array.info.elem
        self.data = array.data[:, k]
        self.is_bf16 = array.is_bf16
        self.vzero = array.vzero[k]


def apply_components(chunk, op: str, array, off, operands, m):
    """Run one atomic on an array of vectors, component by component (``operands`` are
    vectors: tuples of components); return the old vectors."""
    return tuple(apply(chunk, op, _Component(array, k), off, tuple(o[k] for o in operands), m)
                 for k in range(array.width))
