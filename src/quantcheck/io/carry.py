"""What a rewrite keeps of the output it replaces (standard library only).

- A replaced file keeps its permission bits (not set-user/group-id), owner and group
  (`keep_attributes(old, new)`): the owner where this process may set it (root), the group
  where it may (a group of its own).
- A folder carried over into a new sharded output keeps its owner, group, mode, extended
  attributes (POSIX ACLs are the `system.posix_acl_*` attributes) and, unless the write put
  files in it, its access and modification times.
- Files the output does not own are carried over by hard link (the same inode: everything
  kept), symbolic links are copied with their owner.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat

from quantcheck.io.outpath import DestinationError
from quantcheck.io.source import file_kind, read_regular

#: an old index is read up to this size to learn which files it names
MAX_INDEX = 64 * 1024 * 1024


def keep_attributes(
    old: str | os.stat_result, new: str, *, xattrs_from: str | None = None, times: bool = False
) -> None:
    """Give `new` the owner, group and mode of `old` (a path or its stat), and with
    `xattrs_from` that path's extended attributes (ACLs included); with `times` its times."""
    st = old if isinstance(old, os.stat_result) else os.stat(old)
    for uid in (st.st_uid, -1):  # not root: at least the group, where it is one of ours
        try:
            os.chown(new, uid, st.st_gid)
            break
        except OSError:
            continue
    if xattrs_from is not None:
        copy_xattrs(xattrs_from, new)
    # after chown, which clears set-id bits; a file's are not carried over (new contents
    # never inherit a privilege), a folder's set-group-id (group inheritance) is
    os.chmod(new, st.st_mode & (0o7777 if stat.S_ISDIR(st.st_mode) else 0o777))
    if times:
        os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))


def copy_xattrs(src: str, dst: str, *, follow: bool = True) -> None:
    """Every extended attribute of `src` this process may set on `dst` (others are skipped:
    `security.*` needs privileges, some file systems have none)."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src, follow_symlinks=follow)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(
                dst, name, os.getxattr(src, name, follow_symlinks=follow), 0, follow_symlinks=follow
            )


def carry_over(old: str, new: str, replaced: set[str], written: set[str], rel: str = "") -> None:
    """Make every entry of folder `old` not in `replaced` appear in `new` too (hard links,
    copied symlinks, folders with their attributes), so the switch keeps what the output does
    not own. `written` are the output's own names: folders holding one get the time of the
    write, as a write in place would give them."""
    with os.scandir(old) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        r = f"{rel}{e.name}"
        if r in replaced:
            continue
        dst = os.path.join(new, e.name)
        if e.is_symlink():
            os.symlink(os.readlink(e.path), dst)
            st = e.stat(follow_symlinks=False)
            with contextlib.suppress(OSError):
                os.chown(dst, st.st_uid, st.st_gid, follow_symlinks=False)
        elif e.is_dir():
            st = os.stat(e.path)  # before reading it changes its access time
            if not os.path.isdir(dst):
                os.mkdir(dst)
            carry_over(e.path, dst, replaced, written, r + "/")
            holds_output = any(w.startswith(r + "/") for w in written)
            keep_attributes(st, dst, xattrs_from=e.path, times=not holds_output)
        elif e.is_file():
            try:
                os.link(e.path, dst, follow_symlinks=False)
            except OSError as exc:
                raise DestinationError(
                    f"{e.path} is in the output folder and cannot be kept by a hard link "
                    f"({exc.strerror}); write the sharded output to a new or empty folder "
                    "(nothing was written)"
                ) from exc
        else:
            raise DestinationError(
                f"{e.path} is {file_kind(e.stat(follow_symlinks=False).st_mode)}"
                " in the output folder; write the sharded output to a new or "
                "empty folder (nothing was written)"
            )


def old_index_files(index_path: str) -> set[str]:
    """Shard paths named by the index being replaced (they are the old output's own)."""
    try:
        doc = json.loads(read_regular(index_path, MAX_INDEX))
    except (OSError, ValueError, RecursionError):
        return set()
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict):
        return set()
    return {
        os.path.normpath(v).replace(os.sep, "/")
        for v in wmap.values()
        if isinstance(v, str) and "\0" not in v
    }
