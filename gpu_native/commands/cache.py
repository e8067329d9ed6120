"""``gpu-native cache info`` and ``gpu-native cache clear``: the per-user cache (compiled kernels,
the import hook's rewritten modules, NVRTC version records; see
:mod:`gpu_native.cache.housekeeping`)."""

from __future__ import annotations

import argparse
import os

import _gpu_native_startup as _startup


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the per-user cache of compiled kernels and "
                       "rewritten modules",
                       description="The per-user cache of compiled kernels and of the import "
                       "hook's rewritten modules (set GPU_NATIVE_CACHE_DIR to move it, "
                       "GPU_NATIVE_CACHE_MAX_BYTES to cap it).")
    actions = p.add_subparsers(dest="cache_action", metavar="{info,clear}", required=True)
    actions.add_parser("info", help="location, compiled kernels and rewritten modules, and their "
                       "size against the cap")
    actions.add_parser("clear", help="delete every compiled kernel and rewritten module in the "
                       "cache (files gpu_native did not write are left alone)")
    p.set_defaults(func=run)


def format_bytes(size: int) -> str:
    """``1536`` → ``"1.5 KiB"``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024 or unit == "EiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _not_a_directory(path: str) -> str | None:
    """The nearest existing one of ``path`` and its parents when it is not a directory (a file
    where the cache root should be), else None."""
    while not os.path.isdir(path):
        if os.path.lexists(path):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None


def _is_a_file(path: str) -> bool:
    """Whether something that is not a directory stands where the folder ``path`` should."""
    return os.path.lexists(path) and not os.path.isdir(path)


def describe(store, modules) -> list[tuple[str, str]]:
    """(label, value) lines describing the user cache; shared with ``gpu-native doctor``.

    ``store`` is the kernels' :class:`~gpu_native.cache.ArtifactStore`, ``modules`` the import
    hook's :class:`~gpu_native.cache.housekeeping.ModuleCache`.
    """
    from ..cache.housekeeping import usage

    kernels, rewritten = usage(store, modules)
    root = os.path.dirname(store.directory)
    untrusted = _startup.untrusted_folder(store.directory)
    blocker = _not_a_directory(store.directory)
    if blocker is not None:
        state = (f"NOT usable ({blocker} is not a directory; set GPU_NATIVE_CACHE_DIR to a "
                 "directory): kernels are cached in memory and modules rewritten on every import")
    elif untrusted is not None:
        state = (f"NOT used ({untrusted[0]} {untrusted[1]}): kernels are cached in memory and "
                 "modules rewritten on every import")
    elif os.path.isdir(store.directory):
        writable, why = store.probe_writable()
        state = "writable" if writable else f"NOT writable ({why}): kernels are cached in memory"
    elif os.path.isdir(root):
        # Made by the import hook (modules/) before any kernel was compiled: kernels/ comes with
        # the first compile, and is not made here.
        state = "writable (no kernel compiled into it yet)" if os.access(root, os.W_OK) else \
            f"NOT writable ({root} is not writable): kernels would be cached in memory"
    else:
        state = "not created yet"
        parent = os.path.dirname(root)
        while parent and not os.path.isdir(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
        if not os.access(parent, os.W_OK):
            state += f" (and {parent} is not writable: kernels would be cached in memory)"
    lines = [
        ("location", root),
        ("state", state),
        ("kernels", f"{kernels.entries} ({format_bytes(kernels.size)}) in {store.directory}"),
        ("modules", f"{rewritten.entries} ({format_bytes(rewritten.size)}) in "
                    f"{modules.directory} (rewritten modules, where __pycache__ is not used)"
         if not _is_a_file(modules.directory) else
         f"NOT usable ({modules.directory} is not a directory): modules are rewritten on "
         "every import where __pycache__ is not used, and the record of modules without "
         "kernels is not kept"),
        ("size", f"{format_bytes(kernels.size + rewritten.size)} of a "
                 f"{format_bytes(store.max_bytes)} cap"),
    ]
    foreign = [os.path.join(store.directory, n) for n in store.foreign_files()]
    foreign += [os.path.join(modules.directory, n) for n in modules.foreign_files()]
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        lines.append(("not ours", f"{_plural(len(foreign), 'file')} that gpu_native did not "
                                  f"write, not counted and left alone by clear: {shown}"))
    for path, reason in store.unreadable():
        lines.append(("unreadable", f"{path} ({reason}): recompiled when it is needed"))
    return lines


def run(args: argparse.Namespace) -> int:
    from ..cache import housekeeping, user_store
    from ..cache.locations import nvrtc_records_dir

    _startup.leave_records_alone()
    store = user_store()
    modules = housekeeping.modules_cache()
    if args.cache_action == "clear":
        # The NVRTC version records are cheap to rebuild; clearing them too leaves a clean slate.
        cleared = housekeeping.clear(store, modules, nvrtc_records_dir())
        parts = [f"{_plural(cleared.kernels.entries, 'compiled kernel')} "
                 f"({format_bytes(cleared.kernels.size)}) from {store.directory}",
                 f"{_plural(cleared.modules.entries, 'rewritten module')} "
                 f"({format_bytes(cleared.modules.size)}) from {modules.directory}"]
        if cleared.other:
            parts.append(f"{_plural(cleared.other, 'other file')} of gpu_native's (NVRTC "
                         "version records, records of modules without kernels, temporary "
                         "files)")
        print(f"removed {', '.join(parts[:-1])} and {parts[-1]}")
        if cleared.kept:
            shown = ", ".join(cleared.kept[:3]) + (", ..." if len(cleared.kept) > 3 else "")
            print(f"kept {_plural(len(cleared.kept), 'file')} that gpu_native did not write: "
                  f"{shown}")
        return 0
    width = 10
    for label, value in describe(store, modules):
        print(f"{label:<{width}} {value}")
    return 0
