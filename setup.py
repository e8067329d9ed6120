"""The one packaging step pyproject.toml cannot say: install ``gpu_native.pth`` into site-packages.

The ``.pth`` file puts gpu_native's import hook in place at interpreter startup (see
``_gpu_native_startup.py``), so ``import mykernels`` is rewritten even when nothing imported
``gpu_native`` first.  It goes to the root of the wheel, beside the packages; an editable wheel
is assembled from a different directory, which the install command names.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "gpu_native.pth"


class build_py_with_pth(build_py):
    """``build_py`` that also puts ``gpu_native.pth`` at the root of the wheel."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            target = self.get_finalized_command("install").install_lib
        else:
            target = self.build_lib
        self.copy_file(os.path.join(os.path.dirname(os.path.abspath(__file__)), PTH),
                       os.path.join(target, PTH), preserve_mode=False)


setup(cmdclass={"build_py": build_py_with_pth})
