"""Where a rewrite goes: one file or a folder of shards plus index; never onto an input.

Sharded output keeps the layout the input index describes (`s1/model.safetensors`,
`s2/model.safetensors` stay in their subfolders); shards given without an index keep their base
names, or their paths relative to their common folder when base names repeat.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from quantcheck.model.checkpoint import Checkpoint, InputError

if TYPE_CHECKING:
    from quantcheck.io.writer import OutFile

INDEX_NAME = "model.safetensors.index.json"


def output_layout(ck: Checkpoint, out: str) -> tuple[str, str | None]:
    """(destination, index name or None): sharded inputs give a folder with an index."""
    from quantcheck.io.outpath import DestinationError, check_destination

    sharded = len(ck.shards) > 1 or ck.index is not None
    if not sharded and os.path.isdir(out):
        out = os.path.join(out, os.path.basename(ck.shards[0].name))
    index = os.path.basename(ck.index) if ck.index else INDEX_NAME if sharded else None
    inputs = {os.path.realpath(s.name) for s in ck.shards}
    if ck.index:
        inputs.add(os.path.realpath(ck.index))
    targets = (
        [out]
        if not sharded
        else [os.path.join(out, n) for n in output_names(ck)] + [os.path.join(out, index or "")]
    )
    for t in targets:
        if os.path.realpath(t) in inputs:
            raise InputError(
                f"{out}: the output would overwrite an input; inputs are never "
                "modified in place (choose another -o)"
            )
    try:
        check_destination(out, sharded)
    except DestinationError as exc:
        raise InputError(str(exc)) from exc
    return out, index


def output_names(ck: Checkpoint) -> list[str]:
    """The output name of each shard, `/`-separated: with an index, its path relative to the
    index's folder (the layout the index describes); otherwise its base name, or, when base
    names repeat, its path relative to the shards' common folder."""
    paths = [os.path.abspath(s.name) for s in ck.shards]
    if ck.index:
        root = os.path.dirname(os.path.abspath(ck.index))
    else:
        names = [os.path.basename(p) for p in paths]
        if len(set(names)) == len(names):
            return names
        root = os.path.commonpath([os.path.dirname(p) for p in paths])
    return [os.path.relpath(p, root).replace(os.sep, "/") for p in paths]


def name_files(ck: Checkpoint, files: list[OutFile]) -> list[OutFile]:
    """Give each output file (one per input shard, in order) its output name."""
    if len(files) == len(ck.shards) and (ck.index or len(files) > 1):
        for f, name in zip(files, output_names(ck), strict=True):
            f.name = name
    return files


def index_metadata(ck: Checkpoint) -> dict[str, object]:
    """The input index's `metadata` object (total_size is recomputed by the writer)."""
    if not ck.index:
        return {}
    from quantcheck.model.shard_sets import local_doc

    try:
        doc = local_doc(ck.index)
    except (OSError, ValueError):
        return {}
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return dict(meta) if isinstance(meta, dict) else {}
