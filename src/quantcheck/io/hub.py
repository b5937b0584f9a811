"""`hf://` addresses and the Hugging Face Hub's conventions (standard library only).

`hf://ORG/REPO[/PATH][@REV]` (also `hf://ORG/REPO@REV[/PATH]`, and `hf://datasets/ORG/REPO…`).
Honours `HF_ENDPOINT` (default https://huggingface.co), `HF_TOKEN` (else the token `hf auth
login` saved, `$HF_TOKEN_PATH` or `$HF_HOME/token`; sent only to the endpoint's origin) and
`HF_HUB_OFFLINE`. Files are read from `{endpoint}/{repo}/resolve/{rev}/{path}`;
folders are listed through `{endpoint}/api/models/{repo}/tree/{rev}[/{path}]`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin

from quantcheck.io.http import (
    CHUNK,
    BodyDropped,
    HttpClient,
    HttpSettings,
    RemoteError,
    env_timeout,
    origin_of,
    redact,
)
from quantcheck.io.http import status_error as _status_error

DEFAULT_ENDPOINT = "https://huggingface.co"
REPO_TYPES = {"datasets": "datasets", "spaces": "spaces", "models": "models"}
MAX_JSON = 64 * 1024 * 1024
MAX_PAGES = 100
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


@dataclass(frozen=True, slots=True)
class HubPath:
    """A parsed `hf://` address. `revision` is None when the default branch is meant."""

    repo_type: str  # "models", "datasets" or "spaces"
    repo_id: str
    path: str
    revision: str | None

    @property
    def rev(self) -> str:
        return self.revision or "main"

    def name(self, path: str | None = None) -> str:
        """The display name of a file of this repo: `hf://org/repo[@rev]/path`. A file name
        is data: its `%`, `@`, `?` and `#` are percent-encoded, so `parse` gives the same
        path back (never a revision, a query or a fragment)."""
        p = escape_path(self.path if path is None else path)
        kind = "" if self.repo_type == "models" else f"{self.repo_type}/"
        rev = f"@{self.revision}" if self.revision else ""
        return f"hf://{kind}{self.repo_id}{rev}" + (f"/{p}" if p else "")

    def with_path(self, path: str) -> HubPath:
        return HubPath(self.repo_type, self.repo_id, path, self.revision)


_RESERVED = re.compile("[%@?#]")
_ESCAPED = re.compile("%(25|40|3[Ff]|23)")


def escape_path(path: str) -> str:
    """`path` with the characters an `hf://` address gives a meaning (`%`, `@`, `?`, `#`)
    percent-encoded; `unescape_path` reverses it."""
    return _RESERVED.sub(lambda m: f"%{ord(m.group()):02X}", path)


def unescape_path(path: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), path)


def offline() -> bool:
    """HF_HUB_OFFLINE set to a true value (1, ON, YES, TRUE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def refuse_offline(url: str) -> None:
    """RemoteError when HF_HUB_OFFLINE is set (nothing may be fetched); for an `hf://`
    address it says where the local cache was looked in."""
    if not offline():
        return
    where = (
        f" and it is not in the Hugging Face cache ({cache_dir()})"
        if url.startswith("hf://")
        else ""
    )
    raise RemoteError(
        f"{redact(url)}: HF_HUB_OFFLINE is set, so nothing is fetched from the network{where}; "
        "unset it to check a remote checkpoint"
    )


def endpoint() -> str:
    """HF_ENDPOINT without a trailing slash (default https://huggingface.co)."""
    value = os.environ.get("HF_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
    origin_of(value)
    return value.rstrip("/")


def settings() -> HttpSettings:
    """Timeouts from the environment; the token (`token()`) bound to the endpoint's origin."""
    return HttpSettings(timeout=env_timeout(), token=token(), token_origin=origin_of(endpoint()))


def hf_home() -> str:
    """$HF_HOME, default $XDG_CACHE_HOME/huggingface (~/.cache/huggingface)."""
    home = os.environ.get("HF_HOME", "").strip()
    if home:
        return os.path.expanduser(home)
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join("~", ".cache")
    return os.path.join(os.path.expanduser(cache), "huggingface")


def cache_dir() -> str:
    """The local model cache: $HF_HUB_CACHE (or the older $HUGGINGFACE_HUB_CACHE), default
    $HF_HOME/hub (read by `io.hubcache`)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(name, "").strip()
        if value:
            return os.path.expanduser(value)
    return os.path.join(hf_home(), "hub")


def token_path() -> str:
    """Where `hf auth login` saves the token: $HF_TOKEN_PATH, default $HF_HOME/token."""
    path = os.environ.get("HF_TOKEN_PATH", "").strip()
    return os.path.expanduser(path) if path else os.path.join(hf_home(), "token")


#: what a bearer token may hold: visible ASCII, no space (anything else would break the
#: header line, or be echoed in an error by the HTTP library).
_TOKEN = re.compile(r"[\x21-\x7e]+")
MAX_TOKEN_FILE = 64 * 1024


def token() -> str | None:
    """The Hugging Face token: $HF_TOKEN, else the file `hf auth login` saved (`token_path`),
    else None. A malformed one is refused before any request, and never shown."""
    raw = os.environ.get("HF_TOKEN")
    where = "HF_TOKEN"
    if raw is None or not raw.strip():
        where = token_path()
        raw = _read_token_file(where)
    value = (raw or "").strip()
    if not value:
        return None
    if _TOKEN.fullmatch(value) is None:
        at = next(i for i, c in enumerate(value) if not "!" <= c <= "~")
        raise RemoteError(
            f"{where}: the Hugging Face token holds a space, control or non-ASCII character "
            f"(character {at + 1} of {len(value)}); it was neither sent nor shown"
        )
    return value


def _read_token_file(path: str) -> str | None:
    """The saved token's text; None when there is no such regular file (a FIFO or a device
    is not waited on, a folder is skipped), it cannot be read or it is too large."""
    from quantcheck.io.source import read_regular

    try:
        data = read_regular(path, MAX_TOKEN_FILE + 1)
    except OSError:
        return None
    return None if len(data) > MAX_TOKEN_FILE else data.decode("utf-8", "replace")


def parse(url: str) -> HubPath:
    """Parse `hf://…`; RemoteError with the expected form when it does not fit."""
    rest = url[len("hf://") :].strip("/")
    repo_type = "models"
    first, _, tail = rest.partition("/")
    if first in REPO_TYPES and tail.count("/") >= 1:
        repo_type, rest = REPO_TYPES[first], tail
    org, _, rest = rest.partition("/")
    repo, sep, rest = rest.partition("/")
    revision: str | None = None
    if "@" in repo:  # hf://org/repo@rev[/path]
        repo, _, revision = repo.partition("@")
        if sep:
            m = re.match(r"^(refs/(?:pr|convert)/[^/]+)(?:/(.*))?$", f"{revision}/{rest}")
            if m:
                revision, rest = m.group(1), m.group(2) or ""
    elif "@" in rest:  # hf://org/repo/path@rev
        rest, _, revision = rest.partition("@")
    if (
        not (_SEGMENT.match(org) and _SEGMENT.match(repo))
        or revision == ""
        or any(p in ("..", ".") for p in rest.split("/"))
    ):
        raise RemoteError(
            f"{redact(url)}: not a hub address; expected hf://ORG/REPO[/PATH][@REVISION]"
        )
    return HubPath(repo_type, f"{org}/{repo}", unescape_path(rest.strip("/")), revision)


def _repo_prefix(hp: HubPath) -> str:
    return "" if hp.repo_type == "models" else f"{hp.repo_type}/"


def resolve_url(hp: HubPath, path: str | None = None) -> str:
    """`{endpoint}/{repo}/resolve/{revision}/{path}` for a file of the repo."""
    p = hp.path if path is None else path
    return (
        f"{endpoint()}/{_repo_prefix(hp)}{hp.repo_id}/resolve/{quote(hp.rev, safe='')}/{quote(p)}"
    )


def tree_url(hp: HubPath) -> str:
    """`{endpoint}/api/{type}/{repo}/tree/{revision}[/{path}]`: one folder, not recursive."""
    base = f"{endpoint()}/api/{hp.repo_type}/{hp.repo_id}/tree/{quote(hp.rev, safe='')}"
    return base + (f"/{quote(hp.path)}" if hp.path else "")


def list_folder(hp: HubPath) -> list[str]:
    """Paths of the checkpoint files (`.safetensors`, `.safetensors.index.json`) directly in
    the folder `hp.path` of the repo (all pages)."""
    return list_files(hp, keep=is_checkpoint_file)


def is_checkpoint_file(path: str) -> bool:
    return path.endswith((".safetensors", ".safetensors.index.json"))


@dataclass(slots=True)
class Listed:
    """What a listing told besides the paths: each kept file's size, and the commit the
    revision resolved to when the hub says so (`X-Repo-Commit`)."""

    sizes: dict[str, int]
    commit: str | None = None


def list_files(
    hp: HubPath,
    *,
    recursive: bool = False,
    keep: Callable[[str], bool] = is_checkpoint_file,
    listed: Listed | None = None,
) -> list[str]:
    """Paths of the files under `hp.path` for which `keep` is true, over every page of the
    tree API (`recursive`: `?recursive=true`; a server that ignores it gives one level);
    `listed` receives their sizes and the revision's commit.

    Each page is read as a stream of entries and filtered as they arrive: only the kept
    paths stay in memory (at most MAX_KEPT of them), never a page's JSON document."""
    refuse_offline(hp.name())
    client = HttpClient(settings())
    url: str | None = tree_url(hp) + ("?recursive=true" if recursive else "")
    files: list[str] = []
    try:
        for _ in range(MAX_PAGES):
            if url is None:
                return files
            link = _listing_page(client, url, hp, keep, files, listed)
            m = _NEXT.search(link or "")
            url = urljoin(url, m.group(1)) if m else None
        raise RemoteError(f"{redact(tree_url(hp))}: listing has more than {MAX_PAGES} pages")
    finally:
        client.close()


#: most paths a listing may keep (checkpoint files of a repository, after `keep`)
MAX_KEPT = 200_000
#: most bytes one entry of a listing may take (a hub entry is a few hundred)
MAX_ENTRY = 1024 * 1024


def _listing_page(
    client: HttpClient,
    url: str,
    hp: HubPath,
    keep: Callable[[str], bool],
    files: list[str],
    listed: Listed | None = None,
) -> str | None:
    """Add the kept paths of one page to `files`; the page's Link header. A body cut short
    is asked for again, as `fetch_bytes` does."""
    policy = client.settings.retry
    attempts = max(1, policy.attempts)
    for attempt in range(1, attempts + 1):
        page: list[str] = []
        try:
            link = _stream_page(client, url, hp, keep, page, MAX_KEPT - len(files), listed)
        except BodyDropped as exc:
            if attempt == attempts:
                raise BodyDropped(f"{exc} (gave up after {attempts} attempts)") from None
            client.stats.retries += 1
            policy.wait(policy.backoff(attempt))
            continue
        files += page
        return link
    raise AssertionError("unreachable")


def _stream_page(
    client: HttpClient,
    url: str,
    hp: HubPath,
    keep: Callable[[str], bool],
    out: list[str],
    room: int,
    listed: Listed | None = None,
) -> str | None:
    resp = client.get(url, {"Accept": "application/json"})
    try:
        if listed is not None and listed.commit is None:
            listed.commit = resp.header("X-Repo-Commit")
        if resp.status != 200:
            raise RemoteError(
                f"{_status_error(resp)}; listing is not available here, so give a file "
                "path (hf://ORG/REPO/FILE.safetensors)"
            )
        entries = _ArrayStream(redact(url), hp)
        got = 0
        while True:
            chunk = resp.read(CHUNK)
            got += len(chunk)
            if got > MAX_JSON:
                raise RemoteError(f"{redact(url)}: listing is over {MAX_JSON // 2**20} MiB")
            for entry in entries.feed(chunk):
                if not (isinstance(entry, dict) and entry.get("type") == "file"):
                    continue
                path = entry.get("path")
                if isinstance(path, str) and keep(path):
                    out.append(path)
                    size = entry.get("size")
                    if listed is not None and type(size) is int:
                        listed.sizes[path] = size
                    if len(out) > room:
                        raise RemoteError(
                            f"{redact(tree_url(hp))}: listing names more than {MAX_KEPT:,} "
                            "checkpoint files; give a folder or file path"
                        )
            if not chunk:
                break
        length = resp.header("Content-Length")
        if length is not None and length.isdigit() and got < int(length):
            raise BodyDropped(
                f"{redact(url)}: short body: got {got:,} of {int(length):,} bytes of the "
                "listing before the connection closed"
            )
        entries.finish()
        return resp.header("Link")
    finally:
        resp.release()


class _ArrayStream:
    """A JSON array read piece by piece: `feed(bytes)` yields each complete element; `feed(b"")`
    ends the body. Memory is one element (at most MAX_ENTRY) plus one piece; the work is linear
    (an incomplete element is tried again only once the text after it has doubled)."""

    def __init__(self, where: str, hp: HubPath) -> None:
        import codecs

        self._where, self._hp = where, hp
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._dec = json.JSONDecoder()
        self._buf = ""
        self._state = "start"  # start, first, sep, elem, end
        self._wait = 0

    def _bad(self, what: str) -> RemoteError:
        if self._state == "start":
            return RemoteError(
                f"{self._where}: the hub's listing is not a JSON array; give a file path "
                f"({self._hp.name('FILE.safetensors')})"
            )
        return RemoteError(f"{self._where}: listing is not valid JSON ({what})")

    def feed(self, data: bytes) -> Iterator[Any]:
        final = not data
        buf = self._buf + self._utf8.decode(data, final)
        pos, n = 0, len(buf)
        while True:
            while pos < n and buf[pos] in " \t\r\n":
                pos += 1
            if pos >= n:
                break
            c, state = buf[pos], self._state
            if state == "end":
                raise self._bad("text after the array")
            if state == "start":
                if c != "[":
                    raise self._bad("not an array")
                self._state, pos = "first", pos + 1
            elif state in ("first", "sep") and c == "]":
                self._state, pos = "end", pos + 1
            elif state == "sep":
                if c != ",":
                    raise self._bad(f"expected , or ] at {c!r}")
                self._state, pos = "elem", pos + 1
            else:
                if not final and n - pos < self._wait:
                    break
                try:
                    value, end = self._dec.raw_decode(buf, pos)
                except ValueError as exc:
                    if final:
                        raise self._bad(str(exc)) from None
                    end = -1
                if end < 0 or (end == n and not final):  # maybe cut: wait for more text
                    if n - pos > MAX_ENTRY:
                        raise self._bad(f"an entry is over {MAX_ENTRY // 1024} KiB")
                    self._wait = 2 * (n - pos)
                    break
                self._wait, self._state, pos = 0, "sep", end
                yield value
        self._buf = buf[pos:]

    def finish(self) -> None:
        list(self.feed(b""))
        if self._state != "end":
            raise self._bad("the array is not closed")


def fetch_bytes(client: HttpClient, url: str, what: str = "file") -> tuple[bytes, str | None]:
    """GET a small document (at most MAX_JSON bytes): (body, Link header). A body cut short
    (fewer bytes than its Content-Length) is asked for again, as a 5xx is."""
    policy = client.settings.retry
    attempts = max(1, policy.attempts)
    for attempt in range(1, attempts + 1):
        try:
            return _fetch_once(client, url, what)
        except BodyDropped as exc:
            if attempt == attempts:
                raise BodyDropped(f"{exc} (gave up after {attempts} attempts)") from None
            client.stats.retries += 1
            policy.wait(policy.backoff(attempt))
    raise AssertionError("unreachable")


def _fetch_once(client: HttpClient, url: str, what: str) -> tuple[bytes, str | None]:
    resp = client.get(url, {"Accept": "application/json"})
    try:
        if resp.status != 200:
            err = _status_error(resp)
            if what == "listing":
                raise RemoteError(
                    f"{err}; listing is not available here, so give a file "
                    "path (hf://ORG/REPO/FILE.safetensors)"
                )
            raise err
        raw = resp.read(MAX_JSON + 1)
        if len(raw) > MAX_JSON:
            raise RemoteError(f"{redact(url)}: {what} is over {MAX_JSON // 2**20} MiB")
        length = resp.header("Content-Length")
        if length is not None and length.isdigit() and len(raw) < int(length):
            raise BodyDropped(
                f"{redact(url)}: short body: got {len(raw):,} of {int(length):,} bytes of the "
                f"{what} before the connection closed"
            )
        return raw, resp.header("Link")
    finally:
        resp.release()
