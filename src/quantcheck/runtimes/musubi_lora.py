"""musubi-tuner's LoRA path on a pre-quantized ConvRot INT8 DiT, read only.

The layers of an admitted artifact run `ConvRotInt8LinearFn`
(`src/musubi_tuner/modules/convrot_int8_utils.py` @725869d, `prepare_convrot_int8_model`),
kept as `nn.Linear` so LoRA modules target them ("LoRA targets modules by class name"). A LoRA
(`src/musubi_tuner/networks/lora.py` `LoRAModule.forward`, read at 30c658c) replaces the
module's forward by org_forward(x) + lora_up(lora_down(x)) * multiplier * scale: a side branch.
Merging a LoRA into weights happens in musubi only while loading 16/32-bit weights (the
`weight_hook` of `ConvRotInt8Quantizer.load_and_quantize`, which refuses 1-byte weights:
"Loading pre-quantized weights with --convrot_int8 is not supported yet").

Keys: kohya `lora_unet_<module path with _>` of musubi's own model classes: not predicted key
by key. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

REPO = "kohya-ss/musubi-tuner"

PATH = LoraPath(
    runtime="musubi",
    read_at="725869d (convrot_int8_utils.py) / 30c658c (networks/lora.py)",
    default_mode="network",
    modes={"network": "LoRA modules wrap each targeted Linear's forward (side branch)"},
    outcome={"int8_tensorwise": "side-branch"},
    other="not-loaded",
    keys="kohya lora_unet_<module path with _> of musubi's model classes",
    key_map="own",
    evidence={
        "layers": f"{REPO} @725869d src/musubi_tuner/modules/convrot_int8_utils.py "
        "prepare_convrot_int8_model / ConvRotInt8LinearFn [READ]",
        "lora": f"{REPO} @30c658c src/musubi_tuner/networks/lora.py LoRAModule.forward "
        "(org_forward + lora_up(lora_down(x))) [READ]",
        "merge": f"{REPO} @725869d convrot_int8_utils.py ConvRotInt8Quantizer.load_and_quantize "
        "(refuses 1-byte weights) [READ]",
    },
    verified="[READ]",
    cost="two extra thin GEMMs per targeted layer per step and the factors in memory",
)
