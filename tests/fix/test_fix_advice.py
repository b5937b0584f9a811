"""Fix advice is true (issue 22 item 12): a marker whose weight is in a missing shard is not
"stale"; QC601's advice says what `fix` really does; `fix` with nothing to apply writes
nothing and exits as `check` does; the QC304 fix leaves no scale behind; `quantize` says how
many layers were already quantized."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from rules._build import bf16, fp8, int8, write_safetensors
from rules.cases import CASES

from ._util import sha

LAYER = "blocks.0"


def _qc223(paths: list[Path]):
    report = check_paths([str(p) for p in paths])
    return next(d for d in report.diagnostics if d.code == "QC223")


def test_marker_of_a_weight_in_a_missing_shard_says_supply_the_shard(tmp_path: Path) -> None:
    marker, weight, scale = int8(LAYER)[2], *int8(LAYER)[:2]
    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    write_safetensors(tmp_path / first, [marker, *bf16("blocks.1")])
    wmap = {n: first for n in (marker.name, "blocks.1.weight")}
    wmap |= {weight.name: second, scale.name: second}
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": wmap}))
    d = _qc223([index])
    assert f"the index places it in {second}, which is missing" in d.message
    assert d.fix is not None and d.fix.safety.value == "display-only" and d.fix.action is None
    assert "supply the missing shard" in d.fix.description
    # without an index: a shard set that lacks a member may hold the weight there
    (tmp_path / "set").mkdir()
    write_safetensors(tmp_path / "set" / first, [marker, *bf16("blocks.1")])
    d = _qc223([tmp_path / "set" / first])
    assert f"the shard set lacks {second}, which may hold it" in d.message
    assert d.fix is not None and d.fix.action is None


def test_stale_marker_in_a_whole_checkpoint_is_still_removed(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    write_safetensors(path, [*fp8("blocks.1"), int8(LAYER)[2]])
    d = _qc223([path])
    assert d.fix is not None and d.fix.action == "drop-marker"


def test_qc601_advice_says_what_fix_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "QC601"]) == 0
    doc = capsys.readouterr().out
    assert "--unsafe-fixes" in doc and "dequantizes" in doc and "changes nothing" in doc
    assert main(["explain", "Unsupported Comfy quantization format(s): awq_w4a16"]) == 0
    out = capsys.readouterr().out
    assert "--target sglang --unsafe-fixes" in out
    assert main(["explain", "Unsupported Comfy quantization format(s): float8_e4m3fn, nvfp4"]) == 0
    out = capsys.readouterr().out  # QC602 has no automatic fix: no fix command is offered
    assert "Rule: QC602" in out and "quantcheck fix IN" not in out
    assert "no automatic fix" in out


@pytest.mark.parametrize("name", ["awq-w4a16", "float8-e5m2"])
def test_qc601_finding_says_requantize_or_dequantize(name: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.code == "QC601" and c.name == name)
    paths = [str(p) for p in case.build(tmp_path)]
    d = next(d for d in check_paths(paths).diagnostics if d.code == "QC601")
    assert d.fix is not None
    want = "dequantize the layer to BF16" if "awq" in name else "to float8_e4m3fn"
    assert want in d.fix.description


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fix_with_nothing_to_apply_writes_nothing(
    case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Wherever `fix` plans no edit, it writes nothing, says so, and exits as check does."""
    src = tmp_path / "in"
    src.mkdir()
    paths = [str(p) for p in case.build(src)]
    out = tmp_path / "out.safetensors"
    for target in ("sglang", "comfyui", "musubi"):
        rc = main(["fix", *paths, "-o", str(out), "--target", target])
        text = capsys.readouterr().out
        if "nothing to fix" not in text:
            shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)
            continue
        assert " 0 fixes" in text and not out.exists()
        assert rc == main(["check", "--target", target, *paths]), text
        capsys.readouterr()


def test_qc304_fix_leaves_no_scale_behind(tmp_path: Path) -> None:
    src = tmp_path / "in.safetensors"
    write_safetensors(src, int8(LAYER, weight=("BF16", (64, 64))))
    out = tmp_path / "out.safetensors"
    assert main(["fix", str(src), "-o", str(out), "--target", "all"]) == 0
    report = check_paths([str(out)])
    assert not report.diagnostics, [d.code for d in report.diagnostics]  # QC750 was one


def test_quantize_says_layers_were_already_quantized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.safetensors"
    write_safetensors(src, [*bf16("blocks.0", 256, 256), *bf16("blocks.1", 256, 256)])
    once = tmp_path / "fp8.safetensors"
    assert main(["quantize", str(src), "-o", str(once), "--to", "float8_e4m3fn"]) == 0
    capsys.readouterr()
    before = sha(once)
    twice = tmp_path / "again.safetensors"
    assert main(["quantize", str(once), "-o", str(twice), "--to", "float8_e4m3fn"]) == 0
    out = capsys.readouterr().out
    assert "quantize: 0 layers" in out
    assert "2 layers were already quantized (a marker) and left as they are" in out
    assert "a copy, no layer was quantized" in out
    assert sha(once) == before


def test_fix_with_no_fix_for_the_target_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.safetensors"
    write_safetensors(src, int8(LAYER, weight=("BF16", (64, 64))))
    out = tmp_path / "out.safetensors"
    # musubi's own finding (QC754, BF16 weight) has no automatic fix
    assert main(["fix", str(src), "-o", str(out), "--target", "musubi"]) == 1
    text = capsys.readouterr().out
    assert "fix (musubi): 0 fixes" in text
    assert f"nothing to fix: {out} was not written" in text
    assert not out.exists()
    assert main(["check", "--target", "musubi", str(src)]) == 1
    capsys.readouterr()
    args = ["fix", str(src), "-o", str(out), "--target", "musubi", "--output-format", "json"]
    assert main(args) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["written"] is None and doc["edits"] == [] and not out.exists()
