"""Fixtures for remote tests: a hub-like nginx, a hostile server, a clean environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from quantcheck.io.httpsource import FIRST_READ

from ._files import (
    big_file,
    copy_examples,
    exact_header_file,
    example_files,
    split_example,
    tree_listing,
)
from ._hostile import HostileServer
from ._nginx import Nginx

#: header lengths whose end falls just before, at and just after the first read
BOUNDARY_SIZES = list(range(FIRST_READ - 15, FIRST_READ + 2))


def _repo(root: Path, org_repo: str, rev: str = "main") -> Path:
    folder = root / org_repo / "resolve" / rev
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _api(root: Path, org_repo: str, folder: Path, rev: str = "main") -> None:
    api = root / "api" / "models" / org_repo / "tree"
    api.mkdir(parents=True, exist_ok=True)
    (api / rev).write_text(json.dumps(tree_listing(folder)))


@pytest.fixture(scope="session")
def hub_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out like a hub: `/{org}/{repo}/resolve/{rev}/{file}` plus tree JSON."""
    root = tmp_path_factory.mktemp("hub")
    root.chmod(0o755)
    ex = _repo(root, "acme/examples")
    copy_examples(ex)
    _api(root, "acme/examples", ex)
    sharded = _repo(root, "acme/sharded")
    split_example(example_files()[0], sharded)
    (sharded / "README.md").write_text("# sharded\n")
    (sharded / "docs").mkdir()
    _api(root, "acme/sharded", sharded)
    plain = _repo(root, "acme/plain")
    copy_examples(plain)
    for p in sorted(plain.iterdir())[1:]:
        p.unlink()
    (plain / "config.json").write_text("{}")
    _api(root, "acme/plain", plain)
    empty = _repo(root, "acme/empty")
    (empty / "README.md").write_text("nothing here\n")
    _api(root, "acme/empty", empty)
    copy_examples(root / "cdn-store" / "main")
    boundary = _repo(root, "acme/boundary")
    for n in BOUNDARY_SIZES:
        (boundary / f"h{n}.safetensors").write_bytes(exact_header_file(n))
    _repo(root, "acme/big").joinpath("big.safetensors").write_bytes(big_file(8))
    return root


@pytest.fixture(scope="session")
def nginx_hub(hub_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    server = Nginx(tmp_path_factory.mktemp("nginx"), hub_root)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def hub(nginx_hub: Nginx, monkeypatch: pytest.MonkeyPatch) -> Nginx:
    """The nginx hub as HF_ENDPOINT."""
    monkeypatch.setenv("HF_ENDPOINT", nginx_hub.endpoint)
    return nginx_hub


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real hub, no token, short timeouts."""
    for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("QUANTCHECK_HTTP_TIMEOUT", "2")
