"""Where the source of a function defined at run time is found.

gpu_native transpiles a kernel from its source.  A module the import hook rewrote has its file; a
kernel defined where no hook ran is transpiled by its decorator from the text the function was
compiled from (see :mod:`gpu_native.decorators`), and that text is found here:

* :mod:`linecache`, which holds the lines of files, of notebook cells (IPython registers each cell
  there, under the file name it compiles the cell with) and of strings given to
  :func:`register_source`;
* ``python -c CODE``: the command is in ``sys.orig_argv`` (Python 3.13 also puts it in
  :mod:`linecache`, as ``<string>``);
* ``python - < file``: standard input, when it is a regular file, is read again (``pread``, so
  nothing the program reads from it moves);
* IPython's ``%%time`` cells, which the magic compiles a second time under ``<timed exec>``: the
  text is the magic's own (the cell after its first line, as IPython transformed it).

``exec`` of a string, a pipe into ``python -``, and the interactive prompt keep no source; such
code names its source with :func:`register_source`.  Every source found for a name like
``<string>`` is checked to define the function on the line it was compiled at, so the source of
another ``exec`` cannot stand in for the right one.
"""

from __future__ import annotations
import __future__

import functools
import hashlib
import linecache
import operator
import os
import re
import stat
import sys
from importlib.machinery import SourceFileLoader, SourcelessFileLoader
from importlib.util import decode_source
from types import CodeType, FrameType

# Short options of the interpreter that take no argument, as `-Sc CODE` may cluster them.
_FLAGS = set("bBdEhiIOPqRsSuvVx?")
# Short options that take an argument (in the same word or the next one).
_WITH_ARGUMENT = set("WXm")


def register_source(source: str, filename: str | None = None) -> str:
    """Keep ``source`` so that kernels and device functions compiled from it can be transpiled.

    Code run by ``exec`` of a string keeps no source, and gpu_native transpiles kernels from
    theirs.  Compile the string under the name this returns instead::

        exec(compile(src, gn.register_source(src), "exec"), namespace)

    Parameters
    ----------
    source
        The text the code is compiled from (the whole string given to ``compile``).
    filename
        The name to compile it under, shown in errors; by default ``<gpu_native-HASH>``, named by
        the source's content.

    Returns
    -------
    str
        The file name to pass to :func:`compile`.  The text stays in :mod:`linecache` (as
        IPython keeps a notebook's cells), so tracebacks show its lines too.
    """
    if not isinstance(source, str):
        raise TypeError(f"register_source: source must be a str, not {type(source).__name__}")
    if filename is None:
        filename = f"<gpu_native-{hashlib.sha256(source.encode()).hexdigest()[:16]}>"
    elif not isinstance(filename, str):
        raise TypeError(f"register_source: filename must be a str, not "
                        f"{type(filename).__name__}")
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    # An mtime of None: linecache.checkcache keeps the entry (as IPython's cells are kept).
    linecache.cache[filename] = (len(source), None, lines, filename)
    return filename


def function_source(code: CodeType, name: str, globals_: dict) -> str | None:
    """The text ``code`` (the code of function ``name``) was compiled from, or None."""
    filename = code.co_filename
    # The file as it is now: after an edit and importlib.reload(), linecache would still serve
    # the text it read the first time (entries without a file, e.g. notebook cells, are kept).
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, globals_)
    if lines:
        text = "".join(lines)
        # A name in angle brackets is no file and may be shared: Python 3.13 keeps the command of
        # `python -c` in linecache as "<string>", the name exec() of a string compiles under too.
        if not _pseudo(filename) or defines(text, name, code.co_firstlineno):
            return text
    finder = _FINDERS.get(filename)
    if finder is None:
        return None
    try:
        source = finder(globals_)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, AttributeError):
        return None
    if source is None or not defines(source, name, code.co_firstlineno):
        return None
    return source


# A file name -> (its linecache size and mtime, the future flags, its functions' code objects
# by (name, first line)): one entry per file, replaced when the file changes.
_COMPILED: dict[str, tuple[tuple, dict[tuple[str, int], CodeType]]] = {}
_FUTURE = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                          for name in __future__.all_feature_names), 0)


