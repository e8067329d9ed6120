"""The kernel language, declared once: every name a kernel body can use.

Each name is one :class:`~.entry.Entry` (see :mod:`.entry` for the record): where it lives (its namespace: ``gpu_native``, ``math``, the
builtins, the methods of ``x.atomic_ref(i)`` ...), how a kernel uses it (its *form*: a call, a
statement, a type ...), how the checker types it (declaratively for the math library: the
parameters' types and a result rule; otherwise the name of the checker's handler), how the CUDA
emitter spells it, what the simulator runs for it, one line of documentation and the version it
appeared in.  Every consumer reads this table instead of listing names of its own: the checker
(``check/scope.py``, ``check/expressions.py``), the CUDA emitter (``emit/cuda.py``, and
``emit/cnames.py`` for the names a variable must not hide), the simulator
(``simulator/ops.py``, ``simulator/codegen.py``), the host stubs (``lang/intrinsics.py``) and the
reference tables in ``docs/language.md``, which ``python -m gpu_native.lang.reference`` prints
(``--write FILE`` rewrites them between their marker comments; see :mod:`.reference`).

Adding a math function is one :func:`_math` line here.  A construct with a typing rule of its own
names a handler method of the checker (``check``); the handler reads its parameters from here.

This module is shared by the transpiler, the simulator and the docs: it imports none of them,
and nothing of the runtime.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from .entry import FORMS, Param, PerType
from .entry import Entry as Entry  # the checker names it as registry.Entry
from .types import COMPLEXES, SCALARS, VECTORS

__all__ = [
    "ATOMIC_METHODS",
    "ATOMIC_OPS",
    "ATOMIC_REF",
    "AXES",
    "BUILTINS",
    "CMATH",
    "COMPLEX_ATTRIBUTES",
    "COMPLEX_METHODS",
    "ENTRIES",
    "FULL_MASK",
    "GENERATOR_METHODS",
    "GPU_NATIVE",
    "LAYOUT_METHODS",
    "MATH",
    "MATH_OPS",
    "VECTOR_ATOMIC_OPS",
    "VECTOR_COMPONENTS",
    "Entry",
    "MemoryOrder",
    "emitted_names",
]

FULL_MASK = 0xFFFFFFFF
# The longest loop that `unroll(range(...))` unrolls fully: longer ones would bloat the code.
UNROLL_LIMIT = 1024
_WORD_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")  # what match_any / match_all compare


class MemoryOrder(enum.Enum):
    """Memory order of an atomic operation (``order=`` keyword); the default is ``RELAXED``."""

    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"
    SEQ_CST = "seq_cst"


ENTRIES: list[Entry] = []


def _add(entry: Entry) -> Entry:
    if entry.form not in FORMS:  # pragma: no cover - a typo in the table below
        raise ValueError(f"{entry.name}: unknown form {entry.form!r}")
    ENTRIES.append(entry)
    return entry


def _params(spec: str) -> tuple[Param, ...]:
    """``"x y:int mask:int=FULL_MASK"`` → Params (type ``float`` unless given)."""
    out = []
    for item in spec.split():
        item, _, default = item.partition("=")
        name, _, ty = item.partition(":")
        out.append(Param(name, ty or "float", default or None))
    return tuple(out)


def _libm(name: str) -> dict[str, str]:
    """The C math library's pair: ``sqrtf`` for ``f32``, ``sqrt`` for ``f64``."""
    return {"f32": name + "f", "f64": name}


def _math(name: str, doc: str, sim: PerType, params: str = "x", *, result: str = "float",
          cuda: PerType = None, since: str = "0.1.0", nonnegative: bool = False) -> None:
    _add(Entry(name, "math", "call", doc, _params(params), result, "call_math",
               cuda if cuda is not None else _libm(name), sim, since=since,
               nonnegative=nonnegative))


# ---- gpu_native: types ------------------------------------------------------------------------

_KIND_DOC = {"int": "signed integer", "uint": "unsigned integer", "float": "floating point"}
for _info in SCALARS.values():
    _add(Entry(_info.name, "gpu_native", "type",
               "boolean" if _info.kind == "bool" else f"{_info.bits}-bit {_KIND_DOC[_info.kind]}"
               + (" (bfloat16)" if _info.name == "bf16" else ""),
               _params("x:scalar"), _info.name, "call_cast", _info.c_name))
for _ndim in (1, 2, 3):
    _suffix = "" if _ndim == 1 else f"{_ndim}D"
    _add(Entry(f"CUDASlice{_suffix}", "gpu_native", "array type",
               f"read-only {_ndim}-D device array parameter (row-major)", value=(_ndim, False)))
    _add(Entry(f"CUDASliceMut{_suffix}", "gpu_native", "array type",
               f"writable {_ndim}-D device array parameter (row-major)", value=(_ndim, True)))
_add(Entry("Strided", "gpu_native", "array layout",
           "an array parameter that takes non-contiguous views (transposes, step slices): "
           "`CUDASlice2D[f32, Strided]`; its element strides are passed with the launch",
           since="0.1.0"))
_add(Entry("UniqueId", "gpu_native", "index type",
           "a thread's unique id: what `FlatLayout*.uid()` and `BlockLayout*.uid()` return"))
_add(Entry("Const", "gpu_native", "const type",
           "a `@gpu_device` parameter that takes a compile-time constant (a number, a bool or a "
           "tuple of them): the function is specialised per value", since="0.1.0"))

# ---- gpu_native: kernels, layouts, launch coordinates -----------------------------------------

for _ndim in (1, 2, 3):
    _add(Entry(f"Kernel{_ndim}D", "gpu_native", "kernel kind",
               f"a kernel launched over a {_ndim}-D grid of {_ndim}-D blocks", value=_ndim))
_add(Entry("gpu_kernel", "gpu_native", "decorator",
           "marks a kernel: `@gpu_kernel(Kernel1D, bounds_check=True, fastmath=False)`"))
_add(Entry("gpu_device", "gpu_native", "decorator",
           "marks a device function, callable from kernels and other device functions"))
_add(Entry("gpu_struct", "gpu_native", "decorator",
           "marks a class of annotated fields (scalars, vectors, structs) as a struct: a "
           "parameter passed by value, a local `p = P(x=1.0)` (unset fields zero), `p.x` read "
           "and assigned, a device function's argument and result, an array element "
           "(`CUDASlice[P]`, `a[i].x = v`); `P.dtype` is its NumPy dtype (C layout)",
           since="0.1.0"))
for _ndim in (1, 2, 3):
    _add(Entry(f"FlatLayout{_ndim}D", "gpu_native", "layout",
               f"the {_ndim}-D grid as one flat range of thread ids (grid-unique)",
               value=("grid", _ndim)))
for _ndim in (1, 2, 3):
    _add(Entry(f"BlockLayout{_ndim}D", "gpu_native", "layout",
               f"the thread's {_ndim}-D index in its block (block-unique)",
               value=("block", _ndim)))
_add(Entry("uid", "layout", "method", "this thread's unique id in the layout (`i64`; "
           "`.x .y .z` in 2-D and 3-D)", result="UniqueId"))
_add(Entry("grid_stride", "layout", "loop", "`for i in FlatLayout1D.grid_stride(n):` visits "
           "every i in range(n) once, with a grid-stride loop", _params("n:int"), "i64"))
