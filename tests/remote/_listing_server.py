"""A hub-like tree API on 127.0.0.1 that streams a listing of any size (made as it is sent),
and serves one example checkpoint; for memory tests of listing pages, and (`tls=True`, with
tests/data/tls) for CA-bundle tests."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

from ._files import EXAMPLES

TLS = Path(__file__).resolve().parents[1] / "data" / "tls"
#: one junk entry: a file no check wants (`.bin`), about 110 bytes
JUNK = '{{"type":"file","oid":"{oid}","size":1,"path":"junk/d{i:08d}/f.bin"}}'


def _entries(n: int) -> Iterator[bytes]:
    model = EXAMPLES / "fp8_e4m3fn.safetensors"
    yield b"["
    yield json.dumps({"type": "file", "oid": "0" * 40, "size": model.stat().st_size,
                      "path": "fp8_e4m3fn.safetensors"}).encode()  # fmt: skip
    batch = []
    for i in range(n):
        batch.append("," + JUNK.format(oid="0" * 40, i=i))
        if len(batch) == 4096:
            yield "".join(batch).encode()
            batch.clear()
    yield ("".join(batch) + "]").encode()


class ListingServer:
    """`/api/models/acme/huge/tree/main…` answers a listing of `entries` junk files plus
    one checkpoint, chunked; `/acme/huge/resolve/main/fp8_e4m3fn.safetensors` serves it."""

    def __init__(self, entries: int, tls: bool = False) -> None:
        self.entries = entries
        self.tls = tls
        model = (EXAMPLES / "fp8_e4m3fn.safetensors").read_bytes()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.startswith("/api/models/acme/huge/tree/main"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in _entries(outer.entries):
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if self.path.endswith("/fp8_e4m3fn.safetensors"):
                    start, end = 0, len(model)
                    rng = self.headers.get("Range", "")
                    if rng.startswith("bytes="):
                        a, _, b = rng[6:].split(",")[0].partition("-")
                        start, end = int(a), min(len(model), int(b) + 1 if b else len(model))
                    self.send_response(206 if rng else 200)
                    if rng:
                        self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(model)}")
                    self.send_header("Content-Length", str(end - start))
                    self.end_headers()
                    self.wfile.write(model[start:end])
                    return
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls:  # the test certificate: CN and subjectAltName 127.0.0.1, valid until 2126
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ListingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def listing_bytes(entries: int) -> int:
    return sum(len(p) for p in _entries(entries))


def peak_rss_of(argv: list[str], env: dict[str, str]) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in bytes) of `quantcheck ARGV` run in a child process."""
    import subprocess
    import sys

    code = (
        "import resource, sys\n"
        "from quantcheck.cli.main import main\n"
        "rc = main(sys.argv[1:])\n"
        "sys.stdout.flush()\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent
        "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
        "peak = hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print('PEAK', peak, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        env={**env, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    peak = [int(x.split()[1]) for x in proc.stderr.splitlines() if x.startswith("PEAK ")]
    assert peak, proc.stderr
    return proc.returncode, proc.stderr, peak[0] * 1024
