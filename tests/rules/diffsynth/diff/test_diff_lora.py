"""Differential test of DiffSynth-Studio 2.1.12's LoRA path (`make diff-consumers`):
`GeneralLoRALoader.get_name_dict` / `convert_state_dict` on LoRAs of each convention: the
module names it derives (what runtimes/diffsynth_lora.py says).

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ...consumer_wheels import required
from ...lora.pairs import write_lora
from ...lora.runtime_figures import ALL
from .loader import load_diffsynth_lora
from .wheel import VERSION, extract

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)


@pytest.fixture(scope="module")
def diffsynth(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = required("diffsynth", VERSION, extract(tmp_path_factory.mktemp("diffsynth")))
    return load_diffsynth_lora(root)


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
