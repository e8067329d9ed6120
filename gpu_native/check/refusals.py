"""What a refused store's error says: the hint for each reason the unique-write proofs give
(:mod:`.unique`), and how the store is named in it."""

from __future__ import annotations

from .. import ir
from ..errors import SourceSpan, TranspileError
from .facts import SpecialKey
from .ownership import StoreForm
from .poly import Digit, const, digits_of
from .radix import PairProof
from .splits import nested_digits
from .xorpairs import xor_hint

__all__ = ["UNIQUE_HINT", "WRAP_HINT", "PairedRefusal", "block_multiple", "constant_block_strides",
           "flat_thread_stride", "hint_for", "index_text", "read_hint", "round_chosen",
           "warp_rank_hint", "wrap_hint", "wrap_message"]

UNIQUE_HINT = {
    "global": "index with a unique id (idx = FlatLayout1D.uid(); c[idx] = ...), use "
              "c.atomic_ref(i) for read-modify-write (.fetch_add(v)), write "
              "c.atomic_ref(i).store(v) for a scatter whose indices only the data keep apart "
              "(a permutation: a relaxed atomic store costs what a store does, and two threads "
              "that do meet leave one of their values), or wrap the store in `with unsafe():` "
              "if you know it is race-free",
    # A shared array is the block's own: the grid's uid indexes it past its end in every block
    # but the first.
    "shared": "index with the thread's index in the block (t = BlockLayout1D.uid(), or "
              "thread_idx.x; s[t] = ...), use s.atomic_ref(i) for read-modify-write, or wrap "
              "the store in `with unsafe():` if you know it is race-free",
}


WRAP_HINT = "compute the index in i64 (e.g. i64(block_idx.x) * ...)"


class PairedRefusal(TranspileError):
    """The refusal of an array written through two different indices (``conditions``: through
    one index under two different conditions), naming the other store of the pair.

    The store first written through another index is named until a pair proof fails;
    :meth:`naming` then names that pair's other store, which may be another (the first may be a
    barrier away, where it cannot race).
    """

    def __init__(self, array: str, other: SourceSpan, span: SourceSpan | None,
                 conditions: bool = False):
        self.array, self.other, self.conditions = array, other, conditions
        if conditions:
            message = (f"'{array}' is written through one index under two different conditions "
                       f"(here and at {other}); the index tells apart only the threads each "
                       "condition lets through, so a thread of one and a thread of the other "
                       "could write the same element")
            hint = ("write both under one condition (`if lane == 0:`), index them apart "
                    "(y[2 * (tid // 32) + 1]), or use `with unsafe():`")
        else:
            message = (f"'{array}' is written through two different indices (here and at "
                       f"{other}); one thread's second index can be another thread's first, so "
                       "the writes could race")
            hint = "write each element through one unique index, or use `with unsafe():`"
        super().__init__(message, span, hint)

    def __reduce__(self):
        return (type(self), (self.array, self.other, self.span, self.conditions), self.__dict__)

    def naming(self, other: SourceSpan) -> PairedRefusal:
        """The same refusal, naming the store at ``other`` as the pair's."""
        return PairedRefusal(self.array, other, self.span, self.conditions)


def wrap_hint(ty) -> str:
    """What to do about an index that may wrap in ``ty``: widen it, unless it is 64 bits
    already (then the proofs could not bound a part of it: a sum or product that may go
    negative or past the type, such as a product by a quotient of two runtime values)."""
    if isinstance(ty, ir.ScalarType) and ty.info.bits == 64:
        return ("the proofs could not show every sum and product in this index stays "
                "nonnegative and within i64: bound its parts with asserts (on the parameters, "
                "the shapes or the grid: `assert 0 < q < 1000000`), or use `with unsafe():`")
    return WRAP_HINT


def wrap_message(array: str, ty) -> str:
    """The refusal of a store into ``array`` whose index may wrap around in ``ty``."""
    return (f"store into '{array}': its index may wrap around in {ty}, and then two "
            "threads could write the same element")


