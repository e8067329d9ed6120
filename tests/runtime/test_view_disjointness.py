"""The launcher's test of whether two strided views share a byte (gpu_native.runtime.disjoint),
checked against brute force: the byte sets of thousands of small random views, enumerated.

This is the soundness test of letting interleaved views of one array into one launch: a pair
the function calls apart must share no byte, and (the search being exact) a pair it calls
overlapping must share one.  Seeds are fixed, so a failure reproduces.
"""

from __future__ import annotations

import itertools
import random

import pytest

from gpu_native.runtime.arrays import self_overlaps
from gpu_native.runtime.disjoint import may_share_bytes

WIDTHS = (1, 2, 4, 8)


def _bytes(layout) -> set[int]:
    address, shape, strides, width = layout
    out: set[int] = set()
    for index in itertools.product(*(range(n) for n in shape)):
        start = address + sum(i * s for i, s in zip(index, strides))
        out.update(range(start, start + width))
    return out


def _share(a, b) -> bool:
    return not _bytes(a).isdisjoint(_bytes(b))


def _shape(rng: random.Random, ndim: int) -> tuple[int, ...]:
    return tuple(rng.choice((0, 1, 1, 2, 3, 4, 5)) if rng.random() < 0.1 else rng.randint(1, 5)
                 for _ in range(ndim))


def _any_view(rng: random.Random):
    """A view of any layout: strides in bytes (whole elements or not, negative, zero)."""
    ndim = rng.randint(1, 3)
    width = rng.choice(WIDTHS)
    whole = rng.random() < 0.7
    strides = tuple((rng.randint(-6, 6) * width) if whole else rng.randint(-24, 24)
                    for _ in range(ndim))
    return (rng.randint(0, 80), _shape(rng, ndim), strides, width)


def _nested_strides(rng: random.Random, shape: tuple[int, ...], width: int) -> tuple[int, ...]:
    """Byte strides for ``shape`` under which the view does not overlap itself: in a random
    axis order, each stride at least the span of the axes inside it plus the width (sometimes
    exactly that: a contiguous or tightly packed axis), signs at random."""
    order = list(range(len(shape)))
    rng.shuffle(order)
    strides = [0] * len(shape)
    reach = width
    for axis in order:
        step = reach + rng.choice((0, 0, width, rng.randint(1, 12)))
        strides[axis] = step * rng.choice((1, -1))
        reach = step * (max(shape[axis], 1) - 1) + reach
    return tuple(strides)


def _interleaved_pair(rng: random.Random):
    """Two views of one stride pattern, apart by a small offset: the de-interleaving case, with
    extents that may differ and element widths that may too."""
    ndim = rng.randint(1, 3)
    wa = rng.choice(WIDTHS)
    wb = wa if rng.random() < 0.7 else rng.choice(WIDTHS)
    shape_a = _shape(rng, ndim)
    strides = _nested_strides(rng, shape_a, max(wa, wb))
    shape_b = shape_a if rng.random() < 0.6 else _shape(rng, ndim)
    a0 = rng.randint(20, 60)
    b0 = a0 + rng.randint(-3 * max(wa, wb), 3 * max(wa, wb))
    if rng.random() < 0.3:  # B's axes listed in another order: the same strides, permuted
        perm = list(range(ndim))
        rng.shuffle(perm)
        return (a0, shape_a, strides, wa), (b0, tuple(shape_b[p] for p in perm),
                                            tuple(strides[p] for p in perm), wb)
    return (a0, shape_a, strides, wa), (b0, shape_b, strides, wb)


def _numpy_like_pair(rng: random.Random):
    """Two basic-indexing views of one C-contiguous array (slices with steps, either sign):
    what DeviceArray views and foreign arrays look like."""
    ndim = rng.randint(1, 3)
    width = rng.choice(WIDTHS)
    base = tuple(rng.randint(1, 6) for _ in range(ndim))
    c_strides = []
    step = width
    for n in reversed(base):
        c_strides.append(step)
        step *= n
    c_strides.reverse()

    def view():
        address, shape, strides = 100, [], []
        for n, s in zip(base, c_strides):
            start = rng.randint(0, n - 1)
            step = rng.choice((1, 2, 3, -1, -2))
            most = len(range(start, n if step > 0 else -1, step))
            count = 0 if rng.random() < 0.02 else rng.randint(1, most)
            address += start * s
            shape.append(count)
            strides.append(step * s)
        return (address, tuple(shape), tuple(strides), width)

    return view(), view()


def _cases(seed: int, count: int, draw):
    rng = random.Random(seed)
    return [draw(rng) for _ in range(count)]


