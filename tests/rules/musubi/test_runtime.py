"""musubi-tuner (`--target musubi`): the effects table covers every generic code, the bundled
examples get the verdicts read in musubi's code at both releases, edge cases of its checks and
of what changed between the releases, and its messages round-trip through `explain`. Per-rule
failing/passing files: musubi/cases.py.

musubi-tuner is not on PyPI: tests/rules/musubi/diff runs its functions from pinned folders
outside the repository (`make diff-musubi`).
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

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, nvfp4, shards, t
from .cases import EMBED, MLP, int8_embedding, te

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


def _codes(paths: list[str], target: str = "musubi") -> set[str]:
    return {d.code for d in check_paths(paths, target=target).diagnostics}


def _status(paths: list[str], target: str) -> str:
    return str(check_paths(paths, target=target).target_status(target)["status"])


def _paths(build, tmp_path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    tmp_path.mkdir(parents=True, exist_ok=True)
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


def test_the_lora_path_is_read_at_the_newest_release() -> None:
    """runtimes/musubi_lora.py's evidence is the code `--target musubi` means (0.3.6)."""
    from quantcheck.runtimes.musubi_lora import PATH

    newest = get_runtime("musubi").newest.name
    assert PATH.read_at.startswith(newest)
    assert all(f"musubi-tuner {newest}" in e and "[READ]" in e for e in PATH.evidence.values())


