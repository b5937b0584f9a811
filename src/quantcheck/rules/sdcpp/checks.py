"""stable-diffusion.cpp's own rules (the `checks` hook of its runtime record).

What is modelled: leejet/stable-diffusion.cpp master at bcc7e295 (PR #1857, "support INT8
ConvRot safetensors"), whose safetensors reader (`src/model_io/safetensors_io.cpp`,
`read_safetensors_file` / `read_comfy_quant_config`) reads the `<layer>.comfy_quant` TENSOR
markers only (the header `_quantization_metadata` is not read), implements `int8_tensorwise`
(+ConvRot) and loads FP8 weights by dtype, without their scales until PR #1913. The upstream
lines each rule follows are cited in the rule's evidence (catalog.py).

Standard library only (the check path imports it).
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.markers.checks import marker_place, tensor_marker
from quantcheck.runtimes import effects as _eff

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

TARGET = "sdcpp"
FAILS, DEGRADED = Effect.FAILS, Effect.DEGRADED
#: `safetensors_dtype_to_ggml_type`: every other dtype stops the load ("unsupported dtype").
#: U8 is listed because the reader skips U8 tensors before the lookup (never an error).
READABLE_DTYPES = frozenset(
    {"F16", "BF16", "F32", "F64", "F8_E4M3", "F8_E5M2", "I32", "I64", "I8", "U8"}
)
#: Formats whose weights sd.cpp cannot load: packed I8 widths that do not match the model's
#: Linear [N, K] ("wrong shape in model metadata"), or U8 weights the reader skips.
PACKED_FORMATS = frozenset({"nvfp4", "convrot_w4a4", "asym_w4a8_int8", "w6a8_int8", "awq_w4a16"})
FP8_DTYPES = frozenset({"F8_E4M3", "F8_E5M2"})
#: Rules for what sd.cpp loads without an error but computes wrongly (the rest stop the load).
SILENT = frozenset({R.QC741.code, R.QC742.code, R.QC749.code})
#: The names sd.cpp (after PR #1913) and ComfyUI give an FP8 weight's scale.
FP8_SCALES = ("weight_scale", "scale_weight")


def is_power_of_four(value: int) -> bool:
    """sd.cpp's test: divide by 4 while the rest is > 1 and divisible; 1 is accepted."""
    while value > 1 and value % 4 == 0:
        value //= 4
    return value == 1


def scale_fits_linear(shape: tuple[int, ...], n: int) -> bool:
    """Whether a weight_scale of `shape` matches the Linear's 1-D [N] F32 parameter after
    sd.cpp's reversal to ggml order and its [N, 1] -> [N] reshape."""
    ne = list(reversed(shape)) or [1]
    if len(ne) == 2 and ne[0] == 1:
        ne = [ne[1], 1]
    ne += [1] * (4 - len(ne))
    return ne == [n, 1, 1, 1]


