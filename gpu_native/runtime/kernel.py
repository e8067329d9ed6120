"""Kernel objects: what a ``@gpu_kernel`` name is bound to at run time.

A :class:`Kernel` is built from the *spec* the transpiler embedded in the rewritten module (a
:class:`~gpu_native.spec.KernelSpec`) and the module's *launcher factory*.
``kernel.launch(grid, block, shared_mem_bytes, stream)`` checks the launch shape against the
kernel and the device, loads (and if needed compiles) the kernel for the current device, and
returns the launcher for that configuration, cached: a repeated launch costs one dictionary
lookup before the launcher's own argument checks.  ``kernel[grid, block, stream, shmem]``
(Numba's spelling) and ``kernel.forall(shape)`` (sized by the occupancy API, see
:mod:`.sizing`) return the same launchers, cached the same way.  Cooperative kernels launch
through the backend's ``launch_cooperative`` (``cuLaunchCooperativeKernel``) after a check that
their grid can be resident at once.
"""

from __future__ import annotations

import builtins
import collections
import math
import os
import struct
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, ParamSpec

import numpy as np

from .. import abi
from ..errors import LaunchError
from ..lang.layouts import BlockDim1D, BlockDim2D, BlockDim3D, GridDim1D, GridDim2D, GridDim3D
from ..lang.structs import StructInfo, leaf_values, mismatch, parse_key, struct_info_of_dtype
from ..lang.types import COMPLEX_CLASSES, SCALARS, VECTOR_CLASSES
from ..nodes import Factory, node
from ..spec import (
    KernelSpec,
    LaunchCheck,
    Param,
    ParamCheck,
    ShapeAssert,
    Site,
    Trait,
    VariantSpec,
)
from ..tracebacks import boundary, launcher_code, strip
from . import backend as B
from . import sizing
from .arrays import DeviceArray, signature
from .devices import _tls, bind_thread
from .launch import ArgumentBuffer, fast_formats, make_submit, slot_formats
from .launch_checks import check_launch, check_params, check_shapes
from .records import register_kernel
from .streams import DEFAULT_STREAM, as_stream

# Kernels that depend only on their uid run in blocks of UID_THREADS threads, each thread taking
# one uid (or one chunk of four); UID_BLOCKS_PER_SM > 0 caps the grid so that threads loop
# instead, for kernels that cannot fail (a failing uid ends its physical thread, which would skip
# the thread's later uids).  GPU_NATIVE_UID_REMAP=0 launches such kernels exactly as written.
UID_REMAP = os.environ.get("GPU_NATIVE_UID_REMAP", "1") != "0"
UID_THREADS = 256
UID_BLOCKS_PER_SM = int(os.environ.get("GPU_NATIVE_UID_BLOCKS_PER_SM", "0"))
# Kernels with a 32-bit index entry point run it when the grid and the arrays are small enough
# (see gpu_native.abi); GPU_NATIVE_INDEX32=0 always runs the main, 64-bit one.
INDEX32 = os.environ.get("GPU_NATIVE_INDEX32", "1") != "0"
_thread_caches: list[dict] = []  # every thread's launcher cache (cleared on a backend change)
_cache_lock = threading.Lock()


def forget_launchers() -> None:
    """Drop every cached launch configuration, in every thread (after the backend changed)."""
    with _cache_lock:
        for cache in _thread_caches:
            cache.clear()


def _thread_cache() -> dict:
    cache = getattr(_tls, "launchers", None)
    if cache is None:
        cache = _tls.launchers = {}
        with _cache_lock:
            _thread_caches.append(cache)
    return cache

P = ParamSpec("P")
if TYPE_CHECKING:
    from typing import SupportsIndex, TypeAlias

    # What a grid, a block or forall's shape may be: an int (GridDim1D is one; a NumPy integer
    # does too), or a tuple of 1 to 3 of them (GridDim2D and GridDim3D are tuples).
    Dims: TypeAlias = SupportsIndex | tuple[SupportsIndex, ...]
    # kernel[grid, block], kernel[grid, block, stream], kernel[grid, block, stream, shared_mem].
    LaunchItem: TypeAlias = (tuple[Dims, Dims] | tuple[Dims, Dims, object]
                             | tuple[Dims, Dims, object, int])

_DIM_TYPES = {GridDim1D: 1, BlockDim1D: 1, GridDim2D: 2, BlockDim2D: 2, GridDim3D: 3,
              BlockDim3D: 3}


@node(eq=False, frozen=False)
class Variant:
    """One specialisation of a kernel: its spec, and what this process loaded of it."""

    spec: VariantSpec
    label: str
    modules: dict = Factory(dict)  # device ordinal -> loaded CUmodule
    functions: dict = Factory(dict)
    block_sizes: dict = Factory(dict)  # (backend, device, shared bytes) -> forall's block size
    const_values: tuple | None = None  # its constant arrays' values (see .constants)

    @property
    def types(self) -> tuple[tuple[str, str], ...]:
        return self.spec.types

    @property
    def type_map(self) -> dict[str, str]:
        return dict(self.spec.types)

    @property
    def symbol(self) -> str:
        return self.spec.symbol

    @property
    def kernel_id(self) -> int:
        return self.spec.kernel_id

    @property
    def cuda(self) -> str:
        return self.spec.cuda

    @property
    def sites(self) -> tuple[Site, ...]:
        return self.spec.sites

    @property
    def traits(self) -> Trait:
        return self.spec.traits

    @property
    def launch_checks(self) -> tuple[LaunchCheck, ...]:
        return self.spec.launch_checks


