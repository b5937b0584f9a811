"""Differential test of InvokeAI 6.14.2's LoRA path (`make diff-consumers`): the base
dequantized by its own `_dequantize_comfyui_fp8(sd, bf16)`, the LoRA applied by
`LayerPatcher.apply_smart_model_patch` (direct patching, InvokeAI's LoRALayer and
ModelPatchRaw): the merged bf16 weight is `numeric/lora_requant.merge16`'s, and the figures
quantcheck reports for `invokeai` are those of InvokeAI's result.

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quantcheck.numeric.lora_patch import figures
from quantcheck.numeric.lora_requant import merge16

from ...consumer_wheels import required
from ...lora.runtime_figures import ALL, analysed, lora_delta, same_figures, wan_pair
from .loader import load_invokeai
from .lora_loader import load_invokeai_patcher, unload_invokeai
from .wheel import VERSION, extract

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)


@pytest.fixture(scope="module")
def invokeai(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("torch")
    root = required("invokeai", VERSION, extract(tmp_path_factory.mktemp("invokeai")))
    patcher = load_invokeai_patcher(root)
    patcher.utils = load_invokeai(root)
    yield patcher
    unload_invokeai()


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

    b, lo = wan_pair(tmp_path, fmt, size=size, alpha=alpha)
    sd = load_file(str(b))
    invokeai.utils._dequantize_comfyui_fp8(sd, torch.bfloat16)
    lora = load_file(str(lo))
    ours = {r.layer: r.runtimes["invokeai"] for r in analysed(b, lo, "invokeai", strength).layers}
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
        delta = lora_delta(lora, p, strength)
        # the arithmetic: InvokeAI's merged weight is merge16's, given its own base weight
        _, mine = merge16(base16, delta.astype(np.float32), "bf16")
        assert np.mean(mine == theirs) >= 0.999, (p, np.mean(mine == theirs))
        # the figures quantcheck reports are those of InvokeAI's result
        fig = figures(base16, delta.astype(np.float32), theirs, base16)
        same_figures(ours[p], fig, f"invokeai {fmt} {p}")
