"""What the running ComfyUI is: its version (-> quantcheck target) and its device (-> GPU).

Read from ComfyUI itself when it runs (`comfyui_version.__version__`,
`comfy.model_management.get_torch_device()` and, on CUDA, the device's compute capability);
imported lazily, so this module also loads where ComfyUI is absent (the tests).
"""

from __future__ import annotations

from quantcheck.runtimes.versions import release_for_version


def comfyui_version() -> str:
    """The running ComfyUI's version ("" when it cannot be read)."""
    try:
        import comfyui_version  # type: ignore[import-not-found]

        return str(comfyui_version.__version__)
    except (ImportError, AttributeError):
        return ""


def device_facts() -> tuple[str, str | None]:
    """(device type, GPU class such as "sm_89" or None) of ComfyUI's torch device."""
    try:
        import comfy.model_management as mm  # type: ignore[import-not-found]

        dev = mm.get_torch_device()
    except Exception:  # ComfyUI absent or its device not set up: treated as the CPU
        return "cpu", None
    kind = str(getattr(dev, "type", dev))
    if kind != "cuda":
        return kind, None
    try:
        import torch

        major, minor = torch.cuda.get_device_capability(dev)
        return kind, f"sm_{major}{minor}"
    except Exception:
        return kind, None


def target_and_gpu() -> tuple[str, str, str | None]:
    """(quantcheck target key, how it was chosen, GPU class) for the running ComfyUI:
    `comfyui-cpu` when its device is the CPU (`--cpu`), else `comfyui`, at the release its
    version stands for."""
    kind, gpu = device_facts()
    runtime = "comfyui-cpu" if kind == "cpu" else "comfyui"
    version = comfyui_version()
    target, note = release_for_version(runtime, version or "unknown")
    return target, note, gpu


#: ComfyUI's device gates (comfy/ops.py `pick_operations` @783545f6: a format whose predicate
#: in comfy/model_management.py is false on the load device is passed to mixed_precision_ops
#: as disabled, "emulated ops" in its log: loaded quantized, dequantized on every forward).
#: `supports_int8_compute` is asked from 02b2b388 on; a predicate this ComfyUI lacks is skipped.
GATES = (
    ("supports_fp8_compute", ("float8_e4m3fn", "float8_e5m2")),
    ("supports_nvfp4_compute", ("nvfp4",)),
    ("supports_mxfp8_compute", ("mxfp8",)),
    ("supports_int8_compute", ("int8_tensorwise", "convrot_w4a4", "asym_w4a8_int8", "w6a8_int8")),
)


def emulated_formats() -> dict[str, str]:
    """format -> why, for the formats the running ComfyUI computes emulated on its device:
    `comfy.ops.get_disabled_quant_formats(device)` where it exists, else the predicates."""
    try:
        import comfy.model_management as mm

        dev = mm.get_torch_device()
    except Exception:
        return {}
    try:
        import comfy.ops  # type: ignore[import-not-found]

        disabled = getattr(comfy.ops, "get_disabled_quant_formats", None)
        if disabled is not None:
            return {str(f): f"disabled on {dev}" for f in disabled(dev)}
    except Exception:
        pass
    out: dict[str, str] = {}
    for name, formats in GATES:
        gate = getattr(mm, name, None)
        if gate is None:
            continue
        try:
            native = bool(gate(dev))
        except Exception:
            continue
        if not native:
            out.update((f, f"{name}() is false on {dev}") for f in formats)
    return out
