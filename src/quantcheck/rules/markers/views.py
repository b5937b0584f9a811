"""The marker each kind of reader sees, from a layer's marker sources.

- readers of `.comfy_quant` tensors only (stable-diffusion.cpp, DiffSynth-Studio, musubi-tuner):
  `tensor_marker`, `marker_place`;
- loaders that write each `_quantization_metadata` header entry over the layer's tensor marker
  (Forge Neo's `convert_quantization`, SD.Next's `transcode_quant_metadata`): the header entry
  whole, not a merge — `seen_fields`, `lost_keys`.

Standard library only (the check path imports it).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.layers import Layer
    from quantcheck.model.markers import Marker


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


def seen_fields(marker: Marker) -> dict[str, Any]:
    """The marker object such a loader reads: the last header entry if there is one, else the
    merged tensor markers."""
    headers = [s for s in marker.sources if s.origin == "header"]
    return headers[-1].fields if headers else marker.fields


def lost_keys(marker: Marker) -> list[str]:
    """Tensor-marker keys the header entry does not have: the loader never sees them."""
    headers = [s for s in marker.sources if s.origin == "header"]
    if not headers:
        return []
    kept = headers[-1].fields
    out: dict[str, None] = {}
    for s in marker.sources:
        if s.origin == "tensor":
            out.update(dict.fromkeys(k for k in s.fields if k not in kept))
    return list(out)


def tensor_source_file(marker: Marker) -> str | None:
    """The file of the marker's last source (where a finding points)."""
    return marker.sources[-1].file if marker.sources else None
