"""The tile a warp writes with ``store_matrix``, as a store the ownership proofs can follow.

``store_matrix(dst, (r, c), acc, i)`` is warp-collective: lane ``L = 4 * g + t`` (``g = L //
4`` in ``[0, 8)``, ``t = L % 4``) writes its four accumulator elements to ``dst[r + g + 8 * h, c
+ 2 * t + e]`` for ``h, e`` in ``[0, 2)`` (the emitter and the simulator both compute each
lane's addresses from that lane's own ``(r, c)`` and its hardware lane, ``%laneid``).

**The form.**  The store is proven as a store at ``(r + 8 * h + g, c + 2 * t + e)`` with

- ``g`` and ``t`` the split ``L // 4``, ``L % 4`` of the lane digit ``L = thread_idx.x % 32``
  (derived digits, :mod:`.splits`): they are the lane's own part of the footprint, and where a
  proof shows both equal in two threads, R6 shows ``L`` equal;
- ``h`` and ``e`` two counters in ``[0, 2)``, like the iterations of a loop of the thread's own
  (a thread writing one element twice is no race).

Each lane's four elements are the four values of ``(h, e)`` exactly once: the form *is* the
lane's footprint, not an approximation of it.  The mixed-radix rule then reads the row as
``... + 16 * i + 8 * h + g`` (``g`` reaches 7 < 8, ``8 * h + g`` reaches 15 < 16) and the column
as ``... + 8 * j + 2 * t + e``: the 32 lanes of one call write the 128 distinct elements of the
16 x 8 tile, and tiles whose origins step by at least 16 rows or 8 columns (between warps, or
between a warp's iterations) never meet.  Origins 8 rows apart (``warp * 8``, ``i * 8``) or 4
columns apart leave two coefficients the rule cannot order, and the store is refused.

**The lane and the warp.**  The form names the hardware lane as ``thread_idx.x % 32``, and a
thread is told apart by its lane and ``thread_idx.x // 32`` (and ``thread_idx.y``, ``.z``).
That holds where warps are cut from ``thread_idx.x`` alone: a Kernel1D launch (one-dimensional
blocks), a block whose other axes are one thread (``assert block_dim.y == 1``: the linear thread
index is ``thread_idx.x``), or rows that are whole warps (``assert block_dim.x == 128``: ``lane
== thread_idx.x % 32``, and ``thread_idx.y`` is the same in every lane of a warp).  Elsewhere a
warp spans rows of the block, its lanes are no split of ``thread_idx.x``, and the store is
refused (:func:`lanes_are_split`).

**A warp-uniform origin.**  The origin ``(r, c)`` must be the same in every lane of the warp: it
may hold ``thread_idx.x // 32`` (or ``// 64``, ... : a multiple of 32; ``warp // 2`` of it is a
split of that digit), ``thread_idx.y``/``.z`` under the condition above, block coordinates, loop
counters and launch-uniform values, but no lane bits (``lane_id()``, ``thread_idx.x % 32``,
``thread_idx.x`` itself, ``thread_idx.x // 16``).  The proof above is over each lane's own
footprint, so it would stay sound for a lane-dependent origin; the refusal keeps the rule to
what ``store_matrix`` means: the accumulator fragment is laid out for the tile at one origin,
and "the warp writes the 128 elements of one tile" is the argument a reader checks, which a
lane-dependent origin breaks (its lanes write pieces of 32 different tiles).
"""

from __future__ import annotations

from ..errors import SourceSpan, TranspileError
from .facts import SpecialKey
from .ownership import StoreForm
from .poly import Digit, Poly, atom, const, substitute
from .splits import deep, derive, nested_digits

__all__ = ["LANE", "WARP", "in_device_function", "lane_dependence", "lanes_are_split", "tile_form",
           "warp_tile"]

LANE = Digit("tid0", "lo", 32)  # the hardware lane, where :func:`lanes_are_split` holds
WARP = Digit("tid0", "hi", 32)  # the warp: thread_idx.x // 32, where the lanes are split


def lanes_are_split(form: StoreForm, ndim: int, group: int = 32) -> bool:
    """Is the hardware lane ``thread_idx.x % 32`` (the thread of a warpgroup ``thread_idx.x %
    128``: ``group``), and each other thread coordinate the same in every thread of a warp (a
    warpgroup), in the threads that run this store?  (See the module docstring.)"""
    if ndim == 1:
        return True
    width = form.launch.get(SpecialKey("block_dim", 0))
    if width is not None and not width.terms and width.const % group == 0:
        return True
    return all((form.whole or {}).get(f"tid{a}") == const(1) for a in range(1, ndim))


def lane_dependence(form: StoreForm, group: int = 32) -> Digit | None:
    """A digit of the origin that differs between the threads of a warp (``group`` 128: of a
    warpgroup), or ``None``: any digit of ``thread_idx.x`` but a split ``thread_idx.x //
    (group * k)`` (for a warpgroup also ``thread_idx.x // 32`` split by ``// (4 * k)``)."""
    for p in form.dims:
        for d in sorted(nested_digits(p), key=repr):
            if d.coord == "tid0" and not (d.part == "hi" and d.radix % group == 0) \
                    and not _warp_split_by_groups(p, d, group):
                return d
    return None


