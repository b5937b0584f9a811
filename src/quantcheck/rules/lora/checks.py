"""The QC83x findings of a LoRA analysis (rules/lora/catalog.py). Standard library only."""

from __future__ import annotations

from quantcheck.diagnostics import Diagnostic
from quantcheck.rules import codes as R

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quantcheck.rules.lora.analyse import Analysis, LayerResult

#: QC834's limits: more noise than the LoRA itself, or less than half of it arriving.
MAX_ADDED_ERROR = 1.0
MIN_RETENTION = 0.5


def findings(a: Analysis) -> list[Diagnostic]:
    """Every QC83x finding of `a`: per LoRA file (keys), then per patched layer."""
    out: list[Diagnostic] = []
    for f in a.files:
        for u in f.unmatched:
            near = f"; nearest base name: {u['nearest']}" if u.get("nearest") else ""
            out.append(
                Diagnostic(
                    R.QC830,
                    f"lora key not loaded ({u['reason']}): {u['detail']}{near}",
                    file=f.name,
                    tensor=u["key"],
                    data={"reason": u["reason"], "nearest": u.get("nearest")},
                )
            )
        if f.text_encoder:
            out.append(
                Diagnostic(
                    R.QC831,
                    f"{len(f.text_encoder):,} text-encoder key(s), e.g. {f.text_encoder[0]}: "
                    "applied to the text encoder only",
                    file=f.name,
                    data={"count": len(f.text_encoder)},
                )
            )
        if f.unpredicted:
            out.append(
                Diagnostic(
                    R.QC836,
                    f"{len(f.unpredicted):,} key(s) left to a ComfyUI mapping quantcheck does "
                    f"not model ({f.conversion or 'family ' + (a.family or '?')}), e.g. "
                    f"{f.unpredicted[0]['key']}",
                    file=f.name,
                    data={"count": len(f.unpredicted)},
                )
            )
        diffusion = f.tensors - len(f.text_encoder) - len(f.unpredicted)
        if diffusion > 0 and f.matched_tensors == 0:
            out.append(
                Diagnostic(
                    R.QC837,
                    f"none of the LoRA's {diffusion:,} diffusion-model keys loads onto this "
                    f"{a.family or 'model'} base",
                    file=f.name,
                )
            )
    base = _base_name(a.base)
    for r in a.layers:
        for d in _layer_findings(r):
            d.file = base
            out.append(d)
    for d in _runtime_findings(a):
        d.file = base
        out.append(d)
    return out


def _runtime_findings(a: Analysis) -> list[Diagnostic]:
    """QC838 per layer a runtime's own merge spoils, QC839 once per runtime that keeps the
    LoRA as a side branch (ComfyUI-style re-quantizations are QC834's)."""
    from quantcheck.rules.levels import Effect
    from quantcheck.runtimes.lora_path import lora_path

    out: list[Diagnostic] = []
    side: dict[str, list[str]] = {}
    for r in a.layers:
        for rt, e in r.runtimes.items():
            path = lora_path(rt)
            if path is None:
                continue
            if e["outcome"] == "side-branch":
                side.setdefault(rt, []).append(r.format)
                continue
            if path.requant == "comfyui" or r.problem is not None:
                continue
            added, kept = e.get("added_error"), e.get("retention")
            if (added is not None and added > MAX_ADDED_ERROR) or (
                kept is not None and kept < MIN_RETENTION
            ):
                out.append(
                    Diagnostic(
                        R.QC838,
                        f"{rt} ({path.default_mode}, {e['outcome']}, {e.get('basis', '')}): "
                        f"the {r.format} layer keeps {_fmt(kept, '.2f')} of the LoRA and adds "
                        f"{_fmt(added, '.2g')}x its size in noise {path.verified}",
                        layer=r.layer,
                        effects={rt: Effect.DEGRADED},
                        data={"runtime": rt, "retention": kept, "added_error": added},
                    )
                )
    for rt, fmts in side.items():
        path = lora_path(rt)
        assert path is not None
        counts = ", ".join(f"{fmts.count(f)} {f}" for f in dict.fromkeys(fmts))
        out.append(
            Diagnostic(
                R.QC839,
                f"{rt} ({path.default_mode} mode) keeps the LoRA as a side branch on "
                f"{len(fmts):,} quantized layer(s) ({counts}): all of it arrives; {path.cost} "
                f"{path.verified}",
                data={"runtime": rt, "layers": len(fmts)},
            )
        )
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "?" if v is None else format(v, spec)


def _base_name(path: str) -> str:
    from quantcheck.io.source import base_name

    return base_name(path)


def _layer_findings(r: LayerResult) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if r.problem is not None:
        out.append(
            Diagnostic(
                R.QC832,
                f"{r.problem}; ComfyUI logs 'ERROR lora {r.target}' and leaves the weight "
                "unchanged"
                + (f", then re-quantizes the {r.format} layer anyway" if r.quantized else ""),
                layer=r.layer,
                tensor=r.layer + ".weight",
            )
        )
    if r.outcome == "raises":
        out.append(
            Diagnostic(
                R.QC833,
                f"{r.format} layer: requantize_from_float raises NotImplementedError, so "
                "ComfyUI's full-load LoRA patch fails as a whole (with DynamicVRAM, the "
                "NVIDIA default, the layer runs dequantized instead)",
                layer=r.layer,
                tensor=r.layer + ".weight",
            )
        )
    covered = sum(size for _, size in r.slices)
    if r.quantized and r.slices and r.shape is not None and covered < r.shape[0]:
        spans = ", ".join(f"{a}-{a + n - 1}" for a, n in r.slices)
        moved = (r.figures or {}).get("untouched_error")
        if moved is None:
            then = "they move only if the recalculated scales change (figures not measured)"
        elif moved == 0:
            then = "they come back unchanged (the recalculated scales leave them on the grid)"
        else:
            then = f"they move by {moved:.2g}x the LoRA's size (the scales were recalculated)"
        out.append(
            Diagnostic(
                R.QC840,
                f"{r.format} layer of {r.shape[0]:,} rows: the LoRA patches rows {spans} (slices "
                "of the fused weight, e.g. diffusers to_q/to_k/to_v of a fused qkv); ComfyUI "
                f"re-quantizes all {r.shape[0]:,} rows; for the {r.shape[0] - covered:,} it "
                f"does not patch, {then}",
                layer=r.layer,
                data={"rows": r.shape[0], "patched_rows": covered, "untouched_error": moved},
            )
        )
    if r.quantized and r.outcome == "patched" and r.on_the_fly == "dequantized":
        out.append(
            Diagnostic(
                R.QC835,
                f"{r.format} layer: applied on the fly, the LoRA makes it run dequantized",
                layer=r.layer,
            )
        )
    fig = r.figures or {}
    added, kept = fig.get("added_error"), fig.get("retention")
    if (
        r.problem is None
        and r.quantized
        and (
            (added is not None and added > MAX_ADDED_ERROR)
            or (kept is not None and kept < MIN_RETENTION)
        )
    ):
        kept_text = f"{kept:.2f}" if kept is not None else "not estimated"
        out.append(
            Diagnostic(
                R.QC834,
                f"{r.format} layer ({r.basis}): re-quantizing the patched weight adds "
                f"{added:.2g}x the LoRA's own change in noise; retention {kept_text}"
                if added is not None
                else f"{r.format} layer ({r.basis}): retention {kept_text}",
                layer=r.layer,
                data={"added_error": added, "retention": kept, "basis": r.basis},
            )
        )
    return out
