"""QC3xx: each marked layer's tensors against the FORMATS table (presence, dtype, shape, sizes).

Driven by the table: the rules ask the format spec which companions exist, which dtypes and
shapes each runtime accepts, and which constraints hold; nothing here branches on a format name
except the few facts that are about one format only (6-bit W4A8, padded block layouts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect, Fix, Safety, json_pointer
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS, Companion, Dims, FormatSpec
from quantcheck.io.dtypes import HIGH_PRECISION
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.runtimes import effects as _eff

FAILS, DEGRADED, NONE = Effect.FAILS, Effect.DEGRADED, Effect.NONE
UNMARKED_QUANTIZED = {"F8_E4M3", "F8_E5M2", "I8", "U8"}
#: sglang notes these weight dtypes as "needs a marker" (sglang-messages.md §1 A.4).
SGLANG_NOTED = {"F8_E4M3", "I8", "U8"}
#: Lossless casts a safe fix may do on scale tensors.
WIDENS_TO_F32 = {"F16", "BF16"}
#: Table constraints ComfyUI survives: comfy-kitchen falls back to its eager kernel, which
#: computes the layer correctly (comfyui-loader-facts.md, convrot_w4a4).
COMFYUI_EAGER_FALLBACK = frozenset({"cuda-k-multiple"})


def _sglang_checks(spec: FormatSpec) -> bool:
    """Whether sglang's load applies its rules to this format (validated or built)."""
    return spec.sglang in ("validated", "unchecked")


def check_layer(layer: Layer, legacy: bool, mxfp8_meta: bool) -> Iterator[Diagnostic]:
    """One layer: a marked layer against its format, or an unmarked quantized weight."""
    w = layer.weight
    if layer.marker is None:
        if w is not None and w.dtype in UNMARKED_QUANTIZED and not legacy:
            yield from _unmarked(layer, mxfp8_meta)
        return
    fmt = layer.marker.format
    spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
    if spec is None or spec.third_party or w is None:
        return  # unknown formats and orphan markers are QC2xx findings
    yield from _check_marked(layer, spec)


def _unmarked(layer: Layer, mxfp8_meta: bool) -> Iterator[Diagnostic]:
    w = layer.weight
    assert w is not None
    noted = w.dtype in SGLANG_NOTED and not mxfp8_meta  # quant_format=mxfp8: QC604's domain
    if mxfp8_meta and w.dtype in SGLANG_NOTED:
        eff = _eff(NONE, DEGRADED)
        hint = (
            "sglang takes it as MXFP8 from __metadata__.quant_format, but ComfyUI reads "
            "only markers and loads the codes without their block scales"
        )
    elif w.dtype.startswith("F8") and "weight_scale" not in layer.tensors:
        eff = _eff(FAILS if noted else NONE, NONE)
        hint = "a plain FP8 cast (ComfyUI loads it as-is; sglang needs a marker)"
    elif (packed := _packed_format(layer)) is not None:
        eff = _eff(FAILS if noted else NONE, FAILS)
        hint = (
            f"packed {packed} storage without a marker (ComfyUI loads the codes unmarked as a "
            f"{list(w.shape)} weight, narrower than the layer's K, and the first forward "
            "raises a shape error)"
        )
    else:
        eff = _eff(FAILS if noted else NONE, DEGRADED)
        hint = "quantized storage without a marker (ComfyUI loads the raw codes as weights)"
    fix, why = _marker_fix(layer)
    yield Diagnostic(
        R.QC314,
        f"weight is {w.dtype} {list(w.shape)} but the layer has no comfy_quant marker: {hint}{why}",
        file=w.file,
        tensor=w.name,
        layer=layer.prefix,
        effects=eff,
        fix=fix,
    )


def _packed_format(layer: Layer) -> str | None:
    """The packed format (several codes a byte) an unmarked layer's tensors show, or None when
    they show none or a same-width one. Told by the companions: what `infer_marker` names
    (NVFP4, AWQ), or W4A8's group scales (its 4- or 6-bit codes are always packed)."""
    from quantcheck.rules.markers.infer import infer_marker

    fields, _ = infer_marker(layer)
    spec = FORMATS.get(fields["format"]) if fields else None
    if spec is not None:
        return spec.name if spec.packing != "none" else None
    if "weight_s_rel" in layer.tensors:
        return "asym_w4a8_int8"
    return None


