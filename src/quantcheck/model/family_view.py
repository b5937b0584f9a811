"""A checkpoint seen as a model family: its stored and logical shapes, and its detection.

`stored_shapes` are the shapes in the header (what ComfyUI's detection reads); `logical_shapes`
replace each quantized weight's stored shape by its logical [N, K] (what the file means: a
packed NVFP4 / W4A4 / W4A8 / AWQ weight stores K/2 or less). `checkpoint_family` is the
detection on the logical shapes, the one `inspect` and `check` report.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, KeysView, Mapping

from quantcheck.families import Detection, detect
from quantcheck.families.detection import modules
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS, FormatSpec

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer

#: Weight dtypes that hold quantized codes (a layer without a marker stored this way is
#: quantized too: legacy scaled FP8, a marker lost).
QUANTIZED_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "I8", "U8", "F4", "I4"})


def layer_spec(layer: Layer) -> FormatSpec | None:
    """The format table entry of a marked layer (None: unmarked or an unknown format)."""
    fmt = layer.marker.format if layer.marker is not None else None
    return FORMATS.get(fmt) if isinstance(fmt, str) else None


def is_quantized(layer: Layer) -> bool:
    """Whether the layer's weight is stored quantized (a marker, or a code dtype)."""
    w = layer.weight
    if w is None:
        return False
    return layer.marker is not None or w.dtype in QUANTIZED_DTYPES


def layer_format(layer: Layer) -> str:
    """The format name a report shows for a quantized layer."""
    spec = layer_spec(layer)
    if spec is not None:
        return spec.name
    w = layer.weight
    return f"unmarked {w.dtype}" if w is not None else "unknown"


def logical_weight_shape(layer: Layer) -> tuple[int, ...] | None:
    """[N, K] of a packed layer's weight (None when the stored shape is already logical or the
    dims cannot be derived)."""
    spec = layer_spec(layer)
    if spec is None or spec.packing == "none":
        return None
    dims = derive_dims(spec, layer)
    if dims is None:
        return None
    return (dims.N, dims.K)


class Shapes(Mapping[str, tuple[int, ...]]):
    """A checkpoint's tensor name -> shape, read from its header entries as asked (no copy):
    stored shapes, or (`logical`) with a packed weight's logical [N, K] in its place."""

    __slots__ = ("_ck", "_logical")

    def __init__(self, ck: Checkpoint, logical: bool) -> None:
        self._ck = ck
        self._logical = logical

    def __getitem__(self, name: str) -> tuple[int, ...]:
        t = self._ck.tensors[name]
        if self._logical and name.endswith(".weight"):
            layer = self._ck.layers.get(name[: -len(".weight")])
            shape = logical_weight_shape(layer) if layer is not None else None
            if shape is not None:
                return shape
        return t.shape

    def __iter__(self) -> Iterator[str]:
        return iter(self._ck.tensors)

    def __len__(self) -> int:
        return len(self._ck.tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._ck.tensors

    def keys(self) -> KeysView[str]:
        return self._ck.tensors.keys()


def stored_shapes(ck: Checkpoint) -> Shapes:
    """Every tensor's stored shape (what ComfyUI's detection reads)."""
    return Shapes(ck, logical=False)


def logical_shapes(ck: Checkpoint) -> Shapes:
    """Stored shapes with each packed weight's logical [N, K] in its place."""
    return Shapes(ck, logical=True)


def module_names(ck: Checkpoint) -> list[str]:
    """The checkpoint's modules (`families.detection.modules`), from its grouped layers."""
    return list(dict.fromkeys([*ck.layers, *modules(ck.loose)]))


#: The last checkpoint detected (a weak reference: nothing is kept alive) and its detection:
#: `check` asks twice for the same checkpoint (its rules, its report).
_LAST: list[tuple[weakref.ref[Checkpoint], int, Detection]] = []


def checkpoint_family(ck: Checkpoint) -> Detection:
    """The family of a checkpoint, detected from its logical shapes."""
    if _LAST and _LAST[0][0]() is ck and _LAST[0][1] == len(ck.tensors):
        return _LAST[0][2]
    found = detect(logical_shapes(ck), module_names(ck))
    _LAST[:] = [(weakref.ref(ck), len(ck.tensors), found)]
    return found


def checkpoint_family_name(ck: Checkpoint) -> str | None:
    """The checkpoint's family name (`families.table.FAMILIES`: "flux", "flux2", "qwen_image",
    "zimage", "wan", "ltx2", "minimax_h3", ...), or None when unknown or unsure: what a loader
    choice (sglang's) asks."""
    return checkpoint_family(ck).name
