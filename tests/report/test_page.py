"""The HTML itself: it parses, it is self-contained, every layer is in it, names are escaped,
diagnostics link to their layers, compare data becomes a heat map, and it renders fast."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from example_files import BROKEN_EXAMPLE, CLEAN_EXAMPLES
from hostile import marker_bytes, tensors
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.inventory import summarize
from quantcheck.render.html import build_report
from report._html import Parsed, parse

ALL_EXAMPLES = (*CLEAN_EXAMPLES, BROKEN_EXAMPLE)


def layer_prefixes(path: Path) -> list[str]:
    with load_checkpoint([str(path)]) as ck:
        return [r["prefix"] for r in summarize(ck)["layers"]]


def assert_self_contained(html: str, doc: Parsed) -> None:
    assert not doc.errors, doc.errors[:10]
    low = html.lower()
    for needle in ("<script", "<link", "<iframe", "<img", "@import", "javascript:"):
        assert needle not in low, needle
    assert not doc.srcs
    assert all(h.startswith("#") for h in doc.hrefs), [h for h in doc.hrefs if h[:1] != "#"]
    assert low.count("url(") == low.count("url(#")


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_example_parses_and_holds_every_layer(examples_dir: Path, name: str) -> None:
    html = build_report([str(examples_dir / name)])
    doc = parse(html)
    assert_self_contained(html, doc)
    text = "\n".join(doc.text + doc.titles)
    prefixes = layer_prefixes(examples_dir / name)
    assert prefixes
    for i, p in enumerate(prefixes):
        assert p in text
        assert f"L{i}" in doc.ids
    assert {"format-map", "sizes", "diagnostics", "layers"} <= set(doc.ids)


def test_broken_example_outlines_and_groups_its_diagnostics(examples_dir: Path) -> None:
    html = build_report([str(examples_dir / BROKEN_EXAMPLE)])
    doc = parse(html)
    assert html.count('class="sev"') >= 5  # one outline per affected layer
    # errors, and notes: QC316 concerns sglang loaders that do not read this file
    assert 'stroke="#d1242f"' in html and 'stroke="#1f6feb"' in html
    for code in ("QC304", "QC305", "QC316"):
        assert code in doc.text
    assert any(h.startswith("#L") for h in doc.hrefs)
    assert "FAILS" in html.upper() and "fails" in doc.text


def test_target_filter_drops_the_other_runtime(examples_dir: Path) -> None:
    doc = parse(build_report([str(examples_dir / BROKEN_EXAMPLE)], target="comfyui"))
    assert "sglang" not in doc.text
    # QC305 stays (the W4A8 BF16 channel scale fails ComfyUI too); QC316 is sglang's only.
    assert "QC304" in doc.text and "QC305" in doc.text and "QC316" not in doc.text


def test_hostile_layer_names_are_escaped(tmp_path: Path) -> None:
    evil = "blocks.0.<script>alert(1)</script>"
    quote = 'blocks.1.x" onmouseover="alert(2)'
    specs = []
    for p in (evil, quote, "blocks.2.<img src=x>"):
        specs += [
            (f"{p}.weight", "F8_E4M3", [16, 16]),
            (f"{p}.weight_scale", "F32", []),
            (f"{p}.comfy_quant", "U8", [27], marker_bytes({"format": "float8_e4m3fn"})),
        ]
    path = tmp_path / "evil.safetensors"
    path.write_bytes(tensors(specs))
    html = build_report([str(path)])
    doc = parse(html)
    assert_self_contained(html, doc)
    assert "onmouseover=" not in html.replace("onmouseover=&quot;", "")
    text = "\n".join(doc.text + doc.titles)
    assert evil in text and quote in text


def test_layouts_without_blocks_fall_back_to_a_sorted_list(tmp_path: Path) -> None:
    path = tmp_path / "flat.safetensors"
    path.write_bytes(tensors([(f"{n}.weight", "BF16", [8, 8]) for n in ("head", "embed", "mid")]))
    html = build_report([str(path)])
    doc = parse(html)
    assert "Layers (sorted by name)" in html and '<svg class="grid"' not in html
    items = [t for t in doc.text if t in ("head", "embed", "mid")]
    assert items[:3] == ["embed", "head", "mid"]


def test_compare_rows_become_a_heat_map_and_a_worst_list(examples_dir: Path) -> None:
    path = examples_dir / "nvfp4.safetensors"
    prefixes = layer_prefixes(path)
    rows = [
        {
            "prefix": p,
            "format": "nvfp4",
            "max_abs": 0.1,
            "rel_l2": 10 ** (-4 + i / 4),
            "cosine": 0.99,
            "snr_db": 30.0,
        }
        for i, p in enumerate(prefixes)
    ]
    rows[0]["rel_l2"] = math.nan
    rows[1]["rel_l2"] = math.inf
    fake = SimpleNamespace(
        layers=rows[:-1], problems=[{"prefix": prefixes[-1], "problem": "no such <weight>"}]
    )
    html = build_report([str(path)], compare=fake)
    doc = parse(html)
    assert_self_contained(html, doc)
    assert "compare" in doc.ids
    assert sum(1 for i in doc.ids if i.startswith("H")) == len(prefixes)
    worst_links = [h for h in doc.hrefs if h.startswith("#H")]
    assert len(worst_links) == min(20, len(rows) - 1)
    assert worst_links[:2] == ["#H0", "#H1"]  # NaN and inf count as worst
    assert f"#H{len(prefixes) - 2}" == worst_links[2]
    assert ": no such <weight>" in doc.text


def test_renders_the_3600_tensor_checkpoint(big_checkpoint: Path) -> None:
    """Every layer of the benchmark-size checkpoint is in the page (render time: see
    benchmarks/bench_check.py --report)."""
    doc = parse(build_report([str(big_checkpoint)]))
    assert not doc.errors
    assert sum(1 for i in doc.ids if i.startswith("L")) == 1082
