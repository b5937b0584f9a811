"""Differential tests of `quantcheck lora` against ComfyUI's own LoRA code (@783545f6:
comfy/lora.py `model_lora_keys_unet`, `load_lora`, `calculate_weight`; lora_convert.py
`convert_lora`; weight_adapter/*; float.py) and its re-quantization (`QuantizedTensor.
requantize_from_float(W', scale="recalculate", stochastic_rounding=string_to_seed(key))`,
comfy/quant_ops.py @0271a469 + comfy-kitchen 0.2.40 on CPU), on generated base/LoRA pairs of
every format and convention, and mismatched pairs (see lora_loader.py for what is stubbed).

The stand-in model exposes what model_lora_keys_unet reads: `state_dict()` (the base's keys
after ComfyUI's key plumbing, under `diffusion_model.`), `model_config.unet_config` and the
family's model class. Base layers are loaded by ComfyUI's `_load_quantized_module` (real.py's
Shell), dequantized and patched as `ModelPatcher.patch_weight_to_device` does on the CPU
(lora_compute_dtype float32), then re-quantized by their own layout.

Compared per pair: the model keys patched, the keys logged "lora key not loaded", whether the
re-quantization raises, and the figures (retention, added error) within TOLERANCE; and the
re-quantized weight itself, given ComfyUI's own W': bit-identical for the stochastic-rounding
formats (FP8, NVFP4, MXFP8: same generator stream) and INT8 per-row, within REQUANT_TOLERANCE
for the rotated and W4A8 formats (the numeric contract's summation bound).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from quantcheck.io.build import write_safetensors
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.numeric.lora_patch import requantize
from quantcheck.rules.lora.analyse import analyse
from quantcheck.rules.lora.figures import layer_options

from ...lora.pairs import WAN_LAYERS, awq_layer, raw, weights, write_lora
from .lora_loader import ComfyLora, load_lora_code
from .real import Shell
from .source import COMMIT, tree

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_COMFYUI") != "1",
    reason="set QUANTCHECK_DIFF_COMFYUI=1 (make diff-comfyui)",
)

#: retention: absolute; added error: relative
TOLERANCE = {"retention": 0.02, "added_error": 0.03}
#: relative L2 between the two re-quantized weights where the codec sums (rotations, W4A8)
#: (measured: 2e-7 for the rotated formats, the float rounding of the inverse rotation's sums
#: with the same codes; one W4A8 layer in eight 2.6e-3, codes at near-ties of its ALS scales)
REQUANT_TOLERANCE = {"int8_tensorwise": 1e-6, "convrot_w4a4": 1e-6, "asym_w4a8_int8": 5e-3}
BIT_EXACT = {"float8_e4m3fn", "float8_e5m2", "nvfp4", "mxfp8", "int8_tensorwise"}
ALL = [f"blocks.0.{name}" for name in WAN_LAYERS]
#: name -> (format, quantize options)
FORMATS = {
    "float8_e4m3fn": ("float8_e4m3fn", {}),
    "float8_e5m2": ("float8_e5m2", {}),
    "int8": ("int8_tensorwise", {"per_row": True}),
    "int8_convrot": ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 64}),
    "nvfp4": ("nvfp4", {}),
    "mxfp8": ("mxfp8", {}),
    "convrot_w4a4": ("convrot_w4a4", {"convrot_groupsize": 64}),
    "asym_w4a8_int8": ("asym_w4a8_int8", {"group_size": 16, "convrot_groupsize": 64}),
    "bf16": ("bf16", {}),
}


@pytest.fixture(scope="module")
def comfy() -> ComfyLora:
    root = tree()
    if root is None:
        pytest.fail(f"no ComfyUI source: set QUANTCHECK_COMFYUI_SRC or let git fetch {COMMIT}")
    return load_lora_code(root)


def _base(path: Path, kind: str, names: list[str], awq_at: str = "") -> None:
    from quantcheck.io.build import marker_tensor
    from quantcheck.numeric import quantize

    fmt, opts = FORMATS[kind]
    tensors = [raw("patch_embedding.weight", weights(128, 16, 0))]
    for i, p in enumerate(names):
        if p == awq_at:
            tensors += awq_layer(p, 128, 128)
            continue
        w = weights(128, 128, i + 1)
        if fmt == "bf16":
            import ml_dtypes

            tensors.append(raw(p + ".weight", w.astype(ml_dtypes.bfloat16)))
            continue
        layer = quantize(w, fmt, **opts)
        tensors += [raw(f"{p}.{s}", a) for s, (_, a) in layer.tensors.items()]
        tensors.append(marker_tensor(p, layer.marker))
    write_safetensors(path, tensors)


class StandIn:
    """What model_lora_keys_unet reads of a model."""

    def __init__(self, keys: list[str], cls: type, unet_config: dict[str, Any]) -> None:
        self._sd = {k: None for k in keys}
        self.model_config = type("Config", (), {"unet_config": unet_config})()
        self.__class__ = type("Model", (StandIn, cls), {})

    def state_dict(self) -> dict[str, Any]:
        return self._sd


def _comfy_side(comfy: ComfyLora, base: Path, lora: Path, family: str, strength: float, caplog):
    sd = load_file(str(base))
    with safe_open(str(base), framework="pt") as f:
        meta = f.metadata()
    sd = comfy.comfy.plumb(sd, meta)
    model = StandIn(["diffusion_model." + k for k in sd], getattr(comfy.model_base, family), {})
    key_map = comfy.lora.model_lora_keys_unet(model, {})
    lora_sd = comfy.lora_convert.convert_lora(load_file(str(lora)))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        patches = comfy.lora.load_lora(lora_sd, key_map)
    not_loaded = [
        r.getMessage()[len("lora key not loaded: ") :]
        for r in caplog.records
        if r.getMessage().startswith("lora key not loaded: ")
    ]
    results: dict[str, dict[str, Any]] = {}
    for key, adapter in patches.items():
        prefix = key[len("diffusion_model.") : -len(".weight")]
        results[key] = _patch_layer(comfy, sd, prefix, key, adapter, strength, caplog)
    return set(patches), not_loaded, results


def _patch_layer(comfy, sd, prefix, key, adapter, strength, caplog) -> dict[str, Any]:
    """patch_weight_to_device on the CPU: dequantize (float32), calculate_weight, then the
    layer's set_weight -> requantize_from_float; the figures of what arrives."""
    own = {k: v for k, v in sd.items() if k.startswith(prefix + ".")}
    n = own[prefix + ".weight"].shape[0]
    shell = Shell(n, 128, comfy.comfy.disabled)
    shell.comfy = comfy.comfy
    shell._load_from_state_dict(own, prefix + ".", {}, True, [], [], [])
    qt = comfy.comfy.quant_ops.QuantizedTensor
    weight = shell.weight
    temp = weight.to(torch.float32)
    w = temp.dequantize() if isinstance(temp, qt) else temp.clone()
    w = w.to(torch.float32)
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        patched = comfy.lora.calculate_weight(
            [(strength, adapter, 1.0, None, None)], w.clone(), key
        )
    shape_error = any(r.getMessage().startswith("ERROR lora") for r in caplog.records)
    out: dict[str, Any] = {"shape_error": shape_error, "w": w, "patched": patched}
    if not isinstance(weight, qt):
        out["outcome"] = "patched"
        return out
    seed = comfy.string_to_seed(key)
    try:
        new = weight.requantize_from_float(
            patched.clone(), scale="recalculate", stochastic_rounding=seed, inplace_ops=True
        )
    except NotImplementedError as exc:
        out["outcome"] = "raises"
        out["why"] = str(exc)
        return out
    got = new.dequantize().to(torch.float32)
    d = (patched - w).double().flatten()
    dd = float(d @ d)
    out["outcome"] = "patched"
    out["deq"] = got
    if dd:
        out["retention"] = float((got - w).double().flatten() @ d) / dd
        out["added_error"] = float(((got - patched).double().norm() ** 2 / dd) ** 0.5)
    return out


