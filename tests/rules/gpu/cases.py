"""Known bad device combinations (QC800-QC803, `check --gpu`): one failing case and its
passing twin each. The combinations are data (runtimes/comfyui_gpu.py KNOWN_ISSUES); none
changes a target's status (effects none everywhere)."""

from __future__ import annotations

from quantcheck.gpus import expand_specs

from .._build import INT8_CONVROT, file, fp8, int8
from .._case import RuleCase, eff

NONE = eff("none", "none")


def gpu(*specs: str) -> dict:
    return {"gpus": expand_specs(list(specs))}


PLAIN_INT8 = {"format": "int8_tensorwise"}

CASES = [
    RuleCase(
        "QC800",
        "rdna3-int8-crash",
        file(lambda: int8(mark=PLAIN_INT8)),
        NONE,
        twin=file(fp8),
        message="on rx7900xtx: INT8 crashes reported on RDNA3",
        check_kwargs=gpu("rx7900xtx"),
    ),
    RuleCase(
        "QC800",
        "mps-int8-raises",
        file(lambda: int8(mark=PLAIN_INT8)),
        NONE,
        twin=file(fp8),
        message="torch._int_mm there is CUDA-only",
        check_kwargs=gpu("mps"),
    ),
    RuleCase(
        "QC801",
        "turing-int8-wrong-output",
        file(lambda: int8(mark=PLAIN_INT8)),
        NONE,
        twin=file(fp8),
        message="on t4: INT8 models reported to give broken output",
        check_kwargs=gpu("t4"),
    ),
    RuleCase(
        "QC801",
        "rocm-convrot-noise",
        file(int8),
        NONE,
        twin=file(fp8),
        message="blank or noisy images on ROCm",
        check_kwargs=gpu("mi300x"),
    ),
    RuleCase(
        "QC802",
        "sm86-int8-slow",
        file(lambda: int8(mark=INT8_CONVROT)),
        NONE,
        twin=file(fp8),
        message="poor configuration on sm_86",
        check_kwargs=gpu("a6000"),
    ),
    RuleCase(
        "QC803",
        "int8-gemm-int32-index",
        file(lambda: int8(n=4096, k=64, mark=PLAIN_INT8)),
        NONE,
        twin=file(fp8),
        message="N=4096: comfy-kitchen's INT8 GEMM faults from 524,288 tokens per call",
        check_kwargs=gpu("h100"),
    ),
]