_add(Entry("unroll", "gpu_native", "loop",
           "`for i in unroll(range(...)):` asks the device compiler to unroll the loop: fully "
           "(`#pragma unroll`; the bounds must be constants), or `factor` times",
           _params("iterable:range factor:int=0"), since="0.1.0",
           more=f"A hint, as CUDA's ``#pragma unroll``: the loop means the same on both backends "
                f"(the simulator runs it as written).  Without a factor the trip count must be "
                f"a compile-time constant, at most {UNROLL_LIMIT}; a constant ``factor`` of 1 or more "
                f"unrolls that many iterations at a time, whatever the bounds.  Unroll short "
                "loops whose body indexes per-thread arrays with the counter (a register tile's "
                "inner product): the indices become constants and the arrays stay in "
                "registers."))
for _name, _cuda, _sim, _doc in (
        ("thread_idx", "threadIdx", "_gn.tid({a})", "the thread's index in its block"),
        ("block_idx", "blockIdx", "_gn.bid({a})", "the block's index in the grid"),
        ("block_dim", "blockDim", "_gn.bdim[{a}]", "the block's size"),
        ("grid_dim", "gridDim", "_gn.gdim[{a}]", "the grid's size in blocks")):
    _add(Entry(_name, "gpu_native", "dim3", _doc + " (`.x .y .z`, `i32`)", result="i32",
               cuda=_cuda, sim=_sim))
for _axis, _attr in enumerate("xyz"):
    _add(Entry(_attr, "dim3", "attribute", f"axis {_axis} of a launch coordinate or unique id",
               value=_axis))

# ---- gpu_native: memory, barriers, warps ------------------------------------------------------

_add(Entry("shared_array", "gpu_native", "allocation", "block shared memory of constant shape",
           _params("dtype:type shape:shape swizzle:int=0"),
           more="``shape`` is a compile-time constant.  ``shared_array(f32, 0)`` declares the "
                "dynamic shared array, sized by the launch's ``shared_mem_bytes``.  "
                "``swizzle=128`` (f16/bf16, last axis a multiple of 64, the one before a "
                "multiple of 8) stores the array in the 128-byte swizzle ``warpgroup_mma`` "
                "reads, in the dynamic shared memory (see docs/language.md, Warpgroup "
                "matrices)."))
_add(Entry("local_array", "gpu_native", "allocation",
           "a per-thread array of constant shape (512 KiB at most)",
           _params("dtype:type shape:shape")))
_add(Entry("const_array", "gpu_native", "declaration",
           "a read-only table in constant memory, `NAME = const_array(values, dtype, shape)` at "
           "module level; kernels index `NAME` (1-D to 3-D, 64 KiB per kernel)",
           _params("values:array dtype:type=None shape:shape=None"), cuda="__constant__",
           since="0.1.0",
           more="``values`` are copied when the module runs (at import): later changes to the "
                "array they came from are not seen, and the copy returned is read-only.  The "
                "runtime copies it into the kernel's ``__constant__`` memory when it loads the "
                "kernel.  ``dtype`` and ``shape`` must be readable from the source (constants); "
                "either may be left out when ``values`` is a literal."))
_add(Entry("sync_threads", "gpu_native", "statement",
           "barrier for all threads of the block", check="barrier", cuda="__syncthreads",
           sim="barrier", value="block"))
_add(Entry("sync_warp", "gpu_native", "statement",
           "barrier for the threads of the warp named in `mask`", _params("mask:int=FULL_MASK"),
           check="barrier", cuda="__syncwarp", sim="sync_warp", value="warp"))
for _name, _op, _result, _doc in (
        ("sync_threads_count", "count", "i32", "barrier for all threads of the block; the number "
         "of them whose predicate is true"),
        ("sync_threads_and", "and", "bool", "barrier for all threads of the block; true when the "
         "predicate is true in every one of them"),
        ("sync_threads_or", "or", "bool", "barrier for all threads of the block; true when the "
         "predicate is true in any of them")):
    _add(Entry(_name, "gpu_native", "call", _doc, _params("predicate:bool"), _result,
               "call_barrier_vote", f"__syncthreads_{_op}", "barrier_vote", _op, value="block",
               since="0.1.0"))
for _name, _scope, _doc in (
        ("threadfence", "device", "orders this thread's memory accesses as seen by every thread "
         "of the device"),
        ("threadfence_block", "block", "orders this thread's memory accesses as seen by the "
         "threads of its block"),
        ("threadfence_system", "system", "orders this thread's memory accesses as seen by the "
         "device, the host and peer devices")):
    _add(Entry(_name, "gpu_native", "statement", _doc, check="fence", cuda=f"__{_name}",
               value=_scope, since="0.1.0",
               more="A fence is not a barrier: it waits for nobody.  The simulator runs every "
                    "access in order (sequentially consistent), so a fence changes nothing there "
                    "and a missing fence cannot be detected."))
_add(Entry("grid_sync", "gpu_native", "statement",
           "barrier for every thread of the grid; only in `cooperative=True` kernels",
           check="barrier", cuda="cooperative_groups::this_grid().sync", sim="grid_barrier",
           value="grid", since="0.1.0",
           more="``@gpu_kernel(Kernel1D, cooperative=True)`` kernels are launched with "
                "``cuLaunchCooperativeKernel``, every block resident at once (a larger grid is "
                "refused at launch); ``grid_sync()`` is CUDA's "
                "``cooperative_groups::this_grid().sync()``.  Every thread of the grid must "
                "reach it: a thread that returned earlier (or stopped at a failed check) leaves "
                "the others waiting on the GPU, which the simulator reports."))
for _name, _lane, _cuda, _doc in (
        ("shfl_down", "delta", "__shfl_down_sync", "`value` from the lane `delta` above this one"),
        ("shfl_up", "delta", "__shfl_up_sync", "`value` from the lane `delta` below this one"),
        ("shfl_xor", "lane_mask", "__shfl_xor_sync", "`value` from lane `lane_id() ^ lane_mask`"),
        ("shfl_idx", "src_lane", "__shfl_sync", "`value` from lane `src_lane`")):
    _add(Entry(_name, "gpu_native", "call", _doc,
               _params(f"value:T {_lane}:int width:int=32 mask:int=FULL_MASK"), "T",
               "call_shuffle", _cuda, "shfl"))
_add(Entry("ballot", "gpu_native", "call",
           "a `u32` whose bit k is set when lane k's predicate is true",
           _params("predicate:bool mask:int=FULL_MASK"), "u32", "call_vote", "__ballot_sync",
           "vote"))
_add(Entry("all_sync", "gpu_native", "call", "true when the predicate holds in every lane of "
           "`mask`", _params("predicate:bool mask:int=FULL_MASK"), "bool", "call_vote",
           "__all_sync", "vote"))
_add(Entry("any_sync", "gpu_native", "call", "true when the predicate holds in any lane of "
           "`mask`", _params("predicate:bool mask:int=FULL_MASK"), "bool", "call_vote",
           "__any_sync", "vote"))
_add(Entry("lane_id", "gpu_native", "call", "this thread's lane in its warp, 0..31",
           result="i32", check="call_lane_id", cuda="gn_lane_id", sim="lane_id"))
_add(Entry("activemask", "gpu_native", "call", "a `u32` whose bit k is set when lane k of this "
           "warp executes this call with this thread", result="u32", check="call_activemask",
           cuda="__activemask", sim="activemask", since="0.1.0",
           more="The GPU may run the lanes of a divergent warp in smaller groups than the "
                "simulator (which runs every thread that takes a branch together), so the mask "
                "can name fewer lanes there; use it as a hint, not to decide who takes part."))
_add(Entry("match_any", "gpu_native", "call", "a `u32` of the lanes in `mask` whose `value` has "
           "the same bits as this lane's", _params("value:T mask:int=FULL_MASK"), "u32",
           "call_match", "__match_any_sync", "match", value=_WORD_TYPES, since="0.1.0", arch=70))
