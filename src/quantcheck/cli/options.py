"""Pieces every command's parser shares: the help formatter and `--output-format`."""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter without its `shutil` import (a start-up cost on every run)."""

    def __init__(self, prog: str) -> None:
        import os

        try:
            width = os.get_terminal_size().columns - 2
        except OSError:
            width = 78
        super().__init__(prog, width=max(40, min(width, 118)))


def add_output_format(p: argparse.ArgumentParser, choices: tuple[str, ...]) -> None:
    """`--output-format` (dest `output_format`): how the report is printed. `--format` is a
    hidden alias kept for scripts written before 0.2 (see CHANGELOG.md)."""
    p.add_argument("--output-format", choices=choices, default="text", dest="output_format",
                   help="report format (default: text)")
    p.add_argument("--format", choices=choices, dest="output_format",
                   default=argparse.SUPPRESS, help=argparse.SUPPRESS)
