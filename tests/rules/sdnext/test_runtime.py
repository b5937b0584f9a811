"""SD.Next as a target: its own rules, its effects on every existing code, the example
checkpoints' verdicts, `--target all` and `explain`.

Each own rule's failing file and passing twin are rows of `sdnext/cases.py` (run by
test_rule_table.py); here: what the table cannot say.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from example_files import EXAMPLES
from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.messages import match_message
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime, runtime_names
from quantcheck.runtimes.sdnext import EFFECTS, LEFT_NONE

from .._build import (
    INT8_CONVROT,
    P,
    entry,
    file,
    fp8,
    header_meta,
    int8,
    nvfp4,
    raw_file,
    t,
    w4a8,
)

NAME = "sdnext"
OWN = tuple(f"QC71{n}" for n in range(8))
FELL_BACK = "falls back to the base model's transformer (warning in its log only)"

#: What SD.Next does with each bundled example: `degraded` = it loads the base model instead.
EXAMPLE_VERDICTS = {
    "awq_w4a16.safetensors": "degraded",
    "broken_seeds.safetensors": "degraded",
    "fp8_e4m3fn.safetensors": "ok",
    "int8_convrot.safetensors": "ok",
    "mxfp8.safetensors": "degraded",
    "nvfp4.safetensors": "ok",
    "w4a4_convrot.safetensors": "degraded",
    "w4a8_codebook.safetensors": "degraded",
    "w6a8_int8.safetensors": "degraded",
}


def _codes(paths: list[Path], target: str = NAME) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in check_paths([str(p) for p in paths], target=target).diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def test_every_code_is_decided_for_sdnext() -> None:
    """A new code must be put in EFFECTS, LEFT_NONE (with a reason) or SD.Next's own rules."""
    assert not set(EFFECTS) & set(LEFT_NONE)
    assert all(reason.strip() for reason in LEFT_NONE.values())
    others = {c for c in all_rules() if c.startswith("QC7") and c not in OWN}
    assert set(all_rules()) - others == set(EFFECTS) | set(LEFT_NONE) | set(OWN)


def test_sdnext_is_its_own_loader_outside_the_default_target() -> None:
    rt = get_runtime(NAME)
    assert rt.based_on is None and not rt.default_target
    assert rt.release_names() == ("d11a619",)
    for code in OWN:
        rule = all_rules()[code]
        assert "vladmandic/sdnext @d11a619" in rule.evidence
        # a refusal is a silent fallback: degraded, never "fails" as declared
        assert rule.effects[NAME].value in ("degraded", "none")


@pytest.mark.parametrize("name", sorted(EXAMPLE_VERDICTS))
def test_example_verdicts(name: str) -> None:
    report = check_paths([str(EXAMPLES / name)], target=NAME)
    assert report.target_status(NAME)["status"] == EXAMPLE_VERDICTS[name]


def test_refusals_say_the_runtime_falls_back(tmp_path: Path) -> None:
    found = _codes(file(lambda: [*fp8(), *int8("blocks.1.mlp.fc")])(tmp_path))
    d = found["QC711"][0]
    assert FELL_BACK in d.message and d.effective_severity.value == "error"
    assert d.effective_effects[NAME].value == "degraded"
    assert d.effective_effects["sglang"].value == "none"


def test_generic_codes_take_the_table_effect(tmp_path: Path) -> None:
    # a missing INT8 scale: the SDNQ layer misses its key, validate_state_dict_load -> fallback
    paths = file(lambda: int8()[::2])(tmp_path)  # weight and marker, no weight_scale
    d = _codes(paths, "all")["QC301"][0]
    assert d.effective_effects[NAME].value == "degraded"
    assert d.effective_effects["comfyui"].value == "fails"


def test_generic_finding_stays_general_in_the_default_report(tmp_path: Path) -> None:
    # QC302 (a tensor the format does not use) degrades SD.Next only through its effects
    # table: the default report still shows it, as before SD.Next was modelled
    paths = file(lambda: [*int8(), t(f"{P}.weight_scale_2", "F32", ())])(tmp_path)
    default = check_paths([str(p) for p in paths])
    d = next(d for d in default.diagnostics if d.code == "QC302")
    assert d.effective_effects[NAME].value == "degraded"
    doc = next(x for x in default.to_json()["diagnostics"] if x["code"] == "QC302")
    assert doc["targets"] == [] and set(doc["effects"]) == {"sglang", "comfyui"}


