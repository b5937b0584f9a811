"""`check --gpu`: the option, its errors, `auto`, the text lines, the matrix and the JSON."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from quantcheck.cli.gpu import local_spec, resolve
from quantcheck.cli.main import main as cli_main

from .._build import file, fp8, int8, nvfp4
from ..sglang.loader_helpers import without_loaders


def main(argv: list[str]) -> int:
    """`quantcheck` without sglang's loader findings (these tests are about GPU decisions)."""
    return cli_main(without_loaders(argv))


def _file(tmp: Path, make=nvfp4) -> str:  # type: ignore[no-untyped-def]
    tmp.mkdir(parents=True, exist_ok=True)
    return str(file(make)(tmp)[0])


def test_bad_spec_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", _file(tmp_path), "--gpu", "rtx4909"])
    err = capsys.readouterr().err
    assert rc == 2 and "--gpu: 'rtx4909' names no GPU (did you mean rtx4090?)" in err


def test_text_line_per_target_and_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", _file(tmp_path), "--gpu", "rtx4090", "--gpu", "b200"])
    out = capsys.readouterr().out
    assert rc == 0
    lines = out.splitlines()
    assert any(
        ln.startswith("comfyui on rtx4090 (sm_89): 1 nvfp4 layer emulated — dequantized every")
        for ln in lines
    )
    assert any(
        ln.startswith("comfyui on b200 (sm_100): all 1 quantized layer native") for ln in lines
    )
    assert any(ln.startswith("sglang on rtx4090 (sm_89): 1 nvfp4 layer refused") for ln in lines)
    assert "needs: comfyui runs every quantized layer natively from sm_100 (b200" in out
    assert (
        "  on rtx4090 (sm_89) the nvfp4 layers are not all native; a float8_e4m3fn file of the "
        "same model runs natively there"
    ) in lines


def test_all_is_a_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", _file(tmp_path, fp8), "--gpu", "all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(ln for ln in lines if ln.startswith("GPU "))
    assert head.split() == ["GPU", "CLASS", "sglang", "comfyui", "WEIGHTS"]
    row = {
        ln.split()[0]: ln
        for ln in lines[lines.index(head) + 1 :]
        if ln.startswith(("sm_", "gfx", "xpu", "mps", "cpu", "dir"))
    }
    assert "1 emulated" in row["sm_86"] and "all 1 native" in row["sm_89"]
    assert "1 refused" in row["sm_75"]  # sglang: no FP8 below sm_80
    assert len(row) == 23


def test_json_entry_top_level_and_per_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path)
    assert main(["check", path, "--gpu", "sm_89,cuda=12.8", "--output-format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 3
    entry = doc["checkpoints"][0]["targets"]["comfyui"]["gpu"]["sm_89,cuda=12.8"]
    assert doc["targets"]["comfyui"]["gpu"]["sm_89,cuda=12.8"] == entry
    assert (entry["spec"], entry["compute_capability"], entry["cuda"]) == (
        "sm_89,cuda=12.8",
        "8.9",
        "12.8",
    )
    assert entry["layers"] == {"native": 0, "emulated": 1, "refused": 0, "depends": 0}
    assert doc["targets"]["comfyui"]["gpu_needs"]["class"] == "sm_100"


def test_without_gpu_nothing_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", _file(tmp_path), "--output-format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "gpu" not in doc["targets"]["comfyui"]
    assert "gpu" not in doc["checkpoints"][0]["targets"]["comfyui"]


def _fake_torch(monkeypatch: pytest.MonkeyPatch, *, cuda: bool, hip: str | None = None) -> None:
    torch = types.ModuleType("torch")
    torch.__version__ = "2.9.1+cu128"  # type: ignore[attr-defined]
    props = types.SimpleNamespace(gcnArchName="gfx1100:sramecc-:xnack-")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: cuda,
        get_device_capability=lambda i: (8, 9),
        get_device_properties=lambda i: props,
    )
    torch.version = types.SimpleNamespace(cuda=None if hip else "12.8", hip=hip)  # type: ignore[attr-defined]
    torch.xpu = types.SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
    torch.backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: False))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)


