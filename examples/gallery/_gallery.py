"""Comparison of a gallery kernel's output against its NumPy reference.

Every gallery module declares ``TOLERANCE = (kind, tol)`` beside its ``run()``; ``main()`` and
``tests/test_gallery.py`` both compare through :func:`compare`, so the tolerance is written down
once, with the reason for it, in the module it belongs to.  The references are computed in
float64.

kinds
    ``exact``  every element equal (integer results, permutations, copies);
    ``abs``    ``|out - ref| <= tol`` elementwise;
    ``rel``    ``|out - ref| <= tol * (1 + |ref|)`` elementwise (sums whose magnitude grows);
    ``norm``   ``||out - ref|| <= tol * ||ref||`` (matrix products: error spread over a row).
"""

from __future__ import annotations

import numpy as np

SENTINEL_INT = 0x5A5A5A5A
"""What integer outputs are filled with before a run, so that an element never written shows."""


def poison(array) -> None:
    """Fill a device array with NaN (floats) or a sentinel (integers) before a kernel writes it
    (every component of an array of vectors)."""
    dtype = np.dtype(array.dtype).base  # a vector's dtype is its components' (n of them)
    if dtype.kind in "fc":  # a complex number: NaN in its real part

        array.fill(np.nan)
    else:
        info = np.iinfo(dtype)
        array.fill(min(SENTINEL_INT, info.max))


def compare(out, ref, kind: str, tol: float, what: str = "output") -> None:
    """Raise ``AssertionError`` naming ``what`` when ``out`` does not match ``ref``.

    ``out`` and ``ref`` may be tuples of arrays (several outputs), compared pairwise.
    """
    if isinstance(ref, tuple):
        assert isinstance(out, tuple) and len(out) == len(ref), (type(out), type(ref))
        for i, (o, r) in enumerate(zip(out, ref)):
            compare(o, r, kind, tol, f"{what}[{i}]")
        return
    out = np.asarray(out)
    ref = np.asarray(ref)
    assert out.shape == ref.shape, f"{what}: shape {out.shape}, expected {ref.shape}"
    got = out.astype(np.float64)
    assert not np.isnan(got).any(), f"{what}: some elements were never written (NaN)"
    if kind == "exact":
        bad = got != ref
    elif kind == "abs":
        bad = ~(np.abs(got - ref) <= tol)
    elif kind == "rel":
        bad = ~(np.abs(got - ref) <= tol * (1 + np.abs(ref)))
    elif kind == "norm":
        err = np.linalg.norm(got - ref)
        assert err <= tol * np.linalg.norm(ref), f"{what}: relative error {err:.3g} > {tol}"
        return
    else:
        raise ValueError(f"unknown tolerance kind {kind!r}")
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ; first at "
                             f"{where}: {got[where]!r}, expected {ref[where]!r} ({kind} {tol})")
