"""Issue 23 item 2: one resolution of the arguments. For each kind of argument every command
reads the same checkpoints, with the same shards, as `check` (`tests/resolution_probe.py`).
The hub and URL kinds are in `tests/remote/test_one_resolution.py`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quantcheck.io.build import RawTensor, write_safetensors
from remote._files import split_example
from resolution_probe import assert_all_see_what_check_sees, commands_see

EXAMPLE = "mxfp8.safetensors"


@pytest.fixture
def ex(examples_dir: Path) -> Path:
    return examples_dir / EXAMPLE


def _kinds(root: Path, ex: Path) -> dict[str, tuple[list[str], bool]]:
    """argument kind -> (arguments, --as-one)"""
    (root / "file").mkdir(parents=True)
    shutil.copy(ex, root / "file" / EXAMPLE)
    idx = root / "indexed"
    idx.mkdir()
    split_example(ex, idx)
    sub = root / "diffusers" / "transformer"
    sub.mkdir(parents=True)
    split_example(ex, sub, "diffusion_pytorch_model")
    (root / "diffusers" / "model_index.json").write_text("{}")
    plain = root / "shardset"
    plain.mkdir()
    names = split_example(ex, plain)
    (plain / "model.safetensors.index.json").unlink()
    vae = root / "diffusers-vae"
    shutil.copytree(root / "diffusers", vae)
    (vae / "vae").mkdir()
    write_safetensors(vae / "vae" / "model.safetensors", [RawTensor("w", "BF16", (2,), bytes(4))])
    return {
        "file": ([str(root / "file" / EXAMPLE)], False),
        "folder": ([str(idx)], False),
        "folder with the checkpoint in a subfolder": ([str(root / "diffusers")], False),
        "index.json": ([str(idx / "model.safetensors.index.json")], False),
        "shard set folder": ([str(plain)], False),
        "shard list": ([str(plain / n) for n in names], True),
        "folder of two checkpoints": ([str(vae)], False),
        "index and its shards": (
            [str(idx / "model.safetensors.index.json"), *(str(idx / n) for n in names)],
            False,
        ),
    }


KINDS = [
    "file",
    "folder",
    "folder with the checkpoint in a subfolder",
    "index.json",
    "shard set folder",
    "shard list",
    "folder of two checkpoints",
    "index and its shards",
]


@pytest.mark.parametrize("kind", KINDS)
def test_every_command_reads_what_check_reads(
    kind: str, tmp_path: Path, ex: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, as_one = _kinds(tmp_path / "in", ex)[kind]
    found = commands_see(args, tmp_path, monkeypatch, as_one=as_one)
    assert_all_see_what_check_sees(found)
