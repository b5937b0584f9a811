"""sglang's own error messages (0.5.19-0.5.23, both INT8 message generations: "kitchen_int8" up
to 0.5.21, "convrot_int8" from 0.5.22, and 0.5.23's RowwiseFp8Error texts; safetensors' and
torch's as sglang's loader meets them), so `quantcheck explain` recognises them."""

from __future__ import annotations

from collections.abc import Callable

from quantcheck.explain.messages import MessagePattern, Refine
from quantcheck.explain.messages import pattern as _pattern
from quantcheck.rules import codes as R
from quantcheck.rules.registry import Rule
from quantcheck.runtimes.builtin import SGLANG


def pattern(
    template: str,
    rule: Rule,
    *causes: str,
    runtime: str = SGLANG.label,
    refine: Refine | None = None,
    target: str = "",
) -> MessagePattern:
    """A message of sglang's (`runtime`: another tool's, as sglang calls it)."""
    return _pattern(template, rule, *causes, runtime=runtime, refine=refine, target=target)


HIGH = ("BF16", "F16", "F32", "F64")


def _by_weight(storage: str, scale: str) -> Refine:
    """ "needs X weights and Y scales, got W and S": a 16-bit W means the layer fell back
    (QC304), another W the wrong storage (QC303); a scale S other than Y is QC305 besides
    (the message names both when both are wrong)."""

    def pick(v: dict[str, str]) -> tuple[str, ...]:
        w = v.get("weight_dtype", "")
        wrong_scale = (R.QC305.code,) if v.get("scale_dtype", "") != scale else ()
        if w in HIGH:
            return (R.QC304.code, *wrong_scale)
        if w != storage:
            return (R.QC303.code, *wrong_scale)
        return (R.QC305.code,)

    return pick


def _dtype_or_shape(ok_dtypes: tuple[str, ...], field: str) -> Callable[[dict[str, str]], str]:
    """A value printed as dtype+shape: a wrong dtype is QC305, else the shape is (QC307)."""

    def pick(v: dict[str, str]) -> str:
        dtype = v.get(field, "").split("(", 1)[0]
        return R.QC307.code if dtype in ok_dtypes else R.QC305.code

    return pick


def _formats(v: dict[str, str]) -> str:
    from quantcheck.formats.table import FORMATS

    names = [f.strip() for f in v.get("formats", "").split(",")]
    if "None" in names:
        return R.QC212.code
    if any(n not in FORMATS or FORMATS[n].third_party for n in names):
        return R.QC213.code
    return R.QC601.code if len(names) == 1 else R.QC602.code


