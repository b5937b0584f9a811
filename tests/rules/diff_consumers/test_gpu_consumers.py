"""GPU differential tests (issue 24): DiffSynth-Studio 2.1.12's and InvokeAI 6.14.2's own code
(their pinned wheels), run on the CPU with each device's facts patched in (gpu.py), against
`check --target diffsynth|invokeai --gpu G` per layer and format, for every class of the GPU
table, the cards and stack variants, on every bundled example and generated file the runtime
loads (`make diff-consumers`). Skipped unless QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from quantcheck.checking import check_paths
from quantcheck.gpus import expand_specs

from ..diff_comfyui.gpu_cases import files
from ..diff_comfyui.gpu_compare import compare
from ..diff_comfyui.gpu_stack import stack_from_entry
from .loader import load_both

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

#: the `--gpu` values judged: every class, the cards issue 24 names, and the stacks that
#: change DiffSynth's kernels (CUDA 12.x: its own switch; Windows: no triton)
SPECS = [
    s.given
    for s in expand_specs(
        [
            "all",
            "rtx3090",
            "rtx4090",
            "rtx5090",
            "a100",
            "h100",
            "b200",
            "mi300x",
            "rx7900xtx",
            "arc-a770",
            "sm_75,cuda=12.8",
            "sm_80,cuda=12.8",
            "sm_89,cuda=12.8",
            "sm_89,cuda=12.8,os=windows",
            "sm_120,cuda=12.8",
        ]
    )
]
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
    mods = load_both(tmp_path_factory.mktemp("consumers-gpu"))
    judged = files(tmp_path_factory.mktemp("gpu-files"))
    gpus = expand_specs(SPECS)
    entries: dict[str, dict[str, Any]] = {}
    for target in ("diffsynth", "invokeai"):
        for name, path in judged.items():
            report = check_paths([path], target=target, gpus=gpus)
            status = report.target_status(target)
            if status["status"] != "fails":  # what the runtime loads at all
                entries.setdefault(target, {})[name] = status["gpu"]
    return {"mods": mods, "files": judged, "entries": entries}


def _allow(spec: str) -> dict[tuple[str, str, str], str]:
    head = spec.split(",")[0]
    return {(f, o, q): why for (h, f, o, q), why in ALLOW.items() if h == head}


def test_diffsynth_gpu_agrees_with_quantcheck(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from .gpu import diffsynth_state, diffsynth_verdicts

    mod = world["mods"]["diffsynth"]
    agree = allowed = 0
    disagree: list[str] = []
    untagged: list[str] = []
    states: dict[Any, Any] = {}
    for name, by_spec in world["entries"]["diffsynth"].items():
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
            f"{len(disagree)} disagree ({len(world['entries']['diffsynth'])} files x "
            f"{len(SPECS)} GPUs)"
        )
    assert agree > 0
    assert not disagree, f"{len(disagree)} disagreements:\n" + "\n".join(disagree)
    assert not untagged, f"{len(untagged)} read-only verdicts untagged:\n" + "\n".join(untagged)


def test_invokeai_dequantizes_at_load_on_every_device(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """What InvokeAI's own functions leave of each file it loads: BF16 weights (no quantized
    tensor, no scale), the bytes quantcheck's entry counts, on every GPU alike."""
    from .gpu import invokeai_held

    mod = world["mods"]["invokeai"]
    checked = 0
    for name, by_spec in world["entries"]["invokeai"].items():
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
