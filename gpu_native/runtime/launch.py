"""The last step of a launch: pack the arguments into a preallocated buffer and call the backend.

:func:`make_submit` builds one ``submit(*values)`` closure per kernel and launch configuration.
Its buffer is packed with a single ``struct.pack_into`` (no NumPy on the hot path) and handed to
``cuLaunchKernel`` as a ``void**`` address.  A non-blocking lock guards the buffer: a thread that
finds it busy (another thread is launching the same configuration) packs a private buffer
instead of waiting, so concurrent launches are safe and never serialise on each other.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable

from .. import abi
from ..lang.structs import parse_key


def _value_slots(dtype: str) -> list[str]:
    """The slots of a value parameter: one, or one per component of a vector or part of a
    complex number."""
    vector = abi.VECTOR_SLOTS.get(dtype) or abi.COMPLEX_SLOTS.get(dtype)
    if vector is not None:
        elem, n = vector
        return [abi.SLOT_FORMATS[elem]] * n
    if dtype.startswith("{"):  # a struct's layout key: one slot per scalar, in order
        return [abi.SLOT_FORMATS[leaf.name] for leaf in parse_key(dtype).leaves()]
    return [abi.SLOT_FORMATS[dtype]]


def slot_formats(params, types: dict[str, str]) -> list[str]:
    """The struct format of each 8-byte argument slot, in kernel parameter order."""
    out: list[str] = []
    for p in params:
        if p.ndim:
            out.append(abi.POINTER_FORMAT)
            out.extend(abi.EXTENT_FORMAT for _ in range(p.slots - 1))  # extents (and strides)
        else:
            out.extend(_value_slots(types.get(p.dtype, p.dtype)))
    return out


def first_slots(params, types: dict[str, str]) -> list[int]:
    """The index of each parameter's first argument slot (as :func:`slot_formats` lays them)."""
    out, n = [], 0
    for p in params:
        out.append(n)
        n += p.slots if p.ndim else len(_value_slots(types.get(p.dtype, p.dtype)))
    return out


def fast_formats(params, types: dict[str, str]) -> list[str]:
    """The struct format of each parameter as a launcher's fast path packs it: an array as the
    bytes of its ``launch_args`` (address and extents, one slot each), a scalar as its slot (a
    vector, which the fast path never takes, as its components' slots)."""
    return [f"{abi.SLOT_SIZE * p.slots}s" if p.ndim
            else "".join(_value_slots(types.get(p.dtype, p.dtype))) for p in params]


class ArgumentBuffer:
    """Argument storage for one launch: ``n`` value slots, then the fixed trailing parameters
    (the error record's address, and for a kernel run over its logical uids the uid count and
    block size), and the ``void*`` array pointing at each slot (what ``cuLaunchKernel`` reads).
    With ``maps``, that many pointers between the two are the tensor maps' (128-byte values
    that live elsewhere: the launch sets them, see :mod:`.tensormaps`)."""

    __slots__ = ("address", "data", "pointers")

    def __init__(self, nslots: int, trailing: tuple[tuple[str, int], ...], maps: int = 0):
        total = nslots + len(trailing)
        self.data = ctypes.create_string_buffer(total * abi.SLOT_SIZE)
        base = ctypes.addressof(self.data)
        slots = [base + i * abi.SLOT_SIZE for i in range(total)]
        self.pointers = (ctypes.c_void_p * (total + maps))(
            *slots[:nslots], *[None] * maps, *slots[nslots:])
        for i, (fmt, value) in enumerate(trailing):
            struct.pack_into("<" + fmt, self.data, (nslots + i) * abi.SLOT_SIZE, value)
        self.address = ctypes.addressof(self.pointers)


def make_submit(backend, fn, grid: tuple[int, int, int], block: tuple[int, int, int],
                shared_mem_bytes: int, stream_handle, trailing: tuple[tuple[str, int], ...],
                formats: list[str], label: str, launch=None, maps: int = 0
                ) -> Callable[..., None]:
    """Build the ``submit(*values)`` closure of one kernel configuration (``launch``: the
    backend's ``cuLaunchKernel``, or another function of its signature); with ``maps`` tensor
    maps, ``submit(addresses, *values)``, ``addresses`` the maps' host addresses."""
    pack_into = struct.Struct("<" + "".join(formats)).pack_into
    nslots = len(formats)
    # Buffers are taken from a pool with list.pop/append, which are atomic under the GIL: a
    # thread launching this configuration while another is inside cuLaunchKernel (which runs
    # without the GIL) takes a second buffer instead of overwriting the first.
    pool = [ArgumentBuffer(nslots, trailing, maps)]
    take, give_back = pool.pop, pool.append
    launch = launch or backend.launch
    ok = backend.success
    gx, gy, gz = grid
    bx, by, bz = block

    def submit(*values):
        try:
            buf = take()
        except IndexError:
            buf = ArgumentBuffer(nslots, trailing)
        pack_into(buf.data, 0, *values)
        err = launch(fn, gx, gy, gz, bx, by, bz, shared_mem_bytes, stream_handle, buf.address, 0)[0]
        give_back(buf)
        if err is not ok and err != ok:
            raise backend.error_for(err)

    def submit_maps(addresses, *values):
        try:
            buf = take()
        except IndexError:
            buf = ArgumentBuffer(nslots, trailing, maps)
        pack_into(buf.data, 0, *values)
        buf.pointers[nslots:nslots + maps] = addresses
        err = launch(fn, gx, gy, gz, bx, by, bz, shared_mem_bytes, stream_handle, buf.address, 0)[0]
        give_back(buf)
        if err is not ok and err != ok:
            raise backend.error_for(err)

    chosen = submit_maps if maps else submit
    chosen.__qualname__ = f"submit[{label}]"
    return chosen
