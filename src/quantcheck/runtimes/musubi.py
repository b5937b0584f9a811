"""musubi-tuner as a target (`--target musubi`): its releases and the generic codes' effects.

What "loading" means here: musubi-tuner loads DiT checkpoints (and the Qwen3-VL text encoder of
MiniMax H3) to train LoRAs on them or to generate. A BF16/FP16 checkpoint it quantizes itself;
a file that is already quantized passes musubi's pre-quantized gate, which is what this target
models: its verdict "ok" means the gate takes the file. Two steps are modelled.

`725869d` (PR #1024's branch, kohya-ss/musubi-tuner @725869d
`src/musubi_tuner/modules/convrot_int8_utils.py`): `inspect_convrot_int8_artifact`, a header
gate that admits only ConvRot INT8 triples (I8 [N, K] weight, F32 [N, 1] scale, U8 1-D
`.comfy_quant` with format int8_tensorwise, convrot exactly true and a power-of-four group
dividing K) and raises "Invalid ConvRot INT8 artifact {path}, layer {m}: ...". 0.3.6 no
longer has it: PR #1025's loader took its place.

`0.3.6` (the newest step, what `--target musubi` means): musubi-tuner 0.3.6 (pyproject), read in
the code index's copy of wenyifancc/musubi-tuner @2253ebee, a fork at upstream 0.3.6 (README to
2026-09-27, PR #1139); the loaders reached `main` with PR #1030 (dev to main, 0.3.5, 2026-09-16).
Every pre-quantized file streams through `ConvRotInt8Quantizer.load_and_quantize`
(`modules/convrot_int8_utils.py`, PR #1025; `parse_comfy_quant_spec` and
`modules/comfy_quant_utils.py` `decode_comfy_quant_spec`, PR #1031): MiniMax H3's DiT loader
takes that path whenever a `.comfy_quant` tensor exists (`minimax_h3/model.py`
`load_h3_transformer`, `has_comfy_quant_tensors`), Krea 2 with `--convrot_int8`
(`krea2/krea2_utils.py` `load_krea2_dit`). It reads tensor markers only (never the header's
`_quantization_metadata`) and every tensor through `MemoryEfficientSafeOpen`, refuses any
format but int8_tensorwise with a truthy convrot (1 and "yes" pass, as 725869d did not), a
weight_scale or one-byte weight without a marker, and no longer refuses a module holding both
weight_scale and scale_weight (the later in the header wins). MiniMax H3's text encoder
(`minimax_h3/text_encoder.py` `load_h3_text_encoder`) routes by the markers' formats
(`detect_comfy_quant_formats`): ConvRot INT8 only, or NVFP4 (+ AWQ pre_quant_scale) Linears with
an int8_tensorwise embedding (`modules/nvfp4_utils.py` `NvFp4Quantizer`, PR #1031); any other
mix is refused. The per-rule evidence is in rules/musubi/catalog.py; tests/rules/musubi/diff
runs these functions (source.py says from which copies).

The exact released topologies are family data, not a musubi refusal: PR #1024's MiniMax H3
loaders validated them (the full and pruned transformers' 250 / 200 ConvRot layers and their
group sizes, `_validate_h3_convrot_topology` as the PR's tests/test_minimax_h3_model.py shows
it; the Qwen3-VL-32B text encoder's 350, `_validate_h3_text_encoder_convrot_topology`), but
0.3.6 loads whatever layers a file quantizes ("the file dictates the quantized layers",
`load_h3_text_encoder`; tests/test_minimax_h3_model.py @2f71ca09
`test_full_loader_accepts_nonpublished_convrot_layers_permissively`), as long as each is a Linear
of the model (an embedding is refused, QC765). QC864 names a file that is exactly a released
topology (families/table.py `topologies`).

MiniMax H3's DiT loader also reads the header before the gate (`minimax_h3/model.py`
`classify_h3_transformer`): the published `config` entry in `__metadata__` for a full (not
pruned) transformer, no metadata text naming fp8/nvfp4, the pruned layout (QC766).

Not modelled [READ]: H3's DiT loader quantizes the BF16 layers it targets (attn/mlp/adaln_proj
Linears) of a pre-quantized file at load; the strict `load_state_dict` after the gate refuses
tensors the model does not have (QC302, QC863); other models' text encoders (Krea 2's
Qwen3-VL-4B) were not read for pre-quantized files. Open PR #1081 (NVFP4 DiT and mixed
NVFP4/ConvRot INT8 per module for Krea 2, `foreign_formats`) had not merged in the newest code
read.

Standard library only (the check path imports it); codes are strings (the rule registry
imports the runtimes).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

FAILS, DEGRADED, NONE = Effect.FAILS, Effect.DEGRADED, Effect.NONE

#: The container codes its reader refuses.
READER_REFUSES: tuple[str, ...] = tuple(f"QC1{n:02d}" for n in (*range(1, 7), *range(9, 19), 20))
#: What each generic code does to musubi (codes not listed: nothing, see LEFT_NONE).
EFFECTS: dict[str, Effect] = {
    # container: musubi reads headers with its own MemoryEfficientSafeOpen and the tensors
    # with torch; a broken container stops it [GUESS for gaps/overlaps/trailing bytes].
    **dict.fromkeys(READER_REFUSES, FAILS),
    "QC121": FAILS,  # a malformed entry (its harmless extra-field variant affects no runtime)
    "QC107": DEGRADED,  # json.loads keeps the last of duplicate keys
    # tensor markers: U8 (checked while scanning), bytes decoded as UTF-8 then json.loads,
    # which refuses a BOM, NUL bytes and non-objects.
    **dict.fromkeys(("QC201", "QC202", "QC203", "QC204", "QC205", "QC207"), FAILS),
    # shards: a key seen twice across files is refused ("Duplicate normalized safetensors
    # key"); the index is validated by resolve_safetensors_files.
    **dict.fromkeys(("QC501", "QC502", "QC503", "QC504", "QC506"), FAILS),
    # numerics: the INT8 scales are used as stored.
    **dict.fromkeys(("QC401", "QC402", "QC403", "QC407", "QC408"), DEGRADED),
    # the model family's contract (QC86x, issue 26)
    "QC861": DEGRADED,
    "QC862": FAILS,
    # NVFP4 as the H3 text encoder's loader reads it (0.3.6): the block scales are taken as
    # swizzled and the marker's convrot is not read
    "QC318": DEGRADED,
    "QC406": DEGRADED,
}

#: Why each code of EFFECTS does what it does to musubi (one line each).
WHY: dict[str, str] = {
    **dict.fromkeys(
        READER_REFUSES,
        "musubi reads headers with its own MemoryEfficientSafeOpen and the tensors with torch; "
        "a broken container stops it [GUESS for gaps/overlaps/trailing bytes]",
    ),
    "QC107": "json.loads keeps the last of duplicate keys",
    "QC121": "its reader reads each entry's dtype and shape (725869d: every entry; 0.3.6 also "
    "data_offsets, reading every tensor); the harmless extra-field variant affects no runtime",
    **dict.fromkeys(
        ("QC201", "QC202", "QC203", "QC204", "QC205", "QC207"),
        "tensor markers: U8 (checked while scanning), decoded as UTF-8 then json.loads, which "
        "refuses a BOM, NUL bytes and non-objects",
    ),
    **dict.fromkeys(
        ("QC501", "QC502", "QC503", "QC504", "QC506"),
        "a key seen twice across files is refused (725869d: 'Duplicate normalized safetensors "
        "key'; 0.3.6's H3 DiT loader: 'Duplicate MiniMax-H3 tensor header', its quantizers keep "
        "the later copy [READ]); the index is validated by resolve_safetensors_files; a missing "
        "shard's tensors are missing",
    ),
    **dict.fromkeys(
        ("QC401", "QC402", "QC403", "QC407", "QC408"), "the INT8 scales are used as stored"
    ),
    "QC861": "the same weights run: the quality producers keep these layers for is lost",
    "QC862": "the model's weights are missing: the layers they belong to cannot be built",
    "QC318": "0.3.6's NVFP4 text-encoder loader (NvFp4Quantizer) never reads convrot: rotated "
    "weights run unrotated (a DiT file is refused anyway, QC751)",
    "QC406": "0.3.6's NVFP4 text-encoder loader unswizzles every block scale (from_blocked): "
    "row-major scales land on the wrong blocks (a DiT file is refused anyway, QC751)",
}
#: Generic codes consciously left NONE for musubi, with the reason.
LEFT_NONE: dict[str, str] = {
    **dict.fromkeys(
        ["QC800", "QC801", "QC802", "QC803"],
        "a GPU report about comfy-kitchen's kernels (check --gpu), which musubi does not run "
        "(its own Triton kernel: its --gpu entry)",
    ),
    **dict.fromkeys(
        [*(f"QC83{n}" for n in range(8)), "QC840"],
        "a LoRA on a quantized base as ComfyUI loads it (quantcheck lora); this runtime's "
        "own LoRA path is runtimes/musubi_lora.py, judged by QC838/QC839",
    ),
    **dict.fromkeys(
        ["QC838", "QC839"],
        "no effect by default: a QC838 finding names this runtime in its own effects when "
        "this runtime's LoRA merge loses the LoRA; QC839 is a note",
    ),
    "QC108": "__metadata__ is not used to load the ConvRot layers; only MiniMax H3's DiT loader "
    "(0.3.6) reads it, its own rule QC766 [GUESS for other values]",
    "QC119": "725869d reads no sub-byte tensor; 0.3.6 reads every one and has no torch dtype "
    "for them: its own rule is QC761",
    "QC122": "header length need not be a multiple of 8",
    "QC206": "no size limit on .comfy_quant tensors",
    "QC208": "the header _quantization_metadata is not read",
    "QC209": "the header _quantization_metadata is not read",
    "QC210": "only the tensor marker is read",
    "QC211": "only the tensor marker is read",
    "QC212": "its own rule is QC751 (any format but int8_tensorwise)",
    "QC213": "its own rule is QC751",
    "QC214": "its own rule is QC751",
    "QC215": "underscore keys are not read",
    "QC216": "unknown keys are not read",
    "QC218": "its own rule is QC752 (convrot must be exactly true)",
    "QC219": "its own rule is QC753 (powers of four >= 4, 1024 included)",
    "QC220": "group_size is not read (its formats are QC751)",
    "QC221": "its own rules cover the keys it reads",
    "QC222": "the header _quantization_metadata is not read",
    "QC223": "its own rule is QC750 (a .comfy_quant needs a weight and a scale)",
    "QC225": "W4A8 is refused anyway (QC750/QC751)",
    "QC301": "its own rule is QC750",
    "QC302": "extra tensors are left to the model loader",
    "QC303": "its own rule is QC754",
    "QC304": "its own rule is QC754",
    "QC305": "its own rule is QC755",
    "QC306": "its own rule is QC754",
    "QC307": "its own rule is QC755",
    "QC308": "NVFP4/MXFP8 are refused anyway (QC751); the H3 text encoder's NVFP4 loader "
    "(0.3.6) takes the stored rows as the output width [READ, not modelled]",
    "QC311": "its formats are refused anyway (QC751); the H3 text encoder's NVFP4 sizes are its "
    "own rule QC764",
    "QC312": "W4A8 is refused anyway (QC750/QC751)",
    "QC313": "W4A8 is refused anyway (QC750/QC751)",
    "QC314": "725869d: an unmarked F8/BF16 weight without a scale is not an artifact; I8 is "
    "QC750; 0.3.6 refuses any unmarked one-byte weight, its own rule QC760",
    "QC315": "725869d: legacy scaled_fp8 has no .weight_scale, not an artifact; 0.3.6 refuses "
    "its unmarked F8 weights (QC760)",
    "QC316": "its own rule is QC752",
    "QC319": "ComfyUI's dequantize path",
    "QC320": "its own rule is QC753 (no default group)",
    "QC321": "packed formats are refused anyway (QC750/QC751)",
    "QC404": "MXFP8 is refused anyway (QC751)",
    "QC405": "NVFP4 is refused anyway (QC751); the H3 text encoder's NVFP4 loader slices the "
    "padding off (from_blocked)",
    "QC409": "W4A8 is refused anyway (QC750)",
    "QC505": "the index is not compared with the shards",
    **{
        c: "sglang's and ComfyUI's own rules"
        for c in (f"QC6{n:02d}" for n in (*range(1, 25), *range(30, 39), 50, 51))
    },
    "QC860": ("ComfyUI's model detection; musubi-tuner's own model detection was not read"),
    "QC863": (
        "modules outside the family's layout: musubi-tuner's handling of unexpected "
        "keys was not read"
    ),
    "QC864": "information: musubi-tuner's code after PR #1024 loads a ConvRot file whatever "
    "layers it quantizes (PR #1024 itself refused all but the released topologies)",
}

#: musubi's own codes that 0.3.6's loaders add (725869d's header gate never refuses so).
NEW_AT_036: tuple[str, ...] = ("QC760", "QC761", "QC762", "QC764", "QC765", "QC766")
#: 725869d's refusals that 0.3.6 no longer makes.
GONE_AT_036: tuple[str, ...] = ("QC758", "QC759", "QC763")
#: The family whose files 0.3.6 loads as MiniMax H3's text encoder (`load_h3_text_encoder`).
TEXT_ENCODER_FAMILY = "qwen3vl_32b"
#: Its modules that are nn.Embedding, not nn.Linear, in transformers' Qwen3VLModel (file names,
#: before `normalize_h3_text_encoder_key`) [READ].
TEXT_ENCODER_EMBEDDINGS: tuple[str, ...] = ("model.embed_tokens", "visual.pos_embed")
#: The companions only NVFP4 modules have (a module without a marker may not hold them).
NVFP4_ONLY: tuple[str, ...] = ("weight_scale_2", "pre_quant_scale")
#: The dtypes 0.3.6's reader (`MemoryEfficientSafeOpen._get_torch_dtype`) has a torch dtype
#: for; it reads every tensor, and any other dtype with bytes stops it.
READABLE_DTYPES: frozenset[str] = frozenset(
    ["F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E5M2", "F8_E4M3"]
)
#: One-byte dtypes of that table (`dtype.itemsize == 1`): a weight of one of them needs a marker.
ONE_BYTE_DTYPES: frozenset[str] = frozenset({"I8", "U8", "BOOL", "F8_E5M2", "F8_E4M3"})
#: The family whose files 0.3.6 loads as MiniMax H3's DiT (`minimax_h3/model.py`
#: `load_h3_transformer`), and the published transformer config its `classify_h3_transformer`
#: wants under the header's `config` entry, `{"transformer": {...}}`, for a full (not pruned)
#: file (`_PUBLISHED_CONFIG_FIELDS`; interface facts: field names and values).
H3_FAMILY = "minimax_h3"
H3_CONFIG: dict[str, object] = {
    "hidden_size": 5376,
    "num_layers": 50,
    "token_refiner_num_layers": 2,
    "num_attention_heads": 56,
    "attention_head_dim": 128,
    "ffn_hidden_size": 14336,
    "latents_dim": 24,
    "audio_latents_dim": 32,
    "patch_size": [1, 2, 2],
    "text_dim": 5120,
    "timestep_input_dim": 256,
    "time_embed_hidden_size": 5376,
    "time_embed_dim": 2688,
    "adaln_out_features": 96768,
    "final_adaln_out_features": 10752,
    "rope_inv_freq_len": 16,
    "norm_eps": 1e-5,
    "qk_norm_eps": 1e-5,
    "final_norm_eps": 1e-5,
    "image_model": "minimax_h3",
}
#: Words that make `parse_h3_transformer_config` refuse a file when any other metadata entry
#: holds them: with .comfy_quant tensors, and without.
H3_BLOCKED_WORDS: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("fp8", "nvfp4"),
    ("convrot", "int8", "fp8", "nvfp4", "quantized"),
)
#: A pruned file (it has `adaln_t_table`): that table's dtype and shape, the AdaLN projections'
#: shapes (blocks.{0..49} and final_layer), and the time embedder it must not have.
H3_PRUNED_TABLE = ("adaln_t_table", "F32", (1025, 8))
H3_PRUNED_ADALN = {"blocks.{i}.adaln_proj.linear": 96768, "final_layer.adaln_proj.linear": 10752}
H3_PRUNED_BLOCKS = 50

RELEASES: tuple[Release, ...] = (
    Release(
        "725869d",
        dict.fromkeys(NEW_AT_036, NONE),
        note="kohya-ss/musubi-tuner 725869d (PR #1024's branch): inspect_convrot_int8_artifact, "
        "ConvRot INT8 triples only, read from the header.",
    ),
    Release(
        "0.3.6",
        {
            **dict.fromkeys(NEW_AT_036, FAILS),
            **dict.fromkeys(GONE_AT_036, NONE),
            "QC757": DEGRADED,
        },
        note="musubi-tuner 0.3.6 (2026-09-27; the loaders reached main in 0.3.5 by PR #1030): "
        "ConvRotInt8Quantizer.load_and_quantize (PR #1025) for every pre-quantized file, and "
        "the MiniMax H3 text encoder's NVFP4 route (NvFp4Quantizer, PR #1031).",
        aliases=("v0.3.6",),
    ),
)


def musubi_runtime() -> Runtime:
    """The musubi-tuner runtime record."""
    return Runtime(
        "musubi",
        "musubi-tuner",
        RELEASES,
        checks="quantcheck.rules.musubi.checks:MusubiChecks",
        gpu="quantcheck.rules.musubi.gpu:MUSUBI_GPU",
        effects=dict(EFFECTS),
        reasons={**WHY, **LEFT_NONE},
        doc="musubi-tuner's pre-quantized gate: 0.3.6's ConvRotInt8Quantizer.load_and_quantize "
        "(ConvRot INT8 from .comfy_quant tensors; MiniMax H3's text encoder also NVFP4 with an "
        "INT8 embedding), and 725869d's inspect_convrot_int8_artifact; a pass means musubi "
        "accepts the file.",
        default_target=False,
        messages="quantcheck.rules.musubi.messages:PATTERNS",
        folder="quantcheck.rules.musubi",
    )
