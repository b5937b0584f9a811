"""Test helpers: the committed reference-case folder, the README's mappers, typed comparison."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: sglang 0.5.23's reference cases, committed with the tests (see tests/data/README.md).
CASES_DIR = Path(__file__).resolve().parents[3] / "data" / "sglang-cases"

_STRIP = re.compile(r"^(?:model\.diffusion_model\.|diffusion_model\.)")


def cases_dir() -> Path:
    """`tests/data/sglang-cases/`; a missing folder fails the test that needs it."""
    if not (CASES_DIR / "cases.json").is_file():
        raise FileNotFoundError(f"sglang reference cases missing: {CASES_DIR / 'cases.json'}")
    return CASES_DIR


def strip_comfyui_prefix(prefix: str) -> str:
    """Remove one leading `model.diffusion_model.` or `diffusion_model.`."""
    return _STRIP.sub("", prefix, count=1)


def qwen_image21_split(markers: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Replace each `….img_mlp.gate_up` marker, in place, by `gate_layer` and `proj` copies."""
    result: dict[Any, dict[str, Any]] = {}
    for prefix, marker in markers.items():
        if isinstance(prefix, str) and prefix.endswith(".img_mlp.gate_up"):
            base = prefix[: -len("gate_up")]
            result[base + "gate_layer"] = dict(marker)
            result[base + "proj"] = dict(marker)
        else:
            result[prefix] = marker
    return result


def typed(value: Any) -> Any:
    """A comparable form keeping dict order and scalar types (`True` is not `1`)."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, repr(value))
