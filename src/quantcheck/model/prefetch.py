"""Open the remote shards of one checkpoint concurrently: header and marker bytes per shard.

Each worker opens a shard (its first range holds the header of most files), then reads the
bytes of its markers, so that assembling the checkpoint afterwards finds them in the shard's
cache and sends nothing more. The shards come back in input order; if any fails, every shard
opened is closed and the first error (in input order) is raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from quantcheck.io.batch import map_bounded
from quantcheck.io.limits import checkpoint_budget, current_budget
from quantcheck.io.source import base_name
from quantcheck.model.markers import MARKER_SUFFIX, MAX_MARKER_BYTES
from quantcheck.progress import Progress

S = TypeVar("S")


def prefetch_markers(source: Any, header: Any) -> None:
    """Read the bytes of every marker tensor the checker will read (one batched request)."""
    spans = [
        (t.begin, t.nbytes)
        for t in header.tensors.values()
        if t.name.endswith(MARKER_SUFFIX)
        and 0 < t.nbytes <= MAX_MARKER_BYTES
        and t.end <= header.file_size
    ]
    if spans:
        source.read_many(spans)


def open_shards(
    files: list[str], jobs: int, opener: Callable[[str], S], *, read_markers: bool = True
) -> list[S]:
    """`opener(f)` for every file on `jobs` threads (with marker bytes prefetched), in order.
    The files share the caller's byte budget (`limits.checkpoint_budget`)."""
    budget = current_budget()

    def one(f: str) -> S:
        with checkpoint_budget(budget):
            shard = opener(f)
        if read_markers and "://" in f:
            header = shard.header  # type: ignore[attr-defined]
            if header.usable:
                try:
                    prefetch_markers(shard.source, header)  # type: ignore[attr-defined]
                except BaseException:
                    shard.source.close()  # type: ignore[attr-defined]
                    raise
        return shard

    shards: list[S] = []
    first_error: Exception | None = None
    with Progress(len(files), "reading headers") as bar:
        for _, result in map_bounded(
            one, files, jobs, progress=lambda f: bar.advance(base_name(f))
        ):
            if isinstance(result, Exception):
                first_error = first_error or result
            else:
                shards.append(result)
    if first_error is not None:
        for shard in shards:
            shard.source.close()  # type: ignore[attr-defined]
        raise first_error
    return shards
