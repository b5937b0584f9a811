"""musubi-tuner 0.3.6 and MiniMax H3's Qwen3-VL-32B text encoder (QC762-QC765).

`load_h3_text_encoder` (kohya-ss/musubi-tuner 0.3.6 `minimax_h3/text_encoder.py`) routes a
text encoder by the set of its markers' formats (`comfy_quant_utils.detect_comfy_quant_formats`,
`classify_comfy_quant_spec`: int8_tensorwise with a truthy convrot is "convrot_int8", any other
marker its format): ConvRot INT8 alone goes to `ConvRotInt8Quantizer` (checks.py's gate, and
`apply_convrot_int8_monkey_patch` wants every such module to be a Linear); NVFP4 with
int8_tensorwise goes to `NvFp4Quantizer` (`modules/nvfp4_utils.py`: NVFP4 Linears, + AWQ
pre_quant_scale, and int8_tensorwise embeddings, `apply_nvfp4_monkey_patch`); any other set is
refused; no marker at all loads the file plainly, casting floating tensors to the model dtype.
Which modules are embeddings is runtimes/musubi.py's data [READ in transformers' Qwen3VLModel].

Standard library only (the check path imports it).
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck._record import record
from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.markers.checks import tensor_marker
from quantcheck.rules.musubi import diag as _diag
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes.musubi import NVFP4_ONLY, TEXT_ENCODER_EMBEDDINGS

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: What NvFp4Quantizer calls floating (`torch.Tensor.is_floating_point`).
FLOATING = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"})
LOADER = "musubi 0.3.6's NVFP4 text-encoder loader raises"


@record
class Route:
    """How 0.3.6 loads a MiniMax H3 text encoder: `kind` "plain" (no marker), "convrot",
    "nvfp4" or "refused"; `formats` as its router names them (sorted)."""

    kind: str
    formats: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return self.kind == "refused"


def classify(marker: dict[str, Any]) -> str:
    """`classify_comfy_quant_spec`: the router's label of one marker."""
    fmt = marker.get("format")
    if fmt == "int8_tensorwise" and marker.get("convrot"):
        return "convrot_int8"
    return str(fmt)


def route(ck: Checkpoint) -> Route:
    """The route of a file of the text encoder's family (checks.py asks only for one)."""
    found = {classify(tm) for layer in ck.layers.values() if (tm := tensor_marker(layer))}
    formats = tuple(sorted(found))
    if not found:
        return Route("plain")
    if found == {"convrot_int8"}:
        return Route("convrot", formats)
    if "nvfp4" in found and found <= {"nvfp4", "int8_tensorwise"}:
        return Route("nvfp4", formats)
    return Route("refused", formats)


def refused(ck: Checkpoint, rt: Route) -> Diagnostic:
    """QC762: the router refuses the set of formats."""
    shown = "[" + ", ".join(repr(f) for f in rt.formats) + "]"
    return Diagnostic(
        R.QC762,
        f"MiniMax H3 text encoder whose markers name {shown}: musubi 0.3.6 raises "
        f'"Unsupported ComfyUI quantization format combination in text encoder checkpoint: '
        f'{shown}" (it loads ConvRot INT8 alone, or NVFP4 with an INT8 embedding)',
        file=next(iter(ck.tensors.values())).file,
        effects=_eff(musubi=Effect.FAILS),
    )


def convrot_kind(layer: Layer) -> Iterator[Diagnostic]:
    """QC765: a ConvRot INT8 module that is not a Linear of the model."""
    if layer.prefix in TEXT_ENCODER_EMBEDDINGS:
        yield _diag(
            R.QC765,
            layer,
            f'{layer.prefix} is an embedding: musubi 0.3.6 raises "ConvRot INT8 state dict '
            'declares missing module" (it patches Linears only)',
        )


def nvfp4_layer(layer: Layer) -> Iterator[Diagnostic]:
    """A marked module of an NVFP4 text encoder (QC763-QC765)."""
    tm = tensor_marker(layer)
    if tm is None:
        return  # not decodable: the generic marker codes report it
    kind = classify(tm)
    yield _diag(
        R.QC763,
        layer,
        f"{kind} layer of an NVFP4 text encoder: musubi 725869d's ConvRot INT8 gate refuses "
        "it; 0.3.6 loads it with NvFp4Quantizer",
    )
    embedding = layer.prefix in TEXT_ENCODER_EMBEDDINGS
    if kind == "nvfp4" and embedding:
        yield _diag(
            R.QC765,
            layer,
            f'{layer.prefix} is an embedding: musubi 0.3.6 raises "NVFP4 state dict declares '
            f'{layer.prefix}, which is not an nn.Linear in the model"',
        )
    elif kind != "nvfp4" and not embedding:
        yield _diag(
            R.QC765,
            layer,
            f'int8_tensorwise on {layer.prefix}: musubi 0.3.6 raises "int8_tensorwise module '
            f'{layer.prefix} is not an nn.Embedding" (INT8 Linears must be ConvRot INT8 files)',
        )
    yield from (_nvfp4 if kind == "nvfp4" else _int8)(layer)


