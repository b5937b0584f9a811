"""The huggingface_hub conventions users already have (issue 22 item 13): the local cache
(`$HF_HUB_CACHE`), HF_HUB_OFFLINE, proxies and CA bundles."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from ._files import EXAMPLES, split_example
from ._run import run_cli

COMMIT = "c0ffee" + "0" * 34


def _blob(cache_repo: Path, snap: Path, rel: str, data: bytes) -> None:
    """`snapshots/COMMIT/rel` as huggingface_hub writes it: a relative link into blobs/."""
    blobs = cache_repo / "blobs"
    blobs.mkdir(exist_ok=True)
    digest = hashlib.sha256(data).hexdigest()
    (blobs / digest).write_bytes(data)
    link = snap / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blobs / digest, link.parent))


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$HF_HUB_CACHE with models--acme--cached at COMMIT: one file and a sharded checkpoint."""
    cache = tmp_path / "hub"
    repo = cache / "models--acme--cached"
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    _blob(repo, snap, "fp8.safetensors", (EXAMPLES / "fp8_e4m3fn.safetensors").read_bytes())
    staging = tmp_path / "staging"
    staging.mkdir()
    split_example(EXAMPLES / "nvfp4.safetensors", staging)
    for p in sorted(staging.iterdir()):
        _blob(repo, snap, f"sh/{p.name}", p.read_bytes())
    shutil.rmtree(staging)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return snap


