"""Remote checkpoints: `hf://` addresses and http(s) URLs, read through Range requests.

Entry points used by `quantcheck.model.checkpoint`:
- `open_remote_source(url)` → an `HttpSource` (a ByteSource) for one file;
- `expand_remote(url)` → (shard names, index name or None, diagnostics) for a file, an
  `*.index.json`, or (hf:// only) a repository folder, listed through the hub API;
- `read_remote_json(url)` → an index's JSON document (for the weight_map check).
"""

from __future__ import annotations

import json
import threading
from urllib.parse import quote, urlsplit

from quantcheck.diagnostics import Diagnostic, json_pointer
from quantcheck.io import hub
from quantcheck.io.http import HttpClient, RemoteError, Stats, redact
from quantcheck.io.httpsource import HttpSource
from quantcheck.io.limits import current_budget
from quantcheck.io.source import is_remote
from quantcheck.rules import codes as R

__all__ = [
    "HttpSource",
    "RemoteError",
    "expand_remote",
    "is_remote",
    "open_remote_source",
    "read_remote_json",
]

INDEX_SUFFIX = ".index.json"
_INDEX_DOCS: dict[str, object] = {}
#: display name (credentials and query redacted) -> URL to fetch, for remote index files.
_INDEX_URLS: dict[str, str] = {}
_INDEX_KEEP = 8
#: raw bytes of index files read before their checkpoint is checked (a hub listing reads each
#: index to group shards), by display name: the check takes them instead of asking again.
_INDEX_RAW: dict[str, bytes] = {}
#: most bytes `_INDEX_RAW` holds (beyond it an index is simply fetched again when checked).
RAW_KEEP_BYTES = 32 * 1024 * 1024
_RAW_LOCK = threading.Lock()


def _refuse_offline(url: str) -> None:
    hub.refuse_offline(url)


def _locate(url: str) -> tuple[str, str]:
    """(URL to fetch, display name) for one remote file; the name never carries secrets."""
    scheme = url.split("://", 1)[0].lower()
    if scheme == "hf":
        hp = hub.parse(url)
        if not hp.path:
            raise RemoteError(f"{redact(url)}: names a repository, not a file")
        return hub.resolve_url(hp), hp.name()
    if scheme in ("http", "https"):
        return url, redact(url)
    raise RemoteError(
        f"{redact(url)}: unsupported address; use hf://ORG/REPO/FILE, https:// or http:// URLs"
    )


def open_remote_source(url: str) -> HttpSource:
    """A ByteSource for one remote safetensors file (fetches its first range now). Inside
    `limits.checkpoint_budget()` every file opened shares one byte cap."""
    _refuse_offline(url)
    fetch, name = _locate(url)
    return HttpSource(fetch, name, settings=hub.settings(), budget=current_budget())


def expand_remote(url: str) -> tuple[list[str], str | None, list[Diagnostic]]:
    """Shard names for a remote file, index or (hf:// only) repository folder."""
    _refuse_offline(url)
    scheme = url.split("://", 1)[0].lower()
    if scheme == "hf":
        hp = hub.parse(url)
        if hp.path.endswith(".json"):
            return _expand_index(hp.name(), hub.resolve_url(hp), None)
        if hp.path.endswith(".safetensors"):
            return [hp.name()], None, []
        return _expand_folder(url, hp)
    _locate(url)
    path = urlsplit(url).path
    if path.endswith(INDEX_SUFFIX):
        return _expand_index(redact(url), url, None)
    if path.endswith("/"):
        raise RemoteError(
            f"{redact(url)}: an HTTP folder cannot be listed; give the URL of a "
            ".safetensors file or of its .index.json"
        )
    return [url], None, []


def _expand_folder(url: str, hp: hub.HubPath) -> tuple[list[str], str | None, list[Diagnostic]]:
    files = hub.list_folder(hp)
    prefix = f"{hp.path}/" if hp.path else ""
    here = sorted(f for f in files if f.startswith(prefix) and "/" not in f[len(prefix) :])
    indexes = [f for f in here if f.endswith(".safetensors" + INDEX_SUFFIX)]
    if indexes:
        idx = hp.with_path(indexes[0])
        return _expand_index(idx.name(), hub.resolve_url(idx), set(here))
    found = [hp.name(f) for f in here if f.endswith(".safetensors")]
    if not found:
        from quantcheck.errors import InputError

        raise InputError(f"{redact(url)}: folder holds no .safetensors files")
    return found, None, []


