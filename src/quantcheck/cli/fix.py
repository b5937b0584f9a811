"""`quantcheck fix IN -o OUT`: apply the diagnostics' fixes and write a repaired copy."""

from __future__ import annotations

import argparse
import difflib

from quantcheck.cli.options import NO_CAP, add_as_one, add_max_bytes, add_target
from quantcheck.textsafe import clean, say, say_block, say_error

TYPE_CHECKING = False  # `typing` costs start-up time
if TYPE_CHECKING:
    from quantcheck.io.writer import OutFile

DESCRIPTIONS = {
    "fix": (
        "Apply every diagnostic's fix and write the result to OUT (never in place). Safe fixes "
        "keep every value (exact casts to F32, relabels of 1-byte scales, reshapes, marker "
        "rewrites); "
        "--unsafe-fixes also changes numbers (quantize a layer its marker describes, dequantize or "
        "requantize layers a runtime cannot take). With several targets, a fix that helps one "
        "runtime and hurts another targeted one is refused. Output is streamed to a temp file "
        "beside OUT, re-read and re-checked, then moved into place.\n\n"
        "profiles:\n"
        "  default   repair what the --target runtimes report (markers end up as .comfy_quant "
        "tensors).\n"
        "  portable  also write one file every consumer reads the same way: each quantized "
        "layer's\n"
        "            marker both as its .comfy_quant tensor and in the header "
        "_quantization_metadata\n"
        "            (DiffSynth-Studio, musubi-tuner and stable-diffusion.cpp read only the "
        "tensors,\n"
        "            sglang's header path only the header), the same object in both; scales as "
        "F32; convrot,\n"
        "            convrot_groupsize and params keys explicit. A field the header and the "
        "tensor\n"
        "            disagree on is never guessed: the layer is reported and left alone. Where "
        "two\n"
        "            targets need different bytes (NVFP4 block-scale padding, SD.Next's one "
        "format per\n"
        "            file, full_precision_matrix_mult for sglang@0.5.19) the report says which "
        "target it\n"
        "            chose and why; --target decides (e.g. --target all@all includes "
        "sglang@0.5.19)."
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
    add_target(
        p,
        "runtimes to repair for: default (sglang and comfyui), all (every runtime), NAME, "
        "NAME@RELEASE, NAME@all, all@all, or a comma-separated list; with --profile portable "
        "it also decides which consumers win where they need different bytes",
    )
    add_max_bytes(p, NO_CAP)
    p.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply fixes that change numbers"
    )
    p.add_argument(
        "--profile",
        choices=("default", "portable"),
        default="default",
        help="default: repair the findings; portable: also sync header and tensor markers, "
        "F32 scales and explicit keys for every consumer (see 'profiles' above)",
    )
    p.add_argument(
        "--output-format",
        choices=("text", "json"),
        default="text",
        dest="output_format",
        help="plan report format (default: text)",
    )
    add_as_one(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    mode.add_argument(
        "--diff", action="store_true", help="print the header changes as a diff, write nothing"
    )


def run(args: argparse.Namespace) -> int:
    from quantcheck.io.limits import remote_limits

    with remote_limits(args.max_bytes, None):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from quantcheck.fix.planner import plan_fixes, unrepairable
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.model.discover import one_checkpoint

    if not (args.output or args.dry_run or args.diff):
        say_error("fix needs -o OUT (or --dry-run / --diff)")
        return 2
    spec = one_checkpoint(args.paths, "fix", as_one=args.as_one)
    with load_checkpoint(spec) as ck:
        bad = unrepairable(ck)
        if bad:
            say_error(f"cannot repair: {bad[0].code} {bad[0].message}; a rewrite would lose data")
            return 2
        out, index = (None, None)
        if args.output:
            from quantcheck.cli.output import output_layout

            out, index = output_layout(ck, args.output)
        profile = getattr(args, "profile", "default")
        plan = plan_fixes(ck, target=args.target, unsafe=args.unsafe_fixes, profile=profile)
        as_json = getattr(args, "output_format", "text") == "json"
        if not as_json:
            print_plan(plan, args.unsafe_fixes)
        diff = header_diff(ck, plan.files) if args.diff else None
        if diff is not None and not as_json:
            say_block(diff, end="")
        if args.dry_run or args.diff:
            if as_json:
                _print_json(plan, args.unsafe_fixes, None, diff)
            return _exit(plan, args.unsafe_fixes)
        assert out is not None
        if not plan.edits:  # a copy would change nothing: write nothing, say so
            if as_json:
                _print_json(plan, args.unsafe_fixes, None)
            else:
                say(f"nothing to fix: {out} was not written")
            return _exit(plan, args.unsafe_fixes)
        _write(ck, plan, out, index)
        if as_json:
            _print_json(plan, args.unsafe_fixes, out)
        else:
            say(f"wrote {out}")
    return _exit(plan, args.unsafe_fixes)


def plan_json(
    plan: object, unsafe: bool, written: str | None = None, diff: str | None = None
) -> dict[str, object]:
    """The plan as JSON: edits, what was not fixed and why, and the portable choices."""
    from quantcheck.fix.planner import FixPlan

    assert isinstance(plan, FixPlan)
    doc: dict[str, object] = {
        "target": plan.target,
        "profile": plan.profile,
        "edits": [
            {
                "code": e.code,
                "where": e.where,
                "safety": e.safety,
                "description": e.description,
                "layer": e.layer,
            }
            for e in plan.edits
        ],
        "not_fixed": [
            {
                "code": o.diagnostic.code,
                "where": o.diagnostic.layer or o.diagnostic.tensor or o.diagnostic.file or "",
                "message": o.diagnostic.message,
                "status": o.status,
                "detail": o.detail,
            }
            for o in plan.unapplied(unsafe)
        ],
        "converged": plan.converged,
        "written": written,
    }
    if plan.profile == "portable":
        doc["portable"] = [c.to_json() for c in plan.choices]
    if diff is not None:
        doc["diff"] = diff
    return doc


def _print_json(plan: object, unsafe: bool, written: str | None, diff: str | None = None) -> None:
    from quantcheck.render.json_out import dumps

    say_block(dumps("fix", plan_json(plan, unsafe, written, diff)))


def _exit(plan: object, unsafe: bool) -> int:
    """1 when an error is left that decides a verdict, as `check`'s exit code says (a finding
    of a loader that does not read the file does not: `checking.deciding`), else 0."""
    from quantcheck.checking import deciding
    from quantcheck.diagnostics import Severity
    from quantcheck.runtimes import targets_of

    remaining = getattr(plan, "remaining", [])
    final = getattr(plan, "final", None)
    if final is not None:
        remaining = deciding(final, remaining, targets_of(getattr(plan, "target", "default")))
    return 1 if any(d.effective_severity is Severity.ERROR for d in remaining) else 0


def _write(ck: object, plan: object, out: str, index: str | None) -> None:
    from quantcheck.checking import run_rules, select_diagnostics
    from quantcheck.cli.output import index_metadata, name_files
    from quantcheck.fix.planner import FixPlan, diagnostic_key
    from quantcheck.model.written import WriteError, write_checkpoint
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
    label = plan.target + (", portable" if plan.profile == "portable" else "")
    say(f"fix ({label}): {len(real)} fix{'es' if len(real) != 1 else ''}")
    for e in plan.edits:
        say(f"  {e.code}  [{e.safety}] {e.description}")
    left = plan.unapplied(unsafe)
    if left:
        say(f"not fixed ({len(left)}):")
    for o in left:
        d = o.diagnostic
        why = {
            "refused": f"refused: {o.detail}",
            "unsafe": "needs --unsafe-fixes",
            "no-fix": "no automatic fix",
        }[o.status]
        where = d.layer or d.tensor or d.file or ""
        say(f"  {d.code}  {where}: {d.message} ({why})")
    if not plan.converged:
        say("  (fixes did not settle after 8 rounds; the rest is left as it is)")
    if plan.profile == "portable":
        say(f"portable ({len(plan.choices)}):" if plan.choices else "portable: no choices")
        for c in plan.choices:
            say(f"  {c.text()}")


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