def index_text(base: ir.ArrayRef, span: SourceSpan) -> str:
    line = span.source_line or ""
    text = line[span.col:span.end_col].strip() if span.end_col else ""
    return text or base.var.name


def _atomic_text(array: str, span: SourceSpan, index: str, op: str) -> str:
    """The access at ``span`` (``partial[b]``) spelled as an atomic one
    (``partial.atomic_ref(b).load()``); ``index`` where the span is not ``array[...]``."""
    line = span.source_line or ""
    text = line[span.col:span.end_col].strip() if span.end_col else ""
    if text.startswith(f"{array}[") and text.endswith("]"):
        index = text[len(array) + 1:-1]
    return f"{array}.atomic_ref({index}).{op}"


def read_hint(array: str, read: SourceSpan, store: SourceSpan, cooperative: bool) -> str:
    """What to do about a read of ``array`` at an element another thread's store (at
    ``store``) may write: a hand-off between threads (the last-block pattern's partial sums)
    goes through atomics, which never race."""
    grid = ("separate every store of the array from this read with grid_sync() (in a loop, "
            "also from the next iteration's stores); " if cooperative else "")
    return (f"{grid}if the read is to see another thread's write (a hand-off between blocks, "
            "as the last block's read of the partial sums), make both atomic: write "
            f"`{_atomic_text(array, store, 'i', 'store(v)')}` and read "
            f"`{_atomic_text(array, read, 'j', 'load()')}`; else read from a separate input "
            "array, or use `with unsafe():`")


def _derived_through(form: StoreForm, coords: set[str]) -> str:
    """The derived digits (``bid % grid_dim.y``) of ``form``'s index computed from the thread
    coordinates ``coords``, as a message lists them; empty where there are none."""
    from .splits import nested_digits

    found = []
    for p in form.dims:
        for d in sorted(nested_digits(p), key=repr):
            if d.of is not None and {x.coord for x in nested_digits(d.of.flat)} & coords:
                text = f"`{d.text()}`"
                if text not in found:
                    found.append(text)
    return ", ".join(found[:3])


