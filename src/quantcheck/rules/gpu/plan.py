"""Per target and GPU: how each quantized layer runs (the decisions the `targets[T].gpu[G]`
entry of docs/json-schema.md is made of, `rules/gpu/entry.py`). Standard library only.

A runtime's decisions are a `GpuRules` object (its record's `gpu` reference). The work is
looked up per format (`format_decision`), then per layer only for the formats the runtime
names in `layer_formats` (a layer-specific fallback exists) or for layers whose marker has one
of its `marker_keys`. Everything that does not depend on the device (which layers are
quantized, their bytes) is computed once per checkpoint (`Plan`).
"""

from __future__ import annotations

from operator import itemgetter

from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.diagnostics import Diagnostic
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer

#: How a layer runs: `native` (the format's own kernel), `emulated` (dequantized on every
#: call: stored small, computed slowly; or, where the runtime says so (`GpuRules.held`),
#: dequantized once when loaded: held large, computed as floats), `refused` (does not load or
#: run on the device), `depends` (native or dequantized by the batch of tokens; the reason
#: says on what).
MODES = ("native", "emulated", "refused", "depends")

Decision = tuple[str, str]  # (mode, reason)
_DTYPE_SHAPE = itemgetter(1, 2)  # of a TensorInfo
MARKER = ".comfy_quant"
#: bytes per element of the floating-point storage dtypes (elements = stored bytes / width)
FLOAT_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}


class GpuRules:
    """A runtime's GPU decisions; subclassed in `rules/<runtime>/gpu.py`."""

    #: the runtime's name (the target key's runtime)
    name = ""
    #: marker keys that make a layer's decision its own (ComfyUI: full_precision_matrix_mult)
    marker_keys: tuple[str, ...] = ()
    #: the launch switches of `--gpu ...,flags=` it reads (`gpus/spec.FLAGS`); the entry notes
    #: the others as ignored
    flags: frozenset[str] = frozenset()
    #: file-level codes (no layer named) that stop the layers of some formats from loading:
    #: {code: formats}, the format "*" for every quantized layer (the whole load stops;
    #: `rules/gpu/refusals.py`; the runtime's own data)
    blocking: dict[str, frozenset[str]] = {}  # noqa: RUF012 - read only
    #: it runs comfy-kitchen's kernels: the known bad combinations (QC800-QC803) concern it
    kitchen = False

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        """How every layer of format `fmt` runs on `spec`, unless a layer rule says otherwise."""
        raise NotImplementedError

    def layer_formats(self, spec: GpuSpec) -> frozenset[str]:
        """Formats whose layers can each decide otherwise on `spec` (a per-layer fallback)."""
        return frozenset()

    def layer_decision(
        self, layer: Layer, fmt: str, dims: tuple[int, int] | None, base: Decision, spec: GpuSpec
    ) -> Decision | None:
        """This layer's own decision, or None when it is the format's (`base`)."""
        return None

    def decides(self, layer: Layer, fmt: str, finding: Diagnostic) -> bool:
        """Whether `layer_decision` models the failing `finding` per device itself (then it does
        not refuse the layer everywhere, `rules/gpu/refusals.py`)."""
        return False

    def compute_dtype(self, spec: GpuSpec) -> tuple[int, str]:
        """(bytes per element, dtype name) the runtime holds unquantized weights in; (0, name)
        for weights held as stored."""
        return 2, "BF16"

    def held(self, fmt: str, spec: GpuSpec) -> tuple[int, str] | None:
        """(bytes per element, dtype) a layer of `fmt` is converted to when it loads (held
        at N x K of that size, no transient buffer per call), or None: held as stored."""
        return None

    def emulated_words(self, fmt: str, spec: GpuSpec) -> str:
        """What the summary says of emulated layers of `fmt`."""
        held = self.held(fmt, spec)
        if held is not None:
            return f"dequantized to {held[1]} when loaded, no quantized matmul"
        return "dequantized every step, slower than BF16"

    def extra(self, spec: GpuSpec) -> dict[str, object]:
        """Runtime-specific keys of the entry (ComfyUI: `dynamic_vram`)."""
        return {}

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        """What a reader of the entry should know besides the per-layer modes."""
        return []


