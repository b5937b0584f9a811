"""`check` and `inspect` report the family: a text line when a family's keys match, a
`family` object in the JSON (schema_version 3 for check), "unknown" otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantcheck.cli.main import main

from . import standin as S

LINE = "family: flux2 (5 double + 20 single blocks, hidden 3072)"


@pytest.fixture()
def klein(tmp_path: Path) -> Path:
    tensors = S.quantize(
        S.bf16(S.shapes("flux2-klein-4b")), "float8_e4m3fn", lambda n, _s: "blocks" in n
    )
    return S.write(tmp_path / "klein.safetensors", tensors)


@pytest.fixture()
def plain(tmp_path: Path) -> Path:
    tensors = S.quantize({"blocks.0.proj.weight": ("BF16", (64, 64), None)}, "float8_e4m3fn")
    return S.write(tmp_path / "plain.safetensors", tensors)


def test_check_text_names_the_family(klein: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", str(klein)])
    out = capsys.readouterr().out
    assert LINE in out.splitlines()
    assert "QC864 family-topology: Flux.2: 80/80 block linears quantized" in out


def test_check_json_carries_the_family(klein: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--output-format", "json", str(klein)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 3
    fam = doc["checkpoints"][0]["family"]
    assert fam["name"] == "flux2" and fam["comfyui"] == "flux2"
    assert fam["summary"] == LINE.removeprefix("family: ")
    assert fam["config"] == {"hidden_size": 3072, "in_channels": 128, "context_in_dim": 7680}
    assert fam["blocks"] == {"double": 5, "single": 20} and fam["layout"] == "flux2-dev"


def test_unknown_is_json_only(plain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--output-format", "json", str(plain)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["checkpoints"][0]["family"] == {"name": None, "summary": "unknown"}
    main(["check", str(plain)])
    assert "family:" not in capsys.readouterr().out


def test_inspect_names_the_family(klein: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["inspect", "--summary", str(klein)])
    assert LINE in capsys.readouterr().out.splitlines()
    main(["inspect", "--output-format", "json", str(klein)])
    assert json.loads(capsys.readouterr().out)["family"]["name"] == "flux2"
