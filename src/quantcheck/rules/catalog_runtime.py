"""QC6xx: what one runtime supports for the file as a whole (formats, mixes, constructors)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects
from quantcheck.rules.upstream import CUI_QOPS, CUI_RUN, CUI_UTILS, SGQ, SGQC
from quantcheck.runtimes.comfyui_releases import GUESSED, STEPS

E, INFO = Severity.ERROR, Severity.INFO
#: (code, release, formats, note, guessed) for each ComfyUI step after the oldest.
_STEPS = [(code, name, fmts, note, name in GUESSED)
          for name, code, fmts, note in STEPS if code]

RULES = [
    Rule("QC601", "format-unsupported-by-sglang", E, "format sglang 0.5.23 does not load",
         effects("fails", "none"), Safety.UNSAFE,
         "Layers meant for sglang use float8_e4m3fn, int8_tensorwise, nvfp4, mxfp8, "
         "asym_w4a8_int8 or convrot_w4a4.",
         "float8_e5m2 and awq_w4a16 pass sglang's inspector but its resolver refuses them "
         "(\"Unsupported Comfy quantization format(s)\").",
         '{"format": "float8_e5m2"}',
         "Requantize the layers (e.g. e5m2 -> float8_e4m3fn) for sglang.",
         "sglang 0.5.23 resolve_comfy_checkpoint_quantization (cases fp8_e5m2_marker, "
         "unknown_format_awq, recorded)."),
    Rule("QC602", "format-mix-unsupported", E, "mix of formats sglang cannot resolve",
         effects("fails", "none"), None,
         "The set of formats in one checkpoint is one sglang resolves: a single format, or "
         "int8_tensorwise beside asym_w4a8_int8, convrot_w4a4 or nvfp4.",
         "Mixed files common in ComfyUI (FP8 + INT8, FP8 + NVFP4) stop sglang's resolver.",
         "float8_e4m3fn layers beside int8_tensorwise layers",
         "Requantize the minority format, or keep separate files per format.",
         f"sglang 0.5.23 resolve_comfy_checkpoint_quantization ({SGQ}, recorded)."),
    Rule("QC603", "sglang-constructor-refuses", E, "sglang's config class refuses a layer",
         effects("fails", "none"), None,
         "Each marker passes the constructor of the config class sglang picks (e.g. INT8 "
         "companions of W4A8/NVFP4 must be embedding markers, not ConvRot linears).",
         "sglang fails at load with \"Unsupported Comfy W4A8 format\" / \"Unsupported Comfy "
         "NVFP4 companion\".",
         "asym_w4a8_int8 layers beside an int8_tensorwise ConvRot linear",
         "Quantize the companion layer in the main format, or drop its convrot only if it is an "
         "embedding.",
         f"sglang 0.5.23 KitchenW4A8Config and ComfyNvfp4Config constructors ({SGQC}; cases "
         "w4a8_with_int8_convrot_linear, "
         "nvfp4_with_int8_convrot_linear, recorded)."),
    Rule("QC604", "quant-format-mxfp8-conflict", E, "quant_format=mxfp8 beside other layers",
         effects("fails", "none"), None,
         "A file whose __metadata__.quant_format is mxfp8 (on every shard) holds only MXFP8 "
         "layers of shape F8_E4M3 [N, K] with U8 [N, K/32] scales.",
         "sglang treats every F8/I8/U8 weight as MXFP8 then; any other layer stops the load, "
         "and shards that disagree on quant_format turn the rule off.",
         "quant_format=mxfp8 with an int8_tensorwise layer",
         "Remove quant_format and use explicit markers, or quantize every layer as MXFP8.",
         f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}), quant_format=mxfp8 synthesis "
         "(cases mxfp8_quant_format_with_int8_layer, "
         "mxfp8_mixed_quant_format_shards, recorded)."),
    Rule("QC605", "dtype-stops-comfyui-default-loader", E,
         "F8_E8M0 tensor: ComfyUI's default (DynamicVRAM) loader cannot read the file",
         effects("none", "fails"), Safety.SAFE,
         "No tensor of the checkpoint is stored as F8_E8M0 (MXFP8 block scales are U8).",
         "With DynamicVRAM (the default on NVIDIA GPUs) ComfyUI parses the safetensors header "
         "itself and maps dtypes through a table without F8_E8M0: any such tensor, marked "
         "layer or not, raises KeyError before a layer is built. With --cpu or "
         "--disable-dynamic-vram safetensors.safe_open reads it (a marked MXFP8 layer is then "
         "only degraded). The verdict describes the default GPU setup.",
         "blocks.0.attn.qkv.weight_scale F8_E8M0 [128, 4]",
         "Relabel the bytes as U8 (the same E8M0 exponents: lossless).",
         f"{CUI_UTILS} (its _TYPES dtype table, ~L133) and main.py / cli_args.py "
         f"enables_dynamic_vram; {CUI_RUN}."),
    *(Rule(code, f"format-needs-comfyui-{release}", INFO,
           f"format ComfyUI loads only from {release} on",
           effects("none", "none"), None,
           f"Layers use formats ComfyUI releases before {release} do not know "
           f"({', '.join(formats)}).",
           "ComfyUI's QUANT_ALGOS table grew release by release; an older ComfyUI stops with "
           "KeyError / \"Unsupported quantization format\" on a format it does not know. The "
           "newest modelled release loads it, so the finding is informational there; the "
           "per-release effects say which releases fail."
           + (" [GUESS]: this step's ComfyUI code was not read; the model follows Forge "
              "Neo's port and third-party probes." if guess else ""),
           f'{{"format": "{formats[0]}"}}',
           f"Use ComfyUI {release} or newer, or requantize the layers to a format the older "
           "release loads (float8_e4m3fn, nvfp4).",
           f"{CUI_QOPS} QUANT_ALGOS and its history: {note}"
           + (" [GUESS]" if guess and "[GUESS]" not in note else ""))
      for code, release, formats, note, guess in _STEPS),
    Rule("QC610", "format-unsupported-by-comfyui", E,
         "format the modelled ComfyUI release does not load",
         effects("none", "fails"), Safety.SAFE,
         "Layers meant for ComfyUI @0271a469 use a format in its QUANT_ALGOS (w6a8_int8 "
         "arrived after PR #16483).",
         "An older ComfyUI looks the format up in QUANT_ALGOS and stops (KeyError / "
         "\"Unsupported quantization format\"); the newer release that added it loads the "
         "file.",
         '{"format": "w6a8_int8", "group_size": 32}',
         "Relabel the layer to the format the same tensors load as (w6a8_int8 -> "
         "asym_w4a8_int8: ComfyUI @0271a469 reads its 6-bit layout from the row width), or "
         "update ComfyUI.",
         "ComfyUI @0271a469 comfy/quant_ops.py QUANT_ALGOS (read); w6a8_int8 in ComfyUI after "
         "PR #16483 is [GUESS]: read in Forge Neo's port and third-party probes, not "
         "upstream."),
]
