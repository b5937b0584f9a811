"""Many checkpoints in a hub repository: the recursive tree listing, grouped like a folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ._files import EXAMPLES, split_example
from ._nginx import Nginx
from ._run import run_cli

BROKEN = "broken_seeds.safetensors"


def _recursive_listing(folder: Path) -> list[dict[str, object]]:
    """What the hub's tree API answers with `?recursive=true`: every file and folder."""
    out: list[dict[str, object]] = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out.append(
            {"type": "directory", "oid": "0" * 40, "size": 0, "path": rel}
            if p.is_dir()
            else {"type": "file", "oid": "0" * 40, "size": p.stat().st_size, "path": rel}
        )
    return out


@pytest.fixture
def many_repo(hub: Nginx) -> str:
    files = hub.root / "acme" / "many" / "resolve" / "main"
    if not files.exists():
        (files / "sub").mkdir(parents=True)
        (files / "sharded").mkdir()
        shutil.copy(EXAMPLES / "nvfp4.safetensors", files / "nvfp4.safetensors")
        shutil.copy(EXAMPLES / BROKEN, files / "sub" / BROKEN)
        split_example(EXAMPLES / "fp8_e4m3fn.safetensors", files / "sharded")
        api = hub.root / "api" / "models" / "acme" / "many" / "tree"
        api.mkdir(parents=True)
        (api / "main").write_text(json.dumps(_recursive_listing(files)))
    return "hf://acme/many"


def test_repo_listing_is_many_checkpoints(
    many_repo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", many_repo)
    assert isinstance(doc, dict), err
    assert [c["name"] for c in doc["checkpoints"]] == [
        f"{many_repo}/nvfp4.safetensors",
        f"{many_repo}/sharded/model.safetensors.index.json",
        f"{many_repo}/sub/{BROKEN}",
    ]
    sharded = doc["checkpoints"][1]
    assert [i["path"].rsplit("/", 1)[-1] for i in sharded["inputs"]] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    assert rc == 1 and {d["checkpoint"] for d in doc["diagnostics"]} == {
        f"{many_repo}/sub/{BROKEN}"
    }
    rc, doc, _ = run_cli(
        capsys, "check", "--output-format", "json", "--exclude", "sub/*", many_repo
    )
    assert rc == 0 and len(doc["checkpoints"]) == 2


def test_repo_listing_fetches_each_index_once(
    many_repo: str, hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    """Discovery reads the index to know which shards it claims; the check of that index
    must reuse the same document instead of asking the server again."""
    hub.clear_log()
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", many_repo)
    assert rc == 1 and isinstance(doc, dict), err
    index_gets = [row for row in hub.log() if row[1].endswith(".index.json")]
    assert len(index_gets) == 1, index_gets
    listings = [row for row in hub.log() if "/api/" in row[1]]
    assert len(listings) == 1, listings


def _listed_repo(hub: Nginx, name: str, build: object) -> str:
    """`hf://acme/NAME`: files made by `build(folder)`, served with a recursive listing."""
    files = hub.root / "acme" / name / "resolve" / "main"
    if not files.exists():
        files.mkdir(parents=True)
        build(files)  # type: ignore[operator]
        api = hub.root / "api" / "models" / "acme" / name / "tree"
        api.mkdir(parents=True)
        (api / "main").write_text(json.dumps(_recursive_listing(files)))
    return f"hf://acme/{name}"


def test_index_in_subfolder_naming_parent_does_not_claim_it(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sub/x.safetensors.index.json` naming `../broken_seeds.safetensors`: X is checked on its
    own (was: claimed, never checked) and the index gets QC502, as in a local folder."""

    def build(files: Path) -> None:
        (files / "sub").mkdir()
        shutil.copy(EXAMPLES / BROKEN, files / BROKEN)
        doc = {"weight_map": {"a.weight": f"../{BROKEN}"}}
        (files / "sub" / "x.safetensors.index.json").write_text(json.dumps(doc))

    repo = _listed_repo(hub, "dotdot", build)
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", repo)
    assert isinstance(doc, dict), err
    assert [c["name"] for c in doc["checkpoints"]] == [
        f"{repo}/{BROKEN}",
        f"{repo}/sub/x.safetensors.index.json",
    ]
    codes = {(d["checkpoint"].rsplit("/", 1)[-1], d["code"]) for d in doc["diagnostics"]}
    assert ("x.safetensors.index.json", "QC502") in codes and (BROKEN, "QC305") in codes
    assert rc == 1


def test_checkpoint_only_in_a_subfolder_serves_every_command(
    hub: Nginx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A diffusers-style repo whose only checkpoint is `transformer/...`: fix, dequantize,
    inspect and report find it as check does (was: "folder holds no .safetensors files")."""

    def build(files: Path) -> None:
        (files / "transformer").mkdir()
        (files / "model_index.json").write_text("{}")
        shutil.copy(
            EXAMPLES / BROKEN, files / "transformer" / "diffusion_pytorch_model.safetensors"
        )

    repo = _listed_repo(hub, "diffusers", build)
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", repo)
    assert rc == 1 and [c["name"] for c in doc["checkpoints"]] == [
        f"{repo}/transformer/diffusion_pytorch_model.safetensors"
    ], err
    for argv in (
        ["fix", repo, "-o", str(tmp_path / "fixed.safetensors")],
        ["dequantize", repo, "-o", str(tmp_path / "plain.safetensors")],
        ["report", repo, "-o", str(tmp_path / "r.html")],
    ):
        rc, _, err = run_cli(capsys, *argv)
        assert rc in (0, 1) and Path(argv[-1]).is_file(), (argv, err)  # 1: layers left as-is
    rc, doc, err = run_cli(capsys, "inspect", "--output-format", "json", repo)
    assert rc == 0 and doc["layers"], err
