"""sglang's record (`sglang_runtime`) and its modelled releases (0.5.18 … 0.5.23) as data: each
release a delta of effects by rule code on the release before (consumers.md §2.1, read in the
PyPI wheels; `tests/rules/sglang/diff/` runs the wheels' own code against these verdicts). Its
behaviour (checks, catalog, messages, the loader reproduced) is `rules/sglang/`. Standard
library only.

The rules each release switches on or off are emitted by `SglangChecks` whatever the release
(QC611–QC614 and QC619, declared "none" for the newest; QC615, MXFP8 at weight load, on for
0.5.19–0.5.21 and again for 0.5.23; QC620–QC623, the rowwise FP8 header path, declared for the
newest and switched off before 0.5.23); a release's delta says which
of them break or degrade that release, and which newest-release rules it does not have yet
(QC318). A release also says what `quantize --target sglang@RELEASE` must not write
(`quantize`: 0.5.18 reads no tensor markers, 0.5.19-0.5.21 and 0.5.23 cannot load MXFP8) and which
marker fields it must write (`marker_fields`: 0.5.19 needs full_precision_matrix_mult on NVFP4).
"""

from __future__ import annotations

from quantcheck._record import record
from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

FAILS, DEGRADED, NONE = Effect.FAILS, Effect.DEGRADED, Effect.NONE
#: Formats sglang 0.5.18's header path honours (no marker inspector: float8 -> Fp8Config,
#: nvfp4 -> ModelOpt; NVFP4 layers are recognised from their tensors too, FP8 ones only from a
#: header declaration). QC611 reports the other layers; its effect is this release's delta.
HEADER_PATH_FORMATS = ("float8_e4m3fn", "nvfp4")
#: Formats `quantize` declares in the header for sglang targets: the only one whose header
#: declaration --transformer-weights-path builds a config from (handle_fp8_metadata_format ->
#: Fp8Config); NVFP4 needs none (inferred from its tensors), the Comfy and Kitchen configs of
#: the other formats refuse to be built from a declaration (QC631).
HEADER_DECLARED = ("float8_e4m3fn",)

#: Formats 0.5.18 does not read from `.comfy_quant` tensor markers (what `quantize` writes):
#: every marker format but NVFP4, which it finds from the layer's tensors.
_NO_INSPECTOR = (
    "sglang 0.5.18 has no marker inspector: it does not read the comfy_quant markers "
    "quantize writes (only NVFP4 layers, found from their tensors); use sglang >= 0.5.19"
)
_MARKER_ONLY = ("float8_e4m3fn", "int8_tensorwise", "asym_w4a8_int8", "convrot_w4a4", "mxfp8")
_MXFP8_WEIGHT_LOAD = (
    "sglang 0.5.19-0.5.21 and 0.5.23 stop loading MXFP8 at weight load (weight_loader_v2 "
    "calls load_column_parallel_weight without tp_rank: TypeError, QC615); use sglang 0.5.22"
)

