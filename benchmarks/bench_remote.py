"""Remote at scale (issue 15 item 3): many checkpoints from a server 50 ms away.

    PYTHONPATH=src python benchmarks/bench_remote.py [--count 200] [--latency 0.05]

Builds `--count` small single-file checkpoints in memory (16 fp8 layers each, about 10 KB) and
serves them from a threaded HTTP/1.1 server on 127.0.0.1 (loopback only) that supports single
and multi-range requests and sleeps `--latency` seconds before every answer. Each checkpoint
is then checked on its own (`check_paths([url])`, the per-checkpoint library call), mapped with
`map_bounded` at `--jobs 1` and at the default jobs. A second set of checkpoints with 1,200
tensors (a ~170 KB header, like a real diffusion model) shows what the first-range size buys.
Reports checkpoints per second and requests per checkpoint (counted by the server). Not a test:
nothing asserts on time.
"""

from __future__ import annotations

import argparse
import http.server
import os
import re
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from quantcheck.checking import check_paths
from quantcheck.io import httpsource
from quantcheck.io.batch import default_jobs, map_bounded
from quantcheck.io.build import RawTensor, build_safetensors, marker_tensor

_RANGE = re.compile(r"(\d+)-(\d*)")


def checkpoint(i: int, layers: int) -> bytes:
    """`layers` fp8 layers (marker, weight, scale); `i` varies names and bytes."""
    tensors: list[RawTensor] = []
    for j in range(layers):
        p = f"model.diffusion_model.transformer_blocks.{j}.attn.to_q{i % 7}"
        tensors += [
            marker_tensor(p, {"format": "float8_e4m3fn"}),
            RawTensor(f"{p}.weight", "F8_E4M3", (16, 32), bytes([i % 251]) * 512),
            RawTensor(f"{p}.weight_scale", "F32", (), b"\x00\x00\x80\x3f"),
        ]
    return build_safetensors(tensors, {"bench": str(i)})


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, files: dict[str, bytes], latency: float) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.files = files
        self.latency = latency
        self.requests = 0
        self.lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.requests += 1
        time.sleep(self.server.latency)
        data = self.server.files.get(self.path.lstrip("/"))
        if data is None:
            self._send(404, {}, b"")
            return
        size = len(data)
        value = self.headers.get("Range", "")
        ranges = (
            [(int(a), min(int(b) + 1 if b else size, size)) for a, b in _RANGE.findall(value[6:])]
            if value.startswith("bytes=")
            else []
        )
        if not ranges:
            self._send(200, {}, data)
        elif ranges[0][0] >= size:
            self._send(416, {"Content-Range": f"bytes */{size}"}, b"")
        elif len(ranges) == 1:
            a, b = ranges[0]
            self._send(206, {"Content-Range": f"bytes {a}-{b - 1}/{size}"}, data[a:b])
        else:
            body = (
                b"".join(
                    f"\r\n--B\r\nContent-Range: bytes {a}-{b - 1}/{size}\r\n\r\n".encode()
                    + data[a:b]
                    for a, b in ranges
                )
                + b"\r\n--B--\r\n"
            )
            self._send(206, {"Content-Type": "multipart/byteranges; boundary=B"}, body)

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for k, v in {"Accept-Ranges": "bytes", **headers, "Content-Length": str(len(body))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


def run(server: Server, urls: list[str], jobs: int) -> tuple[float, float, float]:
    """(checkpoints per second, server requests per checkpoint, client-counted ones)."""
    before = server.requests
    client = 0
    start = time.perf_counter()
    for url, result in map_bounded(lambda u: check_paths([u]), urls, jobs):
        if isinstance(result, Exception):
            raise SystemExit(f"{url}: {result}")
        client += sum(int(r["requests"]) for r in result.inputs)  # type: ignore[call-overload]
    elapsed = time.perf_counter() - start
    n = len(urls)
    return n / elapsed, (server.requests - before) / n, client / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    os.environ["QUANTCHECK_QUIET"] = "1"
    count = max(1, min(args.count, 5000))
    small = {f"small/{i}.safetensors": checkpoint(i, 16) for i in range(count)}
    large_n = min(count, 40)
    large = {f"large/{i}.safetensors": checkpoint(i, 400) for i in range(large_n)}
    server = Server({**small, **large}, args.latency)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    sizes = sorted(len(d) for d in small.values())
    hdr = int.from_bytes(next(iter(large.values()))[:8], "little") + 8
    print(
        f"CPU: {os.cpu_count()} logical CPUs; latency {args.latency * 1000:.0f} ms per "
        f"request; default jobs = {default_jobs()}"
    )
    print(
        f"{count} small checkpoints ({sizes[0]:,}-{sizes[-1]:,} bytes, 48 tensors); "
        f"{large_n} with 1,200 tensors ({hdr:,}-byte header)\n"
    )
    print("| set | first range | jobs | checkpoints/s | requests/checkpoint |")
    print("|---|---|---|---|---|")
    try:
        for label, names in (("small", list(small)), ("1,200 tensors", list(large))):
            urls = [base + n for n in names]
            firsts = (
                [httpsource.FIRST_READ] if label == "small" else [100_000, httpsource.FIRST_READ]
            )
            for first in firsts:
                httpsource.FIRST_READ = first
                for jobs in (1, default_jobs()):
                    cps, per, client = run(server, urls, jobs)
                    assert abs(per - client) < 1e-9, (per, client)
                    print(f"| {label} | {first:,} | {jobs} | {cps:.1f} | {per:.2f} |")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


if __name__ == "__main__":
    main()
