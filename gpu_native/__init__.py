"""gpu_native: CUDA kernels written as typed Python functions, transpiled to CUDA C++, compiled
by NVRTC, and launched with every argument checked.

.. code-block:: python

    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                            UniqueId, f32)

    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + b[idx]

Importing this package installs the import hook that rewrites modules defining kernels; neither
the transpiler (libcst) nor the CUDA driver is loaded until a kernel module is imported or a
kernel is launched.
"""

from __future__ import annotations

from . import importhook as importhook  # installs the import hook unless GPU_NATIVE_DISABLE_HOOK=1
from ._version import __version__ as __version__
from .decorators import const_array as const_array
from .decorators import gpu_device as gpu_device
from .decorators import gpu_kernel as gpu_kernel
from .decorators import gpu_struct as gpu_struct
from .errors import CompileError as CompileError
from .errors import ContextLostError as ContextLostError
from .errors import CudaError as CudaError
from .errors import CudaVersionError as CudaVersionError
from .errors import DeviceRaceError as DeviceRaceError
from .errors import GpuNativeError as GpuNativeError
from .errors import GpuNativeWarning as GpuNativeWarning
from .errors import KernelAssertionError as KernelAssertionError
from .errors import KernelError as KernelError
from .errors import KernelIndexError as KernelIndexError
from .errors import KernelZeroDivisionError as KernelZeroDivisionError
from .errors import LaunchError as LaunchError
from .errors import MissingArtifactError as MissingArtifactError
from .errors import TranspileError as TranspileError
from .lang.intrinsics import FULL_MASK as FULL_MASK
from .lang.intrinsics import MemoryOrder as MemoryOrder
from .lang.intrinsics import activemask as activemask
from .lang.intrinsics import all_sync as all_sync
from .lang.intrinsics import any_sync as any_sync
from .lang.intrinsics import ballot as ballot
from .lang.intrinsics import bitcast as bitcast
from .lang.intrinsics import brev as brev
from .lang.intrinsics import byte_perm as byte_perm
from .lang.intrinsics import clz as clz
from .lang.intrinsics import cp_async as cp_async
from .lang.intrinsics import cp_async_commit as cp_async_commit
from .lang.intrinsics import cp_async_wait as cp_async_wait
from .lang.intrinsics import cross as cross
from .lang.intrinsics import ctz as ctz
from .lang.intrinsics import dot as dot
from .lang.intrinsics import ffs as ffs
from .lang.intrinsics import fma as fma
from .lang.intrinsics import funnelshift_l as funnelshift_l
from .lang.intrinsics import funnelshift_lc as funnelshift_lc
from .lang.intrinsics import funnelshift_r as funnelshift_r
from .lang.intrinsics import funnelshift_rc as funnelshift_rc
from .lang.intrinsics import grid_sync as grid_sync
from .lang.intrinsics import lane_id as lane_id
from .lang.intrinsics import ldmatrix as ldmatrix
from .lang.intrinsics import length as length
from .lang.intrinsics import length_sq as length_sq
from .lang.intrinsics import load_vec2 as load_vec2
from .lang.intrinsics import load_vec4 as load_vec4
from .lang.intrinsics import local_array as local_array
from .lang.intrinsics import match_all as match_all
from .lang.intrinsics import match_any as match_any
from .lang.intrinsics import mma_sync as mma_sync
from .lang.intrinsics import normalize as normalize
from .lang.intrinsics import philox as philox
from .lang.intrinsics import popc as popc
from .lang.intrinsics import shared_array as shared_array
from .lang.intrinsics import shfl_down as shfl_down
from .lang.intrinsics import shfl_idx as shfl_idx
from .lang.intrinsics import shfl_up as shfl_up
from .lang.intrinsics import shfl_xor as shfl_xor
from .lang.intrinsics import store_matrix as store_matrix
from .lang.intrinsics import sync_threads as sync_threads
from .lang.intrinsics import sync_threads_and as sync_threads_and
from .lang.intrinsics import sync_threads_count as sync_threads_count
from .lang.intrinsics import sync_threads_or as sync_threads_or
from .lang.intrinsics import sync_warp as sync_warp
from .lang.intrinsics import threadfence as threadfence
from .lang.intrinsics import threadfence_block as threadfence_block
from .lang.intrinsics import threadfence_system as threadfence_system
from .lang.intrinsics import tma_load as tma_load
from .lang.intrinsics import tma_wait as tma_wait
from .lang.intrinsics import unroll as unroll
from .lang.intrinsics import unsafe as unsafe
from .lang.intrinsics import warp_size as warp_size
from .lang.intrinsics import warpgroup_arrive as warpgroup_arrive
from .lang.intrinsics import warpgroup_commit as warpgroup_commit
from .lang.intrinsics import warpgroup_mma as warpgroup_mma
from .lang.intrinsics import warpgroup_store as warpgroup_store
from .lang.intrinsics import warpgroup_wait as warpgroup_wait
from .lang.layouts import BlockDim1D as BlockDim1D
from .lang.layouts import BlockDim2D as BlockDim2D
from .lang.layouts import BlockDim3D as BlockDim3D
from .lang.layouts import BlockLayout1D as BlockLayout1D
from .lang.layouts import BlockLayout2D as BlockLayout2D
from .lang.layouts import BlockLayout3D as BlockLayout3D
from .lang.layouts import FlatLayout1D as FlatLayout1D
from .lang.layouts import FlatLayout2D as FlatLayout2D
from .lang.layouts import FlatLayout3D as FlatLayout3D
from .lang.layouts import GridDim1D as GridDim1D
from .lang.layouts import GridDim2D as GridDim2D
from .lang.layouts import GridDim3D as GridDim3D
from .lang.layouts import Kernel1D as Kernel1D
from .lang.layouts import Kernel2D as Kernel2D
from .lang.layouts import Kernel3D as Kernel3D
from .lang.layouts import UniqueId as UniqueId
from .lang.layouts import block_dim as block_dim
from .lang.layouts import block_idx as block_idx
from .lang.layouts import grid_dim as grid_dim
from .lang.layouts import thread_idx as thread_idx
from .lang.params import Const as Const
from .lang.params import CUDASlice as CUDASlice
from .lang.params import CUDASlice2D as CUDASlice2D
from .lang.params import CUDASlice3D as CUDASlice3D
from .lang.params import CUDASliceMut as CUDASliceMut
from .lang.params import CUDASliceMut2D as CUDASliceMut2D
from .lang.params import CUDASliceMut3D as CUDASliceMut3D
from .lang.params import Strided as Strided
from .lang.types import bf16 as bf16
from .lang.types import bool_ as bool_
from .lang.types import complex64 as complex64
from .lang.types import complex128 as complex128
from .lang.types import f16 as f16
from .lang.types import f32 as f32
from .lang.types import f64 as f64
from .lang.types import i8 as i8
from .lang.types import i16 as i16
from .lang.types import i32 as i32
from .lang.types import i64 as i64
from .lang.types import u8 as u8
from .lang.types import u16 as u16
from .lang.types import u32 as u32
from .lang.types import u64 as u64
from .lang.types import vec2bf as vec2bf
from .lang.types import vec2d as vec2d
from .lang.types import vec2f as vec2f
from .lang.types import vec2h as vec2h
from .lang.types import vec2i as vec2i
from .lang.types import vec3d as vec3d
from .lang.types import vec3f as vec3f
from .lang.types import vec3i as vec3i
from .lang.types import vec4d as vec4d
from .lang.types import vec4f as vec4f
from .lang.types import vec4i as vec4i
from .runtime.arrays import DeviceArray as DeviceArray
from .runtime.arrays import empty as empty
from .runtime.arrays import from_dlpack as from_dlpack
from .runtime.arrays import to_device as to_device
from .runtime.arrays import zeros as zeros
from .runtime.devices import Device as Device
from .runtime.graphs import Graph as Graph
from .runtime.kernel import Kernel as Kernel
from .runtime.peer import copy as copy
from .runtime.streams import DEFAULT_STREAM as DEFAULT_STREAM
from .runtime.streams import Event as Event
from .runtime.streams import Stream as Stream
from .runtime.streams import synchronize as synchronize
from .sources import register_source as register_source


