"""Differential tests of the diffusers-name branches of ComfyUI's LoRA key map (@783545f6
`model_lora_keys_unet` with `comfy/utils.py`'s `flux_to_diffusers`, `mmdit_to_diffusers`,
`auraflow_to_diffusers`, `pixart_to_diffusers`, `krea2_to_diffusers`, `z_image_to_diffusers`,
and `lora_convert.convert_lora`'s BFL-control and USO conversions) against quantcheck's
(`rules/lora/diffusers.py`, `load.py`), on the family stand-ins of tests/rules/lora/families.py
(`make diff-comfyui`).

The stand-in model is test_diff_lora.py's: the base's keys under `diffusion_model.`, the
family's model class, and the `unet_config` ComfyUI's model object would carry (given with the
stand-in, the values model_detection reads from such a file). Compared per LoRA: the patch
dict's keys (a model key, a slice `(key, (0, offset, size))` of a fused weight, or `(key, None,
swap_scale_shift)`), the keys logged "lora key not loaded" (after convert_lora's renaming),
and per patched layer the figures of ComfyUI's own patch: `calculate_weight` with every patch
of that weight (each slice narrowed at its offset, the function applied) and the layer's
`requantize_from_float` with its seed. The key unpacking that turns a patch-dict key into
(key, offset, function) is `ModelPatcher.add_patches`' (comfy/model_patcher.py), done here.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.lora.analyse import analyse
from quantcheck.rules.lora.keymap import build_key_map
from quantcheck.rules.lora.load import load_lora

from ...lora.families import STANDINS, bfl_control_lora, family_base, family_lora, uso_lora
from .lora_loader import ComfyLora
from .real import Shell
from .test_diff_lora import TOLERANCE, StandIn, comfy  # noqa: F401 (comfy: the fixture)

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_COMFYUI") != "1",
    reason="set QUANTCHECK_DIFF_COMFYUI=1 (make diff-comfyui)",
)

#: (family, base format, LoRA prefix, extra modules the base lacks)
CASES = [
    *((fam, "float8_e4m3fn", pre, 1) for fam, s in STANDINS.items() for pre in s["prefixes"]),
    ("flux", "nvfp4", "transformer.", 0),
    ("flux", "int8_tensorwise", "transformer.", 0),
    ("lumina2", "mxfp8", "diffusion_model.", 0),
]


def _their_key(key: Any) -> Any:
    """A patch-dict key with its function named (quantcheck names swap_scale_shift "swap")."""
    if isinstance(key, tuple) and len(key) > 2:
        return (key[0], key[1], "swap" if key[2].__name__ == "swap_scale_shift" else key[2])
    return key


def _comfy(cl: ComfyLora, base: Path, lora: Path, family: str, caplog) -> Any:
    s = STANDINS[family]
    sd = cl.comfy.plumb(load_file(str(base)), {})
    model = StandIn(
        ["diffusion_model." + k for k in sd], getattr(cl.model_base, s["cls"]), s["config"]
    )
    key_map = cl.lora.model_lora_keys_unet(model, {})
    lora_sd = cl.lora_convert.convert_lora(load_file(str(lora)))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        patches = cl.lora.load_lora(lora_sd, key_map)
    not_loaded = {
        r.getMessage()[len("lora key not loaded: ") :]
        for r in caplog.records
        if r.getMessage().startswith("lora key not loaded: ")
    }
    return sd, patches, not_loaded


def _ours(base: Path, lora: Path) -> tuple[Any, Any]:
    with load_checkpoint([str(base)]) as b, load_checkpoint([str(lora)], read_markers=False) as lo:
        km = build_key_map(b.tensors, None, {n: t.shape for n, t in b.tensors.items()})
        loaded = load_lora({n: t.shape for n, t in lo.tensors.items()}, km.entries)
        a = analyse(b, [lo], numbers=True)
    return loaded, a


def _their_figures(cl: ComfyLora, sd: dict[str, Any], patches: dict[Any, Any]) -> dict:
    """model key -> ComfyUI's retention / added error of patching that weight with all its
    patches and re-quantizing it (layers the base lacks are skipped, as add_patches does)."""
    by_key: dict[str, list[Any]] = {}
    for key, adapter in patches.items():
        k, offset, fn = key, None, None
        if isinstance(key, tuple):  # ModelPatcher.add_patches' unpacking
            k, offset = key[0], key[1]
            fn = key[2] if len(key) > 2 else None
        by_key.setdefault(k, []).append((1.0, adapter, 1.0, offset, fn))
    out = {}
    qt = cl.comfy.quant_ops.QuantizedTensor
    for key, plist in by_key.items():
        prefix = key[len("diffusion_model.") : -len(".weight")]
        if prefix + ".weight" not in sd:
            continue
        own = {k: v for k, v in sd.items() if k.startswith(prefix + ".")}
        n, k = own[prefix + ".weight"].shape[0], _k(own, prefix)
        shell = Shell(n, k, cl.comfy.disabled)
        shell.comfy = cl.comfy
        shell._load_from_state_dict(own, prefix + ".", {}, True, [], [], [])
        weight = shell.weight
        if not isinstance(weight, qt):
            continue
        w = weight.to(torch.float32).dequantize()  # as patch_weight_to_device casts first
        patched = cl.lora.calculate_weight(plist, w.clone(), key)
        got = weight.requantize_from_float(
            patched.clone(),
            scale="recalculate",
            stochastic_rounding=cl.string_to_seed(key),
            inplace_ops=True,
        )
        got = got.dequantize().to(torch.float32)
        d = (patched - w).double().flatten()
        dd = float(d @ d)
        out[key] = {
            "retention": float((got - w).double().flatten() @ d) / dd,
            "added_error": float(((got - patched).double().norm() ** 2 / dd) ** 0.5),
        }
        slices = [p[3] for p in plist if p[3] is not None]
        if slices:  # how far the rows no slice patches moved
            keep = torch.ones(n, dtype=torch.bool)
            for _, start, size in slices:
                keep[start : start + size] = False
            moved = (got[keep] - w[keep]).double().norm()
            out[key]["untouched_error"] = float(moved) / dd**0.5
    return out


def _k(own: dict[str, Any], prefix: str) -> int:
    """The layer's logical K (a packed NVFP4 weight stores K / 2 bytes per row)."""
    import json

    marker = own.get(prefix + ".comfy_quant")
    fmt = json.loads(bytes(marker.tolist())).get("format") if marker is not None else ""
    k = own[prefix + ".weight"].shape[1]
    return k * 2 if fmt == "nvfp4" else k


