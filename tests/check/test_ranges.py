"""gpu_native.analysis.ranges: the interval rules, the launch limits, the evaluator and the
affine forms that the bounds proofs and the 32-bit entry point share."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpu_native import abi, ir
from gpu_native.analysis.ranges import (
    BINARY,
    HARDWARE,
    Affine,
    Interval,
    ValueRanges,
    affine,
    type_interval,
)
from gpu_native.emit.index32 import INDEX32_LIMITS
from gpu_native.errors import SourceSpan

SPAN = SourceSpan("f.py", 1, 0, 1)


def const(v, ty=ir.I64):
    return ir.Const(SPAN, ty, v)


def local(name, ty=ir.I64):
    return ir.Local(SPAN, ty, ir.Var(name, ty, SPAN))


def binop(op, a, b, ty=ir.I64):
    return ir.BinOp(SPAN, ty, op, a, b)


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.slow
def test_every_interval_rule_holds_for_every_pair_of_small_values(op):
    intervals = [Interval(lo, hi) for lo in range(-5, 6) for hi in range(lo, 6)]
    for a, b in itertools.product(intervals, repeat=2):
        r = BINARY[op](a, b)
        if r is None:
            continue
        for x in range(a.lo, a.hi + 1):
            for y in range(b.lo, b.hi + 1):
                if op in ("//", "%") and y == 0:
                    continue
                if op == ">>":
                    value = x >> y if y >= 0 else (-1 if x < 0 else 0)
                else:
                    value = eval(f"x {op} y")
                assert r.lo <= value <= r.hi, (op, a, b, x, y)


def test_types_and_launch_indices_have_their_intervals():
    assert type_interval(ir.I32) == (-(1 << 31), (1 << 31) - 1)
    assert type_interval(ir.BOOL) == (0, 1) and type_interval(ir.F32) is None
    assert HARDWARE.special("block_dim", 0) == (1, 1024)
    assert HARDWARE.uid("grid", 1) == (0, 65535 * 1024 - 1)
    assert HARDWARE.uid("block", 2) == (0, 63)


def test_the_32_bit_entry_point_narrows_only_the_grid_and_the_extents():
    assert INDEX32_LIMITS.grid_uid == (abi.INDEX32_MAX_ELEMENTS - 1,) * 3
    assert INDEX32_LIMITS.extent == abi.INDEX32_MAX_ELEMENTS
    for name in ("thread_idx", "block_idx", "block_dim", "grid_dim"):
        assert getattr(INDEX32_LIMITS, name) == getattr(HARDWARE, name)


def test_value_ranges_widen_what_may_wrap_to_the_type():
    ranges = ValueRanges(HARDWARE)
    tid = ir.Special(SPAN, ir.I32, "thread_idx", 0)
    assert ranges.range(binop("+", tid, const(1, ir.I32), ir.I32)) == (1, 1024)
    big = binop("*", ir.Special(SPAN, ir.I32, "block_idx", 0), const(1024, ir.I32), ir.I32)
    assert ranges.range(big) == type_interval(ir.I32)
    assert ranges.range(const(1.5, ir.F32)) is None


def test_bitwise_rules_bound_nonnegative_operands_and_only_those():
    and_, or_, xor, shr, mod = (BINARY[op] for op in ("&", "|", "^", ">>", "%"))
    anything = type_interval(ir.I32)
    # x & c with c >= 0 is in [0, c] whatever x is (two's complement clears the sign bit).
    assert and_(anything, Interval(0, 7)) == (0, 7)
    assert and_(anything, Interval(-8, -1)) is None
    # 0 <= x < 2**2 and 0 <= y < 2**4: no bit above the fourth.
    assert xor(Interval(0, 3), Interval(0, 11)) == (0, 15)
    assert or_(Interval(0, 8), Interval(0, 8)) == (0, 15)
    assert xor(Interval(-1, 3), Interval(0, 3)) is None and or_(Interval(0, 3), anything) is None
    # x >> n for x >= 0 and n >= 0: [lo >> n.hi, hi >> n.lo].
    assert shr(Interval(4, 127), Interval(1, 2)) == (1, 63)
    assert shr(Interval(0, 127), Interval(-1, 2)) == (0, 127)  # a negative count gives 0
    assert shr(Interval(-5, 127), Interval(1, 1)) == (-5, 127)  # the sign fill
    assert mod(anything, Interval(8, 8)) == (0, 7)


I8_TYPE = ir.scalar("i8")
I8 = type_interval(I8_TYPE)


def _i8_shr(xs, n):
    # The prelude's gn_shr on an i8: a count outside 0..7 gives the sign fill.
    return np.where(xs < 0, -1, 0) if n < 0 or n >= 8 else xs >> n


@pytest.mark.slow
@pytest.mark.parametrize("op", ["&", "|", "^", ">>", "%"])
def test_bitwise_intervals_hold_for_every_i8_value_and_shift_count(op):
    # Through ValueRanges, as the proofs use it: the operands' intervals are any of these, and
    # every value (and every shift count, some past the type's width) stays in the result.
    ends = (-128, -3, -1, 0, 1, 5, 8, 100, 127)
    intervals = [Interval(lo, hi) for lo in ends for hi in ends if lo <= hi]
    x, y = local("x", I8_TYPE), local("y", I8_TYPE)
    e = binop(op, x, y, I8_TYPE)
    for a, b in itertools.product(intervals, repeat=2):
        if op == ">>":
            b = Interval(max(b.lo, -2), min(b.hi, 10))
            if b.lo > b.hi:
                continue

        ranges = ValueRanges(HARDWARE)
        known = {id(x.var): a, id(y.var): b}
        ranges.variable = lambda var, known=known: known[id(var)]  # type: ignore[method-assign]
        r = ranges.range(e)
        assert r is not None
        xs = np.arange(a.lo, a.hi + 1)
        for n in range(b.lo, b.hi + 1):
            if op == "%" and n == 0:
                continue
            if op == ">>":
                values = _i8_shr(xs, n)
            else:
                values = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
                          "%": np.mod}[op](xs, n)
            assert r.lo <= values.min() and values.max() <= r.hi, (op, a, b, n, r)
            assert r.within(I8)


def test_unwrapped_is_the_operation_before_it_wraps_and_range_what_the_code_computes():
    # The no-wrap proofs compare `unwrapped` with the type; everything else reads `range`.
    ranges = ValueRanges(HARDWARE)
    tid = ir.Special(SPAN, ir.I32, "thread_idx", 0)
    bid = ir.Special(SPAN, ir.I32, "block_idx", 0)
    small = binop("+", binop("*", tid, const(4, ir.I32), ir.I32), const(3, ir.I32), ir.I32)
    assert ranges.unwrapped(small) == ranges.range(small) == (3, 1023 * 4 + 3)
    big = binop("*", bid, const(1024, ir.I32), ir.I32)
    assert ranges.unwrapped(big) == (0, ((1 << 31) - 2) * 1024)
    assert ranges.range(big) == type_interval(ir.I32)  # it may wrap: any i32
    # An operand that may wrap is taken as computed: the whole type, not its exact product.
    assert ranges.unwrapped(binop("//", big, const(2, ir.I32), ir.I32)) == (-(1 << 30), (1 << 30) - 1)
    assert ranges.unwrapped(ir.Cast(SPAN, ir.F32, tid)) is None


def test_affine_forms_add_scale_and_bound():
    tid, j = Affine.of("tid"), Affine.of("j")
    index = Affine(5).plus(tid).plus(j.scaled(32))
    assert index.coefficient("j") == 32 and index.coefficient("tid") == 1
    assert index.plus(tid.scaled(-1)) == Affine(5).plus(j.scaled(32))
    box = {"tid": Interval(0, 31), "j": Interval(0, 3)}
    assert index.interval(box.get) == (5, 5 + 31 + 96)
    assert index.interval({"tid": Interval(0, 31)}.get) is None


def test_affine_takes_an_index_apart_over_its_symbols():
    base, tid, j = local("base"), ir.Special(SPAN, ir.I32, "thread_idx", 0), local("j")
    e = binop("+", binop("+", base, ir.Cast(SPAN, ir.I64, tid)), binop("*", j, const(64)))
    form = affine(binop("-", e, const(2)), symbol=lambda x: x.var.name if isinstance(
        x, ir.Local) else "tid")
    assert form == Affine(-2, frozenset({("base", 1), ("tid", 1), ("j", 64)}))
