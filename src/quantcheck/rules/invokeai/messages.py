"""InvokeAI 6.14.2's messages (and torch's, as its loaders surface them) mapped to rules."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, pattern
from quantcheck.rules import codes as R

RT = "InvokeAI 6.14.2"
PACKED = "the file is NVFP4, W4A8, W6A8, W4A4 or AWQ: InvokeAI does not unpack packed codes"
PATTERNS: list[MessagePattern] = [
    pattern(
        "Dequantized {count} ComfyUI-quantized weights",
        R.QC720,
        "InvokeAI multiplied each weight_scale into its weight: the model now holds BF16 "
        "weights (check the file for ConvRot or MXFP8 layers, which this makes wrong)",
        runtime=RT,
        target="invokeai",
    ),
    pattern(
        "Dequantized {count} ComfyUI quantized weights",  # the Z-Image loader's copy
        R.QC720,
        "InvokeAI's Z-Image loader multiplied each weight_scale into its weight: BF16 weights",
        runtime=RT,
        target="invokeai",
    ),
    pattern(
        "{source} has {count} weights that WanTransformer3DModel has nowhere to put "
        "(modules: {modules}).",
        R.QC724,
        "quantization tensors InvokeAI does not strip (input_scale, weight_scale_2, ...) are "
        "left in the state dict",
        "the checkpoint is a Wan variant with extra branches (Animate, S2V, Fun-Camera)",
        runtime=RT,
        target="invokeai",
    ),
    pattern(
        "size mismatch for {key}: copying a param with shape {found} from checkpoint, "
        "the shape in current model is {wanted}",
        R.QC723,
        PACKED,
        "a padded NVFP4/MXFP8 layout (more rows or columns than the layer)",
        runtime=RT,
        target="invokeai",
    ),
]
