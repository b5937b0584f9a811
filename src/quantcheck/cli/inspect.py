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
        return _print_one(_summary(specs[0].paths, args.layers), args)
    return _print_many(specs, args)


def _summary(paths: list[str], layers: str | None) -> dict[str, Any]:
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.model.inventory import summarize

    with load_checkpoint(paths) as ck:
        doc = summarize(ck)
    if layers:
        import fnmatch

        doc["layers"] = [r for r in doc["layers"] if fnmatch.fnmatchcase(r["prefix"], layers)]
    return doc


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
    return 0


def _print_many(specs: list[Any], args: argparse.Namespace) -> int:
    """One section (text) or entry (JSON) per checkpoint; one that cannot be read is named
    with the reason, the others are still shown, and the exit code is 2."""
    from quantcheck.errors import InputError
    from quantcheck.textsafe import redact_url

    entries: list[dict[str, Any]] = []
    failed = 0
    as_json = args.output_format == "json"
    for i, spec in enumerate(specs):
        name = redact_url(spec.name)
        try:
            doc = _summary(spec.paths, args.layers)
        except (InputError, OSError) as exc:
            failed += 1
            say_error(f"{name}: {exc}")
            entries.append({"name": name, "error": str(exc) or type(exc).__name__})
            continue
        if as_json:
            body = {k: v for k, v in doc.items() if k not in ("schema_version", "tool", "kind")}
            entries.append({"name": name, "error": None, **body})
        else:
            from quantcheck.render.inspect_text import render_inspect

            if i:
                say()
            say(f"== {name} ==")
            say_block(render_inspect(doc, summary_only=args.summary))
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
    return 2 if failed else 0
