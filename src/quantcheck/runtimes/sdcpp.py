"""stable-diffusion.cpp as a target (`--target sdcpp`): releases, effects of the generic codes.

What is modelled: leejet/stable-diffusion.cpp master at bcc7e295 (PR #1857, merged
2026-08-11), its only merged ComfyUI-quantization reader. It reads the `<layer>.comfy_quant`
TENSOR markers (U8, at most 64 KiB, JSON object; `format`, `convrot`, `convrot_groupsize` at
the top level only) and never the header's `_quantization_metadata`; it implements
`int8_tensorwise` (+ConvRot, group a power of four dividing K, one F32 scale per row) and loads
FP8 weights by dtype. The next release step is PR #1913 (merged 2026-08-26): FP8 weights keep
their scalar or per-channel scale (`.scale_weight` read as `.weight_scale`); before it, scaled
FP8 files load without their scales and render white images (PR #1898's description).
Release names: sd.cpp's release tags that contain these commits were not found, so the steps
are named by commit (bcc7e295) and by merge date (`2026-08-26`; `pr1913` stays an alias).

Not modelled: commit 1aaa4929 (PR #1829, closed without merging) read only the header
`_quantization_metadata` (with top-level `params` defaults), accepted `convrot_w4a4`, and
silently reset a ConvRot group that does not divide K to 0; no merged sd.cpp behaves so.
sd.cpp loads one safetensors file per model argument: index files and shard sets are not read.

Standard library only (the check path imports it); codes are strings (the rule registry
imports the runtimes).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

FAILS, DEGRADED = Effect.FAILS, Effect.DEGRADED

#: The container codes its reader refuses.
READER_REFUSES: tuple[str, ...] = tuple(
    f"QC1{n:02d}" for n in (*range(1, 7), *range(9, 15), 17, 20)
)
#: What each generic code does to sd.cpp (codes not listed: nothing, see LEFT_NONE).
EFFECTS: dict[str, Effect] = {
    # container: its own header parser (read_safetensors_file) checks the header length, JSON,
    # dtype table, offsets against the file size and each tensor's byte count.
    **dict.fromkeys(READER_REFUSES, FAILS),
    "QC107": DEGRADED,  # nlohmann::json keeps one of the duplicate keys
    # tensor markers: U8 only, at most 64 KiB, parsed with nlohmann::json::parse inside a try;
    # a value of the wrong type (convrot not a boolean) throws in json.value().
    **dict.fromkeys(("QC201", "QC202", "QC203", "QC204", "QC205", "QC206", "QC218"), FAILS),
    # layers: a quantized weight that is not 2-D never matches the model's Linear shape.
    "QC306": FAILS,
    # numerics: the INT8 scales are used as stored.
    **dict.fromkeys(("QC401", "QC402", "QC403", "QC407", "QC408"), DEGRADED),
    # shards: sd.cpp loads one file per model argument, so a set with a missing member
    # cannot be loaded whole: a missing tensor is missing everywhere.
    "QC504": FAILS,
    "QC506": FAILS,
    # the model family's contract (QC86x, issue 26)
    "QC861": DEGRADED,
    "QC862": FAILS,
}
#: Why each code of EFFECTS does what it does to sd.cpp (one line each).
WHY: dict[str, str] = {
    **dict.fromkeys(
        READER_REFUSES,
        "its own header parser (read_safetensors_file) checks the header length, JSON, dtype "
        "table, offsets against the file size and each tensor's byte count",
    ),
    "QC107": "nlohmann::json keeps one of the duplicate keys",
    **dict.fromkeys(
        ("QC201", "QC202", "QC203", "QC204", "QC205", "QC206", "QC218"),
        "tensor markers: U8 only, at most 64 KiB, parsed with nlohmann::json::parse inside a "
        "try; a value of the wrong type (convrot not a boolean) throws in json.value()",
    ),
    "QC306": "a quantized weight that is not 2-D never matches the model's Linear shape",
    **dict.fromkeys(
        ("QC401", "QC402", "QC403", "QC407", "QC408"), "the INT8 scales are used as stored"
    ),
    **dict.fromkeys(
        ("QC504", "QC506"),
        "a missing shard's tensors are missing whatever loads the rest: sd.cpp loads one file "
        "per model argument and cannot load the set whole",
    ),
    "QC861": "the same weights run: the quality producers keep these layers for is lost",
    "QC862": "the model's weights are missing: the layers they belong to cannot be built",
}

#: Generic codes consciously left NONE for sd.cpp, with the reason.
LEFT_NONE: dict[str, str] = {
    **dict.fromkeys(
        ["QC800", "QC801", "QC802", "QC803"],
        "a GPU report about comfy-kitchen's kernels (check --gpu), which sd.cpp does not run "
        "(ggml's own kernels: its --gpu entry)",
    ),
    **dict.fromkeys(
        [*(f"QC83{n}" for n in range(8)), "QC840"],
        "a LoRA on a quantized base as ComfyUI loads it (quantcheck lora); this runtime's "
        "own LoRA path is runtimes/sdcpp_lora.py, judged by QC838/QC839",
    ),
    **dict.fromkeys(
        ["QC838", "QC839"],
        "no effect by default: a QC838 finding names this runtime in its own effects when "
        "this runtime's LoRA merge loses the LoRA; QC839 is a note",
    ),
    "QC108": "non-string __metadata__ values are skipped, not refused",
    "QC115": "gaps between tensors are not checked",
    "QC116": "overlapping tensors are not checked",
    "QC118": "trailing bytes are not checked",
    "QC119": "no sub-byte dtypes are read",
    "QC122": "header length need not be a multiple of 8",
    "QC121": "one code for a malformed entry (fails everywhere: sglang and ComfyUI say so) and "
    "for harmless extra entry fields (explicitly unaffected), so it is not overridden here",
    "QC207": "a UTF-8 BOM is skipped by nlohmann::json (UTF-16 would fail) [GUESS]",
    "QC208": "the header _quantization_metadata is not read",
    "QC209": "the header _quantization_metadata is not read",
    "QC210": "only the tensor marker is read (QC743 reports header-only I8 layers)",
    "QC211": "only the tensor marker is read",
    "QC212": "a marker without format leaves the layer plain (QC743 for I8 weights)",
    "QC213": "unknown formats are ignored (QC740/QC743 report weights it cannot use)",
    "QC214": "unknown formats are ignored (QC740/QC743 report weights it cannot use)",
    "QC215": "underscore keys are not read",
    "QC216": "unknown keys are not read",
    "QC219": "sd.cpp's own group rule is QC746 (powers of four, 4 and 1024 included)",
    "QC220": "group_size is not read (its formats are QC740)",
    "QC221": "its own rules cover the keys it reads (QC746, QC749)",
    "QC222": "the header _quantization_metadata is not read",
    "QC223": "a marker without a weight configures nothing",
    "QC225": "W4A8 is not loaded at all (QC740)",
    "QC301": "its own INT8 rule is QC745; FP8 layers load without a scale",
    "QC302": "extra companions are reported as unknown tensors and ignored",
    "QC303": "FP8 weights load by dtype; its INT8 rule is QC748",
    "QC304": "FP8 markers on 16-bit weights change nothing; its INT8 rule is QC748",
    "QC305": "an INT8 scale of another float dtype is converted to F32 on load [GUESS]",
    "QC307": "its own INT8 scale rule is QC744",
    "QC308": "NVFP4/MXFP8 layouts are reported by QC740/QC742",
    "QC311": "the INT8 path has no K alignment (ggml I8 blocks are 1)",
    "QC312": "W4A8 is not loaded at all (QC740)",
    "QC313": "W4A8 is not loaded at all (QC740)",
    "QC314": "unmarked FP8 loads by dtype; unmarked I8 is QC743, U8 is QC740",
    "QC315": "legacy scaled_fp8 layers are FP8 layers with a scale: QC741",
    "QC316": "INT8 without ConvRot is supported",
    "QC318": "NVFP4 is not loaded at all (QC740)",
    "QC319": "ComfyUI's dequantize path",
    "QC320": "sd.cpp's own group rule is QC746 (no default of 256)",
    "QC321": "packed formats are not loaded at all (QC740)",
    "QC404": "MXFP8 scales are dropped anyway (QC742)",
    "QC405": "NVFP4 is not loaded at all (QC740)",
    "QC406": "NVFP4/MXFP8 are not loaded correctly anyway (QC740/QC742)",
    "QC409": "W4A8 is not loaded at all (QC740)",
    "QC501": "one file per model argument: shards are not combined",
    "QC502": "index files are not read",
    "QC503": "index files are not read",
    "QC505": "index files are not read",
    **{
        c: "sglang's and ComfyUI's own rules"
        for c in (f"QC6{n:02d}" for n in (*range(1, 25), *range(30, 39), 50, 51))
    },
    "QC860": ("ComfyUI's model detection; stable-diffusion.cpp's own model detection was not read"),
    "QC863": (
        "modules outside the family's layout: stable-diffusion.cpp's handling of unexpected "
        "keys was not read"
    ),
    "QC864": "information: the quantization topology",
}

RELEASES: tuple[Release, ...] = (
    Release(
        "bcc7e295",
        note="master at PR #1857 (2026-08-11): .comfy_quant tensor markers, int8_tensorwise "
        "(+ConvRot); FP8 loaded without its scale.",
    ),
    Release(
        "2026-08-26",
        {"QC741": Effect.NONE},
        note="PR #1913 (merged 2026-08-26): FP8 E4M3/E5M2 weights keep scalar or per-channel "
        "scales (read from its description; the merge commit was not read, so the step is "
        "named by its merge date; alias pr1913).",
        aliases=("pr1913",),
    ),
)


def sdcpp_runtime() -> Runtime:
    """The stable-diffusion.cpp runtime record."""
    return Runtime(
        "sdcpp",
        "stable-diffusion.cpp",
        RELEASES,
        checks="quantcheck.rules.sdcpp.checks:SdcppChecks",
        gpu="quantcheck.rules.sdcpp.gpu:SDCPP_GPU",
        effects=dict(EFFECTS),
        reasons={**WHY, **LEFT_NONE},
        doc="stable-diffusion.cpp's safetensors reader and Linear (leejet/stable-diffusion.cpp "
        "master bcc7e295, src/model_io/safetensors_io.cpp): .comfy_quant tensor markers only, "
        "int8_tensorwise (+ConvRot); FP8 scales applied from PR #1913.",
        default_target=False,
        messages="quantcheck.rules.sdcpp.messages:PATTERNS",
        folder="quantcheck.rules.sdcpp",
    )
