"""`quantcheck.compat.sglang` runs on the standard library alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ._st_writer import comfy_marker, write

_SCRIPT = """
import sys
import quantcheck.compat.sglang as sg
outcome = sg.simulate_load([sys.argv[1]])
assert outcome.ok and outcome.config_class == "ComfyFp8Config", outcome
heavy = sorted(m for m in ("numpy", "torch", "safetensors", "ml_dtypes") if m in sys.modules)
print(",".join(heavy))
"""


def test_no_numpy_torch_or_safetensors(tmp_path: Path) -> None:
    path = write(
        tmp_path / "fp8.safetensors",
        [
            ("a.weight", "F8_E4M3", [2, 2]),
            ("a.weight_scale", "F32", []),
            comfy_marker("a", {"format": "float8_e4m3fn"}),
        ],
    )
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
