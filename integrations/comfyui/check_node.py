"""The check behind the "Check Quantized Model" node (both node APIs call `run`)."""

from __future__ import annotations

import os

from quantcheck.errors import InputError
from quantcheck.integrations.preflight import preflight, report_text

from .runtime_facts import emulated_formats, target_and_gpu

#: ComfyUI's model folders the node offers (folder_paths names); text_encoders is also
#: known as clip, diffusion_models as unet
FOLDERS = ("diffusion_models", "text_encoders", "loras")
NONE = "(none)"


def choices(folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """`folder/file` for every .safetensors file in the model folders ComfyUI knows."""
    try:
        import folder_paths  # type: ignore[import-not-found]
    except ImportError:
        return [NONE]
    out = [NONE]
    for folder in folders:
        try:
            names = folder_paths.get_filename_list(folder)
        except Exception:  # a folder name this ComfyUI does not have
            continue
        out += [f"{folder}/{n}" for n in names if n.lower().endswith((".safetensors", ".sft"))]
    return out


def resolve(choice: str, path: str) -> str:
    """The file to check: `path` when given, else the chosen model folder entry."""
    if path.strip():
        return os.path.expanduser(path.strip())
    if not choice or choice == NONE:
        return ""
    folder, _, name = choice.partition("/")
    import folder_paths

    full = folder_paths.get_full_path(folder, name)
    return str(full or "")


def run(choice: str, path: str = "", lora: str = "") -> tuple[str, bool, str]:
    """(report text, passed, one-line summary) for the chosen file on the running ComfyUI."""
    file = resolve(choice, path)
    if not file:
        return "no model chosen", False, "quantcheck: no model chosen"
    target, note, gpu = target_and_gpu()
    lora_file = resolve(lora, "")
    try:
        pf = preflight([file], target, gpu=gpu, lora=lora_file or None, emulated=emulated_formats())
    except InputError as exc:
        return f"quantcheck could not read {file}: {exc}", False, f"quantcheck: unreadable: {exc}"
    text = f"{note}\n\n{report_text(pf)}"
    return text, pf.passed, pf.summary()
