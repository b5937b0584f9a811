"""Differential: ComfyUI's own model detection (@783545f6: `detect_unet_config`,
`model_config_from_unet`, `detect_te_model`; detection.py) against quantcheck's family
detection and its packed-shape finding (QC860), on header-only stand-ins of every family
(tests/data/families/, built from ComfyUI's own model classes) — BF16, and quantized with every
format quantize writes.

For each stand-in:
- the family: ComfyUI's `image_model` (or TEModel) is the one quantcheck's family names;
- the config: every field quantcheck reads from a stored shape (families/table.py `reads`)
  that ComfyUI's config also has, has ComfyUI's value, and the block counts agree;
- the packed finding: QC860 is reported exactly when ComfyUI's config for the quantized file
  differs from its config for the BF16 file, and its data carry both configs.

Skipped unless QUANTCHECK_DIFF_COMFYUI=1 (and QUANTCHECK_COMFYUI_SRC, see source.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tests.families import standin as S

from quantcheck.checking import check_paths
from quantcheck.families.detection import topology_layers
from quantcheck.families.table import BY_NAME, Topology
from quantcheck.formats.table import FORMATS

from .detection import Detection, load, meta_state_dict
from .source import tree

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_COMFYUI") != "1",
    reason="set QUANTCHECK_DIFF_COMFYUI=1 (make diff-comfyui)",
)

#: Every format ComfyUI loads (`quantize` writes all but AWQ; standin.py lays AWQ out).
FORMATS_WRITTEN = tuple(
    n for n, f in FORMATS.items() if f.comfyui and (f.written is not None or n == "awq_w4a16")
)
#: stand-in -> quantcheck family
DIFFUSION = {
    "flux1-dev": "flux",
    "chroma": "chroma",
    "flux2-dev": "flux2",
    "flux2-klein-4b": "flux2",
    "qwen-image": "qwen_image",
    "wan2.1-t2v-14b": "wan",
    "wan2.1-i2v-14b": "wan",
    "z-image": "zimage",
    "minimax-h3": "minimax_h3",
    "ltx-2": "ltx2",
    "hunyuanvideo-1.5": "hunyuanvideo15",
    "sd3.5-large": "sd3",
}
#: stand-in -> (quantcheck family, ComfyUI TEModel name)
ENCODERS = {
    "qwen3.5-2b": ("qwen35", "QWEN35_2B"),
    "t5-xxl": ("t5xxl", "T5_XXL"),
    "qwen3-4b": ("qwen3", "QWEN3_4B"),
    "mistral3-24b": ("mistral3", "MISTRAL3_24B"),
    "qwen3vl-32b": ("qwen3vl_32b", "QWEN3VL_32B"),
}
#: ComfyUI's model config class when no `image_model` names the family (SD3's mmdit branch)
CONFIG_CLASS = {"sd3": "SD3"}
#: quantcheck's block groups -> ComfyUI's config field counting them
BLOCK_FIELDS = {
    "double_blocks": ("depth",),
    "single_blocks": ("depth_single_blocks",),
    "transformer_blocks": ("num_layers",),
    "blocks": ("num_layers",),
    "layers": ("n_layers",),
    "joint_blocks": ("depth",),
    "token_refiner.blocks": ("token_refiner_num_layers",),
}


@pytest.fixture(scope="module")
def comfy() -> Detection:
    root = tree()
    if root is None:
        pytest.skip("ComfyUI source not reachable (see source.py)")
    return load(root)


def _standin(name: str, fmt: str | None) -> S.Tensors:
    tensors = S.bf16(S.shapes(name))
    return S.quantize(tensors, fmt) if fmt else tensors


def _comfy_view(comfy: Detection, tensors: S.Tensors) -> tuple[dict[str, Any] | None, str | None]:
    sd = meta_state_dict({k: (d, s) for k, (d, s, _) in tensors.items()})
    config = comfy.detect_unet_config(sd, "")
    model = comfy.model_config_from_unet(sd, "") if config is not None else None
    return config, type(model).__name__ if model is not None else None


def _ours(tmp: Path, name: str, tensors: S.Tensors) -> Any:
    path = S.write(tmp / f"{name}.safetensors", tensors)
    return check_paths([str(path)], target="comfyui")


def _flat(comfy_config: dict[str, Any]) -> dict[str, Any]:
    """ComfyUI's config with SD3's context embedder sizes under quantcheck's field names."""
    out = dict(comfy_config)
    params = (out.get("context_embedder_config") or {}).get("params", {})
    if params:
        out["context_in_features"] = params["in_features"]
        out["context_out_features"] = params["out_features"]
    return out


