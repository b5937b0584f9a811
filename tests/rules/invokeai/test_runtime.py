"""InvokeAI 6.14.2 as a target: its record, its effects table (a decision for every code), the
verdict on each bundled example, the summary line, explain, and the shape arithmetic of its
dequantize step. Each own rule's failing case and twin: invokeai/cases.py; InvokeAI's own code
confirms the verdicts in invokeai/diff/ (make diff-consumers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.messages import match_message
from quantcheck.rules.invokeai.checks import dequantized_shape
from quantcheck.rules.levels import Effect
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime, targets_of
from quantcheck.runtimes.invokeai import EFFECTS, LEFT_NONE, OWN_CODES

NAME = "invokeai"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
#: The status `--target invokeai` gives each bundled example, and why.
VERDICTS = {
    "awq_w4a16": "fails",  # packed codes: the multiply does not broadcast
    "broken_seeds": "fails",  # a W4A8 layer: packed width
    "fp8_e4m3fn": "degraded",  # dequantized to BF16 (QC720): runs, no VRAM saving
    "int8_convrot": "degraded",  # rotated weights, silently (QC721)
    "mxfp8": "degraded",  # E8M0 bytes multiplied as numbers, silently (QC722)
    "nvfp4": "fails",  # [N, K/2] weight: size mismatch
    "w4a4_convrot": "fails",
    "w4a8_codebook": "fails",
    "w6a8_int8": "fails",
}


def test_record() -> None:
    rt = get_runtime(NAME)
    assert rt.title == "InvokeAI" and rt.release_names() == ("6.14.2",)
    assert not rt.default_target and NAME not in targets_of("default")
    assert NAME in targets_of("all")
    assert rt.checks and rt.messages and "6.14.2" in rt.doc


def test_every_code_has_a_decision() -> None:
    """A new generic code fails this until someone decides what it does to InvokeAI."""
    generic = {c for c in all_rules() if not c.startswith("QC7")}
    assert not set(EFFECTS) & set(LEFT_NONE)
    assert set(EFFECTS) | set(LEFT_NONE) == generic
    assert all(e is not Effect.NONE for e in EFFECTS.values())
    own = {c for c in all_rules() if c.startswith("QC72")}
    assert own == set(OWN_CODES)


@pytest.mark.parametrize("code", OWN_CODES)
def test_own_rules_name_only_invokeai(code: str) -> None:
    rule = all_rules()[code]
    assert rule.effects[NAME] is not Effect.NONE
    assert all(e is Effect.NONE for t, e in rule.effects.items() if t != NAME)
    assert "InvokeAI 6.14.2" in rule.evidence and "[GUESS]" not in rule.evidence


@pytest.mark.parametrize("example", sorted(VERDICTS))
def test_example_verdicts(example: str) -> None:
    path = str(EXAMPLES / f"{example}.safetensors")
    report = check_paths([path], target=NAME)
    assert report.target_status(NAME)["status"] == VERDICTS[example]


def test_summary_line_shows_invokeai(capsys: pytest.CaptureFixture) -> None:
    main(["check", "--target", "all", str(EXAMPLES / "int8_convrot.safetensors")])
    out = capsys.readouterr().out
    # sglang: --transformer-weights-path refuses INT8 (QC631), the worst loader
    assert "invokeai: degraded" in out and "sglang: fails" in out
    main(["check", str(EXAMPLES / "int8_convrot.safetensors")])
    assert "invokeai" not in capsys.readouterr().out  # not a default target


def test_explain_round_trip() -> None:
    text = (
        "RuntimeError: Error(s) in loading state_dict for Linear:\n\tsize mismatch for "
        "weight: copying a param with shape torch.Size([128, 32]) from checkpoint, the shape "
        "in current model is torch.Size([128, 64])."
    )
    m = match_message(text)
    assert m is not None and m.code == "QC723" and m.pattern.runtime == "InvokeAI 6.14.2"
    assert "--target invokeai" in m.render()


@pytest.mark.parametrize(
    ("weight", "scale", "want"),
    [
        ((64, 64), (), (64, 64)),  # per-tensor FP8/INT8
        ((64, 64), (64, 1), (64, 64)),  # INT8 per row: repeated along K
        ((128, 128), (128, 4), (128, 128)),  # MXFP8: blocks of 32 repeated (numbers wrong)
        ((128, 32), (128, 4), (128, 32)),  # NVFP4: a product, but [N, K/2]
        ((96, 96), (128, 3), None),  # padded scales: 96 // 128 = 0 -> no repeat, no broadcast
        ((32, 64), (32,), None),  # a 1-D [N] scale broadcasts along K
        ((64, 64), (64,), (64, 64)),  # ... unless N == K (then silently per column)
        ((32, 64), (2, 32), (32, 64)),  # AWQ [K/g, N]: repeated to [N, K/2], K/2 wide
        ((8, 8), (0, 8), None),  # a zero dimension: division by zero upstream
    ],
)
def test_dequantized_shape(
    weight: tuple[int, ...], scale: tuple[int, ...], want: tuple[int, ...] | None
) -> None:
    assert dequantized_shape(weight, scale)[0] == want


def test_harmless_instance_stays_harmless(tmp_path: Path) -> None:
    """QC121 has a harmless instance (extra entry fields: every reader ignores them) and a
    fatal one (an entry without dtype); InvokeAI's table makes the code fail, not the former."""
    import json
    import struct

    def write(name: str, entry: dict) -> str:
        text = json.dumps({"x.weight": entry}).encode()
        text += b" " * (-len(text) % 8)
        path = tmp_path / name
        path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(8))
        return str(path)

    good = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    extra = write("extra.safetensors", {**good, "x": 1})
    broken = write("broken.safetensors", {"shape": [2], "data_offsets": [0, 8]})
    for path, want in ((extra, "ok"), (broken, "fails")):
        report = check_paths([path], target=NAME)
        assert "QC121" in {d.code for d in report.diagnostics}
        assert report.target_status(NAME)["status"] == want