def _cross_check(pairs) -> tuple[int, int]:
    shared = apart = 0
    for a, b in pairs:
        want = _share(a, b)
        assert may_share_bytes(a, b) == want, (a, b, want)
        assert may_share_bytes(b, a) == want, (b, a, want)
        shared += want
        apart += not want
    return shared, apart


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interleaved_views_agree_with_brute_force(seed):
    shared, apart = _cross_check(_cases(seed, 2000, _interleaved_pair))
    assert shared > 300 and apart > 300  # both answers are exercised


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_slices_of_one_array_agree_with_brute_force(seed):
    shared, apart = _cross_check(_cases(seed, 2000, _numpy_like_pair))
    assert shared > 300 and apart > 300


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_views_of_any_layout_agree_with_brute_force(seed):
    """Unrelated strides, strides that are not whole elements, broadcasts, self-overlapping and
    empty views: the search is exact for them too (none of these is long enough to give up)."""
    shared, apart = _cross_check(_cases(seed, 2000, lambda rng: (_any_view(rng),
                                                                  _any_view(rng))))
    assert shared > 300 and apart > 100


@pytest.mark.parametrize("seed", [31, 32])
def test_a_search_cut_short_never_says_apart(seed):
    """With almost no steps allowed the search gives up; giving up answers 'may share', so a
    pair that shares a byte is never called apart, whatever the budget."""
    rng = random.Random(seed)
    for _ in range(1500):
        a, b = rng.choice((_interleaved_pair, _numpy_like_pair,
                           lambda r: (_any_view(r), _any_view(r))))(rng)
        if _share(a, b):
            for steps in (0, 1, 2, 5):
                assert may_share_bytes(a, b, steps=steps), (a, b, steps)


@pytest.mark.parametrize("seed", [41, 42])
def test_same_strides_without_self_overlap_take_at_most_two_values_per_axis(seed):
    """The common case is decided within 2 + 4 steps for three axes (two candidate values per
    stride, the last axis solved outright): exact under a budget of 2**ndim."""
    rng = random.Random(seed)
    checked = 0
    for _ in range(3000):
        a, b = _interleaved_pair(rng)
        shape_a, shape_b = a[1], b[1]
        elems_a = tuple(s // a[3] for s in a[2]) if all(s % a[3] == 0 for s in a[2]) else None
        if elems_a is None or self_overlaps(shape_a, elems_a) or 0 in shape_a + shape_b:
            continue
        assert may_share_bytes(a, b, steps=2 ** len(shape_a)) == _share(a, b), (a, b)
        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("a, b, shared", [
    # One (4, 8) f32 array at 0: even and odd columns, rows, and halves of a row.
    ((0, (4, 4), (32, 8), 4), (4, (4, 4), (32, 8), 4), False),
    ((0, (2, 8), (64, 4), 4), (32, (2, 8), (64, 4), 4), False),
    ((0, (4, 3), (32, 4), 4), (8, (4, 3), (32, 4), 4), True),      # a[:, 0:3], a[:, 2:5]
    ((0, (16,), (8,), 4), (0, (11,), (12,), 4), True),             # x[::2], x[::3]
    ((4, (16,), (8,), 4), (0, (11,), (12,), 4), True),             # x[1::2], x[::3] meet at 3
    ((0, (16,), (8,), 4), (0, (16,), (8,), 4), True),              # one view twice
    ((0, (4, 4), (32, 8), 4), (0, (4, 8), (32, 4), 4), True),      # a view and its base
    ((0, (16,), (8,), 8), (4, (16,), (8,), 4), True),              # f64 view over both halves
    ((0, (16,), (8,), 4), (2, (16,), (8,), 2), True),              # a u16 inside an even f32
    ((0, (16,), (8,), 4), (4, (32,), (4,), 2), True),
    # Red and black cells of an (8, 6) f32 grid as (4, 2, 3) views: strides (2m, m+1, 2) and
    # (2m, m-1, 2) elements, with gcd 1 (no residue test): apart by search.
    ((0, (4, 2, 3), (48, 28, 8), 4), (4, (4, 2, 3), (48, 20, 8), 4), False),
    ((0, (4, 2, 3), (48, 28, 8), 4), (0, (4, 2, 3), (48, 20, 8), 4), True),
    ((0, (0,), (4,), 4), (0, (5,), (4,), 4), False),               # an empty view
    ((0, (3, 5), (0, 4), 4), (20, (4,), (4,), 4), False),          # a broadcast read beside
])
def test_known_pairs(a, b, shared):
    assert _share(a, b) == shared
    assert may_share_bytes(a, b) == shared
    assert may_share_bytes(b, a) == shared
