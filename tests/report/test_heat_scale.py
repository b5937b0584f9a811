"""The error heat map uses one log scale in every report, with the real range in its legend,
and draws layers kept unquantized in their own style (issue 22 item 10)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.inventory import summarize
from quantcheck.render.html import build_report
from quantcheck.render.html.chromium import screenshot
from quantcheck.render.html.colors import NOT_QUANTIZED, LogScale, heat_color
from report._png import decode

CELL = re.compile(r'<rect class="(c(?: unq)?)" id="H(\d+)"[^>]*? fill="(#[0-9a-f]{6})"')


def nvfp4_compare(path: Path, quantized: Callable[[int], float]) -> tuple[SimpleNamespace, dict]:
    """A compare result over the example's layers: NVFP4 layers get `quantized(i)`, the
    unquantized BF16 norms an exact 0 (the original's own values)."""
    with load_checkpoint([str(path)]) as ck:
        records = summarize(ck)["layers"]
    rows = [
        {
            "prefix": r["prefix"],
            "format": r["format"] or "unquantized BF16",
            "max_abs": 0.1,
            "rel_l2": quantized(i) if r["format"] else 0.0,
            "cosine": 0.99,
            "snr_db": 20.0,
        }
        for i, r in enumerate(records)
    ]
    return SimpleNamespace(layers=rows, problems=[]), {
        i: r["format"] for i, r in enumerate(records)
    }


def cells(html: str) -> dict[int, tuple[str, str]]:
    """Heat-map cell index -> (class, fill)."""
    return {int(i): (cls, fill) for cls, i, fill in CELL.findall(html)}


def rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def test_the_scale_is_fixed() -> None:
    for values in ([0.0938, 0.0948], [1e-6, 5.0], []):
        s = LogScale(values)
        assert s(1e-4) == 0.0 and s(1.0) == 1.0 and s(0.1) == 0.75 and s(0.0) == 0.0
        assert s(1e-7) == 0.0 and s(30.0) == 1.0
    assert (LogScale([0.0938, 0.0948]).lo, LogScale([0.0938, 0.0948]).hi) == (0.0938, 0.0948)


def test_a_one_percent_spread_is_one_colour_and_unquantized_layers_have_their_own(
    examples_dir: Path,
) -> None:
    path = examples_dir / "nvfp4.safetensors"
    result, formats = nvfp4_compare(path, lambda i: 0.0938 + 0.001 * (i % 2))
    html = build_report([str(path)], compare=result)
    found = cells(html)
    assert len(found) == len(formats)
    quantized = [fill for i, (cls, fill) in found.items() if formats[i]]
    for a in quantized:  # before: 0.0938 palest, 0.0948 darkest
        assert all(abs(x - y) <= 3 for x, y in zip(rgb(a), rgb(quantized[0]), strict=True))
    plain = [(cls, fill) for i, (cls, fill) in found.items() if not formats[i]]
    assert plain and all(c == ("c unq", NOT_QUANTIZED) for c in plain)  # before: palest heat
    assert heat_color(0.0) != NOT_QUANTIZED
    assert "this report: 0.0938 – 0.0948" in html
    assert '<span class="sw unq"></span>not quantized <small>2</small>' in html


def test_the_same_error_has_the_same_colour_in_every_report(examples_dir: Path) -> None:
    path = examples_dir / "nvfp4.safetensors"
    narrow, formats = nvfp4_compare(path, lambda i: 0.0941)
    wide, _ = nvfp4_compare(path, lambda i: 0.0941 if i != 1 else 0.5)
    a, b = (
        cells(build_report([str(path)], compare=narrow)),
        cells(build_report([str(path)], compare=wide)),
    )
    same = [i for i in a if formats[i] and i != 1]
    assert same and all(a[i][1] == b[i][1] for i in same)
    assert a[1][1] != b[1][1]


def test_screenshot_shows_the_not_quantized_style(
    examples_dir: Path, tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    """In the picture: the NVFP4 cells all have the one colour of 0.094 on the fixed scale,
    and the palest heat colour (what unquantized zero-error layers were painted before) is
    almost absent (it is only the left end of the legend's gradient)."""
    chromium = require_program("chromium")
    path = examples_dir / "nvfp4.safetensors"
    result, _ = nvfp4_compare(path, lambda i: 0.0941)
    page = tmp_path / "report.html"
    page.write_text(build_report([str(path)], compare=result), encoding="utf-8")
    png = screenshot(page, tmp_path / "report.png", binary=chromium, timeout=60)
    _, _, rows = decode(png)
    pixels = [bytes(r[i : i + 3]) for r in rows for i in range(0, len(r), 3)]
    expected = bytes(rgb(heat_color(LogScale([]).__call__(0.0941))))
    palest = bytes(rgb(heat_color(0.0)))
    assert pixels.count(expected) > 12 * 1000  # 12 cells of at least 28 x 40 pixels
    assert pixels.count(palest) < 400  # before: two whole cells and more
