"""Group tensor names into layers by prefix and the known suffixes."""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.formats.table import COMPANION_SUFFIXES

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)

if TYPE_CHECKING:
    from quantcheck.io.header import TensorInfo
    from quantcheck.model.markers import Marker

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


def group_layers(tensors: dict[str, TensorInfo]) -> tuple[dict[str, Layer], list[str]]:
    """Layers by prefix (in first-seen order) and the names that belong to no layer."""
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
