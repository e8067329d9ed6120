"""Launch shapes the runtime picks: ``kernel[grid, block, ...]`` read as Numba reads it,
``kernel.forall(shape)`` sized from the occupancy API, and the co-residency limit of cooperative
launches.

Everything here runs once per launch configuration (its result is cached with the launcher in
the thread's launcher cache, see :mod:`gpu_native.runtime.kernel`): none of it is on the path of
a launch whose configuration was seen before, but for :func:`is_exact` and :func:`is_exact_item`,
which tell a cached key from an equal float or bool.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import LaunchError
from ..lang.layouts import BlockDim1D, BlockDim2D, BlockDim3D, GridDim1D, GridDim2D, GridDim3D
from ..launchexpr import AllOf, Compare, Const, LaunchExpr, LaunchIndex
from ..spec import LaunchAssert
from .streams import DEFAULT_STREAM, Stream

__all__ = ["EXACT_DIMS", "EXACT_INTS", "SIM_BLOCK_SIZE", "block_shape", "check_cooperative",
           "cooperative_limit", "forall_config", "forall_grid", "forall_shape", "is_exact",
           "is_exact_item", "item_config", "occupancy_block_size"]

# The simulator has no occupancy to measure: forall gives every kernel this many threads a block.
SIM_BLOCK_SIZE = 256


def _int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# The launcher caches are keyed by the configuration as given, and 1.0, True, np.float64(1.0)
# and Fraction(1) all equal 1 (with its hash): a cached launcher is taken only for a key of these
# types, so that kernel[1.0, 8] is refused after kernel[1, 8] ran just as before.
EXACT_INTS = frozenset({int, GridDim1D, BlockDim1D, np.int8, np.int16, np.int32, np.int64,
                        np.uint8, np.uint16, np.uint32, np.uint64, np.intc, np.uintc,
                        np.longlong, np.ulonglong})
EXACT_DIMS = EXACT_INTS | {GridDim2D, GridDim3D, BlockDim2D, BlockDim3D}


def is_exact(value) -> bool:
    """Whether ``value`` (a grid, a block or a forall shape) equals only values of the same
    meaning: an int, a launch dimension, or a tuple of ints."""
    kind = type(value)
    return kind in EXACT_DIMS or (kind is tuple and EXACT_INTS.issuperset(map(type, value)))


def is_exact_item(config) -> bool:
    """Whether the key of ``kernel[...]`` equals only keys of the same meaning (see
    :func:`is_exact`); its stream may be an int (``0``) or a stream, not a bool or a float."""
    if type(config) is not tuple:
        return False
    n = len(config)
    if n > 2:
        if n > 4 or (n == 4 and type(config[3]) not in EXACT_INTS):
            return False
        stream = config[2]
        if not (type(stream) in EXACT_INTS or isinstance(stream, Stream)
                or not isinstance(stream, (numbers.Number, np.generic))):
            return False
    elif n < 2:
        return False
    # is_exact of the grid and the block, written out: this runs on every launch through
    # kernel[grid, block] with tuples.
    grid, block = config[0], config[1]
    if type(grid) is tuple and type(block) is tuple:
        for v in grid + block:  # noqa: SIM110 - a loop: faster than all() or a set of types
            if type(v) is not int and type(v) not in EXACT_INTS:
                return False
        return True
    kind = type(grid)
    if kind not in EXACT_DIMS and not (kind is tuple and EXACT_INTS.issuperset(map(type, grid))):
        return False
    kind = type(block)
    return kind in EXACT_DIMS or (kind is tuple and EXACT_INTS.issuperset(map(type, block)))


def item_config(name: str, config) -> tuple:
    """``(grid, block, shared_mem_bytes, stream)`` from the key of ``kernel[...]``: ``grid,
    block`` then optionally ``stream`` and ``shared_mem_bytes``, in Numba's order (its stream
    ``0`` is the default stream).  The entries themselves are checked by the launch."""
    if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
        got = f"{len(config)} entries" if isinstance(config, tuple) else "one entry"
        raise TypeError(f"{name}[...] takes 2 to 4 entries: grid, block, then optionally stream "
                        f"and shared_mem_bytes, e.g. {name}[blocks, threads](...); got {got}")
    grid, block = config[0], config[1]
    stream = config[2] if len(config) > 2 else DEFAULT_STREAM
    shared = config[3] if len(config) > 3 else 0
    if _int(stream) and stream == 0:
        stream = DEFAULT_STREAM
    return grid, block, shared, stream


def forall_shape(name: str, ndim: int, shape) -> tuple[int, ...]:
    """The extents of ``kernel.forall(shape)`` (an int, or a tuple of 1 to 3 ints in NumPy
    order: rows first; 0 is an empty problem), checked against a ``Kernel{ndim}D`` kernel."""
    if _int(shape):
        extents: tuple[int, ...] = (int(shape),)
    elif isinstance(shape, tuple) and all(_int(n) for n in shape):
        if not 1 <= len(shape) <= 3:
            raise LaunchError(f"{name}.forall(shape): shape must have 1 to 3 entries, got "
                              f"{len(shape)}: {shape!r}")
        extents = tuple(int(n) for n in shape)
    else:
        raise TypeError(f"{name}.forall(shape): shape must be an int or a tuple of 1 to 3 ints "
                        f"(NumPy order), not {type(shape).__name__} {shape!r:.60}")
    if any(n < 0 for n in extents):
        raise LaunchError(f"{name}.forall(shape): an extent cannot be negative, got {shape!r}")
    if len(extents) > ndim:
        raise LaunchError(f"{name}.forall({shape!r}) needs a {len(extents)}-D launch, but "
                          f"{name} is a Kernel{ndim}D kernel; its unique ids would not be unique")
    return extents


def block_shape(threads: int, extents: tuple[int, ...]) -> tuple[int, ...]:
    """A block of at most ``threads`` threads for a problem of ``extents`` (NumPy order): the
    x axis (the last, contiguous one) gets a warp's worth of threads or more, then y, then z."""
    if len(extents) == 1:
        # A problem smaller than one block gets the whole warps it needs, not a full block.
        return (max(1, min(threads, -(-extents[0] // 32) * 32)),)
    bx = min(threads, 32)
    rest = max(1, threads // bx)
    if len(extents) == 2:
        return (bx, rest)
    by = min(rest, 8)
    return (bx, by, max(1, min(64, rest // by)))


def forall_config(extents: tuple[int, ...], threads: int) -> tuple[tuple, tuple]:
    """``(grid, block)`` tuples (x first) covering ``extents`` (NumPy order) with blocks of at
    most ``threads`` threads."""
    block = block_shape(threads, extents)
    xyz = tuple(reversed(extents))
    grid = tuple(-(-n // b) for n, b in zip(xyz, block))
    return grid, block


def forall_grid(kernel, variant, backend, device: int, extents: tuple[int, ...],
                shared_mem_bytes: int) -> tuple[tuple, tuple]:
    """``(grid, block)`` of ``kernel.forall(shape)`` for one variant on one device; a
    cooperative kernel's grid is capped at the blocks that fit on the device at once."""
    asserted = asserted_block(variant.launch_checks)
    if asserted:
        # The kernel fixes its block (`assert block_dim.x == 256`): that block, every axis it
        # does not fix one thread wide.
        ndim = kernel.ndim
        block = tuple(asserted.get(axis, 1) for axis in range(ndim))
        xyz = tuple(reversed(extents)) + (1,) * (ndim - len(extents))
        grid = tuple(-(-n // b) for n, b in zip(xyz, block))
    else:
        threads = occupancy_block_size(kernel, variant, backend, device, shared_mem_bytes)
        grid, block = forall_config(extents, threads)
    if kernel.options.cooperative:
        limit = min(cooperative_limit(backend, fn, device, math.prod(block), shared_mem_bytes)[0]
                    for fn in kernel._entry_functions(variant, backend, device))
        rest = math.prod(grid[1:])
        grid = (max(1, min(grid[0], limit // max(1, rest))), *grid[1:])
    return grid, block


def asserted_block(checks) -> dict[int, int]:
    """The block extents a kernel's asserts fix (``assert block_dim.x == 256 and block_dim.y ==
    1``: ``{0: 256, 1: 1}``), read from its launch asserts (their ``==`` of a ``block_dim``
    axis and a constant, alone or under ``and``)."""
    found: dict[int, int] = {}

    def visit(tree: LaunchExpr) -> None:
        if isinstance(tree, AllOf):
            for part in tree.parts:
                visit(part)
        elif isinstance(tree, Compare) and tree.op == "==":
            for a, b in ((tree.left, tree.right), (tree.right, tree.left)):
                if isinstance(a, LaunchIndex) and a.name == "block_dim" and \
                        isinstance(b, Const) and b.value >= 1:
                    found[a.axis] = b.value

    for check in checks:
        if isinstance(check, LaunchAssert):
            visit(check.tree)
    return found


def occupancy_block_size(kernel, variant, backend, device: int, shared_mem_bytes: int) -> int:
    """The block size ``forall`` uses for one kernel variant on one device: the occupancy API's
    ``cuOccupancyMaxPotentialBlockSize`` on the GPU, :data:`SIM_BLOCK_SIZE` on the simulator;
    cached on the variant."""
    key = (backend.name, device, shared_mem_bytes)
    sizes = variant.block_sizes
    size = sizes.get(key)
    if size is None:
        if backend.name == "sim":
            size = SIM_BLOCK_SIZE
        else:
            fn = kernel._function(variant, backend, device)
            size = backend.max_block_size(fn, shared_mem_bytes)
        size = sizes[key] = max(1, min(size, backend.properties(device)["max_threads_per_block"]))
    return size


def cooperative_limit(backend, fn, device: int, threads: int, shared_mem_bytes: int
                      ) -> tuple[int, int, int]:
    """``(blocks, per_multiprocessor, multiprocessors)``: how many blocks of ``threads`` threads
    a cooperative launch of ``fn`` may have, all resident at once."""
    per_sm = backend.max_active_blocks(fn, threads, shared_mem_bytes)
    sms = backend.properties(device)["multiprocessors"]
    return per_sm * sms, per_sm, sms


def check_cooperative(name: str, backend, fns: list, device: int, grid, block,
                      shared_mem_bytes: int) -> None:
    """Refuse a cooperative launch whose blocks cannot all be resident at once, for any of the
    entry points ``fns`` it may run (its grid-wide barrier would wait forever for blocks that
    never start)."""
    if hasattr(backend, "cooperative_supported") and not backend.cooperative_supported(device):
        raise LaunchError(f"{name} is a cooperative kernel, but device {device} cannot launch "
                          "cooperative kernels (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)")
    threads = math.prod(block)
    blocks = math.prod(grid)
    limit, per_sm, sms = min(cooperative_limit(backend, fn, device, threads, shared_mem_bytes)
                             for fn in fns)
    if blocks > limit:
        raise LaunchError(
            f"{name} is a cooperative kernel, and its grid of {blocks} blocks cannot all be "
            f"resident at once: the device holds at most {limit} blocks of {threads} threads "
            f"({per_sm} per multiprocessor x {sms} multiprocessors, with "
            f"{shared_mem_bytes} bytes of dynamic shared memory each); launch at most {limit} "
            f"blocks (see {name}.max_cooperative_grid_blocks) and loop with grid_stride")
