"""QC611-QC615: what some sglang releases require or get wrong (consumers.md §2.1). Emitted
whatever the target; `runtimes/sglang_releases.py` says which releases they break, and the
messages name those releases from that data (`span`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.layers.kinds import kinds_of
from quantcheck.rules.levels import Safety
from quantcheck.runtimes import get_runtime, registry, release_span
from quantcheck.runtimes.sglang_releases import HEADER_PATH_FORMATS

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HEADER_PATH_FORMATS", "file_findings", "layer_findings", "span"]


def span(code: str) -> tuple[str, str]:
    """(the sglang releases the release data says rule `code` breaks or degrades, in few
    words: `0.5.19`, `0.5.19–0.5.21`; the first newer release it does not, "" if none)."""
    hit = _SPANS.get(code)
    if hit is None:
        if len(_SPANS) >= 256:
            _SPANS.clear()
        hit = _SPANS[code] = _span(code)
    return hit


#: `span` by code (the release data changes only when a runtime is (un)registered)
_SPANS: dict[str, tuple[str, str]] = registry.runtime_cache()


def _span(code: str) -> tuple[str, str]:
    rt = get_runtime("sglang")
    names = rt.release_names()
    hit = rt.affected(code)
    if not hit:
        return "", ""
    after = names.index(hit[-1]) + 1
    return release_span(names, set(hit)).lstrip("≤"), names[after] if after < len(names) else ""


def _header_declared(ck: Checkpoint) -> set[str]:
    """Layer keys a header `_quantization_metadata` with `format_version` and `layers` declares
    (what 0.5.18's header path reads)."""
    out: set[str] = set()
    for shard in ck.shards:
        raw = shard.header.metadata.get("_quantization_metadata")
        try:
            doc = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            continue
        if (
            isinstance(doc, dict)
            and "format_version" in doc
            and isinstance(doc.get("layers"), dict)
        ):
            out.update(doc["layers"])
    return out


def file_findings(ck: Checkpoint) -> Iterator[Diagnostic]:
    """QC611 (0.5.18 reads no markers), QC612 (0.5.19 identical sources), QC615 (MXFP8).
    Decided per layer kind (`layer_kinds`: the layers of a kind share the marker's fields
    and number of sources), in checkpoint order where a layer is named."""
    first = ck.shards[0].name if ck.shards else None
    mxfp8_meta = {v.lower() for v in ck.quant_formats.values()} == {"mxfp8"}
    grouping = kinds_of(ck)
    kinds = [k for k in grouping.kinds if k.marked]
    if kinds or mxfp8_meta:
        formats = sorted({str(k.format) for k in kinds})
        other = [f for f in formats if f not in HEADER_PATH_FORMATS]
        undeclared = 0  # marked layers the header does not declare, and the first of them
        first_undeclared = ""
        if not (mxfp8_meta or other):
            declared = _header_declared(ck)
            # NVFP4 layers are also found from their tensors (U8 weight + F8 block scale), so
            # only the other layers need the header declaration
            if declared:
                names = [
                    la.prefix
                    for la, k in grouping.order
                    if k.marked and k.format != "nvfp4" and la.prefix not in declared
                ]
                undeclared = len(names)
                first_undeclared = names[0] if names else ""
            else:  # every such layer: the first such kind's first is the file's first
                for k in kinds:
                    if k.format != "nvfp4":
                        if not undeclared:
                            first_undeclared = k.first.prefix
                        undeclared += len(k.layers)
        if mxfp8_meta or other or undeclared:
            why = (
                f"its {', '.join(other or ['mxfp8'])} layers"
                if mxfp8_meta or other
                else f"{undeclared} layers marked only by .comfy_quant tensors "
                f"(e.g. {first_undeclared})"
            )
            old, new = span(R.QC611.code)
            yield Diagnostic(
                R.QC611,
                f"sglang {old} has no marker inspector and does not recognise "
                f"{why} as quantized (from {new} on it does)",
                file=first,
                data={"formats": formats},
            )
    several = {id(k) for k in kinds if k.first.marker and len(k.first.marker.sources) > 1}
    for la in [la for la, k in grouping.order if id(k) in several] if several else ():
        m = la.marker
        assert m is not None
        objs = [src.fields for src in m.sources]
        if any(o != objs[0] for o in objs[1:]):
            where = " vs ".join(f"{src.origin} {src.key}" for src in m.sources)
            old, new = span(R.QC612.code)
            yield Diagnostic(
                R.QC612,
                f"marker sources differ ({where}): sglang {old} requires them "
                f'identical ("Conflicting Comfy quantization markers"); {new}+ '
                "merges them",
                file=m.sources[-1].file,
                layer=la.prefix,
                fix=_single_marker_fix(m.sources, la.prefix),
            )
    mx = sum(len(k.layers) for k in kinds if k.format == "mxfp8")
    if mx or mxfp8_meta:
        yield Diagnostic(
            R.QC615,
            f"MXFP8 layers ({mx or 'quant_format'}): sglang {span(R.QC615.code)[0]} stop at "
            "weight load: MXFP8Config's SRT Fp8LinearMethod takes the DiT linears' "
            "weight_loader_v2, which calls load_column_parallel_weight without tp_rank "
            "(TypeError: missing 1 required positional argument: 'tp_rank'); 0.5.22 loads "
            "them through the v1 weight_loader",
            file=first,
        )


def layer_findings(
    layer: Layer, view: dict[str, Any], config_class: str | None
) -> Iterator[Diagnostic]:
    """QC613 and QC614: the 0.5.19 constructors' marker rules for one marked layer (`view`:
    the marker with sglang's derived INT8 flags; `config_class`: the 0.5.23 name)."""
    fmt = view.get("format")
    file = layer.marker.sources[-1].file if layer.marker else None
    if fmt == "int8_tensorwise" and not view.get("convrot"):
        why = None
        if config_class in ("ConvRotInt8Config", "KitchenW4A4Config"):
            why = "KitchenInt8Config requires convrot=true on every INT8 marker"
        elif config_class == "KitchenW4A8Config" and not view.get("_is_tensorwise_scalar"):
            why = "KitchenW4A8Config takes only scalar-scale INT8 companions"
        elif config_class == "ComfyNvfp4Config" and not view.get("_is_rowwise"):
            why = "ComfyNvfp4Config takes only row-wise INT8 companions"
        if why is not None:
            rotated = "convrot_groupsize" in view and config_class != "KitchenW4A8Config"
            old, new = span(R.QC613.code)
            yield Diagnostic(
                R.QC613,
                f"sglang {old} refuses this int8_tensorwise marker without convrot: "
                f"{why} ({new}+ exempts INT8 embeddings)",
                file=file,
                layer=layer.prefix,
                fix=Fix(
                    "set convrot: true (the marker names convrot_groupsize, so the "
                    "weights are rotated)",
                    Safety.UNSAFE,
                    "set-key",
                    (("key", "convrot"), ("value", True)),
                )
                if rotated
                else None,
            )
    if (
        config_class == "ComfyNvfp4Config"
        and fmt == "nvfp4"
        and view.get("full_precision_matrix_mult") is not True
    ):
        yield Diagnostic(
            R.QC614,
            f"sglang {span(R.QC614.code)[0]} requires full_precision_matrix_mult: true on "
            'every NVFP4 layer ("Comfy NVFP4 layer ... must request full_precision_matrix_mult")',
            file=file,
            layer=layer.prefix,
            fix=Fix(
                "set full_precision_matrix_mult: true",
                Safety.SAFE,
                "set-key",
                (("key", "full_precision_matrix_mult"), ("value", True)),
            ),
        )


def _single_marker_fix(sources: list[Any], prefix: str) -> Fix:
    """Header entry -> merged tensor marker (the entry dropped), else one rewritten marker."""
    if any(src.origin == "header" for src in sources):
        return Fix(
            "write the merged marker as the layer's tensor marker and drop its header entry",
            Safety.SAFE,
            "header-to-tensor-markers",
            (("prefix", prefix),),
        )
    return Fix("write the merged marker as the layer's only marker", Safety.SAFE, "rewrite-marker")
