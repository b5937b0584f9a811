"""SD.Next (vladmandic/sdnext) as data: its native transformer loader for a UNet/DiT file.

Read at snapshot d11a619 (2026-07-24; the modelled release keeps that commit's name: the
dated SD.Next release that contains it was not found):
- `pipelines/native_transformer.py`: `read_quantization_metadata` (header
  `_quantization_metadata`; malformed -> OverrideArchMismatch), `transcode_quant_metadata`
  (each header entry whose `<layer>.weight` exists becomes that layer's marker tensor,
  replacing a tensor marker whole; entries without a weight are skipped), `detect_comfy_quant`
  (formats int8_tensorwise, float8_e4m3fn, nvfp4 only, one format per file; convrot group a
  power of 4; nvfp4 without convrot and with group_size 16; markers read at the top level
  only, never under `params`), `build_component_prequantized` (weight dtype per format; the
  marked module must be an nn.Linear; convrot group divides in_features; `input_scale`
  dropped; `full_precision_matrix_mult` layers kept on the dequant path), `adopt_nvfp4_layer`
  (block scales in the padded swizzled layout: numel roundup(N,128) * roundup(K/16,4)),
  `validate_state_dict_load` (any unexpected or missing key -> OverrideArchMismatch).
- `pipelines/generic_transformer.py` (~L132): OverrideArchMismatch is caught, logged as a
  warning, the UNet override reset to "Default" and the BASE model's transformer loaded
  instead. Nothing raises: the user gets images from another model. SD.Next's refusals are
  therefore `degraded` (severity error), not `fails`; `fails` is kept for what raises past
  that handler (an unreadable file, a convrot group int() cannot read, shape errors in
  load_state_dict).
- `modules/model_probe.py` `detect_quant`: labels a marker-only file by its weight dtype.

Which module a marker names (nn.Linear or not) depends on the model class, which a file does
not say: quantcheck cannot check it (a 2-D weight is taken for a linear).
Standard library only (the check path imports it); codes are strings.
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

NAME = "sdnext"
TITLE = "SD.Next"
RELEASE = "d11a619"
#: What the messages say SD.Next does with a file it refuses (instead of raising).
FALLBACK = (
    "SD.Next refuses the file without raising: it falls back to the base model's transformer "
    "(warning in its log only)"
)

F, D, N = Effect.FAILS, Effect.DEGRADED, Effect.NONE

#: What each generic code does to SD.Next (codes not listed: LEFT_NONE, with the reason).
EFFECTS: dict[str, Effect] = {
    # container: safetensors cannot read the file; native_transformer.load raises past the
    # OverrideArchMismatch handler
    **{f"QC1{n:02d}": F for n in range(1, 22) if n != 7 and n != 19},
    "QC107": D,  # duplicate key: one of the two values is used silently
    # markers: json.loads / ["format"] failures become OverrideArchMismatch -> fallback
    "QC201": D,
    "QC202": D,
    "QC203": D,
    "QC204": D,  # numpy() of a dtype numpy lacks raises inside the same try
    "QC208": D,  # read_quantization_metadata: malformed -> fallback
    "QC209": D,
    "QC210": D,  # the header entry replaces the tensor marker: the tensor's value is lost
    "QC212": D,
    "QC213": D,
    "QC214": D,
    "QC218": D,  # `if meta.get("convrot")`: "false" or 0/1 strings are truthy
    "QC223": D,  # marker without weight: "expects ... weights but X has missing" -> fallback
    # layers: anything load_state_dict leaves over or misses -> fallback
    "QC301": D,
    "QC302": D,
    "QC303": D,
    "QC304": D,
    "QC306": D,  # the marked module is no nn.Linear -> fallback
    # a scale of the wrong shape: adopt_nvfp4_layer refuses NVFP4 block scales (fallback,
    # QC715); INT8/FP8 scales are reshaped to (-1, 1) and meet SDNQ's scale parameter, whose
    # exact outcome (fallback or load error) was not traced: [GUESS] degraded at least
    "QC307": D,
    "QC314": D,  # unmarked quantized weights: scale keys unexpected -> fallback
    "QC315": D,  # legacy scaled_fp8: no markers, scale_weight keys unexpected -> fallback
    "QC318": D,  # nvfp4 + convrot (QC712 is SD.Next's own finding)
    # numeric: the dequantizer multiplies what is stored
    "QC401": D,
    "QC402": D,
    "QC403": D,
    "QC406": D,  # unswizzle_block_scales assumes the swizzled layout
    "QC407": D,
    "QC408": D,
    # shards: the tensors of a missing or escaping shard are missing
    "QC501": D,
    "QC502": F,
    "QC503": F,
    "QC504": F,
    "QC506": F,
    # the model family's contract (QC86x, issue 26)
    "QC861": D,
    "QC862": F,
}

#: Why each code of EFFECTS does what it does to SD.Next (one line each).
WHY: dict[str, str] = {
    **{
        f"QC1{n:02d}": "safetensors cannot read the file; native_transformer.load raises past "
        "the OverrideArchMismatch handler"
        for n in range(1, 22)
        if n != 7 and n != 19
    },
    "QC107": "duplicate key: one of the two values is used silently",
    **dict.fromkeys(
        ("QC201", "QC202", "QC203", "QC212", "QC213", "QC214"),
        "json.loads / ['format'] failures become OverrideArchMismatch: it falls back to the "
        "base model's transformer",
    ),
    "QC204": "numpy() of a dtype numpy lacks raises inside the same try: fallback",
    **dict.fromkeys(
        ("QC208", "QC209"), "read_quantization_metadata: a malformed header falls back"
    ),
    "QC210": "the header entry replaces the tensor marker: the tensor's value is lost",
    "QC218": 'if meta.get("convrot"): "false" or 0/1 strings are truthy',
    "QC223": "a marker without a weight: 'expects ... weights but X has missing': fallback",
    **dict.fromkeys(
        ("QC301", "QC302", "QC303", "QC304"),
        "anything load_state_dict leaves over or misses makes it fall back",
    ),
    "QC306": "the marked module is no nn.Linear: fallback",
    "QC307": "adopt_nvfp4_layer refuses NVFP4 block scales of another shape (fallback); INT8/FP8 "
    "scales meet SDNQ's scale parameter reshaped [GUESS]",
    "QC314": "unmarked quantized weights: the scale keys are unexpected: fallback",
    "QC315": "legacy scaled_fp8: no markers, scale_weight keys unexpected: fallback",
    "QC318": "nvfp4 + convrot (QC712 is SD.Next's own finding)",
    **dict.fromkeys(
        ("QC401", "QC402", "QC403", "QC407", "QC408"), "the dequantizer multiplies what is stored"
    ),
    "QC406": "unswizzle_block_scales assumes the swizzled layout",
    "QC501": "the shards are merged into one dict: the last copy wins silently",
    **dict.fromkeys(
        ("QC502", "QC503", "QC504", "QC506"),
        "the tensors of a missing or escaping shard are missing",
    ),
    "QC861": "the same weights run: the quality producers keep these layers for is lost",
    "QC862": "the model's weights are missing: the layers they belong to cannot be built",
}
#: Generic codes consciously left NONE for SD.Next, with the reason.
LEFT_NONE: dict[str, str] = {
    **dict.fromkeys(
        ["QC800", "QC801", "QC802", "QC803"],
        "a GPU report about comfy-kitchen's kernels (check --gpu), which SD.Next does not run"
        " (its SDNQ layers have their own kernels: its --gpu entry)",
    ),
    **dict.fromkeys(
        [*(f"QC83{n}" for n in range(8)), "QC840"],
        "a LoRA on a quantized base as ComfyUI loads it (quantcheck lora); this runtime's "
        "own LoRA path is runtimes/sdnext_lora.py, judged by QC838/QC839",
    ),
    **dict.fromkeys(
        ["QC838", "QC839"],
        "no effect by default: a QC838 finding names this runtime in its own effects when "
        "this runtime's LoRA merge loses the LoRA; QC839 is a note",
    ),
    "QC119": "sub-byte dtypes are not read by this loader",
    "QC122": "header padding does not matter to safetensors",
    "QC205": "marker bytes are read with tobytes(): any 1-byte dtype reads the same JSON",
    "QC206": "no size limit on markers",
    "QC207": "json.loads on bytes detects BOMs and UTF-16/32",
    "QC211": "truthiness is all SD.Next asks of convrot",
    "QC215": "underscore keys are not read",
    "QC216": "unknown keys are not read",
    "QC219": "QC713 says what SD.Next does with convrot_groupsize (default 256, any power of 4)",
    "QC220": "group_size matters only for nvfp4 (QC712)",
    "QC221": "keys of formats SD.Next refuses anyway (QC710)",
    "QC222": "header entries without a weight are skipped; the unmarked layer is QC314",
    "QC225": "W4A8 is refused as a format (QC710)",
    "QC305": "scales are cast to float32 on load",
    "QC308": "the padded layout is the one SD.Next wants (QC715 checks it)",
    "QC311": "SD.Next dequantizes; kernel size limits do not apply",
    "QC312": "W4A8 is refused as a format (QC710)",
    "QC313": "W4A8 is refused as a format (QC710)",
    "QC316": "SD.Next loads INT8 linears without convrot",
    "QC319": "ComfyUI's dequantize path",
    "QC320": "ComfyUI's default; SD.Next's own default (256) is QC713's subject",
    "QC321": "grouped INT8 formats are refused as a format (QC710)",
    "QC404": "MXFP8 is refused as a format (QC710)",
    "QC405": "padding is sliced off by unswizzle_block_scales",
    "QC409": "W4A8 is refused as a format (QC710)",
    "QC505": "the loader reads the file, not the index",
    **dict.fromkeys(
        (f"QC6{n:02d}" for n in (*range(1, 25), *range(30, 39), 50, 51)),
        "sglang's or ComfyUI's own finding",
    ),
    "QC860": ("ComfyUI's model detection; SD.Next's own model detection was not read"),
    "QC863": (
        "modules outside the family's layout: SD.Next's handling of unexpected keys was not read"
    ),
    "QC864": "information: the quantization topology",
}


def sdnext_runtime() -> Runtime:
    """The SD.Next runtime record (its own loader: not based on another runtime)."""
    return Runtime(
        NAME,
        TITLE,
        (
            Release(
                RELEASE,
                note="vladmandic/sdnext snapshot d11a619 (2026-07-24): "
                "pipelines/native_transformer.py and generic_transformer.py.",
            ),
        ),
        checks="quantcheck.rules.sdnext.checks:SdnextChecks",
        gpu="quantcheck.rules.sdnext.gpu:SDNEXT_GPU",
        effects=dict(EFFECTS),
        reasons={**WHY, **LEFT_NONE},
        doc="SD.Next's native transformer loader (vladmandic/sdnext d11a619 "
        "pipelines/native_transformer.py detect_comfy_quant, build_component_prequantized, "
        "adopt_nvfp4_layer): every refusal falls back to the base model's transformer with "
        "a log warning, so refusals are degraded, not failures.",
        default_target=False,
        messages="quantcheck.rules.sdnext.messages:PATTERNS",
        folder="quantcheck.rules.sdnext",
    )
