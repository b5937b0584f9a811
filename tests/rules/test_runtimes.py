"""Runtimes are data: a third runtime registered by a fixture reaches every surface.

Nothing here edits the rule engine, the CLI or the renderers: the fake runtime is one folder
(tests/rules/fakert/: its checks and `paths` hook, its catalog with one rule of its own, its
messages) and one registered record (its releases and effects table), exactly what adding a new
runtime (src/quantcheck/rules/<runtime>/ plus runtimes/<runtime>.py and its line in
runtimes/builtin.py) takes; every registered runtime, built-in or fake, lives in its folder that
way (`test_every_runtime_lives_in_one_folder`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest

import quantcheck.rules as quantcheck_rules
from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.diagnostics import Effect
from quantcheck.rules.docs import rules_markdown
from quantcheck.rules.registry import CATALOGS
from quantcheck.runtimes import (
    Release,
    Runtime,
    register_runtime,
    runtime_names,
    runtimes,
    target_choices,
    unregister_runtime,
)
from test_architecture import import_graph

from ._build import file, fp8, nvfp4
from .sglang.loader_helpers import core, marker_path

FAKE = "fakert"
#: The fake runtime's rule folder: its checks, catalog (QC799) and messages.
FOLDER = f"{__package__}.fakert"
FORK = "fakefork"
#: The runtimes registered when quantcheck is imported, in registration order.
REGISTERED = (
    "sglang",
    "comfyui",
    "comfyui-cpu",
    "forge-neo",
    "sdnext",
    "invokeai",
    "sdcpp",
    "diffsynth",
    "musubi",
)


@pytest.fixture
def fake_runtimes() -> Iterator[None]:
    register_runtime(
        Runtime(
            FAKE,
            "FakeRT",
            (Release("1.0"), Release("1.1", {"QC799": Effect.DEGRADED})),
            checks=f"{FOLDER}.checks:FakeChecks",
            effects={"QC314": Effect.DEGRADED},
            doc="a test runtime",
            messages=f"{FOLDER}.messages:PATTERNS",
            paths=f"{FOLDER}.checks:status_json",
            folder=FOLDER,
        )
    )
    register_runtime(Runtime(FORK, "FakeFork", (Release("2.0"),), based_on="comfyui"))
    try:
        yield
    finally:
        unregister_runtime(FORK)
        unregister_runtime(FAKE)


def _plain_fp8_cast(tmp: Path) -> list[Path]:
    return file(lambda: fp8()[:1])(tmp)  # F8 weight, no scale, no marker: QC314


def test_registered_runtime_reaches_targets_summary_and_effects(
    fake_runtimes: None, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert FAKE in runtime_names() and FAKE in target_choices()
    paths = [str(p) for p in _plain_fp8_cast(tmp_path)]
    assert check_paths(paths).targets == ("sglang", "comfyui")  # default: sglang, comfyui
    report = check_paths(paths, target="all")
    assert report.targets == (*REGISTERED, FAKE, FORK)
    d = next(d for d in report.diagnostics if d.code == "QC314")
    eff = d.effective_effects
    assert eff[FAKE] is Effect.DEGRADED  # the runtime's own effects table
    assert eff[FORK] is eff["comfyui"]  # a fork follows the runtime it is based on
    assert FAKE in d.targets
    assert report.target_status(FAKE)["status"] == "degraded"

    assert main(["check", "--target", FAKE, *paths]) == 1  # QC314 is an error
    out = capsys.readouterr().out
    assert f"{FAKE}: degraded" in out and "sglang:" not in out
    main(["check", "--format", "json", "--target", "all", *paths])
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["targets"]) == {*REGISTERED, FAKE, FORK}
    main(["check", "--format", "json", "--target", f"comfyui,{FAKE}@1.0", *paths])
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["targets"]) == ["comfyui", f"{FAKE}@1.0"]
    # the folder's `paths` hook adds its keys to that target's summary, per release
    summary = doc["checkpoints"][0]["targets"]
    assert summary[f"{FAKE}@1.0"] == {
        "status": "degraded",  # QC314, by its effects table
        "errors": 0,
        "degraded": 1,
        "layers": 1,
        "release": "1.0",
    }
    assert "layers" not in summary["comfyui"]
    assert "- `fakert`: FakeRT 1.1 — a test runtime" in rules_markdown()


def test_runtime_checks_report_for_that_runtime_only(fake_runtimes: None, tmp_path: Path) -> None:
    paths = [str(p) for p in file(nvfp4)(tmp_path)]
    assert not any("fakert" in d.message for d in check_paths(paths).diagnostics)
    report = check_paths(paths, target="all")
    ours = [d for d in report.diagnostics if d.message == "fakert has no nvfp4 support"]
    assert ours and ours[0].targets == [FAKE]
    assert ours[0].code == "QC799" and ours[0].name == "fakert-no-nvfp4"
    # release 1.1 (the newest, what a bare name means) changed QC799 to degraded
    assert ours[0].effective_effects[FAKE] is Effect.DEGRADED
    assert report.target_status(FAKE)["status"] == "degraded"
    assert marker_path(report) == "ok"
    assert core(check_paths(paths, target="sglang").diagnostics) == []


def test_runtime_folder_brings_its_rules_and_messages(
    fake_runtimes: None, capsys: pytest.CaptureFixture
) -> None:
    """The folder's catalog joins the registry (docs, `rules`, `explain`) and its messages
    are matched, only while the runtime is registered."""
    from quantcheck.explain.messages import match_message
    from quantcheck.rules.registry import all_rules

    assert all_rules()["QC799"].name == "fakert-no-nvfp4"
    assert "QC799" in rules_markdown()
    hit = match_message("RuntimeError: FakeRT cannot run nvfp4 layer 'blocks.0.fc'")
    assert hit is not None and hit.pattern.code == "QC799"
    assert main(["explain", "QC799"]) == 0
    assert "fakert-no-nvfp4" in capsys.readouterr().out


def test_without_the_fixture_nothing_is_left_behind() -> None:
    from quantcheck.explain.messages import match_message
    from quantcheck.rules.registry import all_rules

    assert runtime_names() == REGISTERED
    assert "QC799" not in all_rules()
    assert match_message("FakeRT cannot run nvfp4 layer 'blocks.0.fc'") is None


def test_target_lists_and_unknown_names(fake_runtimes: None) -> None:
    from quantcheck.runtimes import parse_target, targets_of

    assert targets_of("default") == ("sglang", "comfyui")
    assert targets_of("all") == (*REGISTERED, FAKE, FORK)
    assert targets_of(f"{FAKE}@all,sglang,{FAKE}@1.0") == (f"{FAKE}@1.0", f"{FAKE}@1.1", "sglang")
    with pytest.raises(ValueError, match="unknown target 'nope'"):
        parse_target("sglang,nope")
    with pytest.raises(ValueError, match=f"{FAKE} models 1.0, 1.1"):
        parse_target(f"comfyui,{FAKE}@9")


def test_double_registration_is_refused(fake_runtimes: None) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_runtime(Runtime(FAKE, "again", (Release("1"),)))
    with pytest.raises(ValueError, match="unknown"):
        register_runtime(Runtime("orphan", "Orphan", (Release("1"),), based_on="nope"))


RULES_PKG = Path(quantcheck_rules.__file__).parent


def _hooks(rt: Runtime) -> dict[str, str]:
    """The modules a record names for its behaviour, by hook."""
    hooks = ("checks", "quantize_refusal", "paths", "messages", "gpu", "loaders", "keys")
    return {h: getattr(rt, h).partition(":")[0] for h in hooks if getattr(rt, h)}


@pytest.mark.parametrize("with_fake", [False, True], ids=["builtin", "fake"])
def test_every_runtime_lives_in_one_folder(with_fake: bool, request: pytest.FixtureRequest) -> None:
    """A runtime's behaviour is its folder: every hook of its record names a module in it (a
    fork without one: its base's), the folder brings its catalog, and its modules import no
    other runtime's folder but its base's. Each folder of rules/ is a registered runtime's or a
    generic family's (`CATALOGS`)."""
    if with_fake:
        request.getfixturevalue("fake_runtimes")
    folders = {rt.name: rt.folder for rt in runtimes()}
    for rt in runtimes():
        home = rt.folder or folders.get(rt.based_on or "", "")
        assert home, f"{rt.name}: no rule folder"
        for hook, module in _hooks(rt).items():
            assert module.startswith(f"{home}."), f"{rt.name}.{hook} = {module}, outside {home}"
        if rt.folder:
            assert import_module(f"{rt.folder}.catalog").RULES, rt.name
    graph = import_graph(type_only=True)
    for rt in runtimes():
        if not rt.folder.startswith("quantcheck.rules."):
            continue
        allowed = {rt.folder, folders.get(rt.based_on or "", rt.folder)}
        for module, deps in graph.items():
            if module == rt.folder or module.startswith(f"{rt.folder}."):
                reached = {".".join(d.split(".")[:3]) for d in deps if d.count(".") >= 3}
                others = reached & {f for f in folders.values() if f} - allowed
                assert not others, f"{module} imports another runtime's folder: {others}"
    on_disk = {p.name for p in RULES_PKG.iterdir() if (p / "__init__.py").is_file()}
    builtin = {f.rpartition(".")[2] for f in folders.values() if f.startswith("quantcheck.rules.")}
    assert on_disk == builtin | set(CATALOGS)