def test_a_harmless_instance_of_a_failing_code_stays_harmless(tmp_path: Path) -> None:
    # QC121 fails every reader when an entry lacks a field (SD.Next's table: fails), but an
    # entry with an extra field is read by all of them (the check says: unaffected)
    extra = raw_file({"a.weight": {**entry("F32", [4], 0, 16), "offset": 0}}, bytes(16))
    d = _codes(extra(tmp_path), "all")["QC121"][0]
    assert d.effective_effects[NAME].value == "none" and d.targets == []
    other = tmp_path / "b"
    other.mkdir()
    lacking = raw_file({"a.weight": {"dtype": "F32", "shape": [4]}}, bytes(16))
    d = _codes(lacking(other), "all")["QC121"][0]
    assert d.effective_effects[NAME].value == "fails"


def test_sdnext_findings_stay_out_of_the_default_report(tmp_path: Path) -> None:
    paths = [str(p) for p in file(w4a8)(tmp_path)]
    assert "QC710" not in {d.code for d in check_paths(paths).diagnostics}
    assert "QC710" in {d.code for d in check_paths(paths, target=NAME).diagnostics}


def test_nvfp4_scale_layout_is_the_opposite_of_sglang(tmp_path: Path) -> None:
    unpadded = file(lambda: nvfp4(n=64, k=64, scale_shape=(64, 4)))
    padded = file(lambda: nvfp4(n=64, k=64))
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    sd_unpadded = check_paths([str(p) for p in unpadded(a)], target="all")
    sd_padded = check_paths([str(p) for p in padded(b)], target="all")
    assert sd_unpadded.target_status(NAME)["status"] == "degraded"
    assert sd_padded.target_status(NAME)["status"] == "ok"
    # sglang wants (N, K/16): its marker readers refuse the padded layout (QC308); its
    # --transformer-weights-path, which reads this file, infers a wrong group size (QC633)
    padded_sglang = sd_padded.target_status("sglang")
    assert padded_sglang["status"] == "degraded"
    assert padded_sglang["loaders"]["text-encoder"]["status"] == "fails"


def test_convrot_group_unreadable_is_a_hard_failure(tmp_path: Path) -> None:
    paths = file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": None}))(tmp_path)
    d = _codes(paths)["QC713"][0]
    assert d.effective_effects[NAME].value == "fails" and "int() raises" in d.message


def test_header_only_file_is_read_like_markers(tmp_path: Path) -> None:
    # header entries become markers: an unsupported format in the header alone is refused
    def bare() -> list:
        return [r for r in w4a8() if not r.name.endswith(".comfy_quant")]

    paths = file(bare, header_meta({P: {"format": "asym_w4a8_int8", "group_size": 16}}))(tmp_path)
    assert "QC710" in _codes(paths)


def test_params_only_keys_are_ignored(tmp_path: Path) -> None:
    mark = {"format": "int8_tensorwise", "convrot": True, "params": {"convrot_groupsize": 16}}
    d = _codes(file(lambda: int8(mark=mark))(tmp_path))["QC717"][0]
    assert "rotates with 256" in d.message and d.fix is not None
    assert d.fix.action == "set-key" and dict(d.fix.params) == {
        "key": "convrot_groupsize",
        "value": 16,
    }


def test_fp8_as_u8_has_a_safe_relabel(tmp_path: Path) -> None:
    d = _codes(file(lambda: fp8(weight="U8"))(tmp_path))["QC714"][0]
    assert d.fix is not None and d.fix.safety.value == "safe" and d.fix.action == "relabel"
    other = tmp_path / "b"
    other.mkdir()
    d = _codes(file(lambda: fp8(weight="I8"))(other))["QC714"][0]
    assert d.fix is None  # I8 bytes under an FP8 marker: which one is wrong is unknown