def hint_for(a: StoreForm, b: StoreForm, outcome: PairProof, space: str) -> str:
    """What would make the store provable, for the reason it is not."""
    if outcome.hint:
        return outcome.hint
    missing = outcome.missing
    if missing and all(d.coord.startswith("bid") for d in missing) and space == "global":
        axes = sorted({"xyz"[int(d.coord[3:])] for d in missing})
        names = " and ".join(f"block_idx.{n}" for n in axes)
        through = _derived_through(a, {d.coord for d in missing})
        if through:
            return (f"the index depends on {names} only through {through}, which the proofs "
                    "could not show tell the blocks apart: a block order by `//` and `%` is "
                    "proven where a flat block number's quotient and remainder are both in "
                    "the index (R6), and a rotation `(u + d) % K` where `u` is told apart "
                    "and `d` spans less than `K` (R11: the diagonal order `(block_idx.x + "
                    "block_idx.y) % grid_dim.x` under `assert grid_dim.x == grid_dim.y`); "
                    "else wrap the store in `with unsafe():`")
        asserts = " and ".join(f"grid_dim.{n} == 1" for n in axes)
        return (f"every block that runs this store writes the same elements (its index does not "
                f"depend on {names}): if the grid is one block wide there, say so (`assert "
                f"{asserts}`, checked once per launch); else index by the block too "
                "(out[block_idx.x * BLOCK + tid]); if only one block can get here (the "
                "last-block pattern), select it by a flag its thread 0 writes from an atomic "
                "ticket (is_last[0] = 1 if drawn == grid_dim.x - 1 else 0; sync_threads(); "
                "if is_last[0] == 1: ...), or wrap the store in `with unsafe():`")
    strides = constant_block_strides(a)
    if strides:
        steps = " and ".join(f"{k} per block (block_idx.{b} * {k} + thread_idx.{n}"
                             + (f" + a loop counter stepping by {r}" if r < k else "") + ")"
                             for n, b, k, r in strides)
        # A loop over the tile in steps of r (a transpose's `for j in range(0, TILE, ROWS)`
        # beside `thread_idx.y + j`) leaves r threads along that axis, not k.
        asserts = " and ".join(dict.fromkeys(f"block_dim.{n} == {r}"
                                             for n, _, _, r in strides))
        return (f"the index steps by {steps}, which tells threads apart only in blocks no "
                f"larger than that: assert it (`assert {asserts}` at the top of the kernel, "
                "checked once per launch), or step by the block's extent "
                "(block_idx.x * block_dim.x + thread_idx.x)")
    strided = thread_strided_loops(a)
    if strided:
        loops = " and ".join(f"`range(thread_idx.{n}, ..., {k})`" for n, k in strided)
        asserts = " and ".join(dict.fromkeys(f"block_dim.{n} == {k}" for n, k in strided))
        verb = "tell" if len(strided) > 1 else "tells"
        return (f"the index walks {loops}, which {verb} threads apart only in blocks no larger "
                f"than the step: assert it (`assert {asserts}` at the top of the kernel, "
                "checked once per launch), or step by the block's extent "
                "(`range(thread_idx.x, n, block_dim.x)`)")
    flattened = flat_thread_stride(a)
    if flattened is not None:
        k, rows = flattened
        shape = f"block_dim.x == {k}" + (f" and block_dim.y == {rows}" if rows else "")
        extent = "block_dim.x * block_dim.y" if rows else "block_dim.x"
        step = (f", and its loop steps by {k * rows} = {k} x {rows} threads" if rows else "")
        return (f"the index flattens the thread as `thread_idx.y * {k} + thread_idx.x`, which "
                f"tells threads apart only in blocks {k} wide{step}: assert the block shape it "
                f"assumes (`assert {shape}` at the top of the kernel, checked once per "
                f"launch), or flatten by the block's extent (`thread_idx.y * block_dim.x + "
                f"thread_idx.x`{f', stepping by `{extent}`' if rows else ''})")
    if space == "shared" and (round_chosen(a) or round_chosen(b)):
        # `if t % 2 == phase % 2:`: which threads store depends on the round, and the proofs
        # compare each thread in any round with each other in any round but where a barrier
        # parts the rounds (.phases.round_digits).
        return ("which threads run the store depends on a loop counter (a parity chosen by the "
                "round, say): the proofs hold the counter the same in two threads only within "
                "one round, where a sync_threads() parts the rounds: at the top level of the "
                "loop's body after the stores (or before them), with no break, continue or "
                "return before it, in a `for` loop over range() of bounds every thread shares "
                "(`for phase in range(N): ...; sync_threads()`); or give each round its phases "
                "with conditions of the thread alone, each ending with sync_threads() (`if t % "
                "2 == 0: ...; sync_threads(); if t % 2 == 1: ...; sync_threads()`), or use "
                "`with unsafe():`")
    group = next((d for d in missing if d.part == "hi" and d.radix != 32
                  and Digit(d.coord, "lo", d.radix) in a.pins), None)
    if group is not None:
        # The warp hints below, for a pin of another modulus (`if thread_idx.x % 4 == 0:`).
        r, axis = group.radix, "xyz"[int(group.coord[3:])]
        flat = f"(block_idx.{axis} * block_dim.{axis} + thread_idx.{axis})"
        if block_multiple(a, int(group.coord[3:])) % r == 0:
            return (f"the block is a multiple of {r} threads along {axis} (its assert is "
                    f"there), but the quotient does not match the remainder that is pinned: "
                    f"with `thread_idx.{axis} % {r}` pinned, index by `{flat} // {r}` (or a "
                    f"divisor of {r}); a coarser quotient or a finer pin leaves two writers an "
                    "element")
        return (f"`thread_idx.{axis} % {r}` is pinned, but the quotient is not shown apart from "
                f"the other blocks' threads: assert that the block is a multiple of {r} "
                f"threads (`assert block_dim.{axis} % {r} == 0`: else the last group's index "
                "reaches the next block's first), or step by a constant number of groups per "
                f"block (`assert block_dim.{axis} == G * {r}`)")
    if any(d.part == "hi" and Digit(d.coord, "lo", d.radix) in a.pins for d in missing):
        # One lane of each warp already: the warp's index is what is not told apart.
        if block_multiple(a, 0) % 32 == 0:
            # The assert the hint below asks for is there: the split is what does not match.
            return ("the block is whole warps (its assert is there), but the quotient does not "
                    "match the remainder that is pinned: with `lane = thread_idx.x % 32` pinned "
                    "(`if lane == 0:`), index by `(block_idx.x * block_dim.x + thread_idx.x) "
                    "// 32` (or a divisor of 32); a coarser quotient (`// 64`) or a finer pin "
                    "(`thread_idx.x % 16 == 0` with `// 32`) leaves two writers an element")
        return ("the lane is pinned, but the warp's index is not shown apart from the other "
                "blocks' warps: step by a constant number of warps per block (WARPS = 4; "
                "row = block_idx.x * WARPS + thread_idx.x // 32, with `assert block_dim.x == "
                "WARPS * 32`); or, stepping by `block_dim.x // 32`, assert that the block is "
                "whole warps (`assert block_dim.x % 32 == 0`: else the last warp's index "
                "reaches the next block's first)")
    lane = _block_lane(a) or _block_lane(b)
    if lane is not None and Digit(f"tid{lane[0]}", "lo", lane[1]) in (missing or ()):
        d, m = "xyz"[lane[0]], lane[1]
        grid = f"`(block_idx.{d} * block_dim.{d} + thread_idx.{d}) % {m}`"
        if m & (m - 1):
            # A power of two's remainder survives a sum that wraps; another's does not.
            return (f"the proofs read {grid} as the thread's own `thread_idx.{d} % {m}` only "
                    f"where the modulus is a power of two, whose remainder survives a sum that "
                    f"wraps, and {m} is not one: take it from the thread (`thread_idx.{d} % "
                    f"{m}`)")
        return (f"{grid} is the thread's own `thread_idx.{d} % {m}` only in blocks of a "
                f"multiple of {m} threads: assert that (`assert block_dim.{d} % {m} == 0` at "
                f"the top of the kernel, checked once per launch), or take it from the thread "
                f"(`thread_idx.{d} % {m}`)")
    if any(d.part != "all" for d in missing):
        return ("one writer per warp needs the other part pinned: `if lane == 0: "
                "partial[wid] = v` (lane = tid % 32, wid = tid // 32); or index with both parts")
    wrapping = _wrapping_bound(a, b)
    if wrapping is not None:
        return wrapping
    if a is not b and a.dims == b.dims:
        # One index under two conditions (`if lane == 0:` and `if lane == 1:`): which threads
        # each lets through is what does not tell them apart, not the offsets.
        return ("the two stores write through one index under different conditions: write "
                "both under one condition (`if lane == 0:`), index them apart "
                "(y[2 * (tid // 32) + 1]), or use `with unsafe():`")
    paired = xor_hint(a, b)
    if paired is not None:
        return paired
    # A thread coordinate of 2-D or 3-D blocks the indices never read, where they read the
    # thread's x: every thread along it writes the same elements (a batched kernel indexed by
    # thread_idx.x alone in 2-D blocks).  (One index of no thread at all, `out[0] += v`, is an
    # accumulation: the hint at the end says what to do.)
    read = {d.coord for f in (a, b) for p in f.dims for d in nested_digits(p)}
    unread = sorted({d.coord for d in missing or () if d.coord in ("tid1", "tid2")
                     and d.coord not in read}) if "tid0" in read else []
    if unread:
        axes = ["xyz"[int(c[3:])] for c in unread]
        names = " and ".join(f"thread_idx.{n}" for n in axes)
        asserts = " and ".join(f"block_dim.{n} == 1" for n in axes)
        return (f"the index does not depend on {names}, so the threads of a block along it "
                f"write the same elements: if the blocks are one thread deep there, say so "
                f"(`assert {asserts}`, checked once per launch); else index by {names} too, "
                "or wrap the store in `with unsafe():`")
    if a is not b and space == "global":
        # No assert on the block helps here: a grid's uid has no bound the launch fixes.
        return ("several stores per thread into a global array must be provably apart: "
                "`out[i]` and `out[i + n]` with `i < n` known from a condition around them "
                "(`if i < n:`), n a parameter or an array's length; or write the two values "
                "to two arrays; otherwise use `with unsafe():`")
    if a is not b:
        return ("several stores per thread must use disjoint offsets: s[tid] and s[tid + B] "
                "with 0 <= tid < B known (`assert block_dim.x == B`), or a loop "
                "`for j in range(K): s[tid + j * B]`; otherwise use `with unsafe():`")
    return UNIQUE_HINT[space]


