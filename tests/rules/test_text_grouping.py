"""The default text report groups a finding repeated over layers, names a consequence on its
cause, fits its tables to a terminal and shows baselined verdicts (issue 22 item 5, issue 20
item 8). JSON and SARIF keep every instance."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.render.grouping import name_patterns

from ._build import file, int8, nvfp4

BLOCK = ("attn.to_q", "attn.to_k", "ff.net.0.proj")


def run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    rc = main(argv)
    return rc, capsys.readouterr().out


@pytest.fixture
def int8_plain(tmp_path: Path) -> str:
    """12 blocks x 3 INT8 linears without ConvRot: 36 identical QC316 warnings."""

    def make() -> list:
        out = []
        for b in range(12):
            for name in BLOCK:
                out += int8(f"blocks.{b}.{name}", mark={"format": "int8_tensorwise"})
        return out

    return str(file(make)(tmp_path)[0])


@pytest.fixture
def nvfp4_layers(tmp_path: Path) -> str:
    """Five NVFP4 layers of two widths: musubi refuses the format (QC751), and its tensors'
    layout (QC754, QC755) follows from it."""

    def make() -> list:
        return [t for i in range(5) for t in nvfp4(f"blocks.{i}.proj", n=128 * (1 + i % 2))]

    return str(file(make)(tmp_path)[0])


def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdout (capsys's) answers as a terminal of COLUMNS columns would."""
    import sys

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


def test_patterns_stand_for_exactly_the_names() -> None:
    names = [f"m.blocks.{b}.attn.{n}" for b in range(60) for n in ("to_q", "to_k")]
    assert name_patterns(names) == ["m.blocks.{0..59}.attn.{to_k,to_q}"]
    assert name_patterns(["b.0.x", "b.1.x", "b.2.x", "b.3.x", "b.7.x"]) == ["b.{0..3,7}.x"]
    assert name_patterns(["b.0.x", "b.1.x"]) == ["b.{0,1}.x"]
    # not a cross product: block 1 has no y
    assert name_patterns(["b.0.x", "b.0.y", "b.1.x"]) == ["b.0.{x,y}", "b.1.x"]
    assert name_patterns(["a.out.0", "a.q"]) == ["a.out.0", "a.q"]


def test_one_finding_over_many_layers_is_one_entry(
    int8_plain: str, capsys: pytest.CaptureFixture
) -> None:
    # comfyui: grouping of the marker findings (sglang's --transformer-weights-path adds one
    # file-level error, QC631, to every INT8 file)
    rc, grouped = run(["check", "--no-color", "--target", "comfyui,sglang", int8_plain], capsys)
    assert rc == 1
    assert "QC631" in grouped
    entries = [line for line in grouped.splitlines() if "QC316" in line]
    assert len(entries) == 1
    assert "36 layers: blocks.{0..11}.attn.{to_k,to_q}, blocks.{0..11}.ff.net.0.proj" in grouped
    assert "first: blocks.0.attn.to_k, blocks.0.attn.to_q, blocks.0.ff.net.0.proj, …" in grouped
    assert "38 findings shown as 3 entries" in grouped and "--show-all" in grouped
    # the totals still count every finding; QC316 and QC635 concern sglang loaders that do
    # not read this file (its --transformer-weights-path refuses it: QC631): notes
    assert "1 error, 0 warnings, 37 notes" in grouped
    assert "(37 notes about sglang loaders that do not read this file" in grouped
    _, every = run(["check", "--no-color", "--show-all", int8_plain], capsys)
    assert sum("QC316" in line for line in every.splitlines()) == 36
    assert "shown as" not in every
    # the findings part (the closing verdict lines, e.g. sglang's per-loader lines, are the
    # same in both)
    findings = [out.split("\ntargets: ")[0].splitlines() for out in (grouped, every)]
    assert len(findings[0]) < len(findings[1]) / 10


def test_json_keeps_every_instance_and_groups_on_request(
    int8_plain: str, capsys: pytest.CaptureFixture
) -> None:
    # with sglang's loaders' two file-level findings (QC631, QC635), each their own group
    _, out = run(["check", "--output-format", "json", int8_plain], capsys)
    doc = json.loads(out)
    assert len(doc["diagnostics"]) == 38 and "groups" not in doc
    _, out = run(["check", "--output-format", "json", "--group", int8_plain], capsys)
    doc = json.loads(out)
    assert len(doc["diagnostics"]) == 38
    (g,) = [g for g in doc["groups"] if g["code"] == "QC316"]
    assert g["code"] == "QC316" and g["count"] == 36 and len(g["where"]) == 36
    assert g["patterns"] == ["blocks.{0..11}.attn.{to_k,to_q}", "blocks.{0..11}.ff.net.0.proj"]
    _, out = run(["check", "--output-format", "sarif", int8_plain], capsys)
    assert len(json.loads(out)["runs"][0]["results"]) == 38