def _marker_fix(layer: Layer) -> tuple[Fix | None, str]:
    """A safe add-marker fix where the tensors name one format; else no fix, and why not."""
    from quantcheck.rules.markers.infer import infer_marker

    fields, why = infer_marker(layer)
    if "comfy_quant" in layer.tensors:
        fields, why = None, "its marker tensor could not be read (see the marker finding)"
    if fields is None:
        return None, f"; no marker can be added automatically: {why}"
    return Fix(
        f"add the marker {json.dumps(fields)} (the tensors imply it)",
        Safety.SAFE,
        "add-marker",
        (("format", fields["format"]),),
    ), ""


def _check_marked(layer: Layer, spec: FormatSpec) -> Iterator[Diagnostic]:
    """Every independent problem of a marked layer, the worst deciding the verdict: the
    weight's dtype and rank, then its companions. A missing required companion is reported
    whatever the weight is (ComfyUI raises "Missing MXFP8 block scales" for an I8 weight too,
    comfy/ops.py @0271a469 ~L1214); companion dtypes too, except beside a 16/32-bit weight
    (the layer was left unquantized: its scales are stale, QC304's fix drops the marker);
    shapes and sizes only where the weight is a 2-D tensor of the format's storage dtype,
    which they are derived from."""
    w = layer.weight
    assert w is not None
    sg = _sglang_checks(spec)
    found = list(_weight(layer, spec, sg))
    yield from found
    dims = derive_dims(spec, layer) if not found else None
    yield from _companions(layer, spec, dims, sg, bool(found), w.dtype in HIGH_PRECISION)
    yield from _extras(layer, spec)
    if dims is not None:
        yield from _sizes(layer, spec, dims, sg)


def _weight(layer: Layer, spec: FormatSpec, sg: bool) -> Iterator[Diagnostic]:
    """The weight itself: 16/32-bit (QC304), another storage dtype (QC303), not 2-D (QC306);
    at most one, the first that applies."""
    w = layer.weight
    assert w is not None
    marker_file = layer.marker.sources[-1].file if layer.marker else w.file
    if w.dtype in HIGH_PRECISION:
        yield Diagnostic(
            R.QC304,
            f"marker says {spec.name} but the weight is {w.dtype} {list(w.shape)}: the "
            "layer was left unquantized",
            file=marker_file,
            tensor=w.name,
            layer=layer.prefix,
            effects=_eff(
                FAILS
                if spec.sglang == "validated" and spec.name != "float8_e4m3fn"
                else DEGRADED
                if sg
                else NONE,
                DEGRADED,
            ),
            fix=Fix(
                "remove the stale marker and the scales left beside it (keeps the 16-bit "
                "weights), or quantize the layer with --unsafe-fixes",
                Safety.SAFE,
                "unmark-unquantized",
            ),
        )
    elif w.dtype not in spec.weight_dtypes:
        want = "/".join(sorted(spec.weight_dtypes))
        yield Diagnostic(
            R.QC303,
            f"weight is {w.dtype}; {spec.name} stores {want}",
            file=w.file,
            tensor=w.name,
            layer=layer.prefix,
            pointer=json_pointer(w.name, "dtype"),
            effects=_eff(FAILS if spec.sglang == "validated" else NONE, DEGRADED),
            fix=Fix(
                "the marker names the wrong format, or the weight was re-cast; correct "
                "the marker or re-export",
                Safety.DISPLAY,
            ),
        )
    elif len(w.shape) != 2:
        yield Diagnostic(
            R.QC306,
            f"weight has shape {list(w.shape)}; {spec.name} layers are 2-D [N, K]",
            file=w.file,
            tensor=w.name,
            layer=layer.prefix,
            pointer=json_pointer(w.name, "shape"),
            effects=_eff(
                FAILS if sg else NONE,
                NONE if layer.marker and layer.marker.get("num_experts") is not None else DEGRADED,
            ),
        )