_add(Entry("match_all", "gpu_native", "call", "`mask` when every lane in `mask` has the same bits "
           "in `value`, else 0", _params("value:T mask:int=FULL_MASK"), "u32", "call_match",
           "gn_match_all", "match", value=_WORD_TYPES, since="0.1.0", arch=70,
           more="CUDA's ``__match_all_sync`` also sets a predicate; it is true exactly when the "
                "result is nonzero (the calling lane is in its own ``mask``), so gpu_native "
                "returns the mask alone: test ``match_all(v) != 0``."))
_add(Entry("FULL_MASK", "gpu_native", "constant", "the mask of all 32 lanes of a warp",
           result="u32", value=FULL_MASK))
_add(Entry("warp_size", "gpu_native", "constant", "the number of threads of a warp, 32: a "
           "literal, typed where it is used like any other", value=32, since="0.1.0"))
_add(Entry("unsafe", "gpu_native", "context",
           "`with unsafe():` allows stores through indices the compiler cannot prove unique",
           more="Races inside an ``unsafe`` block are the programmer's responsibility; bounds "
                "are still checked."))

# ---- gpu_native: warp matrix multiply-accumulate and asynchronous copies ---------------------
# A fragment is the last axis of a local_array: its element type and extent are the fragment's
# type (f16/bf16 A: 8 elements, B: 4; f32 accumulator: 4, for mma.m16n8k16; f32 A: 4, B: 2 for
# the tf32 mma.m16n8k8), and the indices
# before it pick one fragment of an array of them.  See docs/language.md, "Warp matrices".

_FRAG_DOC = ("Lane l = 4g + t holds, of the 16 x 16 A tile, rows g and g + 8 at columns 2t, "
             "2t + 1, 2t + 8, 2t + 9 (elements 0-1: row g, cols 2t..; 2-3: row g + 8; 4-5: row "
             "g, cols 2t + 8..; 6-7: row g + 8, cols 2t + 8..); of the 16 x 8 B tile, column g "
             "at rows 2t, 2t + 1, 2t + 8, 2t + 9; of the 16 x 8 accumulator, row g at columns "
             "2t, 2t + 1 (elements 0-1) and row g + 8 (elements 2-3), as PTX's mma.m16n8k16.")
_TF32_DOC = ("With ``f32`` fragments (tf32, ``mma.m16n8k8``): of the 16 x 8 A tile, lane 4g + t "
             "holds rows g, g + 8, g, g + 8 at columns t, t, t + 4, t + 4 (elements 0-3); of the "
             "8 x 8 B tile, column g at rows t and t + 4; the accumulator as above.  Each input "
             "is rounded to tf32 (10 fraction bits, to nearest, ties away from zero: "
             "``cvt.rna.tf32.f32``) as the product is issued, on the GPU and the simulator.")
_add(Entry("ldmatrix", "gpu_native", "statement",
           "warp-wide: load `num` (1, 2, 4) 8 x 8 matrices of 16-bit elements from shared "
           "memory into the fragment `frag[frag_index]`; each lane gives `src[src_index]`, the "
           "first of one row's 8 elements", _params(
               "frag:array frag_index:int src:array src_index:int num:int=4 trans:bool=False"),
           "None", "matrix_op", "gn_ldmatrix", "ldmatrix", since="0.1.0", arch=75,
           more="PTX ``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``: lanes 8j .. 8j "
                "+ 7 give the rows of matrix j; lane 4g + t receives elements 2j, 2j + 1 of "
                "its fragment from row g, columns 2t, 2t + 1 of matrix j (with ``trans=True``: "
                "column g, rows 2t, 2t + 1).  ``frag`` is a ``local_array`` of the source's "
                "16-bit type whose last axis holds at least ``2 * num`` elements; "
                "``frag_index`` indexes its other axes (``()`` for none).  Every lane's 8 "
                "elements are bounds checked (the lanes that ``num`` < 4 leaves unused too), "
                "and must be 16-byte aligned: a row's first column a multiple of 8, the row "
                "length of ``src`` too (checked with the bounds checks, unless the checker sees "
                "both: a column such as ``(chunk ^ (row & 7)) * 8``).  Every lane of the warp "
                "must execute it."))
_add(Entry("mma_sync", "gpu_native", "statement",
           "warp-wide `acc[acc_index] += a[a_index] @ b[b_index]`: one tensor-core "
           "multiply-accumulate, 16 x 8 x 16 for f16 or bf16 inputs (`mma.sync.m16n8k16`), "
           "16 x 8 x 8 for f32 inputs multiplied as tf32 (`mma.sync.m16n8k8`); f32 accumulator",
           _params("acc:array acc_index:int a:array a_index:int b:array b_index:int"), "None",
           "matrix_op", "gn_mma_m16n8k16", "mma", since="0.1.0", arch=80,
           more="``a`` and ``b`` are ``local_array`` fragments of one type: ``f16`` or "
                "``bf16`` with last axes of 8 and 4 elements, or ``f32`` (tf32) with 4 and 2; "
                "``acc`` an ``f32`` one of 4.  " + _FRAG_DOC + "  " + _TF32_DOC + "  Products "
                "of f16, bf16 or tf32 numbers are exact in f32; the simulator sums each of them "
                "and the accumulator exactly and rounds once, which the tensor cores match to "
                "within a few f32 ulps.  Every lane of the warp must execute it."))
_add(Entry("store_matrix", "gpu_native", "statement",
           "warp-wide: store the 16 x 8 accumulator fragment `acc[acc_index]` to the tile of "
           "the 2-D array `dst` whose top-left element is `dst[dst_index]` (converted to "
           "`dst`'s type)", _params("dst:array dst_index:int acc:array acc_index:int"), "None",
           "matrix_op", "gn_store_matrix", "store_matrix", since="0.1.0",
           more="Lane 4g + t writes rows ``r + g`` and ``r + g + 8`` at columns ``c + 2t`` and "
                "``c + 2t + 1``: the lanes of one warp write the 128 elements of the tile.  "
                "Outside ``with unsafe():`` the checker proves that no two tiles meet: "
                "``dst_index`` must be the same in every lane of the warp (from ``thread_idx.x "
                "// 32``, ``block_idx``, loop counters and uniform values, never the lane), the "
                "block one row of threads or rows of whole warps (``assert block_dim.y == 1`` "
                "in a Kernel2D), and the origins of two warps or two calls 16 rows or 8 "
                "columns apart (``(warp // WARPS_N) * 64 + i * 16``); ``expand --proofs`` "
                "names the rule.  The tile's corners are bounds checked in every lane."))
_add(Entry("cp_async", "gpu_native", "statement",
           "copy `nbytes` (4, 8 or 16) bytes from the global array `src` at `src[src_index]` to "
           "the shared array `dst` at `dst[dst_index]` without waiting (PTX `cp.async`)",
           _params("dst:array dst_index:int src:array src_index:int nbytes:int"), "None",
           "matrix_op", "gn_cp_async", "cp_async", since="0.1.0", arch=80,
           more="The bytes are consecutive elements along the last axis of both arrays, which "
                "must have one element type; both ends of both ranges are bounds checked, and "
                "both addresses must be aligned to ``nbytes`` (checked with the bounds checks; "
                "the shared destination's is proven where its row length and last index are "
                "visibly multiples of ``nbytes``, the global source's too where a shape contract "
                "makes its row length a multiple of ``nbytes`` (``assert a.shape[1] % 8 == 0``), "
                "with its pointer checked by the launcher).  The copy belongs to the group "
                "the next ``cp_async_commit()`` closes and has landed once ``cp_async_wait(n)`` "
                "returns with at most ``n`` newer groups pending; then ``sync_threads()`` makes "
                "it visible to the block.  The destination must be written uniquely like a "
                "shared store (a ``BlockLayout`` uid) or inside ``with unsafe():``."))
