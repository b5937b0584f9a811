"""Baselines: accept today's findings, fail only on new ones (as PHPStan and detekt do).

A baseline file is JSON (`kind: "baseline"`) listing findings by stable keys only: the
checkpoint's name (a local path relative to the working folder, `/`-separated; an address as
given), the code, and where in the checkpoint (tensor, else layer, else JSON pointer, else the
file's base name). Messages and ordering are not part of a key, so rewording a message or
reordering output keeps a baseline valid. Keys are counted: a baseline holding a key twice
accepts two such findings.
"""

from __future__ import annotations

import json
import os

from quantcheck._version import document_head

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.many import CheckpointResult

BASELINE_VERSION = 1
#: a baseline is read up to this size
MAX_BASELINE = 64 * 1024 * 1024


class BaselineError(Exception):
    """The baseline file cannot be read (exit code 2)."""


def checkpoint_key(name: str) -> str:
    """The stable name of a checkpoint: addresses as given, local paths relative to the
    working folder (so `models/a.safetensors` and `./models/a.safetensors` agree)."""
    if "://" in name:
        return name
    return os.path.relpath(os.path.abspath(name)).replace(os.sep, "/")


def finding_key(checkpoint: str, d: Any) -> tuple[str, str, str]:
    where = d.tensor or d.layer or d.pointer or (os.path.basename(d.file) if d.file else "")
    return (checkpoint_key(checkpoint), d.code, where)


def findings(results: list[CheckpointResult]) -> list[tuple[str, str, str]]:
    """Every finding's key (suppressed ones included), sorted."""
    out = []
    for r in results:
        if r.report is None or r.kind != "checked":
            continue
        for d in list(r.report.diagnostics) + list(r.suppressed):
            out.append(finding_key(r.name, d))
    return sorted(out)


def write_baseline(path: str, results: list[CheckpointResult]) -> int:
    """Write the baseline of `results` (through the safe writer: a device, FIFO or folder is
    refused with `OSError`); the number of findings written."""
    keys = findings(results)
    doc = {
        **document_head("baseline", BASELINE_VERSION),
        "findings": [{"checkpoint": c, "code": code, "where": w} for c, code, w in keys],
    }
    from quantcheck.io.atomic import json_bytes, write_file

    write_file(path, json_bytes(doc))
    return len(keys)


def read_baseline(path: str) -> dict[tuple[str, str, str], int]:
    """Key -> how many findings with it the baseline accepts."""
    from quantcheck.io.source import read_regular

    try:
        doc = json.loads(read_regular(path, MAX_BASELINE))
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: no such baseline file (write one with --generate-baseline)"
        ) from None
    except OSError as exc:  # a FIFO, a folder, no permission: what, without errno noise
        why = exc.strerror or str(exc).removeprefix(f"{path}: ").removeprefix(f"{path} ")
        raise BaselineError(f"{path}: cannot read the baseline: {why}") from None
    except (ValueError, RecursionError) as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc}") from None
    items = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(items, list) or doc.get("kind") != "baseline":
        raise BaselineError(
            f'{path}: not a quantcheck baseline (no kind "baseline" with a findings list)'
        )
    counts: dict[tuple[str, str, str], int] = {}
    for it in items:
        if isinstance(it, dict) and all(
            isinstance(it.get(k), str) for k in ("checkpoint", "code", "where")
        ):
            key = (it["checkpoint"], it["code"], it["where"])
            counts[key] = counts.get(key, 0) + 1
    return counts


def apply_baseline(results: list[CheckpointResult], known: dict[tuple[str, str, str], int]) -> int:
    """Move each finding the baseline accepts from the report to `suppressed`; how many."""
    left = dict(known)
    moved = 0
    for r in results:
        if r.report is None or r.kind != "checked":
            continue
        keep = []
        for d in r.report.diagnostics:
            key = finding_key(r.name, d)
            if left.get(key, 0) > 0:
                left[key] -= 1
                r.suppressed.append(d)
                moved += 1
            else:
                keep.append(d)
        r.report.diagnostics = keep
    return moved
