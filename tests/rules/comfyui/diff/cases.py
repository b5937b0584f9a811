"""The generated checkpoints: one quantized linear layer each, for every format ComfyUI
@0271a469 has, and the broken variants quantcheck's ComfyUI rules catch.

Layers are quantcheck's own quantizer on a fixed random weight (the builders of
`tests/rules/diff_cases.py`), edited where a case breaks them; the reference weight is
quantcheck's dequantization of the layer before the edit (None for raw cases: only load and
forward are judged there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from quantcheck.io.build import RawTensor, write_safetensors
from quantcheck.numeric.api import dequantize, quantize

from ..._build import awq, header_meta, t
from ...diff_cases import CASES as CONSUMER_CASES
from ...diff_cases import (
    F32_ONE,
    INT8,
    ROT16,
    Case,
    Layers,
    P,
    _marker,
    _no_group,
    layer_case,
    raw_case,
)

Tensors = dict[str, tuple[str, np.ndarray]]


def _relabel(suffix: str, dtype: str):
    def edit(ts: Tensors) -> None:
        ts[suffix] = (dtype, ts[suffix][1])

    return edit


def _to_bf16(suffix: str):
    def edit(ts: Tensors) -> None:
        import ml_dtypes

        ts[suffix] = ("BF16", ts[suffix][1].astype(np.float32).astype(ml_dtypes.bfloat16))

    return edit


def _set(**fields: Any):
    return lambda conf: _marker({**conf, **fields})


def _drop(*names: str):
    return lambda conf: _marker({k: v for k, v in conf.items() if k not in names})


def _w4a4_odd_k(group: int = 16) -> list[RawTensor]:
    """convrot_w4a4 with K = 96 (K/2 = 48 is not a multiple of 32)."""
    return [
        t(f"{P}.weight", "I8", (64, 48)),
        t(f"{P}.weight_scale", "F32", (64,)),
        _marker({"format": "convrot_w4a4", "convrot_groupsize": group}),
    ]


def _bf16_under_fp8(tmp: Path) -> tuple[str, Layers]:
    """A BF16 weight (typical magnitudes, ~0.02) under an fp8 marker with scale 1."""
    import ml_dtypes

    w = (np.random.default_rng(7).standard_normal((64, 64)) * 0.02).astype(ml_dtypes.bfloat16)
    path = tmp / "model.safetensors"
    write_safetensors(
        path,
        [
            RawTensor(f"{P}.weight", "BF16", (64, 64), w.tobytes()),
            RawTensor(f"{P}.weight_scale", "F32", (), np.float32(1.0).tobytes()),
            _marker({"format": "float8_e4m3fn"}),
        ],
    )
    return str(path), {P: ((64, 64), w.astype(np.float32))}


def _per_row_scale(ts: Tensors) -> None:
    """An FP8 per-tensor scale written as the same value per row, [N, 1]."""
    dtype, a = ts["weight_scale"]
    n = ts["weight"][1].shape[0]
    ts["weight_scale"] = (dtype, np.full((n, 1), a, np.float32))


MODEL = "model.diffusion_model."


def _under_model_prefix(
    fmt: str,
    header: str | None,
    *,
    n: int = 64,
    k: int = 128,
    others: int = 0,
    options: dict[str, Any] | None = None,
    stored: str = MODEL + "blocks.4.attn.wo",
) -> Case:
    """One `fmt` layer stored as `stored` with no marker tensor, its marker only in the header
    under the name `header` (None: no header), and `others` BF16 layers under the model prefix
    (each one key): ComfyUI strips the prefix only when more than 5 keys carry it."""

    def build(tmp: Path) -> tuple[str, Layers]:
        import ml_dtypes

        w = np.random.default_rng(n * 1000 + k).standard_normal((n, k)).astype(np.float32)
        q = quantize(w, fmt, **(options or {}))
        want = dequantize(fmt, q.arrays(), q.marker, shape=(n, k))
        tensors = [
            RawTensor(f"{stored}.{sfx}", dtype, tuple(a.shape), a.tobytes())
            for sfx, (dtype, a) in q.tensors.items()
        ]
        bf16 = np.zeros((8, 8), ml_dtypes.bfloat16).tobytes()
        tensors += [
            RawTensor(f"{MODEL}blocks.{i}.ff.weight", "BF16", (8, 8), bf16) for i in range(others)
        ]
        path = tmp / "model.safetensors"
        meta = header_meta({header: q.marker}) if header is not None else None
        write_safetensors(path, tensors, meta)
        return str(path), {stored: ((n, k), want)}

    return build


CASES: dict[str, Case] = {
    # every format ComfyUI @0271a469 has (QUANT_ALGOS), as quantcheck writes it
    "fp8": layer_case("float8_e4m3fn"),
    "fp8-input-scale": layer_case("float8_e4m3fn", extra=(("input_scale", "F32", (), F32_ONE),)),
    "fp8-e5m2": layer_case("float8_e5m2"),
    "int8-rowwise": layer_case("int8_tensorwise", options=INT8),
    "int8-convrot": layer_case("int8_tensorwise", options=ROT16),
    "mxfp8": layer_case("mxfp8"),
    "nvfp4": layer_case("nvfp4", k=64),
    "w4a8": layer_case("asym_w4a8_int8", n=64, k=256),
    "w4a4": layer_case("convrot_w4a4", n=64, k=256),
    "awq": raw_case(awq, 32, 128),
    # broken variants
    "int8-scale-1d": layer_case(
        "int8_tensorwise",
        options=INT8,
        edit=lambda ts: ts.update(weight_scale=("F32", ts["weight_scale"][1].reshape(-1))),
    ),
    "int8-convrot-group-string": layer_case(
        "int8_tensorwise", options=ROT16, marker=_set(convrot_groupsize="16")
    ),
    "int8-convrot-16-group-missing": layer_case(
        "int8_tensorwise", k=256, options=ROT16, marker=_no_group
    ),
    "int8-convrot-default-group-too-big": layer_case(
        "int8_tensorwise", k=64, options=ROT16, marker=_no_group
    ),
    "mxfp8-scales-f8-e8m0": layer_case("mxfp8", edit=_relabel("weight_scale", "F8_E8M0")),
    "mxfp8-no-scales": layer_case("mxfp8", drop=("weight_scale",)),
    "w4a8-channel-bf16": layer_case(
        "asym_w4a8_int8", n=64, k=256, edit=_to_bf16("weight_s_channel")
    ),
    "w4a8-group-string": layer_case("asym_w4a8_int8", n=64, k=256, marker=_set(group_size="16")),
    "w4a8-group-missing": layer_case("asym_w4a8_int8", n=64, k=256, marker=_drop("group_size")),
    "w4a8-correction-never-read": layer_case(
        "asym_w4a8_int8", n=64, k=256, options={"symmetric": False}
    ),
    "w4a4-k-not-multiple-of-64": raw_case(_w4a4_odd_k, 64, 96),
    "w4a4-group-not-power-of-4": raw_case(lambda: _w4a4_odd_k(32), 64, 96),
    "w6a8-after-0271a469": layer_case("w6a8_int8", n=64, k=256),
    "format-unknown": layer_case("float8_e4m3fn", marker=_set(format="float8_e4m3fnuz")),
    "fp8-bf16-weight": _bf16_under_fp8,
    "fp8-scale-per-row": layer_case("float8_e4m3fn", edit=_per_row_scale),
    "fp8-scale-per-row-input-scale": layer_case(
        "float8_e4m3fn", edit=_per_row_scale, extra=(("input_scale", "F32", (), F32_ONE),)
    ),
    # issue 20 item 1: a wrong-dtype weight hides no missing companion
    "mxfp8-i8-weight-no-scales": raw_case(
        lambda: [t(f"{P}.weight", "I8", (128, 128)), _marker({"format": "mxfp8"})], 128, 128
    ),
    "nvfp4-bf16-weight-no-scales": raw_case(
        lambda: [t(f"{P}.weight", "BF16", (64, 64)), _marker({"format": "nvfp4"})], 64, 64
    ),
    "int8-u8-weight-no-scale": raw_case(
        lambda: [t(f"{P}.weight", "U8", (64, 64)), _marker({"format": "int8_tensorwise"})], 64, 64
    ),
    # item 2: unmarked storage, decided from the shapes (packed: fails; same width: degraded)
    "nvfp4-unmarked-header-elsewhere": _under_model_prefix("nvfp4", "blocks.4.attn.wo"),
    "w4a8-unmarked": _under_model_prefix("asym_w4a8_int8", None, k=256),
    "int8-unmarked": layer_case("int8_tensorwise", options=INT8, marker=lambda conf: None),
    # item 3: dequantize() cannot broadcast [N] (N != K: it raises; N == K above: misreads)
    "int8-scale-1d-wide": layer_case(
        "int8_tensorwise",
        n=64,
        k=128,
        options=INT8,
        edit=lambda ts: ts.update(weight_scale=("F32", ts["weight_scale"][1].reshape(-1))),
    ),
    # item 4: load_diffusion_model_state_dict's two convert_old_quants passes
    "header-unprefixed-prefix-stripped": _under_model_prefix(
        "int8_tensorwise", "blocks.4.attn.wo", others=4, options=ROT16
    ),
    "header-unprefixed-two-call-fp8": _under_model_prefix(
        "float8_e4m3fn", "proj_in", others=4, stored=MODEL + "proj_in"
    ),
    "header-unprefixed-few-keys": _under_model_prefix(
        "int8_tensorwise", "blocks.4.attn.wo", others=2, options=ROT16
    ),
    "header-prefixed-tensors-unprefixed": _under_model_prefix(
        "int8_tensorwise", MODEL + "blocks.4.attn.wo", options=ROT16, stored="blocks.4.attn.wo"
    ),
}
#: The InvokeAI / DiffSynth cases that say something about ComfyUI too.
CASES.update(
    {
        f"consumers:{name}": CONSUMER_CASES[name]
        for name in (
            "fp8-unmarked",
            "fp8-legacy-scaled-fp8",
            "fp8-no-weight-scale",
            "fp8-marker-e5m2-weight",
            "int8-scalar",
            "int8-rowwise-input-scale",
            "int8-convrot-default-group-fits",
            "int8-marker-bom",
            "int8-marker-zeroed",
            "int8-marker-list",
            "int8-marker-i8",
            "int8-marker-i16",
            "mxfp8-padded",
        )
    }
)

#: Cases whose ComfyUI outcome needs code the tests do not execute, and why.
NOT_RUN: dict[str, str] = {}
#: Cases whose outcome on a GPU with fp8 compute differs from the CPU run (not executed here:
#: no GPU), with the `comfyui` verdict and why.
GPU_DIFFERS: dict[str, tuple[str, str]] = {
    name: (
        "fails",
        "on a GPU with fp8 compute the layer runs through torch._scaled_mm, which refuses a "
        "per-row weight scale beside a per-tensor input scale "
        "(recorded by running ComfyUI's loader on a GPU, not executed here)",
    )
    for name in ("fp8-scale-per-row", "fp8-scale-per-row-input-scale")
}
#: Cases where quantcheck's verdict cannot follow the real outcome, and why.
AMBIGUOUS: dict[str, str] = {
    "consumers:int8-convrot-default-group-fits": "rotated with 256 and no group in the marker: "
    "ComfyUI's default 256 happens to be right; the file cannot say so, QC320 warns (degraded)",
}


def describe() -> str:
    return json.dumps(sorted(CASES))
