"""Pieces of the remote reader on their own: spans, Content-Range, multipart, hf:// names."""

from __future__ import annotations

import pytest

from quantcheck.io import hub
from quantcheck.io.http import RemoteError, redact
from quantcheck.io.multipart import parse_content_range, read_byteranges, unsatisfied_total
from quantcheck.io.remote import is_remote
from quantcheck.io.spans import SpanCache, batches, coalesce, range_header


class Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, n: int) -> bytes:
        out, self.data = self.data[:n], self.data[n:]
        return out

    def readline(self, limit: int) -> bytes:
        cut = self.data.find(b"\n", 0, limit)
        cut = min(len(self.data), limit) if cut < 0 else cut + 1
        return self.read(cut)


def test_span_cache() -> None:
    c = SpanCache()
    c.add(10, b"abcdef")
    c.add(20, b"xyz")
    assert c.missing(0, 30) == [(0, 10), (16, 20), (23, 30)]
    assert c.missing(11, 15) == []
    c.add(14, b"EFGHIJ")  # overlaps: held bytes are kept
    assert c.get(10, 23) == b"abcdefGHIJxyz"
    c.forget(20, 23)
    assert c.missing(10, 23) == [(20, 23)]
    with pytest.raises(KeyError):
        c.get(0, 5)


def test_coalesce_batches_and_header() -> None:
    assert coalesce([(50, 60), (0, 10), (12, 20), (100, 110)], 5) == [(0, 20), (50, 60), (100, 110)]
    assert range_header([(0, 10), (50, 60)]) == "bytes=0-9,50-59"
    spans = [(i * 1000, i * 1000 + 10) for i in range(500)]
    groups = batches(spans, 4000)
    assert sum(len(g) for g in groups) == 500 and len(groups) > 1
    assert all(len(range_header(g)) <= 4010 for g in groups)


def test_content_range() -> None:
    assert parse_content_range("bytes 0-99/500") == (0, 100, 500)
    assert parse_content_range("bytes 0-99/*") == (0, 100, None)
    assert parse_content_range("bytes 10-9/500") is None
    assert parse_content_range("bytes 0-500/500") is None
    assert parse_content_range("items 0-1/2") is None
    assert parse_content_range(None) is None
    assert unsatisfied_total("bytes */0") == 0
    assert unsatisfied_total("bytes 0-1/2") is None


def _accept(a: int, b: int, total: int | None) -> None:
    if b > 100:
        raise RemoteError("not asked")


def test_multipart_parts() -> None:
    body = (
        b"\r\n--B\r\nContent-Type: x\r\nContent-Range: bytes 0-3/100\r\n\r\nabcd"
        b"\r\n--B\r\nContent-Range: bytes 10-11/100\r\n\r\nXY\r\n--B--\r\n"
    )
    assert read_byteranges(Body(body), "B", _accept, 6, "u") == [(0, b"abcd"), (10, b"XY")]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"--B\r\nContent-Range: bytes 0-3/100\r\n\r\nab", "short body"),
        (b"--B\r\nContent-Range: bytes 0-3/100\r\n\r\nabcd\r\n", "closing boundary"),
        (b"--X\r\n", "expected the boundary"),
        (b"--B\r\n\r\nabcd", "no valid Content-Range"),
        (b"--B\r\nContent-Range: bytes 0-50/100\r\n\r\n", "more bytes than were asked"),
        (b"--B\r\nContent-Range: bytes 100-101/200\r\n\r\n", "not asked"),
        (b"--B\r\n" + b"X: y\r\n" * 40, "too many header lines"),
    ],
)
def test_multipart_errors(body: bytes, needle: str) -> None:
    with pytest.raises(RemoteError, match=needle):
        read_byteranges(Body(body), "B", _accept, 6, "u")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("hf://org/repo", ("models", "org/repo", "", None)),
        ("hf://org/repo/a/b.safetensors", ("models", "org/repo", "a/b.safetensors", None)),
        ("hf://org/repo/b.safetensors@v1.0", ("models", "org/repo", "b.safetensors", "v1.0")),
        ("hf://org/repo@dev/b.safetensors", ("models", "org/repo", "b.safetensors", "dev")),
        (
            "hf://org/repo@refs/pr/3/x/b.safetensors",
            ("models", "org/repo", "x/b.safetensors", "refs/pr/3"),
        ),
        (
            "hf://org/repo/b.safetensors@refs/pr/3",
            ("models", "org/repo", "b.safetensors", "refs/pr/3"),
        ),
        ("hf://datasets/org/repo/b.safetensors", ("datasets", "org/repo", "b.safetensors", None)),
        ("hf://org/repo@abc", ("models", "org/repo", "", "abc")),
    ],
)
def test_hub_parse(url: str, expected: tuple[str, str, str, str | None]) -> None:
    hp = hub.parse(url)
    assert (hp.repo_type, hp.repo_id, hp.path, hp.revision) == expected


@pytest.mark.parametrize(
    "url",
    ["hf://org", "hf://org/../x", "hf://org/repo/../../etc", "hf://org/repo@", "hf://-x/repo"],
)
def test_hub_parse_rejects(url: str) -> None:
    with pytest.raises(RemoteError, match="not a hub address"):
        hub.parse(url)


def test_hub_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example/")
    hp = hub.parse("hf://org/repo@refs/pr/3/sub dir/m.safetensors")
    assert hub.resolve_url(hp) == (
        "https://hub.example/org/repo/resolve/refs%2Fpr%2F3/sub%20dir/m.safetensors"
    )
    assert hub.tree_url(hub.parse("hf://org/repo/sub")) == (
        "https://hub.example/api/models/org/repo/tree/main/sub"
    )
    assert hub.tree_url(hub.parse("hf://datasets/org/repo")) == (
        "https://hub.example/api/datasets/org/repo/tree/main"
    )
    assert hub.parse("hf://org/repo@dev/m.safetensors").name() == "hf://org/repo@dev/m.safetensors"
    assert hub.parse("hf://org/repo/m.safetensors@dev").name() == "hf://org/repo@dev/m.safetensors"


def test_offline_values(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("1", True), ("true", True), ("YES", True), ("0", False), ("", False)):
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        assert hub.offline() is expected


def test_redact_and_is_remote() -> None:
    assert redact("https://cdn.example/x?X-Amz-Signature=abc") == "https://cdn.example/x?…"
    assert is_remote("hf://a/b") and is_remote("HTTPS://x/y") and not is_remote("a/b")
    assert not is_remote("s3://x/y")


def test_token_goes_only_to_the_endpoint_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    monkeypatch.setenv("HF_TOKEN", "t")
    s = hub.settings()
    assert s.token == "t" and s.token_origin == ("https", "huggingface.co", 443)
