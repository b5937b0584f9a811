"""sglang's verdict is one decision everywhere (the `sgfix` brief; rules/sglang/loaders.py): the
loader that reads a file of its model family decides the status, its blocking / degrading
counts, each release's status and `needs`, the exit code and every output format; the other
loaders' findings stay visible as notes that say which loader they are about; a
`--comfyui-mode` spec's findings are reported only for its own family."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.diagnostics import Severity
from quantcheck.runtimes import get_runtime

from .._build import INT8_CONVROT, RawTensor, file, nvfp4, t

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
FLUX_NVFP4 = str(EXAMPLES / "flux" / "flux_nvfp4.safetensors")
RELEASES = get_runtime("sglang").release_names()
KEYS = tuple(f"sglang@{r}" for r in RELEASES)
H3_SAYS = "ComfyUI H3 integrated mode currently supports serialized INT8 ConvRot quantization"
QI21_SAYS = "MiniMax-H3 NVFP4 metadata requires checkpoint files"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    return rc, capsys.readouterr().out


# --- a detected family: Flux NVFP4 (the lead's example) --------------------------------------


def test_flux_text_says_one_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _cli(capsys, "check", "--no-color", FLUX_NVFP4)
    assert rc == 0  # the status, the counts, the release line and the exit code agree
    assert (
        "targets: sglang: ok (read with --transformer-weights-path, sglang's loader for Flux.1; "
        "--comfyui-mode would fail: QC636) · comfyui: ok"
    ) in out
    assert "blocking" not in out.split("targets:")[1].split("\n")[0]
    assert "releases: sglang: loads on every modelled release" in out
    assert "\n0 errors, 0 warnings, 2 notes in 1 file" in out
    # --comfyui-mode's Flux spec (no quant_markers) cannot fit the packed weights: a note
    # that names its loader; the MiniMax-H3 and Qwen-Image 2.1 specs are not Flux's
    (line,) = [ln for ln in out.splitlines() if " QC636 " in ln]
    assert line.lstrip().startswith("info ") and "Flux spec" in line
    assert line.endswith("[sglang (only with --comfyui-mode)]")
    assert "QC637" not in out and "MiniMax-H3 spec" not in out
    assert "  minimax-h3: n/a: not a loader of Flux.1 models" in out


def test_flux_json_says_one_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _cli(capsys, "check", "--output-format", "json", FLUX_NVFP4)
    doc = json.loads(out)
    (ck,) = doc["checkpoints"]
    sg = ck["targets"]["sglang"]
    assert rc == 0
    assert (sg["status"], sg["errors"], sg["degraded"]) == ("ok", 0, 0)
    assert (sg["loader"], sg["loader_family"]) == ("transformer-weights-path", "flux")
    assert sg["loaders"]["comfyui-mode"]["status"] == "fails"
    assert sg["loaders"]["text-encoder"]["status"] == "n/a"
    assert ck["releases"]["sglang"]["statuses"][RELEASES[-1]] == sg["status"]
    assert ck["releases"]["sglang"]["needs"] == RELEASES[0]
    assert ck["summary"]["errors"] == 0 and doc["summary"]["errors"] == 0
    (qc636,) = [d for d in doc["diagnostics"] if d["code"] == "QC636"]
    assert qc636["severity"] == "info" and qc636["decides"] is False
    assert qc636["read_by"] == ["comfyui-mode"] and qc636["loaders"] == ["comfyui-mode"]
    assert not [d for d in doc["diagnostics"] if d["code"] == "QC637"]


def test_flux_sarif_github_and_html_agree(capsys: pytest.CaptureFixture[str]) -> None:
    from quantcheck.render.html import build_report

    rc, out = _cli(capsys, "check", "--output-format", "sarif", FLUX_NVFP4)
    results = json.loads(out)["runs"][0]["results"]
    (qc636,) = [r for r in results if r["ruleId"] == "QC636"]
    assert rc == 0 and qc636["level"] == "note" and qc636["properties"]["decides"] is False
    rc, out = _cli(capsys, "check", "--output-format", "github", FLUX_NVFP4)
    assert rc == 0 and not [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert any(
        ln.startswith("::notice") and "[sglang (only with --comfyui-mode)]" in ln
        for ln in out.splitlines()
    )
    html = build_report([FLUX_NVFP4])
    assert '>ok</div><div class="det">0 blocking · 0 degrading · read with' in html


def test_many_checkpoints_and_the_release_targets_agree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out = _cli(capsys, "check", "--no-color", "--target", "sglang@all", FLUX_NVFP4)
    assert rc == 0
    assert "targets: sglang@0.5.18: ok · sglang@0.5.19: ok" in out
    # one line for the runs of releases that decide alike (several keys of one runtime)
    assert "\nsglang ≤0.5.20: read with --transformer-weights-path, sglang's loader" in out
    assert "\nsglang ≥0.5.21: read with" in out and "; --comfyui-mode would fail: QC636\n" in out
    rc, out = _cli(capsys, "check", "--no-color", str(EXAMPLES / "flux"))
    row = next(ln for ln in out.splitlines() if "flux_nvfp4" in ln and "fp4 " in ln)
    assert row.split()[-2:] == ["ok", "ok"]


def test_quantize_judges_as_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Flux model: NVFP4 is written and checks clean; INT8 is refused (the Flux loader,
    --transformer-weights-path, reads no INT8 markers), where before it was written and its own
    check said sglang fails."""
    src = str(EXAMPLES / "flux" / "flux_bf16.safetensors")
    out = tmp_path / "nvfp4.safetensors"
    assert main(["quantize", src, "-o", str(out), "--to", "nvfp4"]) == 0
    assert main(["check", str(out)]) == 0
    assert check_paths([str(out)]).status("sglang") == "ok"
    capsys.readouterr()
    refused = tmp_path / "int8.safetensors"
    assert main(["quantize", src, "-o", str(refused), "--to", "int8_tensorwise"]) == 2
    assert "int8_tensorwise cannot load on sglang@0.5.23: QC631" in capsys.readouterr().err
    assert not refused.exists()


