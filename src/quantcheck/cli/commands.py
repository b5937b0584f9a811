"""Subcommands beyond checking. Each lives in its own module under `quantcheck.cli`, which is
imported only when that command runs (so `quantcheck check` never loads numpy).

A command module provides `add_arguments(parser)` and `run(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib

#: name -> (module, one-line help)
EXTRA_COMMANDS: dict[str, tuple[str, str]] = {
    "fix": ("quantcheck.cli.fix", "repair a checkpoint: apply the diagnostics' fixes"),
    "quantize": ("quantcheck.cli.convert", "quantize a BF16/F16/F32 checkpoint"),
    "dequantize": ("quantcheck.cli.convert", "dequantize to a plain checkpoint"),
    "compare": (
        "quantcheck.cli.compare",
        "per-layer error of a quantized checkpoint against its original",
    ),
    "report": ("quantcheck.cli.report", "write a self-contained HTML report"),
    "lora": (
        "quantcheck.cli.lora",
        "will a LoRA load, patch and survive on this (quantized) model in ComfyUI",
    ),
}


def add_extra_commands(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    wanted: str | None,
    only: bool = False,
) -> None:
    """Register the extra commands; only `wanted` (the one being run) loads its module, and
    with `only` the others are not registered at all."""
    for name, (module, help_text) in EXTRA_COMMANDS.items():
        if only and name != wanted:
            continue
        if name != wanted:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        from quantcheck.cli.options import HelpFormatter

        mod = importlib.import_module(module)
        p = sub.add_parser(
            name,
            help=help_text,
            description=getattr(mod, "DESCRIPTIONS", {}).get(name, help_text),
            help_of=name,
            formatter_class=HelpFormatter,
        )
        mod.add_arguments(p, name)
        p.set_defaults(handler=mod.run)