class Kernel(Generic[P]):
    """A compiled-on-demand GPU kernel.

    Launch with ``kernel.launch(grid, block, shared_mem_bytes, stream)(*args)``,
    ``kernel[grid, block, stream, shared_mem_bytes](*args)`` or ``kernel.forall(shape)(*args)``.
    ``expand`` shows the launcher and the CUDA C++ this object was built from.

    For type checkers a kernel is generic in its parameters ``P`` (``@gpu_kernel`` takes them
    from the function), and every launcher is a ``Callable[P, None]``: a launch with too few
    arguments, or an int where an array goes, is flagged in the editor.
    """

    def __init__(self, spec: KernelSpec | tuple, factory):
        if not isinstance(spec, KernelSpec):
            where = f"kernel {getattr(factory, '__qualname__', '?')}"
            module = getattr(factory, "__module__", None)
            if module:
                where += f" of module {module}"
            spec = KernelSpec.from_literal(spec, where)
        self.__name__ = spec.name
        self.__qualname__ = getattr(factory, "__qualname__", spec.name)
        self.__module__ = spec.module
        self.__doc__ = getattr(factory, "__doc__", None)
        self.spec = spec
        self.spec_file: str = spec.file
        self.spec_line: int = spec.line
        self.ndim: int = spec.ndim
        self.options = spec.options
        self.params: tuple[Param, ...] = spec.params
        self.typevars: tuple[str, ...] = spec.typevars
        self._factory = factory
        self.variants: dict[tuple[str, ...], Variant] = {}
        for v in spec.variants:
            label = f"{self.__module__}.{self.__name__}"
            if v.types:
                label += "[" + ", ".join(t for _, t in v.types) + "]"
            variant = Variant(v, label)
            self.variants[tuple(t for _, t in v.types)] = variant
            register_kernel(v.kernel_id, self.__name__, self.spec_file, v.sites, spec.files)
        # Only a process that transpiled (and so imported the prefetcher) compiles ahead; a warm
        # start never imports it.
        prefetch = sys.modules.get("gpu_native.cache.prefetch")
        if prefetch is not None:
            prefetch.note(spec, self.spec_file)

    # ---- user API ------------------------------------------------------------------------------

    def launch(self, grid: Dims, block: Dims, shared_mem_bytes: int = 0,
               stream: object = DEFAULT_STREAM) -> Callable[P, None]:
        """Return the launcher for this configuration; call it with the kernel's arguments.

        Launchers are cached per thread (each has its own argument buffer, so threads launching
        the same kernel never share one), keyed by the configuration; a thread's cache is
        dropped when it changes device.
        """
        try:
            return _tls.launchers[(self, grid, block, shared_mem_bytes, stream)]
        except (AttributeError, KeyError, TypeError):
            pass
        # Not in the cache: configure, outside the handler so that a refusal does not carry the
        # lookup's KeyError as its context, and with only the user's frames (tracebacks.py).
        try:
            return self._configure(grid, block, shared_mem_bytes, stream)
        except Exception as exc:
            strip(exc)
            raise

    def __getitem__(self, config: LaunchItem) -> Callable[P, None]:
        """``kernel[grid, block]``, ``kernel[grid, block, stream]`` or ``kernel[grid, block,
        stream, shared_mem_bytes]``, as in Numba: the launcher of that configuration (the one
        :meth:`launch` returns), to call with the kernel's arguments and to keep.

        ``grid`` and ``block`` are ints or tuples of up to 3 ints (or ``GridDim*``/``BlockDim*``);
        ``stream`` is what :meth:`launch` accepts, or ``0`` for the default stream.
        """
        try:
            return _tls.launchers[(self, config)]
        except (AttributeError, KeyError, TypeError):
            pass
        try:
            launcher = self.launch(*sizing.item_config(self.__name__, config))
        except Exception as exc:
            strip(exc)
            raise
        try:
            _thread_cache()[(self, config)] = launcher
        except TypeError:  # an unhashable entry (a list): works, just not cached
            pass
        return launcher

    def forall(self, shape: Dims, stream: object = DEFAULT_STREAM,
               shared_mem_bytes: int = 0) -> Callable[P, None]:
        """The launcher of a grid that covers ``shape``, with the block size the occupancy API
        suggests for this kernel on this device.

        ``shape`` is an int (a 1-D problem) or a tuple of up to 3 ints in NumPy order (rows
        first: ``forall(out.shape)``); the last axis maps to x.  On the simulator every kernel
        gets blocks of 256 threads.  For a cooperative kernel the grid is capped at the blocks
        that can be resident at once (its threads then loop with ``grid_stride``).
        """
        key = (self, sizing.forall_shape, shape, shared_mem_bytes, stream)
        try:
            return _tls.launchers[key]
        except (AttributeError, KeyError, TypeError):
            pass
        try:
            return self._configure_forall(shape, stream, shared_mem_bytes, key)
        except Exception as exc:
            strip(exc)
            raise

    @boundary
    def max_cooperative_grid_blocks(self, block: Dims, shared_mem_bytes: int = 0) -> int:
        """How many blocks of shape ``block`` a cooperative launch of this kernel may have on the
        current device (``cuOccupancyMaxActiveBlocksPerMultiprocessor`` times the number of
        multiprocessors; the simulator models one multiprocessor of 2048 threads and 32
        blocks).  For a generic kernel, of its first specialisation."""
        device = getattr(_tls, "device", None)
        if device is None:
            device = bind_thread()
        backend = B.select()
        b = self._dims(block, "block")
        variant = next(iter(self.variants.values()))
        return min(sizing.cooperative_limit(backend, fn, device, b[0] * b[1] * b[2],
                                            int(shared_mem_bytes))[0]
                   for fn in self._entry_functions(variant, backend, device))

    def _entry_functions(self, variant: Variant, backend, device: int) -> list:
        """The entry points a launch of ``variant`` may run: the kernel, and on the GPU its
        32-bit index entry point (whose registers, and so occupancy, may differ)."""
        fns = [self._function(variant, backend, device)]
        if Trait.INDEX32 in variant.traits and backend.name == "cuda" and INDEX32:
            fns.append(self._function(variant, backend, device,
                                      variant.symbol + abi.INDEX32_SUFFIX))
        return fns

    @boundary
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> None:
        raise TypeError(
            f"{self.__name__} is a GPU kernel; launch it with "
            f"{self.__name__}[blocks, threads]({', '.join(p.name for p in self.params)}), "
            f"{self.__name__}.forall(n)(...) or {self.__name__}.launch(GridDim1D(blocks), "
            f"BlockDim1D(threads), 0, DEFAULT_STREAM)(...)")

    @boundary
    def compile(self, arch: str | None = None) -> list:
        """Compile every specialisation now (for ``arch``, default the current device's).

        Returns the artifacts; with no GPU and no ``arch``, compiles for nothing and returns [].
        For the current device, the code is what its driver can load; for an ``arch`` named here,
        what NVRTC produces for it (as ``gpu-native precompile`` does).
        """
        from ..cache import BuildRequest, find_or_build

        driver_version = None
        if arch is None:
            backend = B.select()
            if backend.name != "cuda":
                return []
            device = getattr(_tls, "device", None)
            arch = backend.properties(bind_thread() if device is None else device)["arch"]
            driver_version = backend.driver_version()
        return [find_or_build(BuildRequest.for_variant(self.spec, v.spec, arch, self.spec_file,
                                                       driver_version))
                for v in self.variants.values()]

    @property
    def cuda_source(self) -> str:
        """The generated CUDA C++ (of the first specialisation, for generic kernels)."""
        return next(iter(self.variants.values())).cuda

    @property
    def specializations(self) -> list[tuple[str, ...]]:
        """The scalar types of each specialisation, in TypeVar order ([()] when not generic)."""
        return list(self.variants)

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.annotation(p.dtype)}" for p in self.params)
        return f"<gpu_native kernel {self.__module__}.{self.__name__}({sig}) Kernel{self.ndim}D>"

    def __reduce__(self):
        # By reference, as pickle treats functions: the receiving process imports the module
        # (through the import hook) and takes the kernel from it; nothing compiled travels.  The
        # launcher factory was defined in the kernel's real module (``__main__`` for a script,
        # whose spec names the file instead).
        module = getattr(self._factory, "__module__", None) or self.__module__
        if _find_kernel(module, self.__qualname__) is not self:
            import pickle

            raise pickle.PicklingError(
                f"cannot pickle kernel {self.__name__}: it is not reachable as "
                f"{module}.{self.__qualname__}, and kernels travel to other processes by module "
                "and name; define it at the top level of an importable module")
        return (_import_kernel, (module, self.__qualname__))

    # ---- configuration ---------------------------------------------------------------------------

    def _dims(self, value, what: str) -> tuple[int, int, int]:
        dims: tuple[int, ...]  # three ints: a Dim type holds three, and a shorter tuple is padded
        ndim = _DIM_TYPES.get(type(value))
        if ndim is None:
            if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
                ndim, dims = 1, (int(value), 1, 1)
            elif isinstance(value, tuple) and all(
                    isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                    for v in value):
                if not 1 <= len(value) <= 3:
                    raise LaunchError(f"{what} dimensions must have 1 to 3 entries (x, y, z), "
                                      f"got {len(value)}: {value!r}")
                ndim = len(value)
                dims = tuple(int(v) for v in value) + (1,) * (3 - len(value))
            else:
                raise TypeError(f"{what} dimensions must be {'Grid' if what == 'grid' else 'Block'}"
                                f"Dim1D/2D/3D, an int or a tuple of 1 to 3 ints, not "
                                f"{type(value).__name__} {value!r:.60}")
        else:
            dims = (int(value), 1, 1) if ndim == 1 else tuple(int(v) for v in value)
        if ndim > self.ndim:
            names = {1: "Kernel1D", 2: "Kernel2D", 3: "Kernel3D"}
            raise LaunchError(
                f"{self.__name__} is a {names[self.ndim]} kernel but was launched with a "
                f"{ndim}-D {what} {value!r}; its unique ids would not be unique")
        if any(d < 1 for d in dims):
            raise LaunchError(f"{what} dimensions must be at least 1, got {value!r}")
        x, y, z = dims
        return x, y, z

    def _configure(self, grid, block, shared_mem_bytes, stream):
        device = getattr(_tls, "device", None)
        if device is None:
            device = bind_thread()
        backend = B.select()
        g = self._dims(grid, "grid")
        b = self._dims(block, "block")
        props = backend.properties(device)
        threads = b[0] * b[1] * b[2]
        if threads > props["max_threads_per_block"]:
            raise LaunchError(f"{self.__name__}: a block of {b[0]}x{b[1]}x{b[2]} = {threads} "
                              f"threads exceeds the device limit of "
                              f"{props['max_threads_per_block']}")
        for axis, (n, limit) in enumerate(zip(b, props["max_block"])):
            if n > limit:
                raise LaunchError(f"{self.__name__}: block dimension {'xyz'[axis]} = {n} "
                                  f"exceeds the device limit of {limit}")
        for axis, (n, limit) in enumerate(zip(g, props["max_grid"])):
            if n > limit:
                raise LaunchError(f"{self.__name__}: grid dimension {'xyz'[axis]} = {n} "
                                  f"exceeds the device limit of {limit}")
        if not isinstance(shared_mem_bytes, (int, np.integer)) or isinstance(
                shared_mem_bytes, (bool, np.bool_)):
            raise TypeError(f"shared_mem_bytes must be an int, not "
                            f"{type(shared_mem_bytes).__name__} {shared_mem_bytes!r:.60}")
        if shared_mem_bytes < 0:
            raise LaunchError(f"shared_mem_bytes must be non-negative, got {shared_mem_bytes}")
        shared_mem_bytes = int(shared_mem_bytes)
        if shared_mem_bytes > props["max_shared_per_block_optin"]:
            raise LaunchError(f"{self.__name__}: {shared_mem_bytes} bytes of dynamic shared "
                              f"memory exceed the device limit of "
                              f"{props['max_shared_per_block_optin']}")
        stream_obj = as_stream(stream)
        handle, slot = stream_obj._resolve(device)
        config = _Config(self, backend, device, g, b, shared_mem_bytes, handle, slot, stream_obj)
        if self.typevars:
            launcher = config.dispatcher()
        else:
            launcher = config.launcher(next(iter(self.variants.values())))
        graph = getattr(stream_obj, "graph", None)
        if graph is not None:
            launcher = _capturing(launcher, graph)
        try:
            _thread_cache()[(self, grid, block, shared_mem_bytes, stream)] = launcher
        except TypeError:  # an unhashable grid (a list, say): works, just not cached
            pass
        return launcher

    def _configure_forall(self, shape, stream, shared_mem_bytes, key):
        extents = sizing.forall_shape(self.__name__, self.ndim, shape)
        if not isinstance(shared_mem_bytes, (int, np.integer)) or isinstance(
                shared_mem_bytes, (bool, np.bool_)):
            raise TypeError(f"shared_mem_bytes must be an int, not "
                            f"{type(shared_mem_bytes).__name__} {shared_mem_bytes!r:.60}")
        if self.typevars:
            # The block size depends on the specialisation, which the arguments choose.
            chosen: dict = {}

            def dispatch(*args):
                try:
                    types = _select_variant(self, args)
                    launcher = chosen.get(types)
                    if launcher is None:
                        launcher = chosen[types] = self._sized(self.variants[types], extents,
                                                               stream, shared_mem_bytes)
                    return launcher(*args)
                except Exception as exc:
                    strip(exc)
                    raise

            dispatch.__qualname__ = dispatch.__name__ = self.__name__
            launcher = dispatch
        else:
            launcher = self._sized(next(iter(self.variants.values())), extents, stream,
                                   shared_mem_bytes)
        try:
            _thread_cache()[key] = launcher
        except TypeError:
            pass
        return launcher

    def _sized(self, variant: Variant, extents, stream, shared_mem_bytes):
        """The launcher of a grid covering ``extents`` with forall's block size."""
        device = getattr(_tls, "device", None)
        if device is None:
            device = bind_thread()
        grid, block = sizing.forall_grid(self, variant, B.select(), device, extents,
                                         int(shared_mem_bytes))
        return self.launch(grid, block, shared_mem_bytes, stream)

    def _function(self, variant: Variant, backend, device: int, symbol: str | None = None):
        key = (backend.name, device, symbol)
        fn = variant.functions.get(key)
        if fn is None:
            fn = variant.functions[key] = backend.load(self, variant, device, symbol)
        return fn


