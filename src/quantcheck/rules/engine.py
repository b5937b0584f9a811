"""Run every rule over a checkpoint: whole-file rules once, layer rules once per distinct layer.

Diffusion checkpoints repeat the same layer layout hundreds of times. A layer's findings depend
only on its signature (marker fields, tensor suffixes/dtypes/shapes/files, and whether its name
reads as an embedding), so the rules run once per signature; other layers with that signature get
copies renamed to their own prefix. Findings whose message names the prefix are recomputed.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter

from quantcheck.diagnostics import Diagnostic
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules.layer_rules import check_layer
from quantcheck.rules.marker_rules import check_marker_fields, check_orphans
from quantcheck.rules.runtime_rules import is_embedding_name
from quantcheck.runtimes import load, runtimes

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def layer_findings(layer: Layer, legacy: bool, mxfp8_meta: bool,
                   runtime_checks: list[Any]) -> Iterator[Diagnostic]:
    """Every per-layer rule for one layer: the format rules, then each runtime's own."""
    if layer.marker is not None:
        yield from check_marker_fields(layer.marker)
    yield from check_layer(layer, legacy, mxfp8_meta)
    for checks in runtime_checks:
        yield from checks.layer_findings(layer)


_DTYPE_SHAPE_FILE = itemgetter(1, 2, 5)


def _signature(layer: Layer) -> tuple[object, ...]:
    m = layer.marker
    ts = layer.tensors
    return (repr(m.fields) if m else None, m.sources[-1].file if m else None, tuple(ts),
            tuple(map(_DTYPE_SHAPE_FILE, ts.values())), is_embedding_name(layer))


def _renamed(d: Diagnostic, old: str, layer: Layer) -> Diagnostic:
    """`d` for `layer`, found on layer `old` with the same signature. The copy shares every
    field it can (message, fix, effects, data; the tensor name the header already holds), so a
    copy costs one small slotted object."""
    new = layer.prefix
    tensor = d.tensor
    if tensor is not None and tensor.startswith(old):
        info = layer.tensors.get(tensor[len(old) + 1:]) if tensor[len(old):len(old) + 1] == "." \
            else None
        tensor = info[0] if info is not None else new + tensor[len(old):]
    return Diagnostic(d.code, d.message, file=d.file, tensor=tensor, layer=new,
                      pointer=None if d.pointer is None else d.pointer.replace(old, new, 1),
                      fix=d.fix, effects=d.effects, severity=d.severity, data=d.data)


def run_all_rules(ck: Checkpoint) -> list[Diagnostic]:
    """Container/marker findings from loading, whole-file rules, then per-layer rules."""
    out = list(ck.diagnostics)
    out.extend(check_orphans(ck))
    legacy = "scaled_fp8" in ck.tensors or any(la.has("scaled_fp8") for la in ck.layers.values())
    mxfp8_meta = {v.lower() for v in ck.quant_formats.values()} == {"mxfp8"}
    runtime_checks = [load(rt.checks)(ck) for rt in runtimes() if rt.checks]
    for checks in runtime_checks:
        out.extend(checks.file_findings())
    cache: dict[tuple[object, ...], tuple[str, list[Diagnostic]]] = {}
    for layer in ck.layers.values():
        if layer.weight is None:
            continue
        sig = _signature(layer)
        hit = cache.get(sig)
        if hit is not None and not any(hit[0] in d.message for d in hit[1]):
            out.extend(_renamed(d, hit[0], layer) for d in hit[1])
            continue
        found = list(layer_findings(layer, legacy, mxfp8_meta, runtime_checks))
        cache[sig] = (layer.prefix, found)
        out.extend(found)
    return out
