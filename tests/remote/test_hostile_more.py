"""More hostile servers and URLs (issue 12, items 13 and 14): secrets in URLs never reach an
output, encoded whole-file answers are refused, and a server ignoring Range is read once."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.textsafe import redact_url

from ._files import example_files
from ._hostile import HostileServer
from ._run import run_cli

EXAMPLE = max(example_files(), key=lambda p: p.stat().st_size)  # markers past byte 100,000
SMALL = min(example_files(), key=lambda p: p.stat().st_size)
SECRETS = ("hunter2", "SECRETTOKEN", "FRAGSECRET", "alice")


@pytest.fixture
def served(hostile: HostileServer) -> HostileServer:
    hostile.set_data(EXAMPLE.read_bytes())
    return hostile


def secret_url(server: HostileServer, mode: str, name: str = EXAMPLE.name) -> str:
    plain = server.url(mode, name)
    return plain.replace("http://", "http://alice:hunter2@") + "?token=SECRETTOKEN#FRAGSECRET"


def no_secret(*texts: str) -> None:
    for text in texts:
        for s in SECRETS:
            assert s not in text, f"{s!r} leaked: {text[:2000]}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "http://u:p@h:8/a/b.safetensors?X-Amz-Signature=s&k=v#t",
            "http://***@h:8/a/b.safetensors?…#…",
        ),
        ("https://tok@h/x", "https://***@h/x"),
        ("https://h/x.safetensors", "https://h/x.safetensors"),
        ("http://a@b:c@h/x", "http://***@h/x"),
        ("hf://org/repo/file.safetensors", "hf://org/repo/file.safetensors"),
        ("/local/p?a@b", "/local/p?a@b"),
        ("http://[::1/x?y", "http://[::1/x?…"),  # unparsable for urlsplit: still redacted
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_credentials_never_printed(
    served: HostileServer, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """A server ignoring Range prints a warning naming the URL: credentials, token redacted."""
    code, doc, err = run_cli(capsys, "check", "--format", fmt, secret_url(served, "secretlog"))
    assert code == 0, err
    assert "ignored the Range header" in err
    no_secret(str(doc), err)
    assert "***@127.0.0.1" in err
    sent = served.served.requests[0]
    assert sent.path.endswith("?token=SECRETTOKEN")  # the real URL is still what is fetched


def test_credentials_never_in_errors(
    served: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "check", secret_url(served, "secretlog", "missing"))
    assert code == 2 and err.startswith("quantcheck: error: ")
    no_secret(err)
    code, _, err = run_cli(capsys, "check", secret_url(served, "secretlog", "dir/"))
    assert code == 2
    no_secret(err)


def test_credentials_never_in_inspect_or_report(
    served: HostileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = secret_url(served, "ok")
    for fmt in ("text", "json"):
        code, doc, err = run_cli(capsys, "inspect", "--format", fmt, url)
        assert code == 0, err
        no_secret(str(doc), err)
    out = tmp_path / "r.html"
    assert main(["report", url, "-o", str(out)]) == 0
    no_secret(out.read_text(), *capsys.readouterr())


def test_gzip_whole_file_answer_is_refused(
    served: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """200 + Content-Encoding: gzip is not the file: exit 2 like the 206 path, no QC102."""
    code, doc, err = run_cli(
        capsys, "check", "--format", "json", served.url("norange-gzip", EXAMPLE.name)
    )
    assert code == 2, doc
    assert "gzip-encoded body" in err and err.count("\n") == 1


@pytest.fixture
def plain_server(tmp_path: Path) -> Iterator[str]:
    """`python -m http.server`: ignores Range, answers 200 with the whole file."""
    for p in (EXAMPLE, SMALL):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("path", [SMALL, EXAMPLE], ids=["small", "markers-past-100k"])
def test_server_ignoring_range_is_read_once(
    plain_server: str, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    size = path.stat().st_size
    code, doc, err = run_cli(capsys, "check", "--format", "json", f"{plain_server}/{path.name}")
    assert code in (0, 1), err
    rec = doc["inputs"][0]
    assert rec["requests"] == 1
    assert rec["bytes_fetched"] <= size
    code, out, _ = run_cli(capsys, "check", "--no-color", f"{plain_server}/{path.name}")
    line = next(x for x in out.splitlines() if x.startswith("fetched "))
    assert line.startswith(f"fetched {rec['bytes_fetched']:,} of {size:,} bytes in 1 request ")
