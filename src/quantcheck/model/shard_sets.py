"""Which files are a checkpoint's shards: sets named `NAME-0000k-of-0000n.safetensors`
(recognising them, finding the missing members), which file an index's shard name means, and
an index file (local or remote) read once: the shards its weight_map names, the findings about
those names (QC502/QC503/QC504) and the map itself, which the loader's weight-map check (QC505)
takes from here. Standard library only."""

from __future__ import annotations

import json
import os
import re
import stat

from quantcheck._record import factory, record
from quantcheck.diagnostics import Diagnostic, json_pointer
from quantcheck.io.json_depth import loads_bounded
from quantcheck.io.source import file_kind, read_regular
from quantcheck.rules import codes as R

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.io.hub import HubPath
    from quantcheck.rules.registry import Rule

SAFETENSORS = ".safetensors"
SHARD_NAME = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<total>\d{5})\.safetensors$")


def index_member(index_rel: str, shard: str) -> str | None:
    """The path (relative to the listing, `/`-separated) of the file that the shard name
    `shard` in the index at `index_rel` means, or None when it names no file (empty, `.`) or
    could leave the index's folder (`leaves_folder`): absolute (`/x`, `\\x`, `C:x`) or with
    a `..` component (`\\` counts as a separator here; through a symlinked folder, `..`
    would lead wherever the link points).

    Names are resolved by name, never by where they resolve to: a shard that is a symlink
    (a Hugging Face cache snapshot links every file into `../../blobs/`) is the index's
    member. Local folders, local index files and hub listings all decide with this one
    function (`model.discover`, `model.checkpoint`, `io.remote`)."""
    if leaves_folder(shard):
        return None
    rel = "/".join(p for p in shard.split("/") if p not in ("", "."))
    if not rel:
        return None
    folder = index_rel.rpartition("/")[0]
    return f"{folder}/{rel}" if folder else rel


def leaves_folder(shard: str) -> bool:
    """Whether an index's shard name could lead out of the index's folder (`index_member`)."""
    drive = len(shard) > 1 and shard[1] == ":" and shard[0].isalpha()
    return shard.startswith(("/", "\\")) or drive or ".." in shard.replace("\\", "/").split("/")


#: most missing members a finding names (the rest are counted): a file named
#: `x-00001-of-99999.safetensors` is one finding, not 99,998
MAX_NAMED = 8


@record
class IncompleteSet:
    """A `NAME-0000k-of-0000n.safetensors` set that lacks members: a file of it, the first
    `MAX_NAMED` missing base names (in part order) and how many are missing in all."""

    first: str
    missing: list[str]
    count: int
    total: int


def missing_shards(files: list[str]) -> list[IncompleteSet]:
    """The incomplete `NAME-0000k-of-0000n.safetensors` sets among `files` (sets keyed by
    folder, NAME and n): members that are neither in `files` nor (local files) beside them
    are missing; a shard checked alone whose siblings exist is not an incomplete set. Work
    is bounded by the files present (and the folder listed once), not by n."""
    sets: dict[tuple[str, str, str], tuple[str, set[int]]] = {}
    for f in files:
        folder, _, base = f.replace("\\", "/").rpartition("/")
        m = SHARD_NAME.match(base)
        if m:
            key = (folder, m["stem"], m["total"])
            sets.setdefault(key, (f, set()))[1].add(int(m["part"]))
    out = []
    listed: dict[str, list[str]] = {}
    for (_, stem, total), (first, parts) in sets.items():
        folder = first[: -len(first.rsplit("/", 1)[-1])] if "/" in first else ""
        if "://" not in first:
            parts |= _beside(folder, stem, total, listed)
        n = int(total)
        count = n - sum(1 for i in parts if 1 <= i <= n)
        if count <= 0:
            continue
        names: list[str] = []
        i = 0
        while len(names) < min(MAX_NAMED, count):  # at most len(parts) + MAX_NAMED steps
            i += 1
            if i not in parts:
                names.append(f"{stem}-{i:05d}-of-{total}{SAFETENSORS}")
        out.append(IncompleteSet(first, names, count, n))
    return out


def _beside(folder: str, stem: str, total: str, listed: dict[str, list[str]]) -> set[int]:
    """The parts of the set (stem, total) that exist in the local `folder` (listed once per
    call; a dangling link is not a part)."""
    if folder not in listed:
        try:
            listed[folder] = os.listdir(folder or ".")
        except (OSError, ValueError):
            listed[folder] = []
    found = set()
    for name in listed[folder]:
        m = SHARD_NAME.match(name)
        if m and m["stem"] == stem and m["total"] == total and os.path.exists(folder + name):
            found.add(int(m["part"]))
    return found


#: most bytes of a local index read
MAX_LOCAL = 64 * 1024 * 1024


@record
class IndexRead:
    """What one index gave: the shards to open (paths or addresses, in weight_map order, each
    once), its weight_map (None when unreadable), the findings and the listing-relative paths
    it claims (`claims`: what discovery groups under it; an unreadable index claims none)."""

    shards: list[str] = factory(list)
    weight_map: Any = None
    findings: list[Diagnostic] = factory(list)
    claims: list[str] = factory(list)
    raw_bytes: int = 0  # bytes fetched for a remote index (charged to its check's budget)
    sizes: dict[str, int] = factory(dict)  # shard -> its size, where a stat gave it


_LOCAL_DOCS: dict[tuple[str, int, int], Any] = {}


