"""Per target and GPU: how each quantized layer runs, the weight memory and a one-line summary
(the `targets[T].gpu[G]` entry of docs/json-schema.md). Standard library only.

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
#: call: stored small, computed slowly), `refused` (does not load or run on the device),
#: `depends` (native or dequantized by the batch of tokens; the reason says on what).
MODES = ("native", "emulated", "refused", "depends")
#: `execution[LAYER].lora_mode` when no LoRA is given (the LoRA check fills it otherwise)
NO_LORA = None
ACTIVATIONS_NOTE = (
    "weight memory only: activations depend on the resolution, frame count and batch and are "
    "not included"
)

Decision = tuple[str, str]  # (mode, reason)
#: a reason's evidence tag -> how the summary marks the formats it decides ([GUESS] first: a
#: reason with both is a guess)
EVIDENCE_TAGS = {"[GUESS": "unverified", "[READ": "read"}
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
        """(bytes per element, dtype name) the runtime holds unquantized weights in."""
        return 2, "BF16"

    def notes(self, spec: GpuSpec, formats: set[str]) -> list[str]:
        """What a reader of the entry should know besides the per-layer modes."""
        return []


class Plan:
    """What the GPU entries of one checkpoint share: its quantized layers (prefix, format,
    layer, signature), their stored bytes, and the unquantized tensors' element count.

    A decision depends only on the layer's format, tensors (suffix, dtype, shape) and marker
    fields, its *signature*: a DiT repeats a few signatures hundreds of times, so each is
    decided once per GPU (`groups`, by signature number: [format, the first layer's prefix,
    that layer, how many layers, logical (N, K) or None]; `rows`: (prefix, signature
    number) per quantized layer, in checkpoint order)."""

    __slots__ = ("float_elements", "groups", "other_bytes", "quantized_bytes", "rows")

    def __init__(self, ck: Checkpoint) -> None:
        self.rows: list[tuple[str, int]] = []
        self.groups: list[list[Any]] = []
        numbers: dict[Any, int] = {}
        quantized = float_elements = other = 0
        for name, t in ck.tensors.items():
            if name.endswith(MARKER):
                continue  # read at load, never a weight
            width = FLOAT_BYTES.get(t[1])
            if width:
                float_elements += (t[4] - t[3]) // width
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
                self.groups.append([fmt, prefix, layer, 0])
            self.groups[gid][3] += 1
            self.rows.append((prefix, gid))
            for suffix, t in ts.items():  # held as stored (a bias: in the compute dtype)
                if suffix in ("bias", "comfy_quant"):
                    continue
                quantized += t[4] - t[3]
                width = FLOAT_BYTES.get(t[1])
                if width:
                    float_elements -= (t[4] - t[3]) // width
                else:
                    other -= t[4] - t[3]
        self.quantized_bytes, self.float_elements, self.other_bytes = (
            quantized,
            float_elements,
            other,
        )
        for group in self.groups:  # the logical (N, K), or None
            spec = FORMATS.get(group[0])
            d = derive_dims(spec, group[2]) if spec is not None else None
            group.append((d.N, d.K) if d is not None else None)


def decide(plan: Plan, rules: GpuRules, spec: GpuSpec) -> list[Decision]:
    """The decision of each layer signature of `plan` on `spec` (by signature number)."""
    by_format: dict[str, Decision] = {}
    special = rules.layer_formats(spec)
    keys = rules.marker_keys
    out: list[Decision] = []
    for fmt, _, layer, _, dims in plan.groups:
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
    groups = [list(g) for g in plan.groups]
    decisions = list(decisions)
    own: dict[Decision, dict[int, int]] = {}  # a refused group per (decision, signature)
    rows = []
    for prefix, gid in plan.rows:
        d = refused.get(prefix)
        if d is not None:
            by_sig = own.setdefault(d, {})
            new = by_sig.get(gid)
            if new is None:
                new = by_sig[gid] = len(groups)
                groups.append([*groups[gid][:3], 0, groups[gid][4]])
                decisions.append(d)
            groups[gid][3] -= 1
            groups[new][3] += 1
            gid = new
        rows.append((prefix, gid))
    return groups, decisions, rows


def gpu_entry(
    plan: Plan, rules: GpuRules, spec: GpuSpec, refused: dict[str, Decision] | None = None
) -> dict[str, Any]:
    """The `targets[T].gpu[G]` entry (docs/json-schema.md); `refused`: the layers no device
    runs (`rules/gpu/refusals.py`)."""
    groups, decisions, rows = with_refusals(plan, decide(plan, rules, spec), refused or {})
    formats: dict[str, str] = {}
    per_format: dict[str, dict[str, int]] = {}
    records: dict[Decision, dict[str, Any]] = {}
    evidence: dict[str, dict[str, None]] = {"unverified": {}, "read": {}}
    size, dtype = rules.compute_dtype(spec)
    peak = 0
    for (fmt, _, _, n, dims), d in zip(groups, decisions, strict=True):
        mode = d[0]
        if d not in records:
            records[d] = {"mode": mode, "reason": d[1], "lora_mode": NO_LORA}
        if not n:
            continue  # every layer of the signature refused
        seen = formats.get(fmt)
        formats[fmt] = mode if seen in (None, mode) else "mixed"
        tally = per_format.setdefault(fmt, {})
        tally[mode] = tally.get(mode, 0) + n
        # a refusal by a finding (`QC610 fails on …`, rules/gpu/refusals.py) quotes the
        # finding's message, whose tags are about other releases: not this verdict's
        by_finding = mode == "refused" and d[1][:2] == "QC"
        tag = None if by_finding else next((t for t in EVIDENCE_TAGS if t in d[1]), None)
        if tag is not None:
            evidence[EVIDENCE_TAGS[tag]].setdefault(fmt, None)
        if mode in ("emulated", "depends") and dims is not None:
            peak = max(peak, dims[0] * dims[1] * size)
    # one shared record per decision (copy one before changing it)
    by_number = [records[d] for d in decisions]
    execution = {prefix: by_number[gid] for prefix, gid in rows}
    layers = dict.fromkeys(MODES, 0)
    for tally in per_format.values():
        for mode, n in tally.items():
            layers[mode] += n
    weight = plan.quantized_bytes + plan.float_elements * size + plan.other_bytes
    notes = [
        *rules.notes(spec, set(formats)),
        f"unquantized weights counted as {dtype} (what the runtime holds them in on this "
        "device); quantized layers at their stored size, emulated ones included",
    ]
    if peak:
        notes.append(
            f"peak_extra_bytes: the largest emulated layer dequantized to {dtype} (N x K x "
            f"{size} bytes), a transient buffer per call"
        )
    notes.append(ACTIVATIONS_NOTE)
    marked = {"unverified": list(evidence["unverified"])}
    marked["read"] = [f for f in evidence["read"] if f not in evidence["unverified"]]
    return {
        **spec.head_json(),
        "formats": formats,
        "layers": layers,
        "layers_by_format": per_format,
        "weight_bytes": weight,
        "peak_extra_bytes": peak,
        "compute_dtype": dtype,
        "summary": summary_line(rules.name, spec, per_format, weight, peak) + marks(marked),
        "evidence": marked,
        "notes": notes,
        "known_issues": [],
        "execution": execution,
    }


def marks(evidence: dict[str, list[str]]) -> str:
    """What the summary adds for verdicts that rest on a guess or on code only read:
    ` · unverified (a guess): w6a8_int8 · [READ] code read, not run: float8_e4m3fn`."""
    out = ""
    if evidence["unverified"]:
        out += f" · unverified (a guess): {', '.join(evidence['unverified'])}"
    if evidence["read"]:
        out += f" · [READ] code read, not run: {', '.join(evidence['read'])}"
    return out


def summary_line(
    runtime: str,
    spec: GpuSpec,
    per_format: dict[str, dict[str, int]],
    weight: int,
    peak: int,
) -> str:
    """`comfyui on rtx4090 (sm_89): 240 nvfp4 layers emulated — dequantized every step, slower
    than BF16; 12 layers native · weights 7.3 GiB (+64 MiB transient; activations not
    included)`."""
    parts = []
    for fmt, tally in per_format.items():
        if tally.get("emulated"):
            parts.append(
                f"{tally['emulated']} {fmt} layer{_s(tally['emulated'])} emulated — dequantized "
                "every step, slower than BF16"
            )
        if tally.get("depends"):
            n = tally["depends"]
            parts.append(f"{n} {fmt} layer{_s(n)} depend on the batch of tokens")
        if tally.get("refused"):
            parts.append(f"{tally['refused']} {fmt} layer{_s(tally['refused'])} refused")
    native = sum(t.get("native", 0) for t in per_format.values())
    total = sum(sum(t.values()) for t in per_format.values())
    if not total:
        parts.append("no quantized layers")
    elif native == total:
        parts.append(f"all {total} quantized layer{_s(total)} native")
    elif native:
        parts.append(f"{native} layer{_s(native)} native")
    else:
        parts.append("none native")
    memory = f"weights {size_text(weight)}"
    if spec.memory_gib:  # a card was named: its usual VRAM
        card = spec.memory_gib << 30
        memory += (
            f" of its {spec.memory_gib} GiB"
            if weight + peak <= card
            else (f", more than its {spec.memory_gib} GiB")
        )
    memory += f" (+{size_text(peak)} transient" if peak else " ("
    memory += "; activations not included)" if peak else "activations not included)"
    return f"{runtime} on {spec.label()}: {'; '.join(parts)} · {memory}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def size_text(n: int) -> str:
    """Bytes as `7.31 GiB`, `64.0 MiB`, `512 KiB`, `100 B`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}" if n < 100 * scale else f"{n / scale:.0f} {unit}"
    return f"{n} B"