def nvfp4_orphans(layer: Layer) -> Iterator[Diagnostic]:
    """QC764: NVFP4-only companions of a module without a marker."""
    for suffix in NVFP4_ONLY:
        if suffix in layer.tensors:
            key = layer.tensors[suffix].name
            yield _diag(
                R.QC764,
                layer,
                f'{LOADER} "Found {key} without a matching {layer.prefix}.comfy_quant spec"',
            )


def _missing(layer: Layer, needed: tuple[str, ...]) -> Iterator[Diagnostic]:
    gone = [f"{layer.prefix}.{s}" for s in needed if s not in layer.tensors]
    if gone:
        yield _diag(
            R.QC764,
            layer,
            f'{LOADER} "Pre-quantized module {layer.prefix} is missing '
            f'tensors" ({", ".join(gone)})',
        )


def _nvfp4(layer: Layer) -> Iterator[Diagnostic]:
    t = layer.tensors
    yield from _missing(layer, ("weight", "weight_scale", "weight_scale_2"))
    w, ws, ws2 = t.get("weight"), t.get("weight_scale"), t.get("weight_scale_2")
    k = 0
    if w is not None:
        if w.dtype != "U8" or len(w.shape) != 2:
            yield _diag(
                R.QC764,
                layer,
                f'weight is {w.dtype} {list(w.shape)}: {LOADER} "NVFP4 weight {w.name} must be '
                '2D uint8 (packed)"',
            )
        elif w.shape[1] * 2 % 16:
            yield _diag(
                R.QC764,
                layer,
                f'{LOADER} "NVFP4 weight {w.name}: in_features {w.shape[1] * 2} not a multiple '
                'of 16"',
            )
        else:
            k = w.shape[1] * 2
    if ws is not None and ws.dtype != "F8_E4M3":
        yield _diag(
            R.QC764,
            layer,
            f'{LOADER} "NVFP4 block scale {ws.name} must be F8_E4M3, got {ws.dtype}"',
        )
    elif ws is not None and w is not None and k:
        want = -(-w.shape[0] // 128) * 128 * (-(-(k // 16) // 4) * 4)
        if ws.numel != want:
            yield _diag(
                R.QC764,
                layer,
                f'{LOADER} "NVFP4 module {layer.prefix}: block scale has {ws.numel} elements, '
                f'expected {want} for weight shape ({w.shape[0]}, {k})" (the swizzled '
                "128 x 4 layout)",
            )
    if ws2 is not None and (ws2.dtype != "F32" or ws2.shape != ()):
        yield _diag(
            R.QC764,
            layer,
            f'{LOADER} "NVFP4 per-tensor scale {ws2.name} must be a F32 scalar, got '
            f'{ws2.dtype} {list(ws2.shape)}"',
        )
    pqs = t.get("pre_quant_scale")
    if pqs is not None:
        if pqs.dtype not in FLOATING or len(pqs.shape) != 1:
            yield _diag(
                R.QC764,
                layer,
                f'{LOADER} "AWQ pre_quant_scale {pqs.name} must be a 1D float tensor, got '
                f'{pqs.dtype} {list(pqs.shape)}"',
            )
        elif k and pqs.shape[0] != k:
            yield _diag(
                R.QC764,
                layer,
                f'{LOADER} "NVFP4 module {layer.prefix}: pre_quant_scale has {pqs.shape[0]} '
                f'elements, expected in_features {k}"',
            )
    if "input_scale" in t:
        yield _diag(
            R.QC764,
            layer,
            f"{layer.prefix}.input_scale: NvFp4Quantizer passes it through and the model's "
            "strict load_state_dict refuses the unexpected key [READ]",
        )


def _int8(layer: Layer) -> Iterator[Diagnostic]:
    t = layer.tensors
    scale = t.get("weight_scale") or t.get("scale_weight")
    if scale is None or "weight" not in t:
        yield from _missing(layer, ("weight", "weight_scale"))
    w = t.get("weight")
    if w is not None and w.dtype != "I8":
        yield _diag(R.QC764, layer, f'{LOADER} "INT8 weight {w.name} must be int8, got {w.dtype}"')
    ws = t.get("weight_scale")
    if ws is not None and ws.dtype != "F32":
        yield _diag(
            R.QC764, layer, f'{LOADER} "INT8 per-row scale {ws.name} must be F32, got {ws.dtype}"'
        )
    for suffix in NVFP4_ONLY:
        if suffix in t:
            yield _diag(
                R.QC764,
                layer,
                f'{LOADER} "Unexpected tensor {t[suffix].name} for int8_tensorwise module '
                f'{layer.prefix}"',
            )
    if w is not None and scale is not None and tuple(scale.shape) != (*w.shape[:1], 1):
        rows = w.shape[0] if w.shape else "?"
        yield _diag(
            R.QC764,
            layer,
            f'{LOADER} "INT8 module {layer.prefix}: scale shape must be ({rows}, 1), got '
            f'{tuple(scale.shape)}"',
        )