_add(Entry("cp_async_commit", "gpu_native", "statement",
           "close the group of this thread's `cp_async` copies issued since the last commit",
           (), "None", "matrix_op", "gn_cp_async_commit", "cp_async_commit", since="0.1.0", arch=80))
_add(Entry("cp_async_wait", "gpu_native", "statement",
           "wait until at most `n` (a constant) of this thread's committed `cp_async` groups "
           "are still in flight", _params("n:int=0"), "None", "matrix_op", "gn_cp_async_wait",
           "cp_async_wait", since="0.1.0", arch=80,
           more="The simulator performs a group's copies here (reading the source when the copy "
                "was issued), so reading a destination before its wait sees the old contents."))

# ---- gpu_native: tensor memory accelerator copies (sm_90) -------------------------------------
# See check/tma.py and docs/language.md, "Tensor copies (TMA)".

_add(Entry("tma_load", "gpu_native", "statement",
           "copy the tile of the 2-D global array `src` whose top-left element is "
           "`src[src_index]` into the whole 2-D slice `dst[dst_index]` of a swizzled shared "
           "array, by the GPU's tensor memory accelerator, without waiting (PTX "
           "`cp.async.bulk.tensor`; sm_90)",
           _params("dst:array dst_index:int src:array src_index:int"), "None",
           "matrix_op", "gn_tma_load_2d", "tma_load", since="0.1.0", arch=90,
           more="``dst`` is a ``shared_array(T, shape, swizzle=128)`` of f16 or bf16 and "
                "``dst_index`` its leading indices (a stage of a ring; ``()`` for a 2-D array): "
                "the copy fills the slice's R x C elements (R at most 256), in the 128-byte "
                "swizzle ``warpgroup_mma`` reads.  ``src`` is a read-only 2-D kernel parameter "
                "of the same type, its rows a multiple of 16 bytes and its start 16-byte "
                "aligned (the launcher checks both, and describes it to the hardware once per "
                "array); the tile's first and last elements are bounds checked.  One thread "
                "issues the copy (``if thread_idx.x == 0:``): outside ``with unsafe():`` the "
                "checker proves that no two threads write one slice.  The copy has landed once "
                "``tma_wait(dst, dst_index)`` returns.  The simulator reads the source when "
                "the copy is issued and writes the slice at the first ``tma_wait`` of it; its "
                "race detector reports any thread's access to the slice while the copy is in "
                "flight, and a read before the reader's own ``tma_wait``."))
_add(Entry("tma_wait", "gpu_native", "statement",
           "wait until the `tma_load` copies into the slice `dst[dst_index]` issued since the "
           "last wait of it have landed",
           _params("dst:array dst_index:int"), "None",
           "matrix_op", "gn_mbar_wait", "tma_wait", since="0.1.0", arch=90,
           more="Each slice of a ``tma_load`` destination has its own completion barrier (a "
                "shared-memory ``mbarrier``, initialised when the kernel starts) and each "
                "thread counts its waits of it, so every thread that reads a slice must wait "
                "for each fill of it once, in order: the pattern of a pipeline where all "
                "threads wait for stage ``kt % STAGES`` in step ``kt``.  The thread that "
                "issued a fill completes it at its own wait, so the issuing thread waits too, "
                "no later than the others.  Refilling a slice is ordered after every thread's "
                "reads of it by a ``sync_threads()`` (and, for ``warpgroup_mma`` reads, its "
                "``warpgroup_wait``), as for any shared store; the simulator reports a wait "
                "that the GPU would pass before its copies land (a thread that skipped a "
                "wait) and one that could never return."))

# ---- gpu_native: Hopper warpgroup matrix multiply-accumulate (sm_90a) ------------------------
# See check/warpgroup.py and docs/language.md, "Warpgroup matrices".

_WG_LAYOUT = ("Thread t of the warpgroup (its 128 threads, 4 consecutive warps) holds rows 16 * "
              "(t // 32) + (t % 32) // 4 (elements 4j, 4j + 1) and that row + 8 (elements 4j + "
              "2, 4j + 3), at columns 8j + 2 * (t % 4) and the next, as PTX's wgmma "
              "accumulator.")
_add(Entry("warpgroup_arrive", "gpu_native", "statement",
           "warpgroup-wide: order this warpgroup's register and shared-memory accesses before "
           "the `warpgroup_mma` that follow (PTX `wgmma.fence`)", (), "None", "matrix_op",
           "gn_wgmma_fence", "warpgroup_arrive", since="0.1.0",
           more="An ordering no-op on the simulator.  Every thread of the warpgroup must "
                "execute it."))
_add(Entry("warpgroup_mma", "gpu_native", "statement",
           "warpgroup-wide `acc += a[a_index: 64 x 16] @ b[b_index: 16 x n]` from swizzled "
           "shared arrays (PTX `wgmma.mma_async.m64nNk16`, f16 or bf16 in, f32 accumulator; "
           "sm_90 only)",
           _params("acc:array a:array a_index:int b:array b_index:int n:int"), "None",
           "matrix_op", "gn_wgmma", "warpgroup_mma", since="0.1.0",
           more="``a`` and ``b`` are ``shared_array(T, shape, swizzle=128)`` arrays of one "
                "16-bit type: A is the 64 x 16 slice whose first element is ``a[a_index]`` "
                "(its row a multiple of 8, its column of 16), B the 16 x n slice from "
                "``b[b_index]`` (row a multiple of 8, column of 64; n 64, 128, 192 or 256), "
                "both checked at their corners.  ``acc`` is a ``local_array(f32, (n // 2,))``. "
                + _WG_LAYOUT + "  Issued asynchronously: ``warpgroup_commit()`` closes a "
                "group and ``warpgroup_wait(n)`` waits for it; read ``acc`` and overwrite the "
                "tiles only after that.  The simulator computes each product in float64 and "
                "rounds it to f32 at once.  A kernel that uses it compiles for sm_90a and runs "
                "on sm_90 GPUs only.  Every thread of the warpgroup must execute it."))
_add(Entry("warpgroup_commit", "gpu_native", "statement",
           "warpgroup-wide: close the group of `warpgroup_mma` issued since the last commit "
           "(PTX `wgmma.commit_group`)", (), "None", "matrix_op", "gn_wgmma_commit",
           "warpgroup_commit", since="0.1.0",
           more="The simulator multiplies at once; its race detector keeps the group's shared "
                "reads open until the ``warpgroup_wait`` that retires them."))
_add(Entry("warpgroup_wait", "gpu_native", "statement",
           "warpgroup-wide: wait until at most `n` (a constant) committed `warpgroup_mma` groups "
           "are still running (PTX `wgmma.wait_group`)", _params("n:int=0"), "None",
           "matrix_op", "gn_wgmma_wait", "warpgroup_wait", since="0.1.0",
           more="The simulator multiplies at once; its race detector reports a write into a "
                "retired group's shared operands made, or a ``cp_async`` into them still in "
                "flight, while the group ran."))
