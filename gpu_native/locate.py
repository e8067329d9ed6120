"""Where the source of a module another module names is found: the rule of the transpiler's
``ModuleLocator`` (:mod:`gpu_native.check.scope`), kept free of libcst so that the import hook can check, on a
warm import, that a cached rewrite's dependencies still resolve to the files it read.  And the
name a module's file goes by in generated code and messages (:func:`display_file`).
"""

from __future__ import annotations

import os
import sys


def find_module_file(module: str, near: str | None = None,
                     extra_roots: tuple[str, ...] = ()) -> str | None:
    """The source file of ``module`` as the transpiler finds it, or None.

    Searched in order: the directory holding the top-level package of ``near`` (the file whose
    import is being resolved), the directory of ``near``, ``extra_roots``, then ``sys.path``
    (``""`` meaning the current directory); in each, ``module``'s path as a ``.py`` file, then as a
    package's ``__init__.py``.
    """
    parts = module.split(".")
    roots: list[str] = []
    if near:
        d = os.path.dirname(os.path.abspath(near))
        while os.path.exists(os.path.join(d, "__init__.py")):
            d = os.path.dirname(d)
        roots.append(d)
        roots.append(os.path.dirname(os.path.abspath(near)))
    roots.extend(extra_roots)
    roots.extend(p or os.getcwd() for p in sys.path)
    for root in roots:
        base = os.path.join(root, *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
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
