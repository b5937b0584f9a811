"""Progress lines show an ETA and cut long names on the right; `compare` ends with a summary
line (issue 22 item 9)."""

from __future__ import annotations

import io

import pytest

from quantcheck import progress
from quantcheck.numeric.compare import CompareResult, render_table, summary_line
from quantcheck.progress import Progress, cut_right, eta_text

LAYER = "model.diffusion_model.transformer_blocks.17.attn.to_out.0"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(progress.time, "monotonic", c)
    return c


def test_eta_text() -> None:
    assert eta_text(10.0, 0, 100) == "--"
    assert eta_text(10.0, 50, 100) == "10s"
    assert eta_text(10.0, 10, 100) == "1m30s"
    assert eta_text(60.0, 1, 100) == "1h39m"
    assert eta_text(5.0, 100, 100) == "0s"


def test_items_show_an_eta_and_keep_the_start_of_a_name(clock: Clock) -> None:
    out = io.StringIO()
    bar = Progress(4, "compare", stream=out, enabled=True)
    clock.now += 30
    bar.advance(LAYER)
    line = out.getvalue().rsplit("\r", 1)[-1]
    assert "1/4 eta 1m30s" in line
    # not a terminal: 80 columns, of which the name gets what is left, at least 20
    assert line.endswith(" model.diffusion_mod…")  # the start of the name, not its end


def test_bytes_show_rate_and_eta(clock: Clock) -> None:
    out = io.StringIO()
    bar = Progress(4 * 2**20, "quantize", stream=out, enabled=True, unit="bytes")
    clock.now += 2
    bar(2**20)
    line = out.getvalue().rsplit("\r", 1)[-1]
    assert "0.5 MiB/s eta 6s" in line


def test_cut_right() -> None:
    assert cut_right("short", 40) == "short"
    assert cut_right("abcdef", 4) == "abc…"


def test_compare_ends_with_a_summary_line() -> None:
    rows = [
        {
            "prefix": LAYER + ".x" * 10,
            "format": "nvfp4",
            "max_abs": 0.5,
            "rel_l2": 0.0941,
            "cosine": 0.995,
            "snr_db": 20.5,
            "count": 1,
        },
        {
            "prefix": "b",
            "format": "mxfp8",
            "max_abs": 0.1,
            "rel_l2": 0.02,
            "cosine": 0.9998,
            "snr_db": 34.0,
            "count": 1,
        },
    ]
    result = CompareResult(layers=rows, problems=[{"prefix": "c", "problem": "missing"}])
    text = render_table(result)
    assert text.splitlines()[-1] == summary_line(result)
    assert summary_line(result) == (
        f"compared 2 layers, 1 not compared: worst relative L2 0.0941 (cosine 0.995000, "
        f"max abs 0.5) in {LAYER + '.x' * 10}"
    )
    # the table cuts a long name on the right, keeping where it starts
    assert text.splitlines()[1].startswith(LAYER)
    assert summary_line(CompareResult()) == "compared 0 layers"
