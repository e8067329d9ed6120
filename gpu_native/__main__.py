"""``python -m gpu_native``: the ``gpu-native`` command line (for an environment whose scripts
directory is not on ``PATH``, or to pick the interpreter: ``python3.12 -m gpu_native doctor``)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m gpu_native"))
