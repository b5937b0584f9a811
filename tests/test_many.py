"""Many checkpoints: discovery (folders, index sets, -of- sets, globs), the report for many
(text table, --quiet, JSON v2, SARIF, GitHub), exit codes, the picklable per-checkpoint call,
and baselines."""

from __future__ import annotations

import json
import pickle
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.io.build import RawTensor, write_safetensors
from quantcheck.many import check_one, check_spec
from quantcheck.model.discover import CheckpointSpec, discover
from quantcheck.model.shard_sets import IncompleteSet, missing_shards

BROKEN, CLEAN = "broken_seeds.safetensors", "nvfp4.safetensors"


def bf16(name: str) -> list[RawTensor]:
    return [RawTensor(f"{name}.weight", "BF16", (8, 8), bytes(128))]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def models(tmp_path: Path, examples_dir: Path) -> Path:
    """A models folder: two quantized files, a LoRA, an indexed sharded checkpoint in a
    subfolder, a complete and an incomplete `-of-` set."""
    root = tmp_path / "models"
    (root / "sharded").mkdir(parents=True)
    (root / "sets").mkdir()
    shutil.copy(examples_dir / BROKEN, root / BROKEN)
    shutil.copy(examples_dir / CLEAN, root / CLEAN)
    write_safetensors(root / "lora.safetensors", bf16("lora_unet.down"))
    write_safetensors(root / "sharded" / "part1.safetensors", bf16("a"))
    write_safetensors(root / "sharded" / "part2.safetensors", bf16("b"))
    (root / "sharded" / "model.safetensors.index.json").write_text(
        json.dumps(
            {"weight_map": {"a.weight": "part1.safetensors", "b.weight": "part2.safetensors"}}
        )
    )
    for i in (1, 2):
        write_safetensors(root / "sets" / f"full-{i:05d}-of-00002.safetensors", bf16(f"f{i}"))
    for i in (1, 3):
        write_safetensors(root / "sets" / f"gap-{i:05d}-of-00003.safetensors", bf16(f"g{i}"))
    (root / "README.md").write_text("not a checkpoint\n")
    return root


def test_folder_is_many_checkpoints(models: Path) -> None:
    specs = discover([str(models)])
    names = [Path(s.name).relative_to(models).as_posix() for s in specs]
    assert names == [
        BROKEN,
        "lora.safetensors",
        CLEAN,
        "sets/full-*-of-00002.safetensors",
        "sets/gap-*-of-00003.safetensors",
        "sharded/model.safetensors.index.json",
    ]
    by = {Path(s.name).name: s for s in specs}
    assert [Path(p).name for p in by["gap-*-of-00003.safetensors"].paths] == [
        "gap-00001-of-00003.safetensors",
        "gap-00003-of-00003.safetensors",
    ]
    assert by["model.safetensors.index.json"].paths == [
        str(models / "sharded" / "model.safetensors.index.json")
    ]  # shards are not repeated


def test_include_exclude_and_as_one(models: Path) -> None:
    only = discover([str(models)], include=["sets/*"], exclude=["gap-*"])
    assert [Path(s.name).name for s in only] == ["full-*-of-00002.safetensors"]
    one = discover([str(models / BROKEN), str(models / CLEAN)], as_one=True)
    assert len(one) == 1 and len(one[0].paths) == 2
    same = discover([str(models / BROKEN), str(models / ".." / "models" / BROKEN)])
    assert len(same) == 1  # one file under two spellings is checked once


def test_missing_shards_are_named(tmp_path: Path) -> None:
    d = tmp_path.as_posix()
    assert missing_shards(
        [
            f"{d}/m-00001-of-00003.safetensors",
            f"{d}/m-00003-of-00003.safetensors",
            f"{d}/x.safetensors",
        ]
    ) == [
        IncompleteSet(f"{d}/m-00001-of-00003.safetensors", ["m-00002-of-00003.safetensors"], 1, 3)
    ]
    (tmp_path / "m-00002-of-00003.safetensors").write_bytes(b"")
    assert missing_shards([f"{d}/m-00001-of-00003.safetensors"]) == [
        IncompleteSet(f"{d}/m-00001-of-00003.safetensors", ["m-00003-of-00003.safetensors"], 1, 3)
    ]
    (tmp_path / "m-00003-of-00003.safetensors").symlink_to(tmp_path / "nowhere")
    assert missing_shards([f"{d}/m-00001-of-00003.safetensors"])[0].count == 1  # dangling


