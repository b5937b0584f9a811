"""ComfyUI (with comfy-kitchen 0.2.40) on a GPU: how each quantized layer runs (issue 24).

The facts are data in `runtimes/comfyui_gpu.py` (gates, kernels, per-layer fallbacks, with
their sources); this module asks them in ComfyUI's order: the format's `supports_*_compute`
gate, then whether comfy-kitchen's CUDA backend is on and has a kernel for the device, then a
layer's own fallback (shape, scale dtype, F8_E8M0 scales, the `full_precision_matrix_mult`
marker). The same decisions hold for every modelled ComfyUI release (the gates are those of
the newest). comfy-kitchen's HIP backend (ROCm, RDNA3/RDNA4) is asked like the CUDA one.
Standard library only.
"""

from __future__ import annotations

from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.runtimes import comfyui_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.diagnostics import Diagnostic
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.layers import Layer
    from quantcheck.rules.gpu.plan import Decision

FPMM = "full_precision_matrix_mult"


def gate_open(gate: data.Gate, spec: GpuSpec) -> tuple[bool, str]:
    """Whether ComfyUI's predicate `gate` is true on `spec`, and why (the reason names the
    predicate and the fact that decided it)."""
    name = f"{gate.name}()"
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


class ComfyuiGpu(GpuRules):
    """ComfyUI's decisions (see the module docstring)."""

    name = "comfyui"
    marker_keys = (FPMM,)

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        mode, why = self._format_decision(fmt, spec)
        guess = data.UNVERIFIED_GATES.get(fmt)
        return mode, f"{why} [GUESS: {guess}]" if guess else why

    def _format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        """`format_decision` before the [GUESS] tag of an unverified gate."""
        if fmt not in data.FORMAT_GATE:
            return "refused", f"ComfyUI has no quantized op for {fmt!r} (see the findings)"
        gate_name = data.FORMAT_GATE[fmt]
        if gate_name is not None:
            ok, why = gate_open(data.GATES[gate_name], spec)
            if not ok:
                return "emulated", (
                    f"get_disabled_quant_formats: {why}, so {fmt} is disabled and each layer is "
                    "dequantized on every forward (_full_precision_mm)"
                )
        k = data.KERNELS[fmt]
        read = data.READ
        if spec.vendor == "amd" and k.hip_what and hip_runs(k, spec):
            return "native", f"{k.hip_what} {read}"
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
                f"comfy-kitchen's CUDA backend is off (torch built for CUDA {built}, ComfyUI "
                "needs >= 13)"
            )
        elif k.cuda_min is not None:
            off = f"below {k.cuda_what.split(' (')[0]}'s min sm_{k.cuda_min[0]}{k.cuda_min[1]}"
        else:
            off = ""
        what = f"{off}: {k.eager_what}" if off else k.eager_what
        # comfy-kitchen's eager op: whether it reaches torch's own kernel (_int_mm,
        # _scaled_mm) or dequantizes is read, not run
        return k.eager, f"{what} {read}"

    def layer_formats(self, spec: GpuSpec) -> frozenset[str]:
        out = set(data.SHAPE_FORMATS) | {data.INT8_F16_SCALE} | data.W4A8_FORMATS
        if spec.vendor in data.E8M0_REFUSED_VENDORS:
            out.add("mxfp8")
        return frozenset(out)

    def layer_decision(
        self, layer: Layer, fmt: str, dims: tuple[int, int] | None, base: Decision, spec: GpuSpec
    ) -> Decision | None:
        marker = layer.marker
        if marker is not None and marker.get(FPMM) is True:
            return "emulated", (
                f"the marker sets {FPMM}: ComfyUI dequantizes the layer for a normal matmul on "
                "every forward"
            )
        if fmt == "mxfp8" and spec.vendor in data.E8M0_REFUSED_VENDORS:
            scale = layer.tensors.get("weight_scale")
            if scale is not None and scale.dtype == "F8_E8M0":
                return "refused", (
                    "weight_scale is F8_E8M0: ComfyUI's default loader on NVIDIA (DynamicVRAM, "
                    "comfy/utils.py load_safetensors) cannot read it, so the file does not load; "
                    "--disable-dynamic-vram loads it (DynamicVRAM on NVIDIA: run; the loader's "
                    f"dtype table without F8_E8M0: {data.READ})"
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
            if scale is not None and scale.dtype == "F16" and "torch._int_mm" not in base[1]:
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

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        out = []
        if spec.cls.cuda_note and spec.cuda == spec.cls.default_cuda:
            out.append(spec.cls.cuda_note)
        if spec.vendor == "nvidia" and not kitchen_cuda(spec):
            out.append(
                "comfy-kitchen's CUDA backend is off with this torch (ComfyUI needs CUDA >= 13): "
                "ComfyUI's log still says Native for formats it did not disable"
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


COMFYUI_GPU = ComfyuiGpu()
