"""Differential tests of the consumers' LoRA paths (`make diff-consumers`): their own code on
generated base/LoRA pairs against `quantcheck lora`'s outcomes and figures.

- InvokeAI 6.14.2: the base dequantized by its own `_dequantize_comfyui_fp8(sd, bf16)`, the
  LoRA applied by `LayerPatcher.apply_smart_model_patch` (direct patching, InvokeAI's
  LoRALayer and ModelPatchRaw): the merged bf16 weight is `numeric/lora_requant.merge16`'s,
  and the figures quantcheck reports for `invokeai` are those of InvokeAI's result.
- DiffSynth-Studio 2.1.12: `GeneralLoRALoader.get_name_dict` / `convert_state_dict` on LoRAs
  of each convention: the module names it derives (what runtimes/diffsynth_lora.py says).
- SD.Next d11a619: SDNQ's `quantize_weight` (+ `pack_float` / `unpack_float` for FP4, its
  Hadamard rotation for ConvRot INT8) is `numeric/lora_requant.sdnq_requant`, and the figures
  quantcheck reports for `sdnext` are those of SDNQ's re-quantization (sdnext.py fetches the
  source).

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.numeric.lora_patch import figures
from quantcheck.numeric.lora_requant import merge16, sdnq_requant
from quantcheck.rules.lora.analyse import analyse

from ..lora.pairs import WAN_LAYERS, wan_base, write_lora
from .loader import load_invokeai
from .lora_loader import load_diffsynth_lora, load_invokeai_patcher, unload_invokeai
from .sdnext import load_sdnq, tree
from .wheels import extract

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

ALL = [f"blocks.0.{n}" for n in WAN_LAYERS]
#: retention: absolute; added error: relative (the delta's float32 product order differs)
TOLERANCE = {"retention": 0.02, "added_error": 0.03}


@pytest.fixture(scope="module")
def invokeai(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("torch")
    root = extract("invokeai", "6.14.2", tmp_path_factory.mktemp("invokeai"))
    if root is None:
        pytest.fail("could not download invokeai==6.14.2 (pip download --no-deps)")
    patcher = load_invokeai_patcher(root)
    patcher.utils = load_invokeai(root)
    yield patcher
    unload_invokeai()


@pytest.fixture(scope="module")
def diffsynth(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = extract("diffsynth", "2.1.12", tmp_path_factory.mktemp("diffsynth"))
    if root is None:
        pytest.fail("could not download diffsynth==2.1.12 (pip download --no-deps)")
    return load_diffsynth_lora(root)


@pytest.fixture(scope="module")
def sdnq() -> Any:
    pytest.importorskip("torch")
    root = tree()
    if root is None:
        pytest.fail("no SD.Next source: set QUANTCHECK_SDNEXT_SRC or let git fetch d11a619")
    yield load_sdnq(root)
    for name in [n for n in sys.modules if n == "modules" or n.startswith("modules.")]:
        del sys.modules[name]


def _pair(tmp: Path, fmt: str, **lora: Any) -> tuple[Path, Path]:
    b, lo = tmp / "base.safetensors", tmp / "lora.safetensors"
    wan_base(b, fmt)
    write_lora(lo, ALL, **lora)
    return b, lo


def _ours(b: Path, lo: Path, runtime: str, strength: float = 1.0) -> Any:
    with load_checkpoint([str(b)]) as base, load_checkpoint([str(lo)], read_markers=False) as lora:
        return analyse(base, [lora], strength, numbers=True, runtimes=(runtime,))


def _delta(lora: dict[str, Any], p: str, strength: float) -> np.ndarray:
    """s·ΔW of kohya module `p`, in float64 (the reference both sides approximate)."""
    x = "lora_unet_" + p.replace(".", "_")
    up = lora[x + ".lora_up.weight"].double().numpy()
    down = lora[x + ".lora_down.weight"].double().numpy()
    alpha = lora.get(x + ".alpha")
    scale = float(alpha) / down.shape[0] if alpha is not None else 1.0
    return up @ down * scale * strength


def _close(ours: dict[str, Any], theirs: dict[str, float], what: str) -> None:
    assert abs(ours["retention"] - theirs["retention"]) <= TOLERANCE["retention"], (
        what,
        ours,
        theirs,
    )
    rel = abs(ours["added_error"] - theirs["added_error"]) / max(theirs["added_error"], 1e-12)
    assert rel <= TOLERANCE["added_error"], (what, ours, theirs)


@pytest.mark.parametrize(
    ("fmt", "size", "alpha", "strength"),
    [
        ("float8_e4m3fn", 0.05, None, 1.0),
        ("float8_e4m3fn", 0.0003, 4.0, 0.8),
        ("int8_tensorwise", 0.001, None, 1.0),
    ],
)
def test_invokeai_direct_patch_is_a_bf16_merge(
    invokeai, tmp_path: Path, fmt: str, size: float, alpha: float | None, strength: float
) -> None:
    import torch
    from safetensors.torch import load_file

    b, lo = _pair(tmp_path, fmt, size=size, alpha=alpha)
    sd = load_file(str(b))
    invokeai.utils._dequantize_comfyui_fp8(sd, torch.bfloat16)
    lora = load_file(str(lo))
    ours = {r.layer: r.runtimes["invokeai"] for r in _ours(b, lo, "invokeai", strength).layers}
    for p in ALL:
        w = sd[p + ".weight"]
        assert w.dtype == torch.bfloat16
        model = torch.nn.Module()
        model.layer = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=torch.bfloat16)
        model.layer.weight.data = w.clone()
        x = "lora_unet_" + p.replace(".", "_")
        layer = invokeai.LoRALayer(
            up=lora[x + ".lora_up.weight"],
            mid=None,
            down=lora[x + ".lora_down.weight"],
            alpha=lora.get(x + ".alpha"),
            bias=None,
        )
        invokeai.LayerPatcher.apply_smart_model_patch(
            model=model,
            prefix="",
            patch=invokeai.ModelPatchRaw({"layer": layer}),
            patch_weight=strength,
            original_weights=invokeai.OriginalWeightsStorage(),
            original_modules={},
            dtype=torch.bfloat16,
            force_direct_patching=True,
            force_sidecar_patching=False,
        )
        theirs = model.layer.weight.detach().float().numpy()
        base16 = w.float().numpy()
        delta = _delta(lora, p, strength)
        # the arithmetic: InvokeAI's merged weight is merge16's, given its own base weight
        _, mine = merge16(base16, delta.astype(np.float32), "bf16")
        assert np.mean(mine == theirs) >= 0.999, (p, np.mean(mine == theirs))
        # the figures quantcheck reports are those of InvokeAI's result
        fig = figures(base16, delta.astype(np.float32), theirs, base16)
        _close(ours[p], fig, f"invokeai {fmt} {p}")


@pytest.mark.parametrize(
    ("convention", "want"),
    [
        ("kohya", "lora_unet_blocks_0_self_attn_q"),
        ("comfyui", "blocks.0.self_attn.q"),
        ("bare", "blocks.0.self_attn.q"),
        ("peft", "base_model.model.blocks.0.self_attn.q"),
    ],
)
def test_diffsynth_module_names(diffsynth, tmp_path: Path, convention: str, want: str) -> None:
    """What runtimes/diffsynth_lora.py says of its keys: the module name is the key before
    lora_up/lora_B, `diffusion_model.` dropped; kohya underscore names stay one undotted name
    (no module has it: the LoRA is skipped); alpha is folded into the down factor."""
    from safetensors.torch import load_file

    lo = tmp_path / "lora.safetensors"
    write_lora(lo, ALL[:1], convention=convention, alpha=4.0)
    state = load_file(str(lo))
    names = diffsynth.GeneralLoRALoader().get_name_dict(state)
    assert list(names) == [want]
    converted = diffsynth.GeneralLoRALoader().convert_state_dict(state)
    down = next(v for k, v in state.items() if "down" in k or "lora_A" in k)
    assert np.allclose(converted[want + ".lora_A.weight"].numpy(), down.numpy() * 4.0 / 8)


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("int8_tensorwise", {}),
        ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 64}),
        ("float8_e4m3fn", {}),
        ("nvfp4", {}),
    ],
)
def test_sdnq_requant_is_sdnexts(sdnq, fmt: str, options: dict[str, Any]) -> None:
    """SDNQ's quantize_weight (stochastic rounding off, as SD.Next's LoRA merge calls it) and
    sdnq_requant give the same weight: bit for bit, within float rounding where SD.Next
    rotates (ConvRot)."""
    import torch

    rng = np.random.default_rng(7)
    w = (rng.standard_normal((64, 256)) * 0.02).astype(np.float32)
    w[3, 5] = 0.3  # a row with an outlier: its scale differs from the others
    t = torch.from_numpy(w.copy())
    qu, pf = sdnq.quant_utils, sdnq.packed_float
    if fmt == "nvfp4":
        q, s, _ = qu.quantize_weight(t.unflatten(-1, (16, 16)), -1, "float4_e2m1fn")
        q = pf.unpack_float(pf.pack_float(q, "float4_e2m1fn"), "float4_e2m1fn", q.shape)
        theirs = (q.float() * s).reshape(64, 256).numpy()
    elif options.get("convrot"):
        g = options["convrot_groupsize"]
        rot, _, _ = qu.apply_hadamard(t, group_size=g, layer_class_name="Linear")
        q, s, _ = qu.quantize_weight(rot, -1, "int8")
        h = qu.get_hadamard(g, dtype=torch.float32, device="cpu")
        theirs = qu.rotate_hadamard(q.float() * s, group_size=g, hadamard=h).numpy()
    else:
        sd_fmt = {"int8_tensorwise": "int8", "float8_e4m3fn": "float8_e4m3fn"}[fmt]
        q, s, _ = qu.quantize_weight(t, -1, sd_fmt)
        theirs = (q.float() * s).numpy()
    mine = sdnq_requant(w, fmt, options)
    if options.get("convrot"):
        assert np.linalg.norm(mine - theirs) / np.linalg.norm(theirs) <= 1e-6
    else:
        assert np.array_equal(mine, theirs), np.abs(mine - theirs).max()


def test_sdnq_fp4_rounding_on_random_values(sdnq) -> None:
    import torch

    from quantcheck.numeric.lora_requant import _e2m1

    y = torch.from_numpy(np.random.default_rng(3).uniform(-6, 6, 100_000).astype(np.float32))
    pf = sdnq.packed_float
    theirs = pf.unpack_float(pf.pack_float(y, "float4_e2m1fn"), "float4_e2m1fn", y.shape)
    assert np.array_equal(_e2m1(y.numpy()), theirs.numpy())


@pytest.mark.parametrize(("fmt", "size"), [("nvfp4", 0.01), ("int8_tensorwise", 0.003)])
def test_sdnext_figures_are_sdnqs(sdnq, tmp_path: Path, fmt: str, size: float) -> None:
    """The figures quantcheck reports for `sdnext` are those of SDNQ's own re-quantization of
    W + s·ΔW (W: the layer as SD.Next adopts it, bit-exact from the file)."""
    import torch

    b, lo = _pair(tmp_path, fmt, size=size)
    a = _ours(b, lo, "sdnext")
    qu, pf = sdnq.quant_utils, sdnq.packed_float

    def requant(x: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(x.copy())
        if fmt == "nvfp4":
            groups = t.unflatten(-1, (x.shape[1] // 16, 16))
            q, s, _ = qu.quantize_weight(groups, -1, "float4_e2m1fn")
            q = pf.unpack_float(pf.pack_float(q, "float4_e2m1fn"), "float4_e2m1fn", q.shape)
            return (q.float() * s).reshape(x.shape).numpy()
        q, s, _ = qu.quantize_weight(t, -1, "int8")
        return (q.float() * s).numpy()

    with load_checkpoint([str(b)]) as base:
        from safetensors.torch import load_file

        lora = load_file(str(lo))
        for r in a.layers:
            w = base.layer(r.layer).dequantize(shape=r.shape)
            d = _delta(lora, r.layer, 1.0).astype(np.float32)
            fig = figures(w, d, requant(w + d), requant(w))
            _close(r.runtimes["sdnext"], fig, f"sdnext {fmt} {r.layer}")
