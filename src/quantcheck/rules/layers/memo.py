"""Per-layer findings computed once per distinct layer, for a runtime's whole-file pass.

`rules/engine.py` runs layer rules once per layer signature, but its signature holds the merged
marker only. A runtime that reads one marker source apart from the other (DiffSynth-Studio
reads only the tensor markers) needs a key with every source: `layer_key`. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter

from quantcheck.diagnostics import Diagnostic
from quantcheck.model.layers import Layer
from quantcheck.model.markers import Marker
from quantcheck.rules.engine import renamed
from quantcheck.rules.layers.kinds import LayerKinds, fields_repr, is_embedding_name

_DTYPE_SHAPE_FILE = itemgetter(1, 2, 5)


def layer_key(
    layer: Layer, seen: dict[object, tuple[Marker, str]] | None = None
) -> tuple[object, ...]:
    """Everything a layer rule may read except the layer's name: the merged marker and each
    marker source (origin, file, and its fields where there are several), the tensors
    (suffix, dtype, shape, file) and whether it reads as an embedding. `seen`: where the
    merged fields' repr is kept per distinct marker, for one pass (`layer_kinds.fields_repr`)."""
    m = layer.marker
    ts = layer.tensors
    return (
        sources_key(m),
        None if m is None else repr(m.fields) if seen is None else fields_repr(m, seen),
        tuple(ts),
        tuple(map(_DTYPE_SHAPE_FILE, ts.values())),
        is_embedding_name(layer),
    )


def sources_key(m: Marker | None) -> object:
    """What `layer_key` holds of each marker source: origin and file, and its fields where
    there are several (None: no marker)."""
    if m is None:
        return None
    if len(m.sources) > 1:
        return tuple((s.origin, s.file, repr(s.fields)) for s in m.sources)
    return tuple((s.origin, s.file) for s in m.sources)


def memo_findings(
    layers: Iterable[Layer],
    compute: Callable[[Layer], Iterable[Diagnostic]],
    kinds: LayerKinds | None = None,
) -> Iterator[Diagnostic]:
    """`compute(layer)` for every layer, computed once per `layer_key` and copied (renamed) to
    the other layers with that key; recomputed where a finding's message names the layer.

    `kinds`: the grouping of the checkpoint the layers are from (`layer_kinds.kinds_of`). A
    layer it holds is keyed by its kind and `sources_key` instead: the kind's signature holds
    the rest of `layer_key` (the merged fields, the tensors, the embedding test) and the sources
    add what it lacks, so the layers keyed alike are the same."""
    cache: dict[tuple[object, ...], tuple[str, list[Diagnostic]]] = {}
    seen: dict[object, tuple[Marker, str]] = {}  # `layer_key`: one repr per marker
    kind_of = {id(la): k for la, k in kinds.order} if kinds is not None else {}
    for layer in layers:
        kind = kind_of.get(id(layer))  # `kinds` holds its layers: no id is reused meanwhile
        key = layer_key(layer, seen) if kind is None else (kind, sources_key(layer.marker))
        hit = cache.get(key)
        if hit is not None:
            old, found = hit
            if not found:
                continue
            if not any(old in d.message for d in found):
                yield from (renamed(d, old, layer) for d in found)
                continue
        found = list(compute(layer))
        cache[key] = (layer.prefix, found)
        yield from found
