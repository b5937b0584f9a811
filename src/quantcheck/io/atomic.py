"""The one way quantcheck writes a file: a temp file beside the destination, then one rename.

Every file written (a one-file checkpoint output, a baseline, a report and its pages) goes
through `replacing(out)`: the destination is checked first (`outpath.check_destination`: a
device, FIFO, socket, folder or a symlink to one is refused, a symlink to a regular file is
followed and its target replaced), the caller fills the temp file, and only then does it
replace the destination, keeping the replaced file's mode, owner and group. On any failure,
SIGTERM or SIGHUP included, the temp file is removed and the destination is untouched.
Files inside a folder being staged (the shards and index of a sharded output) are created
new with `write_new`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from quantcheck.io import outpath
from quantcheck.io.carry import keep_attributes

_WRITE = os.O_WRONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def replacing(out: str) -> Iterator[str]:
    """A temp file (its path) to fill for the one-file destination `out`; when the block ends
    without an exception it replaces `out`. Raises `outpath.DestinationError` for a
    destination that cannot take a file, before anything is written."""
    dest = outpath.check_destination(os.fspath(out), sharded=False)
    parent, base = os.path.split(dest)
    with outpath.terminate_cleanly():
        outpath.clean_stale(parent)
        tmp = outpath.make_temp_file(parent, base)
        done = False
        try:
            yield tmp
            outpath.check_destination(dest, sharded=False)  # still not a device/FIFO/folder
            with contextlib.suppress(FileNotFoundError):
                keep_attributes(dest, tmp)
            os.replace(tmp, dest)
            done = True
            outpath.fsync_dir(parent)
        finally:
            if not done:
                outpath.discard(tmp)


def fill(path: str, data: bytes, *, create: bool = False) -> None:
    """Write `data` to `path` (an existing temp file, or with `create` a new file) and fsync."""
    flags = _WRITE | (os.O_CREAT | os.O_EXCL if create else os.O_TRUNC)
    fd = os.open(path, flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(out: str, data: bytes) -> None:
    """Write the bytes `data` to `out` through `replacing`."""
    with replacing(out) as tmp:
        fill(tmp, data)


def write_new(path: str, data: bytes) -> None:
    """Create `path` (it must not exist: a file in a folder of ours being staged) with `data`."""
    fill(path, data, create=True)


def json_bytes(doc: object, *, indent: int | None = 2) -> bytes:
    """`doc` as UTF-8 JSON text ending in a newline. Names that are not valid UTF-8 (Linux
    file names are bytes; Python holds the bad bytes as lone surrogates) are written as
    `\\udcXX` escapes: valid JSON, and read back by Python to the same name."""
    import json

    from quantcheck.textsafe import json_safe

    return (json_safe(json.dumps(doc, indent=indent, ensure_ascii=False)) + "\n").encode("utf-8")
