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