WARP_RANK_HINT = (
    "the index adds a lane's rank among its warp's passing lanes (popc of a ballot), as a "
    "warp-aggregated atomic does (one fetch_add by the warp's leader, spread by shfl_idx): "
    "race-free when written right, but no rule of the proofs follows a value that one lane "
    "draws for the others; take each slot from `count.atomic_ref(0).fetch_add(1)` (one draw "
    "per thread, proven unique), or keep the warp-aggregated form with the store in `with "
    "unsafe():` (the simulator's race detector checks it on every run)")


def warp_rank_hint(indices, single_def) -> str | None:
    """:data:`WARP_RANK_HINT` where an index counts the set bits of a ballot (``popc(mask &
    ((1 << lane) - 1))``, ``mask = ballot(keep)``), looking through the locals assigned once
    (``single_def``); else None."""
    def reaches(e, want, seen: set) -> bool:
        for n in ir.walk(e):
            if want(n):
                return True
            if isinstance(n, ir.Local) and id(n.var) not in seen:
                seen.add(id(n.var))
                d = single_def(n.var)
                if d is not None and reaches(d, want, seen):
                    return True
        return False

    def ballot(n) -> bool:
        return isinstance(n, ir.WarpOp) and n.op == "ballot"

    def rank(n) -> bool:
        return isinstance(n, ir.MathCall) and n.name == "popc" and reaches(n.args, ballot, set())

    return WARP_RANK_HINT if any(reaches(i, rank, set()) for i in indices) else None


