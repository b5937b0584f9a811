"""QC3xx/QC6xx rules that depend on the whole file and one runtime's loader: format support,
format mixes, sglang's config constructors, legacy files, sglang's INT8 embedding rule."""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect, Fix, Safety
from quantcheck.formats.table import FORMATS, ROTATION_GROUPS
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.layers.kinds import any_layer_has, is_embedding_name, kinds_of
from quantcheck.rules.sglang import release_rules
from quantcheck.rules.sglang.configs import (
    check_config_constructor,
    resolve_comfy_checkpoint_quantization,
)
from quantcheck.rules.sglang.header_rules import HeaderPathChecks
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes import registry

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

FAILS, DEGRADED, NONE = Effect.FAILS, Effect.DEGRADED, Effect.NONE


def _sglang_view(layer: Layer) -> dict[str, Any]:
    """The marker as sglang's constructors see it after the inspector (INT8 flags derived)."""
    fields = dict(layer.marker.fields) if layer.marker else {}
    if fields.get("format") == "int8_tensorwise":
        scale = layer.tensors.get("weight_scale")
        key = "_is_tensorwise_scalar" if scale is not None and scale.shape == () else "_is_rowwise"
        fields[key] = True
    return fields


def sglang_config_class(ck: Checkpoint) -> tuple[str | None, list[str], str | None]:
    """(config class sglang picks, its format list, the resolver's error text if it refuses),
    the formats read once per layer kind."""
    # the resolver reads only each marker's format (`str(marker.get("format"))`), which
    # `_sglang_view` leaves alone: one marker per distinct format gives it the same answer
    markers: dict[str, dict[str, Any]] = {}
    for fmt in (k.format for k in kinds_of(ck).kinds if k.marked):
        key = str(fmt)
        if key not in markers:
            markers[key] = {"format": fmt}
    formats = sorted(markers)
    try:
        return resolve_comfy_checkpoint_quantization(markers), formats, None
    except NotImplementedError as exc:
        return None, formats, str(exc)


def check_file_runtime(
    ck: Checkpoint, formats: list[str], refusal: str | None
) -> Iterator[Diagnostic]:
    """Whole-file findings: legacy scaled_fp8, quant_format=mxfp8, format mixes."""
    yield from _legacy_scaled_fp8(ck)
    yield from _quant_format(ck)
    if refusal is None:
        return
    known = all(f in FORMATS for f in formats)
    if known and len(formats) > 1:
        yield Diagnostic(
            R.QC602,
            f'sglang cannot load this mix of formats ({", ".join(formats)}): "{refusal}"',
            file=_first_file(ck),
            effects=_eff(FAILS, NONE),
            data={"formats": formats},
        )


def check_layer_runtime(layer: Layer, config_class: str | None) -> Iterator[Diagnostic]:
    """One marked layer: sglang format support, sglang's INT8 embedding rule, its constructor."""
    if layer.marker is None or layer.weight is None:
        return
    fmt = layer.marker.format
    file = layer.marker.sources[-1].file
    spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
    if spec is not None and spec.sglang == "unsupported" and not spec.third_party:
        yield Diagnostic(
            R.QC601,
            f"sglang 0.5.23 has no {spec.name} support: its resolver refuses the checkpoint",
            file=file,
            layer=layer.prefix,
            effects=_eff(FAILS, NONE),
            fix=Fix(
                "requantize the layer to float8_e4m3fn (changes numbers)"
                if spec.name == "float8_e5m2"
                else "dequantize the layer to BF16: sglang then loads it unquantized (changes "
                "numbers, a bigger file)",
                Safety.UNSAFE,
                "requantize",
            ),
        )
    if (
        fmt == "int8_tensorwise"
        and not layer.marker.get("convrot")
        and layer.weight.dtype == "I8"
        and not is_embedding_name(layer)
    ):
        yield Diagnostic(
            R.QC316,
            "int8_tensorwise marker without convrot on a linear layer: sglang "
            "treats it as an embedding marker and builds this linear unquantized",
            file=file,
            layer=layer.prefix,
            effects=_eff(DEGRADED, NONE),
            fix=Fix(
                "requantize with ConvRot (convrot: true, convrot_groupsize "
                f"{'/'.join(map(str, ROTATION_GROUPS))}) for sglang",
                Safety.UNSAFE,
                "requantize",
            ),
        )
    if config_class is None:
        return
    try:
        check_config_constructor(config_class, {layer.prefix: _sglang_view(layer)})
    except (ValueError, TypeError, OverflowError) as exc:
        msg = str(exc)
        if isinstance(exc, TypeError | OverflowError) or msg.startswith("invalid literal"):
            return  # a size key int() cannot read: QC219/QC220 report it
        if "must set convrot=true" in msg or "convrot_groupsize" in msg or "linear_dtype" in msg:
            return  # QC218/QC219/QC221/QC225 report these
        code = R.QC318 if msg.startswith("Rotated NVFP4") else R.QC603
        yield Diagnostic(
            code,
            f'sglang\'s {config_class} refuses this layer: "{msg}"',
            file=file,
            layer=layer.prefix,
            effects=_eff(FAILS, NONE),
            data={"config_class": config_class},
        )


