"""musubi-tuner's own rules (QC750-QC765): one failing case and its passing twin each.

Checked with `--target all` (musubi is not a default target); the cases name the effects on
sglang, ComfyUI and musubi at its newest release (0.3.6); a rule only the older release
(725869d) breaks on is checked with `musubi@all` and names "none". MiniMax H3 text-encoder
cases (QC762-QC765) use a file the family detection takes for Qwen3-VL-32B (`te`), which lacks
most of the family's layout (QC862 is allowed in their twins). Behaviour per rule:
src/quantcheck/rules/musubi/catalog.py.
"""

from __future__ import annotations

import json

from quantcheck.io.build import RawTensor
from quantcheck.runtimes.musubi import H3_CONFIG

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, marker, nvfp4, t
from .._case import RuleCase

ALL = {"target": "all"}
#: every release, for a rule whose effect the newest release drops
RELEASES = {"target": "musubi@all"}
#: a Qwen3-VL-32B Linear and its embedding, as MiniMax H3's text encoder file names them
MLP, EMBED = "model.layers.0.mlp.down_proj", "model.embed_tokens"


def mu(effect: str) -> dict[str, str]:
    return {"sglang": "none", "comfyui": "none", "musubi": effect}


def te(*layers: list[RawTensor]) -> list[RawTensor]:
    """Tensors the family detection takes for Qwen3-VL-32B (MiniMax H3's text encoder)."""
    base = [
        t("model.layers.0.post_attention_layernorm.weight", "BF16", (5120,)),
        t("model.layers.49.self_attn.q_proj.weight", "BF16", (16, 16)),
        t("visual.deepstack_merger_list.0.norm.weight", "BF16", (16,)),
    ]
    return [*base, *(x for layer in layers for x in layer)]


def int8_embedding(p: str = EMBED) -> list[RawTensor]:
    """An int8_tensorwise embedding of an NVFP4 text encoder (per-row F32 scale)."""
    return [*int8(p)[:2], marker(p, {"format": "int8_tensorwise"})]


def nvfp4_te() -> list[RawTensor]:
    return te(nvfp4(MLP), int8_embedding())


def h3(*layers: list[RawTensor]) -> list[RawTensor]:
    """Tensors the family detection takes for the MiniMax H3 DiT."""
    base = [
        t("video_patch_proj.weight", "BF16", (64, 96)),
        t("audio_patch_proj.weight", "BF16", (64, 64)),
    ]
    return [*base, *(x for layer in layers for x in layer)]


#: the header entry MiniMax H3's loader builds the full transformer from
H3_META = {"config": json.dumps({"transformer": H3_CONFIG})}


def _marker_2d() -> list[RawTensor]:
    data = json.dumps(INT8_CONVROT).encode()
    return [*int8()[:2], RawTensor(f"{P}.comfy_quant", "U8", (1, len(data)), data)]


