"""Differential tests past the marker inspector (`make diff-sglang`, issue 20 items 13-17):
each release's own layer build, weight load and loaders (`stages.py`) against quantcheck's
verdict for that release. Skipped unless QUANTCHECK_DIFF_SGLANG=1 (the pinned wheels)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths

from ..._build import (
    INT8_CONVROT,
    W4A8,
    Build,
    P,
    file,
    fp8,
    header_meta,
    int8,
    marker,
    mxfp8,
    nvfp4,
    t,
    w4a8,
)
from .loader import load_release
from .real import later_only, reader_status
from .stages import h3_outcome, load_layer, override_outcome
from .test_diff_sglang import CASES, RELEASES, trees  # noqa: F401 (trees: the fixture)

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_SGLANG") != "1",
    reason="set QUANTCHECK_DIFF_SGLANG=1 (make diff-sglang)",
)

FC1 = "blocks.0.mlp.fc1"
FP8_MARK = {"format": "float8_e4m3fn"}
INSPECTED = tuple(r for r in RELEASES if r != "0.5.18")  # 0.5.18 has no marker inspector


def _mxfp8_e8m0() -> list[Any]:
    return [*mxfp8()[:1], t(f"{P}.weight_scale", "F8_E8M0", (128, 4), 120), *mxfp8()[2:]]


def _mxfp8_padded() -> list[Any]:
    """comfy-kitchen's padded MXFP8 layout: the scale padded to (roundup(N,128),
    roundup(K/32,4)) beside a [128, 224] weight."""
    return [
        t(f"{P}.weight", "F8_E4M3", (128, 224)),
        t(f"{P}.weight_scale", "U8", (128, 8), 127),
        marker(P, {"format": "mxfp8"}),
    ]


#: name -> (file, reader, {layer prefix: logical [N, K]}); reader "markers" builds the
#: release's marker config (inspector + resolver), "header" its header-path config
#: (get_quant_config_from_safetensors_metadata: the whole-model Fp8Config)
STAGE_CASES: dict[str, tuple[Build, str, dict[str, tuple[int, int]]]] = {
    "mxfp8": (file(mxfp8), "markers", {P: (128, 128)}),
    "mxfp8-e8m0-scales": (file(_mxfp8_e8m0), "markers", {P: (128, 128)}),
    "mxfp8-padded-scales": (file(_mxfp8_padded), "markers", {P: (128, 224)}),
    "fp8-per-tensor": (file(fp8), "markers", {P: (64, 64)}),
    "fp8-row-scale": (file(lambda: fp8(scale=("F32", (64, 1)))), "markers", {P: (64, 64)}),
    "w4a8-group-24": (
        file(lambda: w4a8(k=96, g=24, mark={**W4A8, "group_size": 24})),
        "markers",
        {P: (32, 96)},
    ),
    "w4a8": (file(w4a8), "markers", {P: (32, 64)}),
    "w4a8-convrot-group-32": (
        file(lambda: w4a8(mark={**W4A8, "convrot_groupsize": 32})),
        "markers",
        {P: (32, 64)},
    ),
    "header-fp8-plus-row-int8": (
        file(lambda: [*fp8(), *int8(FC1)], header_meta({P: FP8_MARK, FC1: INT8_CONVROT})),
        "header",
        {P: (64, 64), FC1: (64, 64)},
    ),
    "header-fp8-plus-scalar-int8": (
        file(
            lambda: [*fp8(), *int8(FC1, scale=("F32", ()))],
            header_meta({P: FP8_MARK, FC1: INT8_CONVROT}),
        ),
        "header",
        {P: (64, 64), FC1: (64, 64)},
    ),
    "header-fp8-plus-bf16-scalar": (
        file(lambda: [*fp8(), *fp8(FC1, weight="BF16")], header_meta({P: FP8_MARK})),
        "header",
        {P: (64, 64), FC1: (64, 64)},
    ),
    "header-fp8-row-scale": (
        file(lambda: fp8(scale=("F32", (64, 1))), header_meta({P: FP8_MARK})),
        "header",
        {P: (64, 64)},
    ),
    "header-fp8-plus-nvfp4": (
        file(lambda: [*fp8(), *nvfp4(FC1)], header_meta({P: FP8_MARK})),
        "header",
        {P: (64, 64), FC1: (128, 64)},
    ),
}

#: (case, release) where quantcheck's status knowingly differs from the stage outcome, with
#: the outcome the release's code gives (asserted, so a change shows) and why
KNOWN: dict[tuple[str, str], tuple[str, str]] = {}


def _built(tmp_path: Path, name: str, build: Build) -> tuple[Path, list[str]]:
    """The case's folder and its files."""
    folder = tmp_path / name
    folder.mkdir()
    return folder, [str(p) for p in build(folder)]


