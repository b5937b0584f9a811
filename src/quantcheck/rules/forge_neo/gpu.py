"""Forge Neo on a GPU (issue 24): ComfyUI's decisions (`rules/comfyui/gpu.py`, which it ports)
with Forge's own formats, switches, Triton default, loader and compute dtype
(`runtimes/forge_neo_gpu.py` says what each is read from). Standard library only."""

from __future__ import annotations

from quantcheck.rules.comfyui.gpu import ComfyuiGpu
from quantcheck.runtimes import forge_neo as forge
from quantcheck.runtimes import forge_neo_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.rules.gpu.plan import Decision

INT8_FORMATS = frozenset({"int8_tensorwise", "convrot_w4a4", "asym_w4a8_int8", "w6a8_int8"})


class ForgeNeoGpu(ComfyuiGpu):
    """Forge Neo's decisions (see the module docstring)."""

    name = forge.NAME
    flags = data.FLAGS

    def title(self) -> str:
        return forge.TITLE

    def loads(self, fmt: str) -> bool:
        return fmt in forge.FORMATS

    def fp8_forced(self, spec: GpuSpec) -> bool:
        return False  # no --supports-fp8-compute in Forge Neo

    def triton_on(self, spec: GpuSpec) -> tuple[bool, str]:
        if "disable-triton-backend" in spec.flags:
            return False, ""
        if spec.os == "windows":
            return False, data.TRITON_WINDOWS
        return True, ""

    def e8m0_refused(self, spec: GpuSpec) -> bool:
        return False  # safetensors.safe_open reads F8_E8M0

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        mode, why = super().format_decision(fmt, spec)
        if fmt in INT8_FORMATS and "supports_int8_compute() is False" in why:
            why = f"{why} {data.INT8_GATE}"
        return mode, why

    def compute_dtype(self, spec: GpuSpec) -> tuple[int, str]:
        if spec.vendor == "nvidia":
            ok = spec.cc is not None and spec.cc[0] >= 8
        elif spec.vendor == "amd":
            ok = (spec.arch or "") not in data.AMD_RDNA2_AND_OLDER
        else:
            ok = spec.backend in data.BF16_BACKENDS
        return (2, "BF16") if ok else (4, "F32")

    def extra(self, spec: GpuSpec) -> dict[str, object]:
        return {}

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        out = super().notes(spec, formats)
        dtype = self.compute_dtype(spec)[1]
        guess = data.BF16_BACKENDS.get(spec.backend, "")
        out.append(
            f"Forge Neo holds unquantized weights in {dtype} here (should_use_bf16, else F32)"
            + (f" {guess}" if guess and dtype == "BF16" else "")
        )
        on, tag = self.triton_on(spec)
        out.append(
            f"comfy-kitchen's Triton backend is {'on' if on else 'off'} ({data.TRITON_SOURCE})"
            + (f" {tag}" if tag else "")
        )
        return out


FORGE_NEO_GPU = ForgeNeoGpu()
