"""The marker a loader sees when it writes each `_quantization_metadata` header entry over the
layer's `comfy_quant` tensor (Forge Neo's `convert_quantization`, SD.Next's
`transcode_quant_metadata`): the header entry whole, not a merge with the tensor marker."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.markers import Marker


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
