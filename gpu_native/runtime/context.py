"""One configured launch of one kernel variant: the arguments checked, converted and submitted.

A generated launcher (see :mod:`gpu_native.emit.host`) is built once per launch configuration
from a :class:`LaunchContext`.  Its fast path tests each argument inline and packs it with the
pieces :meth:`LaunchContext.fast_path` hands it (a :class:`FastPath`); anything unusual (a
NumPy array, another library's array, a value that needs converting, a launch-time check that
fails) takes :meth:`LaunchContext.slow`, which checks every argument one by one, explains what
is wrong with the parameter's name, converts, and launches.
"""

from __future__ import annotations

import builtins
import collections
import math
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .. import abi
from ..lang.structs import StructInfo, leaf_values, mismatch, parse_key, struct_info_of_dtype
from ..lang.types import COMPLEX_CLASSES, SCALARS, VECTOR_CLASSES
from ..nodes import Factory, node
from ..spec import Param, ParamCheck, ShapeAssert
from ..tracebacks import strip
from . import tensormaps
from .arrays import DeviceArray, signature
from .conversions import shown
from .disjoint import may_share_bytes
from .launch import ArgumentBuffer, fast_formats, first_slots, make_submit, slot_formats
from .launch_checks import check_params, check_shapes

if TYPE_CHECKING:
    from .kernel import Variant, _Config


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
        # The tensor maps of tma_load copies: checked (and on the GPU encoded and passed) by
        # the checked path, which every launch of such a kernel takes.
        self.tensor_maps = variant.spec.tensor_maps
        self.maps = len(self.tensor_maps) if config.backend.name == "cuda" else 0
        self.buffer = ArgumentBuffer(len(formats), trailing, self.maps)
        self.formats, self.trailing = formats, trailing
        self.submit = make_submit(config.backend, fn, grid, block, config.shared_mem_bytes,
                                  config.handle, trailing, formats, variant.label, config.launch,
                                  self.maps)
        # `fn` is the 32-bit index entry point: a call with an array of more than
        # abi.INDEX32_MAX_ELEMENTS elements submits through the main one instead.
        self.index32 = index32
        self.wide_submit: Callable[..., None] | None = None
        backend = config.backend
        self.signatures: dict[str, object] = {
            p.name: signature(backend.name, config.device, self.types.get(p.dtype, p.dtype),
                              p.ndim, strided=p.strided)
            for p in self.kernel.params if p.ndim}
        self.fast_launch = config.launch
        if self.maps:
            self.fast_launch = self.map_launch(config.launch)
        elif self.tensor_maps:  # the simulator: the checked path checks the sources
            for tm in self.tensor_maps:  # (a signature no argument carries)
                self.signatures[self.kernel.params[tm.param].name] = object()
        self.keepalive: collections.deque = collections.deque()
        self.param_checks = tuple(c for c in variant.launch_checks if isinstance(c, ParamCheck))
        self.shape_checks = tuple(c for c in variant.launch_checks
                                  if isinstance(c, ShapeAssert))

    def fast_path(self) -> FastPath:
        """The pieces of a generated launcher's fast path (see :class:`FastPath`)."""
        c = self.config
        backend = c.backend
        return FastPath(DeviceArray, int, float, bool, self.signatures, self.pack_into,
                        self.buffer.data, self.buffer.address, self.fast_launch, self.fn,
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
                    values.append(arr.launch_ptr)
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
            if self.tensor_maps:
                addresses = self.map_addresses(arrays)
                if self.maps:
                    submit(addresses, *values)
                else:
                    submit(*values)
            else:
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
                                       c.launch, self.maps)
        return self.wide_submit

    def map_launch(self, launch):
        """``launch`` (``cuLaunchKernel``) for the fast path of a kernel with tensor maps: each
        map's source is read back from the slots the fast path packed (its address and extents)
        and its encoded map's address set in the buffer's ``void*`` array (a cache lookup once
        the array has been seen)."""
        firsts = first_slots(self.kernel.params, self.types)
        plan = [(firsts[tm.param] * abi.SLOT_SIZE, tm, self.where(self.kernel.params[tm.param]))
                for tm in self.tensor_maps]
        data, pointers, nslots = self.buffer.data, self.buffer.pointers, len(self.formats)
        unpack = struct.Struct("<" + abi.POINTER_FORMAT + 2 * abi.EXTENT_FORMAT).unpack_from
        encoded = tensormaps.encoded

        def launch_with_maps(fn, gx, gy, gz, bx, by, bz, smem, stream, address, extra):
            try:
                for k, (offset, tm, where) in enumerate(plan):
                    ptr, rows, cols = unpack(data, offset)
                    pointers[nslots + k] = encoded(where, tm, ptr, (rows, cols))
            except Exception as exc:  # a source the copy engine cannot read: the user's line
                strip(exc)
                raise
            return launch(fn, gx, gy, gz, bx, by, bz, smem, stream, address, extra)

        return launch_with_maps

    def map_addresses(self, arrays: list[tuple[Param, DeviceArray]]) -> list[int]:
        """Check each tensor map's source array (on every backend, so that the simulator
        refuses what the GPU would) and, on the GPU, the host address of its encoded map."""
        given = {p.name: arr for p, arr in arrays}
        out = []
        for tm in self.tensor_maps:
            p = self.kernel.params[tm.param]
            arr = given[p.name]
            ptr, where = arr.launch_ptr, self.where(p)
            if self.maps:
                out.append(tensormaps.encoded(where, tm, ptr, arr.shape))
            else:
                tensormaps.check_source(where, ptr, arr.shape, arr._info.itemsize)
        return out

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
        try:
            z = complex(arg)
        except OverflowError:  # an int beyond any float: out of every part type's range
            bits = arg.bit_length() if isinstance(arg, int) else "many"
            raise ValueError(f"{where} is an integer of {bits} bits, out of range for "
                             f"{dtype}") from None
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
                    raise ValueError(f"{where} is {shown(value)}, out of range for {dtype} "
                                     f"({info.min}..{info.max})")
                return value
            raise TypeError(f"{where} must be an integer ({dtype}), not "
                            f"{type(arg).__name__} {arg!r}")
        if isinstance(arg, (int, float, np.integer, np.floating)) and not isinstance(
                arg, (bool, np.bool_)):
            return _float_argument(where, dtype, arg)
        raise TypeError(f"{where} must be a number ({dtype}), not {type(arg).__name__}")

    def check_overlap(self, arrays: list[tuple[Param, DeviceArray]]) -> None:
        """Refuse a writable array that shares a byte with another array argument (the kernel's
        pointers are ``__restrict__``).  Address ranges that do not meet settle it; only ranges
        that do (views of one array) are searched element by element (see
        :mod:`gpu_native.runtime.disjoint`), so ``a[:, ::2]`` and ``a[:, 1::2]`` pass."""
        spans = [a.byte_range() for _, a in arrays]
        for (p, a), (a_start, a_end) in zip(arrays, spans):
            if not p.mutable or a_start == a_end:
                continue
            for (q, b), (b_start, b_end) in zip(arrays, spans):
                if (q is not p and a_start < b_end and b_start < a_end and b_start != b_end
                        and may_share_bytes(a.byte_layout(), b.byte_layout())):
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
    if value is not None and not math.isfinite(value) and isinstance(arg, np.floating):
        # A finite np.longdouble beyond f64's range becomes inf in float() without a word.
        if np.isfinite(arg):
            value = None
    elif value is not None and math.isfinite(value):
        limit = abi.FLOAT_OVERFLOW.get("f32" if dtype == "bf16" else dtype, math.inf)
        if not -limit < value < limit:
            value = None
    bits = None
    if value is not None and dtype == "bf16":
        from ..lang.halfprec import f64_to_bf16_bits

        bits = int(f64_to_bf16_bits(value))  # one rounding, as bf16(x) of an f64 in a kernel
        if bits & 0x7FFF == 0x7F80 and math.isfinite(value):  # rounded up to infinity
            value = None
    if value is None:
        top = abi.FLOAT_MAX[dtype]
        # (str: format() prints a finite np.longdouble beyond f64 as inf)
        raise ValueError(f"{where} is {shown(arg)}, out of range for {dtype} (finite values "
                         f"{-top:.8g}..{top:.8g}, or inf or nan)")
    return value if bits is None else bits
