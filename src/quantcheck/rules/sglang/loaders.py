"""sglang's verdict per loader: which of its loaders reads the file decides what happens.

sglang reads a ComfyUI checkpoint through one of four loaders (read in the PyPI wheels
0.5.18-0.5.23, `sglang/multimodal_gen/runtime/loader/`):

* `transformer-weights-path`: `sglang generate --transformer-weights-path FILE` for any DiT but
  MiniMax-H3, `transformer_load_utils._resolve_quant_config` ->
  `_resolve_weight_override_quantization` (0.5.19+): the header path
  (`get_quant_config_from_safetensors_metadata`) and the header declarations only, then the
  NVFP4 inference (`build_nvfp4_config_from_safetensors_list`). The comfy_quant markers are
  never read: a file with quantized tensors (`.weight_scale`, `.input_scale`, `.comfy_quant`,
  or an F8_E4M3 / I8 / U8 weight) or a header declaration, and no config from either, raises
  "Replacement checkpoint contains quantized tensors but no supported native quantization
  declaration". 0.5.18: the header path, then the NVFP4 inference, else unquantized.
* `minimax-h3`: MiniMax-H3 with `--transformer-weights-path` (0.5.19+):
  `inspect_minimax_h3_safetensors` + `resolve_minimax_h3_checkpoint_quantization`, never the
  header path while the file has markers (without markers: as `transformer-weights-path`).
* `comfyui-mode`: the `--comfyui-mode` single-file loader (0.5.21+,
  `comfyui_checkpoints/spec.py` `load_comfyui_transformer`) reads markers only for specs that
  have them: MiniMax-H3 (INT8 ConvRot only) and Qwen-Image 2.1 (`quant_markers`, which
  resolves without files: NVFP4 fails), both from 0.5.22. Every other spec (Flux, Qwen-Image,
  Z-Image; every spec in 0.5.21) loads the file unquantized: the weight loader casts each
  stored weight to the parameter dtype (F8 weights dequantized with their scale), a packed
  weight does not fit its parameter.
* `text-encoder`: `_get_encoder_quant_config` (0.5.19+): the header path, quanto INT8, then
  the marker inspector: the order of quantcheck's sglang rules (`sglang_header_path`).

Each loader's verdict is `{"status", "reason"}`; a status of None stands for the verdict of
quantcheck's sglang rules (the target's tally: the header path and marker rules decide), filled
in by the report. Loaders a release does not have are left out. Standard library only.
"""

from __future__ import annotations

import json

from quantcheck.formats.table import FORMATS
from quantcheck.rules.sglang.header_path import (
    NO_INSPECTOR,
    READER,
    HeaderDoc,
    SglangPath,
    nvfp4_group_size,
    nvfp4_layers,
    route,
    version,
)

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.checkpoint import Checkpoint

OVERRIDE = "transformer-weights-path"
H3 = "minimax-h3"
COMFYUI = "comfyui-mode"
ENCODER = "text-encoder"
LOADERS = (OVERRIDE, H3, COMFYUI, ENCODER)
#: first release with the --comfyui-mode loader, and with specs that read markers
COMFYUI_SINCE = (0, 5, 21)
SPEC_MARKERS_SINCE = (0, 5, 22)
REFUSAL = (
    "Replacement checkpoint contains quantized tensors but no supported native quantization "
    "declaration"
)
_RANK = {"ok": 0, "degraded": 1, "fails": 2}


def worst(statuses: list[str]) -> str:
    """The worst of ok / degraded / fails ("ok" for none)."""
    return max(statuses, key=_RANK.__getitem__, default="ok")


def _verdict(status: str | None, reason: str, floor: str | None = None) -> dict[str, Any]:
    """A loader's verdict; `status` None: the target's tally, raised to `floor` if given."""
    out: dict[str, Any] = {"status": status, "reason": reason}
    if floor is not None and status is None:
        out["floor"] = floor
    return out


def fill(loaders: dict[str, dict[str, Any]], tally: str) -> dict[str, dict[str, str]]:
    """The loaders' verdicts with the target's `tally` put in where a status stands for it."""
    out = {}
    for name, v in loaders.items():
        status = v["status"]
        if status is None:
            status = worst([tally, v.get("floor", "ok")])
        out[name] = {"status": status, "reason": v["reason"]}
    return out