def test_index_argument_claims_its_shards(models: Path) -> None:
    sharded = models / "sharded"
    specs = discover(
        [
            str(sharded / "part1.safetensors"),
            str(sharded / "part2.safetensors"),
            str(sharded / "model.safetensors.index.json"),
        ]
    )
    assert [Path(s.name).name for s in specs] == ["model.safetensors.index.json"]


def test_text_report_table_and_exit_code(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "check", "--no-color", str(models))
    assert rc == 1  # the worst of all: broken_seeds and the incomplete set fail
    assert f"== {models / BROKEN}" in out and "QC305" in out
    assert "QC506" in out and "gap-00002-of-00003.safetensors" in out
    # the clean file's only findings are notes: sglang's --comfyui-mode, which does not read
    # it, cannot load NVFP4 (QC636, QC637)
    clean = out.split(f"== {models / CLEAN}\n", 1)[1].split("\n== ", 1)[0].split("\n\n")[0]
    assert {line.split()[0] for line in clean.splitlines() if " QC" in line} == {"info"}
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(str(models))}
    assert "not a quantized checkpoint" in rows[str(models / "lora.safetensors")]
    assert rows[str(models / CLEAN)].split()[-2:] == ["ok", "ok"]
    assert rows[str(models / BROKEN)].split()[-2:] == ["fails", "fails"]
    assert out.splitlines()[-1].startswith("6 checkpoints: 1 ok, 2 failing, 3 not quantized")


def test_quiet_prints_only_the_table(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "check", "--quiet", "--no-color", str(models))
    lines = out.strip().splitlines()
    assert rc == 1 and lines[0].split() == ["CHECKPOINT", "SIZE", "FORMATS", "SGLANG", "COMFYUI"]
    assert len(lines) == 7 and "QC305" not in out


def test_one_checkpoint_keeps_the_single_report(
    examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "check", "--no-color", str(examples_dir / BROKEN))
    # QC316 concerns sglang loaders that do not read this file (a note)
    assert "CHECKPOINT" not in out and out.splitlines()[-1].startswith("3 errors, 0 warnings")


def test_as_one_keeps_the_shards_reading(
    examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rc, out, _ = run(
        capsys,
        "check",
        "--output-format",
        "json",
        "--as-one",
        str(examples_dir / "nvfp4.safetensors"),
        str(examples_dir / "fp8_e4m3fn.safetensors"),
    )
    doc = json.loads(out)
    assert len(doc["checkpoints"]) == 1 and len(doc["inputs"]) == 2
    rc2, out2, _ = run(
        capsys,
        "check",
        "--output-format",
        "json",
        str(examples_dir / "nvfp4.safetensors"),
        str(examples_dir / "fp8_e4m3fn.safetensors"),
    )
    # 1: sglang's --transformer-weights-path refuses the undeclared FP8 file (QC631)
    assert len(json.loads(out2)["checkpoints"]) == 2 and rc2 == 1


def test_json_lists_checkpoints(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(models))
    doc = json.loads(out)
    assert (doc["schema_version"], doc["kind"], rc) == (3, "check", 1)
    kinds = {Path(c["name"]).name: c["kind"] for c in doc["checkpoints"]}
    assert kinds == {
        BROKEN: "checked",
        CLEAN: "checked",
        "lora.safetensors": "not-quantized",
        "full-*-of-00002.safetensors": "not-quantized",
        "gap-*-of-00003.safetensors": "checked",
        "model.safetensors.index.json": "not-quantized",
    }
    assert {Path(d["checkpoint"]).name for d in doc["diagnostics"]} == {
        BROKEN,
        CLEAN,  # notes only (sglang's --comfyui-mode, which does not read it)
        "gap-*-of-00003.safetensors",
    }
    assert all(d["decides"] is False for d in doc["diagnostics"] if d["checkpoint"].endswith(CLEAN))
    assert doc["summary"]["checkpoints"] == 6 and doc["summary"]["not_quantized"] == 3
    broken = next(c for c in doc["checkpoints"] if c["name"].endswith(BROKEN))
    assert broken["formats"] == ["asym_w4a8_int8", "int8_tensorwise"]
    assert broken["targets"]["sglang"]["status"] == "fails"


def test_sarif_and_github_locate_each_checkpoint(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "check", "--output-format", "sarif", str(models))
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(out)["runs"][0]["results"]
    }
    assert {Path(u).name for u in uris} == {BROKEN, CLEAN, "gap-00001-of-00003.safetensors"}
    _, out, _ = run(capsys, "check", "--output-format", "github", str(models))
    files = {line.split("file=", 1)[1].split(",", 1)[0] for line in out.splitlines()}
    assert {Path(f).name for f in files} == {BROKEN, CLEAN, "gap-00001-of-00003.safetensors"}


