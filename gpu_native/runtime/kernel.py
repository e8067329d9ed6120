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

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, ParamSpec

import numpy as np

from .. import abi, settings
from ..errors import LaunchError
from ..lang.layouts import BlockDim1D, BlockDim2D, BlockDim3D, GridDim1D, GridDim2D, GridDim3D
from ..lang.types import SCALARS
from ..nodes import Factory, node
from ..spec import (
    KernelSpec,
    LaunchCheck,
    Param,
    Site,
    Trait,
    VariantSpec,
)
from ..tracebacks import boundary, launcher_code, strip
from . import backend as B
from . import sizing
from .arrays import DeviceArray
from .context import LaunchContext
from .devices import _tls, bind_thread
from .launch_checks import check_launch
from .records import register_kernel
from .sizing import EXACT_DIMS, EXACT_INTS
from .streams import DEFAULT_STREAM, as_stream

# Kernels that depend only on their uid run in blocks of UID_THREADS threads, each thread taking
# one uid (or one chunk of four); UID_BLOCKS_PER_SM > 0 caps the grid so that threads loop
# instead, for kernels that cannot fail (a failing uid ends its physical thread, which would skip
# the thread's later uids).  GPU_NATIVE_UID_REMAP=0 launches such kernels exactly as written.
UID_REMAP = bool(settings.flag("GPU_NATIVE_UID_REMAP", True))
UID_THREADS = 256
UID_BLOCKS_PER_SM = settings.integer("GPU_NATIVE_UID_BLOCKS_PER_SM", 0)
# Kernels with a 32-bit index entry point run it when the grid and the arrays are small enough
# (see gpu_native.abi); GPU_NATIVE_INDEX32=0 always runs the main, 64-bit one.
INDEX32 = bool(settings.flag("GPU_NATIVE_INDEX32", True))
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
            entry = _tls.launchers[(self, grid, block, shared_mem_bytes, stream)]
            # A key equal to a cached one may hold a float or a bool (1.0 == True == 1): those
            # are configured, and so refused, as on a miss.  The very objects that were
            # configured (a launch in a loop passes the same ones) need no second look.
            if ((entry[0] is grid and entry[1] is block and entry[2] is shared_mem_bytes)
                    or (type(shared_mem_bytes) in EXACT_INTS
                        and (type(grid) in EXACT_DIMS or sizing.is_exact(grid))
                        and (type(block) in EXACT_DIMS or sizing.is_exact(block)))):
                return entry[3]
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
            entry = _tls.launchers[(self, config)]
            # (A float or a bool equal to a cached key is refused below.)  ``kernel[1, 256]``
            # passes the same constant tuple on every call: that object was checked when cached.
            if (entry[0] is config or (len(config) == 2 and type(config[0]) in EXACT_DIMS
                                       and type(config[1]) in EXACT_DIMS)
                    or sizing.is_exact_item(config)):
                return entry[1]
        except (AttributeError, KeyError, TypeError):
            pass
        try:
            launcher = self.launch(*sizing.item_config(self.__name__, config))
        except Exception as exc:
            strip(exc)
            raise
        try:
            _thread_cache()[(self, config)] = (config, launcher)
        except TypeError:  # an unhashable entry (a list): works, just not cached
            pass
        return launcher

    def forall(self, shape: Dims, stream: object = DEFAULT_STREAM,
               shared_mem_bytes: int = 0) -> Callable[P, None]:
        """The launcher of a grid that covers ``shape``, with the block size the occupancy API
        suggests for this kernel on this device.

        ``shape`` is an int (a 1-D problem) or a tuple of up to 3 ints in NumPy order (rows
        first: ``forall(out.shape)``); the last axis maps to x.  A shape with an extent of 0
        launches nothing (the launcher checks only its stream and how many arguments it gets).  On the simulator every kernel
        gets blocks of 256 threads.  For a cooperative kernel the grid is capped at the blocks
        that can be resident at once (its threads then loop with ``grid_stride``).
        """
        key = (self, sizing.forall_shape, shape, shared_mem_bytes, stream)
        try:
            entry = _tls.launchers[key]
            if ((entry[0] is shape and entry[1] is shared_mem_bytes)
                    or (type(shared_mem_bytes) in EXACT_INTS
                        and (type(shape) in EXACT_DIMS or sizing.is_exact(shape)))):
                return entry[2]  # (a float or a bool equal to a cached key is refused below)
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
        props = backend.properties(device)
        self._check_block(b, props)  # as a launch with this block would be refused
        shared_mem_bytes = self._check_shared(shared_mem_bytes, props)
        variant = next(iter(self.variants.values()))
        return min(sizing.cooperative_limit(backend, fn, device, b[0] * b[1] * b[2],
                                            shared_mem_bytes)[0]
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
        if any(d < 1 for d in dims):
            raise LaunchError(f"{what} dimensions must be at least 1, got {value!r}")
        # Extra axes of extent 1 ((32, 1) for a Kernel1D) change no thread's coordinates.
        if ndim > self.ndim and any(d != 1 for d in dims[self.ndim:]):
            names = {1: "Kernel1D", 2: "Kernel2D", 3: "Kernel3D"}
            raise LaunchError(
                f"{self.__name__} is a {names[self.ndim]} kernel but was launched with a "
                f"{ndim}-D {what} {value!r}; its unique ids would not be unique")
        x, y, z = dims
        return x, y, z

    def _check_block(self, b: tuple[int, int, int], props: dict) -> None:
        threads = b[0] * b[1] * b[2]
        if threads > props["max_threads_per_block"]:
            raise LaunchError(f"{self.__name__}: a block of {b[0]}x{b[1]}x{b[2]} = {threads} "
                              f"threads exceeds the device limit of "
                              f"{props['max_threads_per_block']}")
        for axis, (n, limit) in enumerate(zip(b, props["max_block"])):
            if n > limit:
                raise LaunchError(f"{self.__name__}: block dimension {'xyz'[axis]} = {n} "
                                  f"exceeds the device limit of {limit}")

    def _check_shared(self, shared_mem_bytes, props: dict) -> int:
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
        return shared_mem_bytes

    def _configure(self, grid, block, shared_mem_bytes, stream):
        device = getattr(_tls, "device", None)
        if device is None:
            device = bind_thread()
        backend = B.select()
        g = self._dims(grid, "grid")
        b = self._dims(block, "block")
        props = backend.properties(device)
        self._check_block(b, props)
        for axis, (n, limit) in enumerate(zip(g, props["max_grid"])):
            if n > limit:
                raise LaunchError(f"{self.__name__}: grid dimension {'xyz'[axis]} = {n} "
                                  f"exceeds the device limit of {limit}")
        shared_mem_bytes = self._check_shared(shared_mem_bytes, props)
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
            _thread_cache()[(self, grid, block, shared_mem_bytes, stream)] = (
                grid, block, shared_mem_bytes, launcher)
        except TypeError:  # an unhashable grid (a list, say): works, just not cached
            pass
        return launcher

    def _configure_forall(self, shape, stream, shared_mem_bytes, key):
        extents = sizing.forall_shape(self.__name__, self.ndim, shape)
        if not isinstance(shared_mem_bytes, (int, np.integer)) or isinstance(
                shared_mem_bytes, (bool, np.bool_)):
            raise TypeError(f"shared_mem_bytes must be an int, not "
                            f"{type(shared_mem_bytes).__name__} {shared_mem_bytes!r:.60}")
        if 0 in extents:
            # An empty problem (a stage whose input came out empty) launches nothing, as
            # Numba's forall(0) does; its stream and argument count are still checked.
            as_stream(stream)

            def nothing(*args):
                try:
                    _select_variant(self, args)
                except Exception as exc:
                    strip(exc)
                    raise

            nothing.__qualname__ = nothing.__name__ = self.__name__
            launcher = nothing
        elif self.typevars:
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
            _thread_cache()[key] = (shape, shared_mem_bytes, launcher)
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

