"""SD.Next's LoRA path on the layers its native transformer loader makes of a ComfyUI file,
read only, at snapshot d11a619.

`pipelines/native_transformer.py` `build_component_prequantized` adopts int8_tensorwise
(+ConvRot as SDNQ's Hadamard), float8_e4m3fn and nvfp4 layers as SDNQ layers
(`COMFY_QUANT_FORMATS`: int8, float8_e4m3fn, float4_e2m1fn in groups of 16). A LoRA on such a
layer (`modules/lora/lora_apply.py` `network_add_weights`, reached from
`network_apply_direct` in the default native-fuse mode, `lora_fuse_native` True) dequantizes
it in float32 (`sdnq_dequantizer`), adds the LoRA's up @ down, and re-quantizes with
`modules/sdnq/quantizer.py` `sdnq_quantize_layer` and the layer's SDNQ settings, stochastic
rounding off (SDNQConfig default): `quant_utils.quantize_weight` with symmetric scales
recalculated (`get_scale_symmetric`: amax / max over each row, or each 16-wide group for FP4),
integers rounded by `round_()`, FP8 by the cast, FP4 by `packed_float.pack_float`'s bit
rounding. The re-quantized layer keeps SDNQ's layout (per-row scales even where the file had
one per tensor). The differential suite runs that quantizer (SD.Next's own files, fetched at
d11a619) against `numeric/lora_requant.sdnq_requant`: bit-identical; the path from the LoRA
loader to it is read only.

The "LoRA load using Diffusers method" option (`lora_force_diffusers`, off by default) uses
diffusers/peft adapters instead (a side branch) [GUESS: not followed into SDNQ layers]. Later
(PR #5044, after d11a619, read as its description only) sub-8-bit layers keep LoRAs as a side
channel; not modelled. Keys: SD.Next's network loader (modules/lora/lora_convert.py,
networks.py) onto the pipeline's diffusers module names: not predicted key by key.
Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

AT = "vladmandic/sdnext @d11a619"

PATH = LoraPath(
    runtime="sdnext",
    read_at="d11a619",
    default_mode="native-fuse",
    modes={
        "native-fuse": "default (lora_fuse_native): dequantize, add up @ down in float32, "
        "re-quantize with SDNQ round-to-nearest and recalculated scales",
        "native-backup": "lora_fuse_native off: the same re-quantization from a backup",
        "diffusers": "lora_force_diffusers: diffusers/peft adapters (side branch) [GUESS]",
    },
    outcome=dict.fromkeys(("int8_tensorwise", "float8_e4m3fn", "nvfp4"), "requantized"),
    other="not-loaded",
    requant="sdnq",
    keys="SD.Next's network loader onto the pipeline's diffusers module names",
    key_map="own",
    evidence={
        "adopt": f"{AT} pipelines/native_transformer.py build_component_prequantized, "
        "COMFY_QUANT_FORMATS [READ]",
        "merge": f"{AT} modules/lora/lora_apply.py network_add_weights (sdnq branch): "
        "sdnq_dequantizer(float32) + lora, sdnq_quantize_layer(SDNQConfig(...)) [READ]",
        "rounding": f"{AT} modules/sdnq/quant_utils.py quantize_weight / get_scale_symmetric / "
        "apply_hadamard, modules/sdnq/packed_float.py pack_float (run: "
        "tests/rules/sdnext/diff/test_diff_lora.py); SDNQConfig use_stochastic_rounding="
        "False [RUN]",
        "default": f"{AT} modules/ui_definitions.py lora_fuse_native=True, "
        "lora_force_diffusers=False, sdnq_dequantize_fp32=True [READ]",
        "later": "vladmandic/sdnext PR #5044 (after d11a619): sub-8-bit LoRAs as a side "
        "channel, 'measured retention on uint4 is near zero' (description only) [READ]",
    },
    verified="[READ]",
    cost="none at run time (the layer stays quantized in SDNQ's layout); the LoRA's change "
    "is rounded to the grid once",
)
