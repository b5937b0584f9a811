"""A small HTTP/1.1 GET client for range reads (standard library only).

Follows redirects itself so that the Range header is sent again on every hop and a token is
sent only to its own origin. Every request has an idle timeout (per socket operation) and an
overall deadline enforced by a watchdog that shuts the socket down, so no server can hang it.
Bodies are read in bounded chunks; nothing is allocated from a size a server declares.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from email.message import Message
from typing import NoReturn
from urllib.parse import quote, urljoin, urlsplit

from quantcheck._version import __version__
from quantcheck.io.limits import ByteBudget
from quantcheck.io.netenv import Origin, Proxy, ca_bundle, proxy_for
from quantcheck.io.retry import RETRY_STATUSES, RetryPolicy
from quantcheck.io.source import SourceError
from quantcheck.textsafe import redact_url

DEFAULT_TIMEOUT = 20.0
MAX_REDIRECTS = 10
#: bytes per second a transfer must at least average before the deadline stops it.
MIN_RATE = 256 * 1024
CHUNK = 64 * 1024
USER_AGENT = f"quantcheck/{__version__} (Python http.client)"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: a credential as an HTTP library may quote it in an error (`b'Bearer hf_...'`)
_BEARER = re.compile(r"(?i)bearer(?:\s|\\[nrt]|%20)+[^\s'\"]*")


class RemoteError(SourceError):
    """A remote file could not be read; the message says what the server did wrong."""


class TransientError(RemoteError):
    """The connection was reset or closed before an answer: worth one more try later."""


class BodyDropped(TransientError):
    """The connection closed in the middle of a body: the request is worth sending again."""


def env_timeout() -> float:
    """Seconds to wait for any byte: `QUANTCHECK_HTTP_TIMEOUT`, default 20."""
    raw = os.environ.get("QUANTCHECK_HTTP_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 86400:
        raise RemoteError(f"QUANTCHECK_HTTP_TIMEOUT={raw!r} is not a number of seconds")
    return value


def origin_of(url: str) -> Origin:
    """(scheme, host, port) of an http(s) URL, with the default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise RemoteError(f"{redact(url)}: only http:// and https:// URLs can be read")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise RemoteError(f"{redact(url)}: bad port ({exc})") from None
    return scheme, parts.hostname.lower(), port


def safe_url(url: str) -> str:
    """`url` with characters that cannot go on a request line percent-encoded."""
    return quote(url, safe="/%:@&=+$,;~!*'()?#[]")


def redact(url: str) -> str:
    """A URL for messages and reports: no credentials, query or fragment (`redact_url`)."""
    return redact_url(url)


@dataclass(slots=True)
class HttpSettings:
    """How to talk to servers: timeouts and the one origin a bearer token may go to."""

    timeout: float = DEFAULT_TIMEOUT
    token: str | None = None
    token_origin: Origin | None = None
    max_redirects: int = MAX_REDIRECTS
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass(slots=True)
class Stats:
    """What one source cost: body bytes read and requests sent (redirect hops included)."""

    bytes: int = 0
    requests: int = 0
    retries: int = 0
    #: most body bytes this source may read (None: no cap); a server cannot push it past.
    limit: int | None = None
    #: a byte budget shared with the other shards of the checkpoint (replaces `limit`).
    budget: ByteBudget | None = None

    def over(self, n: int) -> bool:
        """Count `n` more body bytes; True once past the limit or the shared budget."""
        self.bytes += n
        if self.budget is not None:
            return not self.budget.spend(n)
        return self.limit is not None and self.bytes > self.limit

    @property
    def cap(self) -> int | None:
        return self.budget.limit if self.budget is not None else self.limit


@dataclass(slots=True)
class Hop:
    """One answered request of a redirect chain."""

    url: str
    status: int
    headers: Message