# --- the same verdict on every surface, for every example and release ---------------------------


@pytest.mark.parametrize(
    "path",
    sorted([*EXAMPLES.glob("*.safetensors"), *(EXAMPLES / "flux").glob("*.safetensors")]),
    ids=lambda p: p.name,
)
def test_status_counts_releases_and_exit_code_agree(path: Path) -> None:
    report = check_paths([str(path)], target="sglang@all")
    full = check_paths([str(path)], target="sglang")
    matrix = full.releases["sglang"]["statuses"]
    for key in KEYS:
        st = report.target_status(key)
        assert matrix[key.partition("@")[2]] == st["status"], key
        assert (st["status"] == "ok") == (st["errors"] == st["degraded"] == 0), (key, st)
        assert (st["status"] == "fails") == (st["errors"] > 0), (key, st)
        assert st["status"] == st["loaders"][st["loader"]]["status"]
    assert full.target_status("sglang")["status"] == matrix[RELEASES[-1]]
    for d in report.diagnostics:
        if not any(d.effect_at(k).value != "none" for k in KEYS):
            continue  # about no target (a family note)
        decides = any(report.decides(d, k) for k in KEYS)
        # a finding that decides no verdict is a note that says which loaders read it
        assert decides or (d.effective_severity is Severity.INFO and "read_by" in d.data), d
    errors = [d for d in report.diagnostics if d.effective_severity is Severity.ERROR]
    assert report.exit_code() == (1 if errors else 0)
    if any(report.target_status(k)["status"] == "fails" for k in KEYS):
        assert errors


# --- a --comfyui-mode spec belongs to one family ---------------------------------------------


def _family(keys: tuple[str, ...], layers: Callable[[], list[RawTensor]]) -> Callable[..., Any]:
    """A file whose names pass a family's key test (its `keys`, BF16) with `layers`; four
    more BF16 modules keep the layout comparison unsure (no module called missing)."""
    pads = [t(f"pad.{i}.weight", "BF16", (64, 64)) for i in range(4)]
    return file(lambda: [*(t(k, "BF16", (64, 64)) for k in keys), *layers(), *pads])


H3_KEYS = ("video_patch_proj.weight", "audio_patch_proj.weight")
QWEN_KEYS = ("txt_norm.weight", "img_in.weight", "transformer_blocks.0.img_mod.1.weight")
#: Qwen-Image 2.1: ComfyUI fuses the SwiGLU input as img_mlp.gate_up (sglang's spec splits it)
QI21_KEYS = (*QWEN_KEYS, "transformer_blocks.0.img_mlp.gate_up.weight")
ZIMAGE_KEYS = ("cap_embedder.1.weight", "noise_refiner.0.attention.k_norm.weight")
FLUX2_KEYS = ("double_stream_modulation_img.lin.weight", "img_in.weight")


def _nvfp4() -> list[RawTensor]:
    return nvfp4("blocks.0.attn.qkv")


def _int8() -> list[RawTensor]:
    from .._build import int8

    return int8("blocks.0.attn.qkv", mark=INT8_CONVROT, scale=("F32", ()))