def round_chosen(form: StoreForm) -> bool:
    """Does a condition around ``form`` compare the thread with a value the round chooses: a
    remainder or quotient of loop counters alone (``if t % 2 == phase % 2:``, or ``if i + 1 <
    N:`` with ``i = 2 * t + (phase & 1)``), or a counter the index does not read (``if t ==
    r:``)?  A counter the index reads as it is is the store's own loop (``for i in range(t, N,
    B): s[i] = ...``), not a round's choice."""
    read = {d for p in form.dims for d in nested_digits(p) if d.coord.startswith("loop:")}

    def chosen(d: Digit) -> bool:
        if d.of is not None:
            inner = nested_digits(d.of.flat) | nested_digits(d.of.other)
            return bool(inner) and all(e.coord.startswith("loop:") for e in inner)
        return d.coord.startswith("loop:") and d not in read

    for g in form.guards:
        digits = nested_digits(g.left) | nested_digits(g.right)
        if any(d.is_thread for d in digits) and any(chosen(d) for d in digits):
            return True
    return False


def flat_thread_stride(form: StoreForm) -> tuple[int, int] | None:
    """Where an index of ``form`` (or a quotient or remainder in it) flattens the thread by a
    constant row length with the block's width unknown: ``(k, rows)`` for ``thread_idx.y * k
    + thread_idx.x``, ``rows`` the number of rows a loop step of ``L = k * rows`` assumes (0
    without one): ``(16, 16)`` for ``for i in range(thread_idx.y * 16 + thread_idx.x, N,
    256)``."""
    polys = list(form.dims)
    while polys:
        p = polys.pop()
        for mono, _ in p.terms:
            for atom in mono:
                if isinstance(atom, Digit) and atom.of is not None:
                    polys += [atom.of.flat, atom.of.other]
        coefficients = {m[0].coord: k for m, k in p.terms
                        if len(m) == 1 and isinstance(m[0], Digit) and m[0].part == "all"}
        k = coefficients.get("tid1")
        if coefficients.get("tid0") != 1 or not isinstance(k, int) or k < 2:
            continue
        steps = [c for name, c in coefficients.items()
                 if name.startswith("loop:") and isinstance(c, int) and c % k == 0 and c > k]
        rows = steps[0] // k if steps else 0
        # With the width asserted, the rows a loop step assumes may still be missing.
        if SpecialKey("block_dim", 0) in form.launch and (
                not rows or SpecialKey("block_dim", 1) in form.launch):
            continue
        return k, rows
    return None


