"""Whether two strided views may share a byte: the launch's overlap test for arguments whose
address ranges overlap (see ``LaunchContext.check_overlap``).

A view at address ``p`` with extents ``n_k``, byte strides ``s_k`` and elements ``w`` bytes wide
occupies the bytes ``[p + sum(i_k * s_k), + w)`` for ``0 <= i_k < n_k``.  An element of A at ``x``
and one of B at ``y`` share a byte iff ``-wB < y - x < wA``, so A and B share one iff

    sum(j_k * sB_k) - sum(i_k * sA_k)  lies in  [1 - wB - d, wA - 1 - d],   d = pB - pA,

for some indices in their boxes: an integer feasibility question over at most six bounded
variables, which :func:`may_share_bytes` decides exactly.

1. *Residues.*  With ``g`` the gcd of every stride of both views, each byte of A is
   ``pA + t (mod g)`` with ``0 <= t < wA``.  If the residues A covers and those B covers are
   disjoint, no byte is shared, with no search (``x[0::2]`` and ``x[1::2]`` of one array).
2. *Search.*  Axes of extent 1 and broadcast axes (stride 0) do not move an element: dropped.
   Each term ``±s * i`` is written ``|s| * x`` with ``x`` over an interval of integers, and terms
   of one ``|s|`` are merged (``s*i + s*j = s*(i + j)``, and ``i + j`` takes every integer between
   its bounds: exact).  A depth-first search then takes the terms by decreasing ``|s|`` and, for
   each, only the values that leave the remaining terms able to reach the target.  When both
   views have the same strides and neither overlaps itself (each stride exceeds the span of the
   axes inside it plus the element width), the window per term is narrower than two strides:
   at most two values per stride, ``2**ndim`` leaves.  Other layouts (a checkerboard of two 3-D
   views, a ``u8`` view beside an ``f32`` one) are decided the same way, usually in a few steps.

The search is capped at :data:`STEPS` values tried; past that the answer is "may share", which
the launcher refuses: sound, never a false "disjoint".  It runs only for argument pairs whose
address ranges overlap, which the launch refused outright before this test existed.
"""

from __future__ import annotations

import math

# One view's layout: (address, extents, byte strides, element width in bytes).
Layout = tuple[int, tuple[int, ...], tuple[int, ...], int]

# Values tried before the search gives up (and the pair is refused as possibly sharing memory):
# the same-stride case of three axes tries at most 6; a search that gives up takes about 2.4 ms.
STEPS = 4096


class _GaveUp(Exception):
    pass


def may_share_bytes(a: Layout, b: Layout, steps: int = STEPS) -> bool:
    """Whether some byte belongs to an element of view ``a`` and to an element of view ``b``
    (each ``(address, extents, byte strides, element width)``).  Exact, except that a search
    longer than ``steps`` answers True."""
    pa, na, sa, wa = a
    pb, nb, sb, wb = b
    if 0 in na or 0 in nb or wa <= 0 or wb <= 0:
        return False
    # Each moving axis as (|stride|, lowest, highest) of its term's multiplier; A's terms are
    # subtracted (y - x), so a positive A stride gives the multiplier -i.
    merged: dict[int, list[int]] = {}
    g = 0
    for extents, strides, sign in ((na, sa, -1), (nb, sb, 1)):
        for n, s in zip(extents, strides):
            if n == 1 or s == 0:
                continue
            c = abs(s)
            g = math.gcd(g, c)
            top = n - 1 if (s > 0) == (sign > 0) else 0
            term = merged.setdefault(c, [0, 0])
            term[0] += top - (n - 1)
            term[1] += top
    if g > 1 and wa < g and wb < g:
        ra, rb = pa % g, pb % g
        if (rb - ra) % g >= wa and (ra - rb) % g >= wb:
            return False  # the residues mod g covered by A and by B are apart
    d = pb - pa
    terms = sorted(((c, lo, hi) for c, (lo, hi) in merged.items()), reverse=True)
    # reach[k]: the lowest and highest sum of the terms after the k-th.
    reach = [(0, 0)] * len(terms)
    low = high = 0
    for k in range(len(terms) - 1, -1, -1):
        reach[k] = (low, high)
        c, lo, hi = terms[k]
        low, high = low + c * lo, high + c * hi
    budget = [steps]
    try:
        return _search(terms, reach, 0, 1 - wb - d, wa - 1 - d, budget)
    except _GaveUp:
        return True


def _search(terms: list[tuple[int, int, int]], reach: list[tuple[int, int]], k: int,
            lo: int, hi: int, budget: list[int]) -> bool:
    """Whether the terms from the k-th on can sum to a value in ``[lo, hi]``."""
    if k == len(terms):
        return lo <= 0 <= hi
    c, x_lo, x_hi = terms[k]
    r_lo, r_hi = reach[k]
    # c * x must lie in [lo - r_hi, hi - r_lo] for the rest to close the gap.
    first = max(x_lo, -((r_hi - lo) // c))
    last = min(x_hi, (hi - r_lo) // c)
    if k == len(terms) - 1:
        return first <= last
    for x in range(first, last + 1):
        budget[0] -= 1
        if budget[0] < 0:
            raise _GaveUp
        if _search(terms, reach, k + 1, lo - c * x, hi - c * x, budget):
            return True
    return False