FALLBACK = "a layer kept its marker after falling back to 16-bit during export"
DOWNCAST = "a conversion script re-saved every tensor in half precision, scales included"
PATTERNS: list[MessagePattern] = [
    pattern(
        "Comfy INT8 layer {prefix!r} needs I8 weights and F32 scales, got {weight_dtype} and "
        "{scale_dtype}",
        R.QC305,
        DOWNCAST,
        FALLBACK,
        "the marker names int8_tensorwise but the layer is stored in another format",
        refine=_by_weight("I8", "F32"),
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} needs F32 channel scales, got {channel_dtype}",
        R.QC305,
        DOWNCAST,
        "an exporter wrote channel scales in the weight's dtype",
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} needs I8 weights and FP8 group scales, got {weight_dtype} "
        "and {scale_dtype}",
        R.QC305,
        DOWNCAST,
        "scales quantized with scale_dtype=float32",
        FALLBACK,
        refine=_by_weight("I8", "F8_E4M3"),
    ),
    pattern(
        "Comfy W4A4 layer {prefix!r} needs I8 packed weights and F32 scales, got {weight_dtype} "
        "and {scale_dtype}",
        R.QC305,
        DOWNCAST,
        FALLBACK,
        refine=_by_weight("I8", "F32"),
    ),
    pattern(
        "Comfy NVFP4 layer {prefix!r} needs U8 packed weights and FP8 block scales, got "
        "{weight_dtype} and {scale_dtype}",
        R.QC305,
        "block scales saved as U8 (ComfyUI accepts them; sglang wants F8_E4M3)",
        FALLBACK,
        refine=_by_weight("U8", "F8_E4M3"),
    ),
    pattern(
        "Comfy NVFP4 layer {prefix!r} needs a scalar F32 weight_scale_2, got {scale_2}",
        R.QC305,
        DOWNCAST,
        "a [2] or [N] global scale (QC307)",
        refine=_dtype_or_shape(("F32",), "scale_2"),
    ),
    pattern(
        "Comfy NVFP4 layer {prefix!r} has incompatible weight/scale shapes: {weight_shape} and "
        "{scale_shape}",
        R.QC308,
        "comfy-kitchen padded the layer (N % 128 != 0 or K % 64 != 0): ComfyUI loads it, "
        "sglang cannot",
        "the block scales were stored unswizzled or re-laid",
    ),
    pattern(
        "Comfy NVFP4 layer {prefix!r} has an incompatible pre_quant_scale: {pqs}",
        R.QC307,
        "pre_quant_scale of the wrong length or dtype",
        refine=_dtype_or_shape(("BF16", "F16", "F32"), "pqs"),
    ),
    pattern(
        "Comfy NVFP4 layer {prefix!r} needs a 2D packed weight, got {weight_shape}",
        R.QC306,
        "an expert bank or a conv weight was quantized as a linear",
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} needs a 2D packed weight, got {weight_shape}",
        R.QC306,
        "an expert bank or a conv weight was quantized as a linear",
    ),
    pattern(
        "Comfy tensorwise INT8 layer {prefix!r} needs a 2D weight, got {weight_shape}",
        R.QC306,
        "an expert bank or a conv weight was quantized as a linear",
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} has incompatible weight/scale shapes: {weight_shape}, "
        "{s_rel_shape}, and {s_channel_shape}",
        R.QC307,
        "a 6-bit W4A8 layer (sglang reads W4A8 as 4-bit only: see QC312)",
        "group_size in the marker differs from the one used to quantize",
        "group_size written as a float or string (QC220)",
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} needs an F32[16] codebook",
        R.QC305,
        "codebook saved in half precision",
        "a codebook that is not 16 entries (QC307)",
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} has an incompatible correction tensor",
        R.QC305,
        "comfy-kitchen writes weight_correction in the weight's dtype (BF16); sglang wants F32",
        "correction stored [N, K/g] instead of [K/g, N] (QC307)",
    ),
    pattern(
        "Comfy W4A8 layer {prefix!r} has invalid group_size={group_size}",
        R.QC220,
        "group_size below 4 in the marker",
    ),
    pattern(
        "Comfy W4A4 layer {prefix!r} has incompatible weight/scale shapes: {weight_shape} and "
        "{scale_shape}",
        R.QC307,
        "per-group scales written instead of one scale per row",
    ),
    pattern(
        "Comfy W4A4 layer {prefix!r} has unsupported convrot_groupsize={convrot_groupsize}",
        R.QC219,
        "a rotation group other than 16, 64 or 256",
    ),
    pattern(
        "Comfy W4A4 layer {prefix!r} has input size {K}, incompatible with quant_group_size=64 "
        "and convrot_groupsize={convrot_groupsize}",
        R.QC311,
        "K not a multiple of 64 or of the rotation group",
    ),
    pattern(
        "Comfy INT8 layer {prefix!r} has incompatible weight/scale shapes: {weight_shape} and "
        "{scale_shape}",
        R.QC307,
        "row scales saved as [N] instead of [N, 1]",
    ),
    pattern(
        "Comfy layer {prefix!r} is missing checkpoint tensors: {missing}",
        R.QC301,
        "scales dropped by a filter that kept only .weight tensors",
        "a marker left for a layer that was removed (QC223)",
    ),
    pattern(
        "Quantized weights are missing comfy_quant metadata: {first5}",
        R.QC314,
        "a plain FP8 cast or a legacy scaled_fp8 file (QC315)",
        "header marker names without the model.diffusion_model. prefix (QC222)",
    ),
    pattern(
        "Invalid Comfy quantization marker {key!r} in {path}",
        R.QC201,
        "marker bytes zeroed or truncated by a broken exporter (QC203)",
    ),
    pattern(
        "Comfy quantization marker {key!r} must contain a JSON object",
        R.QC202,
        "the marker holds a bare string or list",
    ),
    pattern(
        "Conflicting Comfy quantization markers for {prefix!r}",
        R.QC210,
        "header _quantization_metadata and the tensor marker disagree",
        "two shards carry different markers for one layer",
    ),
    pattern("Invalid _quantization_metadata in {path}", R.QC208, "the header string is not JSON"),
    pattern(
        "_quantization_metadata in {path} must contain an object",
        R.QC208,
        "the header string is JSON but not an object",
    ),
    pattern(
        "_quantization_metadata in {path} must contain a layers object",
        R.QC208,
        'ModelOpt-style {"quant_algo": …} metadata instead of ComfyUI\'s layers map',
    ),
    pattern(
        "Comfy quantization metadata for {prefix!r} must be an object",
        R.QC209,
        "a layers entry written as a bare format string",
    ),
    pattern(
        "MXFP8 layer {prefix!r} has incompatible weight/scale metadata: {weight_meta} and "
        "{scale_meta}",
        R.QC604,
        "quant_format=mxfp8 beside layers of another format",
        "comfy-kitchen's padded swizzled scale, or an F8_E8M0-typed scale",
    ),
    pattern(
        "Unsupported Comfy quantization format(s): {formats}",
        R.QC602,
        "a mix of formats sglang cannot resolve (e.g. FP8 + INT8)",
        "float8_e5m2 or awq_w4a16 layers (QC601)",
        "a marker without format (QC212)",
        "a misspelt or non-string format (QC213)",
        refine=_formats,
    ),
    pattern(
        "Serialized convrot_int8 layer {prefix!r} must set convrot=true",
        R.QC218,
        "convrot written as 1 or a string",
    ),
    pattern(
        "Serialized convrot_int8 layer {prefix!r} must declare convrot_groupsize in "
        "(16, 64, 256), got {value}",
        R.QC219,
        "the key is missing or a string",
    ),
    # sglang 0.5.19-0.5.21 said "kitchen_int8" (KitchenInt8Config; renamed in 0.5.22), and
    # 0.5.19 had no INT8 embedding exemption: a marker without convrot is QC613 there.
    pattern(
        "Serialized kitchen_int8 layer {prefix!r} must set convrot=true",
        R.QC613,
        "sglang 0.5.19: a plain INT8 embedding (or linear) in a ConvRot file",
        "convrot written as 1 or a string (QC218, every release)",
        runtime="sglang 0.5.19-0.5.21",
        target="sglang@0.5.19",
    ),
    pattern(
        "Serialized kitchen_int8 layer {prefix!r} must declare convrot_groupsize in "
        "(16, 64, 256), got {value}",
        R.QC219,
        "the key is missing or a string",
        runtime="sglang 0.5.19-0.5.21",
        target="sglang@0.5.19",
    ),
    pattern(
        "Comfy NVFP4 layer {prefix!r} must request full_precision_matrix_mult",
        R.QC614,
        "an NVFP4 marker without full_precision_matrix_mult: true (sglang 0.5.19 only)",
        runtime="sglang 0.5.19",
        target="sglang@0.5.19",
    ),
    pattern(
        "Serialized W4A8 layer {prefix!r} must set convrot=true",
        R.QC225,
        "ComfyUI's saver never writes convrot for W4A8",
    ),
    pattern(
        "Serialized W4A8 layer {prefix!r} has input size {K}, incompatible with "
        "group_size={gs} and convrot_groupsize={cg}",
        R.QC311,
        "group sizes that do not divide K",
    ),
    pattern(
        "Serialized W4A4 layer {prefix!r} has unsupported linear_dtype={text!r}; expected one "
        "of ('int4', 'int8')",
        R.QC221,
        "a typo in linear_dtype",
    ),
    pattern(
        "Unsupported Comfy W4A8 format for {prefix!r}: {format}",
        R.QC603,
        "an INT8 ConvRot linear beside W4A8 layers",
    ),
    pattern(
        "Unsupported Comfy NVFP4 companion for {prefix!r}: {format}",
        R.QC603,
        "an INT8 ConvRot linear beside NVFP4 layers",
    ),
    pattern(
        "Rotated NVFP4 weights are not supported: {prefix!r}",
        R.QC318,
        "convrot copied into an NVFP4 marker",
    ),
    # sglang 0.5.23's rowwise FP8 header path (layers/quantization/rowwise_fp8.py):
    # RowwiseFp8Error, raised through get_quant_config_from_safetensors_metadata uncaught.
    pattern(
        "unsupported quantization format_version {version}; expected one of ['1.1']",
        R.QC621,
        'a rowwise-float8_e4m3fn header written with ComfyUI\'s format_version "1.0"',
        "format_version written as a number (1.1) instead of the string",
    ),
    pattern(
        "_quantization_metadata has no 'layers' map",
        R.QC622,
        "a rowwise FP8 declaration only in quant_configs, or layers that is not an object",
    ),
    pattern(
        "unknown quant format {fmt} for layer {prefix!r}",
        R.QC622,
        "a comfy_quant format (float8_e4m3fn, int8_tensorwise, …) beside rowwise FP8 layers",
        "an unquantized layer not declared as bf16",
    ),
    pattern(
        "_quantization_metadata declares no quantized layers (rowwise-float8_e4m3fn)",
        R.QC622,
        "rowwise-float8_e4m3fn named only in quant_configs",
    ),
    pattern(
        "missing quant_configs['rowwise-float8_e4m3fn'] layout descriptor",
        R.QC622,
        "the header has layers but no quant_configs descriptor",
    ),
    pattern(
        "unsupported FP8 scale_recipe {recipe}; only 'rowwise' is supported",
        R.QC622,
        "a per-tensor or block recipe in quant_configs",
    ),
    pattern(
        "FP8 layer {prefix!r} missing weight tensor {tensor!r}",
        R.QC623,
        "a header layer name that differs from the tensor names (model prefix)",
    ),
    pattern(
        "FP8 layer {prefix!r} missing weight_scale tensor {tensor!r}",
        R.QC623,
        "the scale saved as scale_weight or weight_scale_inv",
    ),
    pattern(
        "expected dtype F8_E4M3, got {dtype}",
        R.QC623,
        "an unquantized or E5M2 weight declared rowwise-float8_e4m3fn",
    ),
    pattern(
        "expected 2-D weight, got shape {found}",
        R.QC623,
        "a conv or fused weight declared rowwise FP8",
    ),
    pattern(
        "row-wise scale must have shape [{N}], got {found}",
        R.QC623,
        "a ComfyUI-style [N, 1] per-row scale or a per-tensor scalar",
    ),
    pattern(
        "static input_scale must be float32 shape [1], got dtype={dtype} shape={shape}",
        R.QC623,
        "a scalar [] input_scale (ComfyUI FP8 writes one)",
    ),
    pattern(
        "unexpected quantization tensor {tensor!r} for a non-FP8 layer",
        R.QC623,
        "a bf16 layer or an undeclared layer still carrying weight_scale / input_scale",
    ),
    pattern(
        "expected dtype F32, got {dtype}",
        R.QC623,
        "a BF16 or F16 row-wise weight_scale",
    ),
    pattern(
        "Got unsupported ScalarType {scalar}", R.QC204, "the marker tensor was saved as BF16/FP8"
    ),
    pattern(
        "Dtype not understood: {dtype}",
        R.QC204,
        "the marker tensor was saved as F6",
        runtime=f"safetensors (via {SGLANG.label})",
    ),
]
