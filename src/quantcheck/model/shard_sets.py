"""Shard sets named `NAME-0000k-of-0000n.safetensors`: recognising them and finding the missing
members; which file an index's shard name means. Standard library only."""

from __future__ import annotations

import os
import re

from quantcheck._record import record

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
