"""Streaming, atomic safetensors writer (standard library only).

A write is described by `OutFile`s: per output file its metadata and an ordered list of
`OutTensor`s whose bytes come from one of

- `Copy(source, offset, nbytes)`: a byte range of an input, copied in chunks of at most 8 MiB
  (`os.copy_file_range` between local files, `read`/`write` otherwise);
- `Data(bytes)`: small new bytes (markers, cast scales);
- `Chunks(nbytes, produce)`: a generator of chunks made on demand (quantized layers).

The header (8-byte aligned, space padded) is written first, then the tensors in the order the
caller gives (`model.written` puts the markers first). Nothing is ever held whole in memory.
Output goes to
a temp file next to the destination (a sharded output is staged in a temp folder), is
fsynced, re-read and re-checked with quantcheck itself, and only then moved into place: one
file through `quantcheck.io.atomic.replacing` (the one way any file is written), a sharded
output by exchanging the whole folder in one rename, so a reader sees the old set or the new
set, never a mix (other files in that folder are kept, see `quantcheck.io.carry`).
Destinations, temp names, modes (umask), stale temp removal, the per-file switch where
folders cannot be renamed and SIGTERM/SIGHUP are handled by `quantcheck.io.outpath`. On any
failure the destination is untouched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from quantcheck.io import outpath
from quantcheck.io.atomic import json_bytes, replacing, write_new
from quantcheck.io.carry import carry_over, keep_attributes, old_index_files
from quantcheck.io.outpath import TMP_SUFFIX, clean_stale
from quantcheck.io.source import ByteSource, LocalFile, open_regular

CHUNK = 8 * 1024 * 1024
__all__ = ["TMP_SUFFIX", "WriteError", "clean_stale", "write_files"]

#: `reread(paths, index_path)`: re-reads what was written (the shard files and the index, or
#: None for one file) before it replaces anything; raises WriteError to refuse it.
Reread = Callable[[list[str], "str | None"], None]


class WriteError(OSError):
    """The output could not be written or did not verify; nothing was left at the destination."""


@dataclass(frozen=True)
class Copy:
    """`nbytes` bytes of `source` starting at absolute `offset`."""

    source: ByteSource
    offset: int
    nbytes: int


@dataclass(frozen=True)
class Data:
    """New bytes held in memory (small tensors only)."""

    data: bytes

    @property
    def nbytes(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class Chunks:
    """`nbytes` bytes produced on demand by `produce()` (an iterable of bytes-like chunks)."""

    nbytes: int
    produce: Callable[[], Iterable[bytes | memoryview]]


Payload = Copy | Data | Chunks


@dataclass
class OutTensor:
    """One output tensor: name, safetensors dtype, shape and where its bytes come from."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data: Payload


@dataclass
class OutFile:
    """One output file: its name (`/`-separated relative path in a sharded output),
    `__metadata__` and tensors in order."""

    name: str
    tensors: list[OutTensor] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)

    def header(self) -> bytes:
        """The 8-byte length and the JSON header, space padded to a multiple of 8."""
        doc: dict[str, Any] = {}
        if self.metadata:
            doc["__metadata__"] = dict(self.metadata)
        off = 0
        for t in self.tensors:
            doc[t.name] = {
                "dtype": t.dtype,
                "shape": list(t.shape),
                "data_offsets": [off, off + t.data.nbytes],
            }
            off += t.data.nbytes
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        text += b" " * (-len(text) % 8)
        return struct.pack("<Q", len(text)) + text

    @property
    def data_size(self) -> int:
        return sum(t.data.nbytes for t in self.tensors)


class PlannedSource:
    """A not-yet-written `OutFile` seen as a byte source (for checking a plan before writing)."""

    def __init__(self, out: OutFile, name: str | None = None) -> None:
        self.out = out
        self.name = name or out.name
        self._header = out.header()
        self._spans: list[tuple[int, OutTensor]] = []
        pos = len(self._header)
        for t in out.tensors:
            self._spans.append((pos, t))
            pos += t.data.nbytes
        self._size = pos
        self._cache: dict[int, bytes] = {}
        self._starts: list[int] | None = None

    @property
    def size(self) -> int:
        return self._size

    def pieces(self, offset: int, n: int) -> Iterator[tuple[Payload, int, int]]:
        """(payload, offset within it, length) covering [offset, offset+n) of the data section."""
        import bisect

        if self._starts is None:
            self._starts = [start for start, _ in self._spans]
        first = max(0, bisect.bisect_right(self._starts, offset) - 1)  # O(log n) per read
        for start, t in self._spans[first:]:
            if start >= offset + n:
                break
            end = start + t.data.nbytes
            if end <= offset:
                continue
            lo, hi = max(offset, start), min(offset + n, end)
            yield t.data, lo - start, hi - lo

    def read(self, offset: int, n: int) -> bytes:
        out = bytearray()
        hl = len(self._header)
        if offset < hl:
            out += self._header[offset : offset + n]
        for payload, at, ln in self.pieces(max(offset, hl), offset + n - max(offset, hl)):
            out += _read_payload(payload, at, ln, self._cache)
        return bytes(out)

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        return [self.read(o, n) for o, n in ranges]

    def close(self) -> None:
        self._cache.clear()


