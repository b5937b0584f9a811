"""SD.Next on a GPU (issue 24): by default every comfy-quant layer is dequantized every step
(SDNQ's dequantize forward); with its Quantized MatMul setting (`flags=sdnq-quantized-matmul`)
INT8 and, where the device has FP8, FP8 layers of a fitting shape use SDNQ's matmul
(`runtimes/sdnext_gpu.py`). Standard library only."""

from __future__ import annotations

from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.rules.sdnext.checks import STORAGE
from quantcheck.runtimes import sdnext_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.layers import Layer
    from quantcheck.rules.gpu.plan import Decision

FPMM = "full_precision_matrix_mult"


def fp8_mm(spec: GpuSpec) -> bool:
    """SDNQ's `is_fp8_mm_supported` on `spec`."""
    if spec.vendor == "nvidia":
        return spec.cc is not None and spec.cc >= data.FP8_CUDA
    if spec.vendor == "amd":
        digits = (spec.arch or "gfx0")[3:]
        try:
            gfx = int(digits, 16)
        except ValueError:
            return False
        return gfx >= 0x1200 or 0x940 <= gfx < 0x1000
    return False


class SdnextGpu(GpuRules):
    name = "sdnext"
    marker_keys = (FPMM,)
    flags = frozenset({data.SETTING})

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        if fmt not in STORAGE:
            return "refused", "SD.Next adopts no such layer (see the findings)"
        if data.SETTING not in spec.flags:
            return "emulated", data.DEFAULT
        if fmt == "int8_tensorwise":
            return "native", data.INT8.format(how=data.INT8_HOW.get(spec.backend, "?"))
        if fmt == "float8_e4m3fn":
            return ("native", data.FP8) if fp8_mm(spec) else ("emulated", data.FP8_OFF)
        return "emulated", data.NVFP4

    def layer_formats(self, spec: GpuSpec) -> frozenset[str]:
        return frozenset(STORAGE) if data.SETTING in spec.flags else frozenset()

    def layer_decision(
        self, layer: Layer, fmt: str, dims: tuple[int, int] | None, base: Decision, spec: GpuSpec
    ) -> Decision | None:
        if base[0] != "native":
            return None
        marker = layer.marker
        if marker is not None and marker.get(FPMM) is True:
            return "emulated", data.FPMM
        if dims is not None:
            n, k = dims
            if n < 32 or k < 32 or n % 16 or k % 16:
                return "emulated", data.SHAPE.format(n=n, k=k)
        return None

    def compute_dtype(self, spec: GpuSpec) -> tuple[int, str]:
        if spec.backend == "cpu":
            return 4, "F32"
        if spec.vendor == "nvidia" and spec.cc is not None and spec.cc < data.COMPUTE_NVIDIA_BF16:
            return 2, "F16"
        return 2, "BF16"

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        out = ["unquantized weights counted in devices.dtype [GUESS: BF16, F16 before sm_80]"]
        if data.SETTING not in spec.flags and formats & {"int8_tensorwise", "float8_e4m3fn"}:
            out.append(
                "SD.Next's setting Quantized MatMul (flags=sdnq-quantized-matmul) lets INT8 "
                "and, where the device has FP8, FP8 layers use SDNQ's quantized matmul"
            )
        return out


SDNEXT_GPU = SdnextGpu()
