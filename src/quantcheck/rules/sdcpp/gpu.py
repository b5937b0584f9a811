"""stable-diffusion.cpp on a GPU (issue 24): FP8 converted to F16 at load, INT8 on the ggml
backend's own kernel where it has one (`runtimes/sdcpp_gpu.py`). Standard library only."""

from __future__ import annotations

from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.runtimes import sdcpp_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.layers import Layer
    from quantcheck.rules.gpu.plan import Decision

F16 = (2, "F16")


class SdcppGpu(GpuRules):
    name = "sdcpp"

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        if fmt in data.FP8_FORMATS:
            return "emulated", data.FP8
        if fmt == data.INT8:
            return data.INT8_BY_BACKEND.get(spec.backend, data.INT8_BY_BACKEND["cpu"])
        return "refused", "sd.cpp implements no such layer (see the findings)"

    def layer_formats(self, spec: GpuSpec) -> frozenset[str]:
        return frozenset({data.INT8}) if spec.backend in ("cuda", "rocm") else frozenset()

    def layer_decision(
        self, layer: Layer, fmt: str, dims: tuple[int, int] | None, base: Decision, spec: GpuSpec
    ) -> Decision | None:
        if base[0] == "native" and dims is not None and (dims[0] % 4 or dims[1] % 4):
            return "emulated", data.SHAPE.format(n=dims[0], k=dims[1])
        return None

    def held(self, fmt: str, spec: GpuSpec) -> tuple[int, str] | None:
        return F16 if fmt in data.FP8_FORMATS else None

    def emulated_words(self, fmt: str, spec: GpuSpec) -> str:
        if fmt == data.INT8:
            return data.CPU_WORDS
        return super().emulated_words(fmt, spec)

    def compute_dtype(self, spec: GpuSpec) -> tuple[int, str]:
        return 0, "as stored (sd.cpp keeps F16 / BF16 / F32 tensors in their dtype)"


SDCPP_GPU = SdcppGpu()