class _Config:
    """One launch configuration of one kernel on one device and stream."""

    def __init__(self, kernel: Kernel, backend, device, grid, block, shared_mem_bytes, handle,
                 slot, stream):
        self.kernel = kernel
        self.backend = backend
        self.device = device
        self.grid = grid
        self.block = block
        self.shared_mem_bytes = shared_mem_bytes
        self.handle = handle
        self.slot = slot
        self.stream = stream
        self.variant_launchers: dict[tuple[str, ...], Callable[..., Any]] = {}
        # cuLaunchCooperativeKernel for cooperative kernels (grid_sync), with cuLaunchKernel's
        # signature: the launcher calls either the same way.
        self.launch = backend.launch_cooperative if kernel.options.cooperative else backend.launch

    def launcher(self, variant: Variant):
        k = self.kernel
        checks = variant.launch_checks
        if checks:
            check_launch(k.__name__, k.spec_file, variant.kernel_id, checks, self.grid,
                         self.block, k.spec.files, self.shared_mem_bytes)
        trailing: tuple[tuple[str, int], ...] = (("Q", self.slot.device_ptr),)
        grid, block = self.grid, self.block
        index32 = False
        traits = variant.traits
        cooperative = k.options.cooperative
        if (Trait.UID_ONLY in traits and self.backend.name == "cuda" and UID_REMAP
                and not cooperative):
            # The kernel depends on nothing but its uid: run the logical grid on a grid sized
            # for the device (see gpu_native.emit.uid_stride); every uid still runs once.
            fn = k._function(variant, self.backend, self.device, variant.symbol + "_uids")
            total = grid[0] * block[0]
            units = (total + 3) // 4 if Trait.UID_VECTOR4 in traits else total
            sms = self.backend.properties(self.device)["multiprocessors"]
            blocks = -(-units // UID_THREADS)
            if UID_BLOCKS_PER_SM and not variant.sites:
                blocks = min(blocks, sms * UID_BLOCKS_PER_SM)
            blocks = max(1, min(blocks, 2**31 - 1))
            trailing += (("q", total), ("I4x", block[0]))
            grid, block = (blocks, 1, 1), (UID_THREADS, 1, 1)
        else:
            symbol = None
            if (Trait.INDEX32 in traits and self.backend.name == "cuda" and INDEX32
                    and all(g * b <= abi.INDEX32_MAX_ELEMENTS for g, b in zip(grid, block))):
                # Arrays of more elements take the checked path, which runs the main entry.
                symbol = variant.symbol + abi.INDEX32_SUFFIX
            fn = k._function(variant, self.backend, self.device, symbol)
            self.check_function(fn, variant)
            index32 = symbol is not None
            if cooperative:  # for either entry point: an array too large runs the main one
                sizing.check_cooperative(k.__name__, self.backend,
                                         k._entry_functions(variant, self.backend, self.device),
                                         self.device, grid, block, self.shared_mem_bytes)
        context = LaunchContext(self, variant, fn, grid, block, trailing, index32)
        launcher = k._factory(context)
        launcher.__qualname__ = k.__name__
        launcher.__name__ = k.__name__
        # Its frame, the one an argument error keeps, names the kernel and its decorator line.
        launcher.__code__ = launcher_code(launcher.__code__, k.__name__, k.spec_line)
        return launcher

    def check_function(self, fn, variant: Variant) -> None:
        backend = self.backend
        if not hasattr(backend, "function_attribute"):
            return
        k = self.kernel
        threads = self.block[0] * self.block[1] * self.block[2]
        limit = backend.function_attribute(fn, "MAX_THREADS_PER_BLOCK")
        if threads > limit:
            raise LaunchError(f"{k.__name__} can run at most {limit} threads per block (it "
                              f"needs many registers); {threads} were requested")
        static = backend.function_attribute(fn, "SHARED_SIZE_BYTES")
        props = backend.properties(self.device)
        total = static + self.shared_mem_bytes
        if total > props["max_shared_per_block_optin"]:
            raise LaunchError(f"{k.__name__} needs {static} bytes of static plus "
                              f"{self.shared_mem_bytes} of dynamic shared memory, more than the "
                              f"device's {props['max_shared_per_block_optin']}")
        if total > props["max_shared_per_block"]:
            backend.allow_dynamic_shared(fn, self.shared_mem_bytes)

    def dispatcher(self):
        k = self.kernel

        def dispatch(*args):
            try:
                key = self.select_variant(args)
                launcher = self.variant_launchers.get(key)
                if launcher is None:
                    launcher = self.variant_launchers[key] = self.launcher(k.variants[key])
                return launcher(*args)
            except Exception as exc:
                strip(exc)
                raise

        dispatch.__qualname__ = dispatch.__name__ = k.__name__
        return dispatch

    def select_variant(self, args) -> tuple[str, ...]:
        return _select_variant(self.kernel, args)


def _select_variant(k: Kernel, args) -> tuple[str, ...]:
    """The specialisation of generic kernel ``k`` that ``args`` call for."""
    if len(args) != len(k.params):
        raise TypeError(f"{k.__name__}() takes {len(k.params)} arguments "
                        f"({', '.join(p.name for p in k.params)}) but {len(args)} were given")
    found: dict[str, str] = {}
    for p, arg in zip(k.params, args):
        if p.dtype not in k.typevars or p.dtype in found:
            continue
        name = _dtype_name_of(arg, p.ndim > 0)
        if name is not None:
            found[p.dtype] = name
    key = []
    for tv in k.typevars:
        if tv not in found:
            raise TypeError(f"cannot tell which specialisation of {k.__name__} to launch: "
                            f"nothing fixes {tv}; pass an array of that type or a NumPy "
                            f"scalar such as np.float32(x)")
        key.append(found[tv])
    key_t = tuple(key)
    if key_t not in k.variants:
        have = ", ".join("(" + ", ".join(v) + ")" for v in k.variants)
        raise TypeError(f"{k.__name__} has no specialisation for "
                        f"({', '.join(key)}); it has {have}")
    return key_t


def _capturing(launcher, graph):
    """A launcher on a graph's capture stream: the graph records (and keeps) the arguments."""

    def capture(*args):
        try:
            graph.record(launcher, args)
        except Exception as exc:
            strip(exc)
            raise

    capture.__qualname__ = capture.__name__ = launcher.__name__
    return capture


def _dtype_name_of(arg, array: bool) -> str | None:
    if isinstance(arg, DeviceArray):
        return arg._info.name
    if array:
        dtype = None
        cai = getattr(arg, "__cuda_array_interface__", None)
        if cai is not None:
            dtype = np.dtype(cai["typestr"])
        elif hasattr(arg, "dtype"):
            try:
                dtype = np.dtype(str(arg.dtype).replace("torch.", ""))
            except TypeError:
                return None
        if dtype is None:
            return None
        for info in SCALARS.values():
            if info.name != "bf16" and np.dtype(info.numpy) == dtype:
                return info.name
        return None
    if isinstance(arg, np.generic):
        for info in SCALARS.values():
            if info.name != "bf16" and np.dtype(info.numpy) == arg.dtype:
                return info.name
    return None


@node
class FastPath:
    """The pieces of a generated launcher's fast path, by name: a factory binds the ones it uses
    to closure variables once per launch configuration (see gpu_native.emit.host).

    ``DeviceArray``, ``int``, ``float`` and ``bool`` are the classes the argument tests compare
    with (from here, not from the user's module, where ``int`` may mean something else), and
    ``vectors`` the vector classes by name (``gn.vec3f`` ...: a vector argument of its
    parameter's exact class is packed as its components, which it holds converted already);
    ``signatures`` maps each array parameter's name to the signature its arguments must carry
    (``DeviceArray.launch_sig``); ``pack(buffer, 0, *values)`` packs the arguments into
    ``buffer``, whose ``void*`` array is at ``address``; ``launch(function, *grid, *block,
    shared_mem_bytes, stream, address, 0)`` is the backend's ``cuLaunchKernel``, returning a
    tuple whose first item is ``success`` when it launched; ``failed(err)`` raises the
    backend's error; ``slow(*args)`` checks every argument, explains, converts and launches.
    ``launch_grid`` and ``launch_block`` are the launch shape the kernel sees (``grid`` and
    ``block`` are the one submitted, which differ for a kernel run on a grid sized for the
    device): the inline tests of :class:`~gpu_native.spec.ParamCheck` records read them.
    """

    DeviceArray: type
    int: type
    float: type
    bool: type
    # Below, `int` would be the field above: the builtin is builtins.int.
    signatures: dict
    pack: object
    buffer: object
    address: builtins.int
    launch: object
    function: object
    grid: tuple[builtins.int, builtins.int, builtins.int]
    block: tuple[builtins.int, builtins.int, builtins.int]
    shared_mem_bytes: builtins.int
    stream: object
    success: object
    failed: object
    slow: object
    launch_grid: tuple[builtins.int, builtins.int, builtins.int] = (1, 1, 1)
    launch_block: tuple[builtins.int, builtins.int, builtins.int] = (1, 1, 1)
    vectors: dict = Factory(lambda: {**VECTOR_CLASSES, **COMPLEX_CLASSES})


class LaunchContext:
    """What a launcher factory receives: :meth:`fast_path` gives it the pieces of its fast path,
    and :meth:`slow` checks every argument one by one (and explains what is wrong)."""

    def __init__(self, config: _Config, variant: Variant, fn, grid, block, trailing,
                 index32: bool = False):
        self.config = config
        self.kernel = config.kernel
        self.variant = variant
        self.types = variant.type_map
        self.fn = fn
        self.grid, self.block = grid, block
        formats = slot_formats(self.kernel.params, self.types)
        self.pack_into = struct.Struct(
            "<" + "".join(fast_formats(self.kernel.params, self.types))).pack_into
        self.buffer = ArgumentBuffer(len(formats), trailing)
        self.formats, self.trailing = formats, trailing
        self.submit = make_submit(config.backend, fn, grid, block, config.shared_mem_bytes,
                                  config.handle, trailing, formats, variant.label, config.launch)
        # `fn` is the 32-bit index entry point: a call with an array of more than
        # abi.INDEX32_MAX_ELEMENTS elements submits through the main one instead.
        self.index32 = index32
        self.wide_submit: Callable[..., None] | None = None
        backend = config.backend
        self.signatures = {
            p.name: signature(backend.name, config.device, self.types.get(p.dtype, p.dtype),
                              p.ndim, strided=p.strided)
            for p in self.kernel.params if p.ndim}
        self.keepalive: collections.deque = collections.deque()
        self.param_checks = tuple(c for c in variant.launch_checks if isinstance(c, ParamCheck))
        self.shape_checks = tuple(c for c in variant.launch_checks
                                  if isinstance(c, ShapeAssert))

    def fast_path(self) -> FastPath:
        """The pieces of a generated launcher's fast path (see :class:`FastPath`)."""
        c = self.config
        backend = c.backend
        return FastPath(DeviceArray, int, float, bool, self.signatures, self.pack_into,
                        self.buffer.data, self.buffer.address, c.launch, self.fn,
                        self.grid, self.block, c.shared_mem_bytes, c.handle, backend.success,
                        self.failed, self.slow, c.grid, c.block)

    def failed(self, err):
        if err != self.config.backend.success:
            raise self.config.backend.error_for(err)
        return True

    # ---- the checked path ------------------------------------------------------------------------

    def slow(self, *args):
        """Check every argument, explain any problem, convert, then launch."""
        try:
            k = self.kernel
            values: list = []
            foreign: list = []
            arrays: list[tuple[Param, DeviceArray]] = []
            scalars: list = []  # each parameter's converted value (None for an array)
            for p, arg in zip(k.params, args):
                dtype = self.types.get(p.dtype, p.dtype)
                if p.ndim:
                    arr = self.array_argument(p, dtype, arg)
                    if not isinstance(arg, DeviceArray):
                        foreign.append(arg)
                    arrays.append((p, arr))
                    values.append(arr._gn_ptr)
                    values.extend(arr.shape)
                    if p.strided:
                        values.extend(arr.strides)
                    scalars.append(None)
                elif dtype in abi.VECTOR_SLOTS:
                    values.extend(self.vector_argument(p, dtype, arg))
                    scalars.append(None)
                elif dtype in abi.COMPLEX_SLOTS:
                    values.extend(self.complex_argument(p, dtype, arg))
                    scalars.append(None)
                elif dtype.startswith("{"):  # a struct's layout key
                    values.extend(self.struct_argument(p, dtype, arg))
                    scalars.append(None)
                else:
                    values.append(self.scalar_argument(p, dtype, arg))
                    scalars.append(values[-1])
            self.check_overlap(arrays)
            if self.shape_checks:
                given = iter(arr for _, arr in arrays)
                check_shapes(self.variant.kernel_id, self.shape_checks,
                             tuple(next(given) if p.ndim else None for p in k.params),
                             self.config.grid, self.config.block)
            if self.param_checks:
                check_params(k.__name__, tuple(p.name for p in k.params), self.param_checks,
                             tuple(scalars), self.config.grid, self.config.block)
            submit = self.submit
            if self.index32 and any(arr.launch_sig.wide for _, arr in arrays):
                submit = self.wide_submit or self.make_wide_submit()
            submit(*values)
            if foreign:
                self.hold(foreign)
        except Exception as exc:  # a wrong argument: the user's launch line, not our frames
            strip(exc)
            raise

    def make_wide_submit(self):
        c = self.config
        fn = self.kernel._function(self.variant, c.backend, c.device)
        c.check_function(fn, self.variant)
        self.wide_submit = make_submit(c.backend, fn, self.grid, self.block, c.shared_mem_bytes,
                                       c.handle, self.trailing, self.formats, self.variant.label,
                                       c.launch)
        return self.wide_submit

    def where(self, p: Param) -> str:
        return f"argument '{p.name}' of {self.kernel.__name__}"

    def array_argument(self, p: Param, dtype: str, arg) -> DeviceArray:
        want = p.annotation(dtype)
        if isinstance(arg, np.ndarray):
            # Refused on the simulator too, so that code written there runs on a GPU.
            lend = (f", or lend it to the simulator without a copy with "
                    f"gn.from_dlpack({p.name})" if self.config.backend.name != "cuda" else "")
            raise TypeError(f"{self.where(p)} is a NumPy array in host memory; copy it to the "
                            f"device first with gn.to_device({p.name}){lend} ({want} expected)")
        if not isinstance(arg, DeviceArray):
            if hasattr(arg, "__cuda_array_interface__") or hasattr(arg, "__dlpack__"):
                from .interop import from_foreign

                try:
                    # Ordered after the array's producer on the launch's stream.
                    arr = from_foreign(arg, what=self.where(p), stream=self.config.stream)
                except (TypeError, ValueError) as exc:
                    raise type(exc)(str(exc)) from None
            else:
                raise TypeError(f"{self.where(p)} must be a device array ({want}), not "
                                f"{type(arg).__name__}")
        else:
            arr = arg
        backend = self.config.backend
        if arr._backend is not backend:
            raise TypeError(f"{self.where(p)} was created by the {arr._backend.name} backend but "
                            f"kernels run on the {backend.name} backend")
        if dtype.startswith("{") and arr._info.name != dtype:
            want_info = parse_key(dtype)
            got = arr._info
            why = mismatch(want_info, got) if isinstance(got, StructInfo) else \
                f"its elements are {got.name}, not structs"
            raise TypeError(f"{self.where(p)} must be an array of structs of the parameter's "
                            f"layout, but {why}")
        if arr._info.name != dtype:
            hint = ""
            vector = abi.VECTOR_SLOTS.get(dtype)
            if vector is not None and arr._info.name == vector[0] and arr.shape[-1] == vector[1]:
                hint = (f"; its last axis holds {vector[1]} components: pass "
                        f"gn.to_device({p.name}, dtype=gn.{dtype}) (no copy)")
            raise TypeError(f"{self.where(p)} must be an array of {dtype} ({want}), but its "
                            f"elements are {arr._info.name}{hint}")
        if arr.ndim != p.ndim:
            raise TypeError(f"{self.where(p)} must be a {p.ndim}-D array ({want}), but it has "
                            f"{arr.ndim} dimension{'s' if arr.ndim != 1 else ''}")
        if p.mutable and not arr.is_writable:
            raise TypeError(f"{self.where(p)} is read-only, but {want} writes to it; pass a "
                            f"writable array")
        if not arr.is_contiguous and not p.strided:
            layout = want.replace("]", ", Strided]")
            raise TypeError(
                f"{self.where(p)} is a non-contiguous view (element strides "
                f"{arr.strides}), but {want} takes C-contiguous arrays only; annotate the "
                f"parameter {layout} to take strided views without a copy, or pass a "
                "contiguous copy (.copy(), .contiguous() in PyTorch)")
        if p.strided and p.mutable and arr.launch_sig_strided_mut is None:
            raise ValueError(
                f"{self.where(p)} is a view whose elements overlap (shape {arr.shape}, element "
                f"strides {arr.strides}): distinct indices would write one element, which the "
                f"unique-write rules of {want} forbid; pass a copy")
        if arr.device != self.config.device:
            raise ValueError(f"{self.where(p)} lives on device {arr.device}, but the launch is on "
                             f"device {self.config.device}; copy it or launch under "
                             f"gn.Device({arr.device})")
        return arr

    def struct_argument(self, p: Param, dtype: str, arg) -> list:
        """A struct parameter's scalars as their slots take them (see gpu_native.abi): from an
        instance of its ``@gpu_struct`` class or a NumPy structured scalar (``np.void``) of the
        same fields, each converted and range-checked as a scalar parameter is."""
        info = parse_key(dtype)
        where = self.where(p)
        given = getattr(arg, "__gpu_struct__", None)
        if isinstance(given, StructInfo) and given.name != dtype:
            raise TypeError(f"{where} is a {given.title} whose layout is not the parameter's: "
                            f"{mismatch(info, given)}")
        if isinstance(arg, np.void) and arg.dtype.names is not None:
            found = struct_info_of_dtype(arg.dtype)
            if found.name != dtype:
                raise TypeError(f"{where} is a NumPy struct whose dtype is not the "
                                f"parameter's: {mismatch(info, found)}")
        # A NumPy scalar read from a structured scalar is checked as the number it holds.
        leaves = [x.item() if isinstance(x, np.generic) else x
                  for x in leaf_values(info, arg, where)]
        return [self.scalar_argument(p, leaf.name, x, f"{where}, field {name},")
                for leaf, x, name in zip(info.leaves(), leaves, info.leaf_paths())]

    def vector_argument(self, p: Param, dtype: str, arg) -> list:
        """A vector parameter's components as their slots take them: from a vector of its type
        (``gn.vec3f(x, y, z)``) or any sequence of as many numbers (a tuple, a NumPy array)."""
        elem, n = abi.VECTOR_SLOTS[dtype]
        where = self.where(p)
        other = next((name for name, cls in VECTOR_CLASSES.items() if isinstance(arg, cls)), dtype)
        if other != dtype:
            raise TypeError(f"{where} must be a {dtype}, not a {other}; convert it, e.g. "
                            f"gn.{dtype}(v)")
        if isinstance(arg, (str, bytes)) or not hasattr(arg, "__len__"):
            raise TypeError(f"{where} must be a {dtype} (a gn.{dtype}, or a sequence of {n} "
                            f"numbers), not {type(arg).__name__}")
        items = list(arg)
        if len(items) != n:
            raise ValueError(f"{where} must be a {dtype}: {n} numbers, not {len(items)}")
        out = []
        for component, x in zip("xyzw", items):
            out.append(self.scalar_argument(p, elem, x, f"{where}, component {component},"))
        return out

    def complex_argument(self, p: Param, dtype: str, arg) -> list:
        """A complex parameter's real and imaginary parts as their slots take them: from any
        complex or real number (a Python ``complex``, ``gn.complex64``, a NumPy scalar), each
        part rounded to the part type (a part that would overflow it is refused)."""
        part = abi.COMPLEX_SLOTS[dtype][0]
        where = self.where(p)
        if isinstance(arg, (bool, np.bool_)) or not isinstance(
                arg, (complex, float, int, np.number)):
            raise TypeError(f"{where} must be a complex number ({dtype}), not "
                            f"{type(arg).__name__}")
        z = complex(arg)
        return [self.scalar_argument(p, part, z.real, f"{where}, real part,"),
                self.scalar_argument(p, part, z.imag, f"{where}, imaginary part,")]

    def scalar_argument(self, p: Param, dtype: str, arg, where: str | None = None):
        info = SCALARS[dtype]
        where = where or self.where(p)
        if info.kind == "bool":
            if isinstance(arg, (bool, np.bool_)):
                return bool(arg)
            raise TypeError(f"{where} must be a bool, not {type(arg).__name__}")
        if info.is_int:
            if isinstance(arg, (int, np.integer)) and not isinstance(arg, (bool, np.bool_)):
                value = int(arg)
                if not info.min <= value <= info.max:
                    raise ValueError(f"{where} is {value}, out of range for {dtype} "
                                     f"({info.min}..{info.max})")
                return value
            raise TypeError(f"{where} must be an integer ({dtype}), not "
                            f"{type(arg).__name__} {arg!r}")
        if isinstance(arg, (int, float, np.integer, np.floating)) and not isinstance(
                arg, (bool, np.bool_)):
            return _float_argument(where, dtype, arg)
        raise TypeError(f"{where} must be a number ({dtype}), not {type(arg).__name__}")

    def check_overlap(self, arrays: list[tuple[Param, DeviceArray]]) -> None:
        # The address ranges the arrays' elements lie in (a strided view's gaps count: two
        # interleaved views of one array, a[::2] and a[1::2], are refused too).
        for p, a in arrays:
            if not p.mutable:
                continue
            a_start, a_end = a.byte_range()
            for q, b in arrays:
                if q is p or b.nbytes == 0 or a.nbytes == 0:
                    continue
                b_start, b_end = b.byte_range()
                if a_start < b_end and b_start < a_end:
                    raise ValueError(
                        f"{self.where(p)} overlaps argument '{q.name}' in device memory; a "
                        "kernel's writable array must not share memory with its other array "
                        "arguments (its pointers are __restrict__)")

    def hold(self, objects: list) -> None:
        """Keep foreign arrays alive until the stream has passed this launch."""
        backend = self.config.backend
        event = backend.event_create()
        backend.event_record(event, self.config.handle)
        q = self.keepalive
        q.append((event, objects))
        while q and backend.event_query(q[0][0]):
            done, _ = q.popleft()
            backend.event_destroy(done)


def _float_argument(where: str, dtype: str, arg) -> float | int:
    """A float parameter's value as its slot takes it (bf16: its bits).  A finite value that
    would round to infinity in ``dtype`` is refused; inf and nan pass as they are."""
    try:
        value = float(arg)
    except OverflowError:  # an int beyond even f64's range
        value = None
    if value is not None and math.isfinite(value):
        limit = abi.FLOAT_OVERFLOW.get("f32" if dtype == "bf16" else dtype, math.inf)
        if not -limit < value < limit:
            value = None
    bits = None
    if value is not None and dtype == "bf16":
        from ..lang.halfprec import f32_to_bf16_bits

        bits = int(f32_to_bf16_bits(np.float32(value)))
        if bits & 0x7FFF == 0x7F80 and math.isfinite(value):  # rounded up to infinity
            value = None
    if value is None:
        top = abi.FLOAT_MAX[dtype]
        raise ValueError(f"{where} is {arg}, out of range for {dtype} (finite values "
                         f"{-top:.8g}..{top:.8g}, or inf or nan)")
    return value if bits is None else bits


def _find_kernel(module: str, qualname: str):
    import sys

    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _import_kernel(module: str, qualname: str):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj

