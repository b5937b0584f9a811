"""Where an output may go, its temp names, and how it is switched into place (stdlib only).

- Destinations: an existing one-file destination must be a regular file and a sharded one a
  folder; devices, FIFOs, sockets (and folders in a shard's place) are refused before anything
  is written. A symbolic link is followed: the file or folder it points to is replaced and the
  link stays; a dangling link is refused.
- Temp names: `.<dest>.<pid>.<tag>.<random>.quantcheck-tmp` beside the destination, where `tag`
  names this host and pid namespace. A temp entry whose tag is ours and whose pid is no longer
  alive is stale and removed when the next write into that folder starts; anything else (a live
  pid, another host or container) is left alone.
- Modes follow the umask like any other tool: files 0666 & ~umask, folders 0777 & ~umask.
- A sharded output is a folder switched as a whole: the new set is staged in a temp folder
  beside it and exchanged with the old folder in one atomic rename (`renameat2`
  RENAME_EXCHANGE on Linux; elsewhere two renames, and a kill between them is undone by the
  next write). A reader sees the old set or the new set, never a mix.
- Replacing an existing file or folder keeps what it carried: a replaced file's mode, owner
  and group (owner and group where this process may set them); a carried-over folder's owner,
  group, mode, ACLs and extended attributes, and its times unless the write put files in it.
- Where folders cannot be renamed (overlayfs: EXDEV), a sharded output is switched file by
  file (`replace_files`): a failure puts the old files back, but a reader during the switch
  may see a mix.
- SIGTERM and SIGHUP during a write are handled like Ctrl-C: temp files are removed, exit
  status 128 + the signal.
- `quantcheck.io.atomic.replacing(out)` builds on these: it is the one way a single file is
  written (outputs, baselines, reports); every write site fills the temp file it yields.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

TMP_SUFFIX = ".quantcheck-tmp"
OLD_SUFFIX = ".quantcheck-old"
_TMP_RE = re.compile(
    r"^\.(?P<base>.+)\.(?P<pid>\d+)\.(?P<tag>[0-9a-f]{8})\.[^.]+"
    r"\.quantcheck-(?P<kind>tmp|old)$"
)


class DestinationError(OSError):
    """The destination cannot take the output; nothing was written."""


# ------------------------------------------------------------------------------ modes


def _umask() -> int:
    from quantcheck.io.source import read_regular

    try:
        for line in (
            read_regular("/proc/self/status", 1 << 16).decode("ascii", "replace").split("\n")
        ):
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode() -> int:
    """The mode a new output file gets: 0666 & ~umask."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    """The mode a new output folder gets: 0777 & ~umask."""
    return 0o777 & ~_umask()


# ------------------------------------------------------------------------- temp names


def _tag() -> str:
    """8 hex digits naming this host and pid namespace (pids are only comparable within)."""
    ns = ""
    with contextlib.suppress(OSError):
        ns = os.readlink("/proc/self/ns/pid")
    return hashlib.sha1(f"{socket.gethostname()}|{ns}".encode()).hexdigest()[:8]


def temp_prefix(base: str) -> str:
    return f".{base}.{os.getpid()}.{_tag()}."


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def clean_stale(folder: str, base: str | None = None) -> list[str]:
    """Remove temp entries in `folder` left by writers of ours that are no longer running.

    A staged-aside old sharded folder (`.quantcheck-old`) whose destination is missing (a kill
    between the two renames of the fallback switch) is renamed back instead.
    """
    removed: list[str] = []
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return removed
    tag = _tag()
    for name in names:
        m = _TMP_RE.match(name)
        if (
            not m
            or (base is not None and m.group("base") != base)
            or m.group("tag") != tag
            or _alive(int(m.group("pid")))
        ):
            continue
        path = os.path.join(folder, name)
        dest = os.path.join(folder, m.group("base"))
        if m.group("kind") == "old" and not os.path.lexists(dest):
            with contextlib.suppress(OSError):
                os.rename(path, dest)
            continue
        if not remove_left([path], "a temp entry left by an earlier run"):
            removed.append(path)
    return removed


def make_temp_file(folder: str, base: str) -> str:
    """A new empty temp file for destination `base` in `folder`, mode 0666 & ~umask."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=temp_prefix(base), suffix=TMP_SUFFIX)
    try:
        os.fchmod(fd, file_mode())
    finally:
        os.close(fd)
    return tmp


def make_temp_dir(folder: str, base: str) -> str:
    """A new empty temp folder for destination `base` in `folder`, mode 0777 & ~umask."""
    tmp = tempfile.mkdtemp(dir=folder, prefix=temp_prefix(base), suffix=TMP_SUFFIX)
    os.chmod(tmp, dir_mode())
    return tmp


