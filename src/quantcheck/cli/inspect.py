"""`quantcheck inspect PATH...`: what each checkpoint holds. Standard library only.

Arguments are read as `check` reads them (`quantcheck.model.discover`): each argument is its
own checkpoint and a folder or hub repository may hold many; `--as-one` reads every PATH as
a shard of one checkpoint. One checkpoint prints as it always did; several print one section
per checkpoint (text) or a `checkpoints` list (JSON).
"""

from __future__ import annotations

import argparse

from quantcheck._version import document_head
from quantcheck.textsafe import say, say_block, say_error

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.discover import CheckpointSpec


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options about several checkpoints (the same as `check`'s)."""
    from quantcheck.cli.options import add_selection

    add_selection(p)


def run(args: argparse.Namespace) -> int:
    from quantcheck.model.discover import discover

    def split(values: list[str]) -> list[str]:
        return [v for item in values for v in item.split(",") if v.strip()]

    specs = discover(
        list(args.paths),
        include=split(args.include),
        exclude=split(args.exclude),
        as_one=args.as_one,
    )
    if len(specs) == 1:
        from quantcheck.errors import InputError, describe_os_error

        try:
            doc = _summary(specs[0], args.layers)
        except OSError as exc:  # a file that cannot be read: say which and why
            raise InputError(describe_os_error(exc, "read")) from exc
        return _print_one(doc, args)
    return _print_many(specs, args)


def _summary(spec: CheckpointSpec, layers: str | None) -> dict[str, Any]:
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.model.inventory import summarize

    with load_checkpoint(spec) as ck:
        doc = summarize(ck)
        doc["problems"] = container_problems(ck)
    if layers:
        import fnmatch

        doc["layers"] = [r for r in doc["layers"] if fnmatch.fnmatchcase(r["prefix"], layers)]
    return doc


def container_problems(ck: Any) -> list[dict[str, Any]]:
    """The container errors (QC1xx) of a checkpoint: what makes the safetensors library
    refuse a file, so what `inspect` cannot show truthfully."""
    from quantcheck.diagnostics import Severity

    return [
        {"code": d.code, "name": d.name, "file": d.file, "message": d.message}
        for d in ck.diagnostics
        if d.code.startswith("QC1") and d.effective_severity is Severity.ERROR
    ]


def problem_lines(doc: dict[str, Any]) -> list[str]:
    """One line per container problem, and where to read more (text output)."""
    from quantcheck.textsafe import clean

    found = doc.get("problems") or []
    lines = [
        f"error   {p['code']} {p['name']}: {clean(p['file'] or '')}: {clean(p['message'])}"
        for p in found
    ]
    if lines:
        lines.append(
            "the safetensors library refuses this file: what is shown above is only what could "
            "be read (`quantcheck check` reports every finding)"
        )
    return lines


def _dump(doc: dict[str, Any]) -> None:
    import json

    from quantcheck.textsafe import json_safe

    say_block(json_safe(json.dumps(doc, indent=2, ensure_ascii=False)))


def _print_one(doc: dict[str, Any], args: argparse.Namespace) -> int:
    if args.output_format == "json":
        _dump(doc)
    else:
        from quantcheck.render.inspect_text import render_inspect

        say_block(render_inspect(doc, summary_only=args.summary))
        for line in problem_lines(doc):
            say(line, err=True)
    return 1 if doc["problems"] else 0


def _print_many(specs: list[Any], args: argparse.Namespace) -> int:
    """One section (text) or entry (JSON) per checkpoint; one that cannot be read is named
    with the reason, the others are still shown, and the exit code is 2."""
    from quantcheck.errors import InputError, describe_os_error
    from quantcheck.textsafe import redact_url

    entries: list[dict[str, Any]] = []
    failed = problems = 0
    as_json = args.output_format == "json"
    for i, spec in enumerate(specs):
        name = redact_url(spec.name)
        try:
            doc = _summary(spec, args.layers)
        except (InputError, OSError) as exc:
            failed += 1
            why = describe_os_error(exc, "read") if isinstance(exc, OSError) else str(exc)
            say_error(why if why.startswith(name) else f"{name}: {why}")  # named once
            entries.append({"name": name, "error": why or type(exc).__name__})
            continue
        if as_json:
            head = (
                "schema_version",
                "tool",
                "tool_version",
                "kind",
            )  # the document's, not an entry's
            body = {k: v for k, v in doc.items() if k not in head}
            entries.append({"name": name, "error": None, **body})
        else:
            from quantcheck.render.inspect_text import render_inspect

            if i:
                say()
            say(f"== {name} ==")
            say_block(render_inspect(doc, summary_only=args.summary))
            for line in problem_lines(doc):
                say(line, err=True)
        problems += bool(doc["problems"])
    if as_json:
        from quantcheck.model.inventory import SCHEMA_VERSION

        _dump(
            {
                **document_head("inspect", SCHEMA_VERSION),
                "checkpoints": entries,
            }
        )
    else:
        say()
        say(f"{len(specs)} checkpoints" + (f", {failed} could not be read" if failed else ""))
    return 2 if failed else 1 if problems else 0
