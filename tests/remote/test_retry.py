"""Retries: 429/5xx and resets are tried again with backoff, Retry-After is honoured up to a
cap, other 4xx never are. No test really waits: every pause is recorded instead."""

from __future__ import annotations

from email.utils import formatdate

import pytest

import quantcheck.io.retry as retry
from quantcheck.io.http import HttpClient, HttpSettings, RemoteError
from quantcheck.io.httpsource import HttpSource
from quantcheck.io.retry import RetryPolicy

from ._files import example_files
from ._hostile import HostileServer
from ._run import run_cli

EXAMPLE = example_files()[0]
NOW = 1_700_000_000.0


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every pause between attempts, recorded instead of slept."""
    out: list[float] = []
    monkeypatch.setattr(retry, "pause", out.append)
    return out


@pytest.fixture
def served(hostile: HostileServer) -> HostileServer:
    hostile.set_data(EXAMPLE.read_bytes())
    return hostile


def open_source(server: HostileServer, **policy: object) -> HttpSource:
    settings = HttpSettings(
        timeout=2, retry=RetryPolicy(clock=lambda: NOW, rand=lambda: 1.0, **policy)
    )
    return HttpSource(server.url("script", EXAMPLE.name), settings=settings)


def test_429_with_retry_after_seconds_waits_that_long(
    served: HostileServer, waits: list[float]
) -> None:
    served.set_script([("429 Too Many Requests", {"Retry-After": "7"})])
    src = open_source(served)
    assert src.size == EXAMPLE.stat().st_size
    assert waits == [7.0]
    assert src.describe()["requests"] == 2


def test_retry_after_http_date_is_honoured(served: HostileServer, waits: list[float]) -> None:
    date = formatdate(NOW + 12, usegmt=True)
    served.set_script([("503 Service Unavailable", {"Retry-After": date})])
    open_source(served)
    assert waits == [12.0]


def test_503_then_success_backs_off_exponentially(
    served: HostileServer, waits: list[float]
) -> None:
    served.set_script(
        [
            ("503 Service Unavailable", {}),
            ("502 Bad Gateway", {}),
            ("500 Internal Server Error", {}),
        ]
    )
    src = open_source(served, base=0.5)
    assert waits == [0.5, 1.0, 2.0]
    assert src.describe()["requests"] == 4


def test_gives_up_after_the_last_attempt(
    served: HostileServer, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    served.set_script([("503 Service Unavailable", {})] * 10)
    code, _, err = run_cli(capsys, "check", served.url("script", EXAMPLE.name))
    assert code == 2
    assert err.startswith("quantcheck: error: ") and "Traceback" not in err
    assert "HTTP 503, 4 attempts" in err, err
    assert len(waits) == 3
    assert len(served.served.requests) == 4


def test_retry_after_beyond_the_cap_fails_at_once(
    served: HostileServer, waits: list[float]
) -> None:
    served.set_script([("429 Too Many Requests", {"Retry-After": "3600"})])
    with pytest.raises(RemoteError, match=r"asks to wait 3600 s .*more than the 30 s"):
        open_source(served)
    assert waits == []
    assert len(served.served.requests) == 1


@pytest.mark.parametrize(
    "status", ["404 Not Found", "403 Forbidden", "416 Range Not Satisfiable", "401 Unauthorized"]
)
def test_other_4xx_are_never_retried(
    served: HostileServer, waits: list[float], status: str
) -> None:
    served.set_script([(status, {"Retry-After": "1"})])
    with pytest.raises(RemoteError):
        open_source(served)
    assert waits == []
    assert len(served.served.requests) == 1


def test_a_reset_connection_is_tried_again(served: HostileServer, waits: list[float]) -> None:
    served.set_script(["reset", "reset"])
    src = open_source(served)
    assert src.size == EXAMPLE.stat().st_size
    assert len(waits) == 2
    assert len(served.served.requests) == 3


def test_resets_give_up_with_a_clear_error(served: HostileServer, waits: list[float]) -> None:
    served.set_script(["reset"] * 10)
    with pytest.raises(
        RemoteError,
        match=r"connection closed before an answer.*gave up after "
        "4 attempts",
    ):
        open_source(served)
    assert len(waits) == 3


def test_retry_messages_redact_credentials(served: HostileServer, waits: list[float]) -> None:
    served.set_script([("429 Too Many Requests", {"Retry-After": "3600"})])
    url = (
        served.url("script", EXAMPLE.name).replace("http://", "http://user:s3cret@")
        + "?token=s3cret"
    )
    with pytest.raises(RemoteError) as info:
        HttpSource(url, settings=HttpSettings(timeout=2))
    assert "s3cret" not in str(info.value)


def test_retry_after_parsing() -> None:
    p = RetryPolicy(clock=lambda: NOW)
    assert p.retry_after(" 5 ") == 5.0
    assert p.retry_after(formatdate(NOW - 100, usegmt=True)) == 0.0
    assert p.retry_after("soon") is None
    assert p.retry_after(None) is None


def test_backoff_has_jitter_and_a_ceiling() -> None:
    low = RetryPolicy(rand=lambda: 0.0, base=1.0, max_wait=30.0)
    high = RetryPolicy(rand=lambda: 1.0, base=1.0, max_wait=30.0)
    assert [low.backoff(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert [high.backoff(n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert high.backoff(20) == 30.0


def test_a_body_dropped_midway_is_fetched_again(served: HostileServer, waits: list[float]) -> None:
    """The first range's connection closes halfway through its body, twice: sent again
    with backoff, like a 503, and the bytes read are the file's."""
    served.set_script(["drop", "drop"])
    src = open_source(served, base=0.5)
    assert src.size == EXAMPLE.stat().st_size
    assert src.read(0, src.size) == EXAMPLE.read_bytes()
    assert waits == [0.5, 1.0]
    assert len(served.served.requests) == 3


