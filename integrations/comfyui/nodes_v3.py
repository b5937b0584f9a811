""" "Check Quantized Model" in ComfyUI's V3 node API (`comfy_api.latest`; imported only when
the running ComfyUI has it)."""

from __future__ import annotations

from comfy_api.latest import ComfyExtension, io, ui  # type: ignore[import-not-found]

from . import check_node
from .nodes_v1 import CATEGORY, DESCRIPTION, DISPLAY_NAME, NODE_ID


class CheckQuantizedModel(io.ComfyNode):  # type: ignore[misc]
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id=NODE_ID,
            display_name=DISPLAY_NAME,
            category=CATEGORY,
            description=DESCRIPTION,
            is_output_node=True,
            inputs=[
                io.Combo.Input(
                    "model",
                    options=check_node.choices(),
                    tooltip="a file in ComfyUI's model folders",
                ),
                io.String.Input(
                    "path", default="", optional=True, tooltip="or a path (wins when set)"
                ),
                io.Combo.Input(
                    "lora",
                    options=check_node.choices(("loras",)),
                    optional=True,
                    tooltip="a LoRA to apply to it",
                ),
            ],
            outputs=[
                io.String.Output(display_name="report"),
                io.Boolean.Output(display_name="passed"),
            ],
        )

    @classmethod
    def fingerprint_inputs(cls, **kwargs: object) -> float:
        return float("nan")  # the file may change on disk: check on every run

    @classmethod
    def execute(cls, model: str, path: str = "", lora: str = check_node.NONE) -> io.NodeOutput:
        text, passed, summary = check_node.run(model, path, lora)
        return io.NodeOutput(text, passed, ui=ui.PreviewText(summary))


class QuantcheckExtension(ComfyExtension):  # type: ignore[misc]
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return [CheckQuantizedModel]


async def comfy_entrypoint() -> QuantcheckExtension:
    return QuantcheckExtension()
