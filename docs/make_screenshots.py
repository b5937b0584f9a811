"""Regenerate the report screenshots in docs/ (needs Chromium; the compare picture needs numpy).

    .venv/bin/python docs/make_screenshots.py

Writes docs/report-<example>.png for every example checkpoint, docs/report-60-blocks.png for
a realistic 60-block mixed-format checkpoint (sparse, header only) and
docs/report-compare-nvfp4.png for `--compare` against a stand-in original.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from quantcheck.render.html import build_report  # noqa: E402
from quantcheck.render.html.chromium import screenshot  # noqa: E402

STAMP = "2026-12-02 00:00 UTC"


def shoot(html: str, name: str, tmp: Path) -> None:
    page = tmp / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    out = screenshot(page, REPO / "docs" / f"{name}.png")
    print(out.relative_to(REPO))


def main() -> None:
    from report._big import make_big

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for path in sorted((REPO / "examples").glob("*.safetensors")):
            shoot(build_report([str(path)], generated=STAMP), f"report-{path.stem}", tmp)
        big = make_big(tmp / "flux-like-60-blocks.safetensors")
        shoot(build_report([str(big)], generated=STAMP), "report-60-blocks", tmp)
        try:
            from quantcheck.numeric.compare import compare_checkpoints
            from report._original import make_original
        except ImportError as exc:
            print(f"skipping the compare picture: {exc}")
            return
        q = REPO / "examples" / "nvfp4.safetensors"
        orig = make_original(q, tmp / "original.safetensors")
        result = compare_checkpoints([str(q)], [str(orig)])
        shoot(build_report([str(q)], compare=result, generated=STAMP), "report-compare-nvfp4", tmp)


if __name__ == "__main__":
    main()
