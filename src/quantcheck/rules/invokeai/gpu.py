"""InvokeAI on a GPU (issue 24): no device gate; every quantized layer is dequantized when it
loads (`runtimes/invokeai_gpu.py`). Standard library only."""

from __future__ import annotations

from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.runtimes import invokeai_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.rules.gpu.plan import Decision


class InvokeaiGpu(GpuRules):
    name = "invokeai"

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        return "emulated", data.REASON.format(dtype=data.HELD[1])

    def held(self, fmt: str, spec: GpuSpec) -> tuple[int, str] | None:
        return data.HELD

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        return [data.DIRECTML] if spec.backend == "directml" else []


INVOKEAI_GPU = InvokeaiGpu()