def _rank(status: str) -> int:
    return {"ok": 0, "degraded": 1, "fails": 2}[status]


def _tensors(paths: list[str]) -> dict[str, Any]:
    from safetensors.torch import load_file

    out: dict[str, Any] = {}
    for p in paths:
        out.update(load_file(p))
    return out


def _config(mod: Any, paths: list[str], reader: str) -> Any:
    if reader == "header":
        return mod.get_quant_config_from_safetensors_metadata(paths[0])
    return mod.resolve_comfy_checkpoint_quantization(mod.inspect_comfy_quant_markers(paths))


def _stage_outcome(
    mod: Any, paths: list[str], reader: str, layers: dict[str, tuple[int, int]]
) -> tuple[str, str]:
    """The worst layer outcome (layer build, weight load) under the release's config."""
    config = _config(mod, paths, reader)
    tensors = _tensors(paths)
    worst = ("ok", "")
    for i, (prefix, (n, k)) in enumerate(layers.items()):
        mine = {
            name.removeprefix(prefix + "."): v
            for name, v in tensors.items()
            if name.startswith(prefix + ".") and not name.endswith(".comfy_quant")
        }
        status, why = load_layer(config, prefix, n, k, mine)
        if not i or _rank(status) > _rank(worst[0]):
            worst = (status, f"{prefix}: {why}")
    return worst


