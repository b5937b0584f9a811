"""`quantcheck fix IN -o OUT`: apply the diagnostics' fixes and write a repaired copy."""

from __future__ import annotations

import argparse
import difflib
import sys

from quantcheck.cli.options import add_as_one, add_target
from quantcheck.textsafe import clean

TYPE_CHECKING = False  # `typing` costs start-up time
if TYPE_CHECKING:
    from quantcheck.io.writer import OutFile

DESCRIPTIONS = {
    "fix": (
        "Apply every diagnostic's fix and write the result to OUT (never in place). Safe fixes "
        "keep every value (exact casts to F32, relabels of 1-byte scales, reshapes, marker "
        "rewrites); "
        "--unsafe-fixes also changes numbers (quantize a layer its marker describes, dequantize or "
        "requantize layers a runtime cannot take). With --target all, a fix that helps one runtime "
        "and hurts the other is refused. Output is streamed to a temp file beside OUT, re-read and "
        "re-checked, then moved into place.\n\nexit codes: 0 nothing left to fix, 1 problems "
        "remain, 2 could not run."
    )
}


def add_arguments(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="IN",
        help="safetensors file, folder of shards or *.safetensors.index.json",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file (a folder for sharded input); required unless --dry-run or --diff",
    )
    add_target(p, "runtime (and release: NAME@RELEASE) to repair for (default: all)")
    p.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply fixes that change numbers"
    )
    add_as_one(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    mode.add_argument(
        "--diff", action="store_true", help="print the header changes as a diff, write nothing"
    )


def run(args: argparse.Namespace) -> int:
    from quantcheck.fix.planner import plan_fixes, unrepairable
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.model.discover import one_checkpoint

    if not (args.output or args.dry_run or args.diff):
        print("quantcheck: error: fix needs -o OUT (or --dry-run / --diff)", file=sys.stderr)
        return 2
    paths = one_checkpoint(args.paths, "fix", as_one=args.as_one)
    with load_checkpoint(paths) as ck:
        bad = unrepairable(ck)
        if bad:
            print(
                f"quantcheck: error: cannot repair: {bad[0].code} {clean(bad[0].message)}; a "
                "rewrite would lose data",
                file=sys.stderr,
            )
            return 2
        out, index = (None, None)
        if args.output:
            from quantcheck.cli.output import output_layout

            out, index = output_layout(ck, args.output)
        plan = plan_fixes(ck, target=args.target, unsafe=args.unsafe_fixes)
        print_plan(plan, args.unsafe_fixes)
        if args.diff:
            sys.stdout.write(header_diff(ck, plan.files))
        if args.dry_run or args.diff:
            return _exit(plan, args.unsafe_fixes)
        assert out is not None
        _write(ck, plan, out, index)
        print(f"wrote {clean(out)}")
    return _exit(plan, args.unsafe_fixes)


def _exit(plan: object, unsafe: bool) -> int:
    from quantcheck.diagnostics import Severity

    remaining = getattr(plan, "remaining", [])
    return 1 if any(d.effective_severity is Severity.ERROR for d in remaining) else 0


def _write(ck: object, plan: object, out: str, index: str | None) -> None:
    from quantcheck.check import run_rules, select_diagnostics
    from quantcheck.cli.output import index_metadata, name_files
    from quantcheck.fix.planner import FixPlan, diagnostic_key
    from quantcheck.io.writer import WriteError, write_checkpoint
    from quantcheck.progress import Progress

    assert isinstance(plan, FixPlan)
    predicted = {diagnostic_key(d) for d in plan.remaining}

    def verify(written: object) -> None:
        got = select_diagnostics(run_rules(written), target=plan.target)  # type: ignore[arg-type]
        new = [d for d in got if diagnostic_key(d) not in predicted]
        if new:
            raise WriteError(
                f"the written output has a problem the plan did not predict: "
                f"{new[0].code} {new[0].message}; nothing was written"
            )

    bar = Progress(sum(f.data_size for f in plan.files), "fix", unit="bytes")
    try:
        write_checkpoint(
            name_files(ck, plan.files),  # type: ignore[arg-type]
            out,
            index_name=index,
            index_meta=index_metadata(ck),  # type: ignore[arg-type]
            verify=verify,
            on_bytes=bar,
        )
    finally:
        bar.close()


def print_plan(plan: object, unsafe: bool) -> None:
    from quantcheck.fix.planner import FixPlan

    assert isinstance(plan, FixPlan)
    real = [e for e in plan.edits if e.safety != "rewrite"]
    print(f"fix ({plan.target}): {len(real)} fix{'es' if len(real) != 1 else ''}")
    for e in plan.edits:
        print(f"  {e.code}  [{e.safety}] {clean(e.description)}")
    left = plan.unapplied(unsafe)
    if left:
        print(f"not fixed ({len(left)}):")
    for o in left:
        d = o.diagnostic
        why = {
            "refused": f"refused: {o.detail}",
            "unsafe": "needs --unsafe-fixes",
            "no-fix": "no automatic fix",
        }[o.status]
        where = d.layer or d.tensor or d.file or ""
        print(f"  {d.code}  {clean(where)}: {clean(d.message)} ({clean(why)})")
    if not plan.converged:
        print("  (fixes did not settle after 8 rounds; the rest is left as it is)")


def _lines(
    name: str, tensors: list[tuple[str, str, tuple[int, ...], str]], meta: dict[str, str]
) -> list[str]:
    name = clean(name)  # one diff line per entry: nothing from the file may break a line
    out = [f"{name}: __metadata__.{clean(k)} = {clean(v[:200])}\n" for k, v in meta.items()]
    out += [f"{name}: {clean(n)} {clean(d)} {list(s)}{clean(x)}\n" for n, d, s, x in tensors]
    return out


def header_diff(ck: object, files: list[OutFile]) -> str:
    """A unified diff of the tensor entries and metadata, input vs planned output."""
    from quantcheck.convert.layer import read_payload
    from quantcheck.io.writer import Copy, OutFile
    from quantcheck.model.checkpoint import Checkpoint

    assert isinstance(ck, Checkpoint)
    before: list[str] = []
    after: list[str] = []
    for shard in ck.shards:
        import os

        name = os.path.basename(shard.name)
        rows = []
        for t in shard.header.tensors.values():
            extra = ""
            if t.name.endswith(".comfy_quant") and t.nbytes <= 4096:
                extra = " " + shard.source.read(t.begin, t.nbytes).decode("utf-8", "replace")
            rows.append((t.name, t.dtype, t.shape, extra))
        before += _lines(name, rows, shard.header.metadata)
    for f in files:
        assert isinstance(f, OutFile)
        rows = []
        for o in f.tensors:
            extra = ""
            if o.name.endswith(".comfy_quant") and o.data.nbytes <= 4096:
                extra = " " + read_payload(o.data).decode("utf-8", "replace")
            elif not isinstance(o.data, Copy):
                extra = " (new data)"
            rows.append((o.name, o.dtype, o.shape, extra))
        after += _lines(f.name, rows, f.metadata)
    return "".join(difflib.unified_diff(before, after, "input", "output"))
