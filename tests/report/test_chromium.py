"""Open the report in headless Chromium, take a screenshot, and check it is a real picture."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from example_files import BROKEN_EXAMPLE
from quantcheck.render.html import build_report
from quantcheck.render.html.chromium import screenshot
from report._png import decode, non_background


def test_screenshot_is_the_right_size_and_not_blank(
    examples_dir: Path, big_checkpoint: Path, tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    chromium = require_program("chromium")
    for name, path in (("broken", examples_dir / BROKEN_EXAMPLE), ("big", big_checkpoint)):
        html = tmp_path / f"{name}.html"
        html.write_text(build_report([str(path)]), encoding="utf-8")
        png = screenshot(html, tmp_path / f"{name}.png", binary=chromium, timeout=60)
        width, height, rows = decode(png)
        assert (width, height) == (1400, 2000)
        drawn, background = non_background(rows)
        assert background in ((0xF6, 0xF8, 0xFA), (255, 255, 255))
        assert rows[5][15:18] == bytes((0x24, 0x29, 0x2F))  # our nav bar, not an error page
        assert drawn > 0.15 * width * height, f"{name}: only {drawn} pixels drawn"