def _ours(base: Path, lora: Path, strength: float):
    with load_checkpoint([str(base)]) as b, load_checkpoint([str(lora)], read_markers=False) as lo:
        return analyse(b, [lo], strength, numbers=True)


PAIRS: list[tuple[str, str, dict[str, Any]]] = [
    *((kind, "wan", {"paths": ALL}) for kind in FORMATS),
    ("nvfp4", "wan", {"paths": ALL, "convention": "comfyui", "alpha": 4.0}),
    ("int8", "wan", {"paths": ALL, "kind": "loha"}),
    ("float8_e4m3fn", "wan", {"paths": ALL, "kind": "lokr"}),
    ("mxfp8", "wan", {"paths": ALL, "convention": "comfyui", "dora": True}),
    ("nvfp4", "wan", {"paths": ALL, "text_encoder": 2, "size": 0.01}),
    ("float8_e4m3fn", "wan", {"paths": ALL, "wrong_shape": "blocks.0.self_attn.k"}),
    ("nvfp4", "wan", {"paths": ALL, "convention": "diffusers-wan"}),
    ("nvfp4", "wan", {"paths": ALL, "convention": "bare"}),
    ("nvfp4", "wan", {"paths": ALL, "convention": "lycoris"}),
    ("float8_e4m3fn", "wan", {"paths": ["double_blocks.0.img_attn.qkv"]}),
    ("awq", "wan", {"paths": ALL}),
]