def test_target_all_names_sdnext_in_the_summary(capsys: pytest.CaptureFixture) -> None:
    rc = main(["check", "--target", "all", str(EXAMPLES / "mxfp8.safetensors")])
    out = capsys.readouterr().out
    assert rc == 1  # QC710 is an error
    assert "sdnext: degraded" in out.split("targets:")[1]
    main(["check", "--format", "json", "--target", "all", str(EXAMPLES / "nvfp4.safetensors")])
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["targets"]) == list(runtime_names()) and NAME in doc["targets"]
    assert doc["targets"][NAME]["status"] == "ok"


def test_many_checkpoint_table_has_a_column_per_runtime(capsys: pytest.CaptureFixture) -> None:
    main(["check", "--target", "all", str(EXAMPLES)])
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("CHECKPOINT"))
    assert head.split()[-len(runtime_names()) :] == [n.upper() for n in runtime_names()]
    # the total counts each checkpoint's worst verdict over the runtimes asked for
    main(["check", "--target", "sglang,comfyui,forge-neo,sdnext", str(EXAMPLES)])
    total = capsys.readouterr().out.strip().splitlines()[-1]
    # sglang reads every example with --transformer-weights-path (the Flux loader; the loader
    # of a DiT whose family is not detected): it infers NVFP4 from the tensors (nvfp4 and
    # flux_nvfp4 ok) and refuses the other undeclared marker files (QC631)
    assert total.startswith("13 checkpoints: 2 ok, 10 failing, 1 not quantized"), total
    main(["check", "--target", "comfyui,forge-neo,sdnext", str(EXAMPLES)])
    total = capsys.readouterr().out.strip().splitlines()[-1]
    assert total.startswith("13 checkpoints: 5 ok, 1 degraded, 6 failing, 1 not quantized"), total


def test_explain_round_trip(capsys: pytest.CaptureFixture) -> None:
    log = (
        'WARNING Load model: transformer="/models/x.safetensors" override incompatible with '
        "cls=FluxTransformer2DModel (Load model: type=FluxTransformer2DModel "
        "native_transformer comfy_quant format mxfp8 not supported)"
    )
    m = match_message(log)
    assert m is not None and m.code == "QC710" and m.pattern.runtime == "SD.Next d11a619"
    m = match_message(
        "Load model: transformer=native transformer comfy_quant marked module "
        "'blocks.0.attn.qkv' block scales hold 256 values, expected 512"
    )
    assert m is not None and m.code == "QC715" and m.values["prefix"] == "blocks.0.attn.qkv"
    m = match_message(
        "Load model: type=X native_transformer comfy_quant marker for 'a.b' is malformed "
        "(KeyError: 'format')"
    )
    assert m is not None and m.code == "QC212"
    assert main(["explain", log]) == 0
    assert "--target sdnext" in capsys.readouterr().out


def test_html_report_has_one_verdict_per_runtime(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    example = str(EXAMPLES / "mxfp8.safetensors")
    assert main(["report", "--target", "all", "-o", str(out), example]) == 0
    page = out.read_text()
    cards = re.findall(r'<div class="lbl">([\w-]+)</div><div class="val">(\w+)</div>', page)
    verdicts = {name: status for name, status in cards if status in ("ok", "degraded", "fails")}
    assert set(verdicts) == set(runtime_names())
    assert {k: verdicts[k] for k in ("sglang", "comfyui", "forge-neo", NAME)} == {
        "sglang": "fails",  # 0.5.23 stops MXFP8 at weight load (QC615)
        "comfyui": "ok",
        "forge-neo": "ok",
        NAME: "degraded",
    }


ROTATED = {"format": "int8_tensorwise", "convrot": True}


@pytest.mark.parametrize(
    ("code", "make"),
    [
        ("QC714", lambda: fp8(weight="U8")),
        ("QC717", lambda: int8(mark={**ROTATED, "params": {"convrot_groupsize": 16}})),
    ],
)
def test_fix_for_sdnext_repairs_the_file(code: str, make, tmp_path: Path) -> None:
    [src] = file(make)(tmp_path)
    assert code in _codes([src])
    out = tmp_path / "fixed.safetensors"
    assert main(["fix", "--target", NAME, str(src), "-o", str(out)]) in (0, 1)
    assert check_paths([str(out)], target="all").target_status(NAME)["status"] == "ok"
