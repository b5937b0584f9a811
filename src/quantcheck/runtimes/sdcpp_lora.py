"""stable-diffusion.cpp's LoRA path on ComfyUI-quantized layers, read only, at bcc7e295.

`src/stable-diffusion.cpp` (~L965-1003): with `--lora-apply-mode auto` (the default) LoRAs are
applied at run time whenever the model has int8_tensorwise weights or ggml-quantized types,
else merged immediately; "immediately" is refused for int8_tensorwise ("INT8 tensorwise
weights do not support the immediately LoRA apply mode; using at_runtime instead").
`src/core/ggml_extend.hpp` `Linear::forward`: an I8 weight keeps its INT8 matmul
(`ggml_ext_linear_i8_tensorwise`) and the LoRA is added to its output
(`MultiLoraAdapter::add_lora_to_output`, `src/model/adapter/lora.hpp`: x @ down @ up * scale,
or x @ diff for LoHa/LoKr/diff): a side branch. FP8 weights are converted to F16 at load
(`src/model_loader.cpp` `f8_e4m3_to_f16_vec`, scales applied from PR #1913 on), so an FP8
layer is an F16 layer: merged into F16 (`LoraModel::build_lora_graph`, `ggml_add_inplace`) in
immediately mode, a side branch at run time (`forward_with_lora`). NVFP4, MXFP8 and the W4
formats are not loaded (QC740).

Keys: sd.cpp's name conversion (`ModelLoader::init_from_file_and_convert_name`, prefix
"lora.") onto its own tensor names; unused tensors are logged "unused lora tensor": not
predicted key by key. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

AT = "leejet/stable-diffusion.cpp @bcc7e295"

PATH = LoraPath(
    runtime="sdcpp",
    read_at="bcc7e295",
    default_mode="auto",
    modes={
        "auto": "default: at_runtime when the model has INT8 tensorwise or ggml-quantized "
        "weights, else immediately",
        "at_runtime": "the LoRA beside each layer's matmul (side branch)",
        "immediately": "merged into the weights once (refused for INT8 tensorwise)",
    },
    outcome={
        "int8_tensorwise": "side-branch",
        "float8_e4m3fn": "merged",
        "float8_e5m2": "merged",
    },
    other="not-loaded",
    requant="f16",
    keys="sd.cpp's name conversion (prefix 'lora.') onto its tensor names",
    key_map="own",
    evidence={
        "mode": f"{AT} src/stable-diffusion.cpp (~L965-1003) lora_apply_mode auto / "
        "immediately refused for INT8 tensorwise [READ]",
        "int8": f"{AT} src/core/ggml_extend.hpp Linear::forward (I8: "
        "ggml_ext_linear_i8_tensorwise + add_lora_to_output) [READ]",
        "adapter": f"{AT} src/model/adapter/lora.hpp MultiLoraAdapter::add_lora_to_output, "
        "forward_with_lora, LoraModel::build_lora_graph [READ]",
        "fp8": f"{AT} src/model_loader.cpp f8_e4m3_to_f16_vec (FP8 loaded as F16) [READ]",
    },
    verified="[READ]",
    cost="INT8 layers: two extra thin matmuls per layer per step (the LoRA factors resident); "
    "FP8 layers already run as F16",
)
