"""`quantcheck report PATH... -o report.html`: a self-contained HTML picture of a checkpoint."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from quantcheck.cli.options import NO_CAP, add_max_bytes, add_selection, add_target
from quantcheck.textsafe import say, say_error

DESCRIPTIONS = {
    "report": """\
Write one self-contained HTML file (inline CSS and SVG; no scripts, no network):
a format map of blocks x layer kinds coloured by format with diagnostics outlined,
size and bits per weight per format and the saving against BF16, per-runtime
verdicts and the diagnostics by code. With --compare, a heat map of each layer's
relative error against the original and the 20 worst layers (needs numpy). With
--lora, a LoRA section: what each runtime does with the LoRA on this checkpoint and a
per-block bar of the share of its change that survives (reads the weights).

Several checkpoints (a folder, a hub repository, several arguments; read as
`quantcheck check` reads them) give a folder: -o DIR (a name ending in .html
loses it) holds index.html, a table of every checkpoint linked to one page per
quantized checkpoint."""
}


def add_arguments(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="safetensors files, folders of shards, *.safetensors.index.json or URLs",
    )
    p.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="HTML file to write (default: report.html)",
    )
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="ORIGINAL",
        help="the unquantized original: adds a per-layer error heat map (repeatable for shards)",
    )
    add_target(p)
    add_max_bytes(p, None)
    p.add_argument(
        "--deep",
        action="store_true",
        help="also read scale tensors and check their values (needs numpy)",
    )
    add_selection(p)
    from quantcheck.cli.options import add_gpu

    add_gpu(
        p,
        "add a GPUs section: per target a GPU x format grid (native / emulated / "
        "refused), weight memory, the lowest class where every layer is native; SPEC as "
        "for `check --gpu`. Repeatable",
    )
    p.add_argument(
        "--lora",
        action="append",
        default=[],
        metavar="LORA",
        help="add a LoRA section for this LoRA file on the checkpoint (as `quantcheck lora`: "
        "keys, outcomes per runtime, a per-block bar of the surviving change; reads the "
        "weights); repeatable; one checkpoint only",
    )
    p.add_argument(
        "--lora-strength", type=float, default=1.0, help="strength for --lora (default 1.0)"
    )


def _compare(paths: Any, original: Any) -> Any:
    try:
        from quantcheck.numeric.compare import compare_checkpoints
    except ImportError as exc:
        raise CompareUnavailable(f"--compare is not available: {exc}") from exc
    try:
        return compare_checkpoints(paths, original)
    except ImportError as exc:
        raise CompareUnavailable(
            f"--compare needs numpy and ml_dtypes (dependencies: pip install quantcheck): {exc}"
        ) from exc


class CompareUnavailable(RuntimeError):
    """--compare cannot run here (a module or a numeric dependency missing)."""


def write_atomic(path: Path, text: str) -> None:
    """Write `text` through the one safe writer (`quantcheck.io.atomic`)."""
    from quantcheck.io.atomic import write_file

    write_file(os.fspath(path), text.encode("utf-8", "backslashreplace"))


def _write_many(args: argparse.Namespace, specs: list[Any]) -> int:
    """An index page and one page per checkpoint, in the folder -o names."""
    from quantcheck.io.outpath import check_destination
    from quantcheck.render.html.index import INDEX, iter_pages

    out = args.output[:-5] if args.output.endswith(".html") else args.output
    check_destination(out, sharded=True)  # a folder, or nothing yet
    os.makedirs(out, exist_ok=True)
    written = 0
    for name, html in iter_pages(specs, target=args.target, deep=args.deep, gpus=args.gpus):
        write_atomic(Path(out) / name, html)  # each page as it is made: one in memory at once
        written += 1
    say(
        f"wrote {Path(out) / INDEX} and {written - 1} checkpoint pages ({len(specs)} checkpoints)",
        err=True,
    )
    return 0


def run(args: argparse.Namespace) -> int:
    from quantcheck.io.limits import remote_limits

    cap = args.max_bytes or (NO_CAP if args.compare else "64M")
    with remote_limits(cap, None):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from quantcheck.cli.gpu import resolve
    from quantcheck.io.outpath import check_destination
    from quantcheck.model.discover import discover, one_checkpoint, only_one
    from quantcheck.render.html import build_report

    try:
        args.gpus = resolve(args.gpu) if args.gpu else None
    except ValueError as exc:
        say_error(f"--gpu: {exc}")
        return 2
    specs = discover(args.paths, include=args.include, exclude=args.exclude, as_one=args.as_one)
    if len(specs) > 1 and args.lora:
        say_error("--lora takes one checkpoint (a report page), not a folder of several")
        return 2
    if len(specs) > 1 and not args.compare:
        return _write_many(args, specs)
    spec = only_one(specs, "report --compare reads")
    if args.compare:  # several --compare values are the shards of the original
        args.compare = one_checkpoint(
            args.compare, "--compare", as_one=len(args.compare) > 1, what="takes"
        )
    check_destination(args.output, sharded=False)  # refuse a device or FIFO before the work
    try:
        compare = _compare(spec, args.compare) if args.compare else None
    except CompareUnavailable as exc:
        say_error(exc)
        return 2
    html = build_report(
        spec,
        compare=compare,
        target=args.target,
        deep=args.deep,
        gpus=args.gpus,
        lora=[one_checkpoint([lo], "--lora", what="reads") for lo in args.lora] or None,
        lora_strength=args.lora_strength,
    )
    out = Path(args.output)
    write_atomic(out, html)
    say(f"wrote {out} ({len(html.encode('utf-8', 'backslashreplace')) / 1024:.0f} KiB)", err=True)
    return 0
