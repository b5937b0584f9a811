"""The checkpoint writer: a checkpoint's files written through `io.writer` (the streaming,
atomic byte writer), marker tensors first, and the output re-read as a checkpoint before it
replaces anything (headers parse, the tensors are exactly the planned ones, the index
verifies, then the caller's `verify`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from quantcheck.io.writer import OutFile, WriteError, write_files
from quantcheck.model.markers import MARKER_SUFFIX
from quantcheck.rules import codes as R

if TYPE_CHECKING:
    from quantcheck.model.checkpoint import Checkpoint

__all__ = ["WriteError", "markers_first", "write_checkpoint"]


def write_checkpoint(
    files: list[OutFile],
    out: str,
    *,
    index_name: str | None = None,
    index_meta: dict[str, Any] | None = None,
    verify: Callable[[Checkpoint], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> list[str]:
    """Write `files` to `out` atomically; return the paths written.

    One file and no `index_name`: `out` is the file path. Otherwise `out` is a folder that
    receives every file (names may hold subfolders, `s1/model.safetensors`) plus `index_name`
    (an index.json with a fresh weight_map). `verify(ck)` runs on the re-read output before it
    replaces anything; raise to refuse it.
    """
    for f in files:
        markers_first(f)

    def reread(paths: list[str], index_path: str | None) -> None:
        _verify_written(paths, files, verify)
        if index_path is not None:
            _check_index(index_path)

    return write_files(
        files, out, reread=reread, index_name=index_name, index_meta=index_meta, on_bytes=on_bytes
    )


def markers_first(out: OutFile) -> None:
    """Put the marker tensors (`*.comfy_quant`) first, in their order, then the others in
    theirs: every marker lies right after the header, so a reader of the markers (a remote
    check) gets them with the header's bytes. Tensors keep their bytes; only offsets move."""
    marks = [t for t in out.tensors if t.name.endswith(MARKER_SUFFIX)]
    if marks and len(marks) < len(out.tensors):
        out.tensors = marks + [t for t in out.tensors if not t.name.endswith(MARKER_SUFFIX)]


def _verify_written(
    paths: list[str], files: list[OutFile], verify: Callable[[Checkpoint], None] | None
) -> None:
    """Re-read what was written: headers parse, tensors are exactly the planned ones."""
    from quantcheck.model.checkpoint import load_checkpoint

    with load_checkpoint(paths) as ck:
        for shard, out in zip(ck.shards, files, strict=True):
            h = shard.header
            bad = [d for d in h.diagnostics if d.code < "QC2" and d.code != R.QC119.code]
            if not h.usable or bad:
                what = bad[0].message if bad else "header unreadable"
                raise WriteError(f"the written file {out.name} does not re-read: {what}")
            want = [(t.name, t.dtype, tuple(t.shape), t.data.nbytes) for t in out.tensors]
            got = [(t.name, t.dtype, t.shape, t.nbytes) for t in h.tensors.values()]
            if want != got or h.metadata != out.metadata:
                raise WriteError(f"the written file {out.name} does not match what was planned")
        if verify is not None:
            verify(ck)


def _check_index(index_path: str) -> None:
    from quantcheck.model.checkpoint import load_checkpoint

    with load_checkpoint([index_path]) as ck:
        bad = [d for d in ck.diagnostics if d.code.startswith("QC5")]
        if bad:
            raise WriteError(f"the written index does not verify: {bad[0].message}")
