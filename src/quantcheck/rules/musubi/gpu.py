"""musubi-tuner on a GPU (issue 24): its ConvRot INT8 layers on its Triton kernel on CUDA /
ROCm devices, its eager dequantizing fallback elsewhere (`runtimes/musubi_gpu.py`). Standard
library only."""

from __future__ import annotations

from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.runtimes import musubi_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.rules.gpu.plan import Decision


class MusubiGpu(GpuRules):
    name = "musubi"

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        if fmt != "int8_tensorwise":
            return "refused", "musubi takes only ConvRot INT8 layers (see the findings)"
        if spec.backend not in ("cuda", "rocm"):
            return "emulated", data.EAGER
        if spec.os == "windows":
            return "emulated", data.WINDOWS
        if spec.cc is not None and spec.cc < data.OLD_NVIDIA:
            return "native", f"{data.NATIVE} {data.OLD_GUESS}"
        return "native", data.NATIVE


MUSUBI_GPU = MusubiGpu()
