"""Rule table rows for SD.Next's own codes (QC710-QC717): a failing file and a passing twin.

SD.Next's refusals are `degraded` (it loads the base model's transformer instead); each row
names the effect on every runtime it means, so an SD.Next rule never leaks into the others.
"""

from __future__ import annotations

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, mxfp8, nvfp4
from .._case import RuleCase


def sdn(effect: str) -> dict[str, str]:
    return {"sglang": "none", "comfyui": "none", "forge-neo": "none", "sdnext": effect}


ON = {"target": "sdnext"}
Q = "blocks.1.mlp.fc"


def _fp8_and_int8() -> list:
    return [*fp8(), *int8(Q, mark=INT8_CONVROT)]


def _int8_params() -> list:
    mark = {"format": "int8_tensorwise", "params": {"convrot": True, "convrot_groupsize": 16}}
    return int8(mark=mark)


CASES = [
    RuleCase(
        "QC710",
        "mxfp8-not-adopted",
        file(mxfp8),
        sdn("degraded"),
        file(fp8),
        check_kwargs=ON,
        message="falls back to the base model's transformer",
    ),
    RuleCase(
        "QC711",
        "fp8-beside-int8",
        file(_fp8_and_int8),
        sdn("degraded"),
        file(fp8),
        check_kwargs=ON,
        message="mixes formats across layers",
    ),
    RuleCase(
        "QC712",
        "nvfp4-with-convrot",
        file(lambda: nvfp4(mark={"format": "nvfp4", "convrot": True})),
        sdn("degraded"),
        file(nvfp4),
        check_kwargs=ON,
        message="combines nvfp4 with convrot",
    ),
    RuleCase(
        "QC712",
        "nvfp4-group-32",
        file(lambda: nvfp4(mark={"format": "nvfp4", "group_size": 32})),
        sdn("degraded"),
        file(nvfp4),
        check_kwargs=ON,
        message="group_size 32 is not 16",
    ),
    RuleCase(
        "QC713",
        "convrot-group-32",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": 32})),
        sdn("degraded"),
        file(int8),
        check_kwargs=ON,
        message="32 is not a power of 4",
    ),
    RuleCase(
        "QC713",
        "convrot-group-256-k-64",
        file(lambda: int8(mark={"format": "int8_tensorwise", "convrot": True})),
        sdn("degraded"),
        file(int8),
        check_kwargs=ON,
        message="256 does not divide K=64",
    ),
    RuleCase(
        "QC713",
        "convrot-group-not-integer",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": "sixteen"})),
        sdn("fails"),
        file(int8),
        check_kwargs=ON,
        message="int() raises",
    ),
    RuleCase(
        "QC714",
        "fp8-stored-as-u8",
        file(lambda: fp8(weight="U8")),
        sdn("degraded"),
        file(fp8),
        check_kwargs=ON,
        message="SD.Next expects F8_E4M3",
    ),
    RuleCase(
        "QC715",
        "nvfp4-unpadded-scales",
        file(lambda: nvfp4(n=64, k=64, scale_shape=(64, 4))),
        sdn("degraded"),
        file(lambda: nvfp4(n=64, k=64)),
        check_kwargs=ON,
        message="[128, 4] (512)",
    ),
    RuleCase(
        "QC716",
        "header-drops-convrot",
        file(int8, header_meta({P: {"format": "int8_tensorwise"}})),
        sdn("degraded"),
        file(int8, header_meta({P: INT8_CONVROT})),
        check_kwargs=ON,
        message="dropped without a message",
    ),
    RuleCase(
        "QC717",
        "convrot-under-params",
        file(_int8_params),
        sdn("degraded"),
        file(int8),
        check_kwargs=ON,
        message="top level only",
    ),
]
