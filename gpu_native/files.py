"""Opening a file whose path may name anything: a FIFO, a device, a directory.

``open()`` of a FIFO blocks until a writer comes, forever when none does, and reading a device
such as ``/dev/zero`` never ends.  The files gpu_native reads from places others may have put
things in (a module's source, the entries of the kernel cache, of a precompiled directory and of
the import hook's module cache, a ``manifest.json``) are opened here without blocking and checked
on the open descriptor, so nothing swapped in after a check of the path gets through: anything
but a regular file raises :class:`NotRegularFileError`, an ``OSError``, so a caller that treats
an unreadable file as missing does so for these too.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

__all__ = ["NotRegularFileError", "open_regular", "read_regular"]

_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
          | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class NotRegularFileError(OSError):
    """``filename`` names something other than a regular file; ``kind`` says what (``"a
    FIFO"``, ``"a directory"`` ...) and ``strerror`` says it in a phrase for messages."""

    def __init__(self, filename: str, kind: str):
        super().__init__(f"{filename}: {kind}, not a regular file")
        self.filename = filename
        self.kind = kind
        self.strerror = f"{kind}, not a regular file"


def open_regular(path: str, *, follow_symlinks: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file.

    Raises the ``OSError`` of the open (``FileNotFoundError`` ...), or
    :class:`NotRegularFileError`; with ``follow_symlinks=False`` a symbolic link is refused
    (``ELOOP``) rather than followed."""
    flags = _FLAGS | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise NotRegularFileError(path, kind)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int = -1, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` of them when it is not -1);
    raises as :func:`open_regular` does, or the ``OSError`` of the read."""
    with open_regular(path, follow_symlinks=follow_symlinks) as f:
        return f.read(limit)
