"""musubi-tuner's LoRA path on a pre-quantized ConvRot INT8 DiT, read only, at 0.3.6 (the newest
step runtimes/musubi.py models; read in the code index's copy of wenyifancc/musubi-tuner
@2253ebee, a fork at upstream 0.3.6).

The layers of a pre-quantized file stay `nn.Linear` with a patched forward that runs
`ConvRotInt8LinearFn` (`src/musubi_tuner/modules/convrot_int8_utils.py`
`apply_convrot_int8_monkey_patch`; the module keeps the class because "LoRA targets modules by
class name"). A LoRA (`networks/lora.py` `LoRAModule.apply_to` / `forward`) replaces that
module's forward by org_forward(x) + lora_up(lora_down(x)) * multiplier * scale: a side branch
at run time, in training and in generation (`utils/lora_utils.py` `attach_lora_weights`, the
route `minimax_h3_generate_video.py` `_configure_lora_weights` takes for a pre-quantized base).
Merging a LoRA into the weights at load (the `weight_hook` of
`ConvRotInt8Quantizer.load_and_quantize`) is refused for a file with `.comfy_quant` markers
("Cannot merge LoRA weights into pre-quantized ConvRot INT8 checkpoint ... apply the LoRA at
runtime"). 725869d (PR #1024's branch) had the same side branch (`prepare_convrot_int8_model`;
networks/lora.py read at v0.3.4, 30c658c).

Keys: kohya `lora_unet_<module path with _>` of musubi's own model classes: not predicted key
by key. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

REPO = "kohya-ss/musubi-tuner 0.3.6 (wenyifancc/musubi-tuner @2253ebee) src/musubi_tuner"

PATH = LoraPath(
    runtime="musubi",
    read_at="0.3.6 (convrot_int8_utils.py, networks/lora.py, utils/lora_utils.py)",
    default_mode="network",
    modes={"network": "LoRA modules wrap each targeted Linear's forward (side branch)"},
    outcome={"int8_tensorwise": "side-branch"},
    other="not-loaded",
    keys="kohya lora_unet_<module path with _> of musubi's model classes",
    key_map="own",
    evidence={
        "layers": f"{REPO}/modules/convrot_int8_utils.py apply_convrot_int8_monkey_patch / "
        "ConvRotInt8LinearFn (the module stays an nn.Linear, its forward patched) [READ]",
        "lora": f"{REPO}/networks/lora.py LoRAModule.apply_to / forward (org_forward + "
        "lora_up(lora_down(x)) * multiplier * scale); utils/lora_utils.py attach_lora_weights "
        "(runtime additive branches), used by minimax_h3_generate_video.py "
        "_configure_lora_weights for a pre-quantized base [READ]",
        "merge": f"{REPO}/modules/convrot_int8_utils.py ConvRotInt8Quantizer.load_and_quantize "
        '("Cannot merge LoRA weights into pre-quantized ConvRot INT8 checkpoint": a merge '
        "weight_hook with .comfy_quant markers raises) [READ]",
    },
    verified="[READ]",
    cost="two extra thin GEMMs per targeted layer per step and the factors in memory",
)
