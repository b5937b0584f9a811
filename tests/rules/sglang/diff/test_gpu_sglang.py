"""sglang's device gates, run from its own wheels on the CPU (issue 24): the config classes'
constructors and the quant methods the DiT linear builds (W4A8 / W4A4 / MXFP8 refuse MPS,
W4A8 below sm_80 and W4A4 below sm_75 at construction; ComfyNvfp4LinearMethod raises off
CUDA or below sm_100) with the platform's answers patched in (`current_platform.is_cuda`,
`is_mps`, `is_rocm`, ..., `get_device_capability`, what their code reads), against
`check --target sglang@V --gpu G`: a layer sglang refuses to build on the device must be
`refused` there, one it builds must not be (`make diff-sglang`; needs QUANTCHECK_DIFF_SGLANG=1).

What runs on the device after the build (which kernel: cutlass, Marlin, comfy-kitchen) is not
executed here: those verdicts stay [READ] / [ISSUE] / [GUESS] in `runtimes/sglang_gpu.py`, and
refusals tagged [ISSUE] or [GUESS] (a kernel that fails at its first forward, from a thread) are
counted as not provable here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

import pytest

from quantcheck.checking import check_paths
from quantcheck.gpus import expand_specs

from ...diff_cases import ROT16, layer_case
from ..loader_helpers import text_encoder_copy
from . import loader
from .loader import load_release
from .stages import load_layer
from .test_diff_sglang import trees  # noqa: F401 (the fixture)
from .test_stages import _config, _tensors

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_SGLANG") != "1",
    reason="set QUANTCHECK_DIFF_SGLANG=1 (make diff-sglang)",
)

#: one layer per format sglang's marker path builds
FILES = {
    "nvfp4": layer_case("nvfp4", n=128, k=64),  # scales unpadded: sglang's marker rule
    "fp8": layer_case("float8_e4m3fn", n=64, k=128),
    "int8-convrot": layer_case("int8_tensorwise", n=64, k=128, options=ROT16),
    "w4a8": layer_case("asym_w4a8_int8", n=64, k=256),
    "w4a4": layer_case("convrot_w4a4", n=64, k=256),
    "mxfp8": layer_case("mxfp8", n=128, k=128),  # unpadded scales: sglang's layout
}
#: the release each file is built with: 0.5.23 (the GPU rows' release), MXFP8 with 0.5.22
#: (0.5.23 stops every MXFP8 layer at weight load, QC615: not a device question)
RELEASE = {"mxfp8": "0.5.22"}
DEFAULT_RELEASE = "0.5.23"
#: every class of the table but DirectML (sglang has no such platform) and the cards
SPECS = [
    s.given
    for s in expand_specs(["all", "rtx4090", "b200", "mi300x", "rx7900xtx", "arc-a770"])
    if s.backend != "directml"
]
#: sglang's platform kind per quantcheck backend (multimodal_gen/runtime/platforms)
PLATFORM = {"cuda": "cuda", "rocm": "rocm", "xpu": "xpu", "mps": "mps", "cpu": "cpu"}


def _answer(value: bool) -> Any:
    """A platform method that answers `value`."""
    return lambda self, *a, **k: value


class DeviceCapability(NamedTuple):
    """What sglang's `get_device_capability()` returns (platforms/interface.py)."""

    major: int
    minor: int

    def to_int(self) -> int:
        return self.major * 10 + self.minor


@contextmanager
def platform(entry: dict[str, Any]) -> Iterator[None]:
    """sglang's `current_platform` (the loader's stub class) answering as the entry's device."""
    kind = PLATFORM[entry["backend"]]
    cc = entry.get("compute_capability")
    arch = entry.get("arch") or ""
    cap = None
    if cc:
        major, _, minor = str(cc).partition(".")
        cap = DeviceCapability(int(major), int(minor))
    elif arch:
        from ...comfyui.diff.gpu_stack import amd_capability

        cap = DeviceCapability(*amd_capability(arch))
    answers = {
        "is_cuda": kind == "cuda",
        "is_rocm": kind == "rocm",
        "is_hip": kind == "rocm",
        "is_cuda_alike": kind in ("cuda", "rocm"),
        "is_mps": kind == "mps",
        "is_xpu": kind == "xpu",
        "is_cpu": kind == "cpu",
    }
    with mock.patch.multiple(
        loader._Platform,
        create=True,
        get_device_capability=lambda self, *a, **k: cap,
        **{name: _answer(v) for name, v in answers.items()},
    ):
        yield


def test_sglang_device_gates_agree_with_quantcheck(
    trees: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ...comfyui.diff.gpu_files import layers_of

    agree = 0
    unprovable: list[str] = []
    disagree: list[str] = []
    for name, build in FILES.items():
        folder = tmp_path / name
        folder.mkdir()
        path, _ = build(folder)
        version = RELEASE.get(name, DEFAULT_RELEASE)
        key = f"sglang@{version}"
        # quantcheck judges the same layer in a text encoder, whose loader reads the markers
        # (the marker path run here); a DiT of no detected family is read by
        # --transformer-weights-path, which stops at QC631 before any device question
        judged = str(text_encoder_copy(Path(path), folder / "text_encoder.safetensors"))
        entries = check_paths([judged], target=key, gpus=expand_specs(SPECS)).target_status(key)
        mod = load_release(trees[version], stages=True)
        tensors = _tensors([path])
        for spec in SPECS:
            entry = entries["gpu"][spec]
            with platform(entry):
                try:  # the config classes' constructors hold the W4A8/W4A4/MXFP8 gates
                    config = _config(mod, [path], "markers")
                    refusal = ""
                except ValueError as exc:
                    config, refusal = None, f"layer build: config: {exc}"
                for layer in layers_of(path):
                    mine = {
                        s.removeprefix(layer.name + "."): v
                        for s, v in tensors.items()
                        if s.startswith(layer.name + ".") and not s.endswith(".comfy_quant")
                    }
                    real, why = (
                        ("fails", refusal)
                        if refusal
                        else load_layer(config, layer.name, layer.n, layer.k, mine)
                    )
                    ours = entry["execution"][layer.name]
                    # the gates raise ValueError in a constructor; a later build error (the
                    # stubbed srt parent of NVFP4's method has no create_weights) means the
                    # method was constructed: its gate passed
                    built = not (why.startswith("layer build") and "ValueError" in why)
                    if refusal:
                        built = False
                    refused = ours["mode"] == "refused"
                    line = (
                        f"{name} {spec}: sglang {real} ({why}); "
                        f"quantcheck {ours['mode']} ({ours['reason']})"
                    )
                    if refused and ours["reason"].startswith("QC"):
                        disagree.append(f"refused by a finding, not the device: {line}")
                    elif refused and not ours["reason"].startswith("[READ]"):
                        unprovable.append(line)  # a thread or a guess: not a build-time gate
                    elif built != refused:
                        agree += 1
                    else:
                        disagree.append(line)
    with capsys.disabled():
        print(
            f"\nsglang --gpu: {agree} agree, {len(disagree)} disagree, {len(unprovable)} "
            "refusals not provable at build time"
        )
        for line in unprovable[:5]:
            print("  not provable:", line)
    assert agree
    assert not disagree, "\n".join(disagree)
