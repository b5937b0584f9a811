"""A small misbehaving HTTP server on 127.0.0.1: one mode per hostile case.

The mode is the first path segment: `/{mode}/{anything}`. Every wait is bounded by a stop
event and a few seconds, so a test can never hang on it.
"""

from __future__ import annotations

import re
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field

MAX_WAIT = 8.0
_RANGE = re.compile(r"(\d+)-(\d*)")


@dataclass
class Request:
    mode: str
    path: str
    headers: dict[str, str]


@dataclass
class Served:
    """What the server did: requests seen and body bytes it managed to send per request."""

    requests: list[Request] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def parse_ranges(value: str | None, size: int) -> list[tuple[int, int]] | None:
    """`bytes=a-b,c-d` as (start, end exclusive) pairs clamped to `size`."""
    if not value or not value.startswith("bytes="):
        return None
    out = []
    for m in _RANGE.finditer(value[6:]):
        a = int(m.group(1))
        b = int(m.group(2)) + 1 if m.group(2) else size
        out.append((a, min(b, size)))
    return out


class _Handler(socketserver.StreamRequestHandler):
    server: _Server
    timeout = MAX_WAIT

    def handle(self) -> None:
        for _ in range(200):
            req = self._read_request()
            if req is None:
                return
            with self.server.served.lock:
                self.server.served.requests.append(req)
            keep = getattr(self, f"mode_{req.mode.replace('-', '_')}", self.mode_ok)(req)
            if not keep:
                return

    def _read_request(self) -> Request | None:
        try:
            line = self.rfile.readline(8192).decode("latin-1").strip()
            if not line:
                return None
            _, path, _ = line.split(" ", 2)
            headers: dict[str, str] = {}
            for _ in range(100):
                h = self.rfile.readline(8192).decode("latin-1").strip()
                if not h:
                    break
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
        except (OSError, ValueError):
            return None
        mode = path.strip("/").split("/", 1)[0]
        return Request(mode, path, headers)

    # -- helpers --------------------------------------------------------------------------

    @property
    def data(self) -> bytes:
        return self.server.data

    def send(
        self,
        status: str,
        headers: dict[str, str],
        body: bytes = b"",
        chunk: int = 16384,
        cut: bool = False,
    ) -> bool:
        """Send an answer; `cut` sends only the first half of the body (headers unchanged),
        and the caller then closes the connection."""
        head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        if cut:
            body = body[: len(body) // 2]
        sent = 0
        try:
            self.wfile.write((head + "\r\n").encode("latin-1"))
            for i in range(0, len(body), chunk):
                self.wfile.write(body[i : i + chunk])
                sent += len(body[i : i + chunk])
            self.wfile.flush()
            ok = True
        except OSError:
            ok = False
        with self.server.served.lock:
            self.server.served.sent.append(sent)
        return ok

    def ranged(
        self,
        req: Request,
        extra: dict[str, str] | None = None,
        multi: str = "multipart",
        cut: bool = False,
    ) -> bool:
        """A correct Range answer (multi-range per `multi`: multipart, whole, first)."""
        size = len(self.data)
        ranges = parse_ranges(req.headers.get("range"), size)
        base = {"Accept-Ranges": "bytes", **(extra or {})}
        if not ranges:
            return self.send("200 OK", {**base, "Content-Length": str(size)}, self.data)
        if ranges[0][0] >= size:
            return self.send(
                "416 Range Not Satisfiable",
                {**base, "Content-Range": f"bytes */{size}", "Content-Length": "0"},
            )
        if len(ranges) > 1 and multi == "whole":
            return self.send("200 OK", {**base, "Content-Length": str(size)}, self.data)
        if len(ranges) == 1 or multi == "first":
            a, b = ranges[0]
            return self.send(
                "206 Partial Content",
                {
                    **base,
                    "Content-Range": f"bytes {a}-{b - 1}/{size}",
                    "Content-Length": str(b - a),
                },
                self.data[a:b],
                cut=cut,
            )
        body = b""
        for a, b in ranges:
            body += (
                f"\r\n--XYZ\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Range: bytes {a}-{b - 1}/{size}\r\n\r\n"
            ).encode() + self.data[a:b]
        body += b"\r\n--XYZ--\r\n"
        return self.send(
            "206 Partial Content",
            {
                **base,
                "Content-Type": "multipart/byteranges; boundary=XYZ",
                "Content-Length": str(len(body)),
            },
            body,
            cut=cut,
        )

    def wait(self) -> None:
        self.server.stop_event.wait(MAX_WAIT)

    # -- modes ----------------------------------------------------------------------------

    def mode_ok(self, req: Request) -> bool:
        return self.ranged(req)

    def mode_whole(self, req: Request) -> bool:
        """Single ranges fine; a multi-range request gets the whole file (like S3)."""
        return self.ranged(req, multi="whole")

    def mode_first(self, req: Request) -> bool:
        """Single ranges fine; a multi-range request gets only its first range."""
        return self.ranged(req, multi="first")

    def mode_norange(self, req: Request) -> bool:
        self.send("200 OK", {"Content-Length": str(len(self.data))}, self.data, chunk=4096)
        return False

    def mode_norange_nolength(self, req: Request) -> bool:
        self.send("200 OK", {"Connection": "close"}, self.data[:1000])
        return False

    def mode_badrange(self, req: Request) -> bool:
        return self.send(
            "206 Partial Content",
            {"Content-Range": "bytes 0-99/500", "Content-Length": "100"},
            self.data[:100],
        )

    def mode_nocr(self, req: Request) -> bool:
        return self.send("206 Partial Content", {"Content-Length": "100"}, self.data[:100])

    def mode_short(self, req: Request) -> bool:
        size = len(self.data)
        a, b = (parse_ranges(req.headers.get("range"), size) or [(0, size)])[0]
        self.send(
            "206 Partial Content",
            {"Content-Range": f"bytes {a}-{b - 1}/{size}", "Content-Length": str(b - a)},
            self.data[a : a + (b - a) // 2],
        )
        return False

    def mode_biglength(self, req: Request) -> bool:
        size = len(self.data)
        a, b = (parse_ranges(req.headers.get("range"), size) or [(0, size)])[0]
        self.send(
            "206 Partial Content",
            {"Content-Range": f"bytes {a}-{b - 1}/{size}", "Content-Length": str(10**12)},
            self.data[a:],
        )
        return False

    def mode_status416(self, req: Request) -> bool:
        return self.send("416 Range Not Satisfiable", {"Content-Length": "0"})

    def mode_status404(self, req: Request) -> bool:
        return self.send("404 Not Found", {"Content-Length": "9"}, b"not found")

    def mode_loop(self, req: Request) -> bool:
        return self.send("302 Found", {"Location": req.path, "Content-Length": "0"})

    def mode_chain(self, req: Request) -> bool:
        n = int(req.path.rstrip("/").rsplit("/", 1)[-1] or 0) if req.path[-1].isdigit() else 0
        return self.send("302 Found", {"Location": f"/chain/{n + 1}", "Content-Length": "0"})

    def mode_silent(self, req: Request) -> bool:
        self.wait()
        return False

    def mode_trickle(self, req: Request) -> bool:
        """Status line, then one header byte every 0.1 s: no socket timeout ever fires."""
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            self.wfile.flush()
            end = time.monotonic() + MAX_WAIT
            while time.monotonic() < end and not self.server.stop_event.is_set():
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass
        return False

    def mode_slowbody(self, req: Request) -> bool:
        size = len(self.data)
        a, b = (parse_ranges(req.headers.get("range"), size) or [(0, size)])[0]
        try:
            self.wfile.write(
                (
                    f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b - 1}"
                    f"/{size}\r\nContent-Length: {b - a}\r\n\r\n"
                ).encode()
            )
            end = time.monotonic() + MAX_WAIT
            for i in range(a, b):
                if time.monotonic() > end or self.server.stop_event.is_set():
                    break
                self.wfile.write(self.data[i : i + 1])
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass
        return False

    def mode_etag(self, req: Request) -> bool:
        self.server.counter += 1
        return self.ranged(req, {"ETag": f'"v{self.server.counter}"'})

    def mode_gzip(self, req: Request) -> bool:
        return self.ranged(req, {"Content-Encoding": "gzip"})

    def mode_norange_gzip(self, req: Request) -> bool:
        """Ignores Range and answers 200 with the whole file gzip-compressed."""
        import gzip

        body = gzip.compress(self.data)
        self.send("200 OK", {"Content-Length": str(len(body)), "Content-Encoding": "gzip"}, body)
        return False

    def mode_secretlog(self, req: Request) -> bool:
        """Ignores Range (a warning names the URL); 404 for paths ending in `missing`."""
        if req.path.split("?", 1)[0].endswith("missing"):
            return self.send("404 Not Found", {"Content-Length": "0"})
        return self.mode_norange(req)

    def mode_html(self, req: Request) -> bool:
        return self.ranged(req, {"Content-Type": "text/html; charset=utf-8"})

    def mode_unasked(self, req: Request) -> bool:
        """Multi-range answered with a part nobody asked for."""
        size = len(self.data)
        ranges = parse_ranges(req.headers.get("range"), size) or []
        if len(ranges) < 2:
            return self.ranged(req)
        body = (f"--XYZ\r\nContent-Range: bytes 0-9/{size}\r\n\r\n").encode() + self.data[:10]
        body += b"\r\n--XYZ--\r\n"
        return self.send(
            "206 Partial Content",
            {
                "Content-Type": "multipart/byteranges; boundary=XYZ",
                "Content-Length": str(len(body)),
            },
            body,
        )

    def mode_hub(self, req: Request) -> bool:
        """`/hub/…` redirects to `localhost` (another host name) like the hub to its CDN."""
        port = self.server.server_address[1]
        return self.send(
            "302 Found",
            {
                "Location": f"http://localhost:{port}/cdn{req.path}",
                "X-Repo-Commit": "c0ffee" * 6 + "c0ff",
                "Content-Length": "0",
            },
        )

    def mode_cdn(self, req: Request) -> bool:
        return self.ranged(req, {"ETag": '"cdn-etag"'})

    def mode_script(self, req: Request) -> bool:
        """The next canned answer of `set_script` (a status and headers, "reset": close
        without answering, or "drop": close halfway through the body), then correct Range
        answers once the script is used up."""
        with self.server.served.lock:
            step = self.server.script.pop(0) if self.server.script else None
        if step is None:
            return self.ranged(req)
        if step == "reset":
            return False
        if step == "drop":  # a correct answer whose connection closes halfway through the body
            if "range" in req.headers:
                self.ranged(req, cut=True)
                return False
            size = len(self.data)
            self.send("200 OK", {"Content-Length": str(size)}, self.data[: size // 2])
            return False
        status, headers = step
        return self.send(status, {"Content-Length": "4", **headers}, b"nope")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.data = b""
        self.served = Served()
        self.stop_event = threading.Event()
        self.counter = 0
        self.script: list[object] = []


class HostileServer:
    """Start/stop wrapper; `url(mode)` is a file URL served in that mode."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def served(self) -> Served:
        return self._server.served

    def set_data(self, data: bytes) -> None:
        self._server.data = data

    def set_script(self, steps: list[object]) -> None:
        """Canned answers for `/script/…` requests, in order: ("503 Busy", {headers}),
        "reset" (close without answering) or "drop" (close halfway through the body)."""
        self._server.script = list(steps)

    def url(self, mode: str, name: str = "model.safetensors", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/{mode}/{name}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.stop_event.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def connect_ok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
