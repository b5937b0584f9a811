"""GPU differential test (issue 24): InvokeAI 6.14.2's own code (its pinned wheel) on every
bundled example and generated file it loads, against `check --target invokeai --gpu G` for
every class of the GPU table and the cards and stack variants (`gpu_cases.PORT_SPECS`): it
dequantizes at load on every device (`make diff-consumers`). Skipped unless
QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ...comfyui.diff.gpu_cases import files, loaded_entries, port_specs
from .loader import load

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

SPECS = port_specs()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mod = load(tmp_path_factory.mktemp("invokeai-gpu"))
    judged = files(tmp_path_factory.mktemp("gpu-files"))
    return {"mod": mod, "files": judged, "entries": loaded_entries("invokeai", judged, SPECS)}


def test_invokeai_dequantizes_at_load_on_every_device(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """What InvokeAI's own functions leave of each file it loads: BF16 weights (no quantized
    tensor, no scale), the bytes quantcheck's entry counts, on every GPU alike."""
    from .gpu import invokeai_held

    mod = world["mod"]
    checked = 0
    for name, by_spec in world["entries"].items():
        held, dtypes = invokeai_held(mod, world["files"][name])
        assert dtypes <= {"torch.bfloat16"}, (name, dtypes)
        for spec in SPECS:
            entry = by_spec[spec]
            modes = {e["mode"] for e in entry["execution"].values()}
            assert modes <= {"emulated"}, (name, spec, modes)
            assert entry["weight_bytes"] == held, (name, spec, entry["weight_bytes"], held)
            assert entry["peak_extra_bytes"] == 0, (name, spec)
            checked += 1
    with capsys.disabled():
        print(f"\ninvokeai --gpu: {checked} entries agree with its dequantization at load")
    assert checked