_add(Entry("warpgroup_store", "gpu_native", "statement",
           "warpgroup-wide: store the 64 x n accumulator `acc` of `warpgroup_mma` to the tile of "
           "the 2-D global f32, f16 or bf16 array `dst` whose top-left element is "
           "`dst[dst_index]`; with `staging` (a swizzled shared array of dst's 16-bit type), "
           "through its 64 x n region at `staging_index`, then in coalesced 16-byte stores",
           _params("dst:array dst_index:int acc:array staging:array=None "
                   "staging_index:int=None"), "None",
           "matrix_op", "gn_wgmma_store", "warpgroup_store", since="0.1.0",
           more=_WG_LAYOUT + "  The tile's corners are bounds checked.  Outside ``with "
                "unsafe():`` the checker proves that no two tiles meet: the origin must be the "
                "same in the warpgroup's 128 threads (built from ``thread_idx.x // 128``, block "
                "coordinates, loop counters, uniform values) and origins must step by 64 rows "
                "or n columns.  Each thread stores its elements by pairs where they are aligned "
                "to a pair.  Every thread of the warpgroup must execute it.  With ``staging``, "
                "each thread writes its elements into the staging region (the 128-byte swizzle "
                "keeps that free of bank conflicts), the warpgroup waits for its own threads "
                "(a named barrier), and each thread then copies 16-byte row chunks of the "
                "region to ``dst``, so that a warp writes whole rows: 32-byte sectors filled, "
                "where the direct store fills half of each for a 16-bit output.  The staging "
                "region must be free: no ``warpgroup_mma`` of any warpgroup still reading it "
                "(``warpgroup_wait(0)`` then ``sync_threads()`` when it is a ring stage), and "
                "regions of different warpgroups proven apart (index it by ``thread_idx.x // "
                "128``).  Its contents are overwritten.  Where ``dst`` is not 16-byte aligned "
                "(its start or row length), the chunks are copied element by element."))

# ---- gpu_native: bit manipulation ------------------------------------------------------------

_BIT_TYPES = ("i32", "u32", "i64", "u64")  # the operand types of the bit counts and brev
_BITS_DOC = "; `x` is an `i32`, `u32`, `i64` or `u64`"
for _name, _doc, _cuda32, _cuda64, _result in (
        ("popc", "the number of set bits of `x`", "__popc", "__popcll", "i32"),
        ("clz", "the number of zero bits above the highest set bit of `x` (its width for 0)",
         "__clz", "__clzll", "i32"),
        ("ctz", "the number of zero bits below the lowest set bit of `x` (its width for 0)",
         "gn_ctz32", "gn_ctz64", "i32"),
        ("ffs", "the position of the lowest set bit of `x`, counting from 1 (0 for 0)", "__ffs",
         "__ffsll", "i32"),
        ("brev", "`x` with its bits in reverse order, of `x`'s type", "__brev", "__brevll", "T")):
    _add(Entry(_name, "gpu_native", "call", _doc + _BITS_DOC, _params("x:int"), _result,
               "call_bits", {"i32": _cuda32, "u32": _cuda32, "i64": _cuda64, "u64": _cuda64},
               {"i32": f"{_name}32", "u32": f"{_name}32", "i64": f"{_name}64",
                "u64": f"{_name}64"}, value=_BIT_TYPES, since="0.1.0"))
_add(Entry("byte_perm", "gpu_native", "call", "byte k of the result is byte `(selector >> 4k) & 7` "
           "of the 8 bytes of `y:x` (x is bytes 0-3)", _params("x:u32 y:u32 selector:u32"),
           "u32", "call_bits", "gn_byte_perm", "byte_perm", value=("u32",), since="0.1.0",
           more="The operands are 32-bit integers (``i32`` operands are taken as their bits). "
                "Bit 3 of each selector nibble is ignored, as CUDA documents ``__byte_perm``."))
for _name, _doc in (
        ("funnelshift_l", "the high 32 bits of `hi:lo << (shift & 31)`"),
        ("funnelshift_lc", "the high 32 bits of `hi:lo << min(shift, 32)`"),
        ("funnelshift_r", "the low 32 bits of `hi:lo >> (shift & 31)`"),
        ("funnelshift_rc", "the low 32 bits of `hi:lo >> min(shift, 32)`")):
    _add(Entry(_name, "gpu_native", "call", _doc, _params("lo:u32 hi:u32 shift:u32"), "u32",
               "call_bits", f"__{_name}", _name, value=("u32",), since="0.1.0",
               more="The operands are 32-bit integers (``i32`` operands are taken as their "
                    "bits)."))
_add(Entry("bitcast", "gpu_native", "call", "the bits of `x` read as a `dtype` of the same width "
           "(`bitcast(x, u32)` for an `f32` x)", _params("x:scalar dtype:type"), "dtype",
           "call_bitcast", "gn_bitcast<{R}>", "bitcast", since="0.1.0",
           more="Any two scalar types of one width but ``bool_``: ``f32``/``i32``/``u32``, "
                "``f64``/``i64``/``u64``, ``f16``/``bf16``/``i16``/``u16``, ``i8``/``u8``.  "
                "Nothing is converted or rounded; NaN payloads are kept."))

# ---- small vectors ----------------------------------------------------------------------------

for _vinfo in VECTORS.values():
    _add(Entry(_vinfo.name, "gpu_native", "vector type",
               f"{_vinfo.n} x {_vinfo.elem.name} vector: `{_vinfo.name}("
               f"{', '.join(_vinfo.components)})`, `{_vinfo.name}(s)` (every component s), "
               f"`{_vinfo.name}()` (zero), `{_vinfo.name}(v)` (converts another {_vinfo.n}-vector)",
               _params("*args"), _vinfo.name, "call_vector_make", _vinfo.c_name, value=_vinfo,
               more="Arithmetic ``+ - * /`` is elementwise between two vectors of one type, and "
                    "with a scalar operand broadcast to every component (a scalar must promote "
                    "to the element type: ``vec3f * f64`` is refused); unary ``-``; components "
                    "``.x .y .z .w`` (a local's components can be assigned).  An array of them "
                    "is a NumPy array with a last axis of the vector's length."))
for _name, _doc, _params_text, _result in (
        ("dot", "the sum of the products of the components, x first: `a.x * b.x + a.y * b.y "
         "+ ...`", "a:vector b:vector", "T"),
        ("cross", "the cross product of two 3-vectors", "a:vector b:vector", "vector"),
        ("length", "the Euclidean length `sqrt(dot(v, v))` of a float vector", "v:vector", "T"),
        ("length_sq", "the squared length `dot(v, v)`", "v:vector", "T"),
        ("normalize", "`v / length(v)`, or the zero vector when the length is not positive "
         "(as Warp's `normalize`)", "v:vector", "vector")):
    _add(Entry(_name, "gpu_native", "call", _doc, _params(_params_text), _result, "call_vector",
               f"gn_{_name}", _name, since="0.1.0"))
_add(Entry("load_vec4", "gpu_native", "call",
           "the four elements `x[..., j]` to `x[..., j + 3]` of an `f32` or `i32` array (global "
           "or shared) as one 16-byte load: a `vec4f` or `vec4i`; `j` must be a multiple of 4",
           _params("x:array *indices:int"), "vector", "call_load_vec", "gn_vload",
           "load_vec", value=4, since="0.1.0",
           more="The bounds check covers all four elements.  The address must be 16-byte "
                "aligned: a shared array's is when its rows are a multiple of 4 elements and "
                "``j`` is a multiple of 4 that the checker can see (``4 * q``, ``ty * 8 + "
                "4 * h``, a loop counter stepping by 4); a global array's (its pointer, the "
                "row length and ``j``) is checked at run time with the bounds checks.  A "
                "misaligned or out-of-range load is a ``KernelIndexError``."))
_add(Entry("load_vec2", "gpu_native", "call",
           "the two elements `x[..., j]` and `x[..., j + 1]` of an `f16` or `bf16` array (global "
           "or shared) as one 4-byte load: a `vec2h` or `vec2bf`; `j` must be even",
           _params("x:array *indices:int"), "vector", "call_load_vec", "gn_vload",
           "load_vec", value=2, since="0.1.0",
           more="The bounds and alignment rules are ``load_vec4``'s, with pairs: the address "
                "must be 4-byte aligned (proven for a shared array with rows of an even length "
                "and an index visibly even, or for a global one by a shape contract such as "
                "``assert a.shape[0] % 2 == 0``; checked at run time otherwise)."))