def _read_payload(p: Payload, at: int, n: int, cache: dict[int, bytes]) -> bytes:
    if isinstance(p, Copy):
        return p.source.read(p.offset + at, n)
    if isinstance(p, Data):
        return p.data[at : at + n]
    whole = cache.get(id(p))
    if whole is None:
        whole = cache[id(p)] = b"".join(bytes(c) for c in p.produce())
    return whole[at : at + n]


# ------------------------------------------------------------------------------------ writing


class _Sink:
    """An open output file: counts bytes, copies spans, caches input descriptors."""

    def __init__(self, fd: int, fds: dict[str, int]) -> None:
        self.fd = fd
        self.fds = fds
        self.written = 0
        self.on_bytes: Callable[[int], None] | None = None

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        while view:
            n = os.write(self.fd, view[:CHUNK])
            view = view[n:]
            self.written += n
            if self.on_bytes:
                self.on_bytes(n)

    def payload(self, p: Payload) -> None:
        if isinstance(p, Data):
            self.write(p.data)
        elif isinstance(p, Chunks):
            before = self.written
            for chunk in p.produce():
                self.write(chunk)
            if self.written - before != p.nbytes:
                raise WriteError(
                    f"a generated tensor gave {self.written - before} bytes, "
                    f"not the {p.nbytes} its header entry declares"
                )
        else:
            self.copy(p.source, p.offset, p.nbytes)

    def copy(self, src: ByteSource, offset: int, n: int) -> None:
        if isinstance(src, PlannedSource):
            hl = len(src._header)
            if offset < hl:
                raise WriteError("a copy span reaches into a planned header")
            for payload, at, ln in src.pieces(offset, n):
                self.payload(_narrow(payload, at, ln))
            return
        if isinstance(src, LocalFile) and self._copy_range(src.path, offset, n):
            return
        pos, end = offset, offset + n
        while pos < end:
            chunk = src.read(pos, min(CHUNK, end - pos))
            if not chunk:
                raise WriteError(f"{src.name} ends at byte {pos} while copying a tensor")
            self.write(chunk)
            pos += len(chunk)

    def _copy_range(self, path: str, offset: int, n: int) -> bool:
        """Kernel-side copy; False when unavailable (then the caller copies by reading)."""
        if not hasattr(os, "copy_file_range"):
            return False
        fd = self.fds.get(path)
        if fd is None:
            fd = self.fds[path] = open_regular(path)[0]
        pos, end = offset, offset + n
        while pos < end:
            try:
                got = os.copy_file_range(fd, self.fd, min(CHUNK, end - pos), pos)
            except OSError as exc:
                if pos == offset and exc.errno in (
                    errno.EXDEV,
                    errno.ENOSYS,
                    errno.EINVAL,
                    errno.EOPNOTSUPP,
                    errno.EBADF,
                ):
                    return False
                raise
            if got == 0:
                raise WriteError(f"{path} ends at byte {pos} while copying a tensor")
            pos += got
            self.written += got
            if self.on_bytes:
                self.on_bytes(got)
        return True


def _narrow(p: Payload, at: int, n: int) -> Payload:
    if at == 0 and n == p.nbytes:
        return p
    if isinstance(p, Copy):
        return Copy(p.source, p.offset + at, n)
    if isinstance(p, Data):
        return Data(p.data[at : at + n])
    whole = b"".join(bytes(c) for c in p.produce())
    return Data(whole[at : at + n])


