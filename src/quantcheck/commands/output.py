"""Where a rewrite goes: one file or a folder of shards plus index; never onto an input."""

from __future__ import annotations

import os

from quantcheck.checkpoint import Checkpoint, InputError

INDEX_NAME = "model.safetensors.index.json"


def output_layout(ck: Checkpoint, out: str) -> tuple[str, str | None]:
    """(destination, index name or None): sharded inputs give a folder with an index."""
    sharded = len(ck.shards) > 1 or ck.index is not None
    if not sharded and os.path.isdir(out):
        out = os.path.join(out, os.path.basename(ck.shards[0].name))
    index = os.path.basename(ck.index) if ck.index else INDEX_NAME if sharded else None
    inputs = {os.path.realpath(s.name) for s in ck.shards}
    if ck.index:
        inputs.add(os.path.realpath(ck.index))
    targets = [out] if not sharded else [os.path.join(out, os.path.basename(s.name))
                                         for s in ck.shards] + [os.path.join(out, index or "")]
    for t in targets:
        if os.path.realpath(t) in inputs:
            raise InputError(f"{out}: the output would overwrite an input; inputs are never "
                             "modified in place (choose another -o)")
    return out, index


def index_metadata(ck: Checkpoint) -> dict[str, object]:
    """The input index's `metadata` object (total_size is recomputed by the writer)."""
    if not ck.index:
        return {}
    from quantcheck.checkpoint import _index_doc

    try:
        doc = _index_doc(ck.index)
    except (OSError, ValueError):
        return {}
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return dict(meta) if isinstance(meta, dict) else {}
