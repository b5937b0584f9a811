"""comfy-kitchen 0.2.40 behind a ComfyUI-style loader: how each quantized layer runs on a GPU
(issue 24). ComfyUI's decisions are the defaults (`rules/comfyui/gpu.py` uses them as they
are); a runtime that reaches comfy-kitchen another way overrides the hooks.

The facts are data in `runtimes/comfyui_gpu.py` (gates, kernels, per-layer fallbacks, with
their sources); `KitchenGpu` asks them in ComfyUI's order: the format's `supports_*_compute`
gate, then whether comfy-kitchen's CUDA backend is on and has a kernel for the device (the
Triton backend next when a switch turns it on), then a layer's own fallback (shape, scale
dtype, F8_E8M0 scales under DynamicVRAM, the `full_precision_matrix_mult` marker). The launch
switches of `--gpu ...,flags=` (`gpus/spec.FLAGS`) are read where ComfyUI reads them. The same
decisions hold for every modelled ComfyUI release (the gates are those of the newest).
comfy-kitchen's HIP backend (ROCm, RDNA3/RDNA4) is asked like the CUDA one.

The hooks a runtime overrides (ComfyUI's ports, `rules/forge_neo/gpu.py`, through
`rules/comfyui/gpu.py`; DiffSynth, `rules/diffsynth/gpu.py`, which has no gates) are the
switches it reads (`flags`), whether it gates formats by device (`gated`), the formats it has
an op for (`loads`), its Triton default (`triton_on`), its FP8 switch (`fp8_forced`), its
loader (`e8m0_refused`) and the dtype it holds unquantized weights in (`compute_dtype`).
Standard library only.
"""

from __future__ import annotations

from quantcheck.gpus.spec import FLAGS, SETTINGS
from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.runtimes import comfyui_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.diagnostics import Diagnostic
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.layers import Layer
    from quantcheck.rules.gpu.plan import Decision

FPMM = "full_precision_matrix_mult"
FP8 = frozenset({"float8_e4m3fn", "float8_e5m2"})


def gate_open(gate: data.Gate, spec: GpuSpec, forced: bool = False) -> tuple[bool, str]:
    """Whether ComfyUI's predicate `gate` is true on `spec`, and why (the reason names the
    predicate and the fact that decided it). `forced`: `--supports-fp8-compute` was given
    (SUPPORT_FP8_OPS, the first thing supports_fp8_compute reads)."""
    name = f"{gate.name}()"
    if forced:
        return True, f"{name} is True: --supports-fp8-compute (SUPPORT_FP8_OPS)"
    if gate.refused_backends is not None:  # int8: everything but the listed backends
        read = f" {data.READ}" if spec.backend in data.INT8_GATE_READ_BACKENDS else ""
        if spec.backend in gate.refused_backends:
            return False, f"{name} is False on {spec.backend}{read}"
        if spec.backend == "mps" and gate.mps_torch and spec.torch < gate.mps_torch:
            return False, f"{name} is False on MPS before torch {_v(gate.mps_torch)}{read}"
        return True, f"{name} is True on {spec.backend}{read}"
    if spec.vendor == "amd":
        arch = spec.arch or ""
        if arch in gate.amd_archs:
            if gate.amd_torch and spec.torch < gate.amd_torch:
                return False, f"{name} needs torch >= {_v(gate.amd_torch)} on {arch}"
            if gate.amd_rocm and spec.rocm is not None and spec.rocm < gate.amd_rocm:
                return False, f"{name} needs ROCm >= {_v(gate.amd_rocm)} on {arch}"
            return True, f"{name} is True on {arch} (SUPPORT_FP8_OPS)"
        return False, f"{name} is False on AMD {arch or 'GPUs'}" + (
            f" (only {', '.join(gate.amd_archs)})" if gate.amd_archs else " (NVIDIA only)"
        )
    if spec.vendor != "nvidia" or spec.cc is None or gate.nvidia_cc is None:
        return False, f"{name} is False off NVIDIA"
    cc = spec.cc
    if gate.nvidia_major_any_torch is not None and cc[0] >= gate.nvidia_major_any_torch:
        return True, f"{name} is True from sm_{gate.nvidia_major_any_torch}0"
    if cc < gate.nvidia_cc:
        return False, f"{name} needs compute capability >= {_v(gate.nvidia_cc)}"
    need = gate.nvidia_torch
    if spec.os == "windows" and gate.windows_torch is not None:
        need = gate.windows_torch
    if need is not None and spec.torch < need:
        return False, f"{name} needs torch >= {_v(need)}"
    return True, f"{name} is True on sm_{cc[0]}{cc[1]}"


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def kitchen_cuda(spec: GpuSpec) -> bool:
    """Whether ComfyUI keeps comfy-kitchen's CUDA backend (NVIDIA, torch built for CUDA 13+)."""
    return spec.vendor == "nvidia" and spec.cuda is not None and spec.cuda >= data.KITCHEN_CUDA_MIN


