"""Subcommands beyond checking (fix, quantize, dequantize, compare, report) register here."""

from __future__ import annotations

import argparse


def add_extra_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register the commands other modules provide; each sets `handler` on its parser."""