class SdcppChecks:
    """stable-diffusion.cpp's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        return _unreadable_dtypes(self.ck)

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        w = layer.weight
        if w is None:
            return
        tm = tensor_marker(layer)
        fmt = tm.get("format") if tm is not None else None
        if w.dtype == "U8":
            yield _diag(
                R.QC740,
                layer,
                f"weight is U8 ({layer.format or 'unmarked'}): sd.cpp's safetensors reader "
                f"skips every U8 tensor, so the load stops with \"tensor '{w.name}' not in "
                'model metadata"',
            )
        elif isinstance(fmt, str) and fmt in PACKED_FORMATS:
            yield _diag(
                R.QC740,
                layer,
                f"format {fmt}: sd.cpp implements int8_tensorwise only; it loads the packed "
                f"I8 weight {list(w.shape)} as a plain tensor, which does not match the "
                'model\'s Linear [N, K] ("has wrong shape in model metadata")',
            )
        elif fmt == "int8_tensorwise":
            yield from _int8(layer, tm or {})
        elif w.dtype == "I8":
            where = marker_place(layer)
            yield _diag(
                R.QC743,
                layer,
                f"I8 weight {where}: sd.cpp reads only .comfy_quant tensors, so it loads the "
                "raw int8 codes as an unscaled I8 weight; likely aborts at the first matmul "
                "(ggml has no I8 matrix product) or computes garbage",
            )
        elif w.dtype in FP8_DTYPES:
            yield from _fp8(layer)


def _int8(layer: Layer, tm: dict[str, Any]) -> Iterator[Diagnostic]:
    w = layer.weight
    assert w is not None
    if w.dtype != "I8":
        yield _diag(
            R.QC748,
            layer,
            f"int8_tensorwise weight is {w.dtype}: sd.cpp wants I8 and stops with "
            f"\"ComfyUI int8_tensorwise weight is not I8: '{w.name}'\"",
        )
        return
    params = tm.get("params")
    nested = params if isinstance(params, dict) else {}
    if "convrot" not in tm and nested.get("convrot") is True:
        yield _diag(
            R.QC749,
            layer,
            "convrot is set only inside params: sd.cpp reads convrot at the marker's top level, "
            "so it runs this rotated layer unrotated; wrong output, sd.cpp does NOT raise",
        )
    if tm.get("convrot") is True and len(w.shape) == 2:
        yield from _convrot_group(layer, tm, w.shape[1], nested)
    scale = layer.tensors.get("weight_scale")
    if scale is None:
        yield _diag(
            R.QC745,
            layer,
            "int8_tensorwise layer has no weight_scale: sd.cpp's Linear asserts one "
            "(GGML_ASSERT(has_weight_scale)) and the process aborts",
        )
    elif len(w.shape) == 2 and not scale_fits_linear(scale.shape, w.shape[0]):
        yield _diag(
            R.QC744,
            layer,
            f"weight_scale is {list(scale.shape)}: sd.cpp wants one scale per output row "
            f"([{w.shape[0]}, 1] or [{w.shape[0]}]); a scalar or other shape stops the load "
            f"(\"tensor '{scale.name}' has wrong shape in model metadata\")",
        )


def _convrot_group(
    layer: Layer, tm: dict[str, Any], k: int, nested: dict[str, Any]
) -> Iterator[Diagnostic]:
    g = tm.get("convrot_groupsize", 0)
    # nlohmann::json converts numbers and booleans to int (true -> 1); anything else throws
    if not isinstance(g, (int, float)):
        what = "a string" if isinstance(g, str) else type(g).__name__
        yield _diag(
            R.QC746,
            layer,
            f"convrot_groupsize is {what} ({g!r}): sd.cpp reads it as an integer and stops with "
            '"parsing ComfyUI quantization metadata tensor failed"',
        )
        return
    g = int(g)
    if is_power_of_four(g) and g > 0 and k % g == 0:
        return
    if "convrot_groupsize" not in tm:
        inner = " (only in params, which it does not read)" if "convrot_groupsize" in nested else ""
        why = (
            f"rotated marker has no top-level convrot_groupsize{inner}: sd.cpp takes 0 "
            "(ComfyUI would default to 256)"
        )
    elif not is_power_of_four(g):
        why = f"convrot_groupsize {g} is not a power of four"
    else:
        why = f"convrot_groupsize {g} does not divide K={k}"
    w = layer.weight
    assert w is not None
    yield _diag(
        R.QC746,
        layer,
        f"{why}: sd.cpp stops with \"invalid ComfyUI convrot group size for tensor '{w.name}'\"",
    )


def _fp8(layer: Layer) -> Iterator[Diagnostic]:
    scales = [layer.tensors[s] for s in FP8_SCALES if s in layer.tensors]
    if not scales:
        return
    s = scales[0]
    if layer.format == "mxfp8" or s.dtype in ("U8", "F8_E8M0"):
        yield _diag(
            R.QC742,
            layer,
            f"MXFP8 layer: sd.cpp skips the U8 block scales ({s.name}) and converts the E4M3 "
            "codes to F16 unscaled; likely wrong output, sd.cpp does NOT raise",
        )
        return
    yield _diag(
        R.QC741,
        layer,
        f"FP8 weight with {s.name.rpartition('.')[2]}: sd.cpp before PR #1913 converts the "
        "codes to F16 and never applies the scale (pure white images, sd.cpp does NOT raise); "
        "from PR #1913 on the scale is applied",
    )


def _unreadable_dtypes(ck: Checkpoint) -> Iterator[Diagnostic]:
    by_dtype: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    for t in ck.tensors.values():
        if t.dtype not in READABLE_DTYPES:
            by_dtype.setdefault(t.dtype, []).append(t.name)
            files.setdefault(t.dtype, t.file)
    for dtype, names in by_dtype.items():
        n = len(names)
        yield Diagnostic(
            R.QC747,
            f"{n} tensor{'s are' if n != 1 else ' is'} {dtype}: sd.cpp's safetensors reader has "
            f"no such dtype and stops with \"unsupported dtype '{dtype}' (tensor "
            f"'{names[0]}')\"",
            file=files[dtype],
            tensor=names[0],
            effects=_eff(**{TARGET: FAILS}),
        )


def _diag(rule: Any, layer: Layer, message: str) -> Diagnostic:
    w = layer.weight
    effect = DEGRADED if rule.code in SILENT else FAILS
    return Diagnostic(
        rule,
        message,
        file=w.file if w is not None else None,
        layer=layer.prefix,
        effects=_eff(**{TARGET: effect}),
    )