def local_doc(path: str) -> Any:
    """A local index parsed once per (real path, size, mtime). Raises ValueError /
    RecursionError for bad JSON and OSError for I/O."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _LOCAL_DOCS:
        raw = read_regular(path, MAX_LOCAL + 1)  # never a FIFO: it would block
        if len(raw) > MAX_LOCAL:
            raise ValueError("index file is over 64 MiB")
        _LOCAL_DOCS.clear()  # keep one: a process rarely checks several indexes
        _LOCAL_DOCS[key] = loads_bounded(raw)
    return _LOCAL_DOCS[key]


def _no_map(name: str) -> Diagnostic:
    return Diagnostic(
        R.QC503,
        "index has no weight_map object of tensor name -> shard file",
        file=name,
        pointer="/weight_map",
    )


def read_local(index_path: str, index_rel: str = "") -> IndexRead:
    """A local index: shard paths joined to its folder; a name leaving the folder, naming no
    usable file or no regular file is a finding, not a shard. `index_rel`: the index's path
    relative to the folder being listed (for `claims`). OSError when it cannot be read."""
    out = IndexRead()
    try:
        doc = local_doc(index_path)
    except (ValueError, RecursionError) as exc:
        out.findings.append(Diagnostic(R.QC503, f"index is not valid JSON: {exc}", file=index_path))
        return out
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if isinstance(wmap, dict):
        out.weight_map = wmap
        names = [v for v in dict.fromkeys(wmap.values()) if isinstance(v, str)]
        found = (index_member(index_rel, n) for n in names if _usable(n))
        out.claims = [m for m in found if m is not None]
    if not isinstance(wmap, dict) or not wmap or not all(isinstance(v, str) for v in wmap.values()):
        out.findings.append(_no_map(index_path))
        return out
    folder = os.path.dirname(index_path)
    for shard in dict.fromkeys(wmap.values()):
        problem = _shard_problem(folder, shard, out.sizes)
        if problem is not None:
            code, text = problem
            pointer = json_pointer("weight_map") if code is R.QC502 else None
            out.findings.append(Diagnostic(code, text, file=index_path, pointer=pointer))
            continue
        out.shards.append(os.path.join(folder, shard))
    return out


def _usable(name: str) -> bool:
    """A name some local file can have (no NUL, no lone surrogate)."""
    try:
        return "\x00" not in name and bool(os.fsencode(name))
    except (ValueError, UnicodeError):
        return False


def _shard_problem(folder: str, shard: str, sizes: dict[str, int]) -> tuple[Rule, str] | None:
    """Why the shard file `shard` named by an index in `folder` is not opened, or None. The
    name is judged by name (`index_member`): a shard that is a symlink is opened wherever it
    points, as a loader would (a Hugging Face cache snapshot is all symlinks)."""
    if "\x00" in shard:
        return R.QC504, f"shard {shard!r} named by the index holds a NUL byte; no file has it"
    if leaves_folder(shard):
        return R.QC502, f"shard path {shard!r} leaves the index's folder; it was not opened"
    if index_member("", shard) is None:
        return R.QC504, f"shard {shard!r} named by the index names no file"
    try:
        os.fsencode(shard)
    except (ValueError, UnicodeError):
        return R.QC504, f"shard {shard!r} named by the index is not a usable file name"
    try:
        st = os.stat(os.path.join(folder, shard))
    except (OSError, ValueError, UnicodeError):
        return R.QC504, f"shard {shard!r} named by the index does not exist"
    if not stat.S_ISREG(st.st_mode):
        return R.QC504, (
            f"shard {shard!r} named by the index is {file_kind(st.st_mode)}, not "
            "a regular file; it was not opened"
        )
    sizes[os.path.join(folder, shard)] = st.st_size
    return None


def read_remote(
    name: str, fetch: str, hp: HubPath | None, listing: set[str] | None = None
) -> IndexRead:
    """A remote index (display name `name`, fetched from `fetch`; `hp`: its hub address):
    shard addresses under the index's real URL (a shard name is data, quoted into the URL),
    checked like local index files; with `listing`, a shard not in it is QC504."""
    from urllib.parse import quote

    from quantcheck.io.hub import refuse_offline
    from quantcheck.io.remote import fetch_index

    refuse_offline(name)
    raw = fetch_index(fetch)
    out = IndexRead(raw_bytes=len(raw))
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        out.findings.append(Diagnostic(R.QC503, f"index is not valid JSON: {exc}", file=name))
        return out
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    index_rel = hp.path if hp else ""
    if isinstance(wmap, dict):
        out.weight_map = wmap
        found = (
            index_member(index_rel, v) for v in dict.fromkeys(wmap.values()) if isinstance(v, str)
        )
        out.claims = [m for m in found if m is not None]
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        out.findings.append(_no_map(name))
        return out
    base = fetch.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[0]
    for shard in dict.fromkeys(wmap.values()):
        member = None if "://" in shard or "\\" in shard else index_member(index_rel, shard)
        if member is None:
            out.findings.append(
                Diagnostic(
                    R.QC502,
                    f"shard path {shard!r} leaves the index's folder; it was not opened",
                    file=name,
                    pointer=json_pointer("weight_map"),
                )
            )
            continue
        if listing is not None and member not in listing:
            out.findings.append(
                Diagnostic(R.QC504, f"shard {shard!r} named by the index does not exist", file=name)
            )
            continue
        out.shards.append(hp.with_path(member).name() if hp else f"{base}/{quote(shard)}")
    return out
