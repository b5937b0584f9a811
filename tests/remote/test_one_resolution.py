"""Issue 23 item 2 for hub and URL arguments: every command reads the same checkpoints, with
the same shards, as `check` (`tests/resolution_probe.py`; local kinds:
`tests/test_one_resolution.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolution_probe import assert_all_see_what_check_sees, commands_see

from . import test_hf_conventions
from ._nginx import Nginx

hf_cache = test_hf_conventions.hf_cache  # the cached repository's fixture

KINDS = {
    "hf:// file": (["hf://acme/plain/{first}"], False),
    "hf:// repository with an index": (["hf://acme/sharded"], False),
    "hf:// index.json": (["hf://acme/sharded/model.safetensors.index.json"], False),
    "hf:// shard list": (
        [
            "hf://acme/sharded/model-00001-of-00002.safetensors",
            "hf://acme/sharded/model-00002-of-00002.safetensors",
        ],
        True,
    ),
    "URL of a file": (["{endpoint}/acme/plain/resolve/main/{first}"], False),
    "URL of an index": (
        ["{endpoint}/acme/sharded/resolve/main/model.safetensors.index.json"],
        False,
    ),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_command_reads_what_check_reads(
    kind: str, hub: Nginx, hub_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = sorted(p.name for p in (hub_root / "acme/plain/resolve/main").glob("*.safetensors"))[0]
    args, as_one = KINDS[kind]
    args = [a.format(first=first, endpoint=hub.endpoint) for a in args]
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-cache"))
    found = commands_see(args, tmp_path, monkeypatch, as_one=as_one)
    assert_all_see_what_check_sees(found)


@pytest.mark.parametrize(
    "arg", ["hf://acme/cached", "hf://acme/cached/sh", "hf://acme/cached@main/sh"]
)
def test_every_command_reads_the_cached_checkpoint_check_reads(
    arg: str, hf_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (hf_cache / "fp8.safetensors").unlink()  # one checkpoint, in the folder sh/
    found = commands_see([arg], tmp_path, monkeypatch)
    assert_all_see_what_check_sees(found)


def test_a_hub_checkpoint_is_resolved_with_sizes_and_commit(hub: Nginx, hub_root: Path) -> None:
    """Resolving `hf://acme/sharded` knows every shard, its size (from the listing) and the
    commit the revision resolved to (the listing's X-Repo-Commit), before anything is opened."""
    from quantcheck.model.discover import discover

    from ._nginx import COMMIT

    [spec] = discover(["hf://acme/sharded"])
    folder = hub_root / "acme/sharded/resolve/main"
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert spec.shards == [f"hf://acme/sharded/{n}" for n in names]
    assert spec.sizes == [(folder / n).stat().st_size for n in names]
    assert spec.revision == COMMIT
    assert spec.index == "hf://acme/sharded/model.safetensors.index.json"
    assert isinstance(spec.weight_map, dict) and spec.findings == [] and spec.failure is None
