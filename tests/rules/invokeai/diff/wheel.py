"""InvokeAI's wheel the differential tests run, pinned by SHA-256 (`consumer_wheels.py` fetches
and caches it), and the modules they execute of it."""

from __future__ import annotations

from pathlib import Path

from ...consumer_wheels import extract as _extract

VERSION = "6.14.2"
#: (wheel file name, sha256 as on PyPI, downloaded 2026-12-03)
WHEEL = (
    "invokeai-6.14.2-py3-none-any.whl",
    "7833fe4255d4d7ebe5083ee2170e6c041d91e88c39c27d0b8dfda17ecdf8ebe2",
)
#: what the tests execute of the wheel
MEMBERS = (
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
)


def extract(into: Path, *, download: bool = True) -> Path | None:
    """The executed modules under `into/invokeai-6.14.2/` (the tree root), or None."""
    return _extract("invokeai", VERSION, WHEEL, MEMBERS, into, download=download)
