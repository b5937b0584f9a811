"""sglang's LoRA path on quantized DiT layers (multimodal_gen), read and run in the 0.5.23 wheel.

`runtime/layers/lora/linear.py`: `wrap_with_lora_layer` wraps every targeted linear;
`BaseLayerWithLoRA.can_merge_base_weight` is False for a `LinearBase` whose quant method is
not `UnquantizedLinearMethod` (every comfy_quant layer), and `WeightOnlyFP8LinearWithLoRA`
refuses merging outright. `runtime/pipelines_core/lora/pipeline.py`
`_should_merge_lora_for_layers`: with `--lora-merge-mode auto` (the default, server_args.py
`lora_merge_mode`) a module with unmergeable weights uses dynamic LoRA ("its quantized weights
cannot be merged in place"); `merge` raises ValueError for it; `dynamic` never merges. Dynamic
LoRA is `BaseLayerWithLoRA._forward_with_delta`: the quantized layer's output plus
x @ A^T @ B^T scaled by strength x alpha / rank, in the LoRA's dtype. The differential suite
(tests/rules/sglang/diff/test_lora.py) builds each format's DiT linear with the release's own
config and quant method and runs these functions.

Keys: `normalize_lora_state_dict` (format_adapter.py: standard/peft, kohya-flux, xlabs,
ai-toolkit, Wan, Qwen-Image, non-diffusers SD formats, through diffusers' conversion
utilities), then the DiT's `lora_param_names_mapping` and `param_names_mapping` onto sglang's
own module names: not predicted key by key. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

LINEAR = "sglang 0.5.23 wheel sglang/multimodal_gen/runtime/layers/lora/linear.py"
PIPELINE = "sglang 0.5.23 wheel sglang/multimodal_gen/runtime/pipelines_core/lora/pipeline.py"

PATH = LoraPath(
    runtime="sglang",
    read_at="0.5.23 (PyPI wheel)",
    default_mode="auto",
    modes={
        "auto": "default: merges into unquantized weights, dynamic (side branch) on quantized "
        "or FSDP-sharded layers and for adapters a merge would mostly round away",
        "dynamic": "always a side branch at forward time",
        "merge": "merges into base weights; raises ValueError for quantized layers",
    },
    outcome={},
    other="side-branch",
    keys="normalize_lora_state_dict (diffusers-style names after conversion), then the DiT's "
    "lora_param_names_mapping / param_names_mapping onto sglang's module names",
    key_map="own",
    evidence={
        "unmergeable": f"{LINEAR} BaseLayerWithLoRA.can_merge_base_weight (False unless "
        "UnquantizedLinearMethod); WeightOnlyFP8LinearWithLoRA.set_lora_weights "
        "(merge_weights raises) [RUN]",
        "auto": f"{PIPELINE} _should_merge_lora_for_layers: auto -> dynamic for unmergeable "
        "weights, merge -> ValueError [RUN]",
        "dynamic": f"{LINEAR} BaseLayerWithLoRA._forward_with_delta / _add_lora_delta: "
        "out + x @ A^T @ B^T * scale [READ]",
        "keys": "sglang 0.5.23 wheel .../lora/format_adapter.py normalize_lora_state_dict; "
        "pipeline.py load_lora_adapter [READ]",
    },
    verified="[RUN]",
    cost="dynamic LoRA: two extra GEMMs of rank r per targeted layer per step (sglang's own "
    "help: up to +50% per step on small models) and the A/B factors in memory",
)
