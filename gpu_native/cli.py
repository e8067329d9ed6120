"""``gpu-native``: expand, precompile, cache, doctor.  Thin: parses arguments, calls the pipeline.

None of the commands needs a GPU, and none executes the user's modules.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._version import __version__
from .errors import GpuNativeError, TranspileError


def cmd_expand(args: argparse.Namespace) -> int:
    """Print the module as the import hook rewrites it, or the generated CUDA C++."""
    if args.prelude:
        from .headers import header_text

        sys.stdout.write(header_text())
        return 0
    if args.file is None:
        raise SystemExit("gpu-native expand: give a FILE, or --prelude to print the prelude header")
    from .frontend.source import read_source
    from .rewrite import rewrite_module, transpile_module

    # Decoded as `import` decodes it (coding cookie, BOM); a FIFO or a device is refused.
    source = read_source(args.file)
    module_name = args.module
    if args.cuda:
        mod = transpile_module(source, args.file, module_name)
        shown = 0
        for kernel in mod.kernels:
            if args.kernel and kernel.name != args.kernel:
                continue
            for variant in kernel.variants:
                sys.stdout.write(variant.cuda)
                shown += 1
        if args.kernel and not shown:
            names = ", ".join(k.name for k in mod.kernels) or "none"
            print(f"gpu-native: no kernel named {args.kernel!r} in {args.file} (kernels: {names})",
                  file=sys.stderr)
            return 2
        return 0
    result = rewrite_module(source, args.file, module_name)
    sys.stdout.write(result.source)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-native",
        description="Write CUDA kernels as typed Python functions.",
    )
    parser.add_argument("--version", action="version", version=f"gpu_native {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("expand", help="print the rewritten module (or its CUDA C++)")
    p.add_argument("file", nargs="?", help="a Python file that defines kernels")
    p.add_argument("--cuda", action="store_true", help="print the generated CUDA C++ instead")
    p.add_argument("--prelude", action="store_true",
                   help='print the header every kernel includes ("gpu_native/prelude.cuh") instead')
    p.add_argument("--kernel", metavar="NAME", help="only this kernel (with --cuda)")
    p.add_argument("--module", metavar="NAME", help="the file's module name (default: guessed "
                   "from the package layout)")
    p.set_defaults(func=cmd_expand)

    from .commands import add_subcommands

    add_subcommands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gpu-native`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except TranspileError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except GpuNativeError as exc:
        print(f"gpu-native: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `gpu-native expand x.py | head` closes the pipe early; that is not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