@pytest.mark.parametrize(
    ("kind", "family", "lora_kw"), PAIRS, ids=[f"{k}-{f}-{i}" for i, (k, f, _) in enumerate(PAIRS)]
)
def test_lora_against_comfyui(comfy, tmp_path: Path, caplog, kind, family, lora_kw) -> None:
    base, lora = tmp_path / "base.safetensors", tmp_path / "lora.safetensors"
    if kind == "awq":
        _base(base, "float8_e4m3fn", ALL, awq_at="blocks.0.self_attn.o")
    else:
        _base(base, kind, ALL)
    write_lora(lora, **lora_kw)
    cls = {"wan": "WAN21"}[family]
    targets, not_loaded, theirs = _comfy_side(comfy, base, lora, cls, 1.0, caplog)
    ours = _ours(base, lora, 1.0)
    f = ours.files[0]
    assert {r.target for r in ours.layers} == targets
    assert sorted(f.not_loaded) == sorted(not_loaded)
    assert f.unpredicted == []
    for r in ours.layers:
        t = theirs[r.target]
        assert r.outcome == t["outcome"], (r.target, t.get("why"))
        assert (r.problem is not None) == t["shape_error"], (r.target, r.problem)
        if "retention" not in t or r.figures is None or r.problem is not None:
            continue
        assert abs(r.figures["retention"] - t["retention"]) <= TOLERANCE["retention"]
        rel = abs(r.figures["added_error"] - t["added_error"]) / t["added_error"]
        assert rel <= TOLERANCE["added_error"], (r.target, r.figures, t)
        _same_requant(base, r, t)


def _same_requant(base: Path, r: Any, t: dict[str, Any]) -> None:
    """Our codec on ComfyUI's own W' gives ComfyUI's re-quantized weight: bit for bit where
    the computation is elementwise, within REQUANT_TOLERANCE where it sums."""
    with load_checkpoint([str(base)]) as ck:
        opts = layer_options(ck, r.layer, r.format)
    mine = requantize(t["patched"].numpy(), r.format, _seed(r.target), opts)
    theirs = t["deq"].numpy()
    if r.format in BIT_EXACT and not opts.get("convrot"):
        assert np.array_equal(mine, theirs), (r.target, np.abs(mine - theirs).max())
    else:
        rel = np.linalg.norm(mine - theirs) / np.linalg.norm(theirs)
        assert rel <= REQUANT_TOLERANCE[r.format], (r.target, rel)


def _seed(key: str) -> int:
    from quantcheck.numeric.stochastic import string_to_seed

    return string_to_seed(key)


def test_string_to_seed_is_comfyuis(comfy) -> None:
    for key in ("diffusion_model.blocks.0.self_attn.q.weight", "x", "é.weight"):
        assert _seed(key) == comfy.string_to_seed(key)


def test_generator_stream_is_torchs() -> None:
    from quantcheck.numeric.stochastic import torch_stream

    g = torch.Generator().manual_seed(1234567)
    bytes_ = torch.randint(0, 256, (500,), dtype=torch.uint8, generator=g).numpy()
    floats = torch.rand((700,), generator=g).numpy()
    raw_ = torch_stream(1234567, 1200)
    assert np.array_equal(bytes_, (raw_[:500] & 0xFF).astype(np.uint8))
    want = (raw_[500:] & 0xFFFFFF).astype(np.float32) * np.float32(2.0**-24)
    assert np.array_equal(floats, want)
