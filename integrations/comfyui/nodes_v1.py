""" "Check Quantized Model" in ComfyUI's first node API (every ComfyUI version has it)."""

from __future__ import annotations

from typing import Any

from . import check_node

NODE_ID = "QuantcheckCheckModel"
DISPLAY_NAME = "Check Quantized Model"
CATEGORY = "quantcheck"
DESCRIPTION = (
    "Reads only the header of a quantized safetensors checkpoint and checks it against the "
    "rules of this ComfyUI (its version and device): the report text and whether it loads."
)


class CheckQuantizedModel:
    """The node: model file (or path), optional LoRA -> report text, passed."""

    CATEGORY = CATEGORY
    DESCRIPTION = DESCRIPTION
    FUNCTION = "check"
    OUTPUT_NODE = True
    RETURN_TYPES = ("STRING", "BOOLEAN")
    RETURN_NAMES = ("report", "passed")

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "model": (check_node.choices(), {"tooltip": "a file in ComfyUI's model folders"}),
            },
            "optional": {
                "path": ("STRING", {"default": "", "tooltip": "or a path (wins when set)"}),
                "lora": (check_node.choices(("loras",)), {"tooltip": "a LoRA to apply to it"}),
            },
        }

    @classmethod
    def IS_CHANGED(cls, **kwargs: Any) -> float:
        return float("nan")  # the file may change on disk: check on every run

    def check(self, model: str, path: str = "", lora: str = check_node.NONE) -> dict[str, Any]:
        text, passed, summary = check_node.run(model, path, lora)
        return {"ui": {"text": [summary]}, "result": (text, passed)}


NODE_CLASS_MAPPINGS = {NODE_ID: CheckQuantizedModel}
NODE_DISPLAY_NAME_MAPPINGS = {NODE_ID: DISPLAY_NAME}