def hip_runs(k: data.Kernel, spec: GpuSpec) -> bool:
    """Whether comfy-kitchen's HIP backend has `k`'s kernel on `spec`'s AMD architecture."""
    arch = spec.arch
    return arch in data.HIP_WMMA_ARCHS or (
        k.hip_without_wmma and arch in data.HIP_ELEMENTWISE_ARCHS
    )


def capability(spec: GpuSpec) -> tuple[int, int] | None:
    """What comfy-kitchen's registry reads as the compute capability: NVIDIA's, or on ROCm
    the gfx name's (gfx1100 -> 11.0, gfx942 -> 9.4, gfx90a -> 9.0); None off CUDA/ROCm."""
    if spec.cc is not None:
        return spec.cc
    arch = spec.arch
    if spec.vendor != "amd" or not arch or len(arch) < 6:
        return None
    digits = arch[3:]
    try:
        return int(digits[:-2]), int(digits[-2], 16)
    except ValueError:
        return None


def torch_fp8(spec: GpuSpec) -> bool:
    """Whether torch's own `_scaled_mm` takes FP8 operands on `spec` (`data.TORCH_FP8_*`)."""
    if spec.vendor == "nvidia":
        exact, major = data.TORCH_FP8_NVIDIA
        return spec.cc is not None and (spec.cc == exact or spec.cc[0] >= major)
    if spec.vendor == "amd":
        arch = spec.arch or ""
        return any(
            arch.startswith(prefix) and (rocm is None or (spec.rocm or (0, 0)) >= rocm)
            for prefix, rocm in data.TORCH_FP8_ROCM
        )
    return spec.backend in data.TORCH_FP8_BACKENDS


def dynamic_vram(spec: GpuSpec) -> bool:
    """Whether ComfyUI @783545f6 runs DynamicVRAM on `spec` (main.py, `data.DYNAMIC_VRAM_*`)."""
    if "enable-dynamic-vram" in spec.flags:
        return True
    if spec.flags & data.DYNAMIC_VRAM_OFF or spec.backend == "cpu":
        return False
    supported = spec.vendor == "nvidia" or (
        spec.vendor == "amd" and (spec.rocm or (0, 0)) >= data.DYNAMIC_VRAM_ROCM
    )
    return supported and spec.torch >= data.DYNAMIC_VRAM_TORCH


