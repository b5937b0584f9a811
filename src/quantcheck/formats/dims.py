"""Derive a layer's logical [N, K] and group sizes from its stored tensors and marker."""

from __future__ import annotations

from quantcheck.formats.table import (
    COMFYUI_INT_KEYS,
    Dims,
    FormatSpec,
    marker_int,
    marker_int_text,
)

_ABSENT = object()

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)

if TYPE_CHECKING:
    from quantcheck.model.layers import Layer


def marker_sizes(spec: FormatSpec, layer: Layer) -> tuple[int, int]:
    """(group_size, convrot_groupsize) from the marker, with the format's defaults; 0 if invalid."""
    m = layer.marker
    g = cg = 0
    for key in spec.keys:
        if key.name in ("group_size", "convrot_groupsize"):
            present = m is not None and m.get(key.name, _ABSENT) is not _ABSENT
            raw = m.get(key.name) if m else None
            v = marker_int(raw, key.default, present)
            if v is None and key.name in COMFYUI_INT_KEYS.get(spec.name, ()):
                v = marker_int_text(raw)  # ComfyUI int()s it; QC219/QC220 report the text
            v = v or 0
            if key.name == "group_size":
                g = v
            else:
                cg = v
    return g, cg


def _k_from_group_scales(layer: Layer, g: int) -> int:
    """K = columns of `weight_s_rel` x group_size; 0 when that cannot be read."""
    s_rel = layer.tensors.get("weight_s_rel")
    if s_rel is not None and len(s_rel.shape) == 2 and g > 0:
        return s_rel.shape[1] * g
    return 0


def orig_shape(layer: Layer) -> tuple[int, int] | None:
    """The marker's `orig_shape` [N, K] when it is two positive integers."""
    v = layer.marker.get("orig_shape") if layer.marker else None
    if isinstance(v, list) and len(v) == 2 and all(type(x) is int and x > 0 for x in v):
        return v[0], v[1]
    return None


def derive_dims(spec: FormatSpec, layer: Layer) -> Dims | None:
    """Dims of a layer stored in `spec`'s layout; None when the weight is absent or not 2-D."""
    w = layer.weight
    if w is None or len(w.shape) != 2:
        return None
    rows, cols = w.shape
    g, cg = marker_sizes(spec, layer)
    bits = 4
    if spec.packing == "none":
        k = cols
    elif len(spec.code_bits) > 1:
        k = 2 * cols
        k_groups = _k_from_group_scales(layer, g)
        if k_groups and (cols * 8) % k_groups == 0 and (cols * 8) // k_groups in spec.code_bits:
            k = k_groups
            bits = (cols * 8) // k
    elif spec.code_bits != (4,):
        # One code width other than 4: K is what the group scales say (as comfy-kitchen reads
        # it); the packed width is checked against it (QC321). Without them, the width's K.
        bits = spec.code_bits[0]
        k = _k_from_group_scales(layer, g) or cols * 8 // bits
    else:
        k = 2 * cols
    n = rows
    n_exact = k_exact = True
    if spec.pad:
        given = orig_shape(layer)
        bias = layer.tensors.get("bias")
        if given is not None and given[0] <= rows and given[1] <= k:
            n, k = given
        else:
            if bias is not None and len(bias.shape) == 1 and 0 < bias.shape[0] <= rows:
                n = bias.shape[0]
            else:
                # Stored sizes that are multiples of the pad may include up to pad-1 zero rows.
                n_exact = rows % spec.pad != 0
            k_exact = k % spec.pad != 0
    return Dims(n, k, tuple(w.shape), g=g, cg=cg, bits=bits, k_exact=k_exact, n_exact=n_exact)
