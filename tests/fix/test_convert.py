"""quantize -> check is clean for every target the format and shape allow; quantize ->
dequantize stays within the round-trip bounds of comfy-formats.md §3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.model.checkpoint import load_checkpoint
from rules.sglang.loader_helpers import text_encoder_copy

from ._real import raw, weight, write
from ._util import tensor_bytes

SHAPES = {"blocks.0.attn.qkv": (256, 512), "blocks.1.mlp.fc1": (100, 192)}
#: rel-L2 bounds with margin over comfy-formats.md §3 (NVFP4 ≈ 0.096, int8 row-wise ≈ 0.0083)
BOUND = {
    "float8_e4m3fn": 0.04,
    "float8_e5m2": 0.07,
    "int8_tensorwise": 0.012,
    "nvfp4": 0.11,
    "mxfp8": 0.04,
    "asym_w4a8_int8": 0.09,
    "convrot_w4a4": 0.15,
}
#: (format, options) -> targets that may load it at all, for a DiT of no detected family
#: (sglang reads it with --transformer-weights-path, which reads no markers: only FP8 with its
#: header declaration and NVFP4 inferred from the tensors load there, QC631) and for a text
#: encoder (sglang's text-encoder loader reads the markers)
CASES = [
    ("float8_e4m3fn", [], ("sglang", "comfyui")),
    ("float8_e5m2", [], ("comfyui",)),
    ("int8_tensorwise", ["--convrot-groupsize", "64"], ("comfyui",)),
    ("int8_tensorwise", ["--no-convrot"], ("comfyui",)),
    ("nvfp4", [], ("sglang", "comfyui")),
    ("mxfp8", [], ("comfyui",)),
    ("asym_w4a8_int8", ["--convrot-groupsize", "64"], ("comfyui",)),
    ("asym_w4a8_int8", ["--bits", "6", "--convrot-groupsize", "64"], ("comfyui",)),
    ("convrot_w4a4", ["--convrot-groupsize", "64"], ("comfyui",)),
]
TEXT_ENCODER_CASES = [
    ("int8_tensorwise", ["--convrot-groupsize", "64"], ("sglang",)),
    ("mxfp8", [], ("sglang@0.5.22",)),  # 0.5.23 refuses MXFP8 (QC615)
    ("asym_w4a8_int8", ["--convrot-groupsize", "64"], ("sglang",)),
    ("convrot_w4a4", ["--convrot-groupsize", "64"], ("sglang",)),
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    d = tmp_path_factory.mktemp("plain")
    ws = {p: weight(*s, seed=i) for i, (p, s) in enumerate(SHAPES.items())}
    layers = [
        [raw(f"{p}.weight", w, "BF16"), raw(f"{p}.bias", np.ones(w.shape[0], np.float32), "F32")]
        for p, w in ws.items()
    ]
    layers.append(
        [
            raw("final_norm.weight", np.ones(256, np.float32), "F32"),
            raw("embed_tokens.weight", weight(64, 256), "BF16"),
        ]
    )
    return write(d / "plain.safetensors", *layers), ws


@pytest.fixture(scope="module")
def plain_te(plain: tuple[Path, dict[str, np.ndarray]]) -> tuple[Path, dict[str, np.ndarray]]:
    """`plain` as a text encoder (tests/rules/sglang/loader_helpers.py `text_encoder_copy`)."""
    src, ws = plain
    return text_encoder_copy(src, src.with_name("plain_te.safetensors")), ws


def _fits(fmt: str, opts: list[str], target: str, n: int, k: int) -> bool:
    from quantcheck.convert.eligible import shape_refusal

    o = {
        "convrot": "--no-convrot" not in opts,
        "convrot_groupsize": 64 if opts else 256,
        "bits": 6 if "6" in opts else 4,
    }
    return shape_refusal(fmt, n, k, o, target) is None


@pytest.mark.parametrize("fmt,opts,targets", CASES, ids=lambda v: str(v))
def test_quantize_check_dequantize(
    tmp_path: Path, plain, fmt: str, opts: list[str], targets: tuple[str, ...]
) -> None:
    _round_trip(tmp_path, plain, fmt, opts, targets)


@pytest.mark.parametrize("fmt,opts,targets", TEXT_ENCODER_CASES, ids=lambda v: str(v))
def test_quantize_check_dequantize_a_text_encoder(
    tmp_path: Path, plain_te, fmt: str, opts: list[str], targets: tuple[str, ...]
) -> None:
    _round_trip(tmp_path, plain_te, fmt, opts, targets)


@pytest.mark.parametrize("fmt", ["int8_tensorwise", "asym_w4a8_int8", "mxfp8"])
def test_a_marker_only_format_for_a_dit_is_refused_for_sglang(
    tmp_path: Path, plain, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """What sglang's --transformer-weights-path cannot read (a DiT of no detected family is
    read with it) is refused before writing: the file would check failing."""
    src, _ = plain
    out = tmp_path / "o.safetensors"
    assert main(["quantize", str(src), "-o", str(out), "--to", fmt, "--target", "sglang"]) == 2
    err = capsys.readouterr().err
    assert "cannot load on sglang@0.5.23" in err and not out.exists()
    assert "QC631" in err or "QC615" in err


def _round_trip(
    tmp_path: Path, plain: Any, fmt: str, opts: list[str], targets: tuple[str, ...]
) -> None:
    src, ws = plain
    for target in targets:
        out = tmp_path / f"q-{target}.safetensors"
        assert (
            main(["quantize", str(src), "-o", str(out), "--to", fmt, "--target", target, *opts])
            == 0
        )
        report = check_paths([str(out)], target=target)
        # sglang: the findings of the loaders that cannot load it name their loader; an FP8
        # file carries its header declaration for --transformer-weights-path (QC616 says so)
        left = [
            d for d in report.diagnostics if d.data.get("loaders") is None and d.code != "QC616"
        ]
        assert left == [], [d.message for d in left]
        if target == "sglang" and fmt == "float8_e4m3fn":
            assert "QC616" in {d.code for d in report.diagnostics}
        with load_checkpoint(str(out)) as ck:
            for p, (n, k) in SHAPES.items():
                expect = fmt if _fits(fmt, opts, target, n, k) else None
                assert ck.layers[p].format == expect, (p, target)
                if expect:
                    got = ck.layer(p).dequantize()
                    ref = ws[p].astype(np.float32)
                    assert got.shape == ref.shape
                    rel = np.linalg.norm(got - ref) / np.linalg.norm(ref)
                    assert rel < BOUND[fmt], (p, rel)
            assert ck.layers["final_norm"].format is None
            assert ck.layers["embed_tokens"].format is None
        old, new = tensor_bytes([str(src)]), tensor_bytes([str(out)])
        for name in ("final_norm.weight", "embed_tokens.weight", "blocks.0.attn.qkv.bias"):
            assert old[name] == new[name]
        back = tmp_path / f"d-{target}.safetensors"
        assert main(["dequantize", str(out), "-o", str(back)]) == 0
        assert check_paths([str(back)]).diagnostics == []
        with load_checkpoint(str(back)) as ck:
            assert not ck.markers
            for p, (n, k) in SHAPES.items():
                assert ck.layers[p].weight.shape == (n, k)


def test_format_a_target_never_loads_is_refused(
    tmp_path: Path, plain, capsys: pytest.CaptureFixture[str]
) -> None:
    src, _ = plain
    out = tmp_path / "o.safetensors"
    assert main(["quantize", str(src), "-o", str(out), "--to", "float8_e5m2"]) == 2
    assert "sglang" in capsys.readouterr().err
    assert not out.exists()


def test_skipped_layers_are_reported(
    tmp_path: Path, plain, capsys: pytest.CaptureFixture[str]
) -> None:
    src, _ = plain
    out = tmp_path / "o.safetensors"
    assert main(["quantize", str(src), "-o", str(out), "--to", "nvfp4"]) == 0
    text = capsys.readouterr().out
    assert "skipped blocks.1.mlp.fc1: sglang loads NVFP4 only unpadded" in text
    assert (
        main(
            [
                "quantize",
                str(src),
                "-o",
                str(out),
                "--to",
                "nvfp4",
                "--exclude",
                "blocks.0.*",
                "--include",
                "blocks.*",
            ]
        )
        == 0
    )
    with load_checkpoint(str(out)) as ck:
        assert ck.layers["blocks.0.attn.qkv"].format is None


def test_dequantize_dtype(tmp_path: Path, plain) -> None:
    src, _ = plain
    q, d = tmp_path / "q.safetensors", tmp_path / "d.safetensors"
    assert main(["quantize", str(src), "-o", str(q), "--to", "float8_e4m3fn"]) == 0
    assert main(["dequantize", str(q), "-o", str(d), "--dtype", "f32"]) == 0
    with load_checkpoint(str(d)) as ck:
        assert ck.tensors["blocks.0.attn.qkv.weight"].dtype == "F32"
