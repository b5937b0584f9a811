"""QC74x: stable-diffusion.cpp's own rules (what it refuses or silently changes).

Read in leejet/stable-diffusion.cpp master at bcc7e295 (PR #1857, 2026-08-11), the only
ComfyUI-quantization reader merged there; line numbers are approximate. FP8 scale handling:
PR #1913 (merged 2026-08-26, read as its description only) and PR #1898 (closed; its
description documents the earlier white-image behaviour).
"""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects

E, W = Severity.ERROR, Severity.WARNING
#: The files every rule cites (project @ commit).
ST_IO = "leejet/stable-diffusion.cpp @bcc7e295 src/model_io/safetensors_io.cpp"
EXT = "leejet/stable-diffusion.cpp @bcc7e295 src/core/ggml_extend.hpp"
MANAGER = "leejet/stable-diffusion.cpp @bcc7e295 src/model_manager.cpp validate_tensor (~L640-650)"


def _fails() -> dict:  # type: ignore[type-arg]
    return effects(sdcpp="fails")


RULES = [
    Rule(
        "QC740",
        "sdcpp-format-not-loaded",
        E,
        "layer whose weights stable-diffusion.cpp cannot load (packed or U8)",
        _fails(),
        None,
        "No layer meant for stable-diffusion.cpp stores its weight as U8 or uses a packed "
        "format (nvfp4, convrot_w4a4, asym_w4a8_int8, w6a8_int8, awq_w4a16).",
        "sd.cpp implements int8_tensorwise only. Its reader skips every U8 tensor, so an NVFP4 "
        "weight is missing when the model is built; a packed I8 weight [N, K/2] is loaded as a "
        "plain tensor and does not match the model's Linear [N, K]. Either way the load stops.",
        '{"format": "nvfp4"} with a U8 [N, K/2] weight',
        "Requantize the layers as int8_tensorwise (or convert to GGUF) for stable-diffusion.cpp.",
        f'{ST_IO} read_safetensors_file (~L249: `if (dtype == "U8") continue;`); {MANAGER} '
        '("tensor \'%s\' not in model metadata", "has wrong shape in model metadata").',
    ),
    Rule(
        "QC741",
        "sdcpp-fp8-scale-ignored",
        E,
        "scaled FP8 layer: stable-diffusion.cpp before PR #1913 ignores the scale",
        effects(sdcpp="degraded"),
        None,
        "An FP8 (F8_E4M3/F8_E5M2) weight with a weight_scale or scale_weight is loaded by an "
        "sd.cpp that applies the scale (PR #1913 or later).",
        "Before PR #1913 sd.cpp converts FP8 codes to F16 and never multiplies by the scale "
        "(~1e-3): activations saturate and generation returns a pure white image, with no "
        "error. PR #1913 keeps E4M3/E5M2 weights and applies scalar or per-channel scales, "
        "also under the name scale_weight.",
        "float8_e4m3fn layer with an F32 scalar weight_scale",
        "Update stable-diffusion.cpp to a build with PR #1913, or dequantize the layers to "
        "BF16 for older builds.",
        f"{ST_IO} safetensors_dtype_to_ggml_type (F8_E4M3/F8_E5M2 -> F16); {EXT} "
        "Linear::init_params (~L3430: weight_scale used only with allow_weight_scale, set by "
        "ideogram4 alone, or an int8_tensorwise weight); white-image outcome from PR #1898's "
        "description (closed, not merged); the fix from PR #1913's description (merged "
        "2026-08-26; its code was not read).",
    ),
    Rule(
        "QC742",
        "sdcpp-mxfp8-scales-dropped",
        E,
        "MXFP8 layer: stable-diffusion.cpp drops the block scales",
        effects(sdcpp="degraded"),
        None,
        "No MXFP8 layer is meant for stable-diffusion.cpp.",
        "sd.cpp skips the U8 E8M0 block scales and converts the E4M3 codes to F16 unscaled; "
        "the model likely computes garbage without an error. PR #1913 applies scalar or "
        "per-channel scales, not 1x32 block scales [GUESS].",
        '{"format": "mxfp8"} with a U8 [N, K/32] weight_scale',
        "Requantize the layers as int8_tensorwise (or FP8 with a scalar scale, PR #1913 on).",
        f"{ST_IO} read_safetensors_file (U8 skipped, F8_E4M3 -> F16). [GUESS]: the wrong "
        "output was not observed, and PR #1913's handling of block scales was not read.",
    ),
    Rule(
        "QC743",
        "sdcpp-int8-unclaimed",
        E,
        "I8 weight stable-diffusion.cpp does not take as int8_tensorwise",
        _fails(),
        None,
        "Every I8 weight has a .comfy_quant tensor marker naming int8_tensorwise (sd.cpp "
        "does not read the header's _quantization_metadata).",
        "Without such a tensor marker sd.cpp loads the raw int8 codes as an unscaled I8 weight. "
        "ggml has no I8 matrix product, so the first forward likely aborts; at best the output "
        "is garbage.",
        "an int8_tensorwise layer described only in __metadata__._quantization_metadata",
        "Write each layer's marker as a .comfy_quant tensor (ComfyUI's own exports carry both).",
        f"{ST_IO} read_safetensors_file (~L209-233: markers come only from `.comfy_quant` "
        "tensors; `__metadata__` gives a string map nobody reads for quantization). [GUESS]: "
        "the abort at the first matmul was not observed.",
    ),
    Rule(
        "QC744",
        "sdcpp-int8-scale-shape",
        E,
        "int8_tensorwise weight_scale not one value per output row",
        _fails(),
        None,
        "An int8_tensorwise weight_scale holds N values: [N, 1], [N] or [1, N].",
        "sd.cpp's Linear declares weight_scale as a 1-D F32 [N] parameter (an [N, 1] scale is "
        "reshaped to [N]); a scalar scale, which ComfyUI accepts, has the wrong shape and the "
        "load stops.",
        "int8_tensorwise layer [64, 64] with an F32 scalar weight_scale",
        "Repeat the scalar scale into an F32 [N, 1] tensor (lossless).",
        f"{ST_IO} read_safetensors_file (~L315: [N, 1] -> [N]); {EXT} Linear::init_params "
        f"(~L3431: ggml_new_tensor_1d(F32, out_features)); {MANAGER}.",
    ),
    Rule(
        "QC745",
        "sdcpp-int8-scale-missing",
        E,
        "int8_tensorwise layer without weight_scale: stable-diffusion.cpp aborts",
        _fails(),
        None,
        "Every int8_tensorwise layer has a weight_scale (sd.cpp does not read scale_weight for "
        "INT8).",
        "sd.cpp's Linear asserts the scale is present (GGML_ASSERT(has_weight_scale)): the "
        "process aborts while the model is built.",
        "int8_tensorwise layer with only weight and comfy_quant",
        "Restore the layer's weight_scale from the source checkpoint.",
        f"{EXT} Linear::init_params (~L3436: GGML_ASSERT(has_weight_scale)).",
    ),
    Rule(
        "QC746",
        "sdcpp-convrot-group",
        E,
        "ConvRot group stable-diffusion.cpp refuses",
        _fails(),
        None,
        "A rotated int8_tensorwise marker has a top-level numeric convrot_groupsize that is a "
        "power of four and divides K.",
        "sd.cpp reads convrot_groupsize at the marker's top level (0 when absent: it does not "
        "default to 256 like ComfyUI) and refuses a group that is not a power of four or does "
        "not divide K; a group that is not a JSON number fails the marker's parse.",
        '{"format": "int8_tensorwise", "convrot": true} (no convrot_groupsize)',
        "Write the group the weights were rotated with as a top-level convrot_groupsize.",
        f'{ST_IO} read_comfy_quant_config (~L135: json.value("convrot_groupsize", 0)) and '
        "read_safetensors_file (~L300-308: power-of-four loop, `ne[0] % group_size`; "
        '"invalid ComfyUI convrot group size for tensor").',
    ),
    Rule(
        "QC747",
        "sdcpp-dtype-unsupported",
        E,
        "tensor dtype stable-diffusion.cpp cannot read",
        _fails(),
        None,
        "Every tensor is F16, BF16, F32, F64, F8_E4M3, F8_E5M2, I32, I64, I8 or U8.",
        "sd.cpp's safetensors reader maps dtypes through a fixed table; any other (F8_E8M0, "
        "BOOL, I16, U16, ...) stops the whole load, marked layer or not.",
        "blocks.0.attn.qkv.weight_scale F8_E8M0 [128, 4]",
        "Relabel E8M0 scales as U8 (same bytes), or convert the tensor to a listed dtype.",
        f"{ST_IO} safetensors_dtype_to_ggml_type and read_safetensors_file (~L262: "
        "\"unsupported dtype '%s' (tensor '%s')\").",
    ),
    Rule(
        "QC748",
        "sdcpp-int8-weight-not-i8",
        E,
        "int8_tensorwise marker on a weight that is not I8",
        _fails(),
        None,
        "A weight whose .comfy_quant names int8_tensorwise is stored as I8.",
        "sd.cpp stops the load at the first such weight.",
        '{"format": "int8_tensorwise"} on a BF16 weight',
        "Remove the marker from layers left in 16-bit, or requantize them.",
        f'{ST_IO} read_safetensors_file (~L298: "ComfyUI int8_tensorwise weight is not I8").',
    ),
    Rule(
        "QC749",
        "sdcpp-convrot-in-params",
        E,
        "convrot set only inside params: stable-diffusion.cpp runs the layer unrotated",
        effects(sdcpp="degraded"),
        None,
        "A rotated int8_tensorwise marker sets convrot (and convrot_groupsize) at its top level.",
        "ComfyUI looks up marker keys at the top level, then in params; sd.cpp reads only the "
        "top level, so a layer whose convrot is in params runs without the activation rotation "
        "its weights need: wrong output, and sd.cpp does not raise.",
        '{"format": "int8_tensorwise", "params": {"convrot": true, "convrot_groupsize": 256}}',
        "Move convrot and convrot_groupsize to the marker's top level.",
        f'{ST_IO} read_comfy_quant_config (~L134: json.value("convrot", false) on the '
        "marker object only).",
    ),
]