def test_unreadable_checkpoint_exits_2(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (models / "dir.safetensors").mkdir()  # a folder named like a file is searched, not read
    rc, _, err = run(capsys, "check", "--quiet", str(models), str(models / "nope.safetensors"))
    assert rc == 2 and "nope.safetensors" in err


def test_check_one_is_plain_and_picklable(examples_dir: Path) -> None:
    paths = [str(examples_dir / n) for n in (BROKEN, CLEAN)]
    local = [check_one(p) for p in paths]
    assert pickle.loads(pickle.dumps(local)) == local
    json.dumps(local)  # plain data only
    assert pickle.loads(pickle.dumps(CheckpointSpec("x", ["x"]))) == CheckpointSpec("x", ["x"])
    with ProcessPoolExecutor(max_workers=2) as pool:
        mapped = list(pool.map(check_one, paths))
    assert mapped == local
    assert [r["kind"] for r in mapped] == ["checked", "checked"]
    assert mapped[0]["targets"]["sglang"]["status"] == "fails"
    assert check_spec(str(examples_dir / "missing.safetensors")).kind == "unreadable"


def test_baseline_accepts_known_findings_and_fails_on_new(
    models: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "baseline.json"
    rc, _, err = run(capsys, "check", "--generate-baseline", str(base), "models")
    assert rc == 0 and "wrote" in err
    doc = json.loads(base.read_text())
    assert doc["kind"] == "baseline" and doc["findings"]
    assert {
        "checkpoint": "models/broken_seeds.safetensors",
        "code": "QC305",
        "where": "model.diffusion_model.transformer_blocks.1.attn.to_q.weight_scale",
    } in doc["findings"]  # stable keys: no message text, no line numbers
    assert all(set(f) == {"checkpoint", "code", "where"} for f in doc["findings"])
    # the same findings under another spelling of the folder: all known, exit 0
    rc, out, _ = run(capsys, "check", "--no-color", "--baseline", str(base), "./models")
    assert rc == 0, out
    assert f"{len(doc['findings'])} known findings suppressed by the baseline" in out
    # a new problem fails, and only it is reported
    shutil.copy(models / BROKEN, models / "new.safetensors")
    rc, out, _ = run(capsys, "check", "--output-format", "json", "--baseline", str(base), "models")
    new = json.loads(out)
    assert rc == 1
    assert {Path(d["checkpoint"]).name for d in new["diagnostics"]} == {"new.safetensors"}
    assert new["summary"]["suppressed"] == len(doc["findings"])


def test_baseline_that_cannot_be_read_exits_2(
    models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(capsys, "check", "--baseline", str(tmp_path / "none.json"), str(models))
    assert rc == 2 and "no such baseline" in err
    (tmp_path / "bad.json").write_text("[]")
    rc, _, err = run(capsys, "check", "--baseline", str(tmp_path / "bad.json"), str(models))
    assert rc == 2 and "not a quantcheck baseline" in err


def test_table_marks_an_unverified_verdict(
    tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 11: a verdict resting on a reading not checked against the runtime's own
    code says so in the many-checkpoint table too, with the reason once under it."""
    for name in ("w6a8_int8.safetensors", "nvfp4.safetensors"):
        shutil.copy(examples_dir / name, tmp_path / name)
    assert main(["check", "--quiet", "--target", "comfyui", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    (w6a8,) = [ln for ln in out if "w6a8_int8.safetensors" in ln]
    (nvfp4,) = [ln for ln in out if "nvfp4.safetensors" in ln]
    assert w6a8.endswith("ok (unverified)") and nvfp4.endswith("ok")
    assert out.count("unverified: w6a8_int8 support read from a port, not from ComfyUI") == 1
    main(["check", "--quiet", "--target", "comfyui@0271a469", str(tmp_path)])
    older = capsys.readouterr().out
    # that release refuses w6a8_int8: nothing rests on a guess
    assert "(unverified)" not in older and "\nunverified: " not in older