class KitchenGpu(GpuRules):
    """comfy-kitchen in ComfyUI's decision order, ComfyUI's hooks by default (module doc)."""

    name = "comfyui"
    marker_keys: tuple[str, ...] = (FPMM,)
    #: the launch switches it reads: ComfyUI's of `gpus/spec.FLAGS`
    flags = frozenset(FLAGS) - SETTINGS
    kitchen = True
    #: it disables formats by device (get_disabled_quant_formats); a port without gates
    #: (DiffSynth) goes straight to comfy-kitchen
    gated = True

    # --- the hooks a port overrides ---------------------------------------------------------

    def loads(self, fmt: str) -> bool:
        """Whether the runtime has a quantized op for `fmt` (ComfyUI: QUANT_ALGOS)."""
        return fmt in data.FORMAT_GATE

    def fp8_forced(self, spec: GpuSpec) -> bool:
        """`--supports-fp8-compute` (model_management.SUPPORT_FP8_OPS = args...)."""
        return "supports-fp8-compute" in spec.flags

    def triton_on(self, spec: GpuSpec) -> tuple[bool, str]:
        """Whether comfy-kitchen's Triton backend stays on, and the evidence tag of that."""
        on = "enable-triton-backend" in spec.flags and "disable-triton-backend" not in spec.flags
        return on, (data.TRITON_WINDOWS if on and spec.os == "windows" else "")

    def e8m0_refused(self, spec: GpuSpec) -> bool:
        """Whether the loader refuses F8_E8M0 tensors (DynamicVRAM's dtype table)."""
        return dynamic_vram(spec)

    # --- decisions -----------------------------------------------------------------------------

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        mode, why = self._format_decision(fmt, spec)
        guess = data.UNVERIFIED_GATES.get(fmt)
        return mode, f"{why} [GUESS: {guess}]" if guess else why

    def _format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        """`format_decision` before the [GUESS] tag of an unverified gate."""
        if not self.loads(fmt):
            return "refused", f"{self.title()} has no quantized op for {fmt!r} (see the findings)"
        gate_name = data.FORMAT_GATE[fmt]
        if gate_name is not None and self.gated:
            forced = gate_name == "supports_fp8_compute" and self.fp8_forced(spec)
            ok, why = gate_open(data.GATES[gate_name], spec, forced)
            if not ok:
                return "emulated", (
                    f"get_disabled_quant_formats: {why}, so {fmt} is disabled and each layer is "
                    "dequantized on every forward (_full_precision_mm)"
                )
        if fmt in FP8:
            return self._fp8(spec)
        k = data.KERNELS[fmt]
        read = data.READ
        triton = self._triton(k, spec)
        if spec.vendor == "amd" and k.hip_what and hip_runs(k, spec):
            return "native", f"{k.hip_what} {read}"
        if triton:
            return "native", f"{triton} {read}" if spec.vendor == "amd" else triton
        if spec.vendor == "amd":  # past the gate on AMD: read only (HIP needs ROCm to load)
            return k.other, f"{k.other_what} {read}"
        if spec.vendor != "nvidia":  # comfy-kitchen's eager op: what it does is read only
            return k.other, f"{k.other_what} {read}"
        assert spec.cc is not None
        if k.cuda_min is not None and kitchen_cuda(spec) and spec.cc >= k.cuda_min:
            if k.depends_on:  # the batch branch is inside the CUDA kernel
                return "depends", f"{k.cuda_what}: {k.depends_on} {read}"
            if fmt == "convrot_w4a4" and spec.cc[0] not in data.CONVROT_INT4_MAJORS:
                return (
                    "native",
                    f"{k.cuda_what} through comfy-kitchen's INT8 route (int4 math on sm_8x only) "
                    f"{read}",
                )
            return "native", k.cuda_what
        if k.cuda_min is not None and not kitchen_cuda(spec):
            built = _v(spec.cuda) if spec.cuda else "none"
            off = (
                f"comfy-kitchen's CUDA backend is off (torch built for CUDA {built}, "
                f"{self.title()} needs >= 13)"
            )
        elif k.cuda_min is not None:
            off = f"below {k.cuda_what.split(' (')[0]}'s min sm_{k.cuda_min[0]}{k.cuda_min[1]}"
        else:
            off = ""
        what = f"{off}: {k.eager_what}" if off else k.eager_what
        # comfy-kitchen's eager op: whether it reaches torch's own kernel (_int_mm,
        # _scaled_mm) or dequantizes is read, not run
        return k.eager, f"{what} {read}"

    def title(self) -> str:
        return "ComfyUI"

    def _triton(self, k: data.Kernel, spec: GpuSpec, cuda_refused: bool = False) -> str:
        """comfy-kitchen's Triton linear for `k` when the switch keeps the backend on and the
        registry would take it (a CUDA or ROCm device of capability >= 8.0), else ``. On
        NVIDIA it comes after the CUDA backend: asked only where that one has no kernel for
        the device or (`cuda_refused`) refused the call."""
        on, tag = self.triton_on(spec)
        cc = capability(spec)
        if not on or not k.triton_op or cc is None or cc < data.TRITON_MIN:
            return ""
        if not cuda_refused and k.cuda_min and kitchen_cuda(spec) and cc >= k.cuda_min:
            return ""  # the CUDA backend comes first
        what = f"comfy-kitchen Triton {k.triton_op} ({data.TRITON_SOURCE})"
        return f"{what} {tag}" if tag else what

    def _fp8(self, spec: GpuSpec) -> Decision:
        """FP8 past the gate: no comfy-kitchen op, torch's own `_scaled_mm` (`torch_fp8`)."""
        read = data.READ
        if spec.vendor == "nvidia" and torch_fp8(spec):
            return "native", f"torch._scaled_mm (FP8 tensor cores) {read}"
        if torch_fp8(spec):
            where = spec.arch or spec.backend
            return "native", f"torch._scaled_mm with FP8 operands on {where} {read}"
        return "emulated", (
            f"torch._scaled_mm has no FP8 kernel on {spec.where} ({data.TORCH_FP8_SOURCE}): "
            "comfy-kitchen's tensor/fp8.py catches its RuntimeError and dequantizes the layer "
            f"on every forward, with a warning each time {read}"
        )

    def layer_formats(self, spec: GpuSpec) -> frozenset[str]:
        out = set(data.SHAPE_FORMATS) | {data.INT8_F16_SCALE} | data.W4A8_FORMATS
        if self.e8m0_refused(spec):
            out.add("mxfp8")
        return frozenset(out)

    def layer_decision(
        self, layer: Layer, fmt: str, dims: tuple[int, int] | None, base: Decision, spec: GpuSpec
    ) -> Decision | None:
        marker = layer.marker
        if FPMM in self.marker_keys and marker is not None and marker.get(FPMM) is True:
            return "emulated", (
                f"the marker sets {FPMM}: {self.title()} dequantizes the layer for a normal "
                "matmul on every forward"
            )
        if fmt == "mxfp8" and self.e8m0_refused(spec):
            scale = layer.tensors.get("weight_scale")
            if scale is not None and scale.dtype == "F8_E8M0":
                return "refused", (
                    "weight_scale is F8_E8M0: ComfyUI's DynamicVRAM loader (comfy/utils.py "
                    "load_safetensors; on by default here, main.py) cannot read it, so the "
                    "file does not load; --disable-dynamic-vram loads it (DynamicVRAM: run; "
                    f"the loader's dtype table without F8_E8M0: {data.READ})"
                )
        if base[0] != "native":
            return None
        if fmt in data.W4A8_FORMATS:
            channel = layer.tensors.get("weight_s_channel")
            if channel is not None and channel.dtype != data.W4A8_S_CHANNEL:
                hip = "comfy-kitchen HIP" in base[1]
                source = data.W4A8_S_CHANNEL_HIP if hip else data.W4A8_S_CHANNEL_SOURCE
                return "refused", (
                    f"weight_s_channel is {channel.dtype}: every comfy-kitchen backend's "
                    f"w4a8_int8_linear wants {data.W4A8_S_CHANNEL}, so the first forward raises "
                    f"NoCapableBackendError ({source}); where the format is disabled the "
                    "dequantized path runs it"
                )
        if fmt in data.SHAPE_FORMATS and dims is not None:
            n, k = dims
            m = data.SHAPE_MULTIPLE
            if n % m or k % m:
                return "emulated", (
                    f"N={n}, K={k}: scaled_mm needs multiples of {m}, so this layer falls back to "
                    f"dequantization on every forward {data.READ}"
                )
        if fmt == data.INT8_F16_SCALE and spec.vendor == "nvidia":
            scale = layer.tensors.get("weight_scale")
            if scale is not None and scale.dtype == "F16" and "comfy-kitchen CUDA" in base[1]:
                triton = self._triton(data.KERNELS[fmt], spec, cuda_refused=True)
                if triton:
                    return "native", (
                        f"weight_scale is F16: comfy-kitchen's CUDA int8_linear refuses it, "
                        f"{triton} runs the layer"
                    )
                return "native", (
                    "weight_scale is F16: comfy-kitchen's CUDA int8_linear refuses it, "
                    f"torch._int_mm runs the layer {data.READ}"
                )
        return None

    def decides(self, layer: Layer, fmt: str, finding: Diagnostic) -> bool:
        """The findings `layer_decision` models per device (`data.DEVICE_FINDINGS`): a W4A8
        s_channel other than F32, an MXFP8 F8_E8M0 scale."""
        tensor = finding.tensor or ""
        return any(
            fmt in formats and finding.code in codes and tensor.endswith(f".{suffix}")
            for formats, suffix, codes in data.DEVICE_FINDINGS
        )

    def compute_dtype(self, spec: GpuSpec) -> tuple[int, str]:
        if spec.vendor == "nvidia" and spec.cc is not None:
            for least, size, name in data.COMPUTE_BYTES_NVIDIA:
                if spec.cc >= least:
                    return size, name
        return data.COMPUTE_BYTES_OTHER.get(spec.backend, (2, "BF16"))

    def extra(self, spec: GpuSpec) -> dict[str, object]:
        """`dynamic_vram`: whether ComfyUI's DynamicVRAM loader runs on this device (main.py;
        it refuses F8_E8M0 scales and applies a LoRA on the fly)."""
        return {"dynamic_vram": dynamic_vram(spec)}

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        out = []
        if spec.cls.cuda_note and spec.cuda == spec.cls.default_cuda:
            out.append(spec.cls.cuda_note)
        if spec.vendor == "nvidia" and not kitchen_cuda(spec):
            out.append(
                f"comfy-kitchen's CUDA backend is off with this torch ({self.title()} needs "
                "CUDA >= 13)"
                + (
                    ": its log still says Native for formats it did not disable"
                    if self.gated
                    else ""
                )
            )
        if "supports-fp8-compute" in spec.flags and (formats & FP8) and not torch_fp8(spec):
            out.append(
                "--supports-fp8-compute: ComfyUI's log says the FP8 formats are native, but "
                "torch._scaled_mm has no FP8 kernel on this device: every FP8 layer falls back "
                "to dequantization with a warning on every call"
            )
        for fmt in sorted(formats & set(data.UNVERIFIED_GATES)):
            out.append(f"{fmt}: {data.UNVERIFIED_GATES[fmt]}")
        if "mxfp8" in formats and spec.cc is not None and spec.cc[0] == 12:
            out.append(
                "mxfp8 on sm_12x: ComfyUI's gate is open, but native MXFP8 matmul there is "
                "unverified (TransformerEngine refuses MXFP8 on 12.0+, NVIDIA/TransformerEngine "
                "#2304)"
            )
        return out