_add(Entry("fma", "gpu_native", "call",
           "`a * b + c` of packed 16-bit pairs (`vec2h`, `vec2bf`), each lane rounded once: "
           "CUDA's `__hfma2`", _params("a:vector b:vector c:vector"), "vector", "call_vector",
           "__hfma2", "fma", since="0.1.0",
           more="All three operands are vectors of one packed type; for scalars use "
                "``math.fma``."))
for _axis, _attr in enumerate("xyzw"):
    _add(Entry(_attr, "vector", "attribute", f"component {_axis} of a vector (a local's can be "
               "assigned)", value=_axis, since="0.1.0"))

# ---- complex numbers ---------------------------------------------------------------------------

for _cinfo in COMPLEXES.values():
    _add(Entry(_cinfo.name, "gpu_native", "complex type",
               f"complex number of two {_cinfo.elem.name} (NumPy's {_cinfo.name}): "
               f"`{_cinfo.name}(re, im)`, `{_cinfo.name}(x)` (a real or complex number), "
               f"`{_cinfo.name}()` (zero)", _params("real:scalar=0 imag:scalar=0"), _cinfo.name,
               "call_complex_make", _cinfo.c_name, value=_cinfo, since="0.1.0",
               more="Operators ``+ - * /``, unary ``-``, ``==`` and ``!=``, ``abs(z)``; a real "
                    "operand is promoted to complex (``f32`` into ``complex64``, ``f64`` into "
                    "``complex128``, as NumPy promotes; an integer type whose values the part "
                    "type cannot all hold is refused).  ``z.real``, ``z.imag``, "
                    "``z.conjugate()`` and the ``cmath`` functions.  An array of them is a NumPy "
                    "array of the same dtype."))
for _part, _attr in enumerate(("real", "imag")):
    _add(Entry(_attr, "complex", "attribute", f"the {'real' if _part == 0 else 'imaginary'} "
               "part of a complex number (read only), of its part type", value=_part,
               since="0.1.0"))
_add(Entry("conjugate", "complex", "method", "the complex conjugate, `re - im j`", result="T",
           check="call_conjugate", cuda="gn_cconj", sim="conj", since="0.1.0"))


def _cmath(name: str, doc: str, params: str = "z:complex", result: str = "complex") -> None:
    _add(Entry(name, "cmath", "call", doc, _params(params), result, "call_cmath", f"gn_c{name}",
               name, since="0.1.0"))


_cmath("exp", "e ** z: `exp(re) * (cos(im), sin(im))`")
_cmath("log", "natural logarithm (one argument), branch cut along the negative real axis: "
       "`(log(abs(z)), phase(z))`")
_cmath("log10", "base-10 logarithm: `log(z) / log(10)`")
_cmath("sqrt", "principal square root (real part >= 0), without cancellation")
_cmath("sin", "sine: `(sin(re) cosh(im), cos(re) sinh(im))`")
_cmath("cos", "cosine: `(cos(re) cosh(im), -sin(re) sinh(im))`")
_cmath("tan", "tangent: `-1j * tanh(1j * z)`")
_cmath("sinh", "hyperbolic sine: `(sinh(re) cos(im), cosh(re) sin(im))`")
_cmath("cosh", "hyperbolic cosine: `(cosh(re) cos(im), sinh(re) sin(im))`")
_cmath("tanh", "hyperbolic tangent: `(sinh(2re), sin(2im)) / (cosh(2re) + cos(2im))`, and "
       "`±1` with an exponentially small imaginary part for |re| > 20")
_cmath("asin", "inverse sine, branch cuts along the real axis beyond ±1: `-1j * asinh(1j * z)`")
_cmath("acos", "inverse cosine, branch cuts along the real axis beyond ±1: Kahan's "
       "`(2 atan2(s.real, t.real), asinh((t.conjugate() * s).imag))`, `s = sqrt(1 - z)`, "
       "`t = sqrt(1 + z)`")
_cmath("atan", "inverse tangent, branch cuts along the imaginary axis beyond ±1j: "
       "`-1j * atanh(1j * z)`")
_cmath("asinh", "inverse hyperbolic sine, branch cuts along the imaginary axis beyond ±1j: "
       "Kahan's `(asinh((s.conjugate() * t).imag), atan2(im, (s * t).real))`, "
       "`s = sqrt(1 - 1j * z)`, `t = sqrt(1 + 1j * z)`")
_cmath("acosh", "inverse hyperbolic cosine, branch cut along the real axis below 1: Kahan's "
       "`(asinh((s.conjugate() * t).real), 2 atan2(s.imag, t.real))`, `s = sqrt(z - 1)`, "
       "`t = sqrt(z + 1)`")
_cmath("atanh", "inverse hyperbolic tangent, branch cuts along the real axis beyond ±1: "
       "`(±log1p(4|re| / ((1 - |re|)² + im²)) / 4, atan2(2 im, (1 - re)(1 + re) - im²) / 2)` "
       "(± the sign of `re`)")
_cmath("phase", "the argument, `atan2(im, re)`, in [-π, π]", result="float")
_cmath("polar", "`(abs(z), phase(z))`, a tuple", result="tuple[float, float]")
_cmath("rect", "the complex number of modulus `r` and argument `phi`: "
       "`(r cos(phi), r sin(phi))`; `complex64` for `f32` operands, else `complex128`",
       "r:float phi:float")
for _name, _doc in (("isnan", "either part is a NaN"), ("isinf", "either part is infinite"),
                    ("isfinite", "both parts are finite")):
    _cmath(_name, _doc, result="bool")
for _name, _value in (("pi", "π"), ("e", "e"), ("tau", "2π"), ("inf", "infinity"),
                      ("nan", "not a number")):
    _add(Entry(_name, "cmath", "constant", f"{_value} (a float), folded in at compile time",
               value=getattr(math, _name), since="0.1.0"))

# ---- random numbers: rng = philox(seed, subsequence, offset) ----------------------------------

_add(Entry("philox", "gpu_native", "generator",
           "a Philox4x32-10 random number generator (counter-based, as cuRAND's): each draw "
           "takes the next block of `(seed, subsequence)` from block `offset` on",
           _params("seed:int subsequence:int=0 offset:int=0"), "generator",
           "declare_generator", since="0.1.0",
           more="``seed``, ``subsequence`` and ``offset`` are integers taken as ``u64``.  Give "
                "each thread its own subsequence (its unique id) and each launch its own seed "
                "or offset.  A draw is a method: ``rng.uniform()``, ``rng.normal()``, "
                "``rng.randint(n)``, ``rng.random_u32()``, and the four-number "
                "``rng.uniform4()`` and ``rng.normal4()``; each advances the generator by one "
                "block (``randint`` by more, rarely).  The simulator draws the same numbers, "
                "bit for bit."))
_add(Entry("random_u32", "generator", "method", "the block's first word: a uniformly random "
           "`u32`", result="u32", check="call_generator", cuda="gn_philox_u32", sim="random_u32",
           since="0.1.0"))
_add(Entry("uniform", "generator", "method", "a uniformly random float in [0, 1): `k / 2**24` "
           "(`f32`) or `k / 2**53` (`f64`), every k as likely", _params("dtype:type=f32"),
           "dtype", "call_generator",
           {"f32": "gn_philox_uniform_f32", "f64": "gn_philox_uniform_f64"},
           {"f32": "uniform_f32", "f64": "uniform_f64"}, since="0.1.0"))
