"""The other runtimes' LoRA paths (runtimes/<rt>_lora.py): the data, the per-layer outcomes and
figures, their re-quantizers (numeric/lora_requant.py) and the outputs."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from quantcheck.cli.main import main
from quantcheck.numeric.lora_requant import _e2m1, merge16, sdnq_requant
from quantcheck.runtimes import get_runtime
from quantcheck.runtimes.lora_path import LORA_PATHS, OUTCOMES

from .test_lora import ALL, _analyse, _pair


def _run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(LORA_PATHS))
def test_each_path_is_data_with_evidence(name: str) -> None:
    path = LORA_PATHS[name]
    assert get_runtime(name).name == name
    assert set(path.outcome.values()) | {path.other} <= set(OUTCOMES)
    assert path.default_mode in path.modes and path.read_at and path.keys and path.cost
    tags = [e for e in path.evidence.values() if "[READ]" in e or "[RUN]" in e]
    assert len(tags) == len(path.evidence), "every fact says [READ] or [RUN]"
    # a path said to be run has its outcome proven by running the runtime's code
    run = [e for e in path.evidence.values() if "[RUN]" in e]
    assert path.verified in ("[RUN]", "[READ]") and (path.verified == "[RUN]") <= bool(run)
    merging = {"requantized", "merged"} & {*path.outcome.values(), path.other}
    assert bool(path.requant) == bool(merging)


def test_outcomes_per_runtime(tmp_path: Path) -> None:
    """nvfp4: sglang side branch, Forge Neo and SD.Next re-quantize, InvokeAI merges into its
    bf16 model, sd.cpp and DiffSynth do not load the format."""
    b, lo = _pair(tmp_path, "nvfp4")
    keys = ("sglang", "comfyui", "forge-neo@939c56d", "sdnext", "invokeai", "sdcpp", "diffsynth")
    a = _analyse(b, lo, runtimes=keys)
    assert a.runtimes == ["sglang", "forge-neo", "sdnext", "invokeai", "sdcpp", "diffsynth"]
    got = {rt: e["outcome"] for rt, e in a.layers[0].runtimes.items()}
    assert got == {
        "sglang": "side-branch",
        "forge-neo": "requantized",
        "sdnext": "requantized",
        "invokeai": "merged",
        "sdcpp": "not-loaded",
        "diffsynth": "not-loaded",
    }
    # a side branch is exact from the headers alone; the merges need the weights
    assert a.layers[0].runtimes["sglang"]["retention"] == 1.0
    assert "retention" not in a.layers[0].runtimes["sdnext"]


def test_figures_per_runtime(tmp_path: Path) -> None:
    """Forge Neo's figures are ComfyUI's; SD.Next's round-to-nearest loses a 1 % LoRA on
    nvfp4 where ComfyUI's stochastic rounding keeps its direction."""
    b, lo = _pair(tmp_path, "nvfp4", size=0.01)
    a = _analyse(b, lo, numbers=True, runtimes=("forge-neo", "sdnext", "invokeai"))
    for r in a.layers:
        assert r.runtimes["forge-neo"]["retention"] == r.figures["retention"]
        assert r.runtimes["sdnext"]["retention"] < 0.5 < r.figures["retention"]
        assert r.runtimes["invokeai"]["basis"] == "measured (bf16 merge)"
        assert r.runtimes["invokeai"]["requant_error"] == 0.0


def test_e2m1_is_pack_floats_rounding() -> None:
    """pack_float rounds a tie down (1.75 -> 1.5, where round-half-even gives 2.0), goes up
    only past half (1.8 -> 2.0), and tests the subnormal range after that first step
    (0.7 -> 0.95 -> 1.0 and 0.24 -> 0.30 -> 0.5, where rounding alone gives 0.5 and 0); the
    values are those SD.Next's own pack_float/unpack_float @d11a619 return (run once with
    torch; the differential suite runs them on random values)."""
    y = np.array([1.75, 3.5, 1.8, 1.25, 0.7, 0.24, 0.26, -0.7, 5.9, 0.75], np.float32)
    want = np.array([1.5, 3.0, 2.0, 1.0, 1.0, 0.5, 0.5, -1.0, 6.0, 1.0], np.float32)
    assert np.array_equal(_e2m1(y), want)


def test_sdnq_requant_scales_per_row_and_group() -> None:
    w = (np.random.default_rng(1).standard_normal((4, 64)) * 0.02).astype(np.float32)
    w[0] *= 10
    for fmt, top in (("int8_tensorwise", 127), ("float8_e4m3fn", 448.0), ("nvfp4", 6.0)):
        got = sdnq_requant(w, fmt)
        assert got.shape == w.shape and got.dtype == np.float32
        # a scale per row (per 16-group for FP4): the largest value of each row is exact
        assert np.allclose(np.abs(got).max(axis=1), np.abs(w).max(axis=1), rtol=1e-6), fmt
        rel = np.linalg.norm(got - w) / np.linalg.norm(w)
        assert rel < {"int8_tensorwise": 0.01, "float8_e4m3fn": 0.05, "nvfp4": 0.2}[fmt]
        assert top > 0
    rot = sdnq_requant(w, "int8_tensorwise", {"convrot": True, "convrot_groupsize": 16})
    assert np.linalg.norm(rot - w) / np.linalg.norm(w) < 0.01
    with pytest.raises(ValueError, match="mxfp8"):
        sdnq_requant(w, "mxfp8")


