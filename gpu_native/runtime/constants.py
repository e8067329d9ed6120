"""The values of a kernel's constant arrays (module-level ``const_array`` tables, see
:mod:`gpu_native.lang.constarrays`): found in the imported modules, checked, and kept.

The transpiler fixed each table's element type and shape from the source; the values are the
ones ``const_array`` copied when the module ran.  :func:`constant_arrays` looks them up the
first time a kernel variant is loaded (on any backend) and keeps them with the variant, so every
device, and the simulator, gets the same values: the CUDA backend copies them into the module's
``__constant__`` variables right after loading it (:func:`upload`), the simulator reads them
as read-only arrays.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np

from ..errors import GpuNativeError
from ..lang.types import SCALARS
from ..spec import ConstArray

__all__ = ["constant_arrays", "upload"]


def constant_arrays(kernel, variant) -> tuple[np.ndarray, ...]:
    """The arrays of ``variant``'s constant arrays, in the order of its spec's ``consts``
    (looked up and checked once, then kept on the variant)."""
    values = variant.const_values
    if values is None:
        values = variant.const_values = tuple(
            _lookup(kernel, variant.label, c) for c in variant.spec.consts)
    return values


def _namespace(kernel, const: ConstArray) -> dict | None:
    if const.module == kernel.spec.module:
        # The launcher factory was defined in the kernel's module (for a script or a notebook
        # cell, in the namespace the decorator ran in): its globals are that module's.
        namespace = getattr(kernel._factory, "__globals__", None)
        if namespace is not None:
            return namespace
    module = sys.modules.get(const.module)
    if module is None:
        try:
            module = importlib.import_module(const.module)
        except ImportError:
            return None
    return vars(module)


def _lookup(kernel, label: str, const: ConstArray) -> np.ndarray:
    namespace = _namespace(kernel, const)
    value = None if namespace is None else namespace.get(const.name)
    info = SCALARS[const.dtype]
    wanted = f"{const.dtype} of shape {const.shape}"
    if value is None:
        raise GpuNativeError(
            f"{label} reads the constant array {const.label}, which is not defined in "
            f"{const.module} now; it was compiled as {wanted}")
    if not isinstance(value, np.ndarray) or value.dtype != info.dtype or \
            value.shape != const.shape:
        found = (f"a {type(value).__name__}" if not isinstance(value, np.ndarray)
                 else f"an array of {value.dtype} and shape {value.shape}")
        raise GpuNativeError(
            f"{label} reads the constant array {const.label}, compiled as {wanted}, but "
            f"{const.name} is now {found}; bind it once, to const_array(...), and leave it")
    if value.flags.writeable or not value.flags.c_contiguous:
        # Not const_array's own copy (the module's name was rebound): freeze a copy of it.
        value = np.array(value, order="C", copy=True)
        value.flags.writeable = False
    return value


def upload(drv, check, module, kernel, variant) -> None:
    """Copy ``variant``'s constant arrays into the ``__constant__`` variables of ``module``, the
    CUDA module just loaded for it (``cuModuleGetGlobal``, then ``cuMemcpyHtoD``), and wait for
    the copies: a launch on a non-blocking stream is not ordered after them."""
    consts = variant.spec.consts
    if not consts:
        return
    for const, values in zip(consts, constant_arrays(kernel, variant)):
        ptr, size = check(drv.cuModuleGetGlobal(module, const.symbol.encode()),
                          f"finding the constant array {const.label} ({const.symbol})")
        if int(size) != values.nbytes:  # pragma: no cover - the declaration is generated
            raise GpuNativeError(f"{variant.label}: the constant array {const.label} takes "
                                 f"{int(size)} bytes in the module, not {values.nbytes}")
        check(drv.cuMemcpyHtoD(ptr, values.ctypes.data, values.nbytes),
              f"setting the constant array {const.label}")
    check(drv.cuStreamSynchronize(drv.CUstream(drv.CU_STREAM_LEGACY)),
          "waiting for the constant arrays")