def thread_strided_loops(form: StoreForm) -> list[tuple[str, int]]:
    """Where an index of ``form`` is ``thread_idx.n`` plus a loop counter stepping by ``k > 1``
    (``for yy in range(thread_idx.y, W, 16)``, a halo tile's load) with the block's extent
    along ``n`` unknown and no block index beside it: ``[("y", 16), ("x", 16)]``."""
    found = []
    for p in form.dims:
        coefficients = {m[0].coord: k for m, k in p.terms
                        if len(m) == 1 and isinstance(m[0], Digit) and m[0].part == "all"}
        if any(c.startswith("bid") for c in coefficients):
            continue  # constant_block_strides' case
        steps = [k for c, k in coefficients.items()
                 if c.startswith("loop:") and isinstance(k, int) and k > 1]
        for axis, name in enumerate("xyz"):
            if coefficients.get(f"tid{axis}") == 1 and steps and \
                    SpecialKey("block_dim", axis) not in form.launch:
                found.append((name, min(steps)))
    return found


def _block_lane(form: StoreForm) -> tuple[int, int] | None:
    """``(axis, m)`` where an index of ``form``, or a condition around it, reads
    ``(block_idx.a * block_dim.a + thread_idx.a) % m`` that the proofs do not read as the
    thread's own ``thread_idx.a % m`` (:func:`.splits.lanes`): ``m`` is no power of two, or the
    block's extent is not shown a multiple of it."""
    # In an index, or in a condition around the store (`if lane == 31:`, form.residues).
    lanes = [(d.of.flat, d.of.other) for p in form.dims for d in digits_of(p)
             if d.of is not None and d.of.op == "lo"]
    lanes += [(e, const(m)) for e, m, _ in form.residues]
    for flat, other in lanes:
        m = other.const
        if other.terms or m < 2:
            continue
        for axis in range(3):
            if flat.coefficient((Digit(f"tid{axis}"),)) == 1 and any(
                    _reads_block(mono, axis) for mono, _ in flat.terms) \
                    and (m & (m - 1) or block_multiple(form, axis) % m):
                return axis, m
    return None


def _reads_block(mono: tuple, axis: int) -> bool:
    bid = Digit(f"bid{axis}")
    return any(x == bid or x == ("block", bid) for x in mono)


