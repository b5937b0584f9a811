"""Family detection (quantcheck.families) on the stand-ins of every family: the family, its
summary, the config the shapes imply, and what makes it unknown or unsure."""

from __future__ import annotations

import pytest

from quantcheck.families import detect, family_name
from quantcheck.families.detection import modules
from quantcheck.families.table import BY_NAME, FAMILIES

from . import standin as S

#: stand-in -> what `inspect` and `check` print after "family: "
SUMMARY = {
    "chroma": "chroma (19 double + 38 single blocks, hidden 3072)",
    "flux1-dev": "flux (19 double + 38 single blocks, hidden 3072)",
    "flux2-dev": "flux2 (8 double + 48 single blocks, hidden 6144)",
    "flux2-klein-4b": "flux2 (5 double + 20 single blocks, hidden 3072)",
    "hunyuanvideo-1.5": "hunyuanvideo15 (54 double blocks, hidden 2048)",
    "ltx-2": "ltx2 (48 blocks)",
    "minimax-h3": "minimax_h3 (50 + 2 refiner blocks, hidden 5376)",
    "mistral3-24b": "mistral3 (40 blocks, hidden 5120)",
    "qwen-image": "qwen_image (60 blocks, hidden 3072)",
    "qwen3-4b": "qwen3 (36 blocks, hidden 2560)",
    "qwen3.5-2b": "qwen35 (24 + 24 visual blocks, hidden 2048)",
    "qwen3vl-32b": "qwen3vl_32b (50 + 27 visual blocks, hidden 5120)",
    "sd3.5-large": "sd3 (38 blocks)",
    "t5-xxl": "t5xxl (24 blocks)",
    "wan2.1-i2v-14b": "wan (40 blocks, hidden 5120)",
    "wan2.1-t2v-14b": "wan (40 blocks, hidden 5120)",
    "z-image": "zimage (30 + 2 noise + 2 context blocks, hidden 3840)",
}


def test_every_stand_in_is_tabled() -> None:
    assert sorted(SUMMARY) == S.names()


@pytest.mark.parametrize("name", sorted(SUMMARY))
def test_stand_in_is_its_family_with_its_layout(name: str) -> None:
    found = detect(S.shapes(name))
    assert found.summary() == SUMMARY[name]
    assert found.missing == [] and found.extra == []
    assert family_name(S.shapes(name)) == SUMMARY[name].split(" ")[0]


def test_every_family_has_a_stand_in() -> None:
    seen = {family_name(S.shapes(n)) for n in S.names()}
    assert seen == {f.name for f in FAMILIES}


def test_the_single_file_prefix_is_found_and_kept_out_of_names() -> None:
    shapes = {f"model.diffusion_model.{k}": v for k, v in S.shapes("flux2-klein-4b").items()}
    found = detect(shapes)
    assert found.prefix == "model.diffusion_model."
    assert found.summary() == SUMMARY["flux2-klein-4b"] and not found.extra


def test_config_reads_the_shapes_comfyui_reads() -> None:
    shapes = S.shapes("flux1-dev")
    assert detect(shapes).config == {
        "hidden_size": 3072,
        "in_channels": 16,  # img_in K 64 / patch 2 x 2
        "context_in_dim": 4096,
        "vec_in_dim": 768,
    }
    shapes["img_in.weight"] = (3072, 32)  # what NVFP4 stores for K 64
    assert detect(shapes).config["in_channels"] == 8


def test_unknown_names_are_unknown() -> None:
    found = detect({"encoder.layer.0.weight": (8, 8)})
    assert found.family is None and found.summary() == "unknown" and found.name is None
    assert found.to_json() == {"name": None, "summary": "unknown"}


def test_a_family_key_test_with_another_layout_is_unsure() -> None:
    shapes = S.shapes("flux2-klein-4b")
    shapes.update({f"stray.{i}.proj.weight": (8, 8) for i in range(400)})
    found = detect(shapes)
    assert found.unsure and found.name is None and found.extra == []
    assert found.summary() == "unknown (the keys of flux2, but not its layout)"


def test_shape_tests_tell_mistral_from_another_llama() -> None:
    shapes = S.shapes("mistral3-24b")
    assert family_name(shapes) == "mistral3"
    shapes["model.layers.0.post_attention_layernorm.weight"] = (4096,)  # a Llama 3 8B width
    assert family_name(shapes) is None


def test_missing_and_extra_modules_by_block() -> None:
    shapes = S.shapes("flux2-klein-4b")
    gone = [k for k in shapes if k.startswith("double_blocks.2.img_mlp.")]
    for k in gone:
        del shapes[k]
    shapes["double_blocks.1.img_attn.extra.weight"] = (8, 8)
    found = detect(shapes)
    assert found.missing == ["double_blocks.2.img_mlp.0", "double_blocks.2.img_mlp.2"]
    assert found.extra == ["double_blocks.1.img_attn.extra"]


def test_variant_modules_are_neither_missing_nor_extra() -> None:
    # FLUX.2 klein has no guidance_in; FLUX.1 schnell neither: `optional` in the table
    shapes = {k: v for k, v in S.shapes("flux1-dev").items() if not k.startswith("guidance_in")}
    found = detect(shapes)
    assert found.name == "flux" and not found.missing and not found.extra


def test_module_names_fold_parameters_and_companions() -> None:
    names = ["a.weight", "a.weight_scale", "a.comfy_quant", "b.scale", "head.modulation"]
    assert modules([*names, "scaled_fp8"]) == ["a", "b", "head.modulation"]


def test_every_family_entry_is_complete() -> None:
    for fam in FAMILIES:
        assert fam.detect and fam.reads and fam.blocks and fam.layouts and fam.sources, fam.name
        assert BY_NAME[fam.name] is fam
        for keep in fam.keep:
            assert keep.producers and keep.reason, (fam.name, keep)


def test_a_checkpoint_family_name_for_the_loader_choice(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.model.family_view import checkpoint_family_name

    h3 = S.write(
        tmp_path / "h3.safetensors", S.quantize(S.bf16(S.shapes("minimax-h3")), "int8_tensorwise")
    )
    other = S.write(tmp_path / "x.safetensors", {"x.weight": ("BF16", (16, 16), None)})
    with load_checkpoint([str(h3)]) as ck:
        assert checkpoint_family_name(ck) == "minimax_h3"
    with load_checkpoint([str(other)]) as ck:
        assert checkpoint_family_name(ck) is None


def test_a_published_qwen35_file_is_renamed_onto_the_layout() -> None:
    def file_name(k: str) -> str:
        if k.startswith("model."):
            return "model.language_model." + k[len("model.") :]
        return "model." + k if k.startswith("visual.") else k

    shapes = {file_name(k): v for k, v in S.shapes("qwen3.5-2b").items()}
    found = detect(shapes)
    assert found.summary() == SUMMARY["qwen3.5-2b"] and not found.missing and not found.extra
