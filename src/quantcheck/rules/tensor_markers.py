"""The marker a runtime that reads only `.comfy_quant` tensors sees (no header markers).

Standard library only (the check path imports it).
"""

from __future__ import annotations

from quantcheck.model.layers import Layer

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def tensor_marker(layer: Layer) -> dict[str, Any] | None:
    """The layer's `.comfy_quant` tensor object (the last shard's when several), ignoring the
    header's `_quantization_metadata`; None when no tensor marker was decoded."""
    if layer.marker is None:
        return None
    found = [s.fields for s in layer.marker.sources if s.origin == "tensor"]
    return found[-1] if found else None


def marker_place(layer: Layer) -> str:
    """Where the layer's marker is, as a tensor-marker reader sees it (for messages)."""
    if layer.marker is None:
        return "without any marker"
    if not any(s.origin == "tensor" for s in layer.marker.sources):
        return "marked only in the header's _quantization_metadata"
    return f"whose .comfy_quant names format {layer.marker.format!r}"
