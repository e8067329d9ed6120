"""What other GPU languages call the things gpu_native names otherwise.

Someone porting a kernel from CUDA C++ (``__syncthreads()``, ``threadIdx.x``, ``atomicAdd``),
Numba-CUDA (``cuda.syncthreads()``, ``cuda.shfl_down_sync``, ``cuda.grid(1)``) or Triton
(``tl.program_id``) writes those names first.  A kernel that uses one is refused, and the
transpile error says how gpu_native spells it; a name that is none of these gets the closest
kernel-language name instead, where one is close.
"""

from __future__ import annotations

import difflib

from . import registry as R


def _same(*names: str) -> dict[str, str]:
    """Each of ``names`` but the last (other languages' spellings of one thing) to the last
    (gpu_native's)."""
    *foreign, ours = names
    return {name: ours for name in foreign}


# CUDA's warp intrinsics take the mask first; gpu_native's take it last, with a default.
_MASK_LAST = ", the mask last and optional"

#: A foreign name -> gpu_native's spelling of it (a name of the kernel language, or how to write
#: it when it is no single name).
FOREIGN: dict[str, str] = {
    **_same("__syncthreads", "syncthreads", "sync_threads()"),
    **_same("__syncthreads_count", "syncthreads_count", "sync_threads_count(predicate)"),
    **_same("__syncthreads_and", "syncthreads_and", "sync_threads_and(predicate)"),
    **_same("__syncthreads_or", "syncthreads_or", "sync_threads_or(predicate)"),
    **_same("__syncwarp", "syncwarp", "sync_warp()"),
    **_same("threadIdx", "thread_idx"),
    **_same("blockIdx", "program_id", "block_idx"),
    **_same("blockDim", "block_dim"),
    **_same("gridDim", "num_programs", "grid_dim"),
    **_same("warpSize", "warpsize", "warp_size"),
    **_same("laneid", "__lane_id", "lane_id()"),
    **_same("__shfl_down_sync", "shfl_down_sync", "shfl_down(value, delta)" + _MASK_LAST),
    **_same("__shfl_up_sync", "shfl_up_sync", "shfl_up(value, delta)" + _MASK_LAST),
    **_same("__shfl_xor_sync", "shfl_xor_sync", "shfl_xor(value, lane_mask)" + _MASK_LAST),
    **_same("__shfl_sync", "shfl_sync", "shfl_idx(value, src_lane)" + _MASK_LAST),
    **_same("__ballot_sync", "ballot_sync", "ballot(predicate)" + _MASK_LAST),
    **_same("__all_sync", "all_sync(predicate)" + _MASK_LAST),
    **_same("__any_sync", "any_sync(predicate)" + _MASK_LAST),
    **_same("__activemask", "activemask()"),
    **_same("__popc", "__popcll", "popc"),
    **_same("__clz", "__clzll", "clz"),
    **_same("__ffs", "__ffsll", "ffs"),
    **_same("__brev", "__brevll", "brev"),
    **_same("__byte_perm", "byte_perm"),
    **_same("__threadfence", "threadfence()"),
    **_same("__threadfence_block", "threadfence_block()"),
    **_same("__threadfence_system", "threadfence_system()"),
    **_same("atomicAdd", "x.atomic_ref(i).fetch_add(value)"),
    **_same("atomicSub", "x.atomic_ref(i).fetch_sub(value)"),
    **_same("atomicMin", "x.atomic_ref(i).fetch_min(value)"),
    **_same("atomicMax", "x.atomic_ref(i).fetch_max(value)"),
    **_same("atomicAnd", "x.atomic_ref(i).fetch_and(value)"),
    **_same("atomicOr", "x.atomic_ref(i).fetch_or(value)"),
    **_same("atomicXor", "x.atomic_ref(i).fetch_xor(value)"),
    **_same("atomicExch", "x.atomic_ref(i).exchange(value)"),
    **_same("atomicCAS", "x.atomic_ref(i).compare_exchange(expected, desired)"),
    **_same("atomic", "x.atomic_ref(i).fetch_add(value) and its siblings"),
    **_same("grid", "FlatLayout1D.uid() (a thread's index over the grid) or "
            "FlatLayout1D.grid_stride(n)"),
    **_same("gridsize", "FlatLayout1D.grid_stride(n)"),
    **_same("shared", "shared_array(dtype, shape)"),
    **_same("local", "local_array(dtype, shape)"),
    **_same("__ldg", "a plain read, x[i] (a CUDASlice parameter is const and __restrict__)"),
    **_same("__expf", "__sinf", "__cosf", "__logf", "__powf", "__fdividef",
            "math.exp, math.sin ... with @gpu_kernel(..., fastmath=True)"),
    **_same("float16", "half", "f16"),
    **_same("bfloat16", "bf16"),
    **_same("float32", "f32"),
    **_same("float64", "double", "f64"),
    **_same("int8", "i8"),
    **_same("int16", "i16"),
    **_same("int32", "i32"),
    **_same("int64", "i64"),
    **_same("uint8", "u8"),
    **_same("uint16", "u16"),
    **_same("uint32", "u32"),
    **_same("uint64", "u64"),
    **_same("rsqrtf", "math.rsqrt"),
    **_same("fmaf", "math.fma"),
}


