"""Every command line the README's code blocks and the `--help` epilogs show runs as shown.

The lines are taken from the texts themselves (nothing is listed twice), run in order in a
folder holding the files they name: `model.safetensors` (the broken example, so there is
something to fix), its index, two shards, a `models/` folder and a BF16 `model-bf16.safetensors`
that the quantize examples start from. A line that exits 2 (could not run) or raises fails.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import struct
from pathlib import Path

import pytest

from quantcheck.cli.epilogs import EXAMPLES
from quantcheck.cli.main import main

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def _joined(lines: list[str]) -> list[str]:
    """Lines with a trailing backslash continued on the next one."""
    out: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].rstrip() + " "
            continue
        out.append(pending + line.lstrip() if pending else line)
        pending = ""
    return out


def readme_commands() -> list[str]:
    commands = []
    for block in FENCE.findall((REPO / "README.md").read_text()):
        for line in _joined(block.splitlines()):
            line = line.strip().removeprefix("$ ")
            if line.startswith("quantcheck "):
                commands.append(shlex.join(shlex.split(line, comments=True)))
    return commands


def epilog_commands() -> list[str]:
    commands = []
    for text in EXAMPLES.values():
        for line in _joined(text.splitlines()):
            if line.startswith("  quantcheck "):
                commands.append(re.split(r"\s{2,}", line.strip())[0])
    return commands


def _split_shards(src: Path, first: Path, second: Path) -> None:
    """Write the tensors of `src` into two files, alternating (plain byte copies)."""
    raw = src.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    names = [k for k in header if k != "__metadata__"]
    for out, part in ((first, names[0::2]), (second, names[1::2])):
        entries, blobs, offset = {}, [], 0
        for name in part:
            start, end = header[name]["data_offsets"]
            blobs.append(data[start:end])
            entries[name] = {**header[name], "data_offsets": [offset, offset + end - start]}
            offset += end - start
        text = json.dumps(entries).encode()
        text += b" " * (-len(text) % 8)
        out.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _bf16_model(path: Path) -> None:
    import ml_dtypes
    import numpy as np

    from quantcheck.io.build import RawTensor, write_safetensors

    rng = np.random.default_rng(0)
    tensors = []
    for i in range(2):
        for kind in ("to_q", "to_k"):
            w = (rng.standard_normal((64, 128)) * 0.05).astype(ml_dtypes.bfloat16)
            name = f"transformer_blocks.{i}.attn.{kind}.weight"
            tensors.append(RawTensor(name, "BF16", w.shape, w.tobytes()))
    write_safetensors(path, tensors)


def _lora(path: Path) -> None:
    """A kohya LoRA (rank 4) over the BF16 model's layers, for the `lora` examples."""
    import numpy as np

    from quantcheck.io.build import RawTensor, write_safetensors

    rng = np.random.default_rng(1)
    tensors = []
    for i in range(2):
        for kind in ("to_q", "to_k"):
            x = f"lora_unet_transformer_blocks_{i}_attn_{kind}"
            up = (rng.standard_normal((64, 4)) * 0.01).astype(np.float32)
            down = (rng.standard_normal((4, 128)) * 0.01).astype(np.float32)
            tensors.append(RawTensor(f"{x}.lora_up.weight", "F32", up.shape, up.tobytes()))
            tensors.append(RawTensor(f"{x}.lora_down.weight", "F32", down.shape, down.tobytes()))
    write_safetensors(path, tensors)


@pytest.fixture
def workspace(tmp_path: Path, examples_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(examples_dir, tmp_path / "examples")
    shutil.copy(examples_dir / "broken_seeds.safetensors", tmp_path / "model.safetensors")
    raw = (tmp_path / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    names = [k for k in json.loads(raw[8 : 8 + n]) if k != "__metadata__"]
    index = {"metadata": {}, "weight_map": dict.fromkeys(names, "model.safetensors")}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    _split_shards(
        examples_dir / "nvfp4.safetensors",
        tmp_path / "part1.safetensors",
        tmp_path / "part2.safetensors",
    )
    (tmp_path / "models").mkdir()
    for name in ("nvfp4.safetensors", "broken_seeds.safetensors"):
        shutil.copy(examples_dir / name, tmp_path / "models" / name)
    _bf16_model(tmp_path / "model-bf16.safetensors")
    _lora(tmp_path / "lora.safetensors")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def _run(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(line)
    assert argv[0] == "quantcheck"
    try:
        code = main(argv[1:])
    except SystemExit as exc:  # argparse: a usage error
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert code in (0, 1), f"{line!r} exited {code}:\n{out[-2000:]}\n{err[-2000:]}"
    assert "Traceback" not in err


def test_the_texts_show_commands() -> None:
    """The extraction finds what the texts show (a parser that finds nothing proves nothing)."""
    readme = readme_commands()
    assert any(c.startswith("quantcheck quantize ") for c in readme), readme
    assert len(epilog_commands()) >= 25


def test_every_readme_command_runs(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for line in readme_commands():
        _run(line, capsys)


def test_every_help_example_runs(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for line in epilog_commands():
        _run(line, capsys)


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_every_help_shows_its_own_exit_codes_and_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from quantcheck.cli.epilogs import EXIT_CODES

    with pytest.raises(SystemExit):
        main(["--help"] if command == "quantcheck" else [command, "--help"])
    out = capsys.readouterr().out
    assert EXIT_CODES[command].splitlines()[0] in out
    shown = [ln for ln in EXAMPLES[command].splitlines() if ln.startswith("  quantcheck ")]
    assert all(f"quantcheck {ln.split('quantcheck ', 1)[1].split()[0]}" in out for ln in shown)
    if command not in ("quantcheck", "check"):
        assert "every problem" not in out  # check's examples stay with check
