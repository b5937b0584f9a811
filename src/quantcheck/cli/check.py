"""`quantcheck check PATH...`: find the checkpoints the arguments name, check each, report all.
Standard library only (the check path)."""

from __future__ import annotations

import argparse
import sys


def add_many_arguments(p: argparse.ArgumentParser) -> None:
    """The options about many checkpoints and baselines."""
    p.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="in folders and repos: only files whose relative path or name matches "
                        "GLOB; repeatable")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="in folders and repos: leave out files matching GLOB; repeatable")
    p.add_argument("--as-one", action="store_true",
                   help="read all PATHs as the shards of one checkpoint (the pre-0.3 reading)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="text output: print only the table of checkpoints")
    p.add_argument("--baseline", metavar="FILE",
                   help="findings listed in FILE are known: they are reported as suppressed "
                        "and do not fail the run")
    p.add_argument("--generate-baseline", metavar="FILE",
                   help="write today's findings to FILE as a baseline and exit 0")


def run(args: argparse.Namespace) -> int:
    from quantcheck.diagnostics import TARGETS, Severity
    from quantcheck.io.limits import remote_limits
    from quantcheck.many import check_many
    from quantcheck.model.discover import discover
    from quantcheck.render import many
    from quantcheck.rules.baseline import (
        BaselineError,
        apply_baseline,
        read_baseline,
        write_baseline,
    )

    def split(values: list[str]) -> list[str]:
        return [v for item in values for v in item.split(",") if v.strip()]

    known = None
    if args.baseline:
        try:
            known = read_baseline(args.baseline)
        except BaselineError as exc:
            print(f"quantcheck: error: {exc}", file=sys.stderr)
            return 2
    with remote_limits(args.max_bytes, args.jobs) as jobs:
        specs = discover(args.paths, include=split(args.include), exclude=split(args.exclude),
                         as_one=args.as_one)
        results = check_many(specs, jobs=jobs, target=args.target, select=split(args.select),
                             ignore=split(args.ignore), deep=args.deep,
                             read_weights=args.read_weights)
    for r in results:
        if r.error is not None:
            print(f"quantcheck: error: {r.error}", file=sys.stderr)
    if args.generate_baseline:
        n = write_baseline(args.generate_baseline, results)
        print(f"wrote {n} finding{'s' if n != 1 else ''} to {args.generate_baseline}",
              file=sys.stderr)
        return 2 if any(r.error for r in results) else 0
    if known is not None:
        apply_baseline(results, known)
    targets = TARGETS if args.target == "all" else (args.target,)
    if args.output_format == "text":
        text = many.render_text(results, targets, color=False if args.no_color else None,
                                quiet=args.quiet)
        if args.statistics:
            from quantcheck.render.text import statistics
            from quantcheck.results import Report

            merged = Report(inputs=[], diagnostics=[d for r in results if r.report
                                                    and r.kind == "checked"
                                                    for d in r.report.diagnostics])
            text = statistics(merged) + "\n\n" + text
        if text:
            print(text)
    elif args.output_format == "json":
        print(many.render_json(results, targets))
    else:
        print(many.render_located(results, args.output_format, targets))
    return many.exit_code(results, Severity(args.fail_on))
