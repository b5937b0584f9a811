"""The per-run memos of the check glue (target keys, which findings a report shows, release
matrices) give what computing afresh gives, and follow runtimes being (un)registered."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import (
    _CONCERNS,
    check_checkpoint,
    file_labels,
    run_rules,
    select_diagnostics,
)
from quantcheck.io.source import base_name
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.results import release_matrix
from quantcheck.runtimes import (
    Release,
    Runtime,
    register_runtime,
    runtime_names,
    targets_of,
    unregister_runtime,
)

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.safetensors"))
#: In an order that asks each twice, with other keys between.
TARGETS = ("all", "default", "sdnext", "all@all", "comfyui,sdcpp@all", "default", "all")


def test_target_keys_follow_registration() -> None:
    before = targets_of("all")
    assert before == runtime_names()
    register_runtime(Runtime("memo-fake", "Fake", (Release("1.0"), Release("1.1"))))
    try:
        assert targets_of("all") == (*before, "memo-fake")
        assert targets_of("memo-fake@all") == ("memo-fake@1.0", "memo-fake@1.1")
    finally:
        unregister_runtime("memo-fake")
    assert targets_of("all") == before
    with pytest.raises(KeyError):
        targets_of("memo-fake@all")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_memoised_filter_matches_a_fresh_one(path: Path) -> None:
    with load_checkpoint([str(path)]) as ck:
        diags = run_rules(ck)
        shown = {}
        for target in TARGETS:
            kept = select_diagnostics(diags, target=target)
            _CONCERNS.clear()  # forget every memoised answer
            assert kept == select_diagnostics(diags, target=target), target
            shown[target] = kept
    assert len(shown["all"]) >= len(shown["default"])


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_status_is_the_target_status(path: Path) -> None:
    with load_checkpoint([str(path)]) as ck:
        report = check_checkpoint(ck, target="all@all")
    assert report.diagnostics  # the examples have findings for some runtime release
    for key in report.targets:
        assert report.status(key) == report.target_status(key)["status"]


def test_each_release_matrix_is_its_own() -> None:
    with load_checkpoint([str(EXAMPLES[0])]) as ck:
        diags = run_rules(ck)
    keys = targets_of("all@all")
    first = release_matrix(diags, keys)
    assert first
    for entry in first.values():
        entry["statuses"].clear()
        entry["needs"] = "changed"
    again = release_matrix(diags, keys)
    assert again != first
    assert all(entry["statuses"] and entry["needs"] != "changed" for entry in again.values())


def test_one_file_label_is_its_base_name() -> None:
    assert file_labels(["/a/b/model.safetensors"]) == {
        "/a/b/model.safetensors": "model.safetensors"
    }
    two = ["/a/model.safetensors", "/b/model.safetensors"]
    assert file_labels(two) == {p: p for p in two}
    assert file_labels(["/a/x.safetensors", "/a/y.safetensors"]) == {
        p: base_name(p) for p in ["/a/x.safetensors", "/a/y.safetensors"]
    }


def test_runtime_caches_are_emptied_by_registration() -> None:
    """Every memo that depends on the registered runtimes is a `runtime_cache`: registering or
    removing a runtime empties them all."""
    from quantcheck.runtimes import registry

    cache = registry.runtime_cache()
    cache["k"] = 1
    targets_of("all")
    assert registry._KEYS
    register_runtime(Runtime("memo-fake-2", "Fake", (Release("1.0"),)))
    assert cache == {} and "all" not in registry._KEYS
    cache["k"] = 2
    unregister_runtime("memo-fake-2")
    assert cache == {}
