"""Byte sources: anything with `read(offset, n)`, `size` and a display `name`."""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # `typing` costs start-up time on the check path


def base_name(path: str) -> str:
    """The last component of a local path or URL: how files are named in diagnostics."""
    return path.rstrip("/").rsplit("/", 1)[-1]


class SourceError(OSError):
    """A byte source could not deliver the bytes asked for."""


class NotRegularFileError(OSError):
    """A local input is not a regular file (a FIFO, socket, device or folder): never read."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages: "a FIFO (named pipe)", "a socket", ..."""
    for test, what in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return what
    return "not a regular file"


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)  # a terminal device never becomes our controlling one
)


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file `path` and its stat.

    Opened with O_NONBLOCK, so a FIFO cannot block the open (O_NONBLOCK does not change reads
    of regular files), then checked with fstat: anything but a regular file is refused with
    `NotRegularFileError` (a folder with `IsADirectoryError`). A name holding a NUL byte is
    `FileNotFoundError`: no file can have it.
    """
    if "\x00" in path:
        raise FileNotFoundError(f"{path!r}: a file name cannot hold a NUL byte")
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            return fd, st
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path} is a folder")
        raise NotRegularFileError(
            f"{path}: is {file_kind(st.st_mode)}, not a regular file; only regular files are read"
        )
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes:
    """Up to `limit` bytes of the regular file `path` (see `open_regular`)."""
    fd, _ = open_regular(path)
    try:
        chunks, n = [], 0
        while n < limit:
            b = os.read(fd, min(limit - n, 1 << 24))
            if not b:
                break
            chunks.append(b)
            n += len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


if TYPE_CHECKING:
    from typing import Protocol

    class ByteSource(Protocol):
        """Random-access bytes. `read` may return fewer bytes only at end of data."""

        name: str

        @property
        def size(self) -> int: ...

        def read(self, offset: int, n: int) -> bytes: ...

        def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]: ...

        def close(self) -> None: ...
else:

    class ByteSource:
        """Random-access bytes: `name`, `size`, `read(offset, n)` (short only at end of data),
        `read_many(ranges)` and `close()`. A protocol: sources need not inherit from it."""


#: A local file up to this size is read whole by its first read; every later read (header,
#: markers) is served from memory: one system call per small checkpoint instead of one per range.
SMALL_FILE = 256 * 1024
#: At most this many bytes of small files are held at once (many open shards of one
#: checkpoint); past it, files are read per range.
BUFFER_BUDGET = 64 * 1024 * 1024
_buffered = [0]  # bytes held by all LocalFile copies now


class LocalFile:
    """A file on disk, read with `os.pread` (no shared file position). A file of at most
    `SMALL_FILE` bytes is read whole on the first read and served from memory after that."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.name = self.path
        self._fd = -1
        self._fd, st = open_regular(self.path)
        self._size = st.st_size
        self._whole: bytes | None = None
        self._buffer = True

    def drop_buffer(self) -> None:
        """Forget the in-memory copy of a small file and read per range from now on (an open
        checkpoint of many small shards then holds no copies once its markers are read)."""
        self._release()
        self._buffer = False

    def _release(self) -> None:
        whole, self._whole = self._whole, None
        if whole is not None:
            _buffered[0] -= len(whole)

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, n: int) -> bytes:
        if n <= 0 or offset >= self._size:
            return b""
        whole = self._whole
        if whole is None:
            whole = self._copy()
        if whole is not None and offset >= 0:
            return whole[offset : offset + n]
        return self._pread(offset, n)

    def _copy(self) -> bytes | None:
        """The in-memory copy of a small file, read whole now if it may be; else None."""
        if (
            self._whole is None
            and self._buffer
            and self._size <= SMALL_FILE
            and self._fd >= 0
            and _buffered[0] + self._size <= BUFFER_BUDGET
        ):
            self._whole = self._pread(0, self._size)
            _buffered[0] += len(self._whole)
        return self._whole

    def _pread(self, offset: int, n: int) -> bytes:
        n = min(n, self._size - offset)
        chunks = []
        while n > 0:
            b = os.pread(self._fd, n, offset)
            if not b:
                break
            chunks.append(b)
            offset += len(b)
            n -= len(b)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        whole = self._whole
        if whole is None and ranges:
            whole = self._copy()
        read = self.read
        if whole is None:
            return [read(o, n) for o, n in ranges]
        return [whole[o : o + n] if n > 0 and o >= 0 else read(o, n) for o, n in ranges]

    def close(self) -> None:
        self._release()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_whole", None) is not None:
            self._release()
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


class MemorySource:
    """Bytes held in memory; used by tests and for synthesized inputs."""

    def __init__(self, data: bytes, name: str = "<memory>") -> None:
        self._data = bytes(data)
        self.name = name

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, n: int) -> bytes:
        if n <= 0 or offset < 0:
            return b""
        return self._data[offset : offset + n]

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        return [self.read(o, n) for o, n in ranges]

    def close(self) -> None:
        pass


def is_remote(path: str) -> bool:
    """True for `hf://`, `http://` and `https://` addresses (a string test: importing the
    remote machinery costs ~50 ms of start-up, which a local check never pays)."""
    return path.split("://", 1)[0].lower() in ("hf", "http", "https") and "://" in path
