"""`check --deep`: read scale tensors (and, with `read_weights`, whole weights) and check values.

Scale tensors are small (a few MB for a 20 GB checkpoint); they are fetched with one batched
`read_many` per shard, so a remote deep check costs one more request per file. numpy and
ml_dtypes load here, never on the plain check path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from quantcheck.diagnostics import Diagnostic, Effect, Fix, Safety, Severity
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS, Dims, FormatSpec
from quantcheck.rules import codes as R
from quantcheck.runtimes import effects as _eff

if TYPE_CHECKING:
    import numpy as np

    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer

DEGRADED, NONE = Effect.DEGRADED, Effect.NONE
MAX_SCALE_BYTES = 64 * 2**20  # a scale tensor larger than this is not a scale; skip it
MAX_WEIGHT_BYTES = 4 * 2**30
#: Scales that multiply every element of their scope: zero or negative is never meant.
STRICT = {"weight_scale", "weight_scale_2", "input_scale", "weight_s_channel"}
#: Block scales where zero marks an all-zero block (NVFP4 FP8 block scales, W4A8 s_rel).
BLOCK = {"nvfp4": {"weight_scale"}, "mxfp8": {"weight_scale"}, "asym_w4a8_int8": {"weight_s_rel"}}
#: Tensors whose values may take any sign.
ANY_SIGN = {"weight_zeros", "weight_correction", "weight_codebook", "pre_quant_scale"}


def deep_check(ck: Checkpoint, read_weights: bool = False) -> list[Diagnostic]:
    """Value checks for every layer with a known format."""
    from quantcheck.numeric.arrays import from_bytes
    from quantcheck.rules.numeric.gate import numeric_refusal

    plans: list[tuple[Layer, FormatSpec, Dims]] = []
    wanted: dict[str, list[Any]] = {}
    skipped: list[Diagnostic] = []
    for layer in ck.layers.values():
        fmt = layer.format
        spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
        if spec is None or spec.third_party or layer.weight is None:
            continue
        if numeric_refusal(layer):
            continue  # the rules report why; its values cannot be read as its marker says
        dims = derive_dims(spec, layer)
        if dims is None:
            continue
        plans.append((layer, spec, dims))
        for suffix, t in layer.tensors.items():
            if suffix in ("comfy_quant", "bias") or (suffix == "weight" and not read_weights):
                continue
            limit = MAX_WEIGHT_BYTES if suffix == "weight" else MAX_SCALE_BYTES
            if t.nbytes > limit or t.end > ck.shard_of(t).header.file_size:
                continue
            wanted.setdefault(t.file, []).append(t)
    arrays: dict[str, np.ndarray] = {}
    for shard in ck.shards:
        ts = wanted.get(shard.name, [])
        datas = shard.source.read_many([(t.begin, t.nbytes) for t in ts]) if ts else []
        for t, raw in zip(ts, datas, strict=True):
            if len(raw) == t.nbytes:
                arrays[t.name] = from_bytes(t.dtype, t.shape, raw)
    out = skipped
    import numpy as np

    with np.errstate(all="ignore"):  # NaN/Inf values are findings, not warnings
        for layer, spec, dims in plans:
            got = {s: arrays[t.name] for s, t in layer.tensors.items() if t.name in arrays}
            out.extend(_layer_values(layer, spec, dims, got))
    return out


def _layer_values(
    layer: Layer, spec: FormatSpec, dims: Dims, got: dict[str, np.ndarray]
) -> Iterator[Diagnostic]:
    import numpy as np

    file = layer.weight.file if layer.weight else None
    where: dict[str, Any] = {"file": file, "layer": layer.prefix}
    for suffix, arr in got.items():
        if suffix == "weight":
            continue
        name = f"{layer.prefix}.{suffix}"
        if spec.name == "mxfp8" and suffix == "weight_scale":
            raw = arr.view(np.uint8)
            n255 = int(np.count_nonzero(raw == 255))
            if n255:
                yield Diagnostic(
                    R.QC404,
                    f"{n255} of {raw.size} E8M0 block scales are byte 255 "
                    "(NaN): those blocks dequantize to NaN",
                    tensor=name,
                    **where,
                )
            continue
        vals = arr.astype(np.float64)
        bad = int(np.count_nonzero(~np.isfinite(vals)))
        if bad:
            code = R.QC409 if suffix == "weight_codebook" else R.QC401
            yield Diagnostic(
                code,
                f"{bad} of {vals.size} values of {suffix} are NaN or Inf: the layer computes NaN",
                tensor=name,
                **where,
            )
            continue
        if suffix == "weight_codebook":
            if vals.size > 1 and np.any(np.diff(vals.ravel()) < 0):
                yield Diagnostic(
                    R.QC409,
                    "weight_codebook is not sorted ascending; W4A8 quantizers assume sorted levels",
                    tensor=name,
                    severity=Severity.WARNING,
                    effects=_eff(NONE, NONE),
                    **where,
                )
            continue
        if suffix in ANY_SIGN:
            continue
        neg = int(np.count_nonzero(vals < 0))
        if neg:
            yield Diagnostic(
                R.QC402,
                f"{neg} of {vals.size} values of {suffix} are negative; "
                "scales multiply, so the signs of those weights flip",
                tensor=name,
                **where,
            )
        zero = int(np.count_nonzero(vals == 0))
        if zero and suffix in STRICT and suffix not in BLOCK.get(spec.name, ()):
            whole = zero == vals.size
            yield Diagnostic(
                R.QC403,
                f"{'every' if whole else f'{zero} of {vals.size}'} value"
                f"{'' if zero == 1 and not whole else 's'} of {suffix} "
                f"{'is' if zero == 1 and not whole else 'are'} zero: "
                f"{'the whole layer' if whole else 'those rows/blocks'} compute zero",
                tensor=name,
                severity=None if whole else Severity.INFO,
                effects=None if whole else _eff(NONE, NONE),
                **where,
            )
    if spec.pad and "weight_scale" in got:
        yield from _swizzle_padding(layer, spec, dims, got["weight_scale"], where)
    if "weight" in got:
        yield from _codes(layer, spec, got["weight"], where)


def _swizzle_padding(
    layer: Layer, spec: FormatSpec, dims: Dims, arr: np.ndarray, where: dict[str, Any]
) -> Iterator[Diagnostic]:
    """Padding of a swizzled block-scale matrix is zero; the bytes can show a wrong layout."""
    import numpy as np

    from quantcheck.numeric.swizzle import swizzled_shape, unswizzle

    rows, cols = dims.weight_shape
    block = spec.pad  # the scale block along K is the padding unit
    k = cols * 2 if spec.packing == "e2m1_hi" else cols
    r, c = rows, -(-k // block)
    pr, pc = swizzled_shape(r, c)
    raw = arr.view(np.uint8).reshape(-1)
    if raw.size != pr * pc or (pr, pc) == (r, c):
        return  # a shape rule reports the size; without padding the bytes cannot tell
    mask = np.ones((pr, pc), bool)
    mask[:r, :c] = False
    swz_pad = int(np.count_nonzero(unswizzle(raw, pr, pc)[mask]))
    lin_pad = int(np.count_nonzero(raw.reshape(pr, pc)[mask]))
    name = f"{layer.prefix}.weight_scale"
    if swz_pad and not lin_pad:
        yield Diagnostic(
            R.QC406,
            f"weight_scale looks stored row-major, not in the 128x4 swizzled layout: "
            f"read swizzled, {swz_pad} padding entries are non-zero; read row-major "
            "all padding is zero. Runtimes unswizzle it and get scrambled scales",
            tensor=name,
            **where,
        )
    elif swz_pad:
        yield Diagnostic(
            R.QC405,
            f"{swz_pad} padding entries of the swizzled weight_scale are non-zero "
            f"(logical [{r}, {c}] in a [{pr}, {pc}] tile layout); writers zero them",
            tensor=name,
            **where,
        )


def _codes(
    layer: Layer, spec: FormatSpec, w: np.ndarray, where: dict[str, Any]
) -> Iterator[Diagnostic]:
    """Weight codes the format never writes, and all-zero layers (needs --read-weights)."""
    import numpy as np

    raw = w.view(np.uint8)
    name = f"{layer.prefix}.weight"
    if not np.any(raw):
        yield Diagnostic(
            R.QC408,
            "every byte of the weight is zero: the layer computes zero",
            tensor=name,
            **where,
        )
        return
    if spec.name in ("float8_e4m3fn", "mxfp8"):
        nan = int(np.count_nonzero((raw & 0x7F) == 0x7F))
        what = "E4M3 NaN codes (0x7F/0xFF)"
    elif spec.name == "float8_e5m2":
        nan = int(np.count_nonzero((raw & 0x7C) == 0x7C))
        what = "E5M2 Inf/NaN codes"
    elif spec.name == "convrot_w4a4":
        nan = int(np.count_nonzero((raw & 0x0F) == 0x08) + np.count_nonzero((raw >> 4) == 0x08))
        what = "int4 codes -8 (the quantizer writes -7..7)"
    else:
        return
    if nan:
        yield Diagnostic(
            R.QC407,
            f"{nan} weight codes are {what}",
            tensor=name,
            fix=Fix("requantize the layer from its original weights", Safety.DISPLAY),
            **where,
        )
