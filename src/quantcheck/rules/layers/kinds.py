"""A checkpoint's weighted layers grouped by kind: the layers a layer rule cannot tell apart.

Diffusion checkpoints repeat a few layer layouts hundreds of times. Two layers are of one kind
when their `signature` is equal: the merged marker's fields, its last source's file and its
number of sources, the tensors (suffix, dtype, shape, file) and whether the name reads as an
embedding. Rules that read only those (the format of the marked layers, their count, a first
file) decide once per kind instead of once per layer; `rules/engine.py` runs the layer rules
once per kind.

`kinds_of(ck)` groups the layers; while `rules/engine.py` checks a checkpoint it holds that
checkpoint's grouping (`hold` .. `let_go`), so each rule asking for it during the run gets the
same one (outside a run, each call groups afresh). Standard library only.
"""

from __future__ import annotations

import re
from operator import itemgetter

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer
    from quantcheck.model.markers import Marker

EMBEDDING_WORDS = ("embed", "wte", "tok_emb", "token_emb")
_EMBEDDING = re.compile("|".join(EMBEDDING_WORDS))
_DTYPE_SHAPE_FILE = itemgetter(1, 2, 5)


def is_embedding_name(layer: Layer) -> bool:
    """Whether the layer's name reads as an embedding table (sglang treats those apart)."""
    prefix = layer.prefix
    hit = _EMBEDDING_NAMES.get(prefix)
    if hit is None:
        low = prefix.lower()
        # every embedding word holds "emb" or "wte" (a test checks): most names hold neither
        hit = ("emb" in low or "wte" in low) and _EMBEDDING.search(low) is not None
        if len(_EMBEDDING_NAMES) >= 65536:  # checkpoints of one family share layer names
            _EMBEDDING_NAMES.clear()
        _EMBEDDING_NAMES[prefix] = hit
    return hit


#: `is_embedding_name` by layer prefix (asked per layer, often for the same names)
_EMBEDDING_NAMES: dict[str, bool] = {}


def signature(layer: Layer) -> tuple[object, ...]:
    """Everything a layer rule may read of `layer` except its name (module doc)."""
    m = layer.marker
    ts = layer.tensors
    embedding = is_embedding_name(layer)
    if m is None:
        return (None, None, 0, tuple(ts), tuple(map(_DTYPE_SHAPE_FILE, ts.values())), embedding)
    return (
        repr(m.fields),
        m.sources[-1].file,
        len(m.sources),
        tuple(ts),
        tuple(map(_DTYPE_SHAPE_FILE, ts.values())),
        embedding,
    )


def fields_repr(m: Marker, seen: dict[object, tuple[Marker, str]]) -> str:
    """`repr(m.fields)`, worked out once per sequence of source field objects in `seen`.

    A merged marker's fields are its sources' fields merged in order (`model.markers.
    merge_markers`), so markers whose sources hold the same objects have equal fields. The
    marker decoder hands out one object per distinct marker bytes, so the layers of a kind
    usually share them. `seen` is keyed by the objects' ids and holds the marker they came
    from (so no id is reused while `seen` lives)."""
    sources = m.sources
    if len(sources) == 1:
        key: object = id(sources[0].fields)
    elif sources:
        key = tuple(id(s.fields) for s in sources)
    else:
        return repr(m.fields)
    hit = seen.get(key)
    if hit is None:
        hit = seen[key] = (m, repr(m.fields))
    return hit[1]


class Kind:
    """The layers of one signature, in checkpoint order (`first`: the first of them)."""

    __slots__ = ("first", "layers", "signature")

    def __init__(self, first: Layer, sig: tuple[object, ...]) -> None:
        self.first = first
        self.layers = [first]
        self.signature = sig

    @property
    def marked(self) -> bool:
        """The layers carry a marker (and, like every layer here, a weight)."""
        return self.first.marker is not None

    @property
    def format(self) -> object:
        """The merged marker's `format` (None when unmarked or absent)."""
        m = self.first.marker
        return None if m is None else m.fields.get("format")


class LayerKinds:
    """The weighted layers of a checkpoint: `order` (each layer with its kind, in checkpoint
    order) and `kinds` (in order of first appearance)."""

    __slots__ = ("kinds", "order")

    def __init__(self, order: list[tuple[Layer, Kind]], kinds: list[Kind]) -> None:
        self.order = order
        self.kinds = kinds


def group_kinds(ck: Checkpoint) -> LayerKinds:
    """Group the layers of `ck` that have a weight by `signature` (worked out here as that
    function does, with each distinct marker's fields written out once: `fields_repr`)."""
    by_sig: dict[tuple[object, ...], Kind] = {}
    order: list[tuple[Layer, Kind]] = []
    kinds: list[Kind] = []
    seen: dict[object, tuple[Marker, str]] = {}  # `fields_repr`: one repr per marker
    embeddings = _EMBEDDING_NAMES
    for layer in ck.layers.values():
        ts = layer.tensors
        if "weight" not in ts:
            continue
        m = layer.marker
        embedding = embeddings.get(layer.prefix)
        if embedding is None:
            embedding = is_embedding_name(layer)
        sig = (
            (None, None, 0, tuple(ts), tuple(map(_DTYPE_SHAPE_FILE, ts.values())), embedding)
            if m is None
            else (
                fields_repr(m, seen),
                m.sources[-1].file,
                len(m.sources),
                tuple(ts),
                tuple(map(_DTYPE_SHAPE_FILE, ts.values())),
                embedding,
            )
        )
        kind = by_sig.get(sig)
        if kind is None:
            kind = by_sig[sig] = Kind(layer, sig)
            kinds.append(kind)
        else:
            kind.layers.append(layer)
        order.append((layer, kind))
    return LayerKinds(order, kinds)


def kinds_of(ck: Checkpoint) -> LayerKinds:
    """The grouping of `ck`: the one held for the checkpoint being checked, else a new one."""
    held = _HELD
    if held is not None and held[0] is ck:
        return held[1]
    return group_kinds(ck)


def any_layer_has(ck: Checkpoint, suffix: str) -> bool:
    """Whether a layer of `ck` has a tensor `suffix`. While `ck`'s grouping is held and covers
    every layer (each has a weight), asked once per kind: the layers of a kind share their
    suffixes (`signature`)."""
    held = _HELD
    if held is not None and held[0] is ck and len(held[1].order) == len(ck.layers):
        return any(suffix in k.first.tensors for k in held[1].kinds)
    return any(suffix in la.tensors for la in ck.layers.values())


def hold(ck: Checkpoint) -> LayerKinds:
    """Group `ck` and hand that grouping to every `kinds_of(ck)` until `let_go` (the
    checkpoint must not change meanwhile)."""
    global _HELD
    kinds = group_kinds(ck)
    _HELD = (ck, kinds)
    return kinds


def let_go(kinds: LayerKinds) -> None:
    """Stop handing out `kinds` (from `hold`)."""
    global _HELD
    held = _HELD
    if held is not None and held[1] is kinds:
        _HELD = None


#: (checkpoint, its grouping) between `hold` and `let_go`
_HELD: tuple[Checkpoint, LayerKinds] | None = None
