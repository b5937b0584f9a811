"""Hostile and broken servers: a clear error and exit 2, never a hang, traceback or big read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from quantcheck.io.httpsource import FIRST_READ, HttpSource

from ._files import EXAMPLES, big_file, example_files
from ._hostile import HostileServer
from ._run import run_cli, without_inputs

EXAMPLE = max(example_files(), key=lambda p: p.stat().st_size)  # markers past byte 100,000


def check(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, object, str]:
    code, doc, err = run_cli(capsys, "check", "--format", "json", url)
    assert "Traceback" not in err
    return code, doc, err


def fails(capsys: pytest.CaptureFixture[str], url: str, *needles: str) -> str:
    start = time.monotonic()
    code, _, err = check(capsys, url)
    assert code == 2, err
    assert err.startswith("quantcheck: error: "), err
    for needle in needles:
        assert needle in err, err
    assert time.monotonic() - start < 5
    return err


@pytest.fixture
def served(hostile: HostileServer) -> HostileServer:
    hostile.set_data(EXAMPLE.read_bytes())
    return hostile


def test_ok_server_equals_local(
    served: HostileServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import quantcheck.io.httpsource as hs

    monkeypatch.setattr(hs, "FIRST_READ", 100_000)  # markers past the first read: 2 requests
    _, local, _ = check(capsys, str(EXAMPLE))
    _, remote, err = check(capsys, served.url("ok", EXAMPLE.name))
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)
    assert remote["inputs"][0]["requests"] == 2


@pytest.mark.parametrize("mode", ["whole", "first"])
def test_no_multi_range_falls_back_to_single_ranges(
    served: HostileServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    import quantcheck.io.httpsource as hs

    monkeypatch.setattr(hs, "FIRST_READ", 4096)
    _, local, _ = check(capsys, str(EXAMPLE))
    _, remote, err = check(capsys, served.url(mode, EXAMPLE.name))
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)
    rec = remote["inputs"][0]
    assert rec["bytes_fetched"] < 16 * 1024
    assert rec["warnings"] == []


def test_server_ignoring_range_is_read_only_as_far_as_needed(
    hostile: HostileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = big_file(32)
    hostile.set_data(data)
    local_path = tmp_path / "big.safetensors"
    local_path.write_bytes(data)
    _, local, _ = check(capsys, str(local_path))
    _code, remote, err = check(capsys, hostile.url("norange", "big.safetensors"))
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)
    rec = remote["inputs"][0]
    assert "server ignored the Range header" in err
    assert any("ignored the Range header" in w for w in rec["warnings"])
    assert (rec["requests"], rec["bytes_fetched"]) == (1, FIRST_READ)  # markers are in there
    deadline = time.monotonic() + 5
    while len(hostile.served.sent) < rec["requests"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hostile.served.sent and max(hostile.served.sent) < len(data) // 2


def test_server_ignoring_range_example_result(
    served: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _, local, _ = check(capsys, str(EXAMPLE))
    _, remote, err = check(capsys, served.url("norange", EXAMPLE.name))
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)


def test_stream_limit(served: HostileServer) -> None:
    with pytest.raises(OSError, match="ignores Range requests; the bytes needed end"):
        src = HttpSource(served.url("norange"), stream_limit=150_000, first_read=100_000)
        try:
            src.read(EXAMPLE.stat().st_size - 10, 10)
        finally:
            src.close()


@pytest.mark.parametrize(
    ("mode", "needles"),
    [
        ("badrange", ["Content-Range says bytes 0-99/500 but bytes=0-99999 was asked"]),
        ("nocr", ["206 answer has no Content-Range header"]),
        ("short", ["short body: got 50,000 of 100,000 bytes", "gave up after 4 attempts"]),
        ("biglength", ["Content-Length 1000000000000 does not match"]),
        ("status416", ["416 Range Not Satisfiable to bytes=0-99999"]),
        ("status404", ["HTTP 404", "not found"]),
        ("loop", ["redirect loop after 1 hop", "redirects back to itself"]),
        ("chain", ["redirect loop after 10 hops"]),
        ("norange-nolength", ["did not say how long the file is"]),
        ("gzip", ["gzip-encoded body"]),
        ("unasked", ["server sent bytes 0-9, which were not asked"]),
        ("etag", ["file changed on the server while it was read (ETag v1 → v2)"]),
    ],
)
def test_broken_server(
    served: HostileServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    needles: list[str],
) -> None:
    import quantcheck.io.httpsource as hs
    import quantcheck.io.retry as retry

    monkeypatch.setattr(hs, "FIRST_READ", 100_000)  # the needles name the first read's size
    monkeypatch.setattr(retry, "pause", lambda _: None)  # "short" is retried: never wait
    fails(capsys, served.url(mode, EXAMPLE.name), *needles)


@pytest.mark.parametrize(
    ("mode", "needle"),
    [
        ("silent", "timed out after 0.5 s waiting for http://127.0.0.1:"),
        ("trickle", "did not finish answering"),
        ("slowbody", "did not finish answering"),
    ],
)
def test_slow_server_times_out(
    served: HostileServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    needle: str,
) -> None:
    monkeypatch.setenv("QUANTCHECK_HTTP_TIMEOUT", "0.5")
    fails(capsys, served.url(mode, EXAMPLE.name), needle)


def test_bad_timeout_setting(
    served: HostileServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("QUANTCHECK_HTTP_TIMEOUT", "soon")
    fails(capsys, served.url("ok"), "QUANTCHECK_HTTP_TIMEOUT='soon'")


def test_connection_refused(capsys: pytest.CaptureFixture[str]) -> None:
    fails(capsys, "http://127.0.0.1:9/x.safetensors", "connection refused")


def test_empty_file_is_a_finding_not_an_error(
    hostile: HostileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile.set_data(b"")
    (tmp_path / "empty.safetensors").write_bytes(b"")
    _, local, _ = check(capsys, str(tmp_path / "empty.safetensors"))
    _, remote, err = check(capsys, hostile.url("ok", "empty.safetensors"))
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)


def test_token_only_to_endpoint_host(
    served: HostileServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{served.port}")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    _, remote, err = check(capsys, served.url("hub", EXAMPLE.name))
    assert isinstance(remote, dict), err
    reqs = served.served.requests
    hub = [r for r in reqs if r.mode == "hub"]
    cdn = [r for r in reqs if r.mode == "cdn"]
    assert hub and cdn
    assert all(r.headers.get("authorization") == "Bearer hf_secret" for r in hub)
    assert all("authorization" not in r.headers for r in cdn)
    assert all(r.headers["host"].startswith("localhost:") for r in cdn)
    assert all(r.headers.get("range", "").startswith("bytes=") for r in hub + cdn)
    rec = remote["inputs"][0]
    assert rec["revision"] == "c0ffee" * 6 + "c0ff"
    assert rec["etag"] == "cdn-etag"


def test_no_token_to_other_hosts(
    served: HostileServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    _, remote, err = check(capsys, served.url("ok", EXAMPLE.name))
    assert isinstance(remote, dict), err
    assert all("authorization" not in r.headers for r in served.served.requests)


def test_offline_refuses_plain_urls(
    served: HostileServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fails(capsys, served.url("ok"), "HF_HUB_OFFLINE is set")
    assert served.served.requests == []


def test_http_folder_cannot_be_listed(
    served: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fails(capsys, f"http://127.0.0.1:{served.port}/ok/", "cannot be listed")


def test_random_reads_match_the_file(served: HostileServer) -> None:
    data = EXAMPLE.read_bytes()
    for mode in ("ok", "whole", "first", "norange"):
        src = HttpSource(served.url(mode), first_read=1000)
        try:
            ranges = [(i * 7919 % len(data), (i * 31) % 900) for i in range(40)]
            ranges += [(len(data) - 5, 50), (len(data) + 3, 4), (0, 0)]
            got = src.read_many(ranges)
            assert got == [data[o : o + n] if n > 0 else b"" for o, n in ranges], mode
            assert src.size == len(data)
        finally:
            src.close()


def test_examples_dir_is_present() -> None:
    assert EXAMPLES.is_dir()


def test_html_page_is_refused(hostile: HostileServer, capsys: pytest.CaptureFixture[str]) -> None:
    hostile.set_data(b"<html>" + b"x" * 2000)
    fails(capsys, hostile.url("html"), "server sent an HTML page")
