"""stable-diffusion.cpp's own rules (QC740-QC749): one failing case and its passing twin each.

Checked with `--target all` (sd.cpp is not a default target); the cases name the effects on
sglang, ComfyUI and sd.cpp. Behaviour per rule: src/quantcheck/rules/sdcpp/catalog.py.
"""

from __future__ import annotations

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, marker, mxfp8, nvfp4, t
from .._case import RuleCase

ALL = {"target": "all"}
NESTED_CONVROT = {"convrot": True, "convrot_groupsize": 16}


def sd(effect: str) -> dict[str, str]:
    return {"sglang": "none", "comfyui": "none", "sdcpp": effect}


def _e8m0_scales() -> list:
    return [
        t(f"{P}.weight", "F8_E4M3", (128, 128)),
        t(f"{P}.weight_scale", "F8_E8M0", (128, 4)),
        marker(P, {"format": "mxfp8"}),
    ]


CASES = [
    RuleCase(
        "QC740",
        "sdcpp-nvfp4-u8-weight",
        file(nvfp4),
        sd("fails"),
        file(int8),
        check_kwargs=ALL,
        message="not in model metadata",
    ),
    RuleCase(
        "QC741",
        "sdcpp-fp8-scale-before-pr1913",
        file(fp8),
        sd("none"),  # the newest modelled release (PR #1913) applies the scale
        file(int8),
        check_kwargs={"target": "sdcpp@all"},
        message="before PR #1913",
    ),
    RuleCase(
        "QC742",
        "sdcpp-mxfp8-scales-dropped",
        file(mxfp8),
        sd("degraded"),
        file(int8),
        check_kwargs=ALL,
        message="does NOT raise",
    ),
    RuleCase(
        "QC743",
        "sdcpp-int8-marked-in-header-only",
        file(lambda: int8()[:2], header_meta({P: INT8_CONVROT})),
        sd("fails"),
        file(int8),
        check_kwargs=ALL,
        message="marked only in the header",
    ),
    RuleCase(
        "QC744",
        "sdcpp-int8-scalar-scale",
        file(lambda: int8(scale=("F32", ()))),
        sd("fails"),
        file(lambda: int8(scale=("F32", (64,)))),
        check_kwargs=ALL,
        # ComfyUI and musubi want [N, 1] (ComfyUI's dequantize path: QC319); sd.cpp takes [N]
        twin_allows=("QC307", "QC319", "QC755"),
        message="has wrong shape in model metadata",
    ),
    RuleCase(
        "QC745",
        "sdcpp-int8-no-scale",
        file(lambda: [int8()[0], int8()[2]]),
        sd("fails"),
        file(int8),
        check_kwargs=ALL,
        message="GGML_ASSERT(has_weight_scale)",
    ),
    RuleCase(
        "QC746",
        "sdcpp-convrot-group-absent",
        file(lambda: int8(mark={"format": "int8_tensorwise", "convrot": True})),
        sd("fails"),
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": 64})),
        check_kwargs=ALL,
        message="invalid ComfyUI convrot group size",
    ),
    RuleCase(
        "QC747",
        "sdcpp-e8m0-dtype",
        file(_e8m0_scales),
        sd("fails"),
        file(int8),
        check_kwargs=ALL,
        message="unsupported dtype 'F8_E8M0'",
    ),
    RuleCase(
        "QC748",
        "sdcpp-int8-marker-on-bf16",
        file(lambda: int8(weight=("BF16", (64, 64)))),
        sd("fails"),
        file(int8),
        check_kwargs=ALL,
        message="weight is not I8",
    ),
    RuleCase(
        "QC749",
        "sdcpp-convrot-only-in-params",
        file(lambda: int8(mark={"format": "int8_tensorwise", "params": NESTED_CONVROT})),
        sd("degraded"),
        file(int8),
        check_kwargs=ALL,
        message="unrotated",
    ),
]