def _warp_split_by_groups(p, d: Digit, group: int) -> bool:
    """Is every use of the warp digit ``d`` in ``p`` inside ``d // (group // 32 * k)``?"""
    if group == 32 or d != WARP:
        return False
    for mono, _ in p.terms:
        for a in mono:
            if a == d:
                return False
            if isinstance(a, Digit) and a.of is not None and d in nested_digits(a.of.flat):
                ok = (a.of.op == "hi" and a.of.flat == atom(WARP) and not a.of.other.terms
                      and a.of.other.const % (group // 32) == 0)
                if not ok:
                    return False
    return True


def tile_form(form: StoreForm, where: str, width: int = 0) -> StoreForm:
    """``form`` (the origin's) with each lane's ``store_matrix`` footprint added: rows ``+ 8 * h
    + L // 4``, columns ``+ 2 * (L % 4) + e``; with ``width``, each thread's ``warpgroup_store``
    footprint: rows ``+ 16 * w`` more (``w = (thread_idx.x // 32) % 4``, the warp in the
    warpgroup), columns ``+ 8 * j`` more (``j`` in ``[0, width // 8)``).  ``where`` makes the
    counters ``h``, ``e`` and ``j`` this statement's own."""
    op = "warpgroup_store" if width else "store_matrix"
    if width:
        form = _in_warps(form)
    g, t = derive("//", atom(LANE), const(4)), derive("%", atom(LANE), const(4))
    assert g is not None and t is not None  # a digit split by a positive constant
    h = Digit(f"loop:{op}()'s rows + 8@{where}")
    e = Digit(f"loop:{op}()'s second column@{where}")
    rows = form.dims[-2].plus(atom(h).scaled(8)).plus(g)
    cols = form.dims[-1].plus(atom(e)).plus(t.scaled(2))
    ranges = dict(form.ranges)
    ranges.update({h: const(2), e: const(2), LANE: const(32)})
    splits = [(g, 8), (t, 4)]
    if width:
        w = derive("%", atom(WARP), const(4))
        assert w is not None
        j = Digit(f"loop:{op}()'s column groups@{where}")
        rows = rows.plus(w.scaled(16))
        cols = cols.plus(atom(j).scaled(8))
        ranges[j] = const(width // 8)
        splits.append((w, 4))
    for p, n in splits:
        (mono, _), = p.terms
        ranges[mono[0]] = const(n)
    return StoreForm(form.dims[:-2] + (rows, cols), form.pins, ranges, form.line, form.text,
                     form.single, form.whole, form.launch)


def in_device_function(span: SourceSpan, what: str) -> TranspileError:
    """The refusal of ``store_matrix`` in a device function (unsafe aside)."""
    return TranspileError(
        f"{what} in a device function: which threads form a warp depends on the calling "
        "kernel's block shape, so the tile is not proven", span,
        "store the tile in the kernel, or use `with unsafe():`")


def _in_warps(form: StoreForm) -> StoreForm:
    """``form`` with each ``thread_idx.x // (32 * k)`` of the origin written ``thread_idx.x //
    32 // k``: the footprint splits ``thread_idx.x`` at 32, and the proofs relate digits of one
    radix only."""
    swaps: dict[Digit, Poly] = {}
    ranges = dict(form.ranges)
    for p in form.dims:
        for d in nested_digits(p):
            if d.coord == "tid0" and d.part == "hi" and d.radix > 32 and d.radix % 32 == 0:
                split = derive("//", atom(WARP), const(d.radix // 32))
                assert split is not None  # a digit split by a positive constant
                swaps[d] = split
                (mono, _), = split.terms
                ranges[mono[0]] = ranges.get(d)
                r = ranges.pop(d, None)
                if r is not None and not r.terms and WARP not in ranges:
                    ranges[WARP] = const(r.const * (d.radix // 32))
    if not swaps:
        return form
    dims = tuple(substitute(p, deep(lambda a: swaps.get(a) if isinstance(a, Digit) else None))
                 for p in form.dims)
    return StoreForm(dims, form.pins, ranges, form.line, form.text, form.single, form.whole,
                     form.launch)


def warp_tile(form: StoreForm, ndim: int, span: SourceSpan, what: str,
              group_cols: int = 0) -> StoreForm:
    """The form of ``store_matrix``'s tile at the origin ``form`` (:func:`tile_form`), or (with
    ``group_cols``) of ``warpgroup_store``'s, or a TranspileError where
    the lanes are no split of ``thread_idx.x`` or the origin is not the same in every thread of
    the warp (warpgroup) (see the module docstring)."""
    group = 128 if group_cols else 32
    unit = "warpgroup" if group_cols else "warp"
    members = "threads of a warpgroup" if group_cols else "lanes of a warp"
    if not lanes_are_split(form, ndim, group):
        raise TranspileError(
            f"{what}: the {members} are thread_idx.x % {group} only where the block "
            f"is one row of threads or its rows are whole {unit}s, which nothing here shows",
            span, f"assert block_dim.y == 1 (or block_dim.x == a multiple of {group}) at the "
            "top of the kernel")
    lane = lane_dependence(form, group)
    if lane is not None:
        if group_cols:
            raise TranspileError(
                f"{what}: the tile's origin depends on the thread within the warpgroup "
                f"({lane.text()}); warpgroup_store writes the 64 x {group_cols} tile at one "
                "origin per warpgroup, so the origin must be the same in all its 128 threads",
                span, "compute the origin from the warpgroup (thread_idx.x // 128), block_idx, "
                "loop counters and uniform values, e.g. (block_row + (thread_idx.x // 128) * "
                "64, block_col)")
        raise TranspileError(
            f"{what}: the tile's origin depends on the lane ({lane.text()}); store_matrix "
            "writes the 16 x 8 tile at one origin per warp, so the origin must be the same in "
            "every lane of the warp", span,
            "compute the origin from the warp (thread_idx.x // 32), block_idx, loop counters "
            "and uniform values, e.g. ((warp // WARPS_N) * WM + i * 16, (warp % WARPS_N) * WN "
            "+ j * 8)")
    return tile_form(form, f"{span.line}:{span.col}", group_cols)
