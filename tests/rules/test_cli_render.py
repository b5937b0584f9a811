"""`quantcheck check` output formats, filters, statistics and exit codes; `quantcheck rules`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import runtime_names

from ._build import file, int8, nvfp4, w4a8
from .sglang.loader_helpers import LOADER_CODES, as_text_encoder, text_encoder_copy

CODE = re.compile(r"\bQC\d{3}\b")


#: sglang's loader findings (QC631-QC638, rules/sglang/loaders.py) left out: these tests are
#: about rendering and filters of the marker-path findings; the loaders' own output is tested
#: in tests/rules/sglang/test_loaders.py
IGNORE_LOADERS = ["--ignore", ",".join(sorted(LOADER_CODES))]


def run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    if argv[:1] == ["check"]:
        argv = ["check", *IGNORE_LOADERS, *argv[1:]]
    rc = main(argv)
    return rc, capsys.readouterr().out


@pytest.fixture
def seeds(examples_dir: Path, tmp_path: Path) -> str:
    """broken_seeds as a text encoder: its marker findings decide sglang's verdict (sglang's
    text-encoder loader reads the markers; a DiT's --transformer-weights-path does not)."""
    src = examples_dir / "broken_seeds.safetensors"
    return str(text_encoder_copy(src, tmp_path / "broken_seeds.safetensors"))


@pytest.fixture
def sglang_only(tmp_path: Path) -> str:
    """One problem that breaks sglang only: an INT8 row scale stored as F16 (QC305), in a
    text encoder (its marker path decides)."""
    return str(file(as_text_encoder(lambda: int8(scale=("F16", (64, 1)))))(tmp_path)[0])


@pytest.fixture
def comfy_warning(tmp_path: Path) -> str:
    """A warning that degrades ComfyUI only: W4A8 weight_correction (QC313)."""
    return str(file(lambda: w4a8(correction="F32"))(tmp_path)[0])


def test_json_shape(seeds: str, capsys: pytest.CaptureFixture) -> None:
    rc, out = run(["check", "--format", "json", seeds], capsys)
    assert rc == 1
    doc = json.loads(out)
    assert doc["schema_version"] == 3  # 2: lists checkpoints; 3: the session of issue 24
    assert [i["path"].rsplit("/", 1)[-1] for i in doc["inputs"]] == ["broken_seeds.safetensors"]
    assert set(doc["targets"]) == {"sglang", "comfyui"}
    # plus which of sglang's readers takes the file (additive: `path`, sglang targets only)
    assert doc["targets"]["sglang"] == {
        "status": "fails",
        "errors": 3,
        "degraded": 2,
        "path": "markers",
    }
    # The seed's W4A8 layer has BF16 channel scales: ComfyUI's first forward raises (issue 13).
    assert doc["targets"]["comfyui"] == {"status": "fails", "errors": 1, "degraded": 1}
    assert doc["diagnostics"]
    for d in doc["diagnostics"]:
        assert d["code"] in all_rules() and d["name"] == all_rules()[d["code"]].name
        shown = [t for t in d["targets"] if t in ("sglang", "comfyui")]
        assert shown == [t for t in ("sglang", "comfyui") if d["effects"][t] != "none"]
        assert d["fix"] is None or d["fix"]["safety"] in ("safe", "unsafe", "display-only")
        assert d["file"] == "broken_seeds.safetensors"
    assert doc["summary"]["errors"] == 3 and doc["summary"]["warnings"] == 2
    assert {d["code"] for d in doc["diagnostics"]} == {"QC304", "QC305", "QC316"}


