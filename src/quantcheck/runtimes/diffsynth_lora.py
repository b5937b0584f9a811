"""DiffSynth-Studio's LoRA path on its comfy-kitchen quantized layers, read and run in the
2.1.12 wheel.

`diffusion/base_pipeline.py` `BasePipeline.load_lora` -> `check_quant_hot_load`: a model with
a `quantize_config` (set by `core/loader/model.py` when it was loaded through a quantization
backend, such as the comfy-kitchen one for pre-quantized files) is switched to LoRA hot
loading ("A quantized weight cannot absorb a fused LoRA"): the factors are appended to each
`LoRAHotLoadMixin` layer and `lora_forward` adds x @ A^T @ B^T to its output
(`core/vram/layers.py`): a side branch in the compute dtype. Formats it loads:
float8_e4m3fn and int8_tensorwise (its comfy-kitchen backend).

Keys: `utils/lora/general.py` `GeneralLoRALoader.get_name_dict`: a key with `.lora_up.` is
kohya-style (lora_up/lora_down), else `lora_B`/`lora_A`; the module name is the key before
that part, a leading `diffusion_model.` dropped; alpha folded into the down factor (alpha /
rank). Names must equal DiffSynth's module names; kohya's `lora_unet_a_b_c` underscore names
match no module and are skipped silently (only a count is printed). The differential suite
runs `get_name_dict` / `convert_state_dict`. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

WHEEL = "DiffSynth-Studio 2.1.12 wheel diffsynth"

PATH = LoraPath(
    runtime="diffsynth",
    read_at="2.1.12 (PyPI wheel)",
    default_mode="hotload",
    modes={
        "hotload": "forced for quantized models: x @ A^T @ B^T added to the layer's output",
        "fuse": "fuse_lora_to_base_model (unquantized models only)",
    },
    outcome=dict.fromkeys(("float8_e4m3fn", "int8_tensorwise"), "side-branch"),
    other="not-loaded",
    keys="GeneralLoRALoader.get_name_dict: dotted module names (diffusion_model. dropped), "
    "lora_up/lora_down or lora_A/lora_B",
    key_map="own",
    evidence={
        "hotload": f"{WHEEL}/diffusion/base_pipeline.py BasePipeline.check_quant_hot_load / "
        "load_lora [READ]",
        "forward": f"{WHEEL}/core/vram/layers.py LoRAHotLoadMixin.lora_forward [READ]",
        "keys": f"{WHEEL}/utils/lora/general.py GeneralLoRALoader.get_name_dict / "
        "convert_state_dict [RUN]",
    },
    verified="[READ]",
    cost="two extra thin GEMMs per targeted layer per step and the factors in memory",
)