def _companions(
    layer: Layer,
    spec: FormatSpec,
    dims: Dims | None,
    sg: bool,
    bad_weight: bool = False,
    unquantized: bool = False,
) -> Iterator[Diagnostic]:
    """Presence, dtype and shape of each companion. Beside a weight already reported
    (`bad_weight`), a missing companion fails sglang only for the formats its inspector
    validates: for the others (mxfp8) the inspector passes the layer (recorded case
    mxfp8_marker_no_validation) and what its weight loader does is not modelled here."""
    for c in spec.companions:
        t = layer.tensors.get(c.suffix)
        if t is None:
            sg_needs = sg if not bad_weight else spec.sglang == "validated"
            need_c, need_s = c.required_comfyui, c.required_sglang and sg_needs
            if need_c or need_s:
                yield Diagnostic(
                    R.QC301,
                    f"{spec.name} needs {layer.prefix}.{c.suffix}; it is missing",
                    file=layer.weight.file if layer.weight else None,
                    layer=layer.prefix,
                    tensor=f"{layer.prefix}.{c.suffix}",
                    effects=_eff(FAILS if need_s else NONE, FAILS if need_c else NONE),
                )
            continue
        if unquantized:
            continue  # stale companions of a layer left 16-bit: only their absence matters
        yield from _companion_dtype(layer, spec, c, t.dtype, sg, t.name, t.file)
        if dims is not None:
            yield from _companion_shape(layer, spec, c, dims, sg)
        if not c.comfyui_loads:
            yield Diagnostic(
                R.QC313,
                f"{c.suffix} is present; ComfyUI never loads it, so the layer computes without it",
                file=t.file,
                tensor=t.name,
                layer=layer.prefix,
                effects=_eff(NONE, DEGRADED),
                fix=Fix(
                    "requantize without it (symmetric mode) for ComfyUI",
                    Safety.UNSAFE,
                    "requantize-symmetric",
                ),
            )


def _companion_dtype(
    layer: Layer, spec: FormatSpec, c: Companion, dtype: str, sg: bool, name: str, file: str
) -> Iterator[Diagnostic]:
    ok_c = c.comfyui_dtypes is None or dtype in c.comfyui_dtypes or not c.comfyui_loads
    ok_s = not sg or c.sglang_dtypes is None or dtype in c.sglang_dtypes
    if ok_c and ok_s:
        return
    wanted = c.sglang_dtypes if not ok_s else c.comfyui_dtypes
    assert wanted is not None
    want = "/".join(sorted(wanted))
    who = " and ".join(x for x, bad in (("sglang", not ok_s), ("ComfyUI", not ok_c)) if bad)
    fix = _dtype_fix(dtype, wanted)
    sglang, cast = (NONE, "") if ok_s else _sglang_cast(spec, c, dtype)
    yield Diagnostic(
        R.QC305,
        f"{c.suffix} is {dtype}; {who} need{'s' if ' and ' not in who else ''} {want}{cast}",
        file=file,
        tensor=name,
        layer=layer.prefix,
        pointer=json_pointer(name, "dtype"),
        effects=_eff(sglang, NONE if ok_c else FAILS, **_cpu_loader(spec, c, dtype)),
        fix=fix,
        data={"suffix": c.suffix, "dtype": dtype, "wanted": sorted(wanted)},
    )


def _sglang_cast(spec: FormatSpec, c: Companion, dtype: str) -> tuple[Effect, str]:
    """sglang's effect of a companion dtype it does not want, with what happens. An F8_E8M0
    MXFP8 block scale loads: `fsdp_load` casts it into the U8 `weight_scale_inv` parameter
    (`full_tensor.to(dtype=target_dtype)`), so every scale becomes int(2**(e-127)), 0 for each
    byte < 127 (run in 0.5.22's wheel, tests/rules/sglang/diff/test_stages.py case
    mxfp8-e8m0-scales; the other releases stop at MXFP8 weight load anyway, QC615)."""
    if spec.name == "mxfp8" and c.suffix == "weight_scale" and dtype == "F8_E8M0":
        return DEGRADED, (
            " (sglang loads it value-cast into U8: every block scale becomes int(2**(e-127)), "
            "0 for each byte below 127)"
        )
    return FAILS, ""


def _cpu_loader(spec: FormatSpec, c: Companion, dtype: str) -> dict[str, Effect]:
    """ComfyUI's safe_open loader (`comfyui-cpu`) reads an F8_E8M0 MXFP8 block scale the
    default loader cannot (QC605 stops that one), and `_load_quantized_module` views the scale
    as float8_e8m0fnu anyway (comfy/ops.py @0271a469 ~L1213): the same bytes, the same layer
    (tests/rules/comfyui/diff, case mxfp8-scales-f8-e8m0)."""
    if spec.name == "mxfp8" and c.suffix == "weight_scale" and dtype == "F8_E8M0":
        return {"comfyui-cpu": NONE}
    return {}


