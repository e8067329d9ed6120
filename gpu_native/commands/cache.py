"""``gpu-native cache info`` and ``gpu-native cache clear``: the per-user kernel cache."""

from __future__ import annotations

import argparse
import os


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the per-user cache of compiled kernels",
                       description="The per-user cache of compiled kernels (set "
                       "GPU_NATIVE_CACHE_DIR to move it, GPU_NATIVE_CACHE_MAX_BYTES to cap it).")
    actions = p.add_subparsers(dest="cache_action", metavar="{info,clear}", required=True)
    actions.add_parser("info", help="location, number of entries and total size")
    actions.add_parser("clear", help="delete every compiled kernel in the cache")
    p.set_defaults(func=run)


def format_bytes(size: int) -> str:
    """``1536`` → ``"1.5 KiB"``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def describe(store) -> list[tuple[str, str]]:
    """(label, value) lines describing the user cache; shared with ``gpu-native doctor``."""
    entries = store.scan()
    total = sum(e.size for e in entries)
    if os.path.isdir(store.directory):
        writable, why = store.probe_writable()
        state = "writable" if writable else f"NOT writable ({why}): kernels are cached in memory"
    else:
        state = "not created yet"
        parent = os.path.dirname(store.directory)
        while parent and not os.path.isdir(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
        if not os.access(parent, os.W_OK):
            state += f" (and {parent} is not writable: kernels would be cached in memory)"
    return [
        ("location", store.directory),
        ("state", state),
        ("entries", f"{len(entries)} ({format_bytes(total)} of a {format_bytes(store.max_bytes)} "
                    "cap)"),
    ]


def run(args: argparse.Namespace) -> int:
    from ..cache import user_store

    store = user_store()
    if args.cache_action == "clear":
        count, size = store.clear()
        from ..cache.locations import nvrtc_records_dir
        from ..cache.nvrtc_probe import clear_records

        # The NVRTC version records are cheap to rebuild; clearing them too leaves a clean slate.
        clear_records(nvrtc_records_dir())
        print(f"removed {count} compiled kernel{'s' * (count != 1)} ({format_bytes(size)}) "
              f"from {store.directory}")
        return 0
    width = 9
    for label, value in describe(store):
        print(f"{label:<{width}} {value}")
    return 0
