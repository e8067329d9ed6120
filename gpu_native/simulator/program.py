"""A compiled simulator program and one launch of it."""

from __future__ import annotations

import math
import weakref

import numpy as np

from .. import ir, settings
from . import codegen, ops
from .machine import Chunk
from .memory import ConstArray, GlobalArray, SharedArray, StridedArray
from .races import Conflict, Shadow

_LANES_PER_CHUNK = 1 << 18


def races_enabled() -> bool:
    """Race detection is on unless ``GPU_NATIVE_SIM_RACES=0``."""
    return bool(settings.flag("GPU_NATIVE_SIM_RACES", True))


def write_races_enabled() -> bool:
    """``GPU_NATIVE_SIM_WRITE_RACES=1``: also watch the global arrays a launch only writes.
    Their stores are proven unique before any launch, so by default they carry no shadow;
    the fuzzers turn this on to check those proofs (a write-write race is otherwise visible
    only as a result that differs on the GPU)."""
    return bool(settings.flag("GPU_NATIVE_SIM_WRITE_RACES", False))


def _accesses(kernel: ir.Kernel) -> dict[int, set[str]]:
    """How each global array parameter is used: load / store / unsafe / atomic (through
    device functions too)."""
    uses: dict[int, set[str]] = {}
    seen: set = set()

    def visit(stmts, binding: dict[int, ir.Var], depth: int) -> None:
        for s in stmts:
            for n in codegen.walk(s):
                ref = getattr(n, "array", None)
                if isinstance(ref, ir.ArrayRef) and ref.ty.space == "global":
                    root = binding.get(id(ref.var), ref.var)
                    kind = ("load" if isinstance(n, ir.Load) else "atomic" if isinstance(
                        n, ir.Atomic) else "unsafe" if getattr(n, "unique", "") == "unsafe"
                            else "store" if isinstance(n, ir.Store) else None)
                    if kind is not None:
                        uses.setdefault(id(root), set()).add(kind)
                if isinstance(n, ir.MatrixOp) and n.op in ("store_matrix", "warpgroup_store",
                                                           "cp_async"):
                    # store_matrix and warpgroup_store write their global destination; cp_async
                    # reads its source.
                    ref = n.operands[1 if n.op == "cp_async" else 0].array
                    if ref.ty.space == "global":
                        kind = ("load" if n.op == "cp_async" else
                                "unsafe" if n.unique == "unsafe" else "store")
                        uses.setdefault(id(binding.get(id(ref.var), ref.var)), set()).add(kind)
                if isinstance(n, ir.Call) and depth < 32:
                    inner = {}
                    for p, a in zip(n.function.params, n.args):
                        if isinstance(a, ir.ArrayRef):
                            inner[id(p)] = binding.get(id(a.var), a.var)
                    key = (id(n.function), tuple(sorted((k, id(v)) for k, v in inner.items())))
                    if key not in seen:
                        seen.add(key)
                        visit(n.function.body, inner, depth + 1)

    visit(kernel.body, {}, 0)
    return uses


def _needs_shadow(kinds: set[str]) -> bool:
    writes = kinds & {"store", "unsafe", "atomic"}
    return "unsafe" in kinds or (bool(writes) and "load" in kinds) or {"store", "atomic"} <= kinds


