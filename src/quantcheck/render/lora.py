"""A LoRA check rendered: its JSON document (kind "lora", docs/json-schema.md), text, and an
HTML section (a per-block bar of the surviving change)."""

from __future__ import annotations

import html
import re

from quantcheck._record import record
from quantcheck._version import document_head
from quantcheck.io.source import base_name
from quantcheck.results import Report
from quantcheck.rules.lora.analyse import Analysis
from quantcheck.runtimes.comfyui_lora import EVIDENCE
from quantcheck.runtimes.lora_path import lora_path
from quantcheck.textsafe import clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

SCHEMA_VERSION = 2
#: runtimes whose LoRA path is modelled (their status comes from the QC83x effects)
MODELLED = ("comfyui", "comfyui-cpu")


@record
class LoraReport:
    """The analysis and the findings as a Report (verdicts per target, exit code)."""

    analysis: Analysis
    report: Report


def _round(v: Any) -> Any:
    return round(v, 6) if isinstance(v, float) else v


def summary_by_format(a: Analysis) -> dict[str, dict[str, Any]]:
    """Per base format: layers, outcomes and the mean figures of the layers that have them."""
    out: dict[str, dict[str, Any]] = {}
    for r in a.layers:
        s = out.setdefault(
            r.format, {"layers": 0, "outcomes": {}, "retention": [], "added_error": []}
        )
        s["layers"] += 1
        s["outcomes"][r.outcome] = s["outcomes"].get(r.outcome, 0) + 1
        for k in ("retention", "added_error"):
            v = (r.figures or {}).get(k)
            if isinstance(v, float) and r.problem is None:
                s[k].append(v)
    for s in out.values():
        for k in ("retention", "added_error"):
            vals = s[k]
            s[k] = _round(sum(vals) / len(vals)) if vals else None
        s["says"] = plain_words(s)
    return out


def plain_words(s: dict[str, Any]) -> str:
    """What a user will see on layers of one format, in a sentence."""
    if s["outcomes"].get("raises"):
        return "the LoRA load fails on these layers (their format cannot be re-quantized)"
    added, kept = s.get("added_error"), s.get("retention")
    if added is None:
        return "patched; no figures"
    if kept is not None and kept < 0.5:
        return f"the LoRA is mostly rounded away (retention {kept:.2f}); use an FP8/INT8 file"
    if added > 1.0:
        return (
            f"the LoRA arrives, but re-quantizing adds {added:.1f}x its size in noise; consider "
            "the FP8 or INT8 file for LoRA work"
        )
    return f"the LoRA arrives (added noise {added:.2f}x its size)"


def target_entry(rep: Report, t: str, a: Analysis | None = None) -> dict[str, Any]:
    """`targets[T]`: status and counts, the runtime's LoRA path (`lora_path`) and with `--gpu`
    the GPU entries (each patched layer's `lora_mode`) and `gpu_needs`."""
    st = rep.target_status(t)
    entry: dict[str, Any] = {"status": st["status"], "errors": st["errors"]}
    entry["degraded"] = st["degraded"]
    for key in ("gpu", "gpu_needs"):
        if key in st:
            entry[key] = st[key]
    entry["lora_path"] = lora_path_entry(t, a)
    return entry


def lora_path_entry(t: str, a: Analysis | None) -> dict[str, Any]:
    """What is modelled of target `t`'s LoRA path, and (given the analysis) its outcome and
    mean figures per format of the patched quantized layers."""
    base = t.split("@")[0]
    if base in MODELLED:
        return {
            "modelled": True,
            "read_at": "ComfyUI 783545f6 (comfy/lora.py) / 0271a469 (ops, quant_ops)",
            "verified": "[RUN]",
            "mode": "full load (with --gpu: DynamicVRAM on the fly, lora_mode)",
            "key_map": "comfyui",
            "evidence": EVIDENCE["patched"],
        }
    path = lora_path(base)
    if path is None:
        return {"modelled": False}
    out: dict[str, Any] = {
        "modelled": True,
        "read_at": path.read_at,
        "verified": path.verified,
        "mode": path.default_mode,
        "modes": path.modes,
        "keys": path.keys,
        "key_map": path.key_map,
        "evidence": path.evidence,
        "cost": path.cost,
    }
    if a is not None:
        out["formats"] = runtime_formats(a).get(base, {})
    return out


