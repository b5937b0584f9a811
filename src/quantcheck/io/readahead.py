"""Ask the OS to start reading the first bytes of files checked soon (standard library only).

Checking a folder of checkpoints that are not in the page cache waits on the disk once per file
(header, then markers) while the CPU idles, then computes while the disk idles. A
`POSIX_FADV_WILLNEED` hint for the files a few places ahead queues their first `SMALL_FILE` bytes
(a small checkpoint whole, a large one's header start) so the reads overlap the checking. Only a
hint: where the OS has no `posix_fadvise`, or a file cannot be opened, nothing happens, and the
check reads what it needs as before.
"""

from __future__ import annotations

import os

from quantcheck.io.source import SMALL_FILE, open_regular

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Protocol, TypeVar

    class _Paths(Protocol):
        """Anything naming files (a `model.discover.CheckpointSpec`): io/ knows no model."""

        paths: list[str]

    Spec = TypeVar("Spec", bound=_Paths)

#: how many checkpoints ahead of the one being checked are hinted
WINDOW = 16
_ADVISE = getattr(os, "posix_fadvise", None)


def hint(path: str, nbytes: int = SMALL_FILE) -> None:
    """Ask for the first `nbytes` of a local regular file to be read into the page cache."""
    if _ADVISE is None or "://" in path:
        return
    try:
        fd, _ = open_regular(path)  # never blocks on a FIFO; refuses anything not a file
    except OSError:
        return
    try:
        _ADVISE(fd, 0, nbytes, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_ahead(specs: Iterable[Spec], window: int = WINDOW) -> Iterator[Spec]:
    """Yield `specs` in order, hinting each one's files `window` places before it is yielded."""
    if _ADVISE is None:
        yield from specs
        return
    queue: list[Spec] = []
    for spec in specs:
        for path in spec.paths:
            hint(path)
        queue.append(spec)
        if len(queue) > window:
            yield queue.pop(0)
    yield from queue