def ran_other_code(source: str, code: CodeType, globals_: dict) -> bool:
    """Whether ``code``, a function's, was not compiled from ``source``, the text of its file on
    disk now: the file was edited after Python loaded it, or the code came from another text
    under its name (``exec(compile(edited, "kern.py", "exec"))``).  The whole text is compiled
    as Python compiles a module (closures and class bodies alike) and the function at the same
    line compared with ``code``: equal code objects have the same bytecode, constants, names and
    lines.  Only for a file on disk that linecache read from it, in a module Python's own
    loaders load (``globals_`` is the function's): a notebook cell's text is what IPython
    compiled after its own transformations, and a loader that rewrites the module (pytest's
    assertion rewriting, this package's import hook) compiles other code from the same text;
    neither is checked."""
    loader = globals_.get("__loader__")
    if loader is not None and type(loader) not in (SourceFileLoader, SourcelessFileLoader):
        return False
    filename = code.co_filename
    entry = linecache.cache.get(filename)
    # (A lazy entry, a 1-tuple, has not read the file.)
    if _pseudo(filename) or entry is None or len(entry) < 4 or entry[1] is None or \
            not os.path.isfile(filename):
        return False
    flags = code.co_flags & _FUTURE
    version = (entry[0], entry[1], flags)  # the text linecache holds, read at that mtime
    known = _COMPILED.get(filename)
    if known is None or known[0] != version:
        try:
            # With the `from __future__` flags the code was compiled with (a compile() inherits
            # its caller's), not this module's own.
            module = compile(source, filename, "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False  # the transpiler reports the file as it is
        functions: dict[tuple[str, int], CodeType] = {}
        stack = [module]
        while stack:
            current = stack.pop()
            functions.setdefault((current.co_name, current.co_firstlineno), current)
            stack.extend(c for c in current.co_consts if isinstance(c, CodeType))
        known = _COMPILED[filename] = (version, functions)
    return known[1].get((code.co_name, code.co_firstlineno)) != code


def _pseudo(filename: str) -> bool:
    """Whether ``filename`` names no file (``<string>``, ``<stdin>``, a registered source)."""
    return filename.startswith("<") and filename.endswith(">")


def defines(source: str, name: str, line: int) -> bool:
    """Whether ``source`` has ``def name`` at ``line`` or just below it (past its decorators)."""
    lines = source.splitlines()
    pattern = re.compile(rf"\s*(async\s+)?def\s+{re.escape(name)}\s*\(")
    return any(pattern.match(text) for text in lines[max(0, line - 1):line + 40])


def _command(globals_: dict) -> str | None:
    """The CODE of ``python -c CODE``, for the ``__main__`` it ran in."""
    if globals_.get("__name__") != "__main__" or sys.argv[:1] != ["-c"]:
        return None
    args = list(getattr(sys, "orig_argv", ()))[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or not arg.startswith("-") or arg.startswith("--"):
            return None  # a script or a long option: no -c before it
        for j, letter in enumerate(arg[1:], 1):
            if letter == "c":
                rest = arg[j + 1:]
                return rest if rest else (args[i + 1] if i + 1 < len(args) else None)
            if letter in _WITH_ARGUMENT:
                if j == len(arg) - 1:
                    i += 1  # its argument is the next word
                break
            if letter not in _FLAGS:
                return None
        i += 1
    return None


def _stdin(globals_: dict) -> str | None:
    """The script ``python -`` read from standard input, when that is a regular file."""
    if globals_.get("__name__") != "__main__" or sys.argv[:1] not in (["-"], [""]):
        return None
    pread = getattr(os, "pread", None)
    if pread is None:
        return None
    if not stat.S_ISREG(os.fstat(0).st_mode):
        return None  # a pipe or a terminal: what it held is gone
    size = os.fstat(0).st_size
    return decode_source(pread(0, size, 0))


def _timed_cell(globals_: dict) -> str | None:
    """The text of the ``%%time`` cell being run: IPython's ``time`` magic compiled it."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == "<timed exec>":
            caller = frame.f_back
            if caller is None or caller.f_code.co_name != "time":
                return None
            text = caller.f_locals.get("expr")
            return text if isinstance(text, str) else None
        frame = frame.f_back
    return None


_FINDERS = {"<string>": _command, "<stdin>": _stdin, "<timed exec>": _timed_cell}

__all__ = ["defines", "function_source", "register_source"]
