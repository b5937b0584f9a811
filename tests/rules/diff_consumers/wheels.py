"""The InvokeAI and DiffSynth-Studio wheels the differential tests run, pinned by SHA-256.

`pip download --no-deps NAME==V` (pure-Python wheels) into a cache folder
(`QUANTCHECK_CONSUMER_WHEELS`, default ~/.cache/quantcheck/consumer-wheels); a wheel whose hash
differs from the pin is refused. Only the modules the tests execute are extracted.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from ..pinned_wheel import pinned_wheel

#: (project, version) -> (wheel file name, sha256 as on PyPI, downloaded 2026-12-03)
PINNED = {
    ("invokeai", "6.14.2"): (
        "invokeai-6.14.2-py3-none-any.whl",
        "7833fe4255d4d7ebe5083ee2170e6c041d91e88c39c27d0b8dfda17ecdf8ebe2",
    ),
    ("diffsynth", "2.1.12"): (
        "diffsynth-2.1.12-py3-none-any.whl",
        "399ed6012da0309982cfdce9e83a293f00b2f20621e4dde195658d54ff49394f",
    ),
}
#: what the tests execute of each wheel
MEMBERS = {
    "invokeai": (
        "invokeai/backend/model_manager/load/model_loaders/comfyui_state_dict_utils.py",
        # the LoRA patcher and what it executes (test_diff_lora.py)
        *(
            f"invokeai/backend/{m}.py"
            for m in (
                "patches/layer_patcher",
                "patches/model_patch_raw",
                "patches/pad_with_zeros",
                "patches/layers/base_layer_patch",
                "patches/layers/flux_control_lora_layer",
                "patches/layers/lora_layer",
                "patches/layers/lora_layer_base",
                "patches/layers/param_shape_utils",
                "util/calc_tensor_size",
                "util/fp8",
                "util/original_weights_storage",
            )
        ),
    ),
    "diffsynth": (
        "diffsynth/core/quant/base.py",
        "diffsynth/core/quant/backends/comfy_kitchen.py",
        "diffsynth/utils/lora/general.py",
    ),
}


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "quantcheck" / "consumer-wheels"
    return Path(os.environ.get("QUANTCHECK_CONSUMER_WHEELS", default))


def wheel(project: str, version: str, *, download: bool = True) -> Path | None:
    """The verified wheel (downloaded if missing and `download`), else None."""
    name, pin = PINNED[(project, version)]
    return pinned_wheel(cache_dir(), name, pin, f"{project}=={version}", download=download)


def extract(project: str, version: str, into: Path, *, download: bool = True) -> Path | None:
    """The project's executed modules under `into/<project>-<version>/` (the tree root)."""
    whl = wheel(project, version, download=download)
    if whl is None:
        return None
    root = into / f"{project}-{version}"
    members = MEMBERS[project]
    if not all((root / m).exists() for m in members):
        with zipfile.ZipFile(whl) as z:
            for m in members:
                z.extract(m, root)
    return root