@pytest.mark.parametrize(
    ("family", "fmt", "prefix", "extra"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{c[2] or 'bare'}" for c in CASES],
)
def test_diffusers_branch_against_comfyui(
    comfy,  # noqa: F811 (the fixture)
    tmp_path: Path,
    caplog,
    family: str,
    fmt: str,
    prefix: str,
    extra: int,
) -> None:
    base, lora = tmp_path / "base.safetensors", tmp_path / "lora.safetensors"
    family_base(base, family, fmt)
    family_lora(lora, family, prefix, extra=extra)
    sd, patches, not_loaded = _comfy(comfy, base, lora, family, caplog)
    loaded, a = _ours(base, lora)
    assert {_their_key(k) for k in patches} == set(loaded.patches)
    ours_nl = {conv for conv, orig in loaded.renamed.items() if orig in loaded.unmatched}
    assert ours_nl == not_loaded
    assert a.files[0].unpredicted == [] and a.family == family
    theirs = _their_figures(comfy, sd, patches)
    assert theirs, "no quantized layer patched"
    for r in a.layers:
        if r.target not in theirs:
            continue
        t = theirs[r.target]
        assert r.figures is not None, r.target
        assert abs(r.figures["retention"] - t["retention"]) <= TOLERANCE["retention"], (r.target,)
        rel = abs(r.figures["added_error"] - t["added_error"]) / t["added_error"]
        assert rel <= TOLERANCE["added_error"], (r.target, r.figures, t)
        if "untouched_error" in t:  # QC840: the rows a slice patch leaves alone
            want, got = t["untouched_error"], r.figures["untouched_error"]
            assert abs(got - want) <= TOLERANCE["added_error"] * max(want, 1.0), (r.target,)
            assert (got == 0) == (want == 0), (r.target, got, want)


@pytest.mark.parametrize("kind", ["bfl-control", "uso"])
def test_conversions_against_comfyui(
    comfy,  # noqa: F811 (the fixture)
    tmp_path: Path,
    caplog,
    kind: str,
) -> None:
    """convert_lora's BFL-control and USO renaming, then Flux's key map (USO's qkv_lora: the
    `linear1_qkv` slice of a single block's linear1)."""
    base, lora = tmp_path / "base.safetensors", tmp_path / "lora.safetensors"
    family_base(base, "flux", "float8_e4m3fn")
    (bfl_control_lora if kind == "bfl-control" else uso_lora)(lora)
    _, patches, not_loaded = _comfy(comfy, base, lora, "flux", caplog)
    loaded, a = _ours(base, lora)
    assert loaded.conversion == kind
    assert {_their_key(k) for k in patches} == set(loaded.patches)
    assert {conv for conv, orig in loaded.renamed.items() if orig in loaded.unmatched} == (
        not_loaded
    )
    assert a.files[0].unpredicted == []
