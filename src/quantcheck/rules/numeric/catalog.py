"""QC4xx: values of scales and codes (`check --deep`; codes need --read-weights)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects

E, W = Severity.ERROR, Severity.WARNING
DEG = effects("degraded", "degraded")
EV = (
    "comfy-kitchen 0.2.40 dequantize functions (backends/eager/quantization.py, "
    "tensor/*.py; run, including what they write for zero and NaN inputs); effect on the "
    "runtimes inferred from the formulas."
)

RULES = [
    Rule(
        "QC401",
        "scale-not-finite",
        E,
        "NaN or Inf in a scale tensor",
        DEG,
        None,
        "Every value of every scale tensor (weight_scale, weight_scale_2, input_scale, "
        "weight_s_rel, weight_s_channel, AWQ scales) is finite.",
        "A NaN scale makes every weight it scales NaN; the model outputs NaN. comfy-kitchen "
        "writes NaN scales for all-zero FP8/NVFP4 tensors and NaN inputs.",
        "weight_scale F32 [] = nan",
        "Requantize the layer from its original weights.",
        EV,
    ),
    Rule(
        "QC402",
        "scale-negative",
        E,
        "negative values in a scale tensor",
        DEG,
        None,
        "Scales are non-negative (quantizers store amax-derived magnitudes).",
        "A negative scale flips the sign of every weight it scales.",
        "weight_s_channel F32 [3072] with 12 negative entries",
        "Requantize the layer; look for a byte-order or dtype mix-up in the exporter.",
        EV,
    ),
    Rule(
        "QC403",
        "scale-zero",
        W,
        "zero scales",
        DEG,
        None,
        "Per-tensor and per-row scales are non-zero (comfy-kitchen never writes 0: int8 uses "
        "1e-30, W4A8 1e-8 for all-zero rows). Zero block scales in NVFP4/MXFP8/W4A8 mark zero "
        "blocks and are fine.",
        "A zero per-tensor scale makes the whole layer zero; zero row scales zero those "
        "output channels (reported as a note).",
        "float8_e4m3fn weight_scale F32 [] = 0.0",
        "Requantize the layer from its original weights.",
        EV,
    ),
    Rule(
        "QC404",
        "e8m0-nan-byte",
        E,
        "MXFP8 E8M0 scale byte 255 (NaN)",
        DEG,
        None,
        "MXFP8 block-scale bytes are 0..254 (255 encodes NaN in E8M0).",
        "comfy-kitchen decodes 255 as +inf/NaN: those blocks dequantize to NaN.",
        "weight_scale U8 [128, 4] containing 0xFF",
        "Requantize the layer.",
        "comfy-kitchen 0.2.40 backends/eager/quantization.py "
        "dequantize_mxfp8 (run): e = 255 decodes to +inf.",
    ),
    Rule(
        "QC405",
        "swizzle-padding-nonzero",
        W,
        "non-zero padding in swizzled block scales",
        effects("none", "none"),
        None,
        "The padding entries of a swizzled NVFP4/MXFP8 block-scale matrix (rows past "
        "ceil128(N), columns past the K blocks) are zero, as comfy-kitchen writes them.",
        "Runtimes never read the padding, but non-zero padding means the writer filled the "
        "tiles some other way — check the real entries too.",
        "nvfp4 weight_scale [128, 4] for K/16 = 2 columns, with bytes in columns 2..3",
        "Re-export the scales with zero padding.",
        "comfy-kitchen 0.2.40 float_utils.py to_blocked (run: padding is 0).",
    ),
    Rule(
        "QC406",
        "block-scales-not-swizzled",
        E,
        "block scales stored row-major, not swizzled",
        DEG,
        None,
        "NVFP4/MXFP8 block scales are stored in the 128x4-tile swizzled layout. Where the "
        "matrix has padding, the bytes show the layout: zero padding under the row-major "
        "reading and non-zero padding under the swizzled one means the scales were written "
        "unswizzled.",
        "Both runtimes unswizzle the scales, so every block gets another block's scale: the "
        "layer loads and computes noise (sglang PR #38028 was this bug in reverse).",
        "mxfp8 weight_scale U8 [128, 4] written as a plain [N, K/32] matrix padded at the end",
        "Swizzle the scales (re-export with comfy-kitchen's to_blocked layout).",
        "comfy-kitchen 0.2.40 float_utils.py to_blocked (run); sglang PR #38028. Detection needs "
        "padding: aligned layers (N % 128 == 0, K-blocks % 4 == 0) cannot show it.",
    ),
    Rule(
        "QC407",
        "codes-out-of-range",
        W,
        "weight codes the format never writes",
        DEG,
        Safety.DISPLAY,
        "FP8 weights hold no NaN codes; ConvRot W4A4 int4 codes are -7..7.",
        "NaN codes make NaN outputs; -8 in a symmetric int4 layer means another quantizer "
        "(or corrupted bytes) wrote it.",
        "float8_e4m3fn weight with 0x7F bytes",
        "Requantize the layer from its original weights.",
        EV,
    ),
    Rule(
        "QC408",
        "layer-all-zero",
        W,
        "a layer whose weight bytes are all zero",
        DEG,
        None,
        "A quantized weight has at least one non-zero code.",
        "An all-zero layer computes zero: usually a failed or interrupted export.",
        "nvfp4 weight U8 [3072, 1536] all 0x00",
        "Re-export the layer.",
        EV,
    ),
    Rule(
        "QC409",
        "codebook-invalid",
        E,
        "W4A8 codebook not finite or not sorted",
        DEG,
        None,
        "weight_codebook holds 16 finite levels in ascending order.",
        "A NaN level makes NaN weights; quantizers pick the nearest level assuming sorted "
        "levels, so an unsorted table is a sign of corruption.",
        "weight_codebook F32 [16] with a NaN entry",
        "Requantize the layer.",
        "comfy-kitchen 0.2.40 tensor/w4a8_int8.py "
        "quantize_w4a8_int8_weight and backends/eager/w4a8_int8.py (run).",
    ),
]
