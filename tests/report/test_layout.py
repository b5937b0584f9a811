"""Block structure from prefixes: families, block numbers, kind order, fallback."""

from __future__ import annotations

from quantcheck.render.html.layout import build_layout, kind_key, split_prefix


def test_split_prefix_takes_the_first_numbered_segment() -> None:
    assert split_prefix("model.diffusion_model.transformer_blocks.12.attn.to_q") == (
        "model.diffusion_model.transformer_blocks",
        12,
        "attn.to_q",
    )
    assert split_prefix("m.transformer_blocks.0.img_mlp.net.0.proj") == (
        "m.transformer_blocks",
        0,
        "img_mlp.net.0.proj",
    )
    assert split_prefix("double_blocks.3.img_attn.qkv") == ("double_blocks", 3, "img_attn.qkv")
    assert split_prefix("proj_out") is None
    assert split_prefix("time_embed.0") is None


def test_kinds_read_attention_then_mlp_then_modulation_then_norms() -> None:
    kinds = [
        "attn.norm_q",
        "txt_mod.1",
        "img_mlp.net.2",
        "attn.to_out.0",
        "attn.to_v",
        "attn.add_k_proj",
        "attn.to_k",
        "img_mlp.net.0.proj",
        "attn.to_q",
        "img_mod.1",
        "attn.to_add_out",
        "attn.add_q_proj",
    ]
    assert sorted(kinds, key=kind_key) == [
        "attn.to_q",
        "attn.to_k",
        "attn.to_v",
        "attn.to_out.0",
        "attn.add_q_proj",
        "attn.add_k_proj",
        "attn.to_add_out",
        "img_mlp.net.0.proj",
        "img_mlp.net.2",
        "img_mod.1",
        "txt_mod.1",
        "attn.norm_q",
    ]


def test_flux_families_get_their_own_grids_and_loose_layers_are_listed() -> None:
    prefixes = [
        f"double_blocks.{b}.{k}"
        for b in range(3)
        for k in ("txt_attn.qkv", "img_mlp.0", "img_attn.proj", "img_attn.qkv")
    ]
    prefixes += [f"single_blocks.{b}.{k}" for b in (10, 2, 1) for k in ("linear2", "linear1")]
    prefixes += ["img_in", "final_layer.linear", "lone_blocks.0.x"]
    lay = build_layout(prefixes)
    assert [g.label for g in lay.grids] == ["double_blocks", "single_blocks"]
    double, single = lay.grids
    assert double.kinds == ["img_attn.qkv", "img_attn.proj", "txt_attn.qkv", "img_mlp.0"]
    assert single.blocks == [1, 2, 10] and single.kinds == ["linear1", "linear2"]
    assert [prefixes[i] for i in lay.others] == ["final_layer.linear", "img_in", "lone_blocks.0.x"]
    placed = sorted([*lay.others, *(i for g in lay.grids for i in g.cells.values())])
    assert placed == list(range(len(prefixes)))


def test_not_block_structured_falls_back_to_a_sorted_list() -> None:
    prefixes = ["layer10", "layer2", "head", "embed"]
    lay = build_layout(prefixes)
    assert not lay.block_structured
    assert [prefixes[i] for i in lay.others] == ["embed", "head", "layer2", "layer10"]
