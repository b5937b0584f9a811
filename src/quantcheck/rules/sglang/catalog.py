"""QC631-QC638: what each of sglang's loaders does with the file (`rules/sglang/loaders.py`).

Every finding of these rules names the loader it concerns (`data["loaders"]`); a loader's
verdict counts only the findings it reads, so a loader that fails always has a finding that
says why.
"""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects
from quantcheck.rules.upstream import SGFSDP, SGH3, SGQ, SGSPEC, SGTL

E, W = Severity.ERROR, Severity.WARNING
_OVERRIDE = (
    "sglang generate --transformer-weights-path FILE (every DiT but MiniMax-H3) resolves the "
    "file's quantization in _resolve_quant_config -> _resolve_weight_override_quantization: "
    "the header path (get_quant_config_from_safetensors_metadata), the header declarations "
    "(_quantization_metadata, quantization_config, merged), then the NVFP4 inference "
    "(build_nvfp4_config_from_safetensors_list). The comfy_quant markers are never read."
)
_COMFYUI = (
    "The --comfyui-mode single-file loader (0.5.21+) reads comfy_quant markers only for the "
    "specs that have them: MiniMax-H3 (INT8 ConvRot only) and Qwen-Image 2.1 (quant_markers), "
    "both from 0.5.22. Every other spec (Flux, Qwen-Image, Z-Image; every spec in 0.5.21) "
    "builds its linears unquantized, and fsdp_load casts each stored tensor to the parameter "
    "dtype (.to(dtype=target_dtype)) before the weight_loader."
)
_WHEELS = "sglang 0.5.19-0.5.23 PyPI wheels"

