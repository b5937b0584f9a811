"""QC86x: the model family's contract — what the model a checkpoint is needs of its layers.

The family and its data (the shapes ComfyUI's detection reads, the layers producers keep in
high precision, the reference layouts) are `quantcheck.families`; the checks are
`rules/family/checks.py`.
"""

from __future__ import annotations

from quantcheck.families.table import CQ_FLUX, CQ_LTX2, CTQ, DETECT, GGUF, INT8FAST, MUSUBI_H3
from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
D = Safety.DISPLAY

RULES = [
    Rule(
        "QC860",
        "family-detect-packed",
        E,
        "a layer ComfyUI's model detection reads is stored packed",
        effects("none", "fails"),
        D,
        "No layer whose stored shape ComfyUI's detection reads (families/table.py `reads`) is "
        "stored in a format whose weight shape differs from the logical [N, K] in the "
        "dimension read: NVFP4, W4A4, W4A8 and AWQ store K/2 or less, so the reads of K "
        "(Flux/Flux.2/Chroma img_in, txt_in, vector_in; Qwen-Image img_in; Z-Image "
        "cap_embedder.1; MiniMax H3 condition_proj; SD3.5 y_embedder and context_embedder; "
        "LTX-2 transformer_blocks.0.attn2.to_k; HunyuanVideo 1.5 txt_in.input_embedder) "
        "change; reads of N (Wan head.head, blocks.0.ffn.0) and FP8, INT8 and MXFP8 (which "
        "store [N, K]) do not.",
        "ComfyUI computes the model's config (in_channels, context_in_dim, hidden size, ...) "
        "from those stored shapes before any layer is built. From a packed weight it computes "
        "half the real value and builds a model the file does not fit: a size-mismatch error "
        "at load, or a wrong model (ComfyUI PR #15273, open).",
        "flux2 img_in: nvfp4, U8 weight [6144, 64] (logical K 128): ComfyUI computes "
        "in_channels=64",
        "Keep the detection layers in BF16 (quantcheck quantize --family auto does), or store "
        "them in FP8/INT8/MXFP8, which keep the logical shape.",
        f"{DETECT}: each family's branch reads `.shape[0]`/`.shape[1]` of these weights (read "
        "at the pin; run on stand-ins in tests/rules/comfyui/diff).",
    ),
    Rule(
        "QC861",
        "family-keep-high-precision",
        W,
        "a layer the family's producers keep in high precision is quantized",
        effects("degraded", "degraded"),
        D,
        "No layer that the family's producers keep in BF16/F32 (families/table.py `keep`, per "
        "family: convert_to_quant MODEL_FILTERS/AVOID_KEY_NAMES, comfy-quants contracts, "
        "ComfyUI-GGUF keys_hiprec/keys_noquant, INT8-Fast's H3 entry, the official files) is "
        "stored quantized, unless the file is exactly a released topology that quantizes it "
        "(QC864 names it).",
        "Producers keep embedders, modulation, final layers, norms stored as 2-D and some "
        "edge blocks in high precision because quantizing them costs quality (black or "
        "noisy output) or breaks loading (an nn.Parameter quantized, a norm of the wrong "
        "size: convert_to_quant #48). The finding names who keeps the layer and why.",
        "zimage cap_embedder.0 stored nvfp4 (convert_to_quant --zimage keeps it: a norm)",
        "Requantize from the BF16 model keeping these layers (quantcheck quantize --family "
        "auto), or confirm the output quality yourself.",
        f"{CTQ} (MODEL_FILTERS, AVOID_KEY_NAMES; the wheel was read); {GGUF}; {CQ_FLUX}, "
        f"flux2.py, {CQ_LTX2}; {INT8FAST}; {MUSUBI_H3}. Effect inferred: quality.",
    ),
    Rule(
        "QC862",
        "family-layers-missing",
        E,
        "layers of the family's layout are missing",
        effects("fails", "fails"),
        D,
        "Every module of the family's reference layout is present: each top-level module, "
        "and every module of each numbered block up to the last block the file has (variant "
        "modules, families/table.py `optional`, may be absent).",
        "A truncated export or a missing shard leaves weights the model needs: ComfyUI "
        "reports 'unet missing' and runs with uninitialised weights; sglang refuses the "
        "missing parameters.",
        "flux2 double_blocks.7.img_mlp.0 absent while blocks 0-7 exist",
        "Re-export the model, or add the missing shard.",
        "Reference layouts: ComfyUI 783545f6's own model classes built with each family's "
        "published config (tools/family_keys.py, tests/data/families/). Effects inferred "
        "from the loaders' strict=False / parameter checks.",
    ),
    Rule(
        "QC863",
        "family-layers-extra",
        E,
        "modules the family's layout does not have",
        effects("degraded", "degraded"),
        D,
        "Every module belongs to the family's reference layout (or is a known variant "
        "module, families/table.py `optional`).",
        "Modules no variant of the family has are a wrong file in a shard set, another "
        "model's weights merged in, or a different export's names: the loader ignores them "
        "('unet unexpected') while the weights it needed may be the ones missing.",
        "flux double_blocks.0.img_attn.extra_proj",
        "Remove the stray tensors or the wrong shard; check the export's naming.",
        "Reference layouts as QC862. Effect inferred: ComfyUI loads with strict=False and "
        "logs unexpected keys.",
    ),
    Rule(
        "QC864",
        "family-topology",
        INFO,
        "the quantization topology of the family's blocks",
        effects(),
        None,
        "Reported for every quantized checkpoint of a known family: how many block linears "
        "are quantized, which whole blocks are kept in high precision, and the recipe that "
        "matches (all blocks, the 'skip edges' recipe that keeps the first and last blocks, "
        "or a mixed one); a file whose quantized layers are exactly those of a released file "
        "(families/table.py `topologies`: the official MiniMax H3 full, pruned and Qwen3-VL-32B "
        "INT8 ConvRot files, 250/200/350 layers with their ConvRot group sizes) is named as it.",
        "Producers differ in which blocks they keep (convert_to_quant --ltxv2 keeps blocks 0, "
        "1, 46, 47; ComfyUI-INT8-Fast's 'skip edges' keeps 0, 1, 48, 49 of MiniMax H3); the "
        "topology says which recipe made the file, and whether it is the released one.",
        "181/200 block linears quantized; 19 kept BF16 (first and last blocks): the 'skip "
        "edges' recipe",
        "Nothing to fix: information.",
        f"{CTQ} LTXV2_LAYER_KEYNAMES; {CQ_LTX2} OFFICIAL_KEPT_BLOCKS; {INT8FAST}; the "
        f"released topologies: {MUSUBI_H3} and the PR's loader checks (families/table.py).",
    ),
]
