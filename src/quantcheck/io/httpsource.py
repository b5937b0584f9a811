"""A ByteSource over HTTP Range requests: the header first, then exactly the bytes asked for.

The first request asks for the first `FIRST_READ` bytes, which holds the whole header of most
checkpoints; a longer header costs one more, exact request. Marker reads go out as one
multi-range request (`multipart/byteranges`), or one request per span where a server does
not do multi-range. A server that ignores Range is read only as far as needed, then closed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from quantcheck.io.header import MAX_HEADER
from quantcheck.io.http import (
    CHUNK,
    BodyDropped,
    HttpClient,
    HttpSettings,
    RemoteError,
    Response,
    Stats,
    origin_of,
    redact,
    status_error,
)
from quantcheck.io.limits import MAX_BYTES, ByteBudget
from quantcheck.io.multipart import (
    parse_content_range,
    read_byteranges,
    unsatisfied_total,
)
from quantcheck.io.spans import SpanCache, batches, coalesce, range_header
from quantcheck.textsafe import clean, say_warning

#: 512 KiB: the whole header of a checkpoint of up to ~3,700 tensors (~140 header bytes per
#: tensor), which covers most single-file diffusion models (1-3k tensors), in the first request;
#: at 100 Mbit/s the extra bytes cost about one round trip, which is what a second request costs.
FIRST_READ = 512 * 1024
#: spans closer than this are fetched as one (a multipart part costs ~100 bytes of headers).
MERGE_GAP = 512
MAX_RANGE_HEADER = 4000
#: how far into a file a server that ignores Range may be read.
STREAM_LIMIT = 64 * 1024 * 1024
#: reads fetching more than this (whole weights with --deep) are returned, not kept.
KEEP_LIMIT = 4 * 1024 * 1024
Span = tuple[int, int]


def _etag(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"') or None


class HttpSource:
    """Random access to a remote file through Range requests (see the module docstring)."""

    def __init__(
        self,
        url: str,
        name: str | None = None,
        *,
        settings: HttpSettings | None = None,
        first_read: int | None = None,
        stream_limit: int = STREAM_LIMIT,
        max_bytes: int | None = MAX_BYTES,
        budget: ByteBudget | None = None,
    ) -> None:
        origin_of(url)
        self.url = url
        self.name = name or redact(url)
        self.stream_limit = stream_limit
        self.warnings: list[str] = []
        self.revision: str | None = None
        self.etag: str | None = None
        # `budget` is shared with the checkpoint's other shards; else this file has its own
        self._stats = Stats(budget=budget or ByteBudget(max_bytes))
        self._client = HttpClient(settings or HttpSettings(), self._stats)
        self._cache = SpanCache()
        self._fetch_url = url
        self._final_etag: str | None = None
        self._size = 0
        self._ranges = True
        self._multi: bool | None = None
        self._redirected: str | None = None
        #: a whole-file (200) answer kept open, and the offset its body has been read to
        self._body: Response | None = None
        self._body_pos = 0
        try:
            first = max(FIRST_READ if first_read is None else first_read, 16)
            left = self._stats.budget.left()  # type: ignore[union-attr]
            self._again(self._open, first if left is None else max(16, min(first, left)))
        except BaseException:
            self.close()
            raise

    # -- ByteSource ---------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, n: int) -> bytes:
        return self.read_many([(offset, n)])[0]

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        spans = [
            (o, min(o + n, self._size)) if n > 0 and 0 <= o < self._size else (0, 0)
            for o, n in ranges
        ]
        gaps = [g for s, e in spans if e > s for g in self._cache.missing(s, e)]
        if gaps:
            self._fetch(gaps)
        out = [self._cache.get(s, e) if e > s else b"" for s, e in spans]
        if sum(e - s for s, e in gaps) > KEEP_LIMIT:
            for s, e in coalesce(gaps, MERGE_GAP):
                self._cache.forget(s, e)
        return out

    def close(self) -> None:
        self._drop_body()
        self._client.close()

    def _drop_body(self) -> None:
        if self._body is not None:
            body, self._body = self._body, None
            body.release()

    def describe(self) -> dict[str, object]:
        """What reading this file cost and which revision was read (for report `inputs`)."""
        rec: dict[str, object] = {
            "url": redact(self.url),
            "bytes_fetched": self._stats.bytes,
            "requests": self._stats.requests,
            "revision": self.revision,
            "etag": self.etag,
            "warnings": list(self.warnings),
        }
        if self._redirected:
            rec["served_by"] = self._redirected
        return rec

    # -- requests -----------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return redact(self.url)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        say_warning(f"{self.name}: {message}")

    def _get(self, headers: dict[str, str], expect: int) -> Response:
        resp = self._client.get(self._fetch_url, headers, expect)
        if resp.status >= 400 and self._fetch_url != self.url:  # a signed redirect expired
            resp.release()
            self._fetch_url = self.url
            resp = self._client.get(self.url, headers, expect)
        return resp

    def _open(self, first: int) -> None:
        asked = f"bytes=0-{first - 1}"
        resp = self._client.get(self.url, {"Range": asked}, first)
        try:
            self._note(resp, first=True)
            if resp.status in (200, 206) and resp.headers.get_content_type() == "text/html":
                raise RemoteError(
                    f"{self._where}: server sent an HTML page, not the file (a "
                    "login or web page? use the file's download URL)"
                )
            if resp.status == 206:
                a, b, total = self._content_range(resp, asked)
                if a != 0 or b != min(first, total):
                    raise self._wrong_range(a, b, total, asked)
                self._size = total
                self._check_length(resp, b - a)
                self._take(resp, 0, b)
            elif resp.status == 200:
                self._open_unranged(resp, first)
            elif resp.status == 416 and unsatisfied_total(resp.header("Content-Range")) == 0:
                self._size = 0
            else:
                raise status_error(resp, asked)
            if len(resp.hops) > 1:
                self._fetch_url = resp.url
                self._redirected = origin_of(resp.url)[1]
        finally:
            if resp is not self._body:
                resp.release()

    def _open_unranged(self, resp: Response, first: int) -> None:
        length = resp.header("Content-Length")
        if length is None or not length.isdigit():
            raise RemoteError(
                f"{self._where}: server ignored the Range header and did not say "
                "how long the file is (no Content-Length); refusing to download "
                "the whole file"
            )
        self._check_encoding(resp, "a whole-file answer")
        self._ranges = False
        self._size = size = int(length)
        # A later read from such a server starts again at byte 0, so a small file is read
        # whole now: one request, and never more bytes fetched than the file holds.
        got = self._take(resp, 0, size if size <= 2 * first else min(size, first))
        want = len(got)
        if len(got) >= 8:
            (n,) = struct.unpack("<Q", got[:8])
            if n <= MAX_HEADER and len(got) < 8 + n <= size:
                want = 8 + n
                self._take(resp, len(got), want - len(got))
        if want < size:  # later reads go on from here: no second download from byte 0
            self._body, self._body_pos = resp, want
        self._warn(
            f"server ignored the Range header (HTTP 200 with the whole file, "
            f"{size:,} bytes); read the first {want:,} bytes, and more of the same "
            "answer only as far as needed"
        )

    def _budget(self, more: int) -> None:
        """Refuse, before asking, a read that would take this file past its byte cap."""
        budget = self._stats.budget
        if budget is not None and not budget.allows(more):
            mine = self._stats.bytes
            shards = f", {budget.used:,} by the whole checkpoint" if budget.used > mine else ""
            raise RemoteError(
                f"{self._where}: checking it needs more than the {budget.limit:,}-byte "
                f"cap per checkpoint ({mine:,} bytes read from this file"
                f"{shards}, {more:,} more asked); raise --max-bytes to read it"
            )

    def _fetch(self, gaps: list[Span]) -> None:
        spans = coalesce(gaps, MERGE_GAP)
        self._budget(sum(e - s for s, e in spans))
        if not self._ranges:
            self._again(self._stream, spans)
            return
        if len(spans) > 1 and self._multi is not False:
            for batch in batches(spans, MAX_RANGE_HEADER):
                # _multi_request may set _multi: mypy keeps the narrowing from the `if` above
                if self._multi is False:  # type: ignore[comparison-overlap]
                    break
                self._again(self._multi_request, batch)
            spans = [g for s, e in spans for g in self._cache.missing(s, e)]
        for s, e in spans:
            if not self._ranges:
                self._again(self._stream, [(s, e)] + [g for g in spans if g[0] > s])
                return
            if self._cache.missing(s, e):
                self._again(self._single, s, e)

    def _again(self, request: Callable[..., None], *args: Any) -> None:
        """Run one request; when its connection drops mid-body, send it again (what is still
        missing), with the same bounded attempts and backoff as 429/5xx answers."""
        policy = self._client.settings.retry
        attempts = max(1, policy.attempts)
        for attempt in range(1, attempts + 1):
            try:
                request(*args)
                return
            except BodyDropped as exc:
                self._drop_body()
                self._client.close()  # the next attempt opens a fresh connection
                if attempt == attempts:
                    raise BodyDropped(f"{exc} (gave up after {attempts} attempts)") from None
                if request == self._multi_request:  # ask only for the parts still missing
                    rest = [g for s, e in args[0] for g in self._cache.missing(s, e)]
                    if not rest:
                        return
                    request, args = (
                        (self._single, rest[0]) if len(rest) == 1 else (request, (rest,))
                    )
                self._stats.retries += 1
                policy.wait(policy.backoff(attempt))

    def _single(self, s: int, e: int) -> None:
        asked = f"bytes={s}-{e - 1}"
        resp = self._get({"Range": asked}, e - s)
        try:
            self._note(resp)
            if resp.status == 206:
                a, b, total = self._content_range(resp, asked)
                self._same_size(total)
                if (a, b) != (s, e):
                    raise self._wrong_range(a, b, total, asked)
                self._check_length(resp, e - s)
                self._take(resp, s, e - s)
            elif resp.status == 200:
                self._ranges = False
                self._consume(resp, [(s, e)], "ignored the Range header")
            else:
                raise status_error(resp, asked)
        finally:
            resp.release()

    def _multi_request(self, batch: list[Span]) -> None:
        asked = range_header(batch)
        want = sum(e - s for s, e in batch)
        lo, hi = batch[0][0], batch[-1][1]
        resp = self._get({"Range": asked}, want)
        try:
            self._note(resp)
            if resp.status == 206 and resp.headers.get_content_type() == "multipart/byteranges":
                boundary = resp.headers.get_param("boundary")
                if not isinstance(boundary, str) or not boundary:
                    raise RemoteError(f"{self._where}: multipart answer has no boundary")

                def accept(a: int, b: int, total: int | None) -> None:
                    if total is not None:
                        self._same_size(total)
                    if a < lo or b > hi:
                        raise RemoteError(
                            f"{self._where}: server sent bytes {a}-{b - 1}, which "
                            f"were not asked ({asked[:80]})"
                        )

                for start, data in read_byteranges(
                    resp, boundary, accept, want + MERGE_GAP, self._where
                ):
                    self._cache.add(start, data)
                self._multi = True
            elif resp.status == 206:
                a, b, total = self._content_range(resp, resp.header("Content-Range") or "")
                self._same_size(total)
                self._multi = False
                if lo <= a < b <= hi and b - a <= want + MERGE_GAP:
                    self._check_length(resp, b - a)
                    self._take(resp, a, b - a)
            elif resp.status in (200, 416):
                self._multi = False  # no multi-range here: leave the body unread
            else:
                raise status_error(resp, asked[:80])
        finally:
            resp.release()

    def _stream(self, spans: list[Span]) -> None:
        body = self._body
        start = self._body_pos if body is not None and spans[0][0] >= self._body_pos else 0
        self._budget(max(e for _, e in spans) - start)
        if body is not None and spans[0][0] >= self._body_pos:
            end = max(e for _, e in spans)
            try:
                body.rearm(end - self._body_pos)
                self._consume(body, spans, "ignores Range requests", self._body_pos)
            except BaseException:
                self._drop_body()
                raise
            self._body_pos = end
            if end >= self._size:
                self._drop_body()
            return
        self._drop_body()
        resp = self._get({}, max(e for _, e in spans))
        try:
            self._note(resp)
            if resp.status != 200:
                raise status_error(resp)
            self._consume(resp, spans, "ignores Range requests")
        finally:
            resp.release()

    def _consume(self, resp: Response, spans: list[Span], what: str, pos: int = 0) -> None:
        """Read a whole-file (200) answer, whose body is at `pos`, up to the last byte needed,
        keeping only `spans` (a fresh answer is at 0; a kept one where it was left)."""
        self._check_encoding(resp, "a whole-file answer")
        spans = coalesce(spans, 0)
        end = spans[-1][1]
        if end > self.stream_limit:
            raise RemoteError(
                f"{self._where}: server {what}; the bytes needed end at byte "
                f"{end:,}, so reading them means downloading {end:,} of "
                f"{self._size:,} bytes (limit {self.stream_limit:,})"
            )
        fresh = pos == 0
        for s, e in spans:
            while pos < s:
                skip = resp.read(min(CHUNK, s - pos))
                if not skip:
                    raise self._short(pos, s, pos)
                pos += len(skip)
            self._take(resp, s, e - s)
            pos = e
        if fresh:
            self._warn(
                f"server {what} (HTTP 200 with the whole file); read its first "
                f"{end:,} bytes and closed the connection"
            )

    # -- checks -------------------------------------------------------------------------

    def _take(self, resp: Response, start: int, n: int) -> bytes:
        data = resp.read(n)
        if len(data) != n:
            raise self._short(start, start + n, start + len(data))
        self._cache.add(start, data)
        return data

    def _short(self, start: int, end: int, got_to: int) -> RemoteError:
        return BodyDropped(
            f"{self._where}: short body: got {got_to - start:,} of "
            f"{end - start:,} bytes (bytes {start}-{end - 1}) before the "
            "connection closed"
        )

    def _content_range(self, resp: Response, asked: str) -> tuple[int, int, int]:
        raw = resp.header("Content-Range")
        cr = parse_content_range(raw)
        if raw is None:
            raise RemoteError(
                f"{self._where}: 206 answer has no Content-Range header ({asked} was asked)"
            )
        if cr is None or cr[2] is None:
            raise RemoteError(
                f"{self._where}: Content-Range {raw[:80]!r} is malformed or "
                f"gives no total size ({asked} was asked)"
            )
        return cr[0], cr[1], cr[2]

    def _wrong_range(self, a: int, b: int, total: int, asked: str) -> RemoteError:
        return RemoteError(
            f"{self._where}: Content-Range says bytes {a}-{b - 1}/{total} but {asked} was asked"
        )

    def _check_encoding(self, resp: Response, what: str) -> None:
        """Refuse a compressed body: its bytes are not the file's (we ask for identity)."""
        enc = (resp.header("Content-Encoding") or "identity").strip().lower()
        if enc != "identity":
            raise RemoteError(
                f"{self._where}: server sent a {clean(enc[:40])}-encoded body "
                f"for {what}; byte ranges need the raw file"
            )

    def _check_length(self, resp: Response, n: int) -> None:
        self._check_encoding(resp, "a range request")
        length = resp.header("Content-Length")
        if length is not None and length != str(n):
            raise RemoteError(
                f"{self._where}: Content-Length {length[:20]} does not match the "
                f"{n:,} bytes of its Content-Range"
            )

    def _same_size(self, total: int) -> None:
        if total != self._size:
            raise RemoteError(
                f"{self._where}: file changed on the server while it was read "
                f"(size {self._size:,}, now {total:,})"
            )

    def _note(self, resp: Response, first: bool = False) -> None:
        """Remember the revision and ETag of the first answer; later ones must agree."""
        final = _etag(resp.header("ETag"))
        if first:
            self.revision = resp.hop_header("X-Repo-Commit")
            self.etag = _etag(resp.hop_header("X-Linked-Etag")) or final
            self._final_etag = final
        elif final and self._final_etag and final != self._final_etag and resp.status in (200, 206):
            raise RemoteError(
                f"{self._where}: file changed on the server while it was read "
                f"(ETag {self._final_etag} → {final})"
            )
