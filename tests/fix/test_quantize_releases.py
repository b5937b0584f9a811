"""`quantize --target` takes release targets as `check` does (issue 13): what a release cannot
load is refused before anything is read, and marker fields a release needs are written (sglang
0.5.19: full_precision_matrix_mult on NVFP4), so the result loads on that release."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.convert.eligible import format_refusal, marker_fields
from quantcheck.model.checkpoint import load_checkpoint
from rules.sglang.loader_helpers import T5_KEY

LAYER = "blocks.0.fc"


def _plain(tmp_path: Path) -> Path:
    """A text encoder (sglang's text-encoder loader reads the markers, whose release data these
    tests are about; a DiT's --transformer-weights-path reads none: tests/fix/test_convert.py)."""
    w = (np.arange(128 * 128, dtype=np.float32).reshape(128, 128) % 97 - 48) / 480
    src = tmp_path / "plain.safetensors"
    te = {name: np.ones((16, 16), np.float32) for name in (T5_KEY, "extra.weight")}
    safetensors.numpy.save_file({f"{LAYER}.weight": w, **te}, str(src))
    return src


def _quantize(src: Path, out: Path, fmt: str, target: str) -> int:
    return main(["quantize", str(src), "-o", str(out), "--to", fmt, "--target", target])


def test_nvfp4_for_0519_requests_full_precision_matrix_mult(tmp_path: Path) -> None:
    src = _plain(tmp_path)
    old, new = tmp_path / "old.safetensors", tmp_path / "new.safetensors"
    assert _quantize(src, old, "nvfp4", "sglang@0.5.19") == 0
    assert _quantize(src, new, "nvfp4", "sglang") == 0
    with load_checkpoint(str(old)) as ck:
        marker = ck.layers[LAYER].marker
        assert marker is not None and marker.get("full_precision_matrix_mult") is True
    with load_checkpoint(str(new)) as ck:
        marker = ck.layers[LAYER].marker
        assert marker is not None and marker.get("full_precision_matrix_mult") is not True
    # the 0.5.19 file loads there; the plain one does not (QC614)
    status = check_paths([str(old)], target="sglang@0.5.19").target_status("sglang@0.5.19")
    assert {k: status[k] for k in ("status", "errors", "degraded")} == {
        "status": "ok",
        "errors": 0,
        "degraded": 0,
    }
    bare = check_paths([str(new)], target="sglang@0.5.19")
    assert bare.target_status("sglang@0.5.19")["status"] == "fails"


@pytest.mark.parametrize(
    ("fmt", "target", "words"),
    [
        ("int8_tensorwise", "sglang@0.5.18", "no marker inspector"),
        ("float8_e4m3fn", "sglang@0.5.18", "no marker inspector"),
        ("mxfp8", "sglang@0.5.19", "tp_rank"),
        ("mxfp8", "sglang@0.5.21", "tp_rank"),
        ("mxfp8", "comfyui,sglang@all", "sglang 0.5.18 has no marker inspector"),
    ],
)
def test_a_release_refuses_what_it_cannot_load(
    fmt: str, target: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.safetensors"
    assert _quantize(_plain(tmp_path), out, fmt, target) == 2
    err = capsys.readouterr().err
    assert words in err and "cannot load on sglang@" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("fmt", "target"),
    [("nvfp4", "sglang@0.5.18"), ("mxfp8", "sglang@0.5.22"), ("int8_tensorwise", "sglang@0.5.19")],
)
def test_a_release_writes_what_it_loads(fmt: str, target: str, tmp_path: Path) -> None:
    out = tmp_path / "out.safetensors"
    assert _quantize(_plain(tmp_path), out, fmt, target) == 0
    loaders = check_paths([str(out)], target=target).target_status(target)["loaders"]
    # the marker path in the text encoder's order (0.5.18: its one transformer loader); the
    # other loaders name theirs
    v = loaders.get("text-encoder") or loaders["transformer-weights-path"]
    assert v["status"] == "ok", loaders


def test_eligibility_per_release() -> None:
    assert format_refusal("mxfp8", {}, "sglang@0.5.20")
    assert format_refusal("mxfp8", {}, "sglang@0.5.22") is None
    assert format_refusal("mxfp8", {}, "sglang")  # 0.5.23: QC615, weight load
    assert marker_fields("nvfp4", "sglang@0.5.19") == {"full_precision_matrix_mult": True}
    assert marker_fields("nvfp4", "sglang@0.5.20") == {}
    assert marker_fields("nvfp4", "comfyui,sglang@all") == {"full_precision_matrix_mult": True}


def test_unknown_release_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        _quantize(_plain(tmp_path), tmp_path / "o.safetensors", "nvfp4", "sglang@0.5.99")
    assert exc.value.code == 2
    assert "sglang models 0.5.18" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("fmt", "too_old", "first"),
    [
        ("int8_tensorwise", "v0.8", "v0.27"),
        ("mxfp8", "v0.8", "v0.18"),
        ("convrot_w4a4", "v0.27", "v0.28"),
        ("asym_w4a8_int8", "v0.28", "v0.31"),
        ("w6a8_int8", "0271a469", "2026-09-29"),
    ],
)
def test_comfyui_release_refuses_a_format_from_a_later_step(
    fmt: str, too_old: str, first: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _plain(tmp_path)
    assert _quantize(src, tmp_path / "old.safetensors", fmt, f"comfyui@{too_old}") == 2
    assert f"ComfyUI before {first} has no {fmt}" in capsys.readouterr().err
    out = tmp_path / "new.safetensors"
    assert _quantize(src, out, fmt, f"comfyui@{first}") == 0
    key = f"comfyui@{first}"
    assert check_paths([str(out)], target=key).target_status(key)["status"] == "ok"