class _Watchdog:
    """Shuts a socket down when a request runs past its deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self.fired and sock is not None:
                _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._sock is not None:
                _shutdown(self._sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class Response:
    """A final (non-redirect) answer; read its body with `read`/`readline`, then `release`."""

    def __init__(
        self,
        client: HttpClient,
        conn: http.client.HTTPConnection,
        resp: http.client.HTTPResponse,
        hops: list[Hop],
        dog: _Watchdog,
    ) -> None:
        self._client = client
        self._conn = conn
        self._resp = resp
        self._dog = dog
        self._buf = b""
        self.hops = hops
        self.url = hops[-1].url
        self.status = resp.status
        self.reason = resp.reason or ""
        self.headers: Message = resp.headers
        #: how many times the request was sent (more than 1 after 429/5xx/resets)
        self.attempts = 1

    def header(self, name: str) -> str | None:
        """A header of the final answer."""
        value = self.headers.get(name)
        return None if value is None else str(value).strip()

    def hop_header(self, name: str) -> str | None:
        """A header from the first hop that sent it (the hub's headers ride on its 302)."""
        for hop in self.hops:
            value = hop.headers.get(name)
            if value is not None:
                return str(value).strip()
        return None

    def _chunk(self, n: int) -> bytes:
        try:
            data = self._resp.read1(min(n, CHUNK))
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self._client.fail(self.url, exc, self._dog)
        stats = self._client.stats
        if stats.over(len(data)):
            self._dog.cancel()
            raise RemoteError(
                f"{redact(self.url)}: checking it needs more than the "
                f"{stats.cap:,}-byte cap per checkpoint; raise --max-bytes "
                "to read it"
            )
        if not data and self._dog.fired:
            self._client.fail(self.url, TimeoutError(), self._dog)
        return data

    def read(self, n: int) -> bytes:
        """Up to `n` body bytes; fewer only when the body ends."""
        out = bytearray(self._buf[:n])
        self._buf = self._buf[n:]
        while len(out) < n:
            data = self._chunk(n - len(out))
            if not data:
                break
            out += data
        return bytes(out)

    def readline(self, limit: int) -> bytes:
        """One line including its newline, at most `limit` bytes."""
        while b"\n" not in self._buf and len(self._buf) < limit:
            data = self._chunk(limit - len(self._buf))
            if not data:
                break
            self._buf += data
        cut = self._buf.find(b"\n", 0, limit)
        cut = min(len(self._buf), limit) if cut < 0 else cut + 1
        line, self._buf = self._buf[:cut], self._buf[cut:]
        return line

    def rearm(self, expect_bytes: int) -> None:
        """A fresh deadline for reading `expect_bytes` more of a body kept open for later."""
        self._dog.cancel()
        self._dog = _Watchdog(3 * self._client.settings.timeout + expect_bytes / MIN_RATE)
        self._dog.watch(self._conn.sock)

    def release(self, drain: int = 4096) -> None:
        """Finish with this answer; keep the connection only if the body was read to its end."""
        self._dog.cancel()
        resp = self._resp
        if not resp.isclosed() and drain > 0 and not self._buf:
            try:
                left = resp.length
                if left is not None and left <= drain:
                    self._chunk(left)
                    while not resp.isclosed() and self._chunk(drain):
                        pass
            except RemoteError:
                pass
        if not resp.isclosed() or self._buf:
            self._client.drop(self._conn)
        resp.close()


class HttpClient:
    """GET with redirects, per-origin keep-alive connections, timeouts and a token rule."""

    def __init__(self, settings: HttpSettings, stats: Stats | None = None) -> None:
        self.settings = settings
        self.stats = stats if stats is not None else Stats()
        self._conns: dict[Origin, http.client.HTTPConnection] = {}
        #: origins reached through a plain-HTTP proxy: their requests name the whole URL
        self._forwarded: dict[Origin, Proxy] = {}

    def get(
        self, url: str, headers: dict[str, str] | None = None, expect_bytes: int = 0
    ) -> Response:
        """Send GET, following redirects; the answer's status is never a redirect.

        429 and 5xx answers and reset connections are tried again (`HttpSettings.retry`);
        the last answer is returned as it is, with `attempts` set, for the caller to judge.
        """
        policy = self.settings.retry
        attempts = max(1, policy.attempts)
        for attempt in range(1, attempts + 1):
            try:
                resp = self._get_once(url, headers, expect_bytes)
            except TransientError as exc:
                if attempt == attempts:
                    raise TransientError(f"{exc} (gave up after {attempts} attempts)") from None
                wait = policy.backoff(attempt)
            else:
                resp.attempts = attempt
                if resp.status not in RETRY_STATUSES or attempt == attempts:
                    return resp
                asked = policy.retry_after(resp.header("Retry-After"))
                status = resp.status
                resp.release()
                if asked is not None and asked > policy.max_wait:
                    raise RemoteError(
                        f"{redact(url)}: server answered {status} and asks to wait "
                        f"{_secs(asked)} s (Retry-After), more than the {_secs(policy.max_wait)}"
                        " s quantcheck waits; try again later"
                    )
                wait = policy.backoff(attempt) if asked is None else asked
            self.stats.retries += 1
            policy.wait(wait)
        raise AssertionError("unreachable")

    def _get_once(self, url: str, headers: dict[str, str] | None, expect_bytes: int) -> Response:
        deadline = 3 * self.settings.timeout + expect_bytes / MIN_RATE
        dog = _Watchdog(deadline)
        hops: list[Hop] = []
        seen: set[str] = set()
        try:
            while True:
                conn, resp = self._send(url, headers or {}, dog)
                hops.append(Hop(url, resp.status, resp.headers))
                if resp.status not in REDIRECTS:
                    return Response(self, conn, resp, hops, dog)
                location = resp.headers.get("Location")
                self._discard(conn, resp)
                if not location:
                    raise RemoteError(f"{redact(url)}: {resp.status} redirect without a Location")
                if len(hops) > self.settings.max_redirects:
                    raise RemoteError(
                        f"{redact(hops[0].url)}: redirect loop after "
                        f"{self.settings.max_redirects} hops (last Location: "
                        f"{redact(location)})"
                    )
                seen.add(url)
                url = urljoin(url, location.strip())
                if url in seen:
                    raise RemoteError(
                        f"{redact(hops[0].url)}: redirect loop after {len(hops)} "
                        f"hop{'s' if len(hops) > 1 else ''} ({redact(url)} "
                        "redirects back to itself)"
                    )
        except BaseException:
            dog.cancel()
            raise

    def _send(
        self, url: str, headers: dict[str, str], dog: _Watchdog
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        org = origin_of(url)
        parts = urlsplit(url)
        target = safe_url((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
        send = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **headers}
        if self.settings.token and org == self.settings.token_origin:
            send["Authorization"] = f"Bearer {self.settings.token}"
        for attempt in (0, 1):
            reused = org in self._conns
            conn = self._conn(org)
            line = target
            via = self._forwarded.get(org)
            if via is not None:  # a plain-HTTP proxy is asked for the absolute URL
                line = f"{org[0]}://{org[1]}:{org[2]}{target}"
                if via.auth:
                    send["Proxy-Authorization"] = via.auth
            try:
                if dog.fired:
                    raise TimeoutError
                self.stats.requests += 1
                conn.request("GET", line, headers=send)
                dog.watch(conn.sock)
                resp = conn.getresponse()
                if dog.fired:  # headers cut short by the watchdog
                    raise TimeoutError
                return conn, resp
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
                self.drop(conn)
                if dog.fired:
                    self.fail(url, exc, dog)
                if not (reused and attempt == 0):  # a stale keep-alive is re-opened at once
                    dog.cancel()
                    detail = str(exc) or type(exc).__name__
                    raise TransientError(
                        f"{redact(url)}: connection closed before an answer ({detail})"
                    ) from None
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self.drop(conn)
                self.fail(url, exc, dog)
        raise AssertionError("unreachable")

    def _conn(self, org: Origin) -> http.client.HTTPConnection:
        conn = self._conns.get(org)
        if conn is None:
            scheme, host, port = org
            timeout = self.settings.timeout
            proxy = proxy_for(org)
            at = (proxy.host, proxy.port) if proxy else (host, port)
            if scheme == "https":
                context = ssl.create_default_context(cafile=ca_bundle())
                conn = http.client.HTTPSConnection(*at, timeout=timeout, context=context)
                if proxy:  # CONNECT host:port, then TLS with the origin through the tunnel
                    extra = {"Proxy-Authorization": proxy.auth} if proxy.auth else None
                    conn.set_tunnel(host, port, headers=extra)
            else:
                conn = http.client.HTTPConnection(*at, timeout=timeout)
                if proxy:
                    self._forwarded[org] = proxy
            self._conns[org] = conn
        return conn

    def _discard(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        """Skip a redirect's small body, or drop the connection if it is not small."""
        try:
            if resp.length is not None and resp.length <= CHUNK:
                while resp.read1(CHUNK):
                    pass
        except (OSError, http.client.HTTPException, ValueError):
            pass
        if not resp.isclosed():
            self.drop(conn)
        resp.close()

    def drop(self, conn: http.client.HTTPConnection) -> None:
        """Close a connection and forget it."""
        for key, value in list(self._conns.items()):
            if value is conn:
                del self._conns[key]
        try:
            conn.close()
        except OSError:
            pass

    def fail(self, url: str, exc: BaseException, dog: _Watchdog) -> NoReturn:
        """Raise a RemoteError that says what went wrong, in words (never the token nor the
        URL's password or query: a library's message may quote the header or URL it
        refused)."""
        try:
            self._fail(url, exc, dog)
        except RemoteError as err:
            parts = urlsplit(url)
            text = str(err)
            for secret in (self.settings.token, parts.password, parts.query, parts.fragment):
                if secret and len(secret) > 2 and secret in text:  # a library quoting the URL
                    text = text.replace(secret, "***")
            text = _BEARER.sub("Bearer ***", text)
            raise type(err)(text) from None

    def _fail(self, url: str, exc: BaseException, dog: _Watchdog) -> NoReturn:
        dog.cancel()
        where = redact(url)
        if dog.fired:
            raise RemoteError(
                f"timed out after {_secs(dog.seconds)} s: {where} did not finish answering"
            ) from None
        if isinstance(exc, TimeoutError | socket.timeout):
            raise RemoteError(
                f"timed out after {_secs(self.settings.timeout)} s waiting for {where}"
            ) from None
        if isinstance(exc, ConnectionRefusedError):
            raise RemoteError(f"{where}: connection refused") from None
        if isinstance(exc, socket.gaierror):
            raise RemoteError(f"{where}: cannot resolve host ({exc.strerror})") from None
        if isinstance(exc, ssl.SSLCertVerificationError):
            raise RemoteError(
                f"{where}: TLS error ({exc.reason or exc}: {exc.verify_message}); behind a "
                "proxy or a private CA, set REQUESTS_CA_BUNDLE or SSL_CERT_FILE to its "
                "CA certificates"
            ) from None
        if isinstance(exc, ssl.SSLError):
            raise RemoteError(f"{where}: TLS error ({exc.reason or exc})") from None
        if isinstance(exc, http.client.IncompleteRead):
            raise BodyDropped(f"{where}: connection closed mid-body") from None
        if isinstance(exc, ConnectionResetError | BrokenPipeError):
            raise BodyDropped(f"{where}: connection reset mid-body ({exc})") from None
        if isinstance(exc, http.client.HTTPException | ConnectionError):
            detail = str(exc) or type(exc).__name__
            raise RemoteError(f"{where}: broken HTTP answer ({detail})") from None
        raise RemoteError(f"{where}: {type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        for conn in list(self._conns.values()):
            self.drop(conn)


def _secs(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def status_error(resp: Response, asked: str = "") -> RemoteError:
    """A RemoteError for an unexpected status, with the hub's usual causes spelled out."""
    where = redact(resp.hops[0].url)
    code = resp.status
    reason = resp.reason
    hint = {
        401: "authentication needed: the repository is private or gated; set HF_TOKEN",
        403: "access denied: the repository is gated or the token lacks access",
        404: "not found: no such repository, revision or file",
        410: "gone",
        416: f"server answered 416 Range Not Satisfiable to {asked}"
        if asked
        else "Range Not Satisfiable",
        429: "rate limited by the server; try again later",
    }.get(code, f"server answered {code} {reason}".strip())
    tries = f", {resp.attempts} attempts" if resp.attempts > 1 else ""
    return RemoteError(
        f"{where}: {hint} (HTTP {code}{tries})" if code != 416 else f"{where}: {hint}"
    )