class SglangChecks:
    """sglang's own rules for one checkpoint (the `checks` hook of its runtime record)."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck
        self.config_class, self.formats, self.refusal = sglang_config_class(ck)
        self.header = HeaderPathChecks(ck)

    def file_findings(self) -> Iterator[Diagnostic]:
        yield from check_file_runtime(self.ck, self.formats, self.refusal)
        yield from release_rules.file_findings(self.ck)
        yield from self.header.file_findings()

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        yield from check_layer_runtime(layer, self.config_class)
        if layer.marker is not None and layer.weight is not None:
            yield from release_rules.layer_findings(layer, _sglang_view(layer), self.config_class)
        yield from self.header.layer_findings(layer)

    def finish(self, diags: list[Diagnostic]) -> list[Diagnostic]:
        """Every rule's findings, once all have run: when sglang's header path takes the file
        (QC616), the marker path's findings stop concerning sglang."""
        return self.header.finish(diags, _release_codes())


def _release_codes() -> set[str]:
    """The codes sglang's release data gives per-release effects."""
    from quantcheck.runtimes import get_runtime

    hit = _RELEASE_CODES.get("sglang")
    if hit is None:
        hit = _RELEASE_CODES["sglang"] = {
            c for rel in get_runtime("sglang").releases for c in rel.effects
        }
    return hit


#: `_release_codes` (the release data changes only when a runtime is (un)registered)
_RELEASE_CODES: dict[str, set[str]] = registry.runtime_cache()


#: Formats sglang 0.5.23 cannot load at all.
SGLANG_NEVER = {
    "float8_e5m2": "sglang has no float8_e5m2 support",
    "awq_w4a16": "sglang has no awq_w4a16 support",
}


def sglang_quantize_refusal(fmt: str, options: dict[str, Any], n: int, k: int) -> str | None:
    """Why sglang cannot load `fmt` with `options` (n = k = 0), or an [n, k] layer of it."""
    if not n:
        if fmt in SGLANG_NEVER:
            return SGLANG_NEVER[fmt]
        o = {x.name: options.get(x.name, x.default) for x in FORMATS[fmt].options}
        if fmt == "asym_w4a8_int8" and int(o["bits"]) == 6:
            return "sglang reads W4A8 only as 4-bit"
        if fmt == "int8_tensorwise" and not o["convrot"]:
            return "sglang builds INT8 linears without ConvRot unquantized (use --convrot)"
        return None
    if fmt == "nvfp4" and (n % 128 or k % 64):
        return (
            f"sglang loads NVFP4 only unpadded (N % 128 == 0 and K % 64 == 0); "
            f"this layer is [{n}, {k}]"
        )
    if fmt == "mxfp8" and (n % 128 or k % 128):
        return (
            f"sglang loads MXFP8 only unpadded (N % 128 == 0 and K % 128 == 0); "
            f"this layer is [{n}, {k}]"
        )
    return None


def _first_file(ck: Checkpoint) -> str | None:
    return ck.shards[0].name if ck.shards else None


def _legacy_scaled_fp8(ck: Checkpoint) -> Iterator[Diagnostic]:
    if not _has_scaled_fp8(ck):
        return
    keys = [n for n in ck.tensors if n == "scaled_fp8" or n.endswith(".scaled_fp8")]
    if not keys or any(s.header.metadata.get("_quantization_metadata") for s in ck.shards):
        return
    n = sum(1 for la in ck.layers.values() if la.has("scale_weight"))
    yield Diagnostic(
        R.QC315,
        f"legacy ComfyUI 'scaled_fp8' checkpoint ({n} layers with scale_weight, no "
        "comfy_quant markers): ComfyUI converts it on load, sglang refuses it",
        file=ck.tensors[keys[0]].file,
        tensor=keys[0],
        effects=_eff(FAILS, NONE),
        fix=Fix(
            "convert to per-layer markers (scale_weight -> weight_scale, float8_e4m3fn markers)",
            Safety.SAFE,
            "convert-scaled-fp8",
        ),
    )


def _has_scaled_fp8(ck: Checkpoint) -> bool:
    """Whether a tensor is named `scaled_fp8` or `<prefix>.scaled_fp8`: `ck.layers` groups
    every such name with a non-empty prefix under that prefix (`scaled_fp8` is a layer
    suffix); the names grouped into no layer (`ck.loose`) are matched by name."""
    return any_layer_has(ck, "scaled_fp8") or any(
        n == "scaled_fp8" or n.endswith(".scaled_fp8") for n in ck.loose
    )


def _quant_format(ck: Checkpoint) -> Iterator[Diagnostic]:
    """`quant_format: mxfp8` makes sglang treat every F8/I8/U8 weight as MXFP8."""
    values = {v.lower() for v in ck.quant_formats.values()}
    if values != {"mxfp8"}:
        if "mxfp8" in values:
            yield Diagnostic(
                R.QC604,
                f"shards disagree on __metadata__.quant_format ({sorted(values)}); "
                "sglang then ignores it and needs explicit markers",
                file=_first_file(ck),
                effects=_eff(DEGRADED, NONE),
            )
        return
    for la in ck.layers.values():
        w = la.weight
        if w is None or w.dtype not in ("F8_E4M3", "I8", "U8"):
            continue
        scale = la.tensors.get("weight_scale")
        fmt = la.marker.format if la.marker else "mxfp8"
        shaped = (
            w.dtype == "F8_E4M3"
            and len(w.shape) == 2
            and w.shape[1] % 32 == 0
            and scale is not None
            and scale.dtype == "U8"
            and scale.shape == (w.shape[0], w.shape[1] // 32)
        )
        if fmt != "mxfp8" or not shaped:
            yield Diagnostic(
                R.QC604,
                f"__metadata__.quant_format is mxfp8, so sglang requires every "
                f"F8/I8/U8 weight to be MXFP8 [N, K] with a U8 [N, K/32] scale; this "
                f"{fmt} layer is not",
                file=w.file,
                tensor=w.name,
                layer=la.prefix,
                effects=_eff(FAILS, NONE),
            )
