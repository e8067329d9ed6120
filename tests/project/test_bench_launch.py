"""tools/bench_launch.py's one-alias form, the launcher design the benchmark weighs against the
generated one: the same code reading its pieces through one reserved name, which must launch
and check exactly as the generated launcher does, or its timing would compare unlike things."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from tools import bench_launch

sys.path.insert(0, str(Path(bench_launch.__file__).parent))
import _bench_kernels as bk  # tools/ is on the path only now


def test_the_one_alias_form_launches_and_checks_like_the_generated_launcher(backend):
    rng = np.random.default_rng()
    a_host, b_host = rng.standard_normal((2, 1)).astype(np.float32)
    a, b = gn.to_device(a_host), gn.to_device(b_host)
    c = gn.to_device(np.full(1, np.nan, np.float32))
    launcher = bk.tiny.launch(gn.GridDim1D(1), gn.BlockDim1D(1), 0, gn.DEFAULT_STREAM)
    alias = bench_launch.one_alias_form(launcher, bk.tiny.spec)
    # One closure variable, the record; every piece the generated lambda closes over is on it.
    assert alias.__code__.co_freevars == ("_gn",)
    record = alias.__closure__[0].cell_contents
    assert set(type(record).__slots__) == set(launcher.__code__.co_freevars)
    alias(a, b, c, 1)
    np.testing.assert_allclose(c.to_host(), a_host.astype(np.float64) + b_host, rtol=1e-6)
    # A wrong argument takes the same checked path, which names the parameter.
    with pytest.raises(TypeError, match="'b'"):
        alias(a, np.zeros(1, np.float64), c, 1)
