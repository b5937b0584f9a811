"""Human-readable `inspect` output: a table per layer, totals per format, metadata."""

from __future__ import annotations

from quantcheck.textsafe import clean

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _shape(s: list[int]) -> str:
    return "[" + ",".join(str(x) for x in s) + "]"


def render_inspect(doc: dict[str, Any], summary_only: bool = False) -> str:
    out: list[str] = []
    for f in doc["files"]:
        out.append(
            f"{clean(f['path'])}  {human_bytes(f['size'])}, {f['tensors']} tensors, header "
            f"{f['header_bytes']:,} bytes"
        )
        for k, v in f["metadata"].items():
            text = v if len(v) <= 100 else v[:97] + "..."
            out.append(f"  metadata {clean(k)} = {clean(text)}")
    if doc.get("index"):
        out.append(f"index {clean(doc['index'])}")
    family = doc.get("family") or {}
    if family.get("keys_of"):  # a family's key test matched (text: only then)
        out.append(f"family: {clean(str(family['summary']))}")
    if not summary_only:
        rows = [("LAYER", "FORMAT", "WEIGHT", "N×K", "COMPANIONS", "BYTES", "BPW")]
        for r in doc["layers"]:
            n, k = r["logical_shape"]
            nk = f"{n}×{k}" if r["logical_shape_exact"] else f"≤{n}×{k} (stored)"
            comp = " ".join(
                f"{clean(s)}:{clean(t['dtype'])}{_shape(t['shape'])}"
                for s, t in r["tensors"].items()
                if s not in ("weight",)
            )
            bpw = f"{r['bits_per_weight']:.2f}" if r["bits_per_weight"] is not None else "-"
            rows.append(
                (
                    clean(r["prefix"]),
                    clean(r["format"] or "-"),
                    f"{clean(r['weight']['dtype'])}{_shape(r['weight']['shape'])}",
                    nk,
                    comp,
                    human_bytes(r["bytes"]),
                    bpw,
                )
            )
        widths = [min(max(len(row[i]) for row in rows), 60) for i in range(4)]
        out.append("")
        for row in rows:
            head = "  ".join(row[i].ljust(widths[i]) for i in range(4))
            out.append(f"{head}  {row[5]:>9}  {row[6]:>5}  {row[4]}")
    out.append("")
    out.append("totals per format:")
    for name, t in doc["totals"].items():
        bpw = f"{t['bits_per_weight']:.2f} bits/weight" if t["bits_per_weight"] else ""
        out.append(
            f"  {clean(name):<24} {t['layers']:>6} layers  {human_bytes(t['bytes']):>10}  "
            f"{t['params']:>14,} weights  {bpw}"
        )
    if doc["other_tensors"]:
        out.append(f"  (+{len(doc['other_tensors'])} tensors outside layers)")
    return "\n".join(out)
