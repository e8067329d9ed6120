"""Where the source of a module another module names is found: the rule of the transpiler's
``ModuleLocator`` (:mod:`gpu_native.check.scope`), kept free of libcst so that the import hook can check, on a
warm import, that a cached rewrite's dependencies still resolve to the files it read.  And the
name a module's file goes by in generated code and messages (:func:`display_file`).

A module may also sit in a zip archive on ``sys.path`` (``PYTHONPATH=pkgs.zip``): it is found, and
read, through :mod:`zipimport`, the loader Python imports it with, under the path zipimport gives
it (``pkgs.zip/mypkg/devs.py``, as its ``__file__`` reads).
"""

from __future__ import annotations

import os
import sys
import zipimport


def find_module_file(module: str, near: str | None = None,
                     extra_roots: tuple[str, ...] = ()) -> str | None:
    """The source file of ``module`` as the transpiler finds it, or None.

    Where ``near`` (the file whose import is being resolved) was imported through ``sys.path``
    (the directory holding its top-level package is on it: the import hook's case), the order
    is Python's own: ``extra_roots``, then ``sys.path`` (``""`` meaning the current directory),
    then that directory and ``near``'s own.  Otherwise (``gpu-native expand`` or ``precompile``
    of a file that the path does not reach) the file is read as if it were run: those two
    directories first, then ``extra_roots`` and ``sys.path``.  In each root, ``module``'s path
    as a ``.py`` file, then as a package's ``__init__.py``.
    """
    parts = module.split(".")
    near_roots: list[str] = []
    if near:
        d = os.path.dirname(os.path.abspath(near))
        while os.path.exists(os.path.join(d, "__init__.py")):
            d = os.path.dirname(d)
        near_roots = [d, os.path.dirname(os.path.abspath(near))]
    path_roots = [*extra_roots, *(p or os.getcwd() for p in sys.path)]
    on_path = bool(near_roots) and near_roots[0] in {os.path.abspath(p) for p in path_roots}
    roots = path_roots + near_roots if on_path else near_roots + path_roots
    for root in roots:
        if os.path.isfile(root):  # a zip archive on sys.path, or no directory at all
            found = _in_archive(module, root)
            if found is not None:
                return found
            continue
        base = os.path.join(root, *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    return None


def _in_archive(module: str, archive: str) -> str | None:
    """The path of ``module``'s source in the zip ``archive``, as zipimport names it, or None
    (not there, or there without its source)."""
    parts = module.split(".")
    try:
        importer = zipimport.zipimporter(os.path.join(archive, *parts[:-1]))
        spec = importer.find_spec(module)
    except (zipimport.ZipImportError, OSError):
        return None
    origin = spec.origin if spec is not None else None
    return origin if origin and origin.endswith(".py") else None


def archived_bytes(path: str) -> bytes | None:
    """The bytes of ``path`` when it lies in a zip archive (``pkgs.zip/mypkg/devs.py``), read
    through zipimport; None when no archive holds it."""
    archive = os.path.dirname(path)
    while archive and not os.path.exists(archive):
        parent = os.path.dirname(archive)
        if parent == archive:
            return None
        archive = parent
    if not os.path.isfile(archive):
        return None
    try:
        return zipimport.zipimporter(archive).get_data(path)
    except (zipimport.ZipImportError, OSError):
        return None


def display_file(module_name: str, path: str) -> str:
    """The file name written into ``#line`` directives: stable across machines, so a kernel
    precompiled in one directory matches its artifact when installed in another."""
    base = os.path.basename(path)
    if module_name in ("", "__main__") or ("." not in module_name and base != "__init__.py"):
        return base
    parts = module_name.split(".")
    if base == "__init__.py":
        return "/".join(parts) + "/__init__.py"
    return "/".join(parts[:-1] + [base])