class Plan:
    """What the GPU entries of one checkpoint share: its quantized layers (prefix, format,
    layer, signature), their stored bytes, and the unquantized tensors' element count.

    A decision depends only on the layer's format, tensors (suffix, dtype, shape) and marker
    fields, its *signature*: a DiT repeats a few signatures hundreds of times, so each is
    decided once per GPU (`groups`, by signature number: [format, the first layer's prefix,
    that layer, how many layers, logical (N, K) or None, stored bytes of one layer]; `rows`:
    (prefix, signature number) per quantized layer, in checkpoint order)."""

    __slots__ = (
        "float_bytes",
        "float_elements",
        "groups",
        "other_bytes",
        "quantized_bytes",
        "rows",
    )

    def __init__(self, ck: Checkpoint) -> None:
        self.rows: list[tuple[str, int]] = []
        self.groups: list[list[Any]] = []
        numbers: dict[Any, int] = {}
        quantized = float_elements = float_bytes = other = 0
        for name, t in ck.tensors.items():
            if name.endswith(MARKER):
                continue  # read at load, never a weight
            width = FLOAT_BYTES.get(t[1])
            if width:
                float_elements += (t[4] - t[3]) // width
                float_bytes += t[4] - t[3]
            else:
                other += t[4] - t[3]
        for prefix, layer in ck.layers.items():
            fmt = layer.format
            marker = layer.marker
            if marker is None or not isinstance(fmt, str) or layer.weight is None:
                continue
            ts = layer.tensors
            sig = (fmt, repr(marker.fields), tuple(ts), tuple(map(_DTYPE_SHAPE, ts.values())))
            gid = numbers.get(sig)
            if gid is None:
                gid = numbers[sig] = len(self.groups)
                stored = sum(
                    t[4] - t[3] for suffix, t in ts.items() if suffix not in ("bias", "comfy_quant")
                )
                self.groups.append([fmt, prefix, layer, 0, None, stored])
            self.groups[gid][3] += 1
            self.rows.append((prefix, gid))
            for suffix, t in ts.items():  # held as stored (a bias: in the compute dtype)
                if suffix in ("bias", "comfy_quant"):
                    continue
                quantized += t[4] - t[3]
                width = FLOAT_BYTES.get(t[1])
                if width:
                    float_elements -= (t[4] - t[3]) // width
                    float_bytes -= t[4] - t[3]
                else:
                    other -= t[4] - t[3]
        self.quantized_bytes, self.float_elements, self.other_bytes = (
            quantized,
            float_elements,
            other,
        )
        self.float_bytes = float_bytes
        for group in self.groups:  # the logical (N, K), or None
            spec = FORMATS.get(group[0])
            d = derive_dims(spec, group[2]) if spec is not None else None
            group[4] = (d.N, d.K) if d is not None else None


def decide(plan: Plan, rules: GpuRules, spec: GpuSpec) -> list[Decision]:
    """The decision of each layer signature of `plan` on `spec` (by signature number)."""
    by_format: dict[str, Decision] = {}
    special = rules.layer_formats(spec)
    keys = rules.marker_keys
    out: list[Decision] = []
    for fmt, _, layer, _, dims, _ in plan.groups:
        base = by_format.get(fmt)
        if base is None:
            base = by_format[fmt] = rules.format_decision(fmt, spec)
        own = None
        marker = layer.marker
        if fmt in special or (
            keys and marker is not None and any(k in marker.fields for k in keys)
        ):
            own = rules.layer_decision(layer, fmt, dims, base, spec)
        out.append(own or base)
    return out


def counts(plan: Plan, decisions: list[Decision]) -> dict[str, int]:
    """Layers per mode (every mode named, zeros included)."""
    out = dict.fromkeys(MODES, 0)
    for group, (mode, _) in zip(plan.groups, decisions, strict=True):
        out[mode] += group[3]
    return out


def with_refusals(
    plan: Plan, decisions: list[Decision], refused: dict[str, Decision]
) -> tuple[list[list[Any]], list[Decision], list[tuple[str, int]]]:
    """(groups, decisions, rows) of `plan` with the layers of `refused` (prefix -> decision)
    taken out of their signature groups into groups of their own."""
    if not refused:
        return plan.groups, decisions, plan.rows
    groups, extra, rows = _split(plan, refused)
    return groups, [*decisions, *extra], rows


#: the last `_split` (plan, refused, result): a target's GPUs share it, asked in a row
_LAST_SPLIT: list[Any] = [None, None, None]


def _split(
    plan: Plan, refused: dict[str, Decision]
) -> tuple[list[list[Any]], list[Decision], list[tuple[str, int]]]:
    """`plan`'s groups and rows with the refused layers in groups of their own, and those
    groups' decisions (they do not depend on the device: computed once per target)."""
    if _LAST_SPLIT[0] is plan and _LAST_SPLIT[1] is refused:
        return _LAST_SPLIT[2]  # type: ignore[no-any-return]
    groups = [list(g) for g in plan.groups]
    extra: list[Decision] = []
    own: dict[Decision, dict[int, int]] = {}  # a refused group per (decision, signature)
    rows = []
    for prefix, gid in plan.rows:
        d = refused.get(prefix)
        if d is not None:
            by_sig = own.setdefault(d, {})
            new = by_sig.get(gid)
            if new is None:
                new = by_sig[gid] = len(groups)
                groups.append([*groups[gid][:3], 0, *groups[gid][4:]])
                extra.append(d)
            groups[gid][3] -= 1
            groups[new][3] += 1
            gid = new
        rows.append((prefix, gid))
    _LAST_SPLIT[:] = [plan, refused, (groups, extra, rows)]
    return groups, extra, rows