# ----------------------------------------------------------------------- destinations


def _kind(mode: int) -> str:
    for test, what in (
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISREG, "regular file"),
    ):
        if test(mode):
            return what
    return "special file"


def check_destination(out: str, sharded: bool) -> str:
    """The path to replace for `out` (symlinks followed); refuse anything else.

    One-file output: `out` must not exist or be a regular file. Sharded output: `out` must
    not exist or be a folder (not a mount point: it is replaced by a rename).
    """
    out = os.path.abspath(os.fspath(out).rstrip("/") or "/")
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise DestinationError(f"{out}: {exc.strerror}; nothing was written") from exc
    if st is not None and stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(out)
        try:
            st = os.stat(real)
        except OSError as exc:
            raise DestinationError(
                f"{out} is a symbolic link to {real}, which cannot be "
                f"reached ({exc.strerror}); nothing was written"
            ) from exc
        out = real
    if not os.path.isdir(os.path.dirname(out)):
        raise DestinationError(f"{os.path.dirname(out)}: the output folder does not exist")
    if st is None:
        return out
    if sharded:
        if not stat.S_ISDIR(st.st_mode):
            raise DestinationError(
                f"{out} is a {_kind(st.st_mode)}; a sharded output needs a "
                "folder (nothing was written)"
            )
        if os.path.ismount(out):
            raise DestinationError(
                f"{out} is a mount point; a sharded output replaces its "
                "folder with one rename, so write it to a folder inside "
                "(nothing was written)"
            )
    elif stat.S_ISDIR(st.st_mode):
        raise DestinationError(f"{out} is a folder; give a file name for a one-file output")
    elif not stat.S_ISREG(st.st_mode):
        raise DestinationError(
            f"{out} is a {_kind(st.st_mode)}, not a regular file; quantcheck "
            "only writes regular files (nothing was written)"
        )
    return out


def check_shard_places(out: str, names: list[str]) -> None:
    """In an existing output folder, every shard's place must be free or a regular file."""
    if not os.path.isdir(out):
        return
    for name in names:
        parts = name.split("/")
        path = out
        for i, part in enumerate(parts):
            path = os.path.join(path, part)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                break
            except OSError as exc:
                raise DestinationError(f"{path}: {exc.strerror}; nothing was written") from exc
            last = i == len(parts) - 1
            if (last and not stat.S_ISREG(st.st_mode)) or (
                not last and not stat.S_ISDIR(st.st_mode)
            ):
                want = "a regular file" if last else "a folder"
                raise DestinationError(
                    f"{path} is a {_kind(st.st_mode)} where the output "
                    f"needs {want}; nothing was written"
                )


def check_names(names: list[str]) -> None:
    """Shard names are relative paths inside the output folder, distinct, without `..`."""
    seen: set[str] = set()
    for name in names:
        parts = name.split("/")
        if (
            not name
            or name.startswith("/")
            or "\\" in name
            or "\0" in name
            or any(p in ("", ".", "..") for p in parts)
        ):
            raise DestinationError(
                f"shard name {name!r} is not a plain relative path; nothing was written"
            )
        if name in seen:
            raise DestinationError(f"two output shards are named {name!r}; nothing was written")
        seen.add(name)


# ------------------------------------------------------------------------- switching


def _exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def switch_folder(staged: str, out: str, own: list[str], stale: set[str]) -> list[str]:
    """Put folder `staged` at `out`; an existing `out` is swapped out whole. Returns the paths
    now holding what is no longer wanted (to remove).

    Where folders cannot be renamed (EXDEV: overlayfs without redirect_dir), `own` (the
    output's files, in order: the index last) are moved in one by one (`replace_files`) and
    `stale` (old output files the new one does not name) are put aside.
    """
    try:
        if not os.path.lexists(out):
            os.rename(staged, out)
            return []
        if _exchange(staged, out):
            return [staged]
        aside = staged[: -len(TMP_SUFFIX)] + OLD_SUFFIX
        os.rename(out, aside)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        return replace_files(staged, out, own, stale)
    try:
        os.rename(staged, out)
    except BaseException:
        os.rename(aside, out)
        raise
    return [aside]


#: what a sharded write into a folder that cannot be renamed still promises
PER_FILE_PROMISE = (
    "this file system cannot rename folders (overlayfs?), so the files were replaced one by "
    "one: a failure puts the old files back, but a reader during the switch (or a kill) may "
    "see a mix of old and new files"
)