def test_a_complete_cached_repo_is_checked_without_a_request(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HF_ENDPOINT points at a closed port: any request would fail the check. The index's
    shards are links into blobs/, as `hf download` leaves them."""
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", "hf://acme/cached")
    assert rc == 0, err
    names = [c["name"] for c in doc["checkpoints"]]
    assert names == [
        "hf://acme/cached/fp8.safetensors",
        "hf://acme/cached/sh/model.safetensors.index.json",
    ]
    assert all(c["kind"] == "checked" and not c["error"] for c in doc["checkpoints"])
    assert len(doc["checkpoints"][1]["inputs"]) == 2
    assert err.count("read from the local Hugging Face cache") == 1, err
    assert f"snapshot {COMMIT[:12]}" in err and "no request sent" in err
    assert "127.0.0.1:9" not in err + str(doc)
    inputs = doc["checkpoints"][0]["inputs"]
    assert inputs[0]["hub_cache"] == {
        "name": f"hf://acme/cached@{COMMIT}/fp8.safetensors",
        "revision": COMMIT,
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "hf://acme/cached/fp8.safetensors"],
        ["check", "hf://acme/cached/sh/model.safetensors.index.json"],
        ["inspect", "hf://acme/cached/fp8.safetensors"],
        ["fix", "--dry-run", "hf://acme/cached/fp8.safetensors"],
        ["dequantize", "hf://acme/cached/fp8.safetensors", "-o", "{tmp}/d.safetensors"],
        ["compare", "hf://acme/cached/fp8.safetensors", "hf://acme/cached/fp8.safetensors"],
        ["check", f"hf://acme/cached@{COMMIT}/fp8.safetensors"],
    ],
)
def test_every_command_reads_a_cached_file(
    hf_cache: Path, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _out, err = run_cli(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert rc in (0, 1), err
    assert "read from the local Hugging Face cache" in err and "127.0.0.1:9" not in err


def test_an_incomplete_snapshot_goes_to_the_hub_unless_offline(
    hf_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = hf_cache / "sh" / "model-00002-of-00002.safetensors"
    shard.unlink()  # the download of one shard never finished
    rc, _doc, err = run_cli(capsys, "check", "hf://acme/cached")
    assert rc == 2 and "127.0.0.1:9" in err and "local Hugging Face cache" not in err, err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _doc, err = run_cli(capsys, "check", "hf://acme/cached")
    assert "read from the local Hugging Face cache" in err and "incomplete" in err, err
    assert "model-00002-of-00002.safetensors" in err and "127.0.0.1:9" not in err
    assert rc in (1, 2)


def test_offline_and_not_cached_says_where_it_looked(
    hf_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _doc, err = run_cli(capsys, "check", "hf://acme/other/x.safetensors")
    assert rc == 2
    assert "HF_HUB_OFFLINE is set" in err and "not in the Hugging Face cache" in err, err
    assert str(hf_cache.parents[2]) in err


def test_hf_home_is_the_default_cache(
    hf_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(hf_cache.parents[3]))
    rc, _doc, err = run_cli(capsys, "check", "hf://acme/cached/fp8.safetensors")
    assert rc == 0 and "local Hugging Face cache" in err, err


# --- proxies and CA bundles ------------------------------------------------------------------

FILE = "hf://acme/huge/fp8_e4m3fn.safetensors"


def test_http_proxy_is_used_with_its_credentials(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ._listing_server import ListingServer
    from ._proxy import ProxyServer

    with ListingServer(1) as server, ProxyServer() as proxy:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://u%40x:p%3A@"))
        rc, _doc, err = run_cli(capsys, "check", FILE)
        assert rc == 0, err
        assert proxy.requests, "the proxy was not asked"
        line, auth = proxy.requests[0]
        assert line.startswith(f"GET {server.endpoint}/acme/huge/resolve/main/"), line
        assert auth == "Basic dUB4OnA6"  # base64 of "u@x:p:"
        proxy.requests.clear()
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        rc, _doc, err = run_cli(capsys, "check", FILE)
        assert rc == 0 and proxy.requests == [], (err, proxy.requests)


@pytest.mark.parametrize("ca_env", ["REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE"])
def test_https_through_a_proxy_trusts_the_ca_bundle(
    ca_env: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ._listing_server import TLS, ListingServer
    from ._proxy import ProxyServer

    with ListingServer(1, tls=True) as server, ProxyServer() as proxy:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        rc, _doc, err = run_cli(capsys, "check", FILE)
        assert rc == 2 and "CERTIFICATE_VERIFY_FAILED" in err, err  # not trusted by default
        assert "set REQUESTS_CA_BUNDLE or SSL_CERT_FILE" in err
        monkeypatch.setenv(ca_env, str(TLS / "cert.pem"))
        proxy.requests.clear()
        rc, _doc, err = run_cli(capsys, "check", FILE)
        assert rc == 0, err
        port = server.endpoint.rsplit(":", 1)[1]
        assert proxy.requests and proxy.requests[0][0].startswith(f"CONNECT 127.0.0.1:{port} ")


def test_a_missing_ca_bundle_and_an_unsupported_proxy_are_clear_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ._listing_server import ListingServer

    with ListingServer(1, tls=True) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/ca.pem")
        rc, _doc, err = run_cli(capsys, "check", FILE)
        assert rc == 2 and "REQUESTS_CA_BUNDLE=/nonexistent/ca.pem: no such CA bundle" in err
        monkeypatch.delenv("REQUESTS_CA_BUNDLE")
        monkeypatch.setenv("HTTPS_PROXY", "socks5://u:secretpw@127.0.0.1:1080")
        rc, _doc, err = run_cli(capsys, "check", FILE)
        assert rc == 2 and "only http://HOST[:PORT] proxies" in err and "secretpw" not in err


def test_the_environment_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    """Every variable the remote code reads is in README and in `check --help`."""
    import re

    from quantcheck.cli.main import main

    src = Path(__file__).resolve().parents[2] / "src" / "quantcheck" / "io"
    read = set()
    for path in src.glob("*.py"):
        read |= set(re.findall(r'"((?:HF|HUGGING|QUANTCHECK_HTTP|REQUESTS|CURL|SSL)_[A-Z_]+)"',
                               path.read_text()))  # fmt: skip
    read -= {"HUGGINGFACE_HUB_CACHE"}  # the old name of HF_HUB_CACHE, not advertised
    assert {"HF_TOKEN", "HF_TOKEN_PATH", "HF_HOME", "HF_HUB_CACHE", "SSL_CERT_FILE"} <= read
    readme = (src.parents[2] / "README.md").read_text()
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    helptext = capsys.readouterr().out
    for name in sorted(read | {"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"}):
        assert f"`{name}" in readme, name
        assert name in helptext, name


def test_offline_lists_no_repository(
    hf_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository not in the cache is not listed from the hub when offline."""
    from ._proxy import ProxyServer

    with ProxyServer() as proxy:  # would see any request
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        rc, _doc, err = run_cli(capsys, "check", "hf://acme/other")
        assert rc == 2 and "HF_HUB_OFFLINE is set" in err, err
        assert proxy.requests == []
