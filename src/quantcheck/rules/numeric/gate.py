"""The one gate in front of every numeric path: numbers are read only from layers the rules pass.

Dequantize (the `Checkpoint.layer(...).dequantize()` API and the command), compare,
`check --deep` and the unsafe fixes ask `numeric_refusal(layer)` first. A layer whose marker,
weight dtype or tensor shapes draw an error that affects ComfyUI (whose numerics the numeric
code follows) is skipped, and the reason names that finding. The gate blocks only what the
codecs cannot decode: a companion whose dtype label a runtime refuses but whose numbers the
codec reads as the wanted dtype (the same bytes, or an exact float widening: the finding's
safe fix) is a finding, not a reason to refuse numbers (MXFP8 block scales stored as F8_E8M0,
as comfy-kitchen's quantize_mxfp8 returns them, are E8M0 exponents either way).
Standard library only.
"""

from __future__ import annotations

from quantcheck.diagnostics import Diagnostic, Effect, Safety, Severity
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R

#: QC6xx say whether a runtime release loads a format at all (QC610: w6a8_int8 on ComfyUI up
#: to 0271a469), not that the layer's numbers are unreadable: they never block.
RUNTIME_SUPPORT = "QC6"
#: A companion dtype label: blocks only where no safe relabel or cast reads it.
DTYPE_LABEL = R.QC305.code


def _decodable_label(d: Diagnostic) -> bool:
    """A companion-dtype finding whose numbers the codec reads as they are (its fix keeps
    every value: a relabel of the same bytes or an exact cast to F32)."""
    return d.code == DTYPE_LABEL and d.fix is not None and d.fix.safety is Safety.SAFE


def blocking_findings(layer: Layer, *, marker_only: bool = False) -> list[Diagnostic]:
    """Error-level findings of the marker and layer rules that make this layer's numbers
    unreadable: errors about its marker fields, weight dtype, companion shapes or sizes that
    ComfyUI does not load as they are (sglang-only findings do not block). `marker_only`
    looks at the marker fields alone (quantizing a float weight its marker describes)."""
    from quantcheck.rules.layers.checks import check_layer
    from quantcheck.rules.markers.checks import check_marker_fields

    if layer.marker is None:
        return []
    found = list(check_marker_fields(layer.marker))
    if not marker_only:
        found += check_layer(layer, False, False)
    return [
        d
        for d in found
        if d.effective_severity is Severity.ERROR
        and not d.code.startswith(RUNTIME_SUPPORT)
        and not _decodable_label(d)
        and d.effective_effects.get("comfyui", Effect.NONE) is not Effect.NONE
    ]


def numeric_refusal(layer: Layer, *, marker_only: bool = False) -> str | None:
    """Why the numeric code must not touch `layer` (None: it may). Names the finding."""
    if layer.marker is None and "comfy_quant" in layer.tensors:
        return "its comfy_quant marker could not be read (see the marker finding)"
    found = blocking_findings(layer, marker_only=marker_only)
    if not found:
        return None
    d = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"the rules reject it: {d.code} {d.name}: {d.message}{more}"