class SimProgram:
    """A kernel specialisation compiled for the CPU simulator (see :mod:`gpu_native.simulator`).

    Attributes
    ----------
    name : str
        The kernel's name.
    source : str
        The generated Python (what the simulator runs), for reading and debugging.
    """

    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self.name = kernel.name
        self._builder, self._fn = codegen.build(kernel)
        self.source = "\n".join(self._builder.sources)
        self.locations = self._builder.locations
        self.shared_specs = [(d.var.name, d.ty.elem.info, None if d.dynamic else d.shape)
                             for d in kernel.shared]
        uses = _accesses(kernel)
        self.shadowed = {k for k, p in enumerate(kernel.params)
                         if isinstance(p.ty, ir.ArrayType) and _needs_shadow(uses.get(id(p), set()))}
        self.written = {k for k, p in enumerate(kernel.params) if isinstance(p.ty, ir.ArrayType)
                        and uses.get(id(p), set()) & {"store", "unsafe", "atomic"}}

    def location(self, loc: int) -> str:
        return self.locations[loc]

    def run(self, grid: tuple[int, int, int], block: tuple[int, int, int],
            shared_mem_bytes: int, args: list, errors, consts=()) -> None:
        """Run every thread of the launch; write results into the array arguments in place.

        ``args`` holds one entry per kernel parameter: a C-contiguous NumPy array (a
        :class:`~gpu_native.simulator.memory.StridedArray` for a ``Strided`` one; bf16: uint16
        bit patterns; an array of vectors has a last axis of their length), a NumPy scalar, or
        a sequence of a vector's components; ``consts`` one per constant array the kernel reads
        (``kernel.consts``), in the same form, which the kernel never writes.  Device errors go
        to ``errors.fail(site, index, length, block, thread)`` (the first one only) and races to
        ``errors.race(message)``.
        """
        launch = Launch(self, grid, block, shared_mem_bytes, errors)
        if len(consts) != len(self.kernel.consts):
            raise TypeError(f"{self.name}() reads {len(self.kernel.consts)} constant arrays, "
                            f"{len(consts)} given")
        for decl, const_values in zip(self.kernel.consts, consts):
            view = np.asarray(const_values).view()
            view.flags.writeable = False
            launch.consts.append(ConstArray(decl.name, view, decl.ty.elem.info))
        values: list = []
        shadowed = self.shadowed | self.written if write_races_enabled() else self.shadowed
        for k, (param, arg) in enumerate(zip(self.kernel.params, args)):
            ty = param.ty
            if isinstance(ty, ir.ArrayType):
                array = arg if isinstance(arg, StridedArray) else np.asarray(arg)
                shadow = Shadow(array.size, launch.T) if (
                    k in shadowed and launch.races) else None
                if shadow is not None:
                    launch.global_shadows.append(shadow)
                values.append(GlobalArray(param.name, array, ty.elem.info, shadow))
            elif isinstance(ty, ir.VectorType):  # a tuple of its components
                values.append(tuple(_scalar_arg(a, ty.elem.info) for a in arg))
            elif isinstance(ty, ir.StructType):  # its scalars, in order: a tuple of its fields
                values.append(_struct_arg(iter(arg), ty.info))
            else:
                assert isinstance(ty, ir.ScalarType)  # parameters are arrays, scalars, vectors
                values.append(_scalar_arg(arg, ty.info))
        if len(values) != len(self.kernel.params):
            raise TypeError(f"{self.name}() takes {len(self.kernel.params)} arguments, "
                            f"{len(values)} given")
        if launch.nblocks == 0 or launch.T == 0:
            return
        per_chunk = max(1, settings.integer("GPU_NATIVE_SIM_LANES", _LANES_PER_CHUNK, 1)
                        // launch.T)
        if self.kernel.options.cooperative:
            # Every block of a cooperative launch is resident at once (the launcher refused a
            # larger grid), and grid_sync() must see them all: one chunk holds the whole grid.
            per_chunk = launch.nblocks
        with np.errstate(all="ignore"):
            for first in range(0, launch.nblocks, per_chunk):
                chunk = Chunk(launch, first, min(per_chunk, launch.nblocks - first))
                self._fn(chunk, *values)


def _struct_arg(leaves, info) -> tuple:
    out: list = []
    for f in info.fields:
        if f.info.kind == "struct":
            out.append(_struct_arg(leaves, f.info))
        elif f.info.kind == "vector":
            out.append(tuple(_scalar_arg(next(leaves), f.info.elem) for _ in range(f.info.n)))
        else:
            out.append(_scalar_arg(next(leaves), f.info))
    return tuple(out)


def _scalar_arg(value, info):
    if info.name == "bf16":
        if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
            return ops.bits_to_bf16(np.uint16(value))[()]
        return ops.constant(float(value), info)
    if info.kind == "bool":
        return np.bool_(bool(value))
    if info.is_int:
        return ops.constant(int(value), info)
    return ops.value_dtype(info).type(value)


class Launch:
    """What every chunk of one launch shares: its shape, error sink and race reports."""

    def __init__(self, program: SimProgram, grid, block, shared_mem_bytes: int, errors):
        self.program = program
        self.grid = tuple(int(g) for g in (*tuple(grid), 1, 1)[:3])
        self.block = tuple(int(b) for b in (*tuple(block), 1, 1)[:3])
        self.T = math.prod(self.block)
        self.nblocks = math.prod(self.grid)
        self.bdim = tuple(np.int32(b) for b in self.block)
        self.gdim = tuple(np.int32(g) for g in self.grid)
        self.shared_mem_bytes = int(shared_mem_bytes)
        self.errors = errors
        self.failed = False
        self.reported: set = set()
        self.races = races_enabled()
        self.global_shadows: list[Shadow] = []  # the global arrays' (grid_sync() clears them)
        self.consts: list[ConstArray] = []

    def make_shared(self, spec, nblocks: int) -> SharedArray:
        name, info, dims = spec
        if dims is None:
            dims = (self.shared_mem_bytes // info.itemsize,)
        sa = SharedArray(name, info, dims, nblocks)
        if self.races:
            sa.shadow = Shadow(nblocks * sa.size, self.T, sa.size)
        return sa

    def thread_coords(self, gtid: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        gb, tl = divmod(int(gtid), self.T)
        gx, gy, _ = self.grid
        bx, by, _ = self.block
        return ((gb % gx, (gb // gx) % gy, gb // (gx * gy)),
                (tl % bx, (tl // bx) % by, tl // (bx * by)))

    def report(self, key, message: str) -> None:
        """Report a bug the GPU would not show deterministically (once per kind and place)."""
        if key in self.reported:
            return
        self.reported.add(key)
        self.errors.race(message)

    def report_race(self, array, c: Conflict, divergence: tuple[int, int] | None = None) -> None:
        """Report a conflict; ``divergence`` is what :meth:`Chunk._divergence` found of the later
        access (``None``: every live thread of the block ran it), which decides the advice."""
        key = ("race", array.name, c.kind, c.loc, c.other_loc)
        if key in self.reported:
            return
        (b1, t1), (b2, t2) = self.thread_coords(c.thread), self.thread_coords(c.other)
        where = self.program.location
        if array.space == "shared":
            elem = array.element(c.element % array.size)
            what = f"shared array {array.name}[{', '.join(map(str, elem))}] of block {b1}"
            me, other = f"thread {t1}", f"thread {t2}"
        else:
            elem = array.element(c.element)
            what = f"{array.name}[{', '.join(map(str, elem))}]"
            me, other = f"thread {t1} of block {b1}", f"thread {t2} of block {b2}"
        here, there = where(c.loc), where(c.other_loc)
        action = {
            "read-after-write": (f"{me} reads it at {here} after {other} wrote it at {there}"),
            "read-after-atomic": (f"{me} reads it at {here} after {other} updated it atomically "
                                  f"at {there}"),
            "write-after-read": (f"{me} writes it at {here} after {other} read it at {there}"),
            "write-after-write": (f"{me} writes it at {here} and {other} wrote it at {there}"),
            "atomic-vs-plain": (f"{me} updates it atomically at {here} and {other} wrote it "
                                f"with a plain store at {there}"),
            "write-during-async-read": (f"{other} writes it at {there} while the "
                                        f"warpgroup_mma of {me}'s warpgroup at {here} may "
                                        f"still be reading it"),
        }[c.kind]
        if b1 != b2:
            why = ("threads of different blocks are not ordered within one launch; use an "
                   "atomic or give each element one writer")
            if self.program.kernel.options.cooperative:
                why = ("threads of different blocks are ordered only by a grid_sync() between "
                       "the two accesses; add one, use an atomic, or give each element one "
                       "writer")
        elif c.kind == "write-during-async-read":
            why = ("warpgroup_mma reads its shared operands until the warpgroup_wait that "
                   "retires its group; write them only after that wait, and after a "
                   "sync_threads() when another warpgroup's threads write them")
        elif c.kind == "write-after-write":
            why = ("nothing orders the two writes, so the result depends on timing on the "
                   "GPU; give each element one writer or use an atomic")
        else:
            why = self._barrier_advice(c, divergence)
        self.report(key, f"data race on {what}: {action}; {why}")

    def _barrier_advice(self, c: Conflict, divergence: tuple[int, int] | None) -> str:
        """Which barrier orders two accesses of one block: ``sync_threads()``, unless the later
        access is in divergent code (where not every thread of the block can reach one), and
        then ``sync_warp()`` for two threads of one warp."""
        why = ("no sync_threads() lies between the two accesses, so on the GPU the result "
               "depends on timing; add sync_threads() between them")
        if divergence is None:
            return why
        T = self.T
        warp, other = divmod(c.thread % T, 32), divmod(c.other % T, 32)
        if warp[0] != other[0]:
            return (why + " where every thread of the block reaches it: this access is in "
                    "divergent code, so end the branch before the barrier and open another after "
                    "it")
        running, live = divergence
        if not running >> other[1] & 1:
            return ("no barrier lies between the two accesses, so on the GPU the result depends "
                    "on timing; add one between them where both threads run, outside this "
                    "divergent branch (sync_warp() where the whole warp reaches it, "
                    "sync_threads() where the whole block does)")
        call = "sync_warp()" if running == live else f"sync_warp({running:#010x})"
        named = "" if running == live else ", whose mask names the lanes of this warp that run it"
        advice = ("no sync_warp() lies between the two accesses, and the threads of a warp do "
                  "not run in lockstep on the GPU, so the result depends on timing; add "
                  f"{call} between them{named} (sync_threads() cannot be used in divergent code)")
        if T > 32 and c.loc == c.other_loc:
            # One statement reading and writing a shared element (`temp[tid] += temp[tid -
            # offset]` under `if tid >= offset`): in a block of several warps the same step
            # meets other warps' threads too, which no sync_warp() orders.
            advice += ("; if this statement is a step over the whole block (an in-place scan, "
                       "`s[tid] += s[tid - offset]`), a sync_warp() does not order other warps' "
                       "threads: read into a local, call sync_threads() where every thread of "
                       "the block reaches it, then write (or write to a second buffer)")
        return advice


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def compile_kernel(kernel: ir.Kernel) -> SimProgram:
    """Compile one kernel specialisation for the simulator (cached per ``ir.Kernel`` object)."""
    program = _CACHE.get(kernel)
    if program is None:
        program = _CACHE[kernel] = SimProgram(kernel)
    return program
