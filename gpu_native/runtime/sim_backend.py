"""The simulator backend: kernels run on the CPU (see :mod:`gpu_native.simulator`).

It keeps the CUDA backend's contract exactly, so the generated launchers do not know which one
they talk to: device memory is NumPy buffers at *simulated* device addresses, a launch receives the
same packed argument buffer as ``cuLaunchKernel`` (decoded here), and device errors are written
into the same error-record layout and raised at the same synchronisation points.
"""

from __future__ import annotations

import bisect
import ctypes
import struct
import threading
import time
from typing import TYPE_CHECKING, Any, SupportsInt

import numpy as np

from .. import log
from ..errors import CudaError, GpuNativeError, LaunchError
from ..lang.structs import StructInfo
from ..lang.types import VectorInfo, element_info
from ..tracebacks import boundary
from . import records
from .backend import Backend
from .launch import slot_formats

if TYPE_CHECKING:
    from ..ir import Kernel
    from ..simulator.program import SimProgram

_BASE = 0x7E0000000000
_ALIGN = 256
# Host memory lent to the simulator (a foreign CPU array, see SimMemory.lend) is seen at its own
# address plus this offset, above every simulated allocation: so two arrays that share memory
# overlap in simulated addresses too, and the launch's overlap check sees it.
HOST_WINDOW = 1 << 48


class _Ok:
    def __repr__(self) -> str:
        return "SIM_SUCCESS"


