"""The import hook: a plain ``import mykernels`` imports gpu_native's rewrite of the module.

Every module that defines kernels is rewritten by :func:`gpu_native.rewrite.rewrite_module` (what
``gpu-native expand FILE`` prints) and the result is cached as bytecode beside the module's own
pyc (:mod:`.pycache`), so a warm import does not load the transpiler.

The hook is installed by ``import gpu_native`` and, before anything is imported, by the
``gpu_native.pth`` file the package installs into site-packages (see ``_gpu_native_startup``, the
part of the hook that has to be cheap enough to run in every Python process).
``GPU_NATIVE_DISABLE_HOOK=1`` turns it off; kernels are then transpiled by the ``gpu_kernel``
decorator from the function's source, as they are in ``__main__`` scripts and notebook cells.
``GPU_NATIVE_DEBUG=1`` prints one line per rewritten module on stderr, and :func:`status` says
what the hook did in this process.
"""

from __future__ import annotations

from _gpu_native_startup import install as install
from _gpu_native_startup import is_disabled as is_disabled
from _gpu_native_startup import status as status
from _gpu_native_startup import uninstall as uninstall

__all__ = ["install", "is_disabled", "status", "uninstall"]

install()