def _dtype_fix(dtype: str, wanted: frozenset[str]) -> Fix | None:
    if "F32" in wanted and dtype in WIDENS_TO_F32:
        return Fix(
            f"cast {dtype} -> F32 (exact: every {dtype} value is an F32 value)",
            Safety.SAFE,
            "cast-f32",
        )
    if "F32" in wanted and dtype == "F64":
        return Fix(
            "cast F64 -> F32 (safe when every value is exactly representable; checked when fixing)",
            Safety.SAFE,
            "cast-f32",
        )
    one_byte = {"U8", "F8_E4M3", "F8_E8M0"}
    if dtype in one_byte and wanted & one_byte:
        target = sorted(wanted & one_byte)[0]
        return Fix(
            f"relabel the same bytes as {target}", Safety.SAFE, "relabel", (("dtype", target),)
        )
    return None


def _companion_shape(
    layer: Layer, spec: FormatSpec, c: Companion, dims: Dims, sg: bool
) -> Iterator[Diagnostic]:
    t = layer.tensors[c.suffix]
    shape = t.shape
    d = _stored_dims(spec, dims)
    comfy_shapes = c.shapes(d) if c.shapes and c.comfyui_loads else []
    sg_rule = c.sglang_shapes or c.shapes
    sg_shapes = sg_rule(d) if sg_rule and sg else []
    comfy_ok = not comfy_shapes or shape in comfy_shapes
    sg_ok = not sg_shapes or shape in sg_shapes
    if comfy_ok and sg_ok:
        return
    if spec.pad and c.sglang_shapes is not None and comfy_ok:
        yield Diagnostic(
            R.QC308,
            f"{c.suffix} is stored in ComfyUI's padded, swizzled layout "
            f"{list(shape)} for a weight of {list(dims.weight_shape)}; sglang loads "
            f"{spec.name} only unpadded {_sg_need(spec)} and expects "
            f"{list(sg_shapes[0])}",
            file=t.file,
            tensor=t.name,
            layer=layer.prefix,
            pointer=json_pointer(t.name, "shape"),
            effects=_eff(FAILS, NONE),
            fix=Fix(
                "dequantize this layer to BF16 for sglang (never re-lay padded data)",
                Safety.UNSAFE,
                "dequantize-layer",
            ),
        )
        return
    fix = None
    if c.suffix == "weight_scale" and spec.name == "int8_tensorwise" and shape == (dims.N,):
        fix = Fix(
            f"reshape [{dims.N}] -> [{dims.N}, 1] (same bytes)",
            Safety.SAFE,
            "reshape",
            (("shape", (dims.N, 1)),),
        )
        # ComfyUI's int8 kernel reads [N] per row: plain inference is right (no effect);
        # only its dequantize (LoRA patching, the full-precision fallback) raises.
        comfy_ok = True
        yield Diagnostic(
            R.QC319,
            f"{c.suffix} has shape [{dims.N}]: ComfyUI loads and runs the layer correctly, "
            "but its QuantizedTensor.dequantize() cannot broadcast the scale, so patching "
            "the layer with a LoRA, or ComfyUI's full-precision fallback (a device without "
            "int8 compute), fails",
            file=t.file,
            tensor=t.name,
            layer=layer.prefix,
            pointer=json_pointer(t.name, "shape"),
            effects=_eff(NONE, NONE),
            fix=fix,
        )
        if sg_ok:
            return
    expected = comfy_shapes if not comfy_ok else sg_shapes
    want = " or ".join(str(list(x)) for x in expected)
    yield Diagnostic(
        R.QC307,
        f"{c.suffix} has shape {list(shape)}; for a weight of {list(dims.weight_shape)} "
        f"{spec.name} needs {want}",
        file=t.file,
        tensor=t.name,
        layer=layer.prefix,
        pointer=json_pointer(t.name, "shape"),
        effects=_eff(
            NONE if sg_ok else FAILS,
            NONE if comfy_ok else FAILS,
            **_cpu_per_row_fp8(spec, c, shape, dims),
        ),
        fix=fix,
    )