class SimMemory:
    """A simulated device address space over NumPy buffers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bases: list[int] = []
        self._buffers: dict[int, np.ndarray] = {}
        self._next = _BASE
        self._lent: dict[int, tuple[int, np.ndarray]] = {}  # token -> (address, bytes)
        # (host address, simulated base) of each buffer, sorted: see simulated_address.
        self._hosts: list[tuple[int, int]] = []

    def lend(self, host: np.ndarray) -> tuple[int, int]:
        """Make a C-contiguous host array's memory device memory of the simulator, without a
        copy: returns ``(address, token)``; :meth:`take_back` with the token ends the loan.
        Kernels then read and write the host array itself."""
        buf = host.reshape(-1).view(np.uint8)
        address = HOST_WINDOW + host.ctypes.data
        with self._lock:
            token = id(buf)
            self._lent[token] = (address, buf)
        return address, token

    def take_back(self, token: int) -> None:
        with self._lock:
            self._lent.pop(token, None)

    def alloc(self, nbytes: int) -> int:
        size = max(_ALIGN, (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN)
        try:
            buf = np.empty(size, dtype=np.uint8)
        except (MemoryError, ValueError):  # ValueError: past what NumPy can index
            # What a GPU says when its memory is short (the simulator's is host memory).
            raise CudaError("CUDA_ERROR_OUT_OF_MEMORY", 2, f"allocating {nbytes} bytes: out "
                            "of memory (the simulator's device memory is host memory)") from None
        with self._lock:
            base = self._next
            self._next += size + _ALIGN  # a gap, so a pointer past one buffer is in no other
            bisect.insort(self._bases, base)
            self._buffers[base] = buf
            bisect.insort(self._hosts, (buf.ctypes.data, base))
        return base

    def free(self, ptr: int) -> None:
        with self._lock:
            buf = self._buffers.pop(ptr, None)
            if buf is not None:
                i = bisect.bisect_left(self._bases, ptr)
                del self._bases[i]
                self._hosts.remove((buf.ctypes.data, ptr))

    def simulated_address(self, host_address: int, nbytes: int) -> int | None:
        """The simulated address of ``nbytes`` of host memory at ``host_address`` that lie in
        one of the simulator's allocations (a NumPy view of a device array's buffer, lent back
        to it through DLPack), or None: such memory is that allocation's, not a new loan."""
        with self._lock:
            i = bisect.bisect_right(self._hosts, (host_address, 1 << 64)) - 1
            if i < 0:
                return None
            start, base = self._hosts[i]
            buf = self._buffers[base]
        if host_address + nbytes > start + buf.size:
            return None
        return base + (host_address - start)

    def locate(self, ptr: int, nbytes: int) -> tuple[np.ndarray, int]:
        if ptr >= HOST_WINDOW:
            return self._locate_lent(ptr, nbytes)
        with self._lock:
            i = bisect.bisect_right(self._bases, ptr) - 1
            if i < 0:
                raise GpuNativeError(f"simulated address {ptr:#x} is not device memory")
            base = self._bases[i]
            buf = self._buffers[base]
        offset = ptr - base
        if offset + nbytes > buf.size:
            raise GpuNativeError(f"simulated access of {nbytes} bytes at {ptr:#x} runs past its "
                                 "allocation")
        return buf, offset

    def _locate_lent(self, ptr: int, nbytes: int) -> tuple[np.ndarray, int]:
        # Loans are few (the foreign arrays of the launches in flight) and may overlap (views
        # of one array), so a scan finds one that holds the whole access.
        with self._lock:
            loans = list(self._lent.values())
        for base, buf in loans:
            if base <= ptr and ptr + nbytes <= base + buf.size:
                return buf, ptr - base
        raise GpuNativeError(f"simulated address {ptr:#x} ({nbytes} bytes) is not in any host "
                             "array lent to the simulator")

    def view(self, ptr: int, dtype, shape) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape)) if len(shape) else 1
        buf, offset = self.locate(ptr, count * dtype.itemsize)
        return buf[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


class _SimErrors:
    """What a simulated kernel reports errors to: the launch's error record."""

    def __init__(self, record: np.ndarray, device_ptr: int, kernel_id: int):
        self.record = record
        self.device_ptr = device_ptr
        self.kernel_id = kernel_id

    def fail(self, site: int, index: int, length: int, block, thread) -> None:
        rec = self.record
        rec["count"] = min(int(rec["count"]) + 1, 0xFFFFFFFF)
        if rec["state"] == 0:
            rec["site"] = site
            rec["kernel"] = self.kernel_id
            rec["index"] = int(index)
            rec["length"] = int(length)
            rec["block"] = tuple(int(v) for v in block)
            rec["thread"] = tuple(int(v) for v in thread)
            rec["state"] = 2

    def race(self, message: str) -> None:
        records.note_race(self.device_ptr, message)


class SimFunction:
    """A kernel specialisation loaded into the simulator (compiled to NumPy code on first use).

    It runs the IR the rewrite embedded in the kernel's spec (``VariantSpec.ir``, see
    :mod:`gpu_native.ircodec`): exactly the kernel that was imported, whatever happened to its
    source file since, and with no transpiler in the process.
    """

    def __init__(self, kernel, variant) -> None:
        self.kernel = kernel
        self.variant = variant
        formats = slot_formats(kernel.params, variant.type_map)
        self.formats = [*formats, "Q"]
        self._ir: Kernel | None = None
        self._program: SimProgram | None = None
        self._static_shared: int | None = None
        # As for a CUDA function: dynamic shared memory beyond what fits beside the static
        # arrays in 48 KiB needs the opt-in attribute (SimBackend.allow_dynamic_shared).
        self.max_dynamic_shared: int | None = None

    @property
    def ir(self) -> Kernel:
        """The kernel's checked IR (decoded on first use)."""
        if self._ir is None:
            from ..ircodec import decode_kernel

            data = self.variant.spec.ir
            if not data:
                raise GpuNativeError(
                    f"{self.variant.label} was rewritten without the IR the simulator runs (by "
                    "an older gpu_native); delete the module's __pycache__ and import it again")
            self._ir = decode_kernel(data, self.variant.label)
        return self._ir

    @property
    def static_shared_bytes(self) -> int:
        """The static shared memory of one block, as ptxas lays it out."""
        if self._static_shared is None:
            from ..ir import static_shared_bytes

            self._static_shared = static_shared_bytes(self.ir.shared)
        return self._static_shared

    @property
    def consts(self) -> tuple[np.ndarray, ...]:
        """The values of the kernel's constant arrays (read-only; see runtime.constants)."""
        if not self.variant.spec.consts:
            return ()
        from .constants import constant_arrays

        return constant_arrays(self.kernel, self.variant)

    @property
    def program(self) -> SimProgram:
        if self._program is None:
            from ..simulator import compile_kernel

            self._program = compile_kernel(self.ir)
        return self._program


class SimBackend(Backend):
    """Runs kernels on the CPU with the GPU's semantics (one simulated device)."""

    name = "sim"

    def __init__(self) -> None:
        self.success = _Ok()
        self.memory = SimMemory()
        self._streams = 0
        self._lock = threading.Lock()
        self._properties: dict[str, Any] = {
            "name": "gpu_native CPU simulator", "major": 9, "minor": 0, "arch": "sm_90",
            "multiprocessors": 1, "max_threads_per_block": 1024, "max_block": (1024, 1024, 64),
            "max_grid": (2**31 - 1, 65535, 65535), "max_shared_per_block": 48 * 1024,
            "max_shared_per_block_optin": 227 * 1024, "total_memory": 16 * 2**30,
            "unified_addressing": 1,
        }

    def error_for(self, err) -> Exception:  # pragma: no cover - the simulator does not fail so
        return GpuNativeError(f"simulated launch failed: {err}")

    # devices
    def device_count(self) -> int:
        return 1

    def set_thread_device(self, ordinal: int) -> None:
        pass

    def properties(self, ordinal: int) -> dict:
        return self._properties

    # memory
    def alloc(self, nbytes: int, ordinal: int) -> int:
        return self.memory.alloc(nbytes)

    def free(self, ptr: int, ordinal: int) -> None:
        self.memory.free(ptr)

    def copy_htod(self, ptr: int, host: np.ndarray) -> None:
        if host.nbytes:
            buf, off = self.memory.locate(ptr, host.nbytes)
            buf[off:off + host.nbytes] = np.ascontiguousarray(host).reshape(-1).view(np.uint8)

    def copy_dtoh(self, host: np.ndarray, ptr: int) -> None:
        if host.nbytes:
            buf, off = self.memory.locate(ptr, host.nbytes)
            host.reshape(-1).view(np.uint8)[:] = buf[off:off + host.nbytes]

    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            sbuf, soff = self.memory.locate(src, nbytes)
            dbuf, doff = self.memory.locate(dst, nbytes)
            dbuf[doff:doff + nbytes] = sbuf[soff:soff + nbytes].copy()

    def memset8(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes:
            buf, off = self.memory.locate(ptr, nbytes)
            buf[off:off + nbytes] = value

    def alloc_mapped(self, nbytes: int, ordinal: int) -> tuple[np.ndarray, int]:
        ptr = self.memory.alloc(nbytes)
        view = self.memory.view(ptr, np.uint8, (nbytes,))
        view[:] = 0
        return view, ptr

    # streams and events: simulated launches run to completion when submitted
    def stream_create(self, ordinal: int) -> SupportsInt:
        with self._lock:
            self._streams += 1
            return self._streams

    def stream_destroy(self, handle: object) -> None:
        pass

    def default_stream(self, ordinal: int) -> SupportsInt:
        return 0

    def stream_value(self, handle: SupportsInt) -> int:
        return int(handle)

    def stream_sync(self, handle: object) -> None:
        pass

    def device_sync(self) -> None:
        pass

    def event_create(self) -> object:
        return [0.0]

    def event_record(self, event, stream) -> None:
        event[0] = time.perf_counter()

    def event_sync(self, event) -> None:
        pass

    def event_query(self, event) -> bool:
        return True

    def event_elapsed_ms(self, start, end) -> float:
        return (end[0] - start[0]) * 1000.0

    def event_destroy(self, event) -> None:
        pass

    def stream_wait_event(self, stream, event) -> None:
        pass

    def stream_wait_stream(self, waiter, producer) -> None:
        pass

    def fence_nonblocking(self, ordinal: int) -> None:
        pass

    # kernels
    def load(self, kernel, variant, ordinal: int, symbol: str | None = None) -> object:
        log.debug("loaded kernel %s into the simulator", variant.label)
        return SimFunction(kernel, variant)

    def function_attribute(self, fn: SimFunction, name: str) -> int:
        """What ``cuFuncGetAttribute`` reports for a loaded kernel (for the launch checks of
        ``gpu_native.runtime.kernel``, which then hold on both backends alike)."""
        if name == "MAX_THREADS_PER_BLOCK":
            return self._properties["max_threads_per_block"]
        if name == "SHARED_SIZE_BYTES":
            return fn.static_shared_bytes
        raise ValueError(f"the simulator has no function attribute {name}")

    # The occupancy the simulator reports: a multiprocessor of an sm_90 GPU (2048 threads, 32
    # blocks and 228 KiB of shared memory, 1 KiB of it reserved per block), registers not
    # counted.  It bounds cooperative launches as on a GPU with `multiprocessors` of them.
    SM_THREADS = 2048
    SM_BLOCKS = 32
    SM_SHARED = 228 * 1024
    BLOCK_RESERVED_SHARED = 1024

    def max_block_size(self, fn: SimFunction, shared_mem_bytes: int) -> int:
        """What ``kernel.forall`` uses on the simulator: a fixed 256 (see runtime.sizing)."""
        from .sizing import SIM_BLOCK_SIZE

        return SIM_BLOCK_SIZE

    def max_active_blocks(self, fn: SimFunction, threads: int, shared_mem_bytes: int) -> int:
        """``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for the modelled multiprocessor."""
        shared = fn.static_shared_bytes + shared_mem_bytes + self.BLOCK_RESERVED_SHARED
        return max(0, min(self.SM_BLOCKS, self.SM_THREADS // max(1, threads),
                          self.SM_SHARED // shared))

    def allow_dynamic_shared(self, fn: SimFunction, nbytes: int) -> None:
        """``cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)``: the opt-in to more than 48 KiB."""
        if fn.static_shared_bytes + nbytes > self._properties["max_shared_per_block_optin"]:
            raise LaunchError(f"{fn.variant.label}: cannot allow {nbytes} bytes of dynamic "
                              "shared memory beside its static shared memory (the device's "
                              "opt-in limit)")
        fn.max_dynamic_shared = nbytes

    @boundary  # an error the simulated kernel raised at once: the launch line, not our frames
    def launch(self, fn: SimFunction, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        limit = fn.max_dynamic_shared
        if limit is None:
            limit = self._properties["max_shared_per_block"] - fn.static_shared_bytes
        if shmem > limit:
            # cuLaunchKernel refuses this launch (CUDA_ERROR_INVALID_VALUE): the launcher's
            # checks (kernel._Config.check_function) should have opted in or refused it.
            raise LaunchError(f"{fn.variant.label}: {shmem} bytes of dynamic shared memory "
                              f"exceed the {limit} its function allows")
        count = len(fn.formats)
        pointers = (ctypes.c_size_t * count).from_address(params)  # void* params[count]
        values = [struct.unpack("<" + fmt, ctypes.string_at(pointers[i], 8))[0]
                  for i, fmt in enumerate(fn.formats)]
        types = fn.variant.type_map
        args: list = []
        i = 0
        for p in fn.kernel.params:
            info = element_info(types.get(p.dtype, p.dtype))
            if p.ndim and p.strided:
                shape = tuple(values[i + 1:i + 1 + p.ndim])
                strides = tuple(values[i + 1 + p.ndim:i + 1 + 2 * p.ndim])
                args.append(self._strided(values[i], info, shape, strides))
                i += p.slots
            elif isinstance(info, StructInfo):
                if p.ndim:
                    shape = tuple(values[i + 1:i + 1 + p.ndim])
                    args.append(self.memory.view(values[i], info.dtype, shape))
                    i += 1 + p.ndim
                else:  # one slot per scalar (see gpu_native.abi)
                    n = len(info.leaves())
                    args.append(tuple(values[i:i + n]))
                    i += n
            elif isinstance(info, VectorInfo):
                if p.ndim:  # the elements' components on a last axis of their own
                    shape = (*values[i + 1:i + 1 + p.ndim], info.n)
                    args.append(self.memory.view(values[i], info.elem.dtype, shape))
                    i += 1 + p.ndim
                else:  # one slot per component (see gpu_native.abi)
                    args.append(tuple(values[i:i + info.n]))
                    i += info.n
            elif p.ndim:
                shape = tuple(values[i + 1:i + 1 + p.ndim])
                args.append(self.memory.view(values[i], info.dtype, shape))
                i += 1 + p.ndim
            else:
                value = values[i]
                i += 1
                if info.name == "bf16":
                    args.append(np.uint16(value))  # bf16 scalars travel as their bit pattern
                else:
                    args.append(info.dtype.type(value))
        err_ptr = values[-1]
        record = self.memory.view(err_ptr, records.RECORD_DTYPE, (1,))[0]
        errors = _SimErrors(record, err_ptr, fn.variant.kernel_id)
        fn.program.run((gx, gy, gz), (bx, by, bz), int(shmem), args, errors, fn.consts)
        return (self.success,)

    def _strided(self, ptr: int, info, shape: tuple[int, ...], strides: tuple[int, ...]):
        """A Strided parameter's memory: the elements its view spans, and where its first
        element is among them."""
        from ..simulator.memory import StridedArray
        from .arrays import element_span

        lo, hi = element_span(shape, strides)
        if isinstance(info, VectorInfo):
            span = self.memory.view(ptr + lo * info.itemsize, info.elem.dtype,
                                    (hi - lo + 1, info.n))
        else:
            span = self.memory.view(ptr + lo * info.itemsize, info.dtype, (hi - lo + 1,))
        return StridedArray(span, -lo, shape, strides)

    # A cooperative kernel runs its whole grid as one chunk (gpu_native.simulator.program), which
    # is what grid_sync() needs; the launcher has checked that the grid fits (runtime.sizing).
    launch_cooperative = launch