def block_multiple(form: StoreForm, axis: int) -> int:
    """What the asserts around ``form`` show the block's extent along ``axis`` a multiple of
    (``assert block_dim.x == 128``: 128; ``assert block_dim.x % 32 == 0``: 32); 1 for nothing."""
    extent = form.launch.get(SpecialKey("block_dim", axis))
    if extent is None:
        return 1
    if not extent.terms:
        return max(extent.const, 1)
    if extent.const == 0 and len(extent.terms) == 1:
        (_, k), = extent.terms
        return max(k, 1)
    return 1


def constant_block_strides(form: StoreForm) -> list[tuple[str, str, int, int]]:
    """Where an index of ``form`` holds ``block_idx.b * k + thread_idx.n`` (k > 1 a constant)
    with the block's extent along ``n`` unknown, ``(n, b, k, r)``: ``[("y", "y", 16, 16), ("x",
    "x", 16, 16)]``, or ``("x", "y", 32, 32)`` for a transpose's ``block_idx.y * 32 +
    thread_idx.x``; ``r`` is the smallest step below ``k`` of a loop counter in the same index
    (``block_idx.x * 32 + thread_idx.y + j``, ``j`` stepping by 8: 8), else ``k``."""
    found = []
    for p in form.dims:
        coefficients = {m[0].coord: k for m, k in p.terms
                        if len(m) == 1 and isinstance(m[0], Digit) and m[0].part == "all"}
        rounds = [k for c, k in coefficients.items() if c.startswith("loop:") and
                  isinstance(k, int) and k > 0]
        for axis, name in enumerate("xyz"):
            if (coefficients.get(f"tid{axis}") != 1
                    or SpecialKey("block_dim", axis) in form.launch):
                continue
            # The block axis of the same name first (the common case), then any other.
            for b in sorted(range(3), key=lambda b: b != axis):
                k = coefficients.get(f"bid{b}")
                if isinstance(k, int) and k > 1:
                    found.append((name, "xyz"[b], k, min([r for r in rounds if r < k],
                                                         default=k)))
                    break
    return found


def _wrapping_bound(a: StoreForm, b: StoreForm) -> str | None:
    """The hint for a condition ``x < w - 1`` around a store that bounds nothing: ``w - 1``
    may wrap in its type (for the least ``w``), so the proofs could not use it as they use
    ``x < w``; ``x + 1 < w`` says the same without the wrap."""
    from .poly import const, poly_text, unassume

    for form in (a, b) if a is not b else (a,):
        for g in form.guards:
            if g.op != "<" or not g.right.terms or g.right.const >= 0 or \
                    (g.left, g.right) in form.bounded:
                continue
            # Only a bound by what the index strides by (`y * w + x`) separates its digits.
            atoms = {x for mono, _ in g.right.terms for x in mono}
            if not any(x in mono for p in form.dims for mono, _ in p.terms for x in atoms):
                continue
            c = -g.right.const
            bound = poly_text(unassume(g.right.plus(const(c))))
            if all(isinstance(x, Digit) and x.coord.startswith(("tid", "bid")) for x in atoms):
                # A thread's coordinate is at least 0 and signed: `thread_idx.x - 1` cannot
                # wrap.  The guard is a lower bound (`t >= 0` for `t = thread_idx.x - 1`), which
                # the proofs take of a value the index is written through, not of the
                # coordinate inside a sum.
                return (f"the proofs do not use a lower bound `{bound} - {c} >= ...` on a "
                        f"thread's coordinate inside a sum: write the index through the "
                        f"bounded value, `... + ({bound} - {c})` (or through the local that "
                        f"holds it), so that its condition bounds the index")
            return (f"a condition `... < {bound} - {c}` bounds nothing the proofs can use: "
                    f"`{bound} - {c}` may wrap around in its type (for the least {bound}), and "
                    f"then every thread passes it; write it without the subtraction, `... + {c} "
                    f"< {bound}` (`x + 1 < w` for `x < w - 1`), which bounds the index as "
                    f"`... < {bound}` does")
    return None