RULES = [
    Rule(
        "QC631",
        "sglang-override-undeclared",
        E,
        "sglang's --transformer-weights-path loader refuses quantized tensors without a header "
        "declaration it supports",
        effects("fails", "none"),
        None,
        "A file loaded with --transformer-weights-path whose tensors are quantized "
        "(.weight_scale, .input_scale, .comfy_quant, or an F8_E4M3 / I8 / U8 weight) declares "
        "its quantization in a way that loader builds a config from.",
        _OVERRIDE + " A file with quantized tensors, no config from the header path or a "
        "quant_method declaration, and no NVFP4 tensors to infer from stops with "
        'ValueError("Replacement checkpoint contains quantized tensors but no supported native '
        'quantization declaration") in every release 0.5.19-0.5.23 (the wheels test it: '
        "test_undeclared_quantized_weight_override_fails_closed). Loader: "
        "transformer-weights-path.",
        "int8_tensorwise + convrot layers marked only by .comfy_quant tensors, no "
        "__metadata__ declaration",
        "float8_e4m3fn with a per-tensor scale: declare the layers in the header "
        '(_quantization_metadata {"format_version": "1.0", "layers": {LAYER: {"format": '
        '"float8_e4m3fn"}}}): the header path then builds its whole-model Fp8Config '
        "(handle_fp8_metadata_format); `quantize --to float8_e4m3fn` writes it for sglang "
        "targets. NVFP4 needs nothing (inferred from its tensors). No header declaration "
        "sglang accepts exists for int8_tensorwise, asym_w4a8_int8, convrot_w4a4 or mxfp8 "
        "(ComfyFp8Config, ComfyNvfp4Config and the Kitchen configs refuse to be built from a "
        "declaration): load those with the MiniMax-H3, --comfyui-mode (MiniMax-H3, Qwen-Image "
        "2.1) or text-encoder loaders, which read the markers.",
        f"{_WHEELS}: {SGTL} _resolve_quant_config (the refusal) and "
        "_resolve_weight_override_quantization (detected_quantized_tensors, the declarations); "
        f"{SGQ} get_quant_config_from_safetensors_metadata; run by tests/rules/diff_sglang "
        "(test_transformer_weights_path_loader_agrees).",
    ),
    Rule(
        "QC632",
        "sglang-override-declaration-invalid",
        E,
        "sglang's --transformer-weights-path loader refuses the file's header declaration",
        effects("fails", "none"),
        None,
        "Every _quantization_metadata / quantization_config entry of a file loaded with "
        "--transformer-weights-path is a JSON object, the shards' declarations agree, and the "
        "shards' header configs are of one kind.",
        _OVERRIDE + " _resolve_weight_override_quantization parses both keys of every shard "
        'itself: JSON that does not parse raises ValueError("Invalid KEY in FILE"), JSON that '
        'is not an object ValueError("Invalid KEY in FILE: expected an object"), a field two '
        'shards set differently ValueError("Conflicting checkpoint quantization field ..."), '
        'and two header configs of different kinds ValueError("Conflicting safetensors '
        'quantization declarations"). Loader: transformer-weights-path.',
        '__metadata__ {"_quantization_metadata": "{not json"}',
        "Write the declaration as one JSON object, the same in every shard (or drop it).",
        f"{_WHEELS}: {SGTL} _resolve_weight_override_quantization, _merge_quant_declaration; "
        "run by tests/rules/diff_sglang (test_transformer_weights_path_loader_agrees).",
    ),
    Rule(
        "QC633",
        "sglang-override-nvfp4-degraded",
        W,
        "sglang's --transformer-weights-path loader reads this file through an inferred NVFP4 "
        "config that computes some layers wrongly",
        effects("degraded", "none"),
        None,
        "A file --transformer-weights-path reads through the NVFP4 inference (no header "
        "config) holds only NVFP4 layers the ModelOpt config reads as they are meant.",
        _OVERRIDE + " Without a header config, the NVFP4 tensors (U8 weights with 2-D F8_E4M3 "
        "weight_scale) make build_nvfp4_config_from_safetensors_list a ModelOptFp4Config: "
        "its group size comes from the first layer, convrot is ignored, and every other "
        "quantized layer is excluded and built unquantized, its stored codes cast to the "
        "parameter dtype (F8 weights dequantized with their scale). Loader: "
        "transformer-weights-path.",
        "NVFP4 layers beside float8_e4m3fn layers marked only by .comfy_quant tensors",
        "Keep NVFP4 files NVFP4-only (one group size, no convrot) for --transformer-weights-path.",
        f"{_WHEELS}: {SGTL} _resolve_quant_config, {SGQ} "
        f"build_nvfp4_config_from_safetensors_list, {SGFSDP} (read; the config step run by "
        "tests/rules/diff_sglang).",
    ),
    Rule(
        "QC634",
        "sglang-override-nvfp4-fails",
        E,
        "sglang's --transformer-weights-path loader cannot load this file through its "
        "inferred NVFP4 config",
        effects("fails", "none"),
        None,
        "A file --transformer-weights-path reads through the NVFP4 inference holds no layer "
        "the ModelOpt config cannot load.",
        _OVERRIDE + " The inferred ModelOptFp4Config excludes the non-NVFP4 layers and builds "
        "them unquantized: a packed weight (W4A8, W4A4, ...) does not fit its [N, K] "
        "parameter and the weight_loader's shape assertion stops the load; NVFP4 layers the "
        "ModelOpt route refuses stop it too. Loader: transformer-weights-path.",
        "NVFP4 layers beside asym_w4a8_int8 layers",
        "Keep NVFP4 files NVFP4-only for --transformer-weights-path.",
        f"{_WHEELS}: {SGTL} _resolve_quant_config, {SGQ} "
        f"build_nvfp4_config_from_safetensors_list, {SGFSDP} (read; the config step run by "
        "tests/rules/diff_sglang).",
    ),
    Rule(
        "QC635",
        "sglang-comfyui-mode-unquantized",
        W,
        "sglang's --comfyui-mode loader builds these layers unquantized and casts their "
        "stored codes",
        effects("degraded", "none"),
        None,
        "A marked file meant for --comfyui-mode is loaded through a spec that reads markers.",
        _COMFYUI + " A quantized weight of the logical [N, K] shape is cast (F8 weights "
        "dequantized with their weight_scale, I8 codes taken as values): the model computes "
        "unquantized, from codes without their scale where there is no F8 dequantization. "
        "Loader: comfyui-mode (0.5.21+; the worst over its specs while the model family is "
        "not known).",
        "int8_tensorwise layers of a Flux checkpoint loaded with --comfyui-mode",
        "Load the file with a loader that reads the markers (MiniMax-H3, the Qwen-Image 2.1 "
        "spec, the text-encoder loader), or dequantize it for this loader.",
        f"sglang 0.5.21-0.5.23 PyPI wheels: {SGSPEC} load_comfyui_transformer and the specs' "
        f"quant_markers, {SGFSDP} (read).",
    ),
    Rule(
        "QC636",
        "sglang-comfyui-mode-packed",
        E,
        "sglang's --comfyui-mode loader cannot fit these packed layers into unquantized parameters",
        effects("fails", "none"),
        None,
        "A file with packed layers (NVFP4, W4A8, W4A4, AWQ) meant for --comfyui-mode is "
        "loaded through a spec that reads markers.",
        _COMFYUI + " A packed weight stores fewer columns than its [N, K] parameter: the "
        "weight_loader's shape assertion stops the load ('Failed to shard/load parameter'). "
        "Loader: comfyui-mode (0.5.21+).",
        "nvfp4 layers of a Flux checkpoint loaded with --comfyui-mode",
        "Load the file with a loader that reads the markers.",
        f"sglang 0.5.21-0.5.23 PyPI wheels: {SGSPEC} load_comfyui_transformer, {SGFSDP} (read).",
    ),
    Rule(
        "QC637",
        "sglang-comfyui-mode-spec-refuses",
        E,
        "a --comfyui-mode spec that reads markers refuses this file's formats",
        effects("fails", "none"),
        None,
        "The formats of a marked file meant for --comfyui-mode are the ones its marker-reading "
        "specs accept: INT8 ConvRot for MiniMax-H3; no NVFP4 for Qwen-Image 2.1 (its markers "
        "are resolved without the files).",
        _COMFYUI + ' The MiniMax-H3 spec raises ValueError("ComfyUI H3 integrated mode '
        'currently supports serialized INT8 ConvRot quantization") for any other format; the '
        "Qwen-Image 2.1 spec passes its markers to resolve_minimax_h3_checkpoint_quantization "
        'without the files, which raises ValueError("MiniMax-H3 NVFP4 metadata requires '
        'checkpoint files") on NVFP4. Loader: comfyui-mode (0.5.22+).',
        "float8_e4m3fn layers loaded with --comfyui-mode as a MiniMax-H3 checkpoint",
        "Use INT8 ConvRot for MiniMax-H3's integrated mode; load NVFP4 Qwen-Image 2.1 files "
        "with --transformer-weights-path.",
        f"sglang 0.5.22-0.5.23 PyPI wheels: {SGSPEC} load_comfyui_transformer, "
        f"comfyui_checkpoints/qwen_image21.py, {SGH3} resolve_minimax_h3_checkpoint_"
        "quantization (read).",
    ),
    Rule(
        "QC638",
        "sglang-marker-readers-refuse-header-formats",
        E,
        "sglang's marker-reading loaders refuse the header-only rowwise formats",
        effects("fails", "none"),
        None,
        "A file whose markers name the header-only formats (rowwise-float8_e4m3fn, bf16) is "
        "not loaded through a loader that reads the markers first.",
        "The MiniMax-H3 loader (inspect_minimax_h3_safetensors, never the header path while "
        "the file has markers) and the --comfyui-mode specs that read markers hand them to "
        "resolve_comfy_checkpoint_quantization, which has no rowwise format: "
        'NotImplementedError("Unsupported Comfy quantization format(s): ..."), in every '
        "release 0.5.19-0.5.23 (0.5.23's RowwiseFp8Config is reached only through the header "
        "path). Loaders: minimax-h3, comfyui-mode.",
        'a rowwise FP8 file (format_version "1.1", rowwise-float8_e4m3fn and bf16 layers) '
        "loaded as MiniMax-H3",
        "Load rowwise FP8 files with --transformer-weights-path on sglang 0.5.23 (the header "
        "path), or write float8_e4m3fn with per-tensor scales for the marker readers.",
        f"{_WHEELS}: {SGH3} inspect_minimax_h3_safetensors, {SGQ} "
        "resolve_comfy_checkpoint_quantization; run by tests/rules/diff_sglang "
        "(test_minimax_h3_loader_agrees).",
    ),
]
