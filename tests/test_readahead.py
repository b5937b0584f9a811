"""Read-ahead hints (`quantcheck.io.readahead`): regular local files only, never blocking,
never failing, and every checkpoint still checked once, in order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from quantcheck.io import readahead
from quantcheck.io.source import SMALL_FILE
from quantcheck.model.discover import CheckpointSpec


@pytest.fixture
def advised(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int, int]]:
    """Record each `posix_fadvise` call as (path, offset, length, advice)."""
    calls: list[tuple[str, int, int, int]] = []

    def record(fd: int, offset: int, length: int, advice: int) -> None:
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length, advice))

    monkeypatch.setattr(readahead, "_ADVISE", record)
    return calls


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", 3)


@needs_proc
def test_regular_file_is_hinted(tmp_path: Path, advised: list[Any]) -> None:
    f = tmp_path / "m.safetensors"
    f.write_bytes(b"x" * 100)
    readahead.hint(str(f))
    assert advised == [(str(f), 0, SMALL_FILE, WILLNEED)]


@needs_proc
def test_fifo_missing_file_folder_and_url_are_left_alone(
    tmp_path: Path, advised: list[Any]
) -> None:
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)  # opening it for reading without O_NONBLOCK would wait for a writer
    readahead.hint(str(fifo))
    readahead.hint(str(tmp_path / "missing.safetensors"))
    readahead.hint(str(tmp_path))
    readahead.hint("https://example.invalid/m.safetensors")
    assert advised == []


def test_read_ahead_yields_every_spec_once_in_order_after_hinting_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hinted: list[str] = []
    monkeypatch.setattr(readahead, "_ADVISE", lambda *a: None)
    monkeypatch.setattr(readahead, "hint", hinted.append)
    specs = [CheckpointSpec(f"c{i}", [f"c{i}-a", f"c{i}-b"]) for i in range(40)]
    seen: list[CheckpointSpec] = []
    for spec in readahead.read_ahead(specs, window=5):
        assert spec.paths[1] in hinted  # hinted before it is checked
        ahead = len(hinted) // 2 - len(seen) - 1
        assert ahead <= 5  # never more than the window ahead
        seen.append(spec)
    assert seen == specs
    assert hinted == [p for s in specs for p in s.paths]


def test_without_posix_fadvise_nothing_is_hinted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readahead, "_ADVISE", None)
    monkeypatch.setattr(readahead, "hint", lambda p: pytest.fail("hinted"))
    specs = [CheckpointSpec("c", ["c"]), CheckpointSpec("d", ["d"])]
    assert list(readahead.read_ahead(specs)) == specs
