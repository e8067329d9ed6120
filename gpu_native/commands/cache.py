"""``gpu-native cache``."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="(not yet implemented)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise SystemExit("gpu-native cache: not implemented yet")
