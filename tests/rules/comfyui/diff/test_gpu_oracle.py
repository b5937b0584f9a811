"""GPU differential tests (issue 24 item 5): ComfyUI's own device gates and layer forward
(ops.py / quant_ops.py @0271a469, model_management.py / main.py / cli_args.py @783545f6) and
comfy-kitchen 0.2.40's own backend choice, run on the CPU with each GPU class's facts patched
in (gpu_oracle.py), against `quantcheck check --target comfyui@0271a469 --gpu G` per layer and
per format, for every class of quantcheck's GPU table, the cards and stack variants issue 24
names, every bundled example and the generated files of gpu_cases.py (`make diff-comfyui`).

Skipped unless QUANTCHECK_DIFF_COMFYUI=1, and skipped (one line saying what is missing) when the
ComfyUI tree lacks the GPU oracle's files (source.py GPU_PINS); they are verified before use.
Differences documented as allowed are in `ALLOW` with their reasons; every other difference
fails, naming both sides' reasons.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from .gpu_cases import files, specs
from .gpu_run import Oracles, quantcheck_json, run_spec
from .source import gpu_missing, tree, verify_gpu

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_COMFYUI") != "1",
    reason="set QUANTCHECK_DIFF_COMFYUI=1 (make diff-comfyui)",
)

_INT8_OFF_CUDA = (
    "[READ] off CUDA/ROCm, whether torch._int_mm runs natively is not settled by their code "
    "(comfy-kitchen #92: eager int8_linear advertised on MPS, torch._int_mm CUDA-only); the "
    "oracle calls eager off CUDA emulated, quantcheck native"
)
_NVFP4_SHAPE = (
    "[READ] comfy-kitchen's registry accepts N=40 for scaled_mm_nvfp4 (its constraints check "
    "only K); whether cuBLASLt / torch scaled_mm then run it or raise into the layout's "
    "dequantize fallback is a device-only question (benchmarks/gpu_check.py)"
)
#: (spec head or "*", format, the oracle's mode, quantcheck's mode) -> why the two may differ.
ALLOW: dict[tuple[str, str, str, str], str] = {
    ("mps", "int8_tensorwise", "emulated", "native"): _INT8_OFF_CUDA,
    ("mps", "asym_w4a8_int8", "emulated", "native"): _INT8_OFF_CUDA,
    ("*", "nvfp4", "native", "emulated"): _NVFP4_SHAPE,
}
#: Disagreements found and reported (DISAGREEMENTS.md), by (file, format, ComfyUI's mode,
#: quantcheck's mode), with the upstream line that decides. quantcheck is wrong in each: when
#: it is fixed the entry must go (test_known_disagreements_are_still_there says so).
KNOWN: dict[tuple[str, str, str, str], str] = {}
SPECS = specs()


def known(line: str) -> tuple[str, str, str, str] | None:
    """The `KNOWN` entry a disagreement line is, or None."""
    for key in KNOWN:
        name, fmt, ours, theirs = key
        as_layer = f"({fmt}): ComfyUI {ours} " in line and f"; quantcheck {theirs} (" in line
        as_format = f"format {fmt}: ComfyUI {ours}, quantcheck {theirs}" in line
        if line.startswith(name + " ") and (as_layer or as_format):
            return key
    return None


def allowed_for(spec: str, name: str) -> dict[tuple[str, str, str], str]:
    """The `ALLOW` entries for one spec and file (the NVFP4 shape entries only for the files
    whose N is not a multiple of 16)."""
    head = spec.split(",")[0]
    return {
        (fmt, ours, theirs): why
        for (where, fmt, ours, theirs), why in ALLOW.items()
        if where in ("*", head) and (fmt != "nvfp4" or "not-16" in name)
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tree()
    if root is None:
        pytest.skip("no ComfyUI source (QUANTCHECK_COMFYUI_SRC unset and no git fetch)")
    missing = gpu_missing(root)
    if missing:
        pytest.skip(f"the ComfyUI tree {root} lacks the GPU oracle's files: {', '.join(missing)}")
    verify_gpu(root)
    judged = files(tmp_path_factory.mktemp("gpu"))
    entries = {name: quantcheck_json(path, SPECS) for name, path in judged.items()}
    return {"oracles": Oracles(root), "files": judged, "entries": entries, "known_seen": set()}


@pytest.mark.parametrize("spec", SPECS)
def test_comfyui_gpu_agrees_with_quantcheck(spec: str, world: dict[str, Any]) -> None:
    agree = allowed = 0
    disagree: list[str] = []
    untagged: list[str] = []  # the oracle read, quantcheck's reason does not say [READ]
    for name, path in world["files"].items():
        one = run_spec(
            world["oracles"],
            {name: path},
            world["entries"],
            spec,
            allowed_for(spec, name),
        )
        agree += one.agree
        allowed += len(one.allowed)
        disagree += one.disagree
        entry = world["entries"][name].get(spec, {})
        untagged += [x for x in one.read_only if not read_tagged(entry, x, f"{name} {spec}")]
    assert agree > 0
    world["specs_run"] = world.get("specs_run", 0) + 1
    tally = world.setdefault("tally", [0, 0, 0])
    tally[0] += agree
    tally[1] += allowed
    tally[2] += len(disagree)
    new = [line for line in disagree if known(line) is None]
    world["known_seen"].update(key for line in disagree if (key := known(line)) is not None)
    assert not new, f"{len(new)} disagreements on {spec}:\n" + "\n".join(new)
    assert not untagged, f"{len(untagged)} verdicts the oracle only read, reason untagged:\n" + (
        "\n".join(untagged)
    )


def read_tagged(entry: dict[str, Any], line: str, label: str) -> bool:
    """Whether quantcheck's reason for the layer of a read-only oracle line (`LABEL LAYER:
    why`) says so: [READ] or [GUESS]."""
    layer = line[len(label) + 1 :].split(": ", 1)[0]
    reason = entry.get("execution", {}).get(layer, {}).get("reason", "")
    return "[READ" in reason or "[GUESS" in reason


def test_known_disagreements_are_still_there(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """After the per-spec tests (file order): a KNOWN entry no comparison matched is fixed."""
    if not world.get("specs_run"):
        pytest.skip("the per-spec comparisons did not run")
    agree, allowed, disagree = world["tally"]
    with capsys.disabled():
        print(
            f"\ncomfyui --gpu: {agree} layer and format verdicts agree, {allowed} allowed "
            f"differences, {disagree} disagreements ({world['specs_run']} --gpu values x "
            f"{len(world['files'])} files)"
        )
    stale = [key for key in KNOWN if key not in world["known_seen"]]
    assert not stale, f"fixed in quantcheck, remove from KNOWN: {stale}"


def _oracle(world: dict[str, Any], stack: Any) -> Any:
    return world["oracles"].get(stack)


def _mode_of(world: dict[str, Any], stack: Any, case: str) -> set[str]:
    """The oracle's modes for the layers of one generated file on `stack`."""
    from .gpu_run import judge_file

    verdicts = judge_file(_oracle(world, stack), world["files"][case], stack)
    return {v.mode for _fmt, v in verdicts.values()}


def test_the_switches_and_loaders_issue_24_measured(world: dict[str, Any]) -> None:
    """Cells issue 24 reports as measured, re-run here: what ComfyUI's switches and loaders do
    that quantcheck's `--gpu` grammar has no word for (`--supports-fp8-compute`,
    `--disable-dynamic-vram`), and the stack variants."""
    from dataclasses import replace

    from .gpu_stack import CARDS

    ada, ampere, b200 = CARDS["rtx4090"], CARDS["rtx3090"], CARDS["b200"]
    assert {"nvfp4", "mxfp8"} == _oracle(world, ada).gate().disabled
    forced = replace(ampere, fp8_flag=True)  # --supports-fp8-compute opens FP8 on sm_86
    assert "float8_e4m3fn" not in _oracle(world, forced).gate().disabled
    assert "float8_e4m3fn" in _oracle(world, ampere).gate().disabled
    # CUDA 12.8: quant_ops switches comfy-kitchen's CUDA backend off
    assert not _oracle(world, replace(ada, cuda="12.8")).gate().backends["cuda"]
    assert _mode_of(world, replace(ada, cuda="12.8"), "w4a4") == {"emulated"}
    assert _mode_of(world, replace(ada, cuda="12.8"), "int8-rowwise") == {"native"}
    # MXFP8 with E8M0 scales: refused by the DynamicVRAM loader, runs without it
    assert _mode_of(world, b200, "mxfp8-e8m0") == {"refused"}
    assert _mode_of(world, replace(b200, dynamic_vram=False), "mxfp8-e8m0") == {"native"}
    # AWQ: comfy-kitchen's CUDA kernel from sm_80 (batch-dependent), eager below
    assert _mode_of(world, CARDS["a100"], "awq") == {"depends"}
    assert _mode_of(world, CARDS["t4"], "awq") == {"emulated"}
    # INT8 with an F16 scale: the CUDA backend's constraint refuses it, eager _int_mm runs it
    oracle = _oracle(world, ada)
    from .gpu_files import layers_of

    layer = layers_of(world["files"]["int8-f16-scale"])[0]
    assert [(c.op, c.backend) for c in oracle.layer(layer.tensors, layer.n, layer.k).calls] == [
        ("int8_linear", "eager")
    ]
    layer = layers_of(world["files"]["int8-rowwise"])[0]
    assert [(c.op, c.backend) for c in oracle.layer(layer.tensors, layer.n, layer.k).calls] == [
        ("int8_linear", "cuda")
    ]


def test_layouts_min_sm_under_each_class(world: dict[str, Any]) -> None:
    """comfy-kitchen's own `supports_fast_matmul()` per layout (MIN_SM_VERSION) with each
    class's capability patched in: FP8 from sm_89, NVFP4 and MXFP8 from sm_100, INT8 and
    ConvRot W4A4 from sm_75, W4A8 from sm_80, AWQ always; nothing off CUDA."""
    from .gpu_stack import CARDS

    want = {
        "t4": {"TensorWiseINT8Layout", "TensorCoreConvRotW4A4Layout"},
        "a100": {"TensorWiseINT8Layout", "TensorCoreConvRotW4A4Layout", "AsymW4A8Int8Layout"},
        "rtx4090": {
            "TensorCoreFP8Layout",
            "TensorWiseINT8Layout",
            "TensorCoreConvRotW4A4Layout",
            "AsymW4A8Int8Layout",
        },
    }
    for name, fast in want.items():
        got = _oracle(world, CARDS[name]).fast_matmul
        assert {k for k, v in got.items() if v} == fast | {"TensorCoreAWQW4A16Layout"}, name
    assert all(_oracle(world, CARDS["b200"]).fast_matmul.values())
    assert _oracle(world, CARDS["mps"]).fast_matmul == {
        k: k == "TensorCoreAWQW4A16Layout" for k in _oracle(world, CARDS["mps"]).fast_matmul
    }
