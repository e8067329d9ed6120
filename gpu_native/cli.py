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
    """Print the module as the import hook rewrites it (for reading, or ``--exact``), its CUDA
    C++ (``--cuda``), or the proofs behind it (``--proofs``)."""
    prog = args.prog
    if args.prelude:
        given = [what for what, value in (("FILE", args.file), ("--kernel", args.kernel),
                                          ("--module", args.module)) if value is not None]
        if given:
            raise SystemExit(f"{prog}: --prelude prints the header every kernel includes, the "
                             f"same for every module, and takes no {' or '.join(given)}")
        from .headers import header_text

        sys.stdout.write(header_text())
        return 0
    if args.file is None:
        raise SystemExit(f"{prog}: give a FILE, or --prelude to print the prelude header")
    module_name = args.module
    if module_name is not None and not all(
            part.isidentifier() for part in module_name.split(".")):
        raise SystemExit(f"{prog}: --module {module_name!r} is not a module name (dotted "
                         "identifiers, as in `import pkg.mod`)")
    from .frontend.source import read_source

    # Decoded as `import` decodes it (coding cookie, BOM); a FIFO or a device is refused.
    source = read_source(args.file)
    if args.exact:
        if args.kernel is not None:
            raise SystemExit(f"{prog}: --exact prints the whole module; --kernel goes with the "
                             "other forms")
        from .rewrite import rewrite_module

        sys.stdout.write(rewrite_module(source, args.file, module_name).source)
        return 0
    from .expand import Expansion

    expansion = Expansion.of(source, args.file, module_name)
    deferred = expansion.module.scan.deferred
    if deferred:
        # Kernels in a function are transpiled by their decorator when it runs, with the values
        # they capture: there is nothing to show of them before.
        shown = ", ".join(f"{name} (line {line})" for name, line in deferred)
        print(f"gpu-native: note: {shown} in {args.file} "
              f"{'is a kernel' if len(deferred) == 1 else 'are kernels'} defined inside a "
              "function, transpiled by the decorator when the function runs, from the values it "
              "captures; expand shows kernels defined at module level", file=sys.stderr)
    elif not expansion.kernel_names and not expansion.module.scan.functions:
        # Not an error (a module of host code expands to itself), but nothing was checked: a
        # decorator imported from another module under another name is not seen here.
        print(f"gpu-native: note: no kernels found in {args.file}; the transpiler finds a "
              "kernel by its @gpu_kernel decorator, imported from gpu_native into this module",
              file=sys.stderr)
    if args.kernel is not None and args.kernel not in expansion.kernel_names:
        names = ", ".join(expansion.kernel_names) or "none"
        print(f"gpu-native: no kernel named {args.kernel!r} in {args.file} (kernels: {names})",
              file=sys.stderr)
        return 2
    if args.cuda:
        sys.stdout.write(expansion.cuda(args.kernel))
    elif args.proofs:
        sys.stdout.write(expansion.proofs(args.kernel))
    else:
        sys.stdout.write(expansion.readable(args.kernel))
    return 0


def build_parser(prog: str = "gpu-native") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write CUDA kernels as typed Python functions.",
    )
    parser.add_argument("--version", action="version", version=f"gpu_native {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "expand", help="print the rewritten module for reading (or exactly, or its CUDA C++)",
        description="Print what the import hook makes of FILE: by default the rewritten module "
        "laid out for reading (each kernel's spec summarised, its launcher spelled out, every "
        "generated line tagged with its line number in the imported module).")
    p.add_argument("file", nargs="?", help="a Python file that defines kernels")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--exact", action="store_true",
                      help="print the module exactly as the import hook compiles it (every line "
                      "on its own line number, each kernel's spec in full)")
    form.add_argument("--cuda", action="store_true",
                      help="print the generated CUDA C++, each #line with its Python line")
    form.add_argument("--proofs", action="store_true",
                      help="print the bounds checks left in each kernel and how each write was "
                      "shown to be race-free")
    form.add_argument("--prelude", action="store_true",
                      help='print the header every kernel includes ("gpu_native/prelude.cuh")')
    p.add_argument("--kernel", metavar="NAME", help="only this kernel")
    p.add_argument("--module", metavar="NAME", help="the file's module name (default: guessed "
                   "from the package layout)")
    p.set_defaults(func=cmd_expand, prog=p.prog)

    from .commands import add_subcommands

    add_subcommands(sub)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "gpu-native") -> int:
    """Entry point of the ``gpu-native`` console script (and of ``python -m gpu_native``, whose
    usage lines say ``prog``)."""
    parser = build_parser(prog)
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