def _read_fields(comfy_config: dict[str, Any], family: str) -> dict[str, Any]:
    fields = {r.field for r in BY_NAME[family].reads}
    flat = _flat(comfy_config)
    return {f: flat[f] for f in fields if f in flat}


@pytest.mark.parametrize("fmt", [None, *FORMATS_WRITTEN])
@pytest.mark.parametrize("name", sorted(DIFFUSION))
def test_family_config_and_packed_finding_match_comfyui(
    comfy: Detection, tmp_path: Path, name: str, fmt: str | None
) -> None:
    family = DIFFUSION[name]
    base_config, base_class = _comfy_view(comfy, _standin(name, None))
    assert base_config is not None and base_class is not None, name
    tensors = _standin(name, fmt)
    config, model_class = _comfy_view(comfy, tensors)
    assert config is not None
    report = _ours(tmp_path, name, tensors)
    fam = report.family
    # the family
    assert fam["keys_of"] == family, (name, fmt, fam)
    want = CONFIG_CLASS.get(family)
    if want is None:
        assert config["image_model"] == BY_NAME[family].comfyui
    else:
        assert model_class == want
    # the config quantcheck says the file means is ComfyUI's on the BF16 model
    base_read = _read_fields(base_config, family)
    assert base_read, f"{name}: no field of quantcheck's reads is in ComfyUI's config"
    assert {f: fam["config"][f] for f in base_read} == base_read, (name, fmt)
    for group, label in BY_NAME[family].blocks:
        for field in BLOCK_FIELDS.get(group, ()):
            if field in base_config and label in fam["blocks"]:
                assert fam["blocks"][label] == base_config[field], (name, group)
    # QC860 exactly when ComfyUI computes another config from the stored shapes
    read = _read_fields(config, family)
    packed = [d for d in report.diagnostics if d.code == "QC860"]
    if read == base_read:
        assert not packed, (name, fmt, [d.message for d in packed])
        assert model_class == base_class
    else:
        assert packed, (name, fmt, read, base_read)
        said = {k: v for d in packed for k, v in d.data["comfyui_config"].items()}
        meant = {k: v for d in packed for k, v in d.data["file_config"].items()}
        assert said == {k: v for k, v in read.items() if read[k] != base_read[k]}
        assert meant == {k: base_read[k] for k in said}
        assert all(d.effect_at("comfyui").value == "fails" for d in packed)


@pytest.mark.parametrize("fmt", [None, *FORMATS_WRITTEN])
@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_text_encoder_family_matches_comfyui(
    comfy: Detection, tmp_path: Path, name: str, fmt: str | None
) -> None:
    family, te_model = ENCODERS[name]
    tensors = _standin(name, fmt)
    if family == "qwen35":  # the published file's names, which detect_te_model tests
        tensors = {_qwen35_file_name(k): v for k, v in tensors.items()}
    sd = meta_state_dict({k: (d, s) for k, (d, s, _) in tensors.items()})
    found = comfy.detect_te_model(sd)
    assert found is not None and found.name == te_model
    assert _ours(tmp_path, name, tensors).family["name"] == family


def _qwen35_file_name(name: str) -> str:
    """ComfyUI's Qwen3.5 module names as a published Qwen3.5 file writes them."""
    if name.startswith("model."):
        return "model.language_model." + name[len("model.") :]
    return "model." + name if name.startswith("visual.") else name


@pytest.mark.parametrize(
    "topo", [t for f in BY_NAME.values() for t in f.topologies], ids=lambda t: t.name
)
def test_a_released_topologys_file_is_the_family_comfyui_detects(
    comfy: Detection, tmp_path: Path, topo: Topology
) -> None:
    """The official files QC864 names (tests/families/test_topology.py) are, to ComfyUI's
    detection, the family quantcheck says, with the config quantcheck reads."""
    tensors = S.convrot(S.released_base(topo), topology_layers(topo))
    sd = meta_state_dict({k: (d, s) for k, (d, s, _) in tensors.items()})
    report = _ours(tmp_path, topo.name, tensors)
    fam = report.family
    assert [d.data["recipe"] for d in report.diagnostics if d.code == "QC864"] == [topo.name]
    family = fam["keys_of"]
    if BY_NAME[family].kind == "text-encoder":
        found = comfy.detect_te_model(sd)
        assert found is not None and found.name == BY_NAME[family].comfyui.upper()
        return
    config = comfy.detect_unet_config(sd, "")
    assert config is not None and config["image_model"] == BY_NAME[family].comfyui
    read = _read_fields(config, family)
    assert read and {f: fam["config"][f] for f in read} == read


def test_every_family_has_a_differential_case() -> None:
    covered = set(DIFFUSION.values()) | {f for f, _ in ENCODERS.values()}
    assert covered == set(BY_NAME)