def _member(index_rel: str, shard: str) -> str | None:
    """The listing path a remote index's shard name means, or None when it is not opened:
    it leaves the index's folder, by the rule local folders use (`index_member`), or is no
    plain name (a URL, a `\\`)."""
    from quantcheck.model.shard_sets import index_member

    return None if "://" in shard or "\\" in shard else index_member(index_rel, shard)


def _expand_index(
    name: str, fetch: str, listing: set[str] | None
) -> tuple[list[str], str | None, list[Diagnostic]]:
    """Shard names from a remote index's weight_map, checked like local index files."""
    with _RAW_LOCK:
        raw = _INDEX_RAW.pop(name, None)
    if raw is None:
        raw = _fetch_index(fetch)
    else:
        _charge(name, raw)
    diags: list[Diagnostic] = []
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        diags.append(Diagnostic(R.QC503, f"index is not valid JSON: {exc}", file=name))
        return [], name, diags
    _remember(name, fetch, doc)
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        diags.append(
            Diagnostic(
                R.QC503,
                "index has no weight_map object of tensor name -> shard file",
                file=name,
                pointer="/weight_map",
            )
        )
        return [], name, diags
    # shards are fetched under the index's real URL (credentials kept, query dropped); a
    # shard name is data: quoted into the URL, never re-parsed (`?`, `#`, `@` in it)
    hp = hub.parse(name) if name.startswith("hf://") else None
    base = fetch.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[0]
    index_rel = hp.path if hp else ""
    out: list[str] = []
    for shard in dict.fromkeys(wmap.values()):
        member = _member(index_rel, shard)
        if member is None:
            diags.append(
                Diagnostic(
                    R.QC502,
                    f"shard path {shard!r} leaves the index's folder; it was not opened",
                    file=name,
                    pointer=json_pointer("weight_map"),
                )
            )
            continue
        if listing is not None and member not in listing:
            diags.append(
                Diagnostic(R.QC504, f"shard {shard!r} named by the index does not exist", file=name)
            )
            continue
        out.append(hp.with_path(member).name() if hp else f"{base}/{quote(shard)}")
    return out, name, diags


def _remember(name: str, fetch: str, doc: object) -> None:
    while len(_INDEX_DOCS) >= _INDEX_KEEP:
        _INDEX_DOCS.pop(next(iter(_INDEX_DOCS)))
    while len(_INDEX_URLS) >= _INDEX_KEEP:
        _INDEX_URLS.pop(next(iter(_INDEX_URLS)))
    _INDEX_DOCS[name] = doc
    _INDEX_URLS[name] = fetch


def _fetch_index(fetch: str) -> bytes:
    """An index's bytes, counted in the checkpoint's byte budget (`--max-bytes`): inside
    `limits.checkpoint_budget()` the one its shards share, else one of its own (discovery)."""
    client = HttpClient(hub.settings(), Stats(budget=current_budget()))
    try:
        return hub.fetch_bytes(client, fetch, what="index")[0]
    finally:
        client.close()


def _charge(name: str, raw: bytes) -> None:
    """Count an index read ahead (during discovery) in the budget of the check that uses it."""
    budget = current_budget()
    if not budget.spend(len(raw)):
        raise RemoteError(
            f"{name}: checking it needs more than the {budget.limit:,}-byte cap per "
            "checkpoint (its index alone is larger); raise --max-bytes to read it"
        )


def _keep_raw(name: str, raw: bytes) -> None:
    """Hold an index read ahead of its check (bounded by RAW_KEEP_BYTES in all)."""
    with _RAW_LOCK:
        _INDEX_RAW.pop(name, None)
        held = sum(len(v) for v in _INDEX_RAW.values())
        if held + len(raw) <= RAW_KEEP_BYTES:
            _INDEX_RAW[name] = raw


def read_remote_json(url: str, *, ahead: bool = False) -> object:
    """A remote index's JSON document (the copy read by `expand_remote`, else fetched now).

    `ahead=True` (discovery reading an index before its check) keeps the bytes for
    `expand_remote`, which then sends no second request."""
    if url in _INDEX_DOCS:
        return _INDEX_DOCS.pop(url)
    _refuse_offline(url)
    fetch = (
        hub.resolve_url(hub.parse(url)) if url.startswith("hf://") else _INDEX_URLS.get(url, url)
    )
    raw = _fetch_index(fetch)
    if ahead:
        _keep_raw(url, raw)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise RemoteError(f"{redact(fetch)}: index is not valid JSON ({exc})") from None