def test_consequences_are_named_on_their_cause(
    nvfp4_layers: str, capsys: pytest.CaptureFixture
) -> None:
    _, out = run(["check", "--no-color", "--target", "musubi", nvfp4_layers], capsys)
    lines = out.splitlines()
    assert sum(" QC751 " in line for line in lines) == 1
    assert not any(line.startswith(("    error   QC754", "    error   QC755")) for line in lines)
    assert (
        "and, following from it on the same layers: QC754 musubi-weight-layout, "
        "QC755 musubi-scale-layout" in out
    )
    assert "5 layers: blocks.{0..4}.proj" in out
    _, every = run(
        ["check", "--no-color", "--show-all", "--target", "musubi", nvfp4_layers], capsys
    )
    assert sum(line.startswith("    error   QC754") for line in every.splitlines()) == 5
    _, js = run(["check", "--output-format", "json", "--target", "musubi", nvfp4_layers], capsys)
    assert {d["code"] for d in json.loads(js)["diagnostics"]} == {"QC751", "QC754", "QC755"}


def test_varying_numbers_and_the_layer_name_are_folded(
    nvfp4_layers: str, capsys: pytest.CaptureFixture
) -> None:
    """InvokeAI's message names the layer and its shape; shapes differ between layers."""
    _, out = run(["check", "--no-color", "--target", "invokeai", nvfp4_layers], capsys)
    (line,) = [x for x in out.splitlines() if " QC723 " in x]
    assert "the weight becomes […, 32] but the layer is […, 64]" in line, line
    assert "size mismatch for <layer>.weight" in line


def test_independent_problems_of_a_layer_are_all_listed(
    examples_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    """Layer 1.attn.to_k of broken_seeds: a BF16 weight under an int8 marker (QC304; sd.cpp
    QC748 and musubi QC754, runtimes QC304 does not name) and an F16 scalar scale (musubi QC755
    twice) — independent problems, all shown. SD.Next's QC714 (the same BF16 weight) is named
    on QC304, which names SD.Next too."""
    seeds = str(examples_dir / "broken_seeds.safetensors")
    _, out = run(["check", "--no-color", "--target", "all", seeds], capsys)
    section = out.split("  model.diffusion_model.transformer_blocks.1.attn.to_k\n", 1)[1]
    section = re.split(r"\n  (?! )", section, maxsplit=1)[0]
    for code in ("QC304", "QC748", "QC754", "QC755"):
        assert f"    error   {code} " in section, code
    assert "following from it on the same layer: QC714 weight-dtype-refused-by-sdnext" in section
    _, every = run(["check", "--no-color", "--show-all", "--target", "all", seeds], capsys)
    assert "QC753" in out and "following from it" in out  # under QC752: no ConvRot, no group
    assert sum(line.startswith("    error   QC753") for line in every.splitlines()) == 3


def test_tables_fit_a_terminal_and_a_pipe_stays_one_row_each(
    examples_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["check", "--no-color", "--quiet", "--target", "all@all", str(examples_dir)]
    monkeypatch.setenv("COLUMNS", "100")
    _, piped = run(argv, capsys)  # capsys: not a terminal, so COLUMNS does not matter
    rows = [ln for ln in piped.splitlines() if not ln.startswith("unverified: ")]
    assert len(rows) == 2 + 13 and "legend" not in piped  # the w6a8 example's note follows
    assert max(map(len, piped.splitlines())) > 300
    terminal(monkeypatch)
    _, fitted = run(argv, capsys)
    assert max(map(len, fitted.splitlines())) <= 100
    assert "legend: degr = degraded · FAIL = fails" in fitted
    blocks = fitted.split("\n\n")
    assert len(blocks) > 2
    assert all("examples/nvfp4.safetensors" in b for b in blocks)  # each block names the rows
    assert "0.5.18" in blocks[0] and "725869d" in blocks[-1]  # every release column is there


def test_a_long_verdict_line_wraps_in_a_terminal(
    examples_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = str(examples_dir / "broken_seeds.safetensors")
    monkeypatch.setenv("COLUMNS", "100")
    terminal(monkeypatch)
    _, out = run(["check", "--no-color", "--target", "all@all", seeds], capsys)
    tail = out.split("\n\n")[-1].splitlines()
    assert max(map(len, tail)) <= 100
    assert tail[2].startswith("targets: sglang@0.5.18: fails")  # after the 2-line note
    assert any(line.rstrip().endswith("musubi@0.3.6: fails (14 blocking)") for line in tail)


def test_baselined_verdicts_are_shown_and_the_exit_code_follows_the_baseline(
    examples_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("broken_seeds.safetensors", "nvfp4.safetensors"):
        (folder / name).write_bytes((examples_dir / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    base = str(tmp_path / "base.json")
    assert main(["check", "models", "--generate-baseline", base]) == 0
    capsys.readouterr()
    rc, out = run(["check", "--no-color", "models", "--baseline", base], capsys)
    assert rc == 0
    row = next(line for line in out.splitlines() if "broken_seeds" in line)
    assert row.split()[-4:] == ["fails", "(baselined)", "fails", "(baselined)"]
    # nvfp4 fails sglang's --comfyui-mode (QC636), which does not decide: ok
    assert "1 ok, 1 failing (baselined)" in out
    rc, out = run(
        ["check", "--no-color", "models/broken_seeds.safetensors", "--baseline", base], capsys
    )
    assert rc == 0
    assert (
        "targets: sglang: fails (baselined; read with --transformer-weights-path, the model "
        "family not detected) · comfyui: fails (baselined)"
    ) in out
