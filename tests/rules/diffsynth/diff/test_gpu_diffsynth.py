"""GPU differential test (issue 24): DiffSynth-Studio 2.1.12's own code (its pinned wheel),
run on the CPU with each device's facts patched in (gpu.py), against
`check --target diffsynth --gpu G` per layer and format, for every class of the GPU table, the
cards and stack variants (`gpu_cases.PORT_SPECS`), on every bundled example and generated file
it loads (`make diff-consumers`). Skipped unless QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ...comfyui.diff.gpu_cases import files, loaded_entries, port_specs
from ...comfyui.diff.gpu_compare import compare
from ...comfyui.diff.gpu_stack import stack_from_entry
from .loader import load

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

SPECS = port_specs()
_INT8_OFF_CUDA = (
    "[READ] off CUDA/ROCm, whether comfy-kitchen's eager int8_linear reaches a native "
    "torch._int_mm is not settled by their code (comfy-kitchen #92): the oracle calls eager off "
    "CUDA emulated, quantcheck native, both [READ]"
)
#: (device head, format, the oracle's mode, quantcheck's mode) -> why the two may differ
ALLOW = {
    (head, "int8_tensorwise", "emulated", "native"): _INT8_OFF_CUDA
    for head in ("mps", "xpu", "arc-a770", "directml")
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mod = load(tmp_path_factory.mktemp("diffsynth-gpu"))
    judged = files(tmp_path_factory.mktemp("gpu-files"))
    return {"mod": mod, "files": judged, "entries": loaded_entries("diffsynth", judged, SPECS)}


def _allow(spec: str) -> dict[tuple[str, str, str], str]:
    head = spec.split(",")[0]
    return {(f, o, q): why for (h, f, o, q), why in ALLOW.items() if h == head}


def test_diffsynth_gpu_agrees_with_quantcheck(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from .gpu import diffsynth_state, diffsynth_verdicts

    mod = world["mod"]
    agree = allowed = 0
    disagree: list[str] = []
    untagged: list[str] = []
    states: dict[Any, Any] = {}
    for name, by_spec in world["entries"].items():
        for spec in SPECS:
            entry = by_spec[spec]
            stack = stack_from_entry(entry)
            triton = entry["os"] != "windows"
            if (stack, triton) not in states:
                states[stack, triton] = diffsynth_state(mod, stack, triton=triton)
            verdicts = diffsynth_verdicts(mod, world["files"][name], stack, states[stack, triton])
            one = compare(verdicts, entry, _allow(spec), label=f"{name} {spec}")
            agree += one.agree
            allowed += len(one.allowed)
            disagree += one.disagree
            for line in one.read_only:
                layer = line[len(f"{name} {spec} ") :].split(": ", 1)[0]
                reason = entry["execution"].get(layer, {}).get("reason", "")
                if "[READ" not in reason and "[GUESS" not in reason:
                    untagged.append(f"{line} -- quantcheck: {reason}")
    with capsys.disabled():
        print(
            f"\ndiffsynth --gpu: {agree} agree, {allowed} allowed differences, "
            f"{len(disagree)} disagree ({len(world['entries'])} files x "
            f"{len(SPECS)} GPUs)"
        )
    assert agree > 0
    assert not disagree, f"{len(disagree)} disagreements:\n" + "\n".join(disagree)
    assert not untagged, f"{len(untagged)} read-only verdicts untagged:\n" + "\n".join(untagged)