def _check(build: Callable[..., Any], tmp_path: Path) -> Any:
    return check_paths([str(p) for p in build(tmp_path)], target="sglang@all")


def _comfyui(report: Any) -> dict[str, str]:
    return {
        k: report.target_status(k)["loaders"]["comfyui-mode"]["status"]
        for k in KEYS
        if "comfyui-mode" in report.target_status(k)["loaders"]
    }


def _messages(report: Any, code: str) -> list[str]:
    return [d.message for d in report.diagnostics if d.code == code]


def test_minimax_h3_spec_only_for_minimax_h3(tmp_path: Path) -> None:
    report = _check(_family(H3_KEYS, _nvfp4), tmp_path)
    assert report.paths["sglang@0.5.23"]["loader_family"] == "minimax_h3"
    assert [H3_SAYS in m for m in _messages(report, "QC637")] == [True]  # not Qwen-Image 2.1's
    # before 0.5.22 its spec read no markers: the packed weights did not fit (QC636)
    assert _comfyui(report) == {
        "sglang@0.5.21": "fails",
        "sglang@0.5.22": "fails",
        "sglang@0.5.23": "fails",
    }
    (qc636,) = [d for d in report.diagnostics if d.code == "QC636"]
    assert qc636.data["loader_releases"] == ["0.5.21"] and "MiniMax-H3 spec" in qc636.message
    assert report.target_status("sglang@0.5.23")["loader"] == "minimax-h3"
    (tmp_path / "int8").mkdir()
    int8_h3 = _check(_family(H3_KEYS, _int8), tmp_path / "int8")
    assert not _messages(int8_h3, "QC637")
    assert _comfyui(int8_h3) == {
        "sglang@0.5.21": "degraded",  # 0.5.21: cast unquantized (QC635)
        "sglang@0.5.22": "ok",
        "sglang@0.5.23": "ok",
    }


def test_qwen_image_21_spec_only_for_qwen_image_21(tmp_path: Path) -> None:
    report = _check(_family(QI21_KEYS, _nvfp4), tmp_path)
    assert report.paths["sglang@0.5.23"]["loader_family"] == "qwen_image21"
    assert [QI21_SAYS in m for m in _messages(report, "QC637")] == [True]
    assert not _messages(report, "QC636")  # its spec reads the markers
    # no Qwen-Image 2.1 spec before 0.5.22: the loader does not take the family there
    assert _comfyui(report) == {
        "sglang@0.5.21": "n/a",
        "sglang@0.5.22": "fails",
        "sglang@0.5.23": "fails",
    }
    (tmp_path / "qwen").mkdir()
    qwen = _check(_family(QWEN_KEYS, _nvfp4), tmp_path / "qwen")
    assert not _messages(qwen, "QC637")
    assert ["Qwen-Image spec" in m for m in _messages(qwen, "QC636")] == [True]


def test_specs_without_markers_load_their_family_unquantized(tmp_path: Path) -> None:
    report = _check(_family(ZIMAGE_KEYS, _int8), tmp_path)
    assert not _messages(report, "QC637")
    assert ["Z-Image spec" in m for m in _messages(report, "QC635")] == [True]
    assert set(_comfyui(report).values()) == {"degraded"}


def test_a_family_without_a_spec_gets_no_comfyui_mode_findings(tmp_path: Path) -> None:
    report = _check(_family(FLUX2_KEYS, _nvfp4), tmp_path)
    assert report.paths["sglang@0.5.23"]["loader_family"] == "flux2"
    assert not {"QC635", "QC636", "QC637"} & {d.code for d in report.diagnostics}
    entry = report.target_status("sglang@0.5.23")["loaders"]["comfyui-mode"]
    assert entry["status"] == "n/a"
    assert "no --comfyui-mode spec for Flux.2" in entry["reason"]


def test_an_undetected_family_gets_every_spec(capsys: pytest.CaptureFixture[str]) -> None:
    report = check_paths([str(EXAMPLES / "nvfp4.safetensors")])
    messages = _messages(report, "QC637")
    assert len(messages) == 2 and any(H3_SAYS in m for m in messages)
    assert any(QI21_SAYS in m for m in messages)
    assert all(d.data.get("decides") is False for d in report.diagnostics)


# --- make demo ------------------------------------------------------------------------------


def test_make_demo_passes() -> None:
    """`make demo` (examples/demo.py) exits 0: the clean example exits 0, the broken one 1."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "demo.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "the clean file exited 0 (0 = clean), the broken one 1" in proc.stdout