def _cpu_per_row_fp8(
    spec: FormatSpec, c: Companion, shape: tuple[int, ...], dims: Dims
) -> dict[str, Effect]:
    """ComfyUI with --cpu (`comfyui-cpu`) runs FP8 layers dequantized (comfy/ops.py
    get_disabled_quant_formats: no fp8 compute on the CPU), and the dequantize broadcasts an
    [N, 1] weight_scale per row: the layer is right there (tests/rules/comfyui/diff, cases
    fp8-scale-per-row*). The GPU path (torch._scaled_mm) refuses it (QC307 fails `comfyui`)."""
    fp8 = spec.name in ("float8_e4m3fn", "float8_e5m2")
    if fp8 and c.suffix == "weight_scale" and shape == (dims.N, 1):
        return {"comfyui-cpu": NONE}
    return {}


def _sg_need(spec: FormatSpec) -> str:
    if spec.name == "nvfp4":
        return "(N % 128 == 0 and K % 64 == 0)"
    return "(N % 128 == 0 and K % 128 == 0)"


def _stored_dims(spec: FormatSpec, dims: Dims) -> Dims:
    """For padded layouts, shapes follow the stored (padded) weight, as both runtimes read it."""
    if not spec.pad:
        return dims
    rows, cols = dims.weight_shape
    k = cols * (2 if spec.packing == "e2m1_hi" else 1)
    return Dims(rows, k, dims.weight_shape, dims.g, dims.cg, dims.bits)


def _extras(layer: Layer, spec: FormatSpec) -> Iterator[Diagnostic]:
    known = {c.suffix for c in spec.companions} | {"weight", "bias", "comfy_quant"}
    for suffix, t in layer.tensors.items():
        if suffix not in known:
            yield Diagnostic(
                R.QC302,
                f"{suffix} is not part of {spec.name}; runtimes ignore it",
                file=t.file,
                tensor=t.name,
                layer=layer.prefix,
                fix=Fix(f"remove {t.name}", Safety.SAFE, "drop-tensor"),
            )


def _sizes(layer: Layer, spec: FormatSpec, dims: Dims, sg: bool) -> Iterator[Diagnostic]:
    w = layer.weight
    assert w is not None
    file = layer.marker.sources[-1].file if layer.marker else w.file
    if spec.name == "asym_w4a8_int8" and dims.bits == 6:
        yield Diagnostic(
            R.QC312,
            f"6-bit W4A8 layer (weight {list(w.shape)} holds {dims.K} columns of 6-bit "
            "codes); sglang always reads W4A8 as 4-bit and cannot load it",
            file=w.file,
            tensor=w.name,
            layer=layer.prefix,
            effects=_eff(FAILS, NONE),
            fix=Fix(
                "dequantize this layer, or requantize it as 4-bit, for sglang",
                Safety.UNSAFE,
                "requantize",
            ),
        )
    cols = dims.weight_shape[1]
    if spec.packing == "int4_lo" and cols * 8 != dims.K * dims.bits:
        yield Diagnostic(
            R.QC321,
            f"weight {list(w.shape)} holds {cols * 8 // dims.bits} columns of "
            f"{dims.bits}-bit codes, but weight_s_rel x group_size {dims.g} says "
            f"K={dims.K} ({dims.K * dims.bits // 8} bytes a row)",
            file=w.file,
            tensor=w.name,
            layer=layer.prefix,
            pointer=json_pointer(w.name, "shape"),
            effects=_eff(FAILS if sg else NONE, FAILS),
            data={"bits": dims.bits, "K": dims.K},
        )
        return
    for name, ok, text in spec.constraints:
        if not ok(dims):
            comfy = NONE if name in COMFYUI_EAGER_FALLBACK else FAILS
            if not sg and comfy is NONE:
                continue
            yield Diagnostic(
                R.QC311,
                f"{spec.name} needs {text}; this layer has K={dims.K}, "
                f"group_size={dims.g or '-'}, convrot_groupsize={dims.cg or '-'}",
                file=file,
                tensor=f"{layer.prefix}.comfy_quant",
                layer=layer.prefix,
                effects=_eff(FAILS if sg else NONE, comfy),
                data={"constraint": name},
            )
