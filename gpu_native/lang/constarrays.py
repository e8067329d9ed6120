"""``const_array``: a module-level table that kernels read from CUDA's constant memory.

.. code-block:: python

    TAPS = const_array(np.hanning(9), f32, 9)     # at module level

    @gpu_kernel(Kernel1D)
    def smooth(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        ...  TAPS[j] ...                           # a read-only 1-D array of 9 f32

``const_array`` runs on the host, when the module is imported: it copies ``values`` into a new,
read-only NumPy array (C order, ``dtype``'s host dtype: ``uint16`` bit patterns for ``bf16``)
and returns it.  The copy is what every kernel sees: the generated CUDA declares the table
``__constant__`` and the runtime copies it there when it loads the kernel on a device
(``cuModuleGetGlobal`` and ``cuMemcpyHtoD``); the simulator reads the same copy.  Changing the
array ``values`` came from after the import changes nothing (as in Numba, whose constant arrays
are frozen when the kernel is compiled); the copy itself cannot be written.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .halfprec import f32_to_bf16_bits
from .types import scalar_info

__all__ = ["CONSTANT_BANK_BYTES", "const_array"]

#: The bytes of ``__constant__`` memory a CUDA module may declare (the 64 KiB constant bank of
#: every architecture gpu_native compiles for).
CONSTANT_BANK_BYTES = 64 * 1024


def const_array(values: Any, dtype: Any = None, shape: Any = None) -> np.ndarray:
    """A module-level table that kernels read from constant memory (``__constant__``).

    Parameters
    ----------
    values : array_like
        The elements; copied now (at import), so later changes to ``values`` are not seen.
    dtype : scalar type, optional
        The element type (``f32``, ``np.int32``, ``"float32"``...).  Without it, the transpiler
        takes it from a literal ``values`` (a list gives NumPy's ``int64``/``float64``/``bool``,
        ``np.array(..., dtype=...)`` its dtype).
    shape : int or tuple of int, optional
        The shape, 1 to 3 dimensions.  Without it, the transpiler takes it from a literal
        ``values``; with it, ``values`` must have exactly this shape.

    Returns
    -------
    numpy.ndarray
        A read-only copy of ``values``; host code may use it as any array.
    """
    try:
        info = scalar_info(np.asarray(values).dtype if dtype is None else dtype)
    except TypeError as exc:
        raise TypeError(f"const_array: {exc}; give dtype= a gpu_native scalar type "
                        "(f32, i32 ...)") from None
    raw = np.asarray(values)
    try:
        if info.name == "bf16" and raw.dtype != np.uint16:
            data = f32_to_bf16_bits(raw.astype(np.float32)).reshape(raw.shape)
        else:
            data = raw.astype(info.dtype)
    except (TypeError, ValueError) as exc:  # NumPy's: strings, objects, ragged lists
        raise ValueError(f"const_array: the values are not {info.name}: {exc}") from None
    if shape is not None:
        wanted = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
            int(n) for n in shape)
        if data.shape != wanted:
            raise ValueError(f"const_array: values have shape {data.shape}, not shape={wanted}")
    if not 1 <= data.ndim <= 3 or data.size == 0:
        raise ValueError(f"const_array: a constant array has 1 to 3 dimensions and at least one "
                         f"element, not shape {data.shape}")
    nbytes = math.prod(data.shape) * info.itemsize
    if nbytes > CONSTANT_BANK_BYTES:
        raise ValueError(f"const_array: {nbytes} bytes of {info.name} {data.shape} exceed the "
                         f"{CONSTANT_BANK_BYTES} bytes of constant memory")
    out = np.array(data, order="C", copy=True)
    out.flags.writeable = False
    return out
