"""Shard sets named `NAME-0000k-of-0000n.safetensors`: recognising them and finding the missing
members. Standard library only."""

from __future__ import annotations

import os
import re

SAFETENSORS = ".safetensors"
SHARD_NAME = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<total>\d{5})\.safetensors$")


def missing_shards(files: list[str]) -> list[tuple[str, str]]:
    """(a file of the set, missing base name) for each member of every
    `NAME-0000k-of-0000n.safetensors` set among `files` (sets keyed by folder, NAME and n)
    that is neither in `files` nor (local files) beside them: a shard checked alone whose
    siblings exist is not an incomplete set."""
    sets: dict[tuple[str, str, str], tuple[str, set[int]]] = {}
    for f in files:
        folder, _, base = f.replace("\\", "/").rpartition("/")
        m = SHARD_NAME.match(base)
        if m:
            key = (folder, m["stem"], m["total"])
            sets.setdefault(key, (f, set()))[1].add(int(m["part"]))
    out = []
    for (_, stem, total), (first, parts) in sets.items():
        folder = first[: -len(first.rsplit("/", 1)[-1])] if "/" in first else ""
        names = [
            f"{stem}-{i:05d}-of-{total}{SAFETENSORS}"
            for i in range(1, int(total) + 1)
            if i not in parts
        ]
        out += [
            (first, n)
            for n in names
            if "://" in first or not os.path.exists(os.path.join(folder, n))
        ]
    return out
