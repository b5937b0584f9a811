"""Helpers for the fix tests: run the planner/writer in-process and compare files."""

from __future__ import annotations

import hashlib
from pathlib import Path

from quantcheck.checking import run_rules, select_diagnostics
from quantcheck.cli.output import index_metadata, name_files, output_layout
from quantcheck.fix.planner import FixPlan, fixable, plan_fixes
from quantcheck.io.build import RawTensor, marker_tensor
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.written import write_checkpoint

#: the layers `stale_layer` makes are named so
STALE = "stale"


def stale_layer(prefix: str) -> list[RawTensor]:
    """A 16-bit weight with a leftover FP8 marker (QC304): `fix` removes the marker, so a
    `fix` of a file holding one has an edit to write (with none it writes nothing)."""
    return [
        RawTensor(f"{prefix}.weight", "BF16", (4, 16), bytes(128)),
        marker_tensor(prefix, {"format": "float8_e4m3fn"}),
    ]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fix_to(
    paths: list[Path],
    out: Path,
    target: str = "all",
    unsafe: bool = False,
    profile: str = "default",
) -> FixPlan:
    """What `quantcheck fix` does, returning the plan."""
    with load_checkpoint([str(p) for p in paths]) as ck:
        dest, index = output_layout(ck, str(out))
        plan = plan_fixes(ck, target=target, unsafe=unsafe, profile=profile)
        write_checkpoint(
            name_files(ck, plan.files), dest, index_name=index, index_meta=index_metadata(ck)
        )
    return plan


def leftovers(paths: list[str], target: str, unsafe: bool) -> list[str]:
    """Fixable problems a check still reports (refused ones excluded: they have a reason)."""
    with load_checkpoint(paths) as ck:
        plan = plan_fixes(ck, target=target, unsafe=unsafe)
        diags = select_diagnostics(run_rules(ck), target=target)
        out = [
            f"{d.code} {d.message}"
            for d in diags
            if fixable(d, unsafe) and not any(k[0] == d.code for k in plan.refused)
        ]
        if plan.changed:
            out.append("second fix changes: " + "; ".join(e.description for e in plan.edits))
    return out


def tensor_bytes(paths: list[str]) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    with load_checkpoint(paths) as ck:
        return {
            n: (t.dtype, t.shape, ck.shard_of(t).source.read(t.begin, t.nbytes))
            for n, t in ck.tensors.items()
        }