#: (module outside every runtime's folder, the runtime folder it imports) -> why; every other
#: generic module asks a runtime through its record's hooks (`Runtime.checks`, `gpu`,
#: `loaders`, `keys`, ...) or a generic interface (`rules/gpu/kitchen.py`)
REACH_IN = {
    ("quantcheck.compat.sglang", "quantcheck.rules.sglang"): (
        "the public drop-in `quantcheck.compat.sglang` is sglang's reproduced marker loading "
        "under its documented import path: a facade of that one runtime's folder"
    ),
}


def reach_ins(graph: dict[str, set[str]], folders: set[str]) -> set[tuple[str, str]]:
    """(module, runtime folder) for each module outside every folder of `folders` that
    imports a module of one (type-only imports included, as `graph` has them)."""

    def home(module: str) -> str | None:
        return next((f for f in folders if module == f or module.startswith(f"{f}.")), None)

    out = set()
    for module, deps in graph.items():
        if home(module) is None:
            out |= {(module, f) for d in deps if (f := home(d)) is not None}
    return out


def test_generic_code_imports_no_runtime_folder() -> None:
    """Generic modules (outside `rules/<runtime>/`) ask "the runtime", never import its
    folder; the exceptions are `REACH_IN`, each with its reason, and that list is exact."""
    folders = {rt.folder for rt in runtimes() if rt.folder.startswith("quantcheck.rules.")}
    found = reach_ins(import_graph(type_only=True), folders)
    assert found == set(REACH_IN), (
        f"imported from outside the folder: {sorted(found - set(REACH_IN))}; "
        f"exceptions no longer needed: {sorted(set(REACH_IN) - found)}"
    )


def test_reach_in_check_finds_one() -> None:
    graph = {
        "quantcheck.results": {"quantcheck.rules.rt.loaders", "quantcheck.runtimes"},
        "quantcheck.rules.rt.checks": {"quantcheck.rules.rt.loaders"},
        "quantcheck.rules.gpu.report": {"quantcheck.rules.gpu.plan"},
    }
    assert reach_ins(graph, {"quantcheck.rules.rt"}) == {
        ("quantcheck.results", "quantcheck.rules.rt")
    }
