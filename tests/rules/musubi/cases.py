"""musubi-tuner's own rules (QC750-QC757): one failing case and its passing twin each.

Checked with `--target all` (musubi is not a default target); the cases name the effects on
sglang, ComfyUI and musubi. Behaviour per rule: src/quantcheck/rules/musubi/catalog.py.
"""

from __future__ import annotations

import json

from quantcheck.io.build import RawTensor

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, t
from .._case import RuleCase

ALL = {"target": "all"}


def mu(effect: str) -> dict[str, str]:
    return {"sglang": "none", "comfyui": "none", "musubi": effect}


def _marker_2d() -> list[RawTensor]:
    data = json.dumps(INT8_CONVROT).encode()
    return [*int8()[:2], RawTensor(f"{P}.comfy_quant", "U8", (1, len(data)), data)]


CASES = [
    RuleCase(
        "QC750",
        "musubi-header-only-markers",
        file(lambda: int8()[:2], header_meta({P: INT8_CONVROT})),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="missing sibling tensors",
    ),
    RuleCase(
        "QC751",
        "musubi-fp8-file",
        file(fp8),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="unsupported .comfy_quant format",
    ),
    RuleCase(
        "QC752",
        "musubi-int8-without-convrot",
        file(lambda: int8(mark={"format": "int8_tensorwise", "convrot_groupsize": 16})),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="convrot must be true",
    ),
    RuleCase(
        "QC753",
        "musubi-group-not-power-of-four",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": 32})),
        mu("fails"),
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": 64})),
        check_kwargs=ALL,
        message="exact power of four",
    ),
    RuleCase(
        "QC754",
        "musubi-weight-not-i8",
        file(lambda: int8(weight=("BF16", (64, 64)))),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="weight must be INT8/I8",
    ),
    RuleCase(
        "QC755",
        "musubi-scale-not-n-by-1",
        file(lambda: int8(scale=("F32", (64,)))),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="scale shape must be (64, 1)",
    ),
    RuleCase(
        "QC756",
        "musubi-marker-2d",
        file(_marker_2d),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="must be one-dimensional",
    ),
    RuleCase(
        "QC757",
        "musubi-both-scale-names",
        file(lambda: [*int8(), t(f"{P}.scale_weight", "F32", (64, 1))]),
        mu("fails"),
        file(int8),
        check_kwargs=ALL,
        message="Duplicate normalized safetensors key",
    ),
]
