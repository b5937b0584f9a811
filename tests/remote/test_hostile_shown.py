"""What is shown and what leaks, remotely (issue 21 B, R, U, T): a location is shown only
through `redact_url`, a token never appears in any output, names from a listing are data."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.cli.main import main

from ._nginx import Nginx

SECRETS = ("hunter2", "SIGNEDSECRET", "Policy=", "X-Amz")


def _no_secret(text: str) -> None:
    for s in SECRETS:
        assert s not in text, (s, text[:2000])


def test_report_of_remote_checkpoints_shows_no_credentials(
    hub: Nginx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """index.html, page file names and pages carry no `user:password@` and no signed query."""
    host = hub.endpoint.replace("http://", "http://joe:hunter2@")
    urls = [
        f"{host}/acme/examples/resolve/main/{name}?X-Amz-Signature=SIGNEDSECRET&Policy=p"
        for name in ("fp8_e4m3fn.safetensors", "nvfp4.safetensors")
    ]
    out = tmp_path / "rep"
    assert main(["report", *urls, "-o", str(out)]) == 0
    outerr = capsys.readouterr()
    _no_secret(outerr.out + outerr.err)
    files = sorted(out.iterdir())
    assert len(files) == 3, files
    for f in files:
        _no_secret(f.name)
        _no_secret(f.read_text())
    index = (out / "index.html").read_text()
    assert "joe:" not in index and "***@" in index and "fp8_e4m3fn.safetensors?…" in index
    assert any(f.name.endswith("fp8_e4m3fn.safetensors.html") for f in files)


def test_check_of_signed_urls_shows_no_credentials(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    host = hub.endpoint.replace("http://", "http://joe:hunter2@")
    urls = [
        f"{host}/acme/examples/resolve/main/{n}?X-Amz-Signature=SIGNEDSECRET"
        for n in ("fp8_e4m3fn.safetensors", "nvfp4.safetensors", "missing.safetensors")
    ]
    for fmt in ("text", "json", "sarif", "github"):
        capsys.readouterr()
        main(["check", "--output-format", fmt, *urls])
        outerr = capsys.readouterr()
        _no_secret(outerr.out + outerr.err)