def runtime_formats(a: Analysis) -> dict[str, dict[str, dict[str, Any]]]:
    """Per other runtime and format of the patched quantized layers: layers, outcome and the
    mean figures (over the layers that have them), with their basis."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    acc: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for r in a.layers:
        for rt, e in r.runtimes.items():
            s = out.setdefault(rt, {}).setdefault(
                r.format, {"layers": 0, "outcome": e["outcome"], "basis": e.get("basis")}
            )
            s["layers"] += 1
            vals = acc.setdefault((rt, r.format), {"retention": [], "added_error": []})
            for k, v in vals.items():
                if isinstance(e.get(k), float):
                    v.append(e[k])
    for (rt, fmt), vals in acc.items():
        for k, v in vals.items():
            out[rt][fmt][k] = _round(sum(v) / len(v)) if v else None
    return out


def document(lr: LoraReport) -> dict[str, Any]:
    """The JSON document of kind "lora"."""
    a, rep = lr.analysis, lr.report
    unmatched = [dict(u, file=f.name) for f in a.files for u in f.unmatched]
    lora = {
        "tensors": sum(f.tensors for f in a.files),
        "matched_tensors": sum(f.matched_tensors for f in a.files),
        "unmatched": [k for f in a.files for k in f.not_loaded],
        "unmatched_detail": unmatched,
        "unpredicted": [dict(u, file=f.name) for f in a.files for u in f.unpredicted],
        "text_encoder_keys": sum(len(f.text_encoder) for f in a.files),
        "files": [
            {
                "path": f.path,
                "tensors": f.tensors,
                "matched_tensors": f.matched_tensors,
                "unmatched": f.not_loaded,
                "conventions": f.conventions,
                "conversion": f.conversion or None,
            }
            for f in a.files
        ],
    }
    layers = [
        {
            "target": r.target,
            "layer": r.layer,
            "format": r.format,
            "quantized": r.quantized,
            "shape": list(r.shape) if r.shape else None,
            "outcome": r.outcome,
            "on_the_fly": r.on_the_fly,
            "retention": _round((r.figures or {}).get("retention")),
            "added_error": _round((r.figures or {}).get("added_error")),
            "requant_error": _round((r.figures or {}).get("requant_error")),
            "untouched_error": _round((r.figures or {}).get("untouched_error")),
            "figures": r.basis or None,
            "patch_bytes": r.patch_bytes,
            "problem": r.problem,
            "loras": r.loras,
            "runtimes": {rt: {k: _round(v) for k, v in e.items()} for rt, e in r.runtimes.items()},
        }
        for r in a.layers
    ]
    dequant = [r for r in a.layers if r.quantized and r.on_the_fly == "dequantized" and r.shape]
    memory = {
        "patch_bytes": sum(r.patch_bytes for r in a.layers),
        "largest_dequantized_layer_bytes": max(
            (r.shape[0] * r.shape[1] * 2 for r in dequant if r.shape), default=0
        ),
    }
    return {
        **document_head("lora", SCHEMA_VERSION),
        "base": {"path": a.base, "family": a.family or None, "keymap_entries": a.keymap_entries},
        "strength": a.strength,
        "lora": lora,
        "targets": {t: target_entry(rep, t, a) for t in rep.targets},
        "layers": layers,
        "formats": summary_by_format(a),
        "memory": memory,
        "numbers": {"basis": a.numbers, "bytes_read": a.bytes_read},
        "summary": rep.summary(),
        "diagnostics": [d.to_json() for d in rep.diagnostics],
    }


def _num(v: Any, fmt: str = ".2f") -> str:
    return "-" if v is None else format(v, fmt)


def iter_text(lr: LoraReport, *, show_all: bool = False) -> Iterator[str]:
    """The text report: per LoRA file its counts and unmatched keys, per format what arrives,
    per target the verdict, then the findings (grouped as `check` groups them)."""
    from quantcheck.render.text import iter_lines

    doc = document(lr)
    a = lr.analysis
    yield f"base: {clean(a.base)} (family: {a.family or 'not recognised'}), strength {a.strength:g}"
    for f in a.files:
        conv = f.conventions
        yield (
            f"lora: {clean(f.name)}: {f.matched_tensors:,} of {f.tensors:,} tensors load "
            f"(adapters {conv.get('adapters') or {}}, naming {conv.get('namings') or {}}, "
            f"prefixes {conv.get('prefixes') or {}}, made for {conv.get('made_for') or '?'})"
        )
        shown = f.unmatched if show_all else f.unmatched[:10]
        for u in shown:
            near = f" (nearest: {clean(u['nearest'])})" if u.get("nearest") else ""
            yield f"  not loaded: {clean(u['key'])}: {u['reason']}{near}"
        if len(f.unmatched) > len(shown):
            yield f"  ... and {len(f.unmatched) - len(shown):,} more (--show-all)"
    yield ""
    yield "per format (ComfyUI full load):"
    for fmt, s in doc["formats"].items():
        yield (
            f"  {clean(fmt)}: {s['layers']:,} layer(s), {s['outcomes']}, retention "
            f"{_num(s['retention'])}, added error {_num(s['added_error'])}x: {s['says']}"
        )
    yield from _runtime_lines(doc)
    mem = doc["memory"]
    yield (
        f"patch tensors: {mem['patch_bytes']:,} bytes; largest layer run dequantized on the fly: "
        f"{mem['largest_dequantized_layer_bytes']:,} bytes (figures: {doc['numbers']['basis']})"
    )
    yield ""
    yield from iter_lines(lr.report, False, show_all=show_all)


def _runtime_lines(doc: dict[str, Any]) -> Iterator[str]:
    """Per other target runtime: its default mode, and per format what the LoRA meets."""
    lines = []
    for t, entry in doc["targets"].items():
        path = entry["lora_path"]
        if not path.get("formats"):
            continue
        parts = []
        for fmt, s in path["formats"].items():
            said = f"{s['layers']:,} {fmt} {s['outcome']}"
            kept, added = s.get("retention"), s.get("added_error")
            if s["outcome"] == "side-branch":
                said += " (all of it arrives)"
            elif s["outcome"] in ("requantized", "merged") and kept is not None:
                said += f" (retention {_num(kept)}, added error {_num(added)}x)"
            elif s["outcome"] in ("requantized", "merged"):
                said += f" ({s.get('basis') or 'no figures'})"
            parts.append(said)
        lines.append(f"  {t} ({path['mode']} mode) {path['verified']}: {'; '.join(parts)}")
    if lines:
        yield "per runtime (its default mode):"
        yield from lines


_BLOCK = re.compile(
    r"^(.*?\b(?:blocks|layers|transformer_blocks|double_blocks|single_blocks))\.(\d+)\."
)


def blocks(lr: LoraReport) -> list[tuple[str, float, int]]:
    """(block, mean surviving share, layers) per block, in model order: the surviving share of
    a layer is retention / (1 + added_error) (1: the LoRA's change arrives clean)."""
    acc: dict[str, list[float]] = {}
    for r in lr.analysis.layers:
        fig = r.figures or {}
        kept, added = fig.get("retention"), fig.get("added_error")
        if kept is None or added is None:
            continue
        m = _BLOCK.match(r.layer)
        key = f"{m.group(1)}.{m.group(2)}" if m else "other"
        acc.setdefault(key, []).append(max(0.0, float(kept)) / (1.0 + float(added)))

    def order(k: str) -> tuple[str, int]:
        head, _, idx = k.rpartition(".")
        return (head, int(idx)) if idx.isdigit() else (k, -1)

    return [(k, sum(v) / len(v), len(v)) for k, v in sorted(acc.items(), key=lambda i: order(i[0]))]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {k}" for k, n in counts.items())


def html_section(lr: LoraReport) -> str:
    """A self-contained <section id="lora">: per format the outcome on ComfyUI's full load,
    per other target runtime what its default mode does, and a bar per block of the share of
    the LoRA's change that arrives clean (the standalone page and `report --lora`)."""
    doc = document(lr)
    rows = "".join(
        f"<tr><td>{html.escape(fmt)}</td><td>{s['layers']}</td>"
        f"<td>{html.escape(_counts(s['outcomes']))}</td><td>{_num(s['retention'])}</td>"
        f"<td>{_num(s['added_error'])}</td><td>{html.escape(s['says'])}</td></tr>"
        for fmt, s in doc["formats"].items()
    )
    runtimes = "".join(
        f"<tr><td>{html.escape(t)}</td><td>{html.escape(str(e['lora_path']['mode']))} "
        f"{html.escape(e['lora_path']['verified'])}</td><td>{html.escape(fmt)}</td>"
        f"<td>{f['layers']}</td><td>{html.escape(f['outcome'])}</td>"
        f"<td>{_num(f.get('retention'))}</td><td>{_num(f.get('added_error'))}</td></tr>"
        for t, e in doc["targets"].items()
        for fmt, f in e["lora_path"].get("formats", {}).items()
    )
    if runtimes:
        runtimes = (
            '<h3>other runtimes (default mode)</h3><table class="data"><tr><th>runtime</th>'
            "<th>mode</th>"
            "<th>format</th><th>layers</th><th>outcome</th><th>retention</th>"
            f"<th>added error</th></tr>{runtimes}</table>"
        )
    bars = "".join(
        f'<div class="lora-bar"><span>{html.escape(b)} ({n})</span>'
        f'<svg width="300" height="12"><rect width="{300 * min(1.0, v):.1f}" height="12" '
        f'fill="#3a7"/></svg> {v:.2f}</div>'
        for b, v, n in blocks(lr)
    )
    lora = doc["lora"]
    names = ", ".join(html.escape(base_name(f["path"])) for f in lora["files"])
    return (
        f'<section class="lora" id="lora"><h2>LoRA <small>{names}, strength '
        f"{doc['strength']:g}</small></h2>"
        f"<p>{lora['matched_tensors']:,} of {lora['tensors']:,} LoRA tensors load; "
        f"{len(lora['unmatched']):,} not loaded.</p>"
        "<h3>ComfyUI full load, per format</h3>"
        '<table class="data"><tr><th>format</th><th>layers</th><th>outcome</th>'
        "<th>retention</th><th>added error</th><th>what you will see</th></tr>"
        f"{rows}</table>{runtimes}"
        "<h3>surviving change per block <small>(retention / (1 + added error) on ComfyUI; "
        f"1 = the LoRA's change arrives clean)</small></h3>{bars or '<p>no figures</p>'}"
        "</section>"
    )


def html_page(lr: LoraReport) -> str:
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>quantcheck lora</title>'
        "<style>body{font-family:sans-serif}td,th{padding:2px 8px}"
        ".lora-bar span{display:inline-block;width:16em}</style></head><body>"
        f"{html_section(lr)}</body></html>"
    )