def _write_one(
    out: OutFile, path: str, fds: dict[str, int], on_bytes: Callable[[int], None] | None
) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_BINARY", 0))
    try:
        sink = _Sink(fd, fds)
        sink.on_bytes = on_bytes
        sink.write(out.header())
        for t in out.tensors:
            sink.payload(t.data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _index_doc(files: list[OutFile], meta: dict[str, Any] | None) -> bytes:
    wmap = {t.name: f.name for f in files for t in f.tensors}
    metadata = dict(meta or {})
    metadata["total_size"] = sum(f.data_size for f in files)
    return json_bytes({"metadata": metadata, "weight_map": wmap})


def write_files(
    files: list[OutFile],
    out: str,
    *,
    reread: Reread,
    index_name: str | None = None,
    index_meta: dict[str, Any] | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> list[str]:
    """Write `files` to `out` atomically; return the paths written. The checkpoint writer
    (`quantcheck.model.written.write_checkpoint`) is the caller: it orders the tensors and
    re-reads the output as a checkpoint (`reread`).

    One file and no `index_name`: `out` is the file path. Otherwise `out` is a folder that
    receives every file (names may hold subfolders, `s1/model.safetensors`) plus `index_name`
    (an index.json with a fresh weight_map).
    """
    sharded = index_name is not None or len(files) != 1
    if sharded and index_name is None:
        index_name = "model.safetensors.index.json"
    try:
        dest = outpath.check_destination(os.fspath(out), sharded)
        if sharded:
            assert index_name is not None
            outpath.check_names([f.name for f in files] + [index_name])
            outpath.check_shard_places(dest, [f.name for f in files] + [index_name])
    except outpath.DestinationError as exc:
        raise WriteError(str(exc)) from exc
    if not sharded:
        _write_file(files[0], dest, reread, on_bytes)
        return [os.fspath(out)]
    assert index_name is not None
    with outpath.terminate_cleanly():
        clean_stale(os.path.dirname(dest))
        _write_sharded(files, dest, index_name, index_meta, reread, on_bytes)
    shown = os.fspath(out)
    return [os.path.join(shown, f.name) for f in files] + [os.path.join(shown, index_name)]


def _write_file(
    out: OutFile,
    dest: str,
    reread: Reread,
    on_bytes: Callable[[int], None] | None,
) -> None:
    fds: dict[str, int] = {}
    try:
        with replacing(dest) as tmp:
            _write_one(out, tmp, fds, on_bytes)
            reread([tmp], None)
    except OSError as exc:
        raise _failed(exc, dest) from exc
    finally:
        _close_all(fds)


def _write_sharded(
    files: list[OutFile],
    dest: str,
    index_name: str,
    index_meta: dict[str, Any] | None,
    reread: Reread,
    on_bytes: Callable[[int], None] | None,
) -> None:
    parent, base = os.path.split(dest)
    fds: dict[str, int] = {}
    left: list[str] = []
    own = [f.name for f in files] + [index_name]  # the index last: switched file by file
    try:
        left = [outpath.make_temp_dir(parent, base)]
        tmp = left[0]
        paths = []
        for f in files:
            p = os.path.join(tmp, *f.name.split("/"))
            os.makedirs(os.path.dirname(p), mode=0o777, exist_ok=True)
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            _write_one(f, p, fds, on_bytes)
            _keep_replaced(dest, f.name, p)
            paths.append(p)
        index_path = os.path.join(tmp, index_name)
        write_new(index_path, _index_doc(files, index_meta))
        _keep_replaced(dest, index_name, index_path)
        reread(paths, index_path)
        stale: set[str] = set()
        if os.path.isdir(dest):
            stale = old_index_files(os.path.join(dest, index_name))
            carry_over(dest, tmp, set(own) | stale, set(own))
            keep_attributes(dest, tmp, xattrs_from=dest)
        outpath.fsync_dir(tmp)
        left = outpath.switch_folder(tmp, dest, own, stale)  # from here on: the old set
        outpath.fsync_dir(parent)
    except OSError as exc:
        raise _failed(exc, dest) from exc
    finally:
        _close_all(fds)
        outpath.remove_left(left)


def _keep_replaced(dest: str, name: str, new: str) -> None:
    """A shard or index replacing a file of the same name keeps that file's mode and owner."""
    old = os.path.join(dest, *name.split("/"))
    if os.path.isfile(old):
        keep_attributes(old, new)


def _failed(exc: OSError, dest: str) -> WriteError:
    if isinstance(exc, WriteError):
        return exc
    if isinstance(exc, outpath.DestinationError):
        return WriteError(str(exc))
    return WriteError(f"could not write {dest}: {_why(exc)}; nothing was written there")


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno == errno.EFBIG:
        return "file too large (the disk is full or a file size limit was hit)"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return exc.strerror or str(exc)
