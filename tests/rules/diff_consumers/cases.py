"""The generated checkpoints of the differential tests: every format, header-only vs marker-only
layers, and the broken variants the InvokeAI and DiffSynth-Studio rules catch.

Each case is one file holding one quantized linear layer (quantcheck's own quantizer on a fixed
random weight), plus the layer's logical shape and weight (quantcheck's dequantization of the
stored tensors; None where it has none).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from quantcheck.io.build import RawTensor, write_safetensors
from quantcheck.numeric.api import dequantize, quantize

from .._build import awq, header_meta

P = "blocks.0.attn.qkv"
Layers = dict[str, tuple[tuple[int, int], Any]]
Case = Callable[[Path], tuple[str, Layers]]


def _weight(n: int, k: int) -> np.ndarray:
    return np.random.default_rng(n * 1000 + k).standard_normal((n, k)).astype(np.float32)


def _marker(conf: Any, raw: bytes | None = None, dtype: str = "U8") -> RawTensor:
    data = raw if raw is not None else json.dumps(conf).encode()
    if dtype == "I16":  # the marker bytes relabelled as I16 (what a dtype-blind tool writes)
        data += b" " * (len(data) % 2)
        return RawTensor(f"{P}.comfy_quant", "I16", (len(data) // 2,), data)
    return RawTensor(f"{P}.comfy_quant", dtype, (len(data),), data)


def layer_case(
    fmt: str,
    n: int = 128,
    k: int = 128,
    *,
    options: dict[str, Any] | None = None,
    marker: Callable[[dict[str, Any]], RawTensor | None] | None = None,
    header: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    drop: tuple[str, ...] = (),
    extra: tuple[tuple[str, str, tuple[int, ...], bytes], ...] = (),
    edit: Callable[[dict[str, tuple[str, np.ndarray]]], None] | None = None,
    top: tuple[RawTensor, ...] = (),
) -> Case:
    """One layer of `fmt`; `marker(conf)` replaces the marker tensor (None: none), `header(conf)`
    gives the header marker (None: no header), `drop` removes stored tensors, `extra` adds,
    `edit` rewrites the stored tensors (suffix -> (dtype, array)) after the reference is taken,
    `top` adds tensors outside the layer."""

    def build(tmp: Path) -> tuple[str, Layers]:
        q = quantize(_weight(n, k), fmt, **(options or {}))
        want = dequantize(fmt, q.arrays(), q.marker, shape=(n, k))
        if edit is not None:
            edit(q.tensors)
        tensors = [
            RawTensor(f"{P}.{s}", dtype, tuple(a.shape), a.tobytes())
            for s, (dtype, a) in q.tensors.items()
            if s not in drop
        ]
        tensors += [RawTensor(f"{P}.{s}", d, sh, b) for s, d, sh, b in extra]
        tensors += list(top)
        m = marker(q.marker) if marker is not None else _marker(q.marker)
        if m is not None:
            tensors.append(m)
        h = header(q.marker) if header is not None else None
        path = tmp / "model.safetensors"
        write_safetensors(path, tensors, header_meta({P: h}) if h is not None else None)
        return str(path), {P: ((n, k), want)}

    return build


def raw_case(make: Callable[[], list[RawTensor]], n: int, k: int) -> Case:
    def build(tmp: Path) -> tuple[str, Layers]:
        path = tmp / "model.safetensors"
        write_safetensors(path, make())
        return str(path), {P: ((n, k), None)}

    return build


INT8 = {"per_row": True}
ROT16 = {"per_row": True, "convrot": True, "convrot_groupsize": 16}
F32_ONE = np.float32(1.0).tobytes()


def _flat_scale(t: dict[str, tuple[str, np.ndarray]]) -> None:
    dtype, a = t["weight_scale"]
    t["weight_scale"] = (dtype, a.reshape(-1).copy())


def _e5m2_codes(t: dict[str, tuple[str, np.ndarray]]) -> None:
    _, a = t["weight"]
    t["weight"] = ("F8_E5M2", a)


def _legacy(t: dict[str, tuple[str, np.ndarray]]) -> None:
    t["scale_weight"] = t.pop("weight_scale")


def _no_group(conf: dict[str, Any]) -> RawTensor:
    return _marker({k: v for k, v in conf.items() if k != "convrot_groupsize"})


#: Cases where quantcheck's verdict cannot follow the real outcome, and why: the file does not
#: say which group its weights were rotated with (QC320 warns whenever the group is left out).
AMBIGUOUS = {
    ("diffsynth", "int8-convrot-default-group-fits"): "rotated with 256 and no group in the "
    "marker: DiffSynth's default 256 happens to be right; QC320 cannot know (degraded)",
}
CASES: dict[str, Case] = {
    "fp8": layer_case("float8_e4m3fn"),
    "fp8-input-scale": layer_case("float8_e4m3fn", extra=(("input_scale", "F32", (), F32_ONE),)),
    "fp8-unmarked": layer_case("float8_e4m3fn", marker=lambda c: None),
    "fp8-legacy-scaled-fp8": layer_case(
        "float8_e4m3fn",
        marker=lambda c: None,
        edit=_legacy,
        top=(RawTensor("scaled_fp8", "F8_E4M3", (0,), b""),),
    ),
    "fp8-no-weight-scale": layer_case("float8_e4m3fn", drop=("weight_scale",)),
    "fp8-e5m2": layer_case("float8_e5m2"),
    "int8-scalar": layer_case("int8_tensorwise"),
    "int8-rowwise": layer_case("int8_tensorwise", options=INT8),
    "int8-rowwise-input-scale": layer_case(
        "int8_tensorwise", options=INT8, extra=(("input_scale", "F32", (), F32_ONE),)
    ),
    "int8-scale-1d": layer_case("int8_tensorwise", options=INT8, edit=_flat_scale),
    "fp8-marker-e5m2-weight": layer_case("float8_e4m3fn", edit=_e5m2_codes),
    "int8-convrot": layer_case("int8_tensorwise", options=ROT16),
    "int8-convrot-default-group-fits": layer_case(
        "int8_tensorwise", k=256, options={**ROT16, "convrot_groupsize": 256}, marker=_no_group
    ),
    "int8-convrot-16-group-missing": layer_case(
        "int8_tensorwise", k=256, options=ROT16, marker=_no_group
    ),
    "int8-convrot-default-group-too-big": layer_case(
        "int8_tensorwise", k=64, options=ROT16, marker=_no_group
    ),
    "int8-header-only": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: None, header=lambda c: c
    ),
    "int8-header-and-marker": layer_case("int8_tensorwise", options=INT8, header=lambda c: c),
    "int8-format-only-in-header": layer_case(
        "int8_tensorwise",
        options=INT8,
        marker=lambda c: _marker({k: v for k, v in c.items() if k != "format"}),
        header=lambda c: {"format": c["format"]},
    ),
    "int8-marker-bom": layer_case(
        "int8_tensorwise",
        options=INT8,
        marker=lambda c: _marker(c, raw=b"\xef\xbb\xbf" + json.dumps(c).encode()),
    ),
    "int8-marker-zeroed": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: _marker(c, raw=bytes(24))
    ),
    "int8-marker-list": layer_case("int8_tensorwise", options=INT8, marker=lambda c: _marker([c])),
    "int8-marker-i8": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: _marker(c, dtype="I8")
    ),
    "int8-marker-i16": layer_case(
        "int8_tensorwise", options=INT8, marker=lambda c: _marker(c, dtype="I16")
    ),
    "mxfp8": layer_case("mxfp8"),
    "mxfp8-padded": layer_case("mxfp8", n=96, k=96),
    "nvfp4": layer_case("nvfp4", k=64),
    "w4a8": layer_case("asym_w4a8_int8", n=64, k=256),
    "w6a8": layer_case("w6a8_int8", n=64, k=256),
    "w4a4": layer_case("convrot_w4a4", n=64, k=256),
    "awq": raw_case(awq, 32, 128),
}
