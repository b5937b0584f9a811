"""The format table as Markdown: one section per format (part of docs/rules.md)."""

from __future__ import annotations

import json

from quantcheck.formats.table import FORMATS, FormatSpec

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

PACKING = {
    "none": "one code per element",
    "e2m1_hi": "two E2M1 codes per byte, high first",
    "int4_lo": "two 4-bit codes per byte, low first (6-bit: four codes in three bytes)",
}


def _v(value: Any) -> str:
    return f"`{json.dumps(value)}`"


def _dtypes(d: frozenset[str] | None) -> str:
    return "any" if d is None else "/".join(sorted(d))


def _comfyui_support(spec: FormatSpec) -> str:
    """`yes (from v0.27)`: the ComfyUI release data says which step first loads the format."""
    from quantcheck.runtimes.comfyui_releases import FORMAT_SINCE, GUESSED, STEPS

    since = FORMAT_SINCE.get(spec.name)
    if not spec.comfyui or since is None:
        return "no"
    if since == STEPS[0][0]:
        return "yes"
    return f"yes (from {since}{' [GUESS]' if since in GUESSED else ''})"


def format_section(spec: FormatSpec) -> list[str]:
    """The Markdown section of one format."""
    support = (
        "third-party (loaded by neither runtime)"
        if spec.third_party
        else (f"ComfyUI: {_comfyui_support(spec)}; sglang: {spec.sglang}")
    )
    out = [
        f"### {spec.name}",
        "",
        f"**{spec.title}**",
        "",
        f"- **Weight:** {_dtypes(spec.weight_dtypes)}, {PACKING[spec.packing]}"
        + (f"; zero-padded to multiples of {spec.pad}" if spec.pad else ""),
        f"- **Runtimes:** {support}",
        f"- **Codec:** {f'`{spec.codec}`' if spec.codec else 'none (recognised only)'}"
        + ("; `quantize` writes it" if spec.quantizable else ""),
        "",
    ]
    if spec.note:
        out[-1:] = [f"- **Note:** {spec.note}", ""]
    if spec.companions:
        out += ["| tensor | ComfyUI dtypes | sglang dtypes | required |", "|---|---|---|---|"]
        for c in spec.companions:
            req = (
                ", ".join(
                    t
                    for t, r in (("ComfyUI", c.required_comfyui), ("sglang", c.required_sglang))
                    if r
                )
                or "no"
            )
            ignored = " (ComfyUI never reads it)" if not c.comfyui_loads else ""
            out.append(
                f"| `{c.suffix}` | {_dtypes(c.comfyui_dtypes)} | "
                f"{_dtypes(c.sglang_dtypes)} | {req}{ignored} |"
            )
        out.append("")
    out += _option_table("marker key", spec.keys) + _option_table("quantize option", spec.options)
    for _, _, text in spec.constraints:
        out.append(f"- **Requires:** {text}")
    for _, _, text in spec.quantize_constraints:
        out.append(f"- **`quantize` requires:** {text}")
    if spec.constraints or spec.quantize_constraints:
        out.append("")
    return out


def formats_markdown() -> list[str]:
    """Every format of the table, in table order."""
    out = [
        "## Formats",
        "",
        "Generated from the format table (`quantcheck.formats.table`): what each "
        "`comfy_quant` format stores, which marker keys and `quantize` options it takes, and "
        "which codec implements it.",
        "",
    ]
    for spec in FORMATS.values():
        out += format_section(spec)
    return out


def _option_table(title: str, items: Any) -> list[str]:
    """A markdown table of named options (marker keys or quantize options): default, allowed
    values and meaning; nothing when there are none."""
    if not items:
        return []
    out = [f"| {title} | default | allowed | meaning |", "|---|---|---|---|"]
    for o in items:
        allowed = ", ".join(_v(a) for a in o.allowed) if o.allowed else "any"
        out.append(f"| `{o.name}` | {_v(o.default)} | {allowed} | {o.doc} |")
    return [*out, ""]