#: Rule codes as strings: this data module sits below the rule registry (no import cycle);
#: tests/rules/sglang/test_releases.py checks every code is a registered rule.
SGLANG_RELEASES: tuple[Release, ...] = (
    Release(
        "0.5.18",
        {
            "QC611": FAILS,
            "QC615": NONE,  # no marker inspector: MXFP8 layers are not read at all (QC611)
            "QC318": DEGRADED,
            "QC619": DEGRADED,
            # padded NVFP4 scales: no inspector to refuse them; the ModelOpt builder infers a
            # wrong group size from them instead (QC619)
            "QC308": DEGRADED,
            "QC620": DEGRADED,
            "QC621": NONE,
            "QC622": NONE,
            "QC623": NONE,
            # the loaders' own rules (QC631-QC637): no loader of 0.5.18 has them
            **dict.fromkeys(
                ("QC631", "QC632", "QC633", "QC634", "QC635", "QC636", "QC637", "QC638"), NONE
            ),
        },
        quantize=dict.fromkeys(_MARKER_ONLY, _NO_INSPECTOR),
        note="no marker inspector: only the header path (float8 -> whole-model FP8, "
        "nvfp4 -> ModelOpt, NVFP4 also found from its tensors, group size from the first "
        "layer) is honoured; a rotated NVFP4 layer goes to ModelOpt, which ignores convrot "
        "[GUESS: degraded, not run on a GPU]; a rowwise-float8_e4m3fn header is read as "
        "whole-model per-tensor FP8 (until 0.5.22)",
    ),
    Release(
        "0.5.19",
        {
            "QC611": NONE,
            "QC612": FAILS,
            "QC613": FAILS,
            "QC614": FAILS,
            "QC615": FAILS,
            "QC318": NONE,
            "QC619": NONE,
            "QC308": FAILS,
            # _resolve_weight_override_quantization (--transformer-weights-path) from 0.5.19
            "QC631": FAILS,
            "QC632": FAILS,
            "QC633": DEGRADED,
            "QC634": FAILS,
            "QC638": FAILS,  # MiniMax-H3's own inspection from 0.5.19
        },
        quantize={**dict.fromkeys(_MARKER_ONLY, None), "mxfp8": _MXFP8_WEIGHT_LOAD},
        marker_fields={"nvfp4": {"full_precision_matrix_mult": True}},
        note="inspector introduced: identical markers per layer, convrot on every INT8 "
        "marker (KitchenInt8Config), full_precision_matrix_mult on every NVFP4 "
        "layer; MXFP8 layers stop the load (SRT Fp8LinearMethod takes weight_loader_v2, "
        "whose load_column_parallel_weight call lacks tp_rank)",
    ),
    Release(
        "0.5.20",
        {"QC612": NONE, "QC613": NONE, "QC614": NONE, "QC318": FAILS},
        marker_fields={"nvfp4": {}},
        note="markers merged field by field; INT8 embeddings exempt; NVFP4 rejects convrot",
    ),
    Release(
        "0.5.21",
        {"QC635": DEGRADED, "QC636": FAILS},  # the --comfyui-mode loader
        note="identical to 0.5.20 in the inspector, resolver and config classes (wheels compared)",
    ),
    Release(
        "0.5.22",
        {"QC615": NONE, "QC637": FAILS},  # --comfyui-mode specs that read markers
        quantize={"mxfp8": None},
        note="ConvRotInt8Config: messages say 'convrot_int8' instead of 'kitchen_int8'; "
        "MXFP8 loads: ComfyMXFP8LinearMethod is not in WEIGHT_LOADER_V2_SUPPORTED, so the "
        "v1 weight_loader takes the tensors (PR #38028 also stops re-swizzling the scales)",
    ),
    Release(
        "0.5.23",
        {"QC620": NONE, "QC621": FAILS, "QC622": FAILS, "QC623": FAILS, "QC615": FAILS},
        quantize={"mxfp8": _MXFP8_WEIGHT_LOAD},
        note="adds the header format rowwise-float8_e4m3fn (format_version "
        '"1.1", RowwiseFp8Config, RowwiseFp8Error not caught); marker rules identical to '
        "0.5.22; _uses_weight_loader_v2 walks the quant method's MRO, so ComfyMXFP8LinearMethod "
        "(an SRT Fp8LinearMethod) takes weight_loader_v2 again and MXFP8 fails at weight load",
    ),
)


#: The loader sglang reads a checkpoint of a model family with (`rules/sglang/loaders.py`
#: `chosen_loader`; a family not detected, or not named here: `--transformer-weights-path`,
#: the one loader whose reading does not depend on the model, see that module's docstring):
#: MiniMax-H3's own inspection, the text-encoder loader for text encoders,
#: `--transformer-weights-path` for every other DiT (what `sglang generate` documents for a
#: ComfyUI file). Family names as quantcheck's family detection spells them
#: (`families/table.py`, issue 26), lower case; `qwen_image21` is a Qwen-Image file whose
#: SwiGLU input is the fused `img_mlp.gate_up` (`rules/sglang/loaders.py` `loader_family`).
LOADER_BY_FAMILY: dict[str, str] = {
    **dict.fromkeys(("minimax-h3", "minimax_h3"), "minimax-h3"),
    **dict.fromkeys(
        ("t5xxl", "qwen35", "qwen3", "qwen3vl_32b", "mistral3", "t5-xxl", "t5", "qwen3-vl", "umt5"),
        "text-encoder",
    ),
    **dict.fromkeys(
        (
            "flux",
            "flux2",
            "chroma",
            "qwen_image",
            "qwen_image21",
            "zimage",
            "wan",
            "ltx2",
            "hunyuanvideo15",
            "sd3",
        ),
        "transformer-weights-path",
    ),
}

