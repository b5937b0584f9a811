"""Differential tests of sglang's `--comfyui-mode` loader per model family (`make diff-sglang`):
for each release that has it (0.5.21+) and each family, the pipeline sglang's own ComfyUI node
picks for that family's ComfyUI model type (its executor table, read as data) is run through
the release's `load_comfyui_transformer` up to the weight load, and quantcheck's `comfyui-mode`
loader for that family must say the same: `n/a` where there is no spec, a refusal (QC637)
exactly where the spec raises, a cast (QC635 / QC636: its spec reads no markers) where the
loader builds no quantization config, and neither where it builds one. Skipped unless
QUANTCHECK_DIFF_SGLANG=1 (the pinned wheels)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths

from ..._build import INT8_CONVROT, RawTensor, file, int8, nvfp4, t
from .loader import load_release
from .stages import comfyui_outcome, node_pipelines
from .test_diff_sglang import RELEASES, trees  # noqa: F401 (trees: the fixture)

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_SGLANG") != "1",
    reason="set QUANTCHECK_DIFF_SGLANG=1 (make diff-sglang)",
)

WITH_LOADER = tuple(r for r in RELEASES if r >= "0.5.21")
#: quantcheck's loader family -> (the ComfyUI model type sglang's node looks up, the names
#: that pass the family's key test)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "flux": ("flux", ("double_blocks.0.img_attn.norm.key_norm.scale", "img_in.weight")),
    "zimage": ("lumina2", ("cap_embedder.1.weight", "noise_refiner.0.attention.k_norm.weight")),
    "qwen_image": (
        "qwen_image",
        ("txt_norm.weight", "img_in.weight", "transformer_blocks.0.img_mod.1.weight"),
    ),
    "qwen_image21": (
        "qwen_image21",
        (
            "txt_norm.weight",
            "img_in.weight",
            "transformer_blocks.0.img_mod.1.weight",
            "transformer_blocks.0.img_mlp.gate_up.weight",
        ),
    ),
    "minimax_h3": ("minimax_h3", ("video_patch_proj.weight", "audio_patch_proj.weight")),
    "flux2": ("flux2", ("double_stream_modulation_img.lin.weight", "img_in.weight")),
}
LAYER = "blocks.0.attn.qkv"
FORMATS: dict[str, Callable[[], list[RawTensor]]] = {
    "nvfp4": lambda: nvfp4(LAYER),
    "int8-convrot": lambda: int8(LAYER, mark=INT8_CONVROT),
}


def _build(keys: tuple[str, ...], layers: Callable[[], list[RawTensor]]) -> Any:
    """The family's key names (BF16), the quantized layer, and four more BF16 modules that keep
    the layout comparison unsure (no module called missing)."""
    pads = [t(f"pad.{i}.weight", "BF16", (64, 64)) for i in range(4)]
    return file(lambda: [*(t(k, "BF16", (64, 64)) for k in keys), *layers(), *pads])


def _ours(report: Any, key: str) -> str:
    """quantcheck's `comfyui-mode` loader in the outcome words of `comfyui_outcome`."""
    _, loaders = report.loader_verdicts(key)
    v = loaders["comfyui-mode"]
    if v["status"] == "n/a":
        return "none"
    if "QC637" in v["codes"]:
        return "refused"
    if {"QC635", "QC636"} & set(v["codes"]):
        return "unquantized"
    return "quantized"


@pytest.mark.parametrize("version", WITH_LOADER)
def test_comfyui_mode_spec_per_family_agrees(
    version: str,
    trees: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    load_release(trees[version], stages=True)
    table = node_pipelines(trees[version])
    disagree = []
    seen = set()
    for family, (comfy, keys) in FAMILIES.items():
        for fmt, layers in FORMATS.items():
            folder = tmp_path / f"{family}-{fmt}"
            folder.mkdir()
            paths = [str(p) for p in _build(keys, layers)(folder)]
            pipeline = table.get(comfy)
            if pipeline is None:
                real, why = "none", f"sglang's ComfyUI node has no pipeline for {comfy!r}"
            else:
                real, why = comfyui_outcome(pipeline, paths[0])
            seen.add(real)
            key = f"sglang@{version}"
            report = check_paths(paths, target=key)
            assert report.paths[key]["loader_family"] == family, family
            ours = _ours(report, key)
            if ours != real:
                reason = report.target_status(key)["loaders"]["comfyui-mode"]["reason"]
                disagree.append(
                    f"{family} {fmt}: sglang {version} {real} ({why}); quantcheck {ours} ({reason})"
                )
    assert not disagree, "\n".join(disagree)
    # the comparison proves something on every release: each outcome occurs where it can
    assert {"none", "unquantized"} <= seen
    if version >= "0.5.22":  # the specs that read markers (MiniMax-H3, Qwen-Image 2.1)
        assert {"refused", "quantized"} <= seen