@pytest.mark.parametrize("version", INSPECTED)
def test_layer_build_and_weight_load_agree(
    version: str,
    trees: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Items 14-17: what the layer build and the weight load do, per release, is quantcheck's
    status for that release (fails / degraded / ok)."""
    mod = load_release(trees[version], stages=True)
    disagree = []
    for name, (build, reader, layers) in STAGE_CASES.items():
        _, paths = _built(tmp_path, name, build)
        real, why = _stage_outcome(mod, paths, reader, layers)
        key = f"sglang@{version}"
        ours = reader_status(check_paths(paths, target=key), key)
        known = KNOWN.get((name, version))
        if known is not None:
            assert real == known[0], f"{name} {version}: now {real} ({why}); {known[1]}"
            continue
        if real != ours:
            disagree.append(f"{name}: sglang {version} {real} ({why}); quantcheck says {ours}")
    assert not disagree, "\n".join(disagree)


def test_mxfp8_weight_load_per_release(trees: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Item 15 by release: only 0.5.22 loads a clean MXFP8 file (byte-exact); the others stop
    in weight_loader_v2 (tp_rank)."""
    build, reader, layers = STAGE_CASES["mxfp8"]
    paths = [str(p) for p in build(tmp_path)]
    seen = {}
    for version in INSPECTED:
        mod = load_release(trees[version], stages=True)
        seen[version] = _stage_outcome(mod, paths, reader, layers)
    assert {v: s for v, (s, _) in seen.items()} == {
        "0.5.19": "fails",
        "0.5.20": "fails",
        "0.5.21": "fails",
        "0.5.22": "ok",
        "0.5.23": "fails",
    }, seen
    assert all("tp_rank" in why for v, (s, why) in seen.items() if s == "fails"), seen


#: reasons that mean quantcheck models a refusal of the override resolution itself
_OVERRIDE_REFUSAL = (
    "_resolve_quant_config: the file has",
    "_resolve_weight_override_quantization: ",
)


@pytest.mark.parametrize("version", INSPECTED)
def test_transformer_weights_path_loader_agrees(
    version: str,
    trees: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Item 13 (a): `--transformer-weights-path` refuses exactly the files quantcheck's
    `transformer-weights-path` loader says its resolution refuses."""
    load_release(trees[version], stages=True)
    disagree = []
    for name, build in _loader_cases().items():
        folder, paths = _built(tmp_path, name, build)
        loads, why = override_outcome(paths, folder)
        key = f"sglang@{version}"
        report = check_paths(paths, target=key)
        v = report.target_status(key)["loaders"]["transformer-weights-path"]
        # a refusal of the resolution itself, or of the header path it asks first (a
        # failure quantcheck puts at a later stage is not one)
        refuses = v["status"] == "fails" and (
            v["reason"].startswith(_OVERRIDE_REFUSAL) or not later_only(report, key)
        )
        if loads == refuses:
            disagree.append(
                f"{name}: sglang {version} {'loads' if loads else 'refuses'} ({why}); "
                f"quantcheck: {v['status']} ({v['reason']})"
            )
    assert not disagree, "\n".join(disagree)


@pytest.mark.parametrize("version", INSPECTED)
def test_minimax_h3_loader_agrees(
    version: str,
    trees: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Item 13 (b): the MiniMax-H3 loader's inspector + resolver (never the header path)
    refuses a marked file exactly where quantcheck's `minimax-h3` loader fails, apart from
    the stages after the config (whose codes the stage tests run)."""
    mod = load_release(trees[version], stages=True)
    disagree = []
    for name, build in _loader_cases().items():
        _, paths = _built(tmp_path, name, build)
        report = check_paths(paths, target=f"sglang@{version}")
        v = report.target_status(f"sglang@{version}")["loaders"]["minimax-h3"]
        if not v["reason"].startswith("inspect_minimax_h3_safetensors"):
            continue  # no markers: the transformer-weights-path test covers it
        if any(la.marker and la.marker.format == "nvfp4" for la in _layers(paths)):
            continue  # H3's NVFP4 route builds ModelOptFp4Config, which is not executed here
        loads, why = h3_outcome(mod, paths)
        later = later_only(report, f"sglang@{version}")
        if loads and v["status"] == "fails" and not later:
            disagree.append(f"{name}: sglang {version} H3 loads ({why}); quantcheck fails")
        if not loads and v["status"] != "fails":
            disagree.append(
                f"{name}: sglang {version} H3 refuses ({why}); quantcheck {v['status']}"
            )
    assert not disagree, "\n".join(disagree)


def _layers(paths: list[str]) -> list[Any]:
    from quantcheck.model.checkpoint import load_checkpoint

    with load_checkpoint(paths) as ck:
        return list(ck.layers.values())


def _loader_cases() -> dict[str, Build]:
    extra: dict[str, Callable[..., Any]] = {
        "quantized-tensors-without-markers": file(lambda: fp8()[:-1]),
        "header-not-json": file(fp8, {"_quantization_metadata": "{not json"}),
        "header-json-array": file(fp8, {"_quantization_metadata": "[1]"}),
        "nvfp4-plus-fp8-markers": file(lambda: [*nvfp4(), *fp8(FC1)]),
    }
    return {**CASES, **extra}


def test_w4a8_first_forward(trees: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Item 16: a W4A8 convrot_groupsize of 32 passes the layer build and the weight load and
    stops at the first forward in comfy-kitchen's rotation; group 16 runs."""
    mod = load_release(trees["0.5.23"], stages=True)
    seen = {}
    for name in ("w4a8", "w4a8-convrot-group-32"):
        build, reader, layers = STAGE_CASES[name]
        _, paths = _built(tmp_path, name, build)
        seen[name] = _stage_outcome(mod, paths, reader, layers)
    assert seen["w4a8"][0] == "ok" and "first forward ran" in seen["w4a8"][1], seen
    status, why = seen["w4a8-convrot-group-32"]
    assert status == "fails" and why.startswith(f"{P}: first forward") and "power of 4" in why, seen


@pytest.mark.parametrize("version", INSPECTED)
def test_quantize_fp8_for_sglang_loads_through_transformer_weights_path(
    version: str,
    trees: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Item 13 / quantize: `quantize --to float8_e4m3fn` for sglang declares its layers in the
    header, and the release's own `_resolve_quant_config` builds Fp8Config from that file
    (without the declaration it raises "no supported native quantization declaration")."""
    import torch
    from safetensors.torch import save_file

    from quantcheck.cli.main import main

    src = tmp_path / "bf16.safetensors"
    save_file({"blocks.0.attn.qkv.weight": torch.ones(64, 64, dtype=torch.bfloat16)}, str(src))
    load_release(trees[version], stages=True)
    for target, declared in (("sglang", True), ("comfyui", False)):
        folder = tmp_path / target
        folder.mkdir()
        out = folder / "fp8.safetensors"
        assert (
            main(
                ["quantize", str(src), "--to", "float8_e4m3fn", "--target", target, "-o", str(out)]
            )
            == 0
        )
        loads, why = override_outcome([str(out)], folder)
        assert loads == declared, f"{target}: {why}"
        if declared:
            assert why == "Fp8Config", why
        else:
            assert "no supported native" in why, why