#: Reasons that hold for both runtimes the format is defined for (ComfyUI's record gives them
#: too): neither reads sub-byte dtypes by rows, cares about header alignment or reads padding.
NO_SUB_BYTE = (
    "none of its formats stores a sub-byte dtype, and it reads whole tensors (the rule warns "
    "about tools that slice rows) (inferred)"
)
ALIGN = "safetensors accepts any header length; unaligned data only costs a copy (inferred)"
PADDING = "the padding is never read (comfy-kitchen slices it off): a hint about the writer"

#: Why a generic rule leaves sglang unaffected where its catalog entry's prose does not say
#: (the catalogs declare sglang's effects; these are the nones their evidence is about the
#: other runtime or about other tools).
REASONS: dict[str, str] = {
    "QC119": NO_SUB_BYTE,
    "QC122": ALIGN,
    "QC206": "its inspector reads markers of any size",
    "QC313": "its W4A8 config reads weight_correction (_has_correction): the asymmetric layer "
    "keeps its zero point",
    "QC319": "ComfyUI's dequantize path; sglang's scale-shape rule is QC307",
    "QC320": "ComfyUI's default of 256 only; the marker rules (QC219) judge sglang's "
    "handling of a missing convrot_groupsize",
    "QC321": "a w6a8_int8 finding: sglang does not load the format (QC601)",
    "QC405": PADDING,
    "QC505": "sglang loads the shard files, not the index's weight_map (inferred)",
}


def sglang_runtime() -> Runtime:
    """The sglang runtime record: its releases, oldest first, and its rule folder."""
    return Runtime(
        "sglang",
        "sglang",
        SGLANG_RELEASES,
        checks="quantcheck.rules.sglang.checks:SglangChecks",
        quantize_refusal="quantcheck.rules.sglang.checks:sglang_quantize_refusal",
        paths="quantcheck.rules.sglang.header_rules:path_json",
        messages="quantcheck.rules.sglang.messages:PATTERNS",
        folder="quantcheck.rules.sglang",
        header_formats=HEADER_DECLARED,
        gpu="quantcheck.rules.sglang.gpu:SGLANG_GPU",
        loaders="quantcheck.rules.sglang.loaders:SGLANG_LOADERS",
        default_target=True,
        catalog=True,
        reasons=dict(REASONS),
        doc="sglang's ComfyUI-checkpoint loader: the header path "
        "(get_quant_config_from_safetensors_metadata, tried first), then the marker "
        "inspector, format resolver and the config classes' constructors (format support, "
        "format mixes, quant_format).",
    )


@record
class ComfySpec:
    """One `--comfyui-mode` checkpoint spec (`COMFYUI_SPECS`)."""

    title: str
    #: the first release that registers it
    since: str
    #: the first release whose spec reads the comfy_quant markers (None: it never does, and
    #: loads a quantized file unquantized)
    markers_since: str | None = None


#: sglang's `--comfyui-mode` checkpoint specs by model family (read in the wheels 0.5.21-0.5.23,
#: `runtime/loader/comfyui_checkpoints/`: `register_comfyui_checkpoint` per pipeline,
#: `load_comfyui_transformer` takes the spec of the pipeline it runs and raises "has no ComfyUI
#: checkpoint spec" for any other). sglang's ComfyUI node (`apps/ComfyUI_SGLDiffusion`,
#: `core/generator.py` `get_comfyui_model`) picks that pipeline from ComfyUI's own model
#: detection (`detect_unet_config`, the key tests quantcheck's families use) and refuses a
#: model type it has no pipeline for ("Unsupported model type"). Pipelines: FluxPipeline,
#: QwenImagePipeline / QwenImageEditPlusPipeline, ZImagePipeline (ComfyUI's lumina2),
#: MiniMaxH3Pipeline (its markers read from 0.5.22: `inspect_minimax_h3_safetensors`, INT8
#: ConvRot only), QwenImage21Pipeline (0.5.22, `quant_markers`).
COMFYUI_SPECS: dict[str, ComfySpec] = {
    "flux": ComfySpec("Flux", "0.5.21"),
    "qwen_image": ComfySpec("Qwen-Image", "0.5.21"),
    "zimage": ComfySpec("Z-Image", "0.5.21"),
    "minimax_h3": ComfySpec("MiniMax-H3", "0.5.21", "0.5.22"),
    "qwen_image21": ComfySpec("Qwen-Image 2.1", "0.5.22", "0.5.22"),
}
