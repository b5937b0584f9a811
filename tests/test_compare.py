"""`quantcheck compare` and `checkpoint.layer(p).dequantize()` on files quantized here."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")

from quantcheck import load  # noqa: E402
from quantcheck.cli.main import main  # noqa: E402
from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors  # noqa: E402
from quantcheck.model.layer_data import PaddedShapeWarning  # noqa: E402
from quantcheck.numeric import quantize  # noqa: E402
from quantcheck.numeric.arrays import to_bytes  # noqa: E402
from quantcheck.numeric.compare import compare_checkpoints  # noqa: E402

FORMATS = {
    "blocks.0.fp8": "float8_e4m3fn",
    "blocks.1.int8": "int8_tensorwise",
    "blocks.2.nvfp4": "nvfp4",
    "blocks.3.mxfp8": "mxfp8",
}
#: rel-L2 of a 0.05·randn round trip, comfy-formats.md §3 (with headroom).
BOUNDS = {"float8_e4m3fn": 0.04, "int8_tensorwise": 0.02, "nvfp4": 0.12, "mxfp8": 0.04}


def _pair(
    tmp: Path,
    shape: tuple[int, int] = (100, 200),
    bias_shift: float = 0.0,
    formats: dict[str, str] | None = None,
    **options: object,
) -> tuple[Path, Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    orig, quant, weights = [], [], {}
    for prefix, fmt in (formats or FORMATS).items():
        w = (rng.standard_normal(shape) * 0.05).astype(ml_dtypes.bfloat16)
        b = (rng.standard_normal(shape[0]) * 0.01).astype(ml_dtypes.bfloat16)
        weights[prefix] = w.astype(np.float32)
        orig += [
            RawTensor(f"{prefix}.weight", "BF16", shape, to_bytes(w)),
            RawTensor(f"{prefix}.bias", "BF16", (shape[0],), to_bytes(b)),
        ]
        q = quantize(w, fmt, **options.get(prefix, {}))  # type: ignore[attr-defined]
        quant += [
            RawTensor(f"{prefix}.{s}", dt, a.shape, to_bytes(a)) for s, (dt, a) in q.tensors.items()
        ]
        qb = (b.astype(np.float32) + bias_shift).astype(ml_dtypes.bfloat16)
        quant += [
            marker_tensor(prefix, q.marker),
            RawTensor(f"{prefix}.bias", "BF16", (shape[0],), to_bytes(qb)),
        ]
    write_safetensors(tmp / "orig.safetensors", orig)
    write_safetensors(tmp / "quant.safetensors", quant)
    return tmp / "quant.safetensors", tmp / "orig.safetensors", weights


def test_compare_reports_every_layer_worst_first(tmp_path: Path) -> None:
    q, o, _ = _pair(tmp_path)
    result = compare_checkpoints([str(q)], [str(o)], progress=False)
    assert sorted(r["prefix"] for r in result.layers) == sorted(FORMATS)
    assert [r["rel_l2"] for r in result.layers] == sorted(
        (r["rel_l2"] for r in result.layers), reverse=True
    )
    assert result.layers[0]["format"] == "nvfp4"  # 4-bit loses the most
    for r in result.layers:
        assert 0 < r["rel_l2"] < BOUNDS[r["format"]], r
        assert r["cosine"] > 0.99 and r["snr_db"] > 15 and r["max_abs"] > 0
    assert not result.problems


def test_changed_biases_are_reported_never_failed(tmp_path: Path, capsys) -> None:
    q, o, _ = _pair(tmp_path, bias_shift=0.01)
    assert main(["compare", str(q), str(o)]) == 0
    out = capsys.readouterr().out
    assert "biases: 4 compared, 4 differ from the original" in out
    assert main(["compare", "--format", "json", str(q), str(o)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "compare" and len(doc["biases"]) == 4
    assert all(b["max_abs"] > 0 for b in doc["biases"])


def test_missing_layer_is_a_problem_exit_1(tmp_path: Path, capsys) -> None:
    q, _, _ = _pair(tmp_path)
    other = tmp_path / "other.safetensors"
    write_safetensors(other, [RawTensor("unrelated.weight", "F32", (1,), b"\0" * 4)])
    assert main(["compare", str(q), str(other)]) == 1
    assert "no such weight in the original" in capsys.readouterr().out


def test_dequantize_padded_layer_needs_or_takes_its_shape(tmp_path: Path) -> None:
    q, _, weights = _pair(tmp_path)
    ck = load(q)
    layer = ck.layer("blocks.2.nvfp4")
    # the quantizer records orig_shape for padded layers: the logical shape comes back
    out = layer.dequantize()
    assert out.shape == (100, 200) and out.dtype == np.float32
    rel = np.linalg.norm(out - weights["blocks.2.nvfp4"]) / np.linalg.norm(
        weights["blocks.2.nvfp4"]
    )
    assert rel < BOUNDS["nvfp4"]
    assert layer.dequantize(shape=(100, 200)).tobytes() == out.tobytes()


def test_dequantize_without_orig_shape_warns_and_keeps_zero_padding(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((100, 200)) * 0.05).astype(np.float32)
    qz = quantize(w, "mxfp8")
    marker = {k: v for k, v in qz.marker.items() if k != "orig_shape"}
    tensors = [RawTensor(f"x.{s}", dt, a.shape, to_bytes(a)) for s, (dt, a) in qz.tensors.items()]
    write_safetensors(tmp_path / "m.safetensors", [*tensors, marker_tensor("x", marker)])
    layer = load(tmp_path / "m.safetensors").layer("x")
    with pytest.warns(PaddedShapeWarning, match="stored bound"):
        padded = layer.dequantize()
    assert padded.shape == (128, 224)
    assert not np.any(padded[100:, :]) and not np.any(padded[:, 200:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert layer.dequantize(shape=(100, 200)).shape == (100, 200)


def test_unknown_layer_is_a_key_error(tmp_path: Path) -> None:
    q, _, _ = _pair(tmp_path)
    with pytest.raises(KeyError, match="no layer"):
        load(q).layer("blocks.9.nothing")


# --------------------------------------------------------------- row chunks and thread pool


def _rows(result) -> dict[str, tuple]:
    return {
        r["prefix"]: (r["max_abs"], r["rel_l2"], r["cosine"], r["snr_db"], r["count"])
        for r in result.layers
    }


def _many_chunks(monkeypatch) -> None:
    """Small row chunks, so every layer of `_pair` is cut into several."""
    from quantcheck.numeric import compare_rows

    monkeypatch.setattr(compare_rows, "CHUNK_ELEMS", 2048)


def test_results_do_not_depend_on_the_thread_count(tmp_path: Path, monkeypatch) -> None:
    _many_chunks(monkeypatch)
    q, o, _ = _pair(tmp_path, shape=(300, 520))
    seen = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("QUANTCHECK_THREADS", threads)
        seen.append(_rows(compare_checkpoints([str(q)], [str(o)], progress=False)))
    assert seen[0] == seen[1] == seen[2]


ROTATED = {
    "r.w4a4": "convrot_w4a4",
    "r.int8cr": "int8_tensorwise",
    "r.int8row": "int8_tensorwise",
    "r.e5m2": "float8_e5m2",
}
ROTATED_OPTIONS = {
    "r.int8cr": {"convrot": True, "convrot_groupsize": 64},
    "r.int8row": {"per_row": True},
    "r.w4a4": {"convrot_groupsize": 64},
}


@pytest.mark.parametrize("formats", [FORMATS, ROTATED], ids=["padded", "rotated"])
def test_row_chunks_agree_with_the_whole_layer(tmp_path: Path, monkeypatch, formats) -> None:
    """Row-chunked layers (padded NVFP4/MXFP8, ConvRot, per-row int8) give the metrics of the
    whole-layer dequantize to well below the printed precision; each takes the row path."""
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.numeric import compare_rows

    _many_chunks(monkeypatch)
    q, o, _ = _pair(
        tmp_path,
        shape=(300, 512 if formats is ROTATED else 520),
        formats=formats,
        **ROTATED_OPTIONS,
    )
    with load_checkpoint([str(q)]) as qc, load_checkpoint([str(o)]) as oc:
        plans = {p: compare_rows.plan(qc, oc, p) for p in formats}
    assert all(p is not None and len(p.chunks) > 1 for p in plans.values()), plans
    chunked = _rows(compare_checkpoints([str(q)], [str(o)], progress=False))
    monkeypatch.setattr(compare_rows, "plan", lambda *a: None)
    whole = _rows(compare_checkpoints([str(q)], [str(o)], progress=False))
    assert chunked.keys() == whole.keys()
    for prefix, (mx, rel, cos, snr, count) in chunked.items():
        wmx, wrel, wcos, wsnr, wcount = whole[prefix]
        assert (mx, count) == (wmx, wcount)
        assert rel == pytest.approx(wrel, rel=1e-7) and cos == pytest.approx(wcos, abs=1e-7)
        assert snr == pytest.approx(wsnr, abs=1e-5)


def test_a_truncated_original_is_a_problem_not_a_crash(tmp_path: Path, monkeypatch) -> None:
    _many_chunks(monkeypatch)
    q, o, _ = _pair(tmp_path, shape=(300, 520))
    data = o.read_bytes()
    o.write_bytes(data[: len(data) - 300 * 520])
    result = compare_checkpoints([str(q)], [str(o)], progress=False)
    assert result.problems and all("file ends" in p["problem"] for p in result.problems)
    assert [p["prefix"] for p in result.problems] == sorted(p["prefix"] for p in result.problems)