def backend() -> str:
    """The backend kernels run on in this process: ``"cuda"`` or ``"sim"`` (chosen on first use;
    ``GPU_NATIVE_BACKEND`` overrides)."""
    from .runtime.backend import select

    return select().name


__all__ = [
    "DEFAULT_STREAM",
    "FULL_MASK",
    "BlockDim1D",
    "BlockDim2D",
    "BlockDim3D",
    "BlockLayout1D",
    "BlockLayout2D",
    "BlockLayout3D",
    "CUDASlice",
    "CUDASlice2D",
    "CUDASlice3D",
    "CUDASliceMut",
    "CUDASliceMut2D",
    "CUDASliceMut3D",
    "CompileError",
    "Const",
    "ContextLostError",
    "CudaError",
    "CudaVersionError",
    "Device",
    "DeviceArray",
    "DeviceRaceError",
    "Event",
    "FlatLayout1D",
    "FlatLayout2D",
    "FlatLayout3D",
    "GpuNativeError",
    "GpuNativeWarning",
    "Graph",
    "GridDim1D",
    "GridDim2D",
    "GridDim3D",
    "Kernel",
    "Kernel1D",
    "Kernel2D",
    "Kernel3D",
    "KernelAssertionError",
    "KernelError",
    "KernelIndexError",
    "KernelZeroDivisionError",
    "LaunchError",
    "MemoryOrder",
    "MissingArtifactError",
    "Stream",
    "Strided",
    "TranspileError",
    "UniqueId",
    "activemask",
    "all_sync",
    "any_sync",
    "backend",
    "ballot",
    "bf16",
    "bitcast",
    "block_dim",
    "block_idx",
    "bool_",
    "brev",
    "byte_perm",
    "clz",
    "complex64",
    "complex128",
    "const_array",
    "copy",
    "cp_async",
    "cp_async_commit",
    "cp_async_wait",
    "cross",
    "ctz",
    "dot",
    "empty",
    "f16",
    "f32",
    "f64",
    "ffs",
    "fma",
    "from_dlpack",
    "funnelshift_l",
    "funnelshift_lc",
    "funnelshift_r",
    "funnelshift_rc",
    "gpu_device",
    "gpu_kernel",
    "gpu_struct",
    "grid_dim",
    "grid_sync",
    "i8",
    "i16",
    "i32",
    "i64",
    "lane_id",
    "ldmatrix",
    "length",
    "length_sq",
    "load_vec2",
    "load_vec4",
    "local_array",
    "match_all",
    "match_any",
    "mma_sync",
    "normalize",
    "philox",
    "popc",
    "register_source",
    "shared_array",
    "shfl_down",
    "shfl_idx",
    "shfl_up",
    "shfl_xor",
    "store_matrix",
    "sync_threads",
    "sync_threads_and",
    "sync_threads_count",
    "sync_threads_or",
    "sync_warp",
    "synchronize",
    "thread_idx",
    "threadfence",
    "threadfence_block",
    "threadfence_system",
    "tma_load",
    "tma_wait",
    "to_device",
    "u8",
    "u16",
    "u32",
    "u64",
    "unroll",
    "unsafe",
    "vec2bf",
    "vec2d",
    "vec2f",
    "vec2h",
    "vec2i",
    "vec3d",
    "vec3f",
    "vec3i",
    "vec4d",
    "vec4f",
    "vec4i",
    "warp_size",
    "warpgroup_arrive",
    "warpgroup_commit",
    "warpgroup_mma",
    "warpgroup_store",
    "warpgroup_wait",
    "zeros",
]