@pytest.mark.parametrize("target", ["musubi", "musubi@725869d"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_verdicts(name: str, target: str, examples_dir: Path) -> None:
    """The examples get the same verdict at both releases (NVFP4 is a DiT file here)."""
    assert _status([str(examples_dir / f"{name}.safetensors")], target) == EXAMPLES[name]


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
    differential suite, tests/rules/musubi/diff, checks it on every rule case)."""
    text, found = explain(HEAD + tail, as_json=True)
    assert found and json.loads(text)["codes"] == codes


# --- what changed from 725869d to 0.3.6 --------------------------------------------------------


@pytest.mark.parametrize(
    ("convrot", "code"),
    [
        (1, "QC758"),
        ("yes", "QC758"),
        (0, "QC752"),
        ("", "QC752"),
        (None, "QC752"),
        (False, "QC752"),
    ],
)
def test_convrot_is_tested_for_truth_at_0_3_6(convrot: object, code: str, tmp_path: Path) -> None:
    """725869d wants convrot exactly true; 0.3.6 takes any truthy value (`not spec.get`)."""
    paths = _paths(file(lambda: int8(mark={**INT8_CONVROT, "convrot": convrot})), tmp_path)
    codes = _codes(paths, "musubi@all")
    assert code in codes and ({"QC752", "QC758"} - {code}).isdisjoint(codes)
    assert _status(paths, "musubi@725869d") == "fails"
    assert _status(paths, "musubi") == ("ok" if code == "QC758" else "fails")


def test_both_scale_names_fail_725869d_and_degrade_0_3_6(tmp_path: Path) -> None:
    paths = _paths(file(lambda: [*int8(), t(f"{P}.scale_weight", "F32", (64, 1))]), tmp_path)
    assert _status(paths, "musubi@725869d") == "fails"
    assert _status(paths, "musubi") == "degraded"


def test_an_incomplete_module_also_names_its_format(tmp_path: Path) -> None:
    """0.3.6 reads every marker before the tensors: a W4A8-like module without weight_scale is
    refused for its format first (explain maps that message to QC751)."""
    paths = _paths(file(lambda: [int8()[0], int8(mark={"format": "asym_w4a8_int8"})[2]]), tmp_path)
    assert {"QC750", "QC751"} <= _codes(paths)


def test_group_is_checked_on_shape_1_whatever_the_rank(tmp_path: Path) -> None:
    paths = _paths(file(lambda: int8(weight=("I8", (8, 4, 16)))), tmp_path)
    assert {"QC753", "QC754"} <= _codes(paths)


def test_unreadable_dtypes_are_grouped(tmp_path: Path) -> None:
    build = file(lambda: [*int8(), t("a", "U16", (4,)), t("b", "U16", (4,)), t("c", "U32", (2,))])
    found = [
        d
        for d in check_paths(_paths(build, tmp_path), target="musubi").diagnostics
        if d.code == "QC761"
    ]
    assert sorted(d.message.split(" (")[0] for d in found) == [
        "1 tensor is U32",
        "2 tensors are U16",
    ]
    assert _status(_paths(build, tmp_path / "x"), "musubi@725869d") == "ok"


def test_an_nvfp4_text_encoder_loads_at_0_3_6_only(tmp_path: Path) -> None:
    paths = _paths(file(lambda: te(nvfp4(MLP), int8_embedding())), tmp_path)
    codes = _codes(paths, "musubi@all")
    assert "QC763" in codes and "QC751" not in codes  # the old gate's codes are QC763's
    assert _status(paths, "musubi@725869d") == "fails"
    assert not {c for c in _codes(paths) if c.startswith(("QC75", "QC76")) and c != "QC763"}


def test_the_same_nvfp4_layer_in_a_dit_fails_both(tmp_path: Path) -> None:
    paths = _paths(file(lambda: nvfp4()), tmp_path)
    assert "QC751" in _codes(paths) and _status(paths, "musubi") == "fails"


@pytest.mark.parametrize(
    ("layers", "code"),
    [
        (lambda: te(nvfp4(MLP), int8(f"{MLP}_b", mark={"format": "int8_tensorwise"})), "QC765"),
        (lambda: te(nvfp4(MLP), nvfp4(EMBED)), "QC765"),
        (lambda: te([*nvfp4(MLP), t(f"{MLP}.input_scale", "F32", ())]), "QC764"),
        (
            lambda: te(
                nvfp4(MLP),
                [t(f"{MLP}_b.weight", "BF16", (64, 64)), t(f"{MLP}_b.weight_scale_2", "F32", ())],
            ),
            "QC764",
        ),
        (lambda: te(fp8(MLP)), "QC762"),
        (lambda: te(int8(MLP, mark={"format": "int8_tensorwise"})), "QC762"),
    ],
)
def test_the_text_encoder_routes(layers, code: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = _paths(file(layers), tmp_path)
    assert code in _codes(paths) and _status(paths, "musubi") == "fails"


def test_a_text_encoder_without_markers_takes_f8_weights(tmp_path: Path) -> None:
    """No marker at all: load_h3_text_encoder casts floating tensors to BF16 (no QC760), but a
    legacy scale_weight beside the weight is a key its strict load refuses."""
    bare = _paths(file(lambda: te([t(f"{MLP}.weight", "F8_E4M3", (64, 64))])), tmp_path / "a")
    assert "QC760" not in _codes(bare)
    legacy = [t(f"{MLP}.weight", "F8_E4M3", (64, 64)), t(f"{MLP}.scale_weight", "F32", ())]
    assert "QC760" in _codes(_paths(file(lambda: te(legacy)), tmp_path / "b"))
    dit = _paths(file(lambda: [t(f"{P}.weight", "F8_E4M3", (64, 64))]), tmp_path / "c")
    assert "QC760" in _codes(dit)


NEW = "ValueError: "


@pytest.mark.parametrize(
    ("message", "codes"),
    [
        (
            "Invalid comfy_quant tensor for m: expected 1D uint8, got torch.int8 ndim=1",
            ["QC205"],
        ),
        (
            "Invalid comfy_quant tensor for m: expected 1D uint8, got torch.uint8 ndim=2",
            ["QC756"],
        ),
        (
            "Invalid comfy_quant JSON for m.comfy_quant: Expecting value: line 1 column 1 (char 0)",
            ["QC201", "QC203"],
        ),
        (
            "Unsupported comfy_quant format for m.comfy_quant: {'format': 'nvfp4'}. Only ConvRot "
            'INT8 ("int8_tensorwise" with "convrot": true) is supported.',
            ["QC751"],
        ),
        (
            "Unsupported comfy_quant format for m.comfy_quant: {'format': 'int8_tensorwise'}. Only "
            'ConvRot INT8 ("int8_tensorwise" with "convrot": true) is supported.',
            ["QC752"],
        ),
        (
            "Invalid convrot_groupsize for m: 32 (must be a power of 4, e.g. 64 or 256)",
            ["QC753"],
        ),
        (
            "Layer m.weight is already in torch.float8_e4m3fn format but has no .comfy_quant spec.",
            ["QC760", "QC750"],
        ),
        ("Layer m.weight is already in torch.int8 format but has no .comfy_quant spec.", ["QC750"]),
        ("Pre-quantized ConvRot layer m: scale shape must be (64, 1), got (64,)", ["QC755"]),
        (
            "Unsupported ComfyUI quantization format combination in text encoder checkpoint: "
            "['convrot_int8', 'nvfp4']. Supported: ConvRot INT8",
            ["QC762"],
        ),
        (
            "NVFP4 per-tensor scale m.weight_scale_2 must be a F32 scalar, got torch.float32 (1,)",
            ["QC764"],
        ),
        (
            "ConvRot INT8 state dict declares missing module language_model.embed_tokens (total 1 "
            "unmatched)",
            ["QC765"],
        ),
        ("MiniMax-H3 transformer checkpoint is missing config metadata", ["QC766"]),
        (
            "TypeError: view() received an invalid combination of arguments - got (NoneType), but "
            "expected one of:",
            ["QC761"],
        ),
    ],
)
def test_explain_knows_0_3_6_messages(message: str, codes: list[str]) -> None:
    text, found = explain(NEW + message, as_json=True)
    doc = json.loads(text)
    assert found and doc["codes"] == codes and doc["runtime"] == "musubi-tuner 0.3.6"
