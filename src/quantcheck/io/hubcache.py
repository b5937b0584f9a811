"""The local Hugging Face cache: `hf://ORG/REPO…` read from disk when `hf download` (or any
huggingface_hub program) already put the snapshot there (standard library only).

Layout (huggingface_hub's): `$HF_HUB_CACHE` (default `$HF_HOME/hub`) holds
`models--ORG--REPO/refs/REVISION` (a file holding a commit hash) and
`models--ORG--REPO/snapshots/COMMIT/PATH`, symlinks into `../../blobs/`. `datasets--` and
`spaces--` likewise.

A cached file or folder is used, without any request, when it is complete: it exists, every
link in it resolves to a regular file, and every shard an index in it names is there (a repo
file never downloaded cannot be seen: the cache has no listing). Otherwise the hub is asked,
unless HF_HUB_OFFLINE is set: then what the cache holds is used, or nothing is. Each use is
said once on stderr, and `input_record` marks cached inputs (`hub_cache` in JSON `inputs`).
"""

from __future__ import annotations

import json
import os
import re
import threading

from quantcheck.io import hub
from quantcheck.io.source import read_regular
from quantcheck.textsafe import say

#: the addresses the one line was said for in this run (`forget_said` starts a new run)
_SAID: set[str] = set()
_LOCK = threading.Lock()
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SNAPSHOT = re.compile(
    r"(?:^|/)(models|datasets|spaces)--([^/]+?)--([^/]+)/snapshots/([0-9a-f]{40})/(.+)$"
)


def snapshot(hp: hub.HubPath) -> tuple[str, str] | None:
    """(snapshot folder, commit) of the cached revision of `hp`'s repo, or None."""
    repo = os.path.join(hub.cache_dir(), f"{hp.repo_type}--{hp.repo_id.replace('/', '--')}")
    commit = hp.rev if _COMMIT.match(hp.rev) else _read_ref(os.path.join(repo, "refs", hp.rev))
    if commit is None or not _COMMIT.match(commit):
        return None
    folder = os.path.join(repo, "snapshots", commit)
    return (folder, commit) if os.path.isdir(folder) else None


def _read_ref(path: str) -> str | None:
    try:
        return read_regular(path, 256).decode("ascii", "replace").strip()
    except OSError:
        return None


def lookup(address: str) -> str | None:
    """The local path that stands for `address` (`hf://…`), or None when the hub must be
    asked. Says on stderr, once per address, that the cache was used (or, offline, that it
    was incomplete)."""
    if not address.startswith("hf://"):
        return None
    try:
        hp = hub.parse(address)
    except OSError:
        return None
    found = snapshot(hp)
    if found is None:
        return None
    folder, commit = found
    local = os.path.join(folder, *hp.path.split("/")) if hp.path else folder
    if not os.path.exists(local):
        return None
    missing = incomplete(local)
    if missing and not hub.offline():
        return None
    note = (
        f"; incomplete ({missing}), and HF_HUB_OFFLINE is set, so only what is there is checked"
        if missing
        else ""
    )
    _say_once(address, f"quantcheck: {address}: read from the local Hugging Face cache "
              f"(snapshot {commit[:12]}, {local}), no request sent{note}")  # fmt: skip
    return local


def _say_once(address: str, line: str) -> None:
    with _LOCK:
        if address in _SAID:
            return
        _SAID.add(address)
    say(line, err=True)


def forget_said() -> None:
    """A new run (the CLI's `main`): each address is said again."""
    with _LOCK:
        _SAID.clear()


def incomplete(path: str) -> str | None:
    """Why the cached `path` (a file or folder) cannot stand for the repo's, or None."""
    files: list[str] = []
    if os.path.isdir(path):
        for folder, dirs, names in os.walk(path, followlinks=False):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            files += [os.path.join(folder, n) for n in names]
        if not any(f.endswith(".safetensors") for f in files):
            return "no .safetensors file was downloaded"
    else:
        files = [path]
    for f in files:
        if not os.path.isfile(f):
            return f"{os.path.relpath(f, path) if f != path else f} is a dangling link"
        if f.endswith(".safetensors.index.json"):
            gone = _missing_shards(f)
            if gone:
                return f"{gone} named by {os.path.basename(f)} was not downloaded"
    return None


def _missing_shards(index: str) -> str | None:
    try:
        doc = json.loads(read_regular(index, hub.MAX_JSON))
    except (OSError, ValueError, RecursionError):
        return None  # the check reports the index itself
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    folder = os.path.dirname(index)
    for shard in dict.fromkeys(wmap.values() if isinstance(wmap, dict) else ()):
        if isinstance(shard, str) and not os.path.isfile(os.path.join(folder, shard)):
            return shard
    return None


def address_of(address: str, local: str, path: str) -> str:
    """The `hf://` name of `path` (at or under `local`, which `lookup(address)` gave), in the
    form the user wrote `address`."""
    hp = hub.parse(address)
    if path == local:
        return hp.name()
    rel = os.path.relpath(path, local).replace(os.sep, "/")
    return hp.with_path(f"{hp.path}/{rel}" if hp.path else rel).name()


def hub_name(path: str) -> str | None:
    """`hf://ORG/REPO@COMMIT/PATH` for a path inside a cache snapshot, else None."""
    m = _SNAPSHOT.search(path.replace(os.sep, "/"))
    if m is None:
        return None
    kind, org, repo, commit, rel = m.groups()
    return hub.HubPath(kind, f"{org}/{repo}", rel, commit).name()


def origin(path: str) -> dict[str, str] | None:
    """`{"name": hf://…, "revision": COMMIT}` for an input read from the cache, else None."""
    name = hub_name(path)
    if name is None:
        return None
    return {"name": name, "revision": hub.parse(name).rev}
