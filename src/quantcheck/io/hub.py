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
from dataclasses import dataclass
from urllib.parse import quote, urljoin

from quantcheck.io.http import (
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
    is not waited on, a folder is skipped) or it cannot be read."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_TOKEN_FILE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE:
        return None
    return data.decode("utf-8", "replace")


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
    """Paths of the files directly in the folder `hp.path` of the repo (all pages)."""
    client = HttpClient(settings())
    url: str | None = tree_url(hp)
    files: list[str] = []
    try:
        for _ in range(MAX_PAGES):
            if url is None:
                return files
            doc, link = fetch_json(client, url, what="listing")
            if not isinstance(doc, list):
                raise RemoteError(
                    f"{redact(url)}: the hub's listing is not a JSON array; give "
                    f"a file path ({hp.name('FILE.safetensors')})"
                )
            for entry in doc:
                if (
                    isinstance(entry, dict)
                    and entry.get("type") == "file"
                    and isinstance(entry.get("path"), str)
                ):
                    files.append(entry["path"])
            m = _NEXT.search(link or "")
            url = urljoin(url, m.group(1)) if m else None
        raise RemoteError(f"{redact(tree_url(hp))}: listing has more than {MAX_PAGES} pages")
    finally:
        client.close()


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


def fetch_json(client: HttpClient, url: str, what: str = "file") -> tuple[object, str | None]:
    """GET a JSON document of at most MAX_JSON bytes: (document, Link header)."""
    raw, link = fetch_bytes(client, url, what)
    try:
        return json.loads(raw), link
    except (ValueError, RecursionError) as exc:
        raise RemoteError(f"{redact(url)}: {what} is not valid JSON ({exc})") from None