_add(Entry("normal", "generator", "method", "a standard normal float (Box-Muller in `f64`; "
           "`f32` rounds it)", _params("dtype:type=f32"), "dtype", "call_generator",
           {"f32": "gn_philox_normal_f32", "f64": "gn_philox_normal_f64"},
           {"f32": "normal_f32", "f64": "normal_f64"}, since="0.1.0"))
_add(Entry("randint", "generator", "method", "a uniformly random integer in [0, n), without "
           "modulo bias, typed like `n`; 1 <= n <= 2**32 - 1", _params("n:int"), "T",
           "call_generator", "gn_philox_randint<{T}>", "randint", since="0.1.0"))
_add(Entry("uniform4", "generator", "method", "four uniformly random floats in [0, 1), one from "
           "each word of the block as `uniform()` makes one from `x0`: a `vec4f` (cuRAND's "
           "`curand_uniform4`)", result="vec4f", check="call_generator",
           cuda="gn_philox_uniform4", sim="uniform4", since="0.1.0"))
_add(Entry("normal4", "generator", "method", "four standard normal floats: Box-Muller on the "
           "block's word pairs `x0 x1` and `x2 x3`, in `f64` and rounded: a `vec4f` (cuRAND's "
           "`curand_normal4`)", result="vec4f", check="call_generator",
           cuda="gn_philox_normal4", sim="normal4", since="0.1.0"))

# ---- atomics: methods of x.atomic_ref(i) ------------------------------------------------------

_INT_ATOMIC = ("i32", "u32", "i64", "u64")
_NUMBER_ATOMIC = (*_INT_ATOMIC, "f32", "f64")  # the element types of most atomics
# The atomics an array of vectors has: one atomic of the element type per component (Warp's
# wp.atomic_add on a vec3), so the vectors of the element types the scalar atomic takes.
VECTOR_ATOMIC_OPS = ("add", "sub", "min", "max")


def _vector_atomic(op: str, types: tuple[str, ...]) -> tuple[str, ...]:
    """The element types of atomic ``op``: ``types``, and where it works component by component
    the vectors of them (``vec2h``/``vec2bf`` for an ``f16``/``bf16`` add)."""
    if op not in VECTOR_ATOMIC_OPS:
        return types
    return (*types, *(v.name for v in VECTORS.values() if v.elem.name in types))


_add(Entry("MemoryOrder", "gpu_native", "enum", "memory order of an atomic (`order=`): "
           + ", ".join(m.name for m in MemoryOrder) + "; the default is RELAXED",
           value=MemoryOrder))
ATOMIC_REF = _add(Entry("atomic_ref", "array", "method", "the element `x[i]` as a target of "
                        "atomics (writable global or shared arrays)", _params("*indices:int"),
                        "atomic reference"))
_atomic_fn: PerType
for _name, _op, _atomic_fn, _types, _doc in (
        ("fetch_add", "add", {"*": "atomicAdd", "vec2h": "atomicAdd", "vec2bf": "atomicAdd",
                              "vector": "gn_vatomic_add"},
         (*_NUMBER_ATOMIC, "f16", "bf16"), "add `value`"),
        ("fetch_sub", "sub", {"*": "atomicAdd", "vector": "gn_vatomic_sub"}, _NUMBER_ATOMIC,
         "subtract `value`"),
        ("fetch_min", "min", {"*": "atomicMin", "f32": "gn_atomic_min", "f64": "gn_atomic_min",
                              "vector": "gn_vatomic_min"},
         _NUMBER_ATOMIC, "store the minimum of the element and `value`"),
        ("fetch_max", "max", {"*": "atomicMax", "f32": "gn_atomic_max", "f64": "gn_atomic_max",
                              "vector": "gn_vatomic_max"},
         _NUMBER_ATOMIC, "store the maximum of the element and `value`"),
        ("fetch_and", "and", "atomicAnd", _INT_ATOMIC, "bitwise and with `value`"),
        ("fetch_or", "or", "atomicOr", _INT_ATOMIC, "bitwise or with `value`"),
        ("fetch_xor", "xor", "atomicXor", _INT_ATOMIC, "bitwise xor with `value`"),
        ("exchange", "exchange", "atomicExch", _NUMBER_ATOMIC, "store `value`")):
    _add(Entry(_name, "atomic_ref", "method", _doc + "; return the old value" + (
                   "; on an array of vectors, one atomic per component" if _op in VECTOR_ATOMIC_OPS else ""),
               _params("value:T order:MemoryOrder=MemoryOrder.RELAXED"), "T", "call_atomic",
               _atomic_fn, "atomic", _op, _vector_atomic(_op, _types)))
_add(Entry("compare_exchange", "atomic_ref", "method",
           "store `desired` where the element equals `expected` (bitwise for floats); return the "
           "old value", _params("expected:T desired:T order:MemoryOrder=MemoryOrder.RELAXED"),
           "T", "call_atomic", "gn_atomic_cas", "atomic", "cas", _NUMBER_ATOMIC))
_add(Entry("load", "atomic_ref", "method", "read the element atomically",
           _params("order:MemoryOrder=MemoryOrder.RELAXED"), "T", "call_atomic",
           "gn_atomic_load", "atomic", "load", _NUMBER_ATOMIC))
_add(Entry("store", "atomic_ref", "method", "write `value` atomically",
           _params("value:T order:MemoryOrder=MemoryOrder.RELAXED"), "None", "call_atomic",
           "gn_atomic_store", "atomic", "store", _NUMBER_ATOMIC))

# ---- the math module --------------------------------------------------------------------------

_math("sqrt", "square root", np.sqrt, nonnegative=True)
_math("rsqrt", "1 / sqrt(x) (CUDA's `rsqrt`; not in Python's math)", "rsqrt")
_math("cbrt", "cube root", np.cbrt)
_math("exp", "e ** x", np.exp, nonnegative=True)
_math("exp2", "2 ** x", np.exp2, nonnegative=True)
_math("expm1", "e ** x - 1, accurate near 0", np.expm1)
_math("log", "natural logarithm (one argument)", np.log)
_math("log2", "base-2 logarithm", np.log2)
_math("log10", "base-10 logarithm", np.log10)
_math("log1p", "log(1 + x), accurate near 0", np.log1p)
_math("pow", "x ** y", "c_pow", "x y")
_math("sin", "sine", np.sin)
_math("cos", "cosine", np.cos)
_math("tan", "tangent", np.tan)
_math("asin", "arc sine", np.arcsin)
_math("acos", "arc cosine", np.arccos)
_math("atan", "arc tangent", np.arctan)
_math("atan2", "arc tangent of y / x, in the quadrant of (x, y)", np.arctan2, "y x")
_math("sinh", "hyperbolic sine", np.sinh)
_math("cosh", "hyperbolic cosine", np.cosh, nonnegative=True)
_math("tanh", "hyperbolic tangent", np.tanh)
_math("asinh", "inverse hyperbolic sine", np.arcsinh)
_math("acosh", "inverse hyperbolic cosine", np.arccosh)
_math("atanh", "inverse hyperbolic tangent", np.arctanh)
_math("hypot", "sqrt(x * x + y * y) without overflow", np.hypot, "x y", nonnegative=True)
_math("fabs", "absolute value, as a float", np.abs, nonnegative=True)
_math("floor", "largest integer <= x, as a float", np.floor)
_math("ceil", "smallest integer >= x, as a float", np.ceil)
_math("trunc", "x rounded toward zero, as a float", np.trunc)
_math("fmod", "C's remainder: the result has the sign of x", np.fmod, "x y")
_math("copysign", "x with the sign of y", np.copysign, "x y")
_math("fma", "x * y + z with one rounding", "fma", "x y z")
_math("ldexp", "x * 2 ** i, rounded once", np.ldexp, "x i:int", since="0.1.0")
_math("erf", "error function", "erf")
_math("erfc", "complementary error function", "erfc")
_math("lgamma", "log of the absolute value of the gamma function", "lgamma")
_math("gamma", "gamma function", "tgamma", cuda=_libm("tgamma"))
_predicate: Callable
for _name, _predicate, _doc in (("isnan", np.isnan, "x is a NaN"),
                                ("isinf", np.isinf, "x is infinite"),
                                ("isfinite", np.isfinite, "x is neither infinite nor a NaN")):
    _math(_name, _doc, _predicate, result="bool", cuda=_name)
