"""`quantize --target` for every runtime and release (issue 20 item 7): a format (or option,
or marker field) a target cannot load is refused before anything is written, with one line
naming the runtime, release and reason; everything `quantize` writes checks clean for every
target it was asked for (sglang: the loader that reads a file of its model family loads it
clean, `--transformer-weights-path` while none is detected; the other loaders' findings are
notes). The decision comes from
the check rules (a probe layer and the planned header), so a new runtime's rules refuse what it
cannot load without a table of their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

from quantcheck.checking import check_paths
from quantcheck.cli.convert import quant_formats
from quantcheck.cli.main import build_parser, main
from quantcheck.runtimes import split_target, targets_of

KEYS = targets_of("all@all")
FORMATS = quant_formats()
LAYERS = ("model.diffusion_model.blocks.0.attn.qkv", "model.diffusion_model.blocks.1.mlp.fc1")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    tensors = {
        f"{p}.weight": (rng.standard_normal((128, 256)) / 16).astype(np.float32) for p in LAYERS
    }
    tensors["model.diffusion_model.blocks.0.norm.weight"] = np.ones(256, np.float32)
    path = tmp_path_factory.mktemp("plain") / "plain.safetensors"
    safetensors.numpy.save_file(tensors, str(path))
    return path


def _release(key: str) -> str:
    rt, rel = split_target(key)
    return f"{rt.name}@{rel or rt.newest.name}"


OUTCOMES: dict[tuple[str, str], int] = {}


def assert_clean(report: object, key: str) -> None:
    """`report` checks clean for `key`: status ok and exit 0 (for a target with several
    loaders, sglang, the status of the one that reads the file decides, and the findings of
    the others are notes: rules/sglang/loaders.py)."""
    st = report.target_status(key)  # type: ignore[attr-defined]
    found = [(d.code, d.message) for d in report.diagnostics]  # type: ignore[attr-defined]
    assert st["status"] == "ok", found
    assert report.exit_code() == 0, found  # type: ignore[attr-defined]
    if "loaders" in st:
        assert st["loaders"][st["loader"]]["status"] == "ok", (st["loaders"], found)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_written_files_check_clean_and_refusals_name_the_release(
    fmt: str, key: str, plain: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.safetensors"
    rc = main(["quantize", str(plain), "-o", str(out), "--to", fmt, "--target", key])
    err = capsys.readouterr().err
    OUTCOMES[fmt, key] = rc
    if rc == 0:
        assert_clean(check_paths([str(out)], target=key), key)
        return
    assert rc == 2 and not out.exists()
    (line,) = err.strip().splitlines()
    assert line.startswith(f"quantcheck: error: {fmt} cannot load on {_release(key)}: "), line


@pytest.mark.parametrize(
    ("fmt", "target", "words"),
    [
        ("nvfp4", "sdcpp", "sdcpp@2026-08-26: QC740"),
        ("int8_tensorwise", "invokeai", "invokeai@6.14.2: QC721"),
        # sglang reads a DiT of no detected family with --transformer-weights-path, which reads
        # no markers (its marker readers have no w6a8_int8 either: QC601)
        ("w6a8_int8", "sglang", "sglang@0.5.23: QC631"),
        ("mxfp8", "sdnext", "sdnext@d11a619: QC710"),
        ("int8_tensorwise", "forge-neo@bfd09a1", "forge-neo@bfd09a1: QC702"),
    ],
)
def test_refusals_that_main_wrote_anyway(
    fmt: str,
    target: str,
    words: str,
    plain: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: each of these was written (exit 0) and its own `check --target` rejected it."""
    out = tmp_path / "out.safetensors"
    assert main(["quantize", str(plain), "-o", str(out), "--to", fmt, "--target", target]) == 2
    assert words in capsys.readouterr().err
    assert not out.exists()


def test_both_outcomes_occur() -> None:
    """The matrix above proves something only if it holds accepted and refused cases."""
    if len(OUTCOMES) < len(KEYS) * len(FORMATS):
        pytest.skip("run with the whole matrix")
    assert {0, 2} <= set(OUTCOMES.values())
    assert all(OUTCOMES[f, "comfyui@2026-09-29"] == 0 for f in FORMATS)


def test_layers_a_target_cannot_take_stay_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A layer shape sglang cannot load padded is left unquantized, the rest is written."""
    rng = np.random.default_rng(1)
    src = tmp_path / "in.safetensors"
    safetensors.numpy.save_file(
        {
            f"{LAYERS[0]}.weight": rng.standard_normal((256, 256)).astype(np.float32),
            f"{LAYERS[1]}.weight": rng.standard_normal((96, 256)).astype(np.float32),
        },
        str(src),
    )
    out = tmp_path / "out.safetensors"
    assert main(["quantize", str(src), "-o", str(out), "--to", "nvfp4", "--target", "sglang"]) == 0
    assert f"skipped {LAYERS[1]}" in capsys.readouterr().out
    assert_clean(check_paths([str(out)], target="sglang"), "sglang")


def test_quantize_and_check_have_the_same_default_target() -> None:
    q = build_parser("quantize").parse_args(["quantize", "in", "-o", "out", "--to", "nvfp4"])
    c = build_parser("check").parse_args(["check", "in.safetensors"])
    assert q.target == c.target == "default"
