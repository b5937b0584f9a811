"""`quantcheck check PATH...`: find the checkpoints the arguments name, check each, report all.
Standard library only (the check path)."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def add_many_arguments(p: argparse.ArgumentParser) -> None:
    """The options about many checkpoints and baselines."""
    from quantcheck.cli.options import add_selection

    add_selection(p)
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="text output: print only the table of checkpoints",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="findings listed in FILE are known: they are reported as suppressed "
        "and do not fail the run",
    )
    p.add_argument(
        "--lora",
        metavar="LORA",
        action="append",
        default=[],
        help="also check LoRA file(s) against each checkpoint the way ComfyUI loads them "
        "(QC83x, headers only; `quantcheck lora` adds the figures)",
    )
    p.add_argument(
        "--lora-strength", type=float, default=1.0, help="strength for --lora (default 1.0)"
    )
    p.add_argument(
        "--generate-baseline",
        metavar="FILE",
        help="write today's findings to FILE as a baseline and exit 0",
    )


def run(args: argparse.Namespace) -> int:
    from quantcheck.diagnostics import Severity
    from quantcheck.io.limits import remote_limits
    from quantcheck.many import check_many
    from quantcheck.model.discover import discover
    from quantcheck.render import many
    from quantcheck.runtimes import targets_of
    from quantcheck.textsafe import say, say_error

    def split(values: list[str]) -> list[str]:
        return [v for item in values for v in item.split(",") if v.strip()]

    from quantcheck.checking import check_selectors

    try:
        check_selectors([*split(args.select), *split(args.ignore)])
    except ValueError as exc:
        say_error(f"--select/--ignore: {exc}")
        return 2
    if args.generate_baseline:  # refuse a device, FIFO or folder before the work
        from quantcheck.io.outpath import check_destination

        check_destination(args.generate_baseline, sharded=False)
    gpus = None
    if args.gpu:
        from quantcheck.cli.gpu import resolve

        try:
            gpus = resolve(args.gpu)
        except ValueError as exc:
            say_error(f"--gpu: {exc}")
            return 2
    known = None
    if args.baseline:
        from quantcheck.rules.baseline import BaselineError, read_baseline

        try:
            known = read_baseline(args.baseline)
        except BaselineError as exc:
            say_error(exc)
            return 2
    with remote_limits(args.max_bytes, args.jobs) as jobs:
        specs = discover(
            args.paths, include=split(args.include), exclude=split(args.exclude), as_one=args.as_one
        )
        results = check_many(
            specs,
            jobs=jobs,
            target=args.target,
            select=split(args.select),
            ignore=split(args.ignore),
            deep=args.deep,
            read_weights=args.read_weights,
            **({"gpus": gpus} if gpus else {}),
            **({"lora": args.lora, "lora_strength": args.lora_strength} if args.lora else {}),
        )
    for r in results:
        if r.error is not None:
            say_error(r.error)
    if args.generate_baseline:
        from quantcheck.rules.baseline import write_baseline

        n = write_baseline(args.generate_baseline, results)
        say(f"wrote {n} finding{'s' if n != 1 else ''} to {args.generate_baseline}", err=True)
        return 2 if any(r.error for r in results) else 0
    if known is not None:
        from quantcheck.rules.baseline import apply_baseline

        apply_baseline(results, known)
    targets = targets_of(args.target)
    _write_report(args, results, targets)
    return many.exit_code(results, Severity(args.fail_on))


def _write_report(args: argparse.Namespace, results: list[Any], targets: tuple[str, ...]) -> None:
    """The report on stdout, written as it is made: a report of a million findings is never
    one string (or one list of dicts) in memory. Ends with a newline, as `print` would."""
    from quantcheck.render import many
    from quantcheck.render.json_out import join_lines, write_chunks

    if args.output_format == "text":
        lines = many.iter_text_lines(
            results,
            targets,
            color=False if args.no_color else None,
            quiet=args.quiet,
            show_all=args.show_all,
        )
        if args.statistics:
            import itertools

            from quantcheck.render.text import statistics
            from quantcheck.results import Report

            merged = Report(
                inputs=[],
                diagnostics=[
                    d
                    for r in results
                    if r.report and r.kind == "checked"
                    for d in r.report.diagnostics
                ],
            )
            # after the findings and totals: the counts are a summary, read last
            lines = itertools.chain(lines, ("", statistics(merged)))
        chunks = join_lines(lines)
    elif args.output_format == "json":
        chunks = many.iter_json(results, targets, group=args.group)
    else:
        chunks = many.iter_located(results, args.output_format, targets)
    from quantcheck.textsafe import clean_block

    # the renderers escape what they show; clean_block is the one check of what reaches the
    # terminal (line breaks and colour kept), so a renderer that forgot cannot leak a control
    if write_chunks(sys.stdout, map(clean_block, chunks)) or args.output_format != "text":
        sys.stdout.write("\n")
