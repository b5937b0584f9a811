"""DiffSynth-Studio on a GPU (issue 24): comfy-kitchen's kernel choice without ComfyUI's
gates (`runtimes/diffsynth_gpu.py`), asked through `rules/gpu/kitchen.py` (ComfyUI's
decisions) with the gate step, the marker switch and DynamicVRAM left out. Standard library
only."""

from __future__ import annotations

from quantcheck.rules.diffsynth.checks import ACCEPTED
from quantcheck.rules.gpu.kitchen import KitchenGpu
from quantcheck.runtimes import diffsynth_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec


class DiffsynthGpu(KitchenGpu):
    name = "diffsynth"
    marker_keys: tuple[str, ...] = ()  # full_precision_matrix_mult is not read
    flags = frozenset()
    gated = False

    def title(self) -> str:
        return "DiffSynth-Studio"

    def loads(self, fmt: str) -> bool:
        return fmt in ACCEPTED

    def fp8_forced(self, spec: GpuSpec) -> bool:
        return False

    def triton_on(self, spec: GpuSpec) -> tuple[bool, str]:
        if spec.os == "windows":
            return False, data.TRITON_WINDOWS
        return True, ""

    def e8m0_refused(self, spec: GpuSpec) -> bool:
        return False

    def compute_dtype(self, spec: GpuSpec) -> tuple[int, str]:
        return data.COMPUTE

    def extra(self, spec: GpuSpec) -> dict[str, object]:
        return {}

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        out = super().notes(spec, formats)
        out.append(
            f"DiffSynth-Studio ({data.WHEEL}) has no device gate: a format without a kernel "
            "on this device runs comfy-kitchen's fallback (FP8: dequantized with a warning on "
            "every call)"
        )
        out.append("unquantized weights counted as BF16 (the pipeline's torch_dtype) [GUESS]")
        return out


DIFFSYNTH_GPU = DiffsynthGpu()