#: NumPy's names that kernels take as the kernel language's own, by (namespace, name) there:
#: ``np.float32(x)`` is ``f32(x)``, ``np.sqrt(x)`` is ``math.sqrt(x)``, ``np.pi`` is ``math.pi``.
#: Only the scalar types, the constants, and the element-wise functions whose result on one
#: scalar is the kernel function's (``np.floor`` is a float, as kernels' ``math.floor`` is);
#: not ``np.minimum``/``np.maximum`` (NaN handling differs from ``min``/``max``) nor
#: ``np.power``/``np.fmod`` (integer results on integers).
NUMPY: dict[str, tuple[str, str]] = {
    **{np_name: ("gpu_native", ours) for np_name, ours in (
        ("float16", "f16"), ("float32", "f32"), ("float64", "f64"), ("int8", "i8"),
        ("int16", "i16"), ("int32", "i32"), ("int64", "i64"), ("uint8", "u8"), ("uint16", "u16"),
        ("uint32", "u32"), ("uint64", "u64"), ("bool_", "bool_"), ("complex64", "complex64"),
        ("complex128", "complex128"))},
    **{name: ("math", name) for name in (
        "pi", "e", "inf", "nan", "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10",
        "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "hypot",
        "fabs", "copysign", "isnan", "isinf", "isfinite")},
    **{np_name: ("math", ours) for np_name, ours in (
        ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arctan2", "atan2"),
        ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"))},
    "abs": ("builtins", "abs"),
    "absolute": ("builtins", "abs"),
}


def gpu_native_spelling(name: str, module: str = "gpu_native") -> str | None:
    """How gpu_native spells ``name``: its entry in :data:`FOREIGN`, C's float spelling of a
    math function (``expf`` is ``math.exp``), else the closest name of ``module``
    (``"gpu_native"`` or ``"math"``) that kernels can use, else None."""
    if name in FOREIGN:
        return FOREIGN[name]
    if name.endswith("f") and name[:-1] in R.MATH:
        return f"math.{name[:-1]}"
    names = R.MATH if module == "math" else R.GPU_NATIVE
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.8)
    if not close:
        return None
    return f"math.{close[0]}" if module == "math" else close[0]


def foreign_hint(dotted: list[str]) -> str | None:
    """How gpu_native spells an attribute of another GPU language's module, ``dotted`` its
    names from the module's (``["cuda", "atomic", "add"]``, ``["cuda", "threadIdx", "x"]``): the
    first attribute from the module out that :data:`FOREIGN` names, else the last one's
    spelling; as the hint ``cuda.atomic.add is not gpu_native's: gpu_native spells it ...``."""
    ours = next((FOREIGN[a] for a in dotted[1:] if a in FOREIGN), None)
    if ours is None and len(dotted) > 1:
        ours = gpu_native_spelling(dotted[-1])
    if ours is None:
        return None
    return f"{'.'.join(dotted)} is not gpu_native's: gpu_native spells it {ours}"


def did_you_mean(name: str, module: str = "gpu_native") -> str:
    """`` (gpu_native spells it ...)`` for a foreign or mistyped ``name``; for one of
    gpu_native's own names, that it is not imported; else ``""``."""
    if module == "gpu_native" and name in R.GPU_NATIVE:
        return f" (it is gpu_native's: from gpu_native import {name})"
    ours = gpu_native_spelling(name, module)
    return "" if ours is None or ours == name else f" (gpu_native spells it {ours})"


__all__ = ["FOREIGN", "NUMPY", "did_you_mean", "foreign_hint", "gpu_native_spelling"]
