"""The traits of a kernel (:class:`gpu_native.ir.KernelTraits`): what it uses, noted as the type
pass meets it, which the launcher and the code generators read."""

from __future__ import annotations

from .. import ir
from ..lang.structs import StructInfo
from ..nodes import node


@node(frozen=False)
class TraitNotes:
    """What one function (and the device functions it calls) uses, noted by the type pass.

    ``uid_only``: nothing but the grid uid tells threads apart (no block uids, thread or block
    indices, warp operations, barriers or shared memory); the other flags say what it does use.
    """

    uid_only: bool = True
    uses_barriers: bool = False
    uses_shared: bool = False
    uses_dynamic_shared: bool = False
    uses_warp: bool = False
    uses_print: bool = False
    uses_grid_sync: bool = False
    uses_wgmma: bool = False
    arch: int = 0          # the oldest architecture whose GPUs have everything it uses
    arch_use: str = ""     # the first use that needs ``arch``, and where

    def note_special(self, name: str) -> None:
        """``thread_idx`` and the like, a warp operation (``"warp"``) or ``lane_id``."""
        self.uid_only = False
        if name in ("warp", "lane_id"):
            self.uses_warp = True

    def note_uid(self, scope: str) -> None:
        if scope == "block":
            self.uid_only = False

    def note_barrier(self, scope: str) -> None:
        if scope == "grid":
            # A barrier of every thread: none may leave early at the grid tail either.
            self.uses_barriers = self.uses_grid_sync = True
        elif scope == "block":
            self.uses_barriers = True
        else:
            self.uses_warp = True
        self.uid_only = False

    def note_shared(self, dynamic: bool) -> None:
        self.uses_shared = True
        self.uses_dynamic_shared = self.uses_dynamic_shared or dynamic
        self.uid_only = False

    def note_vector_load(self) -> None:
        """``load_vec4``: its checks report the physical thread (no ``_uids`` entry point)."""
        self.uid_only = False

    def note_wgmma(self) -> None:
        """A warpgroup operation (``warpgroup_mma`` ...): the kernel is built for sm_90a."""
        self.uses_wgmma = True

    def note_arch(self, arch: int, use: str) -> None:
        """A construct that only GPUs of compute capability ``arch / 10`` or newer have
        (``use`` names it and where it is)."""
        if arch > self.arch:
            self.arch, self.arch_use = arch, use

    def note_print(self) -> None:
        self.uses_print = True

    def merge(self, callee: TraitNotes) -> None:
        """A call: the caller uses what its callee uses."""
        self.uses_barriers = self.uses_barriers or callee.uses_barriers
        self.uses_warp = self.uses_warp or callee.uses_warp
        self.uses_print = self.uses_print or callee.uses_print
        self.uses_grid_sync = self.uses_grid_sync or callee.uses_grid_sync
        self.uses_wgmma = self.uses_wgmma or callee.uses_wgmma
        self.uses_shared = self.uses_shared or callee.uses_shared
        self.note_arch(callee.arch, callee.arch_use)
        self.uid_only = self.uid_only and callee.uid_only


def kernel_traits(notes: TraitNotes, ndim: int, parts: tuple,
                  device_functions: tuple[ir.DeviceFunction, ...]) -> ir.KernelTraits:
    """A kernel's traits from its notes; ``parts`` are its parameters, locals, body, shared and
    local arrays (searched for half types), ``device_functions`` every one it reaches."""
    return ir.KernelTraits(
        # Device functions report errors with physical coordinates: keep them out.
        uid_only=notes.uid_only and ndim == 1 and not device_functions,
        uses_barriers=notes.uses_barriers,
        uses_shared=notes.uses_shared,
        uses_dynamic_shared=notes.uses_dynamic_shared,
        uses_warp=notes.uses_warp,
        uses_half=uses_half(parts) or any(uses_half(d) for d in device_functions),
        uses_print=notes.uses_print,
        uses_grid_sync=notes.uses_grid_sync,
        uses_wgmma=notes.uses_wgmma,
        min_arch=notes.arch,
        arch_use=notes.arch_use,
    )


def uses_half(node) -> bool:
    """Does a kernel or device function touch f16/bf16 anywhere (it then needs the CUDA headers)?"""
    seen: set[int] = set()

    def walk(x) -> bool:
        if id(x) in seen:
            return False
        seen.add(id(x))
        if isinstance(x, ir.ScalarType):
            return x.info.name in ("f16", "bf16")
        if isinstance(x, ir.VectorType):  # vec2h, vec2bf
            return x.info.elem.name in ("f16", "bf16")
        if isinstance(x, (ir.ArrayType,)):
            return walk(x.elem)
        if isinstance(x, ir.TupleType):
            return walk(x.elems)
        if isinstance(x, ir.StructType):  # a field of f16, bf16, vec2h or vec2bf
            return any(getattr(f.info, "elem", f.info).name in ("f16", "bf16") or (
                isinstance(f.info, StructInfo) and walk(ir.StructType(f.info)))
                for f in x.info.fields)
        if isinstance(x, (tuple, list)):
            return any(walk(i) for i in x)
        if isinstance(x, (ir.Expr, ir.Stmt, ir.Var, ir.SharedDecl, ir.LocalArrayDecl)):
            return any(walk(v) for v in vars(x).values())
        if isinstance(x, (ir.DeviceFunction, ir.Kernel)):
            return any(walk(v) for v in (x.params, x.locals, x.body, getattr(x, "shared", ()),
                                         x.local_arrays, getattr(x, "ret", ir.VOID)))
        return False

    return walk(node)
