"""The LoRA's GPU dimension (issue 24's entries): per patched quantized layer its `lora_mode`
in `targets[T].gpu[G].execution`, and the patch's memory in each GPU entry. Standard library
only.

ComfyUI @783545f6: with DynamicVRAM (main.py: on by default on NVIDIA, and on AMD with ROCm
>= 7.14, torch >= 2.8, unless --disable-dynamic-vram / --highvram / --gpu-only / --novram /
--cpu; comfy/cli_args.py enables_dynamic_vram, main.py dynamic_vram_supported) the model is a
ModelPatcherDynamic: a LoRA patch becomes the layer's `_lowvram_function`, applied when the
weight is cast; only a layer that asks for re-quantization (INT8's linear_input_act,
`want_requant`) is re-quantized, every other one runs dequantized while the LoRA is on — an
AWQ layer included, so it does not raise there. Without DynamicVRAM the full load patches and
re-quantizes every layer (`outcome`), and an AWQ/SVDQuant layer makes the load fail.
Another runtime's layers take its LoRA path's outcome (`runtimes/lora_path.py`; sglang's
default keeps the LoRA as a side branch beside the quantized matmul).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.rules.lora.analyse import Analysis, LayerResult

#: lora_mode values: what the LoRA makes of a quantized layer on one GPU
LORA_MODES = {
    "requantized": "patched and re-quantized in its own format; runs as `mode` says",
    "dequantized": "the LoRA is applied on the fly: the layer runs dequantized every step",
    "load-fails": "the full-load patch raises: the LoRA load fails as a whole",
    "side-branch": "the LoRA runs beside the quantized matmul (x @ A @ B): the layer keeps its "
    "mode, each step pays two thin GEMMs",
    "not-modelled": "this runtime's LoRA path on quantized layers is not modelled",
}
#: another runtime's outcome (runtimes/lora_path.py) -> lora_mode
OTHER_MODES = {
    "requantized": "requantized",
    "merged": "dequantized",
    "side-branch": "side-branch",
    "dequantized": "dequantized",
    "raises": "load-fails",
}
COMFY = ("comfyui", "comfyui-cpu")


def _version(text: object) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(text).split(".")[:2])
    except ValueError:
        return (0,)


def dynamic_vram(target: str, entry: dict[str, Any]) -> bool:
    """Whether ComfyUI runs DynamicVRAM on this entry's device: the entry's own `dynamic_vram`
    (`rules/gpu/kitchen.py`, which reads the `--gpu ...,flags=` launch switches) where it has
    one, else ComfyUI's default for the device."""
    if target.split("@")[0] == "comfyui-cpu":
        return False
    known = entry.get("dynamic_vram")
    if isinstance(known, bool):
        return known
    if _version(entry.get("torch")) < (2, 8):
        return False
    if entry.get("vendor") == "nvidia":
        return True
    return entry.get("vendor") == "amd" and _version(entry.get("rocm")) >= (7, 14)


def lora_mode(target: str, entry: dict[str, Any], r: LayerResult) -> str:
    name = target.split("@")[0]
    if name not in COMFY:
        other = r.runtimes.get(name)
        return OTHER_MODES.get(other["outcome"], "not-modelled") if other else "not-modelled"
    if dynamic_vram(target, entry):
        return r.on_the_fly if r.on_the_fly in ("requantized", "dequantized") else "dequantized"
    return "load-fails" if r.outcome == "raises" else "requantized"


def fill_lora_modes(gpu: dict[str, dict[str, dict[str, Any]]], a: Analysis) -> None:
    """Set `execution[LAYER].lora_mode` for every layer the LoRA patches and add the patch's
    memory (`lora` block; `peak_extra_bytes` grows to the largest layer the LoRA runs
    dequantized) in every entry of `gpu` ({target: {G: entry}}, changed in place; execution
    records are copied before they change: they are shared between layers)."""
    patched = {r.layer: r for r in a.layers if r.quantized}
    patch_bytes = sum(r.patch_bytes for r in a.layers)
    for target, entries in gpu.items():
        for entry in entries.values():
            execution = entry.get("execution", {})
            size = 2 if entry.get("compute_dtype") in ("BF16", "F16") else 4
            modes: dict[str, int] = {}
            peak = 0
            for prefix, r in patched.items():
                mode = lora_mode(target, entry, r)
                modes[mode] = modes.get(mode, 0) + 1
                if prefix in execution:
                    execution[prefix] = {**execution[prefix], "lora_mode": mode}
                if mode == "dequantized" and r.shape is not None:
                    peak = max(peak, r.shape[0] * r.shape[1] * size)
            entry["lora"] = {
                "dynamic_vram": dynamic_vram(target, entry)
                if target.split("@")[0] in COMFY
                else None,
                "layers": modes,
                "patch_bytes": patch_bytes,
                "weight_bytes_with_lora": entry.get("weight_bytes", 0) + patch_bytes,
            }
            entry["peak_extra_bytes"] = max(entry.get("peak_extra_bytes", 0), peak)
            if modes:
                said = ", ".join(f"{n} {m}" for m, n in modes.items())
                entry["summary"] = entry.get("summary", "") + f" · LoRA: {said}"
