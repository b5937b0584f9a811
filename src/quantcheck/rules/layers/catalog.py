"""QC3xx: each layer's tensors, dtypes and shapes against the format table."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects
from quantcheck.rules.upstream import CUI_DIFF, CUI_OPS, CUI_QOPS, CUI_RUN, SGQ, SGQC

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
SG = f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}) and config constructors ({SGQC})"

RULES = [
    Rule(
        "QC301",
        "companion-missing",
        E,
        "a tensor the format needs is missing",
        effects("fails", "fails"),
        None,
        "Each marked layer has the companions its format requires (e.g. weight_scale for FP8 "
        "and INT8; weight_s_rel and weight_s_channel for W4A8; weight_scale_2 for NVFP4).",
        'sglang stops with "Comfy layer … is missing checkpoint tensors"; ComfyUI cannot '
        "build the quantized layer.",
        "blocks.0.attn.qkv: float8_e4m3fn marker, F8_E4M3 weight, no weight_scale",
        "Re-export the layer with its scales.",
        f"{SG} (case fp8_missing_weight_scale, recorded); ComfyUI: 'Missing MXFP8 block "
        f"scales' / NVFP4 / INT8 / W4A4 / W4A8 / AWQ ValueErrors ({CUI_OPS} ~L1216, ~L1222, "
        "~L1227, ~L1240, ~L1257, ~L1276); an FP8 layer without weight_scale fails when its "
        f"QuantizedTensor is built (~L1211, ~L1283; {CUI_DIFF}, cases mxfp8-no-scales, "
        "consumers:fp8-no-weight-scale).",
    ),
    Rule(
        "QC302",
        "companion-unexpected",
        W,
        "a tensor the format does not use",
        effects("none", "none"),
        Safety.SAFE,
        "The layer holds only tensors its format defines (plus bias).",
        "Runtimes ignore the extra tensor; it usually means a mixed-up export.",
        "int8_tensorwise layer with a weight_scale_2",
        "Remove the tensor.",
        "ComfyUI @0271a469 comfy/ops.py _load_quantized_module (read); sglang 0.5.23 "
        "inspect_comfy_quant_markers ignores unlisted tensors.",
    ),
    Rule(
        "QC303",
        "weight-dtype",
        E,
        "weight stored in the wrong quantized dtype",
        effects("fails", "degraded"),
        Safety.DISPLAY,
        "The weight is stored in the format's storage dtype (F8_E4M3 for float8_e4m3fn and "
        "mxfp8, F8_E5M2 for float8_e5m2, U8 for nvfp4, I8 for the integer formats).",
        "sglang refuses the layer; ComfyUI value-casts the weight to the storage dtype and "
        "computes garbage.",
        "nvfp4 marker on an I8 weight",
        "Correct the marker to the layer's real format, or re-export.",
        f"{SG} (cases msg_nvfp4_i8_weight, msg_w4a8_u8_weight); "
        "ComfyUI .to(storage_t) value cast (@0271a469 comfy/ops.py _load_quantized_module "
        f"~L1284, read; {CUI_DIFF}, case consumers:fp8-marker-e5m2-weight).",
    ),
    Rule(
        "QC304",
        "marker-on-unquantized-layer",
        E,
        "quantized marker on a 16/32-bit weight",
        effects("fails", "degraded"),
        Safety.SAFE,
        "A layer whose weight is BF16/F16/F32 carries no quantization marker.",
        "The layer fell back to 16-bit during export but kept its marker: sglang refuses it "
        '("needs I8 weights and F32 scales, got BF16 and …"); ComfyUI casts the 16-bit '
        "weight into the quantized dtype.",
        "blocks.1.attn.to_k: int8_tensorwise marker, BF16 [3072, 3072] weight",
        "Remove the marker and the scales left beside it (safe: keeps the 16-bit weights), "
        "or quantize the layer (--unsafe-fixes).",
        f"{SG} (seed 000, case fp8_marker_on_bf16_weight); ComfyUI value cast "
        f"({CUI_OPS} ~L1284, read; {CUI_DIFF}, case fp8-bf16-weight). FP8 markers: sglang "
        "does not check the dtype (inferred degraded).",
    ),
    Rule(
        "QC305",
        "companion-dtype",
        E,
        "a scale or companion tensor has the wrong dtype",
        effects("fails", "none"),
        Safety.SAFE,
        "Companion dtypes match what each runtime accepts (e.g. sglang: F32 INT8 scales, F32 "
        "W4A8 channel scales, F8_E4M3 group and NVFP4 block scales, U8 MXFP8 scales).",
        'The seed errors: sglang refuses "Comfy INT8 layer … needs I8 weights and F32 scales, '
        'got I8 and F16" and "Comfy W4A8 layer … needs F32 channel scales, got BF16".',
        "weight_s_channel BF16 [3072]",
        "Cast F16/BF16 scales to F32 (exact), or relabel 1-byte scales (same bytes).",
        f"{SG} (seeds 000/001, cases int8_f16_scale, "
        "w4a8_bf16_channel_scale). ComfyUI: a W4A8 weight_s_channel in BF16/F16 is passed "
        f"through uncast ({CUI_OPS} ~L1265) and comfy-kitchen 0.2.40's w4a8_int8_linear "
        "accepts only F32 channel scales in its eager and CUDA constraint tables, so the "
        f"first forward raises NoCapableBackendError; {CUI_RUN}; {CUI_DIFF}, case "
        "w4a8-channel-bf16.",
    ),
    Rule(
        "QC306",
        "weight-not-2d",
        E,
        "quantized weight is not 2-D",
        effects("fails", "degraded"),
        None,
        "Quantized linear weights are [N, K] (MoE banks with num_experts may be 3-D).",
        "sglang requires a 2-D weight for every validated format.",
        "int8_tensorwise weight I8 [2, 4, 32]",
        "Store the weight as [N, K].",
        f"{SG} (case int8_scalar_scale_3d_weight, recorded).",
    ),
    Rule(
        "QC307",
        "companion-shape",
        E,
        "a scale or companion tensor has the wrong shape",
        effects("fails", "fails"),
        Safety.SAFE,
        "Companion shapes follow the format table for the weight's N and K (e.g. INT8 "
        "weight_scale [] or [N, 1]; W4A8 weight_s_rel [N, K/g]; NVFP4 weight_scale swizzled "
        "[ceil128(N16), ceil4(K16/16)]).",
        "Runtimes refuse or misread scales of another shape (an INT8 [N] scale broadcasts "
        "along K in ComfyUI's dequantize).",
        "int8_tensorwise weight [3072, 3072] with weight_scale [3072]",
        "Reshape [N] -> [N, 1] where that is the same bytes; otherwise re-export.",
        f"{SG} (cases int8_scale_1d, w4a8_bad_correction_shape); "
        "comfy-kitchen 0.2.40 tensor/int8.py TensorWiseINT8Layout and tensor/w4a8_int8.py "
        "dequantize_w4a8_int8_weight (run). ComfyUI: an INT8 [N] scale loads and computes "
        "(QC319 reports what it breaks); companions ComfyUI never reads (W4A8 "
        f"weight_correction, {CUI_OPS} ~L1252-1271) cannot make its load fail; {CUI_RUN}. "
        "sglang stage: the marker inspector for INT8 and W4A8 shapes; weight load for an FP8 "
        "[N, 1] weight_scale (the inspector does not shape-check FP8; ComfyFp8Config builds "
        "Fp8LinearMethod, whose PerTensorScaleParameter [1] cannot take it: 'Failed to "
        "shard/load parameter', fsdp_load.load_model_from_full_model_state_dict; run by "
        "tests/rules/sglang/diff test_stages).",
    ),
    Rule(
        "QC308",
        "padded-layout-for-sglang",
        E,
        "NVFP4/MXFP8 layer in ComfyUI's padded layout that sglang cannot load",
        effects("fails", "none"),
        Safety.UNSAFE,
        "NVFP4 layers meant for sglang have N % 128 == 0 and K % 64 == 0 (MXFP8: K % 128), "
        "where the swizzled scale shape equals sglang's expected (N, K/16).",
        "comfy-kitchen pads weights to 16/32 and block scales to 128x4 tiles; sglang's "
        "validator demands the unpadded shape and refuses the layer. Re-laying the data into "
        "(N, K/16) would pass the validator and compute garbage.",
        "nvfp4 weight U8 [112, 104] (100x200 padded), weight_scale [128, 16]",
        "Dequantize the layer to BF16 for sglang (--unsafe-fixes).",
        f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}; cases "
        "nvfp4_kitchen_padded_block_scale, mxfp8_kitchen_padded_scale, recorded); padding "
        "by comfy-kitchen 0.2.40 tensor/nvfp4.py, tensor/mxfp8.py and float_utils.py "
        "to_blocked (run).",
    ),
    Rule(
        "QC311",
        "format-constraint",
        E,
        "sizes the format's kernels cannot take",
        effects("fails", "fails"),
        None,
        "W4A8: K a multiple of 16, group_size and convrot_groupsize; W4A4: K a multiple of "
        "convrot_groupsize (both runtimes) and of 64 (sglang's CUDA kernel; ComfyUI falls "
        "back to comfy-kitchen's eager kernel).",
        "The layer fails when it is built (sglang) or quantized/dequantized (comfy-kitchen).",
        "asym_w4a8_int8 K=96 with convrot_groupsize 64",
        "Requantize with group sizes that divide K.",
        f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}) and KitchenW4A8Config layer "
        "build (read/recorded); comfy-kitchen 0.2.40 tensor/w4a8_int8.py and "
        "backends/eager/convrot_w4a4.py validate_w4a4_shape (run). ComfyUI: a W4A4 layer "
        "whose K/2 is not a multiple of 32 is refused by comfy-kitchen's CUDA kernel only; "
        "comfy-kitchen then falls back to its eager kernel (registered for every device), "
        "which loads and computes it correctly: no effect on ComfyUI (constraint "
        f"cuda-k-multiple); {CUI_OPS} (~L1237-1249: quant_group_size 64), {CUI_RUN}; "
        f"{CUI_DIFF}, cases w4a4-k-not-multiple-of-64, w4a4-group-not-power-of-4.",
    ),
    Rule(
        "QC312",
        "w4a8-6bit",
        E,
        "6-bit W4A8 layer (sglang reads W4A8 as 4-bit only)",
        effects("fails", "none"),
        Safety.UNSAFE,
        "W4A8 layers for sglang are 4-bit ([N, K/2] weights).",
        "sglang computes K from the packed width as if 4-bit and refuses the scale shapes; "
        "even when they happen to agree the [N, 3K/4] weight cannot load.",
        "asym_w4a8_int8 weight I8 [8, 48] with weight_s_rel [8, 4] (K=64, g=16)",
        "Requantize as 4-bit or dequantize the layer for sglang.",
        f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}) and the W4A8 layer build "
        "(cases msg_w4a8_6bit_layout, msg_w4a8_6bit_one_group).",
    ),
    Rule(
        "QC321",
        "packed-width",
        E,
        "packed weight width does not match K at the code width",
        effects("none", "fails"),
        None,
        "Packed grouped-int8 weights (w6a8_int8) are [N, K*bits/8] with K = weight_s_rel "
        "columns x group_size: weight.shape[1]*8 == K*6.",
        "comfy-kitchen reads K from the group scales and the code width from the row; a row "
        'of any other width stops the layer ("packed row width ... does not match K").',
        "w6a8_int8 weight I8 [8, 32] with weight_s_rel [8, 4], group_size 16 (K=64 needs 48)",
        "Re-export the layer: the weight, its group scales or the marker's group_size are "
        "from different quantizations.",
        "comfy-kitchen 0.2.40 backends/eager/w4a8_int8.py _w4a8_geometry (read); the "
        "ComfyUI loader's own width check (_GROUPED_INT8_FORMATS in comfy/ops.py after PR "
        "#16483) is [GUESS]: read only in Forge Neo's port of it.",
    ),
    Rule(
        "QC313",
        "correction-ignored-by-comfyui",
        W,
        "W4A8 weight_correction present (ComfyUI never loads it)",
        effects("none", "degraded"),
        Safety.UNSAFE,
        "asym_w4a8_int8 layers meant for ComfyUI use a symmetric mode (no weight_correction).",
        "ComfyUI @0271a469 never loads weight_correction, so asymmetric layers dequantize "
        "without their zero point.",
        "weight_correction BF16 [192, 3072]",
        "Requantize symmetric (codebook or uniform) for ComfyUI.",
        f"{CUI_OPS} (~L1252-1271) does not load it and {CUI_QOPS} lists only weight_scale "
        "as a parameter (~L257): the tensor is left as an unexpected key; comfy-kitchen "
        f"0.2.40 tensor/w4a8_int8.py dequantize_w4a8_int8_weight uses it (read); {CUI_RUN}; "
        f"{CUI_DIFF}, case w4a8-correction-never-read.",
    ),
    Rule(
        "QC314",
        "quantized-weight-unmarked",
        E,
        "quantized-dtype weight without a marker",
        effects("fails", "degraded"),
        Safety.SAFE,
        "Weights stored as F8_E4M3, F8_E5M2, I8 or U8 carry a comfy_quant marker.",
        'sglang stops with "Quantized weights are missing comfy_quant metadata"; ComfyUI '
        "loads plain FP8 casts but reads unmarked I8/U8 codes as weights.",
        "blocks.0.attn.qkv.weight F8_E4M3 [3072, 3072], no blocks.0.attn.qkv.comfy_quant",
        "Add the marker the tensors imply (`quantcheck fix`; only where unambiguous).",
        f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}; cases "
        "fp8_plain_cast_no_marker, recorded); E5M2 is not noted "
        "by sglang (case fp8_e5m2_no_marker). ComfyUI casts an unmarked weight to the compute "
        f"dtype without its scale ({CUI_OPS} ~L1194-1195; {CUI_DIFF}, case "
        "consumers:fp8-unmarked).",
    ),
    Rule(
        "QC315",
        "legacy-scaled-fp8",
        E,
        "legacy 'scaled_fp8' checkpoint",
        effects("fails", "none"),
        Safety.SAFE,
        "Quantized layers use comfy_quant markers rather than the legacy scaled_fp8 key with "
        "scale_weight tensors.",
        'ComfyUI converts legacy files on load; sglang refuses them ("missing comfy_quant '
        'metadata").',
        "model.diffusion_model.scaled_fp8 + blocks.0.attn.qkv.scale_weight",
        "Convert to per-layer markers (scale_weight -> weight_scale).",
        "ComfyUI @09708eae comfy/utils.py convert_old_quants (read); sglang 0.5.23 "
        "inspect_comfy_quant_markers, case fp8_scaled_legacy_no_marker (recorded).",
    ),
    Rule(
        "QC316",
        "int8-linear-without-convrot",
        W,
        "INT8 linear without convrot (sglang builds it unquantized)",
        effects("degraded", "none"),
        Safety.UNSAFE,
        "int8_tensorwise linears meant for sglang are ConvRot (convrot: true).",
        "sglang 0.5.23 treats non-ConvRot INT8 markers as embedding markers and builds such "
        "linears unquantized (the weights are then read as plain numbers).",
        'blocks.0.attn.qkv: {"format": "int8_tensorwise"} with a [N, 1] scale',
        "Requantize with ConvRot for sglang.",
        "sglang 0.5.23 inspect_comfy_quant_markers and ConvRotInt8Config (case "
        "int8_no_convrot_on_linear: inspector and constructor pass; the unquantized build is "
        "read from source). Linear vs embedding is told by the "
        "layer name (inferred).",
    ),
    Rule(
        "QC318",
        "nvfp4-rotated",
        E,
        "NVFP4 marker with convrot",
        effects("fails", "none"),
        None,
        "NVFP4 markers do not set convrot.",
        'sglang: "Rotated NVFP4 weights are not supported".',
        '{"format": "nvfp4", "convrot": true}',
        "Drop convrot only if the weights are not rotated; otherwise requantize.",
        f"sglang 0.5.23 ComfyNvfp4Config constructor ({SGQC}; case nvfp4_convrot_marker, "
        "recorded).",
    ),
    Rule(
        "QC319",
        "comfyui-dequantize-fails",
        W,
        "inference works in ComfyUI but LoRA / full-precision fallback fails",
        effects("none", "none"),
        Safety.SAFE,
        "Scales ComfyUI's kernels accept are also shaped so that ComfyUI's own "
        "QuantizedTensor.dequantize() can broadcast them (INT8 weight_scale [] or [N, 1]).",
        "An INT8 weight_scale of shape [N] loads and computes correctly (the int8 kernel "
        "reads it per row), but ComfyUI's dequantize raises on the broadcast: applying a "
        "LoRA to the layer, or the full-precision fallback, fails. Plain inference is "
        "exact, so the verdict stays ok and this warning names what breaks (an effect of its "
        "own once quantcheck checks LoRA patching).",
        "int8_tensorwise weight I8 [3072, 3072] with weight_scale F32 [3072]",
        "Reshape [N] -> [N, 1] (same bytes).",
        f"{CUI_QOPS} QuantizedTensor.dequantize and the int8 layout of comfy-kitchen 0.2.40 "
        f"tensor/int8.py; {CUI_OPS} loads the scale as stored (~L1225-1229); {CUI_RUN}; "
        f"{CUI_DIFF}, case int8-scale-1d (load and forward right, dequantize raises). "
        "No effect on ComfyUI's inference (comfyui, comfyui-cpu, forge-neo: the same "
        "loader).",
    ),
    Rule(
        "QC320",
        "convrot-groupsize-defaulted-by-comfyui",
        W,
        "rotated INT8 layer without convrot_groupsize: ComfyUI rotates with 256",
        effects("none", "degraded"),
        Safety.DISPLAY,
        "A rotated int8_tensorwise marker (convrot: true) names its convrot_groupsize.",
        "ComfyUI defaults the rotation group to 256. Where 256 does not divide K the first "
        'forward raises ("ConvRot group size 256 does not divide input features K"): '
        "fails. Where it divides, the layer runs with a 256 rotation, which is wrong unless "
        "the weights were rotated with 256 (a file cannot show which): degraded.",
        '{"format": "int8_tensorwise", "convrot": true} on a layer with K=3072',
        "Add the group size the weights were rotated with.",
        f"{CUI_OPS} (~L1232-1235: default 256); comfy-kitchen 0.2.40 ConvRot INT8 forward; "
        f"{CUI_RUN}; {CUI_DIFF}, cases int8-convrot-16-group-missing, "
        "int8-convrot-default-group-too-big.",
    ),
]
