"""Helpers shared by the simulator tests (and ``tests/language/test_registry.py``): build kernels
from source, launch them, collect errors.  It defines no tests."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_native import ir
from gpu_native.rewrite import transpile_module
from gpu_native.simulator import compile_kernel

HEADER = """\
import math
from typing import TypeVar
from gpu_native import (
    gpu_kernel, gpu_device, Kernel1D, Kernel2D, Kernel3D,
    CUDASlice, CUDASliceMut, CUDASlice2D, CUDASliceMut2D, CUDASlice3D, CUDASliceMut3D,
    FlatLayout1D, FlatLayout2D, FlatLayout3D, BlockLayout1D, BlockLayout2D, BlockLayout3D,
    UniqueId, thread_idx, block_idx, block_dim, grid_dim,
    shared_array, local_array, sync_threads, sync_warp, unsafe, MemoryOrder, FULL_MASK,
    shfl_down, shfl_up, shfl_xor, shfl_idx, ballot, all_sync, any_sync, lane_id,
    f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool_,
)
"""


@dataclass
class Errors:
    """The ``errors`` sink a launch reports to (what the runtime passes in)."""

    fails: list = field(default_factory=list)
    races: list = field(default_factory=list)

    def fail(self, site, index, length, block, thread):
        self.fails.append((site, index, length, tuple(block), tuple(thread)))

    def race(self, message):
        self.races.append(message)


class Kernels:
    """The checked kernels of one module, by name (``kernels["saxpy"]`` or
    ``kernels["scale", "f64"]`` for a specialisation)."""

    def __init__(self, path: Path, module):
        self.path = path
        self.by_name: dict[str, list[ir.Kernel]] = {}
        for ck in module.checked:
            self.by_name[ck.fn.name] = ck.specializations

    def __getitem__(self, key) -> ir.Kernel:
        if isinstance(key, tuple):
            name, *types = key
            for k in self.by_name[name]:
                if tuple(t for _, t in k.specialization) == tuple(types):
                    return k
            raise KeyError(key)
        return self.by_name[key][0]

    def site(self, name: str, site: int) -> ir.Site:
        return self[name].sites[site]


def build(tmp_path: Path, body: str, name: str = "simkernels") -> Kernels:
    """Write ``HEADER + body`` as a module in ``tmp_path`` and transpile it."""
    source = HEADER + textwrap.dedent(body)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return Kernels(path, transpile_module(source, str(path), name))


def generated_draws(tmp_path: Path, generate, seed: int, count: int, prefix: str):
    """``(source, kernel k or None where the checker refused it)`` for each distinct module body
    of ``count`` draws of ``generate`` (a fuzz family of tools/fuzz) from ``Random(seed)``."""
    import random

    from gpu_native.errors import TranspileError

    r = random.Random(seed)
    seen: set[str] = set()
    for n in range(count):
        source = generate(r)
        if source in seen:
            continue
        seen.add(source)
        try:
            yield source, build(tmp_path, source, name=f"{prefix}{n}")["k"]
        except TranspileError:
            yield source, None


def race_free_draws(tmp_path: Path, generate, seed: int, count: int, prefix: str,
                    runs) -> tuple[int, int, int]:
    """Every draw of :func:`generated_draws` the checker accepts, launched each way ``runs(kernel)``
    gives (pairs of what the launch is, ``"grid 2, block 64"``, and a call that runs it on the
    race detector and returns what it reported), must not race; ``(accepted, refused,
    launches)``."""
    accepted = refused = launches = 0
    for source, kernel in generated_draws(tmp_path, generate, seed, count, prefix):
        if kernel is None:
            refused += 1
            continue
        accepted += 1
        for what, run in runs(kernel):
            errors = run()
            launches += 1
            assert errors.races == [], f"{source}\n{what}: {errors.races[0]}"
    return accepted, refused, launches


def launch(kernel: ir.Kernel, grid, block, *args, shared: int = 0) -> Errors:
    """Run ``kernel`` on the simulator; return what it reported."""
    grid = tuple(grid) if isinstance(grid, tuple) else (grid,)
    block = tuple(block) if isinstance(block, tuple) else (block,)
    grid = (*grid, 1, 1)[:3]
    block = (*block, 1, 1)[:3]
    errors = Errors()
    compile_kernel(kernel).run(grid, block, shared, list(args), errors)
    return errors


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def poisoned(shape, dtype) -> np.ndarray:
    """An output array filled with NaN (floats) or a sentinel (integers)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.full(shape, np.nan, dt)
    return np.full(shape, np.iinfo(dt).max if dt.kind in "iu" else 0, dt)
