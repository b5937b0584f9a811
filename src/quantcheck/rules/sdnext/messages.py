"""SD.Next's own messages (pipelines/native_transformer.py at d11a619), so `quantcheck explain`
recognises them. Each is the text of an OverrideArchMismatch that SD.Next logs as a warning
before loading the base model's transformer instead."""

from __future__ import annotations

from quantcheck.explain.messages import pattern
from quantcheck.rules import codes as R
from quantcheck.runtimes.sdnext import NAME, RELEASE, TITLE

LABEL = f"{TITLE} {RELEASE}"
CQ = "Load model: type={cls} native_transformer comfy_quant"
MOD = "Load model: transformer=native {component} comfy_quant marked module {prefix!r}"
FELL_BACK = "(SD.Next then loaded the base model's transformer: check which model you got)"


def _malformed(values: dict[str, str]) -> str:
    """detect_comfy_quant's "malformed" wraps json.loads errors and meta["format"] lookups."""
    err = values.get("error", "")
    if err.startswith("KeyError"):
        return R.QC212.code
    if err.startswith("TypeError"):
        return R.QC202.code
    return R.QC201.code


def _weights(values: dict[str, str]) -> str:
    return R.QC223.code if values.get("found") == "missing" else R.QC714.code


PATTERNS = [
    pattern(
        CQ + " format {formats} not supported",
        R.QC710,
        "the file uses a format SD.Next does not adopt (only int8_tensorwise, float8_e4m3fn, "
        "nvfp4) " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        CQ + " mixes formats across layers ({formats})",
        R.QC711,
        "a mixed-precision file (e.g. FP8 beside INT8); SD.Next takes one format per file "
        + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        CQ + " marker for {prefix!r} is malformed ({error})",
        R.QC201,
        "marker bytes that are not JSON (zeroed, truncated) " + FELL_BACK,
        "a marker object without format (KeyError)",
        "a marker that is a JSON list or string (TypeError)",
        runtime=LABEL,
        refine=_malformed,
        target=NAME,
    ),
    pattern(
        CQ + " layer {prefix!r} combines nvfp4 with convrot, which the format does not define",
        R.QC712,
        "an exporter that adds convrot to every marker " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        CQ + " layer {prefix!r} convrot_groupsize={group} is not a power of 4",
        R.QC713,
        "a rotation group of 32 or 128 (SD.Next builds regular Hadamards of 4^n only) " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        CQ + " layer {prefix!r} nvfp4 group_size={group} is not 16",
        R.QC712,
        "an NVFP4 marker copied from another format's settings " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        'Load model: file="{path}" native_transformer _quantization_metadata is malformed '
        "({error})",
        R.QC208,
        "the header entry is not JSON or has no layers key " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        'Load model: file="{path}" native_transformer _quantization_metadata layers map is '
        "malformed",
        R.QC209,
        "a layers entry that is not an object, or layers that is not a map " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Load model: transformer=native {component} comfy_quant format {format} expects "
        "{storage} weights but {prefix!r} has {found}",
        R.QC714,
        "FP8 weights stored as U8 (ComfyUI and Forge Neo view them as FP8, SD.Next does not) "
        + FELL_BACK,
        "a layer that fell back to 16-bit but kept its marker",
        "a marker whose weight is missing (found: missing)",
        runtime=LABEL,
        refine=_weights,
        target=NAME,
    ),
    pattern(
        MOD + " is {module}, expected Linear",
        R.QC306,
        "a marker on a convolution, embedding or norm: SD.Next adopts quantized linears only "
        + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        MOD + " convrot_groupsize={group} does not divide in_features={K}",
        R.QC713,
        "a rotation group larger than the layer's K " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        MOD + " nvfp4 group size 16 does not divide in_features={K}",
        R.QC712,
        "an NVFP4 layer whose K is not a multiple of 16 " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        MOD + " is missing nvfp4 weight_scale/weight_scale_2 tensors",
        R.QC301,
        "an NVFP4 layer saved without its block or global scale " + FELL_BACK,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        MOD + " block scales hold {have} values, expected {want}",
        R.QC715,
        "block scales saved unpadded (N, K/16), as sglang wants them " + FELL_BACK,
        "block scales of another layer size",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Load model: transformer=native {component} has {n} unexpected keys (sample: {sample})",
        R.QC302,
        "tensors the format does not use (input_scale of FP8 is dropped, others are not) "
        + FELL_BACK,
        "a legacy scaled_fp8 file (scale_weight keys)",
        "quantized weights without markers (their scales are left over)",
        runtime=LABEL,
        target=NAME,
    ),
]