def test_auto_reads_the_local_device(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(monkeypatch, cuda=True)
    assert local_spec("auto") == "sm_89,torch=2.9,cuda=12.8"
    assert local_spec("auto,cuda=13.0") == "sm_89,torch=2.9,cuda=13.0"  # the given stack wins
    (spec,) = resolve(["auto"])
    assert (spec.given, spec.label(), spec.cuda) == ("auto", "sm_89", (12, 8))
    _fake_torch(monkeypatch, cuda=True, hip="6.4.1")
    assert local_spec("auto") == "gfx1100,torch=2.9,rocm=6.4"
    _fake_torch(monkeypatch, cuda=False)
    assert local_spec("auto") == "cpu,torch=2.9"


def test_auto_without_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ValueError, match="torch, which is not installed"):
        local_spec("auto")


def test_known_issue_in_the_gpu_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", _file(tmp_path, int8), "--gpu", "t4", "--target", "comfyui"])
    out = capsys.readouterr().out
    assert "warning QC801 gpu-known-wrong-output: 1 int8_tensorwise layer on t4" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("comfyui on t4"))
    assert line.endswith("known issues: QC801, QC802, QC803")


def test_sarif_run_properties(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", _file(tmp_path), "--gpu", "rtx4090", "--output-format", "sarif"])
    run = json.loads(capsys.readouterr().out)["runs"][0]
    (entry,) = run["properties"]["gpu"]
    got = entry["targets"]["comfyui"]["rtx4090"]
    assert got["formats"] == {"nvfp4": "emulated"} and "execution" not in got
    assert entry["needs"]["comfyui"]["class"] == "sm_100"


def test_sarif_without_gpu_has_no_gpu_property(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", _file(tmp_path), "--output-format", "sarif"])
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert "gpu" not in run.get("properties", {})


def test_html_gpu_by_format_grid(tmp_path: Path) -> None:
    from quantcheck.gpus import expand_specs
    from quantcheck.render.html import build_report

    def make() -> list:
        return [*nvfp4(), *fp8("blocks.1.attn.qkv")]

    path = _file(tmp_path, make)
    html = build_report([path], gpus=expand_specs(["rtx3090", "rtx4090", "b200"]))
    section = html[html.index('<section id="gpu">') :]
    section = section[: section.index("</section>")]
    assert '<a href="#gpu">GPUs</a>' in html
    assert "<th>GPU</th><th>nvfp4</th><th>float8_e4m3fn</th>" in section
    assert "<td>rtx4090 (sm_89)</td>" in section and "activations are not included" in section
    comfy = section[section.index("<h3>comfyui</h3>") :]
    row = comfy[comfy.index("<td>rtx4090 (sm_89)</td>") :].split("</tr>")[0]
    # FP8 through torch._scaled_mm: read, not run; NVFP4's gate: run by the oracle
    assert ">emulated</td>" in row and ">native [READ]</td>" in row
    b200 = comfy[comfy.index("<td>b200 (sm_100)</td>") :].split("</tr>")[0]
    assert b200.count(">native</td>") == 1 and ">native [READ]</td>" in b200
    assert "<h2>GPUs</h2>" not in build_report([path])


def test_github_notices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", _file(tmp_path), "--gpu", "rtx4090", "--output-format", "github"])
    out = capsys.readouterr().out.splitlines()
    gpu = [ln for ln in out if "title=quantcheck gpu%3A comfyui on rtx4090" in ln]
    assert len(gpu) == 1 and gpu[0].startswith("::notice file=")
    assert "::comfyui on rtx4090 (sm_89): 1 nvfp4 layer emulated — dequantized every" in gpu[0]
    needs = [ln for ln in out if "title=quantcheck gpu needs%3A comfyui" in ln]
    assert len(needs) == 1 and "natively from sm_100" in needs[0]
    assert "on rtx4090 (sm_89) the nvfp4 layers are not all native" in needs[0]


def test_github_without_gpu_has_no_gpu_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", _file(tmp_path), "--output-format", "github"])
    assert "quantcheck gpu" not in capsys.readouterr().out