for _name, _value in (("pi", "π"), ("e", "e"), ("tau", "2π"), ("inf", "infinity"),
                      ("nan", "not a number")):
    _add(Entry(_name, "math", "constant", f"{_value}, folded in at compile time",
               value=getattr(math, _name)))

# ---- builtins ---------------------------------------------------------------------------------

_add(Entry("len", "builtins", "call", "the extent of an array's first axis (`i64`); a tuple's "
           "length (a constant)",
           _params("a:array"), "i64", "call_len"))
_add(Entry("range", "builtins", "loop", "`for i in range(stop)`, `range(start, stop)`, "
           "`range(start, stop, step)`: i has the arguments' promoted type",
           _params("*args:int")))
_add(Entry("min", "builtins", "call", "the smallest argument; `min(a, b)` is `b` only when "
           "`b < a` (NaN follows the order); elementwise for vectors", _params("a:scalar b:scalar *more:scalar"),
           "T", "call_minmax", "gn_min<{T}>", "pymin"))
_add(Entry("max", "builtins", "call", "the largest argument; `max(a, b)` is `b` only when "
           "`b > a`; elementwise for vectors", _params("a:scalar b:scalar *more:scalar"), "T", "call_minmax",
           "gn_max<{T}>", "pymax"))
_add(Entry("abs", "builtins", "call", "absolute value (integers wrap: `abs(INT_MIN)`)",
           _params("x:scalar"), "T", "call_abs",
           {"int": "gn_iabs<{T}>", "f16": "__habs", "bf16": "__habs", **_libm("fabs")},
           {"int": "iabs", "*": np.abs}, nonnegative=True))
_add(Entry("round", "builtins", "call", "round half to even, as an `i64` (one argument)",
           _params("x:scalar"), "i64", "call_round", _libm("rint"), np.rint, "rint"))
_add(Entry("int", "builtins", "call", "conversion to `i64` (truncates, saturates; NaN gives 0); "
           "as an annotation, `i64`", _params("x:scalar"), "i64", "call_int", value="i64"))
_add(Entry("float", "builtins", "call", "conversion to `f64`; as an annotation, `f64`",
           _params("x:scalar"), "f64", "call_float", value="f64"))
_add(Entry("bool", "builtins", "call", "truth value (`x != 0`); as an annotation, `bool_`",
           _params("x:scalar"), "bool", "call_bool", value="bool_"))
_add(Entry("divmod", "builtins", "call", "`(a // b, a % b)` with Python's floor semantics, "
           "for integers and floats", _params("a:scalar b:scalar"), "tuple[T, T]",
           "call_divmod", since="0.1.0"))
_add(Entry("enumerate", "builtins", "loop", "`for i, x in enumerate(range(...))` or over a "
           "tuple (unrolled); `i` counts from `start`: an `i64` over a range, a constant over a "
           "tuple", _params("iterable start:int=0"), since="0.1.0"))
_add(Entry("zip", "builtins", "loop", "`for a, b in zip(t1, t2)` over tuples (unrolled; stops "
           "at the shortest)", _params("*tuples"), since="0.1.0"))
_add(Entry("reversed", "builtins", "loop", "`for i in reversed(range(...))`: the range's values, "
           "last first (any step, its sign known at run time too); indices proven in bounds "
           "as in the range's loop", _params("iterable:range"), since="0.1.0"))
_add(Entry("tuple", "builtins", "tuple type", "`tuple[f32, i32]`: a tuple of scalars, as a "
           "`@gpu_device` function's result, parameter or a local's annotation",
           since="0.1.0"))
_add(Entry("print", "builtins", "statement", "device printf: floats like C's `%g`, bools as "
           "True/False", _params("*items"), "None", "print_stmt"))


# ---- lookups ----------------------------------------------------------------------------------

def _index(namespace: str) -> dict[str, Entry]:
    return {e.name: e for e in ENTRIES if e.namespace == namespace}


GPU_NATIVE: dict[str, Entry] = _index("gpu_native")
"""The kernel-language names of the ``gpu_native`` package."""
MATH: dict[str, Entry] = _index("math")
"""The names of the ``math`` module kernels can use (functions and constants)."""
CMATH: dict[str, Entry] = _index("cmath")
"""The names of the ``cmath`` module kernels can use (functions and constants)."""
COMPLEX_ATTRIBUTES: dict[str, int] = {e.name: e.value for e in _index("complex").values()
                                      if e.form == "attribute"}
"""``.real .imag`` → the index of the part."""
COMPLEX_METHODS: dict[str, Entry] = {e.name: e for e in _index("complex").values()
                                     if e.form == "method"}
"""The methods of complex values (``z.conjugate()``)."""
BUILTINS: dict[str, Entry] = _index("builtins")
"""The builtins kernels can use."""
ATOMIC_METHODS: dict[str, Entry] = _index("atomic_ref")
"""The methods of ``x.atomic_ref(i)``, by Python name."""
ATOMIC_OPS: dict[str, Entry] = {e.op: e for e in ATOMIC_METHODS.values()}
"""The same, by the IR's operation name (``ir.Atomic.op``)."""
MATH_OPS: dict[str, Entry] = {
    e.ir_name: e for e in ENTRIES
    if (e.namespace in ("math", "builtins") and e.form == "call" and e.cuda is not None)
    or e.check in ("call_bits", "call_bitcast")}
"""The operations ``ir.MathCall`` names: the math functions, ``abs``, ``min``, ``max`` and
``round`` (as ``rint``), and the bit operations (``popc`` ... ``bitcast``)."""
AXES: dict[str, int] = {e.name: e.value for e in _index("dim3").values()}
"""``.x .y .z`` → axis."""
VECTOR_COMPONENTS: dict[str, int] = {e.name: e.value for e in _index("vector").values()}
"""``.x .y .z .w`` → the index of a vector's component."""
LAYOUT_METHODS: dict[str, Entry] = _index("layout")
"""The methods of the layouts (``FlatLayout1D.uid()``)."""
GENERATOR_METHODS: dict[str, Entry] = _index("generator")
"""The methods of a random number generator (``rng.uniform()``)."""


def emitted_names() -> frozenset[str]:
    """Every identifier the CUDA emitter writes for an entry (a kernel variable must not hide
    one): function names, with a template's arguments left out."""
    names = set()
    for entry in ENTRIES:
        table = entry.cuda
        spellings = table.values() if isinstance(table, Mapping) else (table,)
        for text in spellings:
            if isinstance(text, str):
                name = re.match(r"[A-Za-z_]\w*", text)
                assert name is not None, f"{entry.name}: {text!r} does not start with a name"
                names.add(name.group())
    return frozenset(names)


def by_form(form: str, namespace: str = "gpu_native") -> Iterator[Entry]:
    """The entries of ``namespace`` used in one way."""
    return (e for e in ENTRIES if e.namespace == namespace and e.form == form)