CASES = [
    RuleCase(
        "QC750",
        "musubi-header-only-markers",
        file(lambda: int8()[:2], header_meta({P: INT8_CONVROT})),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="missing sibling tensors",
    ),
    RuleCase(
        "QC751",
        "musubi-fp8-file",
        file(fp8),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="unsupported .comfy_quant format",
    ),
    RuleCase(
        "QC752",
        "musubi-int8-without-convrot",
        file(lambda: int8(mark={"format": "int8_tensorwise", "convrot_groupsize": 16})),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="convrot must be true",
    ),
    RuleCase(
        "QC753",
        "musubi-group-not-power-of-four",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": 32})),
        mu("fails"),
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": 64})),
        check_kwargs=ALL,
        message="exact power of four",
    ),
    RuleCase(
        "QC754",
        "musubi-weight-not-i8",
        file(lambda: int8(weight=("BF16", (64, 64)))),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="weight must be INT8/I8",
    ),
    RuleCase(
        "QC755",
        "musubi-scale-not-n-by-1",
        file(lambda: int8(scale=("F32", (64,)))),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="scale shape must be (64, 1)",
    ),
    RuleCase(
        "QC756",
        "musubi-marker-2d",
        file(_marker_2d),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="must be one-dimensional",
    ),
    RuleCase(
        "QC757",
        "musubi-both-scale-names",
        file(lambda: [*int8(), t(f"{P}.scale_weight", "F32", (64, 1))]),
        mu("degraded"),  # 725869d refuses it; 0.3.6 keeps one of the two
        file(int8),
        check_kwargs=ALL,
        message="Duplicate normalized safetensors key",
    ),
    RuleCase(
        "QC758",
        "musubi-convrot-one",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot": 1})),
        mu("none"),  # 725869d refuses it; 0.3.6 loads it as ConvRot
        file(int8),
        check_kwargs=RELEASES,
        message="convrot is 1, not true",
    ),
    RuleCase(
        "QC759",
        "musubi-scale-weight-f16",
        file(lambda: [int8()[0], t(f"{P}.scale_weight", "F16", (64, 1)), int8()[2]]),
        mu("none"),  # 725869d refuses it; 0.3.6 passes it through
        file(lambda: [int8()[0], t(f"{P}.scale_weight", "F32", (64, 1)), int8()[2]]),
        check_kwargs=RELEASES,
        message="scale_weight is F16",
    ),
    RuleCase(
        "QC760",
        "musubi-unmarked-fp8-weight",
        file(lambda: [t(f"{P}.weight", "F8_E4M3", (64, 64))]),
        mu("fails"),
        file(lambda: [t(f"{P}.weight", "BF16", (64, 64))]),
        check_kwargs=ALL,
        message="already in F8_E4M3 format",
        twin_allows=("QC314",),
    ),
    RuleCase(
        "QC761",
        "musubi-u16-tensor",
        file(lambda: [*int8(), t("positions", "U16", (4,))]),
        mu("fails"),
        file(lambda: [*int8(), t("positions", "I16", (4,))]),
        check_kwargs=ALL,
        message="U16",
    ),
    RuleCase(
        "QC762",
        "musubi-text-encoder-nvfp4-with-convrot",
        file(lambda: te(nvfp4(MLP), int8("model.layers.0.self_attn.q_proj"))),
        mu("fails"),
        file(nvfp4_te),
        check_kwargs=ALL,
        message="Unsupported ComfyUI quantization format combination",
        twin_allows=("QC861", "QC862", "QC864", "QC763"),
    ),
    RuleCase(
        "QC763",
        "musubi-text-encoder-nvfp4",
        file(nvfp4_te),
        mu("none"),  # 725869d refuses it; 0.3.6 loads it
        file(lambda: te(int8(MLP))),
        check_kwargs=RELEASES,
        message="0.3.6 loads it with NvFp4Quantizer",
        twin_allows=("QC862", "QC864"),
    ),
    RuleCase(
        "QC764",
        "musubi-nvfp4-scale-2-not-scalar",
        file(lambda: te([*nvfp4(MLP)[:2], t(f"{MLP}.weight_scale_2", "F32", (1,)), nvfp4(MLP)[3]])),
        mu("fails"),
        file(nvfp4_te),
        check_kwargs=ALL,
        message="must be a F32 scalar",
        twin_allows=("QC861", "QC862", "QC864", "QC763"),
    ),
    RuleCase(
        "QC765",
        "musubi-text-encoder-convrot-embedding",
        file(lambda: te(int8(MLP), int8(EMBED))),
        mu("fails"),
        file(lambda: te(int8(MLP))),
        check_kwargs=ALL,
        message="declares missing module",
        twin_allows=("QC862", "QC864"),
    ),
    RuleCase(
        "QC766",
        "musubi-h3-without-config",
        file(lambda: h3(int8("blocks.0.attn.qkv_proj"))),
        mu("fails"),
        file(lambda: h3(int8("blocks.0.attn.qkv_proj")), H3_META),
        check_kwargs=ALL,
        message="missing config metadata",
        twin_allows=("QC862", "QC864"),
    ),
]
