"""Released topologies (families/table.py `topologies`): QC864 names a file whose quantized
layers are exactly those of Comfy-Org's official MiniMax H3 INT8 ConvRot files, as musubi-tuner
PR #1024's loaders checked them (250 / 200 / 350 ConvRot layers and their group sizes), and
nothing that deviates; QC861 does not flag a layer such a file quantizes. The `{last}` keep
entry (convert_to_quant --qwen_vlm's last language layer) is counted in the checkpoint.

The stand-ins are the ComfyUI layouts of tests/data/families/ with exactly the official
layers quantized as the released files store them (I8 [N, K] weight, F32 [N, 1] scale, a
`.comfy_quant` marker with format int8_tensorwise, convrot true and the group size); their
tensor counts are those of musubi-tuner PR #1024's header audit of the five released files
(design note §11.5: FL2VA/Ref2VA full 1035, pruned 932, Qwen3-VL text encoder 1602).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths
from quantcheck.convert.family import family_keeps
from quantcheck.families.detection import topology_layers
from quantcheck.families.table import BY_NAME, Topology
from quantcheck.model.checkpoint import load_checkpoint

from . import standin as S

H3 = {t.name: t for t in BY_NAME["minimax_h3"].topologies}
FULL = H3["minimax-h3-full-int8-convrot"]
PRUNED = H3["minimax-h3-pruned-int8-convrot"]
TE = BY_NAME["qwen3vl_32b"].topologies[0]
#: the header audit's tensor counts of the released files (musubi-tuner PR #1024 §11.5)
AUDIT = {FULL.name: 1035, PRUNED.name: 932, TE.name: 1602}


def _report(tmp: Path, tensors: S.Tensors, name: str = "file") -> Any:
    path = S.write(tmp / f"{name}.safetensors", tensors)
    return check_paths([str(path)])


def _qc864(report: Any) -> Any:
    [found] = [d for d in report.diagnostics if d.code == "QC864"]
    return found


@pytest.mark.parametrize("topo", [FULL, PRUNED, TE], ids=lambda t: t.name)
def test_the_released_file_is_named_as_it(tmp_path: Path, topo: Topology) -> None:
    layers = topology_layers(topo)
    assert len(layers) == topo.layers == {FULL: 250, PRUNED: 200, TE: 350}[topo]
    tensors = S.convrot(S.released_base(topo), layers)
    dtypes = Counter(d for d, _, _ in tensors.values())
    assert len(tensors) == AUDIT[topo.name]
    assert dtypes["I8"] == dtypes["U8"] == topo.layers
    report = _report(tmp_path, tensors)
    found = _qc864(report)
    assert found.data["recipe"] == topo.name
    assert f"{topo.title} ({topo.layers} layers, as musubi-tuner PR #1024 checks it)" in (
        found.message
    )
    # a layer the released file quantizes is not one its producers should have kept
    assert not [d for d in report.diagnostics if d.code == "QC861"]


def _drop_one(groups: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in groups.items() if k != "blocks.7.mlp.fc2"}


def _add_one(groups: dict[str, int]) -> dict[str, int]:
    return {**groups, "condition_proj": 256}


def _regroup(groups: dict[str, int]) -> dict[str, int]:
    return {**groups, "blocks.0.attn.qkv_proj": 64}


DEVIATIONS: dict[str, tuple[Callable[[dict[str, int]], dict[str, int]], bool]] = {
    "a block linear left BF16": (_drop_one, True),
    "a layer the release keeps quantized": (_add_one, True),
    "another ConvRot group size": (_regroup, True),
    "plain INT8, no ConvRot": (lambda g: g, False),
}


@pytest.mark.parametrize("case", sorted(DEVIATIONS))
def test_a_deviating_file_is_not_named(tmp_path: Path, case: str) -> None:
    edit, convrot = DEVIATIONS[case]
    tensors = S.convrot(S.released_base(FULL), edit(topology_layers(FULL)), convrot=convrot)
    found = _qc864(_report(tmp_path, tensors))
    assert found.data["recipe"] not in H3 and "official" not in found.message


@pytest.mark.parametrize(
    "marker",
    [
        {"format": "int8_tensorwise", "params": {"convrot": True, "convrot_groupsize": 256}},
        {"format": "int8_tensorwise", "convrot": 1, "convrot_groupsize": 256},
        {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256.0},
    ],
    ids=["inside-params", "convrot-1", "float-group"],
)
def test_a_marker_unlike_the_releases_is_not_named(tmp_path: Path, marker: dict[str, Any]) -> None:
    """The released files write `"convrot": true` and an integer group at the top level (what
    musubi-tuner reads); one layer's marker written otherwise is another file."""
    tensors = S.convrot(S.released_base(FULL), topology_layers(FULL))
    text = json.dumps(marker).encode()
    tensors["blocks.3.mlp.fc1.comfy_quant"] = ("U8", (len(text),), text)
    assert _qc864(_report(tmp_path, tensors)).data["recipe"] not in H3


def test_the_full_files_layers_with_the_pruned_curve_table_are_neither(tmp_path: Path) -> None:
    tensors = S.convrot(S.released_base(FULL), topology_layers(FULL))
    tensors["adaln_t_table"] = ("F32", (1025, 8), None)
    assert _qc864(_report(tmp_path, tensors, "a")).data["recipe"] not in H3
    # the pruned files' 200 layers in a file without the curve table: not a pruned release
    tensors = S.convrot(S.released_base(FULL), topology_layers(PRUNED))
    assert _qc864(_report(tmp_path, tensors, "b")).data["recipe"] not in H3


def test_off_the_release_the_producers_keep_list_applies_again(tmp_path: Path) -> None:
    """The full release quantizes adaln_proj (group 64), which ComfyUI-GGUF keeps F32: off the
    release (one more layer quantized) QC861 names those layers again."""
    tensors = S.convrot(S.released_base(FULL), _add_one(topology_layers(FULL)))
    kept = [d for d in _report(tmp_path, tensors).diagnostics if d.code == "QC861"]
    named = {d.layer for d in kept}
    assert "condition_proj" in named and "blocks.0.adaln_proj.linear" in named
    assert len(named) == 51


def _qwen35_published() -> S.Tensors:
    """Qwen3.5-2B as a published file names it (model.language_model.*, model.visual.*)."""
    out: S.Tensors = {}
    for name, value in S.bf16(S.shapes("qwen3.5-2b")).items():
        if name.startswith("model."):
            name = "model.language_model." + name[len("model.") :]
        elif name.startswith("visual."):
            name = "model." + name
        out[name] = value
    return out


def test_the_last_language_layer_is_kept_as_convert_to_quant_counts_it(tmp_path: Path) -> None:
    last = "model.language_model.layers.23.mlp.down_proj"
    tensors = S.quantize(
        _qwen35_published(),
        "float8_e4m3fn",
        lambda n, _s: n.startswith((last, "model.language_model.layers.5.mlp.")),
    )
    kept = [d for d in _report(tmp_path, tensors).diagnostics if d.code == "QC861"]
    assert [d.layer for d in kept] == [last]
    assert "the last language layer (exclude_final_language_layer)" in kept[0].message
    path = S.write(tmp_path / "bf16.safetensors", _qwen35_published())
    with load_checkpoint([str(path)]) as ck:
        _, why = family_keeps(ck, "auto", "float8_e4m3fn", [], [])
    assert last in why and "exclude_final_language_layer" in why[last]
    assert "model.language_model.layers.22.mlp.down_proj" not in why
