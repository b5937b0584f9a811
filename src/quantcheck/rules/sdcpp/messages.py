"""stable-diffusion.cpp's messages (`quantcheck explain`): the exact errors its safetensors
reader, model manager and Linear print (leejet/stable-diffusion.cpp bcc7e295), each mapped to
the rule that finds the cause before loading."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, pattern
from quantcheck.rules import codes as R
from quantcheck.rules.rule import Rule

RUNTIME = "stable-diffusion.cpp bcc7e295"
TARGET = "sdcpp"


def _p(template: str, rule: Rule, *causes: str) -> MessagePattern:
    return pattern(template, rule, *causes, runtime=RUNTIME, target=TARGET)


PATTERNS: list[MessagePattern] = [
    _p(
        "ComfyUI int8_tensorwise weight is not I8: {tensor!r}",
        R.QC748,
        "a layer fell back to 16-bit during export but kept its int8_tensorwise marker",
        "the weight was stored as U8 instead of I8",
    ),
    _p(
        "invalid ComfyUI convrot group size for tensor {tensor!r}",
        R.QC746,
        "the rotated marker has no top-level convrot_groupsize (ComfyUI defaults to 256, "
        "sd.cpp takes 0)",
        "the group is not a power of four or does not divide K",
    ),
    _p(
        "invalid dtype for ComfyUI quantization metadata tensor {tensor!r}",
        R.QC205,
        "the marker was saved as I8 or another dtype instead of U8",
    ),
    _p(
        "invalid ComfyUI quantization metadata tensor {tensor!r} in {path!r}",
        R.QC206,
        "the marker tensor is empty or over 64 KiB",
    ),
    _p(
        "parsing ComfyUI quantization metadata tensor failed: {tensor!r}",
        R.QC201,
        "the marker bytes are not JSON (zeroed or truncated)",
        "convrot or convrot_groupsize has the wrong JSON type (a string, or 1 for true)",
    ),
    _p(
        "unsupported dtype {dtype!r} (tensor {tensor!r})",
        R.QC747,
        "MXFP8 block scales stored as F8_E8M0 instead of U8",
        "a tensor of a dtype sd.cpp has no type for (BOOL, I16, U16, ...)",
    ),
    _p(
        "tensor {tensor!r} not in model metadata",
        R.QC740,
        "the layer's weight is U8 (NVFP4): sd.cpp's reader skips U8 tensors",
        "the checkpoint is for another model, or a tensor was renamed",
    ),
    _p(
        "GGML_ASSERT(has_weight_scale) failed",
        R.QC745,
        "an int8_tensorwise layer lost its weight_scale",
    ),
]
