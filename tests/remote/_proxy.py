"""A forwarding HTTP proxy on 127.0.0.1 (CONNECT tunnels and absolute-URL requests), which
records what it was asked; for the HTTPS_PROXY / HTTP_PROXY tests."""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from urllib.parse import urlsplit


class ProxyServer:
    """`requests`: (request line, Proxy-Authorization or None) of each connection's first
    request. Bytes are piped both ways as they are; every wait is bounded."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            timeout = 10

            def handle(self) -> None:
                head = b""
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    data = self.connection.recv(4096)
                    if not data:
                        return
                    head += data
                text = head.split(b"\r\n\r\n", 1)[0].decode("latin-1")
                line, *fields = text.split("\r\n")
                auth = next(
                    (f.split(":", 1)[1].strip() for f in fields
                     if f.lower().startswith("proxy-authorization:")),
                    None,
                )  # fmt: skip
                outer.requests.append((line, auth))
                method, target, _ = line.split(" ", 2)
                if method == "CONNECT":
                    host, _, port = target.rpartition(":")
                    upstream = socket.create_connection((host, int(port)), timeout=10)
                    self.connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:
                    parts = urlsplit(target)
                    upstream = socket.create_connection(
                        (parts.hostname, parts.port or 80), timeout=10
                    )
                    upstream.sendall(head)  # servers take the absolute form too
                _pipe(self.connection, upstream)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ProxyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        for _ in range(100_000):
            ready, _, _ = select.select([a, b], [], [], 10)
            if not ready:
                return
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)
    except OSError:
        return
    finally:
        b.close()