def loaders_at(
    ck: Checkpoint,
    release: str,
    docs: list[HeaderDoc],
    path: SglangPath,
    marker_status: str | None,
    nvfp4_status: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Each loader's verdict at `release`. `path` is the header-first reading of the file
    (what the text-encoder loader does); `marker_status` the marker rules' status at `release`
    when the header path hides it (None: the target's tally is the marker verdict);
    `nvfp4_status` that of the ModelOpt NVFP4 route (None: the tally)."""
    v = version(release)
    if v <= NO_INSPECTOR:
        same = _verdict(
            None,
            "0.5.18 has no marker inspector: the transformer loader reads the header path, "
            "then the NVFP4 inference (_resolve_quant_config)",
        )
        return {OVERRIDE: same, H3: dict(same)}
    override = override_verdict(ck, docs, release, nvfp4_status)
    marked = _marked_layers(ck)
    out = {OVERRIDE: override}
    if marked:
        out[H3] = _verdict(
            marker_status,
            "inspect_minimax_h3_safetensors + resolve_minimax_h3_checkpoint_quantization: "
            "the markers decide (the header path is not asked)",
        )
    else:
        out[H3] = _verdict(
            override["status"], "no comfy_quant markers: as --transformer-weights-path"
        )
    if v >= COMFYUI_SINCE:
        out[COMFYUI] = comfyui_verdict(ck, v, marked, marker_status)
    out[ENCODER] = _verdict(
        None,
        "_get_encoder_quant_config: header path, quanto INT8, then the markers (" + path.why + ")",
    )
    return out


def _marked_layers(ck: Checkpoint) -> dict[str, Any]:
    """{prefix: marker format} of the layers the marker inspector returns (a marker and a
    weight), or every F8/I8/U8 weight as mxfp8 under `quant_format` mxfp8."""
    out: dict[str, Any] = {
        la.prefix: la.marker.format
        for la in ck.layers.values()
        if la.marker is not None and "weight" in la.tensors
    }
    if {v.lower() for v in ck.quant_formats.values()} == {"mxfp8"}:
        for la in ck.layers.values():
            w = la.weight
            if w is not None and w.dtype in ("F8_E4M3", "I8", "U8"):
                out.setdefault(la.prefix, "mxfp8")
    return out


# --- --transformer-weights-path ---------------------------------------------------------------


def override_verdict(
    ck: Checkpoint, docs: list[HeaderDoc], release: str, nvfp4_status: str | None = None
) -> dict[str, Any]:
    """`_resolve_weight_override_quantization`, then `_resolve_quant_config`'s NVFP4 inference
    and its refusal (0.5.19-0.5.23, identical in the wheels)."""
    where = "_resolve_weight_override_quantization"
    header_config: str | None = None
    declaration: dict[str, Any] | None = None
    for hd in docs:
        r = route(hd, release)
        if r is not None:
            if r.kind == "error":
                return _verdict(None, f"{where} -> {READER} raises: {r.why}")
            if header_config is not None and header_config != r.config:
                return _verdict(
                    "fails",
                    f'{where}: ValueError("Conflicting safetensors quantization declarations"): '
                    f"{header_config} and {r.config}",
                )
            header_config = r.config
        meta = _shard_metadata(ck, hd.file)
        for key in ("_quantization_metadata", "quantization_config"):
            raw = meta.get(key)
            if raw is None:
                continue
            try:
                doc = json.loads(raw)
            except (ValueError, RecursionError):
                return _verdict("fails", f'{where}: ValueError("Invalid {key} in {hd.file}")')
            if not isinstance(doc, dict):
                return _verdict(
                    "fails",
                    f'{where}: ValueError("Invalid {key} in {hd.file}: expected an object")',
                )
            conflict = _merge_conflict(declaration or {}, doc)
            if conflict is not None:
                return _verdict(
                    "fails",
                    f'{where}: ValueError("Conflicting checkpoint quantization field '
                    f'{conflict!r}")',
                )
            declaration = _merged(declaration or {}, doc)
    if declaration is not None and "quant_method" in declaration:
        return _verdict(
            None,
            f"{where}: the header declares quant_method {declaration['quant_method']!r} "
            "(get_quant_config builds that config)",
        )
    if header_config is not None:
        return _verdict(None, f"{where} -> {READER} -> {header_config}")
    declares = declaration is not None or _quantized_tensors(ck)
    if not declares:
        return _verdict(None, f"{where}: no declaration and no quantized tensors: unquantized")
    return _nvfp4_inference(ck, docs, declaration is not None, nvfp4_status)


def _shard_metadata(ck: Checkpoint, file: str) -> dict[str, str]:
    for shard in ck.shards:
        if shard.name == file:
            return shard.header.metadata
    return {}


def _merge_conflict(base: dict[str, Any], incoming: dict[str, Any]) -> str | None:
    """The field `_merge_quant_declaration` raises on (equal values and nested objects merge)."""
    for key, value in incoming.items():
        previous = base.get(key)
        if isinstance(previous, dict) and isinstance(value, dict):
            hit = _merge_conflict(previous, value)
            if hit is not None:
                return hit
        elif key in base and previous != value:
            return key
    return None


def _merged(base: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in incoming.items():
        previous = out.get(key)
        out[key] = (
            _merged(previous, value)
            if isinstance(previous, dict) and isinstance(value, dict)
            else value
        )
    return out


def _quantized_tensors(ck: Checkpoint) -> bool:
    """`detected_quantized_tensors`: a key ending in .weight_scale / .input_scale /
    .comfy_quant, or a .weight stored F8_E4M3, I8 or U8."""
    for name, t in ck.tensors.items():
        if name.endswith((".weight_scale", ".input_scale", ".comfy_quant")):
            return True
        if name.endswith(".weight") and t.dtype in ("F8_E4M3", "I8", "U8"):
            return True
    return False


def _nvfp4_inference(
    ck: Checkpoint, docs: list[HeaderDoc], declared: bool, nvfp4_status: str | None
) -> dict[str, Any]:
    """No config from the header: `build_nvfp4_config_from_safetensors_list` or the refusal.
    The ModelOpt route's own status is `nvfp4_status` (0.5.18's rules model that builder)."""
    why = "a header declaration" if declared else "quantized tensors"
    layers = nvfp4_layers(ck, docs)
    group = None
    for _, prefix in layers:
        w = ck.tensors.get(prefix + ".weight")
        s = ck.tensors.get(prefix + ".weight_scale")
        if w is not None and s is not None:
            group = nvfp4_group_size(w.shape, s.shape)
            if group is not None:
                break
    if group is None:
        return _verdict(
            "fails",
            f"_resolve_quant_config: the file has {why} and no header config, and "
            f'the markers are never read: ValueError("{REFUSAL}")',
        )
    nvfp4 = {p for _, p in layers}
    others = {p: f for p, f in _marked_layers(ck).items() if p not in nvfp4}
    head = (
        "_resolve_quant_config: no header config; ModelOptFp4Config inferred from the NVFP4 "
        "tensors (build_nvfp4_config_from_safetensors_list)"
    )
    if not others:
        return _verdict(nvfp4_status, head)
    status, text = _unquantized_load(ck, others)
    text = f"{head}; its other layers are excluded and load unquantized: {text}"
    if nvfp4_status is None:
        return _verdict(None, text, status)
    return _verdict(worst([nvfp4_status, status]), text)


# --- unquantized loads (comfyui-mode specs without markers, NVFP4-inferred companions) -------


def _unquantized_load(ck: Checkpoint, layers: dict[str, Any]) -> tuple[str, str]:
    """What the generic weight loader does with quantized layers it builds unquantized:
    `fsdp_load` casts each stored weight to the parameter dtype (F8 weights dequantized with
    their weight_scale by `_maybe_dequantize_fp8`); a packed weight's stored shape does not
    fit its [N, K] parameter (the weight_loader's shape assertion stops the load)."""
    packed = []
    cast = []
    for prefix, fmt in layers.items():
        spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
        if spec is not None and spec.packing != "none":
            packed.append(prefix)
        else:
            cast.append(prefix)
    if packed:
        return "fails", (
            f"{len(packed)} packed layer{'s' if len(packed) > 1 else ''} (e.g. {packed[0]!r}) "
            "do not fit their [N, K] parameter (AssertionError at weight load)"
        )
    return "degraded", (
        f"{len(cast)} layer{'s' if len(cast) > 1 else ''} (e.g. {cast[0]!r}) are cast to the "
        "parameter dtype and computed unquantized (F8 weights dequantized with their scale, "
        "others with their stored codes unscaled)"
    )


# --- --comfyui-mode ----------------------------------------------------------------------------


def comfyui_verdict(
    ck: Checkpoint, v: tuple[int, ...], marked: dict[str, Any], marker_status: str | None
) -> dict[str, Any]:
    """`load_comfyui_transformer`: the worst over its specs (the model family is not known)."""
    if not marked:
        return _verdict(None, "load_comfyui_transformer: no comfy_quant markers")
    plain_status, plain = _unquantized_load(ck, marked)
    if v < SPEC_MARKERS_SINCE:
        return _verdict(
            plain_status,
            "load_comfyui_transformer: no spec reads markers before 0.5.22, so the file "
            f"loads unquantized: {plain}",
        )
    formats = {str(f) for f in marked.values()}
    statuses = [plain_status]
    parts = [f"Flux, Qwen-Image, Z-Image (no quant_markers): {plain}"]
    if formats != {"int8_tensorwise"}:
        statuses.append("fails")
        parts.append(
            'MiniMax-H3: ValueError("ComfyUI H3 integrated mode currently supports serialized '
            'INT8 ConvRot quantization")'
        )
    else:
        parts.append("MiniMax-H3: the markers decide")
    if "nvfp4" in formats:
        statuses.append("fails")
        parts.append(
            'Qwen-Image 2.1: ValueError("MiniMax-H3 NVFP4 metadata requires checkpoint files")'
        )
    else:
        parts.append("Qwen-Image 2.1 (quant_markers): the markers decide")
    reason = "load_comfyui_transformer per spec: " + "; ".join(parts)
    if marker_status is not None:
        return _verdict(worst([marker_status, *statuses]), reason)
    return _verdict(None, reason, worst(statuses))