def replace_files(staged: str, out: str, own: list[str], stale: set[str]) -> list[str]:
    """Move each of `own` (`/`-separated names) from `staged` into the folder `out`, one
    `os.replace` per file, keeping each replaced file aside (a hard link) until all are in; on
    a failure every file moved is put back. Returns [aside folder, staged] (to remove)."""
    aside = staged[: -len(TMP_SUFFIX)] + OLD_SUFFIX
    os.mkdir(aside, 0o700)
    os.makedirs(out, mode=dir_mode(), exist_ok=True)
    done: list[tuple[str, bool]] = []
    made: list[str] = []
    try:
        for name in own:
            dst, kept = _in(out, name), _in(aside, name)
            made += _makedirs(os.path.dirname(dst))
            had = os.path.lexists(dst)
            if had:
                os.makedirs(os.path.dirname(kept), exist_ok=True)
                os.link(dst, kept, follow_symlinks=False)
            os.replace(_in(staged, name), dst)
            done.append((name, had))
    except BaseException:
        for name, had in reversed(done):
            with contextlib.suppress(OSError):
                if had:
                    os.replace(_in(aside, name), _in(out, name))
                else:
                    os.unlink(_in(out, name))
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        discard(aside)  # only links to files now back in place are left in it
        raise
    for name in sorted(stale - set(own)):
        with contextlib.suppress(OSError):
            kept = _in(aside, name)
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            os.rename(_in(out, name), kept)
    warn(f"{out}: {PER_FILE_PROMISE}")
    return [aside, staged]


def _in(folder: str, name: str) -> str:
    return os.path.join(folder, *name.split("/"))


def _makedirs(folder: str) -> list[str]:
    """Create `folder` and missing parents; the ones created, outermost first."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for f in reversed(missing):
        os.mkdir(f, dir_mode())
    return missing[::-1]


def remove_left(paths: list[str], what: str = "the previous output") -> bool:
    """Remove what a switch left (the old output); what cannot be removed (an immutable
    file, another owner's) is named in a warning, never left silently. True if some was."""
    left = False
    for path in paths:
        failed = _remove_collecting(path)
        if failed:
            left = True
            files = [p for p, _ in failed if not os.path.isdir(p)] or [p for p, _ in failed]
            shown = ", ".join(os.path.relpath(p, path) if p != path else p for p in files[:3])
            more = f" and {len(files) - 3} more" if len(files) > 3 else ""
            warn(
                f"{what} could not be removed whole ({failed[0][1]}: {shown}{more}); "
                f"it is left in {path}"
            )
    return left


def _remove_collecting(path: str) -> list[tuple[str, str]]:
    """Remove `path` (a folder bottom-up); the entries that could not be removed, and why."""
    failed: list[tuple[str, str]] = []

    def rm(fn: Callable[[str], None], p: str) -> None:
        try:
            fn(p)
        except FileNotFoundError:
            pass
        except OSError as exc:
            failed.append((p, exc.strerror or str(exc)))

    if not os.path.isdir(path) or os.path.islink(path):
        rm(os.unlink, path)
        return failed
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            rm(os.unlink, os.path.join(root, name))
        for name in dirs:
            p = os.path.join(root, name)
            rm(os.unlink if os.path.islink(p) else os.rmdir, p)
    rm(os.rmdir, path)
    return [(p, why) for p, why in failed if os.path.lexists(p)]


def warn(message: str) -> None:
    """One warning line on stderr (text escaped)."""
    from quantcheck.textsafe import say_warning

    say_warning(message)


def fsync_dir(folder: str) -> None:
    """Flush a folder's entries to disk (where the system allows)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def discard(path: str | None) -> None:
    """Remove a temp file or folder of ours, quietly (it may be gone already)."""
    if path is not None:
        with contextlib.suppress(OSError):
            _remove(path)


# --------------------------------------------------------------------------- signals

#: the signals a write unwinds on (cleanup runs), exiting with 128 + the signal: `kill` and
#: a closed terminal or ssh session
SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


class _Terminated(SystemExit):
    pass


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP unwind like Ctrl-C (cleanup runs) and exit with
    128 + the signal."""

    def handler(signum: int, frame: object) -> None:
        for s in SIGNALS:  # a second one must not cut cleanup
            signal.signal(s, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.write(2, b"\nquantcheck: terminated\n")
        raise _Terminated(128 + signum)

    installed: dict[int, Any] = {}
    for s in SIGNALS:
        old = signal.getsignal(s)
        if old == signal.SIG_DFL:  # otherwise someone else handles (or ignores) it
            try:
                signal.signal(s, handler)
                installed[s] = old
            except ValueError:  # not the main thread: leave signals alone
                break
    try:
        yield
    finally:
        for s, old in installed.items():
            with contextlib.suppress(ValueError):
                signal.signal(s, old)
