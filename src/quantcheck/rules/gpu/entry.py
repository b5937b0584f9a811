"""The `targets[T].gpu[G]` entry (docs/json-schema.md) of one checkpoint, target and GPU: the
decisions of `rules/gpu/plan.py` per layer and format, the weight memory, the notes and the
one-line summary. Standard library only."""

from __future__ import annotations

from quantcheck.rules.gpu.plan import MODES, decide, with_refusals

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.rules.gpu.plan import Decision, GpuRules, Plan

#: `execution[LAYER].lora_mode` when no LoRA is given (the LoRA check fills it otherwise)
NO_LORA = None
ACTIVATIONS_NOTE = (
    "weight memory only: activations depend on the resolution, frame count and batch and are "
    "not included"
)
#: a reason's evidence tag -> how the summary marks the formats it decides ([GUESS] first: a
#: reason with both is a guess)
EVIDENCE_TAGS = {"[GUESS": "unverified", "[READ": "read"}


def gpu_entry(
    plan: Plan,
    rules: GpuRules,
    spec: GpuSpec,
    refused: dict[str, Decision] | None = None,
    taken: dict[str, dict[str, str]] | None = None,
    key: str = "",
) -> dict[str, Any]:
    """The `targets[T].gpu[G]` entry; `refused`: the layers no device runs, `taken`: the
    failing findings the rules decide per device ({layer: {code: message}}), both from
    `rules/gpu/refusals.py`; `key`: the target key the summary names (default the runtime)."""
    groups, decisions, rows = with_refusals(plan, decide(plan, rules, spec), refused or {})
    formats: dict[str, str] = {}
    per_format: dict[str, dict[str, int]] = {}
    records: dict[Decision, dict[str, Any]] = {}
    evidence: dict[str, dict[str, None]] = {"unverified": {}, "read": {}}
    size, dtype = rules.compute_dtype(spec)
    peak = 0
    quantized = 0  # the quantized layers' bytes as the runtime holds them
    held_formats: dict[str, str] = {}
    for (fmt, _, _, n, dims, stored), d in zip(groups, decisions, strict=True):
        mode = d[0]
        if d not in records:
            records[d] = {"mode": mode, "reason": d[1], "lora_mode": NO_LORA}
        if not n:
            continue  # every layer of the signature refused
        held = rules.held(fmt, spec) if mode != "refused" else None
        if held is not None and dims is not None:
            quantized += n * dims[0] * dims[1] * held[0]
            held_formats[fmt] = held[1]
        else:
            quantized += n * stored
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
        if mode in ("emulated", "depends") and dims is not None and held is None:
            peak = max(peak, dims[0] * dims[1] * (size or 2))
    # one shared record per decision (copy one before changing it)
    by_number = [records[d] for d in decisions]
    execution = {prefix: by_number[gid] for prefix, gid in rows}
    layers = dict.fromkeys(MODES, 0)
    for tally in per_format.values():
        for mode, n in tally.items():
            layers[mode] += n
    floats = plan.float_elements * size if size else plan.float_bytes
    weight = quantized + floats + plan.other_bytes
    not_blocking = _not_blocking(taken or {}, execution)
    notes = [*rules.notes(spec, set(formats)), *_ignored(rules, spec)]
    notes.append(
        (
            f"unquantized weights counted as {dtype} (what the runtime holds them in on this "
            "device)"
            if size
            else f"unquantized weights counted {dtype}"
        )
        + "; quantized layers at their stored size, emulated ones included"
        + "".join(
            f"; {fmt} layers at N x K in {held}, the dtype they are converted to when loaded"
            for fmt, held in held_formats.items()
        )
    )
    if peak:
        notes.append(
            f"peak_extra_bytes: the largest emulated layer dequantized (N x K x "
            f"{size or 2} bytes), a transient buffer per call"
        )
    notes += [f["note"] for f in not_blocking]
    notes.append(ACTIVATIONS_NOTE)
    marked = {"unverified": list(evidence["unverified"])}
    marked["read"] = [f for f in evidence["read"] if f not in evidence["unverified"]]
    words = {
        fmt: rules.emulated_words(fmt, spec) for fmt, t in per_format.items() if "emulated" in t
    }
    summary = summary_line(key or rules.name, spec, per_format, weight, peak, words)
    summary += marks(marked)
    summary += "".join(f" · {f['summary']}" for f in not_blocking)
    return {
        **spec.head_json(),
        **rules.extra(spec),
        "formats": formats,
        "layers": layers,
        "layers_by_format": per_format,
        "weight_bytes": weight,
        "peak_extra_bytes": peak,
        "compute_dtype": dtype,
        "summary": summary,
        "evidence": marked,
        "notes": notes,
        "known_issues": [],
        "not_blocking_here": [{k: v for k, v in f.items() if k != "note"} for f in not_blocking],
        "execution": execution,
    }


def _ignored(rules: GpuRules, spec: GpuSpec) -> list[str]:
    """A note per given launch switch the runtime does not read."""
    from quantcheck.gpus.spec import switch_text

    return [
        f"{switch_text(f)}: not a {rules.name} switch, ignored"
        for f in sorted(spec.flags - rules.flags)
    ]


def _not_blocking(
    taken: dict[str, dict[str, str]], execution: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The failing findings the rules decide per device whose layers run on this one (the
    target's status still counts them, for the devices where they stop the load):
    `[{"code", "layers", "modes", "summary", "note"}]`."""
    by_code: dict[str, dict[str, int]] = {}
    for prefix, found in taken.items():
        mode = execution.get(prefix, {}).get("mode")
        if mode is None or mode == "refused":
            continue
        for code in found:
            tally = by_code.setdefault(code, {})
            tally[mode] = tally.get(mode, 0) + 1
    out = []
    for code, tally in by_code.items():
        n = sum(tally.values())
        runs = ", ".join(f"{k} {m}" for m, k in tally.items())
        out.append(
            {
                "code": code,
                "layers": n,
                "modes": tally,
                "summary": f"{code} does not stop its {n} layer{_s(n)} on this device ({runs})",
                "note": f"{code} fails the target on the devices where it stops the load; on "
                f"this one its layer{_s(n)} run ({runs}), as `execution` says",
            }
        )
    return out


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
    words: dict[str, str] | None = None,
) -> str:
    """`comfyui on rtx4090 (sm_89): 240 nvfp4 layers emulated — dequantized every step, slower
    than BF16; 12 layers native · weights 7.3 GiB (+64 MiB transient; activations not
    included)`. `words`: what to say of a format's emulated layers (default: the above)."""
    parts = []
    for fmt, tally in per_format.items():
        if tally.get("emulated"):
            how = (words or {}).get(fmt, "dequantized every step, slower than BF16")
            parts.append(f"{tally['emulated']} {fmt} layer{_s(tally['emulated'])} emulated — {how}")
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
    return f"{runtime} on {spec.label()}{spec.switches()}: {'; '.join(parts)} · {memory}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def size_text(n: int) -> str:
    """Bytes as `7.31 GiB`, `64.0 MiB`, `512 KiB`, `100 B`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}" if n < 100 * scale else f"{n / scale:.0f} {unit}"
    return f"{n} B"