def test_sarif(seeds: str, capsys: pytest.CaptureFixture) -> None:
    rc, out = run(["check", "--format", "sarif", seeds], capsys)
    assert rc == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0" and "sarif" in doc["$schema"]
    run_ = doc["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == list(all_rules())
    assert len(run_["results"]) == 5
    for r in run_["results"]:
        assert r["ruleId"] in ids and ids[r["ruleIndex"]] == r["ruleId"]
        assert r["level"] in ("error", "warning", "note")
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.rsplit("/", 1)[-1] == "broken_seeds.safetensors"  # the file's path
        assert "targets" in r["properties"]


def test_github(seeds: str, capsys: pytest.CaptureFixture) -> None:
    rc, out = run(["check", "--format", "github", seeds], capsys)
    assert rc == 1
    lines = out.strip().splitlines()
    assert len(lines) == 5
    for line in lines:
        assert re.match(
            r"^::(error|warning|notice) file=([^,]*/)?broken_seeds\.safetensors,"
            r"title=QC\d{3} "
            r"[a-z0-9-]+::",
            line,
        ), line
    assert sum(line.startswith("::error ") for line in lines) == 3
    assert any("title=QC305 companion-dtype" in line and "F16" in line for line in lines)


def test_text_verdicts(seeds: str, capsys: pytest.CaptureFixture) -> None:
    rc, out = run(["check", "--no-color", seeds], capsys)
    assert rc == 1
    assert (
        "targets: sglang: fails (3 blocking, 2 degrading; read with the text-encoder loader, "
        "sglang's loader for T5-XXL) · comfyui: fails (1 blocking, 1 degrading)"
    ) in out
    assert "\x1b[" not in out
    assert "help: cast F16 -> F32" in out


def test_select_and_ignore(seeds: str, capsys: pytest.CaptureFixture) -> None:
    def codes(argv: list[str]) -> tuple[int, set[str]]:
        rc, out = run(["check", "--format", "json", *argv, seeds], capsys)
        return rc, {d["code"] for d in json.loads(out)["diagnostics"]}

    assert codes(["--select", "QC305"]) == (1, {"QC305"})
    assert codes(["--select", "companion-dtype"]) == (1, {"QC305"})
    assert codes(["--select", "QC304,QC316"]) == (1, {"QC304", "QC316"})
    assert codes(["--select", "QC3*", "--ignore", "QC304", "--ignore", "QC305"]) == (0, {"QC316"})
    assert codes(["--ignore", "QC3"]) == (0, set())
    assert codes(["--select", "QC6"]) == (0, set())


def test_statistics(seeds: str, capsys: pytest.CaptureFixture) -> None:
    """The counts per code come after the findings and the totals (issue 22 item 5)."""
    rc, out = run(["check", "--statistics", "--no-color", seeds], capsys)
    assert rc == 1
    stats = [line.split() for line in out.splitlines()[-3:]]
    assert stats == [
        ["2", "QC305", "companion-dtype", "error"],
        ["2", "QC316", "int8-linear-without-convrot", "warning"],
        ["1", "QC304", "marker-on-unquantized-layer", "error"],
    ]
    assert out.splitlines()[-4] == ""  # after the normal report
    assert (
        out.index("QC305 companion-dtype") < out.index("errors, 2 warnings") < out.index("2  QC305")
    )


def test_target_filter_and_exit_codes(sglang_only: str, capsys: pytest.CaptureFixture) -> None:
    rc, out = run(["check", "--target", "sglang", "--format", "json", sglang_only], capsys)
    doc = json.loads(out)
    assert rc == 1 and list(doc["targets"]) == ["sglang"]
    assert [d["code"] for d in doc["diagnostics"]] == ["QC305"]
    rc, out = run(["check", "--target", "comfyui", "--format", "json", sglang_only], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["diagnostics"] == []
    assert doc["targets"] == {"comfyui": {"status": "ok", "errors": 0, "degraded": 0}}
    rc, out = run(["check", "--target", "comfyui", "--no-color", sglang_only], capsys)
    assert rc == 0 and "targets: comfyui: ok" in out and "sglang" not in out.split("targets:")[1]


def test_fail_on_warning(comfy_warning: str, capsys: pytest.CaptureFixture) -> None:
    assert run(["check", comfy_warning], capsys)[0] == 0  # a warning alone: exit 0
    assert run(["check", "--fail-on", "warning", comfy_warning], capsys)[0] == 1
    rc, out = run(
        ["check", "--target", "sglang", "--fail-on", "warning", "--format", "json", comfy_warning],
        capsys,
    )
    assert rc == 0 and json.loads(out)["diagnostics"] == []


def test_clean_file_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = str(file(nvfp4)(tmp_path)[0])
    rc, out = run(["check", "--format", "json", path], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["diagnostics"] == []
    assert {t: v["status"] for t, v in doc["targets"].items()} == {"sglang": "ok", "comfyui": "ok"}


def test_missing_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["check", str(tmp_path / "nope.safetensors")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["check", "--target", "vllm", str(tmp_path)])
    assert exc.value.code == 2


def test_rules_lists_every_code(capsys: pytest.CaptureFixture) -> None:
    rc, out = run(["rules"], capsys)
    assert rc == 0
    listed = [m for line in out.splitlines() if (m := CODE.match(line))]
    assert [m.group(0) for m in listed] == list(all_rules())
    for code, rule in all_rules().items():
        assert rule.name in out and rule.title in out, code
    rc, out = run(["rules", "--output-format", "json"], capsys)
    doc = json.loads(out)
    assert (doc["schema_version"], doc["kind"]) == (1, "rules")
    assert [r["code"] for r in doc["rules"]] == list(all_rules())
    assert all(set(r["effects"]) == set(runtime_names()) for r in doc["rules"])
