"""What every generated translation unit includes before its own code.

The helpers that give the kernel language its defined semantics where C++ leaves them undefined
or differs from Python (wrapping signed arithmetic, Python's floor division and modulo, clamped
shifts, saturating float-to-int conversion, NaN-propagating ``min``/``max`` in Python's argument
order, and the device error record of :mod:`gpu_native.abi`) live in a real header,
``gpu_native/include/gpu_native/prelude.cuh``, which :mod:`gpu_native.headers` reads and
``gpu-native expand --prelude`` prints.  A translation unit defines ``GN_KERNEL_ID`` and then
includes it by name; NVRTC is given the header in memory (:mod:`gpu_native.compiler.nvrtc`).
"""

from __future__ import annotations

from ..headers import PRELUDE

PRELUDE_INCLUDE = f'#include "{PRELUDE}"'

HALF_INCLUDES = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"

# grid_sync() is CUDA's own grid barrier (no -rdc needed since CUDA 11); the header comes from the
# CUDA runtime wheel, the CCCL headers it includes from the CCCL wheel (see compiler.nvrtc).
GRID_SYNC_INCLUDES = "#include <cooperative_groups.h>\n"
