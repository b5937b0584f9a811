"""Where the example checkpoints live and which of them are clean (importable by any test)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

#: The example files that `quantcheck check` must accept (exit 0).
CLEAN_EXAMPLES = (
    "awq_w4a16.safetensors",
    "fp8_e4m3fn.safetensors",
    "int8_convrot.safetensors",
    "mxfp8.safetensors",
    "nvfp4.safetensors",
    "w4a4_convrot.safetensors",
    "w4a8_codebook.safetensors",
)
BROKEN_EXAMPLE = "broken_seeds.safetensors"