def test_merge16_rounds_like_the_runtime() -> None:
    w = np.full((2, 2), 1.0, np.float32)
    small = np.full((2, 2), 2.0**-10, np.float32)  # under half a bf16 ulp of 1.0 (2^-8)
    base, merged = merge16(w, small, "bf16")
    assert np.array_equal(base, w) and np.array_equal(merged, w)  # rounded away
    _, merged16 = merge16(w, small, "f16")  # f16 keeps it (ulp 2^-10)
    assert np.array_equal(merged16, w + small)
    _, big = merge16(w, np.full((2, 2), 0.1, np.float32), "bf16")
    assert np.array_equal(big, np.full((2, 2), np.float32(1.1).astype(ml_dtypes.bfloat16)))


def test_json_lora_path_per_target(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "int8_tensorwise")
    _, out = _run(["lora", str(b), str(lo), "--target", "all", "--output-format", "json"], capsys)
    doc = json.loads(out)
    assert doc["schema_version"] == 2
    t = doc["targets"]
    comfy = t["comfyui"]["lora_path"]
    assert comfy["modelled"] and comfy["verified"] == "[RUN]"
    assert t["sglang"]["lora_path"]["mode"] == "auto"
    assert t["sglang"]["lora_path"]["formats"]["int8_tensorwise"] == {
        "layers": 8,
        "outcome": "side-branch",
        "basis": "exact",
        "retention": 1.0,
        "added_error": 0.0,
    }
    assert t["sdcpp"]["lora_path"]["formats"]["int8_tensorwise"]["outcome"] == "side-branch"
    assert t["sdnext"]["lora_path"]["formats"]["int8_tensorwise"]["outcome"] == "requantized"
    assert doc["layers"][0]["runtimes"]["musubi"]["outcome"] == "side-branch"
    codes = {d["code"] for d in doc["diagnostics"]}
    assert "QC839" in codes


def test_text_lists_each_runtime(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "float8_e4m3fn", paths=ALL[:2])
    _, out = _run(["lora", str(b), str(lo), "--target", "sglang,sdnext,sdcpp"], capsys)
    assert "per runtime (its default mode):" in out
    assert "sglang (auto mode) [RUN]: 2 float8_e4m3fn side-branch (all of it arrives)" in out
    assert "sdnext (native-fuse mode) [READ]: 2 float8_e4m3fn requantized (retention" in out
    assert "sdcpp (auto mode) [READ]: 2 float8_e4m3fn merged (retention" in out


def test_gpu_lora_mode_of_sglang_is_a_side_branch(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "float8_e4m3fn", paths=ALL[:2])
    argv = ["lora", str(b), str(lo), "--target", "sglang", "--gpu", "h100"]
    _, out = _run([*argv, "--output-format", "json"], capsys)
    ex = json.loads(out)["targets"]["sglang"]["gpu"]["h100"]["execution"]
    assert {ex[p]["lora_mode"] for p in ALL[:2]} == {"side-branch"}


def test_report_has_a_lora_section(tmp_path: Path, capsys) -> None:
    """`report --lora`: the page gains the LoRA section (its nav link, the runtimes' table, a
    bar per block) and the LoRA's findings join its diagnostics; a folder of several
    checkpoints with --lora is a usage error."""
    b, lo = _pair(tmp_path, "nvfp4", size=0.01)
    out = tmp_path / "r.html"
    code = main(["report", str(b), "--lora", str(lo), "--target", "all", "-o", str(out)])
    page = out.read_text(encoding="utf-8")
    assert code == 0 and '<a href="#lora">LoRA</a>' in page
    section = page[page.index('<section class="lora" id="lora">') :]
    section = section[: section.index("</section>")]
    assert "lora.safetensors, strength 1" in section and "blocks.0 (8)" in section
    assert "<td>sglang</td><td>auto [RUN]</td><td>nvfp4</td><td>8</td><td>side-branch" in section
    assert "QC834" in page and "QC838" in page
    plain = tmp_path / "plain.html"
    assert main(["report", str(b), "-o", str(plain)]) == 0
    assert 'id="lora"' not in plain.read_text(encoding="utf-8")
    assert main(["report", str(tmp_path), "--lora", str(lo), "-o", str(tmp_path / "x")]) == 2
    capsys.readouterr()
