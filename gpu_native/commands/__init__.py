"""Subcommands of ``gpu-native`` beyond ``expand``: each module adds its own parser."""

from __future__ import annotations

import argparse


def add_subcommands(sub: argparse._SubParsersAction) -> None:
    """Register ``precompile``, ``cache`` and ``doctor``."""
    from . import cache, doctor, precompile

    precompile.add_parser(sub)
    cache.add_parser(sub)
    doctor.add_parser(sub)
