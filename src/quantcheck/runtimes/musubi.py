"""musubi-tuner as a target (`--target musubi`): its release and the generic codes' effects.

What "loading" means here: musubi-tuner loads DiT checkpoints (and the Qwen3-VL text encoder)
to train LoRAs on them or to generate. A BF16/FP16 checkpoint it quantizes itself; a file
that is already quantized must pass `inspect_convrot_int8_artifact`
(kohya-ss/musubi-tuner @725869d `src/musubi_tuner/modules/convrot_int8_utils.py`), which
admits only ConvRot INT8 triples (I8 [N, K] weight, F32 [N, 1] scale, U8 1-D `.comfy_quant`
with format int8_tensorwise, convrot true and a power-of-four group dividing K) and raises
"Invalid ConvRot INT8 artifact {path}, layer {m}: ..." for anything else. That gate is what
this target models; its verdict "ok" means the gate passes. The release is named by that
commit (no musubi-tuner release containing it was found).

The exact released topologies are family data, not a musubi refusal: PR #1024's MiniMax H3
loaders validated them (the full and pruned transformers' 250 / 200 ConvRot layers and their
group sizes, `_validate_h3_convrot_topology` as the PR's tests/test_minimax_h3_model.py shows
it; the Qwen3-VL-32B text encoder's 350, `_validate_h3_text_encoder_convrot_topology`), but
the code that followed loads whatever layers a file quantizes (tests/test_minimax_h3_model.py
@2f71ca09 `test_full_loader_accepts_nonpublished_convrot_layers_permissively`: "instead of
being rejected on exact topology"; minimax_h3/text_encoder.py @c03801fb: "the file dictates the
quantized layers"). So a deviating file draws no musubi finding; QC864 names a file that is
exactly a released topology (families/table.py `topologies`), and tests/rules/diff_musubi runs
the PR's text-encoder check against it.

Not modelled: that later code's own pre-quantized path (PR #1025's `ConvRotInt8Quantizer`
with `parse_comfy_quant_spec`, whose tests refuse the same marker faults), and
`nvfp4_utils.py` @456eceb (Comfy NVFP4 + AWQ frozen text encoders, K % 32), a separate
text-encoder path; the open PR #1081 (NVFP4 DiT, mixed NVFP4/INT8).

Standard library only (the check path imports it); codes are strings (the rule registry
imports the runtimes).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

FAILS, DEGRADED = Effect.FAILS, Effect.DEGRADED

#: The container codes its reader refuses.
READER_REFUSES: tuple[str, ...] = tuple(f"QC1{n:02d}" for n in (*range(1, 7), *range(9, 19), 20))
#: What each generic code does to musubi (codes not listed: nothing, see LEFT_NONE).
EFFECTS: dict[str, Effect] = {
    # container: musubi reads headers with its own MemoryEfficientSafeOpen and the tensors
    # with torch; a broken container stops it [GUESS for gaps/overlaps/trailing bytes].
    **dict.fromkeys(READER_REFUSES, FAILS),
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
}

#: Why each code of EFFECTS does what it does to musubi (one line each).
WHY: dict[str, str] = {
    **dict.fromkeys(
        READER_REFUSES,
        "musubi reads headers with its own MemoryEfficientSafeOpen and the tensors with torch; "
        "a broken container stops it [GUESS for gaps/overlaps/trailing bytes]",
    ),
    "QC107": "json.loads keeps the last of duplicate keys",
    **dict.fromkeys(
        ("QC201", "QC202", "QC203", "QC204", "QC205", "QC207"),
        "tensor markers: U8 (checked while scanning), decoded as UTF-8 then json.loads, which "
        "refuses a BOM, NUL bytes and non-objects",
    ),
    **dict.fromkeys(
        ("QC501", "QC502", "QC503", "QC504", "QC506"),
        "a key seen twice across files is refused ('Duplicate normalized safetensors key'); the "
        "index is validated by resolve_safetensors_files; a missing shard's tensors are missing",
    ),
    **dict.fromkeys(
        ("QC401", "QC402", "QC403", "QC407", "QC408"), "the INT8 scales are used as stored"
    ),
    "QC861": "the same weights run: the quality producers keep these layers for is lost",
    "QC862": "the model's weights are missing: the layers they belong to cannot be built",
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
    "QC108": "__metadata__ is not used to load the ConvRot layers [GUESS]",
    "QC119": "no sub-byte dtypes are read",
    "QC122": "header length need not be a multiple of 8",
    "QC121": "one code for a malformed entry (fails everywhere: sglang and ComfyUI say so) and "
    "for harmless extra entry fields (explicitly unaffected), so it is not overridden here",
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
    "QC308": "NVFP4/MXFP8 are refused anyway (QC751)",
    "QC311": "its formats are refused anyway (QC751)",
    "QC312": "W4A8 is refused anyway (QC750/QC751)",
    "QC313": "W4A8 is refused anyway (QC750/QC751)",
    "QC314": "an unmarked F8/BF16 weight without a scale is not an artifact; I8 is QC750",
    "QC315": "legacy scaled_fp8 has no .weight_scale: not an artifact",
    "QC316": "its own rule is QC752",
    "QC318": "NVFP4 is refused anyway (QC751)",
    "QC319": "ComfyUI's dequantize path",
    "QC320": "its own rule is QC753 (no default group)",
    "QC321": "packed formats are refused anyway (QC750/QC751)",
    "QC404": "MXFP8 is refused anyway (QC751)",
    "QC405": "NVFP4 is refused anyway (QC751)",
    "QC406": "NVFP4/MXFP8 are refused anyway (QC751)",
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

RELEASES: tuple[Release, ...] = (
    Release(
        "725869d",
        note="kohya-ss/musubi-tuner 725869d: inspect_convrot_int8_artifact (ConvRot INT8 "
        "triples only; PR #1024 merged).",
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
        doc="musubi-tuner's pre-quantized DiT gate, inspect_convrot_int8_artifact "
        "(kohya-ss/musubi-tuner 725869d, modules/convrot_int8_utils.py): ConvRot INT8 "
        "triples from .comfy_quant tensors only; a pass means musubi accepts the file.",
        default_target=False,
        messages="quantcheck.rules.musubi.messages:PATTERNS",
        folder="quantcheck.rules.musubi",
    )
