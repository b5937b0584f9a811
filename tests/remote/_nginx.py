"""An nginx process on 127.0.0.1 serving a folder laid out like a hub repository."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CDN_COMMIT = "feedfacefeedfacefeedfacefeedfacefeedface"
LINKED_ETAG = "sha256-linked-etag"

CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format qc '$host|$request_uri|$http_range|$http_authorization|$status|$body_bytes_sent';
    access_log {d}/access.log qc;
    client_body_temp_path {d}/t_body;
    proxy_temp_path {d}/t_proxy;
    fastcgi_temp_path {d}/t_fcgi;
    uwsgi_temp_path {d}/t_uwsgi;
    scgi_temp_path {d}/t_scgi;
    default_type application/octet-stream;
    types {{ application/json json; }}
    keepalive_timeout 5;
    server {{
        listen 127.0.0.1:{port};
        server_name _;
        root {root};
        add_header X-Repo-Commit {commit};
        location /api/ {{ default_type application/json; }}
        location ~ ^/acme/cdn/resolve/(.*)$ {{
            add_header X-Repo-Commit {cdn_commit} always;
            add_header X-Linked-Etag '"{linked}"' always;
            return 302 http://localhost:{port}/cdn-store/$1;
        }}
        location ~ ^/acme/hop/resolve/(.*)$ {{
            return 302 /acme/examples/resolve/$1;
        }}
    }}
}}
"""


def nginx_binary() -> str:
    """The nginx program; skip (locally) or fail (CI) when it is missing."""
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )
    if found is None:
        reason = "system program 'nginx' is not installed (Debian package `nginx`)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Nginx:
    """A running nginx; `endpoint` is its base URL, `root` the folder it serves."""

    def __init__(self, workdir: Path, root: Path) -> None:
        self.dir = workdir
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = nginx_binary()
        for _ in range(3):
            self.port = free_port()
            conf = self.dir / "nginx.conf"
            conf.write_text(
                CONF.format(
                    d=self.dir,
                    port=self.port,
                    root=self.root,
                    commit=COMMIT,
                    cdn_commit=CDN_COMMIT,
                    linked=LINKED_ETAG,
                )
            )
            self.proc = subprocess.Popen(
                [binary, "-e", str(self.dir / "error.log"), "-c", str(conf), "-p", str(self.dir)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            if self._wait_ready():
                return
            self.stop()
        log = (self.dir / "error.log").read_text(errors="replace")[-2000:]
        pytest.fail(f"nginx did not start:\n{log}")

    def _wait_ready(self) -> bool:
        assert self.proc is not None
        for _ in range(100):
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def log(self) -> list[list[str]]:
        """Access log rows: host, uri, range, authorization, status, body bytes."""
        path = self.dir / "access.log"
        if not path.exists():
            return []
        return [line.split("|") for line in path.read_text().splitlines()]

    def clear_log(self) -> None:
        (self.dir / "access.log").write_text("")
