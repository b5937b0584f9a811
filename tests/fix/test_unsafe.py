"""Unsafe fixes on real numbers; conflicts between targets; --dry-run; numpy stays unloaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quantcheck.cli.main import main
from quantcheck.io.build import marker_tensor
from quantcheck.model.checkpoint import load_checkpoint

from ._real import plain, quantized, weight, write
from ._util import leftovers, sha

P = "blocks.0.attn.qkv"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _codes(path: Path, target: str) -> set[str]:
    from quantcheck.checking import check_paths

    return {d.code for d in check_paths([str(path)], target=target).diagnostics}


def _rc_left(path: Path, target: str = "default") -> int:
    """The exit code `fix` gives for its output `path`: 1 while an error is left. The only ones
    these fixes leave are sglang's loader findings (a loader that cannot read any such file,
    QC631-QC638: they name it), 0 without them."""
    from quantcheck.checking import check_paths

    report = check_paths([str(path)], target=target)
    errors = [d for d in report.diagnostics if d.effective_severity.value == "error"]
    assert all(d.data.get("loaders") for d in errors), [(d.code, d.message) for d in errors]
    return 1 if errors else 0


def _rel(path: Path, prefix: str, w: np.ndarray) -> float:
    with load_checkpoint(str(path)) as ck:
        got = ck.layer(prefix).dequantize()
    ref = w.astype(np.float32)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize(
    "build,target,code,gone_fmt",
    [
        (lambda w: quantized(P, w, "nvfp4", bias=True), "sglang", "QC308", None),
        (lambda w: quantized(P, w, "float8_e5m2"), "sglang", "QC601", "float8_e4m3fn"),
        (
            lambda w: quantized(P, w, "asym_w4a8_int8", bits=6, convrot_groupsize=16),
            "sglang",
            "QC312",
            "asym_w4a8_int8",
        ),
        (
            lambda w: quantized(P, w, "asym_w4a8_int8", symmetric=False, convrot_groupsize=16),
            "comfyui",
            "QC313",
            "asym_w4a8_int8",
        ),
        (
            lambda w: quantized(P, w, "int8_tensorwise", per_row=True),
            "sglang",
            "QC316",
            "int8_tensorwise",
        ),
    ],
)
def test_unsafe_fix_for_one_target(
    tmp_path: Path, build, target: str, code: str, gone_fmt: str | None
) -> None:
    n, k = (100, 200) if code == "QC308" else (128, 256)
    w = weight(n, k)
    src = write(tmp_path / "in.safetensors", build(w))
    assert code in _codes(src, target)
    out = tmp_path / "out.safetensors"
    rc = main(["fix", str(src), "-o", str(out), "--target", target, "--unsafe-fixes"])
    assert rc == _rc_left(out, target)
    assert code not in _codes(out, target)
    assert leftovers([str(out)], target, True) == []
    with load_checkpoint(str(out)) as ck:
        assert ck.layers[P].format == gone_fmt
        assert ck.layers[P].weight.shape[0] == n or gone_fmt is not None
    assert _rel(out, P, w) < 0.2  # a second rounding at most (comfy-formats.md §3)
    if gone_fmt is None:
        with load_checkpoint(str(out)) as ck:
            assert ck.layers[P].weight.shape == (n, k)
    # without --unsafe-fixes nothing changes numbers: with no safe fix, nothing is written
    out2 = tmp_path / "safe.safetensors"
    rc = main(["fix", str(src), "-o", str(out2), "--target", target])
    if out2.exists():
        assert code in _codes(out2, target)
    else:
        assert rc == main(["check", "--target", target, str(src)])


def test_target_all_refuses_a_fix_that_hurts_the_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write(
        tmp_path / "in.safetensors",
        quantized(P, weight(100, 200), "nvfp4", marker={"format": "nvfp4"}, bias=True),
    )
    out = tmp_path / "out.safetensors"
    # exit as check: sglang's --transformer-weights-path reads the padded NVFP4 layer through
    # its inferred ModelOpt config, degraded (QC633, a warning)
    assert main(["fix", str(src), "-o", str(out), "--unsafe-fixes"]) == 0
    text = capsys.readouterr().out
    assert "QC308" in text and "refused" in text
    assert "helps sglang but hurts comfyui" in text
    assert "nothing to fix" in text and not out.exists()  # the one fix was refused
    # for sglang alone it is still refused: K=200 was padded to 208 and nothing records it
    assert main(["fix", str(src), "-o", str(out), "--unsafe-fixes", "--target", "sglang"]) == 0
    assert "padding cannot be told from data" in capsys.readouterr().out


def test_stale_marker_quantized_with_unsafe_fixes(tmp_path: Path) -> None:
    w = weight(128, 256)
    mark = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 64}
    src = write(tmp_path / "in.safetensors", [*plain(P, w), marker_tensor(P, mark)])
    assert "QC304" in _codes(src, "all")
    out = tmp_path / "out.safetensors"
    assert main(["fix", str(src), "-o", str(out), "--unsafe-fixes"]) == _rc_left(out)
    with load_checkpoint(str(out)) as ck:
        assert ck.layers[P].marker.fields == mark
        assert ck.layers[P].weight.dtype == "I8"
    assert _rel(out, P, w) < 0.02
    # safe mode drops the stale marker instead and keeps the 16-bit weights
    out2 = tmp_path / "safe.safetensors"
    assert main(["fix", str(src), "-o", str(out2)]) == 0
    with load_checkpoint(str(out2)) as ck:
        assert ck.layers[P].marker is None and ck.layers[P].weight.dtype == "BF16"


def test_dry_run_and_diff_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mark = {"format": "int8_tensorwise", "convrot": 1, "convrot_groupsize": 64}
    src = write(
        tmp_path / "in.safetensors",
        quantized(
            P, weight(64, 256), "int8_tensorwise", marker=mark, convrot=True, convrot_groupsize=64
        ),
    )
    before = sha(src)
    # 1: the fixed INT8 file still cannot load through sglang's --transformer-weights-path
    # loader (QC631, no header declaration exists for INT8), which no fix changes
    assert main(["fix", str(src), "-o", str(tmp_path / "o"), "--dry-run"]) == 1
    assert "QC218" in capsys.readouterr().out
    assert main(["fix", str(src), "--diff"]) == 1
    diff = capsys.readouterr().out
    assert '-in.safetensors: blocks.0.attn.qkv.comfy_quant U8 [68] {"format"' in diff
    assert '"convrot": true' in diff
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors"]
    assert sha(src) == before


INT8_MARK = b'{"format": "int8_tensorwise"}'  # with a BF16 scale: a safe cast to F32


def test_safe_fix_never_loads_numpy(tmp_path: Path) -> None:
    src = tmp_path / "in.safetensors"
    from quantcheck.io.build import RawTensor, write_safetensors

    write_safetensors(
        src,
        [
            RawTensor(f"{P}.weight", "I8", (4, 4), bytes(16)),
            RawTensor(f"{P}.weight_scale", "BF16", (4,), b"\x80\x3f" * 4),
            RawTensor(f"{P}.comfy_quant", "U8", (len(INT8_MARK),), INT8_MARK),
            RawTensor("x.weight_scale", "F64", (1,), b"\0" * 7 + b"\x40"),
        ],
    )
    code = (
        "import sys; from quantcheck.cli.main import main; rc = main(sys.argv[1:]); "
        "assert 'numpy' not in sys.modules, 'numpy was imported'; sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "fix", str(src), "-o", str(tmp_path / "out.safetensors")],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert (tmp_path / "out.safetensors").exists()
