"""Known bad device combinations (QC800-QC803, `check --gpu`): one failing case and its
passing twin (an FP8 file, which none of them concerns) each. The combinations are data
(runtimes/comfyui_gpu.py KNOWN_ISSUES); none changes a target's status (effects none)."""

from __future__ import annotations

from quantcheck.gpus import expand_specs

from .._build import INT8_CONVROT, file, fp8, int8
from .._case import RuleCase, eff

PLAIN_INT8 = {"format": "int8_tensorwise"}


def _case(code: str, name: str, make, gpu: str, message: str) -> RuleCase:  # type: ignore[no-untyped-def]
    return RuleCase(
        code,
        name,
        file(make),
        eff("none", "none"),
        twin=file(fp8),
        message=message,
        check_kwargs={"gpus": expand_specs([gpu])},
    )


def _plain() -> list:
    return int8(mark=PLAIN_INT8)


CASES = [
    _case("QC800", "rdna3-int8-crash", _plain, "rx7900xtx", "on rx7900xtx: INT8 crashes reported"),
    _case("QC800", "mps-int8-raises", _plain, "mps", "torch._int_mm there is CUDA-only"),
    _case("QC801", "turing-int8-wrong-output", _plain, "t4", "on t4: INT8 models reported to give"),
    _case("QC801", "rocm-convrot-noise", int8, "mi300x", "blank or noisy images on ROCm"),
    _case(
        "QC802", "sm86-int8-slow", lambda: int8(mark=INT8_CONVROT), "a6000", "poor configuration"
    ),
    _case(
        "QC803",
        "int8-gemm-int32-index",
        lambda: int8(n=4096, k=64, mark=PLAIN_INT8),
        "h100",
        "N=4096: comfy-kitchen's INT8 GEMM faults from 524,288 tokens per call",
    ),
]
