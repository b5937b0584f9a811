"""DiffSynth-Studio's own rules (QC730-QC735): one failing case and its passing twin each.

Checked with `--target diffsynth` (not a default target); the cases name the effects on
sglang, ComfyUI and DiffSynth-Studio. Behaviour per rule: rules/diffsynth/catalog.py; the
outcomes are confirmed by DiffSynth-Studio's own code in tests/rules/diffsynth/diff.
"""

from __future__ import annotations

import json

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, marker, nvfp4, t
from .._case import RuleCase

ON = {"target": "diffsynth"}
BOM = b"\xef\xbb\xbf"


def ds(effect: str) -> dict[str, str]:
    return {"sglang": "none", "comfyui": "none", "diffsynth": effect}


CASES = [
    RuleCase(
        "QC730",
        "diffsynth-nvfp4",
        file(nvfp4),
        ds("fails"),
        file(fp8),
        check_kwargs=ON,
        message="uses format `nvfp4`, not in ['float8_e4m3fn', 'int8_tensorwise']",
    ),
    RuleCase(
        "QC730",
        "diffsynth-format-only-in-header",
        file(
            lambda: int8(mark={"convrot": True, "convrot_groupsize": 16}),
            header_meta({P: {"format": "int8_tensorwise"}}),
        ),
        ds("fails"),
        file(int8, header_meta({P: {"format": "int8_tensorwise"}})),
        check_kwargs=ON,
        message="has no `format` field",
    ),
    RuleCase(
        "QC731",
        "diffsynth-fp8-without-scale",
        file(lambda: fp8(with_scale=False)),
        ds("fails"),
        file(fp8),
        check_kwargs=ON,
        message="has a comfy_quant marker but no `weight_scale`",
    ),
    RuleCase(
        "QC732",
        "diffsynth-convrot-group-does-not-divide",
        file(lambda: int8(k=64, mark={**INT8_CONVROT, "convrot_groupsize": 256})),
        ds("fails"),
        file(int8),
        check_kwargs=ON,
        message="which does not divide in_features=64",
    ),
    RuleCase(
        "QC733",
        "diffsynth-int8-header-only",
        file(lambda: int8()[:2], header_meta({P: INT8_CONVROT})),
        ds("fails"),
        file(int8, header_meta({P: INT8_CONVROT})),
        check_kwargs=ON,
        message="Unexpected key(s)",
    ),
    RuleCase(
        "QC734",
        "diffsynth-int8-input-scale",
        file(lambda: [*int8(), t(f"{P}.input_scale", "F32", ())]),
        ds("fails"),
        file(int8),
        check_kwargs=ON,
        message="input_scale",
    ),
    RuleCase(
        "QC735",
        "diffsynth-marker-i16",
        file(lambda: [*int8()[:2], marker(P, INT8_CONVROT, dtype="I16")]),
        ds("fails"),
        file(int8),
        check_kwargs=ON,
        message="VALUES",
    ),
    RuleCase(
        "QC736",
        "diffsynth-marker-utf8-bom",
        file(lambda: [*int8()[:2], marker(P, None, raw=BOM + json.dumps(INT8_CONVROT).encode())]),
        ds("fails"),
        file(int8),
        twin_allows=(),
        check_kwargs=ON,
        message="is not valid JSON",
    ),
]