def test_a_later_range_dropped_midway_is_fetched_again(
    served: HostileServer, waits: list[float]
) -> None:
    data = EXAMPLE.read_bytes()
    settings = HttpSettings(timeout=2, retry=RetryPolicy(rand=lambda: 1.0, base=0.25))
    src = HttpSource(served.url("script", EXAMPLE.name), settings=settings, first_read=1024)
    served.set_script(["drop"])
    assert src.read(4096, 20_000) == data[4096:24_096]
    assert waits == [0.25]
    assert len(served.served.requests) == 3


def test_mid_body_drops_give_up_with_a_clear_error(
    served: HostileServer, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    served.set_script(["drop"] * 10)
    code, _, err = run_cli(capsys, "check", served.url("script", EXAMPLE.name))
    assert code == 2 and "Traceback" not in err
    assert "short body" in err and "gave up after 4 attempts" in err, err
    assert len(waits) == 3
    assert len(served.served.requests) == 4


def test_check_through_mid_body_drops_equals_local(
    served: HostileServer, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    _, local, _ = run_cli(capsys, "check", "--format", "json", str(EXAMPLE))
    served.set_script(["drop", "drop", "drop"])
    url = served.url("script", EXAMPLE.name)
    _, remote, err = run_cli(capsys, "check", "--format", "json", url)
    assert isinstance(remote, dict) and isinstance(local, dict), err
    assert remote["summary"] == local["summary"]
    assert len(waits) == 3


def test_an_index_dropped_midway_is_fetched_again(
    served: HostileServer, waits: list[float]
) -> None:
    from quantcheck.io import hub

    served.set_data(b'{"weight_map": {"a": "model.safetensors"}}' + b" " * 40_000)
    served.set_script(["drop"])
    client = HttpClient(HttpSettings(timeout=2, retry=RetryPolicy(rand=lambda: 1.0)))
    try:
        raw, _ = hub.fetch_bytes(client, served.url("script", "model.safetensors.index.json"))
    finally:
        client.close()
    assert raw.startswith(b'{"weight_map"') and len(raw) == 40_000 + 42
    assert waits == [0.5]


def test_a_multipart_body_dropped_midway_is_fetched_again(
    served: HostileServer, waits: list[float]
) -> None:
    """Markers far apart go out as one multi-range request; its multipart body is cut
    halfway: the parts still missing are asked again, and the bytes are the file's."""
    data = EXAMPLE.read_bytes()
    settings = HttpSettings(timeout=2, retry=RetryPolicy(rand=lambda: 1.0, base=0.25))
    src = HttpSource(served.url("script", EXAMPLE.name), settings=settings, first_read=1024)
    served.set_script(["drop"])
    spans = [(2048, 100), (len(data) // 2, 5000), (len(data) - 300, 300)]
    assert src.read_many(spans) == [data[o : o + n] for o, n in spans]
    assert waits == [0.25]
    assert "," in served.served.requests[1].headers["range"]
    assert len(served.served.requests) == 3
