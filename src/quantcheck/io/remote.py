"""Remote bytes: `hf://` addresses and http(s) URLs, read through Range requests.

- `open_remote_source(url)` → an `HttpSource` (a ByteSource) for one file;
- `fetch_index(url)` → an index file's bytes (`model.shard_sets` reads them);
- `charge_index(name, size)` → an index read earlier counted in a check's byte budget.

Which files a remote argument names is decided in `quantcheck.model.discover`, never here.
"""

from __future__ import annotations

from quantcheck.io import hub
from quantcheck.io.http import HttpClient, RemoteError, Stats, redact
from quantcheck.io.httpsource import HttpSource
from quantcheck.io.limits import current_budget
from quantcheck.io.source import is_remote

__all__ = [
    "HttpSource",
    "RemoteError",
    "charge_index",
    "fetch_index",
    "is_remote",
    "locate",
    "open_remote_source",
]


def _refuse_offline(url: str) -> None:
    hub.refuse_offline(url)


def locate(url: str) -> tuple[str, str]:
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
    fetch, name = locate(url)
    return HttpSource(fetch, name, settings=hub.settings(), budget=current_budget())


def fetch_index(fetch: str) -> bytes:
    """An index's bytes, counted in the checkpoint's byte budget (`--max-bytes`): inside
    `limits.checkpoint_budget()` the one its shards share, else one of its own (discovery)."""
    client = HttpClient(hub.settings(), Stats(budget=current_budget()))
    try:
        return hub.fetch_bytes(client, fetch, what="index")[0]
    finally:
        client.close()


def charge_index(name: str, size: int) -> None:
    """Count an index read when the arguments were resolved in the budget of the check that
    uses it (inside `limits.checkpoint_budget()`)."""
    budget = current_budget()
    if not budget.spend(size):
        raise RemoteError(
            f"{name}: checking it needs more than the {budget.limit:,}-byte cap per "
            "checkpoint (its index alone is larger); raise --max-bytes to read it"
        )
