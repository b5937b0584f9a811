"""Group tensor names into layers by prefix and the known suffixes."""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.formats.table import COMPANION_SUFFIXES

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)

if TYPE_CHECKING:
    from quantcheck.io.header import TensorInfo
    from quantcheck.model.markers import Marker

    #: How one list of tensor names groups: (prefix, ((suffix, name), ...)) per layer in
    #: first-seen order, and the names that belong to no layer.
    _Layout = tuple[tuple[tuple[str, tuple[tuple[str, str], ...]], ...], tuple[str, ...]]

#: Suffixes that belong to a layer: weight, its quantization companions (the format table),
#: bias, marker, and the legacy scaled_fp8 keys.
KNOWN_SUFFIXES: frozenset[str] = COMPANION_SUFFIXES | {
    "weight",
    "bias",
    "comfy_quant",
    "scale_weight",
    "scale_input",
    "scaled_fp8",
}


@record
class Layer:
    """One layer: its tensors by suffix and its merged marker (if any)."""

    prefix: str
    tensors: dict[str, TensorInfo] = factory(dict)
    marker: Marker | None = None

    @property
    def weight(self) -> TensorInfo | None:
        return self.tensors.get("weight")

    def has(self, suffix: str) -> bool:
        return suffix in self.tensors

    @property
    def format(self) -> object:
        return self.marker.format if self.marker else None


#: Longer name lists are always grouped name by name (the remembered layout stays small).
LAYOUT_MAX_NAMES = 4096
#: The last name list grouped, and its layout once that list was seen twice in a row (the
#: checkpoints of one folder usually share their names): (names, layout or None).
_last: list[tuple[tuple[str, ...], _Layout | None]] = []
#: whether layouts are remembered: only while many checkpoints are checked
_REPLAY = [False]


def shared_layout_replay(on: bool) -> None:
    """Replay the layout of a repeated name list (`on`: `quantcheck.many` turns it on for the
    checkpoints of one run), or stop and forget it."""
    _REPLAY[0] = on
    _last.clear()


def group_layers(tensors: dict[str, TensorInfo]) -> tuple[dict[str, Layer], list[str]]:
    """Layers by prefix (in first-seen order) and the names that belong to no layer.

    The grouping depends on the names alone: when they repeat those of the previous call, the
    layout found then is replayed (the same result, without splitting every name again)."""
    if not _REPLAY[0] or len(tensors) > LAYOUT_MAX_NAMES:
        return _group(tensors)
    names = tuple(tensors)
    last = _last[0] if _last else None
    if last is None or last[0] != names:
        _last[:] = [(names, None)]
        return _group(tensors)
    layout = last[1]
    if layout is None:  # seen twice: remember how they group
        layers, loose = _group(tensors)
        _last[:] = [(names, _layout_of(layers, loose))]
        return layers, loose
    groups, loose_names = layout
    layers = {p: Layer(p, {s: tensors[n] for s, n in members}) for p, members in groups}
    return layers, list(loose_names)


def _group(tensors: dict[str, TensorInfo]) -> tuple[dict[str, Layer], list[str]]:
    """`group_layers`, name by name."""
    layers: dict[str, Layer] = {}
    loose: list[str] = []
    known = KNOWN_SUFFIXES
    for name, t in tensors.items():
        prefix, _, suffix = name.rpartition(".")
        if not prefix or suffix not in known:
            loose.append(name)
            continue
        layer = layers.get(prefix)
        if layer is None:
            layer = layers[prefix] = Layer(prefix)
        layer.tensors[suffix] = t
    return layers, loose


def _layout_of(layers: dict[str, Layer], loose: list[str]) -> _Layout:
    """The layout `_group` found: each layer's (suffix, tensor name) pairs, and the loose names."""
    groups = tuple(
        (p, tuple((s, f"{p}.{s}") for s in layer.tensors)) for p, layer in layers.items()
    )
    return groups, tuple(loose)
