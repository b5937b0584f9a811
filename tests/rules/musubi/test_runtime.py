"""musubi-tuner (`--target musubi`): the effects table covers every generic code, the bundled
examples get the verdicts read in `inspect_convrot_int8_artifact`, edge cases of its checks, and
its messages round-trip through `explain`. Per-rule failing/passing files: musubi/cases.py.

musubi-tuner is not on PyPI, so there is no pinned wheel to run differentially (as
tests/rules/diff_sglang does for sglang); the rules cite its functions instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.lookup import explain
from quantcheck.rules.levels import Effect
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime, runtime_names
from quantcheck.runtimes.musubi import EFFECTS, LEFT_NONE

from .._build import INT8_CONVROT, P, file, header_meta, int8, shards, t

OWN = {f"QC7{i}" for i in range(50, 70)} & set(all_rules())
#: examples/ verdicts: musubi loads only ConvRot INT8 files pre-quantized.
EXAMPLES = {
    "awq_w4a16": "fails",
    "broken_seeds": "fails",
    "fp8_e4m3fn": "fails",
    "int8_convrot": "ok",  # I8 [N, K], F32 [N, 1], convrot true, group 16
    "mxfp8": "fails",
    "nvfp4": "fails",
    "w4a4_convrot": "fails",
    "w4a8_codebook": "fails",
    "w6a8_int8": "fails",
}


def _codes(paths: list[str]) -> set[str]:
    return {d.code for d in check_paths(paths, target="musubi").diagnostics}


def _paths(build, tmp_path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(p) for p in build(tmp_path)]


def test_every_generic_code_has_a_decision() -> None:
    """A new generic code fails this test until someone decides what it does to musubi."""
    generic = {c for c in all_rules() if not c.startswith("QC7")}
    assert set(EFFECTS).isdisjoint(LEFT_NONE)
    assert generic == set(EFFECTS) | set(LEFT_NONE)
    assert all(e is not Effect.NONE for e in EFFECTS.values())
    assert {f"QC7{i}" for i in range(50, 67)} == OWN
    for code, rule in all_rules().items():  # other runtimes' own rules leave musubi alone
        if code.startswith("QC7") and code not in OWN:
            assert rule.effects.get("musubi", Effect.NONE) is Effect.NONE, code


def test_runtime_record() -> None:
    rt = get_runtime("musubi")
    assert "musubi" in runtime_names() and not rt.default_target
    assert rt.release_names() == ("725869d", "0.3.6")
    assert rt.release("v0.3.6") is rt.newest


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_verdicts(name: str, examples_dir: Path) -> None:
    report = check_paths([str(examples_dir / f"{name}.safetensors")], target="musubi")
    assert report.target_status("musubi")["status"] == EXAMPLES[name]


def test_default_report_unchanged(examples_dir: Path) -> None:
    for name in EXAMPLES:
        report = check_paths([str(examples_dir / f"{name}.safetensors")])
        assert not any(d.code.startswith("QC75") for d in report.diagnostics), name


def test_target_all_summary_names_musubi(examples_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["check", "--target", "all", str(examples_dir / "fp8_e4m3fn.safetensors")]) == 1
    out = capsys.readouterr().out
    assert "musubi: fails" in out and "comfyui: ok" in out


def test_plain_bf16_file_is_not_an_artifact(tmp_path: Path) -> None:
    """No I8 weight, weight_scale or .comfy_quant: musubi quantizes such a file itself."""
    paths = _paths(file(lambda: [t(f"{P}.weight", "BF16", (64, 64))]), tmp_path)
    assert not {c for c in _codes(paths) if c.startswith("QC75")}


def test_legacy_scale_weight_name_is_accepted(tmp_path: Path) -> None:
    """musubi reads `.weight_scale` as `.scale_weight`: either name is the scale sibling."""
    layer = int8()
    renamed = [layer[0], layer[1]._replace(name=f"{P}.scale_weight"), layer[2]]
    assert not {c for c in _codes(_paths(file(lambda: renamed), tmp_path)) if c.startswith("QC75")}


@pytest.mark.parametrize(
    ("group", "ok"), [(4, True), (16, True), (64, True), (1, False), (2, False), (32, False)]
)
def test_groups_are_powers_of_four_of_at_least_4(group: int, ok: bool, tmp_path: Path) -> None:
    mark = {**INT8_CONVROT, "convrot_groupsize": group}
    assert ("QC753" not in _codes(_paths(file(lambda: int8(mark=mark)), tmp_path))) is ok


@pytest.mark.parametrize("group", [16.0, True, "16"])
def test_group_must_be_an_integer(group: object, tmp_path: Path) -> None:
    mark = {**INT8_CONVROT, "convrot_groupsize": group}
    assert "QC753" in _codes(_paths(file(lambda: int8(mark=mark)), tmp_path))


def test_group_must_divide_k(tmp_path: Path) -> None:
    mark = {**INT8_CONVROT, "convrot_groupsize": 256}  # K = 64
    report = check_paths(_paths(file(lambda: int8(mark=mark)), tmp_path), target="musubi")
    assert any("does not divide input width 64" in d.message for d in report.diagnostics)


def test_convrot_only_in_params_is_refused(tmp_path: Path) -> None:
    mark = {"format": "int8_tensorwise", "params": {"convrot": True, "convrot_groupsize": 16}}
    codes = _codes(_paths(file(lambda: int8(mark=mark)), tmp_path))
    assert {"QC752", "QC753"} <= codes


def test_header_marker_does_not_complete_a_triple(tmp_path: Path) -> None:
    """The header entry is ignored even when it is valid: the module lacks its .comfy_quant."""
    build = file(lambda: int8()[:2], header_meta({P: INT8_CONVROT}))
    report = check_paths(_paths(build, tmp_path), target="musubi")
    hit = next(d for d in report.diagnostics if d.code == "QC750")
    assert f"{P}.comfy_quant" in hit.message and "header" in hit.message


def test_duplicate_across_shards_fails_musubi(tmp_path: Path) -> None:
    build = shards((int8, None), (lambda: int8()[:1], None))
    report = check_paths(_paths(build, tmp_path), target="all")
    hit = next(d for d in report.diagnostics if d.code == "QC501")
    assert hit.effective_effects["musubi"] is Effect.FAILS


def test_explain_round_trip() -> None:
    text = (
        "ValueError: Invalid ConvRot INT8 artifact /m/krea2.safetensors, layer "
        "blocks.0.attn.qkv: missing sibling tensors: blocks.0.attn.qkv.comfy_quant\n"
    )
    rendered, ok = explain(text)
    assert ok and "QC750" in rendered and "musubi-tuner 725869d" in rendered
    assert "--target musubi" in rendered


HEAD = "Invalid ConvRot INT8 artifact m.safetensors, layer blocks.0.attn.qkv: "


@pytest.mark.parametrize(
    ("tail", "codes"),
    [
        (".comfy_quant must be U8, got BF16", ["QC204"]),
        (".comfy_quant must be U8, got I8", ["QC205"]),
        (
            ".comfy_quant is not valid UTF-8 JSON (Unexpected UTF-8 BOM (decode using "
            "utf-8-sig): line 1 column 1 (char 0))",
            ["QC207"],
        ),
        (".comfy_quant is not valid UTF-8 JSON (Expecting value: line 1 column 1)", ["QC201"]),
        (
            ".comfy_quant is not valid UTF-8 JSON ('utf-8' codec can't decode byte 0xff in "
            "position 0: invalid start byte)",
            ["QC201", "QC207"],
        ),
    ],
)
def test_explain_tells_the_marker_faults_apart(tail: str, codes: list[str]) -> None:
    """musubi raises one message for an unreadable and a non-U8 marker dtype, and one for
    invalid JSON and a BOM; explain names the rule quantcheck reports for each (the
    differential suite, tests/rules/diff_musubi, checks it on every rule case)."""
    text, found = explain(HEAD + tail, as_json=True)
    assert found and json.loads(text)["codes"] == codes
