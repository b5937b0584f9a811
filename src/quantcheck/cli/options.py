"""Pieces every command's parser shares: the parser class, the help formatter and
`--output-format`."""

from __future__ import annotations

import argparse
import sys

from quantcheck.textsafe import clean

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are escaped: argparse repeats the offending
    argument (`unrecognized arguments: NAME`), and a file name may carry a newline, a forged
    `::error` workflow command or a terminal escape. Subparsers are made of the same class.

    `help_of`: the command whose `--help` epilog (`cli/epilogs.py`) is shown, made only when
    help is printed (a run that prints none does not import the examples)."""

    def __init__(self, *args: Any, help_of: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_of = help_of

    def format_help(self) -> str:
        if self.help_of is not None and self.epilog is None:
            from quantcheck.cli.epilogs import epilog

            self.epilog = epilog(self.help_of)
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {clean(message)}\n")


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
    p.add_argument(
        "--output-format",
        choices=choices,
        default="text",
        dest="output_format",
        help="report format (default: text)",
    )
    p.add_argument(
        "--format",
        choices=choices,
        dest="output_format",
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def target_value(value: str) -> str:
    """argparse `type` for `--target`: a runtime, `NAME@RELEASE`, `NAME@all`, `default`, `all`,
    `all@all` or a comma-separated list of those (unknown runtimes and releases are a usage
    error naming the modelled ones)."""
    from quantcheck.runtimes import parse_target

    try:
        return parse_target(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


TARGET_HELP = (
    "runtime(s) to judge the file for: default = sglang and comfyui (their newest "
    "modelled release), all = every modelled runtime, NAME one runtime; NAME@RELEASE "
    "(e.g. sglang@0.5.19) one release, NAME@all every modelled release of NAME, all@all "
    "every release of every runtime; several as a comma-separated list "
    "(e.g. comfyui,sdnext)"
)


def add_target(p: argparse.ArgumentParser, help: str = TARGET_HELP) -> None:
    """`--target` with release support (dest `target`); the help names the modelled runtimes."""
    from quantcheck.runtimes import runtime_names

    help = (
        f"{help}. Runtimes: {', '.join(runtime_names())} (`quantcheck rules` gives each rule's "
        "effect on each)"
    )
    p.add_argument("--target", type=target_value, default="default", metavar="TARGET", help=help)


#: `--max-bytes` of the commands whose work is reading tensor data (compare, quantize,
#: dequantize, fix, report --compare): no cap. A normal checkpoint is 2-40 GB and the user
#: asked for its data; any finite default would stop some normal checkpoint part way.
NO_CAP = "none"


def add_max_bytes(p: argparse.ArgumentParser, default: str | None) -> None:
    """`--max-bytes SIZE` (dest `max_bytes`): most bytes read per remote checkpoint."""
    shown = "no cap" if default == NO_CAP else default or "64M, none with --compare"
    p.add_argument(
        "--max-bytes",
        default=default,
        metavar="SIZE",
        help="most bytes read per remote checkpoint (all its shards and its index), e.g. "
        f"500K, 64M, 30G, or none for no cap (default: {shown})",
    )


def add_selection(p: argparse.ArgumentParser) -> None:
    """`--include` / `--exclude` globs for folders and repos, and `--as-one`."""
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="in folders and repos: only files whose relative path or name matches GLOB; "
        "repeatable",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="in folders and repos: leave out files matching GLOB; repeatable",
    )
    add_as_one(p)


def add_as_one(p: argparse.ArgumentParser) -> None:
    """`--as-one`: several PATHs are the shards of one checkpoint."""
    p.add_argument(
        "--as-one",
        action="store_true",
        help="read all PATHs as the shards of one checkpoint, without an index (by default "
        "each PATH is a checkpoint of its own)",
    )


GPU_HELP = (
    "judge each target on this GPU too: per layer native / emulated / refused, weight memory, "
    "and the lowest GPU class where every layer runs natively. SPEC is a card (rtx4090, a100, "
    "h100, b200, rx7900xtx, mi300x, arc-a770), a compute capability (sm_89, 8.9), an AMD "
    "architecture (gfx1100), a backend (xpu, directml, mps, cpu), all (every class) or auto "
    "(this machine's, needs torch), optionally followed by the software stack: "
    ",torch=2.9 ,cuda=12.8 ,rocm=6.4 ,os=windows (defaults: torch 2.15, CUDA 13.0) and the "
    "runtime's switches joined by +: ,flags=supports-fp8-compute+enable-triton-backend"
    "+disable-dynamic-vram (ComfyUI's; also disable-triton-backend, enable-dynamic-vram, "
    "highvram, gpu-only, novram, and SD.Next's setting sdnq-quantized-matmul). Repeatable"
)


def add_gpu(p: argparse.ArgumentParser, help: str = GPU_HELP) -> None:
    """`--gpu SPEC` (dest `gpu`, a list; `cli/gpu.resolve` reads it)."""
    p.add_argument("--gpu", action="append", default=[], metavar="SPEC", help=help)
