"""JSON and SARIF name a finding's targets by the report's target keys (issue 20 item 12): a
finding reported for `--target comfyui@0271a469` lists `comfyui@0271a469` in `targets` and its
effect on that release under `effects`, so the findings agree with the summary's status, for
every modelled release of every runtime (a finding of one of sglang's loaders that does not
read the file is a note, `decides: false`, rules/sglang/loaders.py)."""

from __future__ import annotations

import json

import pytest
from tests.example_files import EXAMPLES

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.runtimes import targets_of

FILES = sorted(str(p) for p in EXAMPLES.glob("*.safetensors"))
RELEASE_KEYS = targets_of("all@all")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    main(list(argv))
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("key", RELEASE_KEYS)
def test_findings_name_the_release_target_the_summary_judges(
    key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(capsys, "check", "--target", key, "--output-format", "json", *FILES)
    by_checkpoint: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for d in doc["diagnostics"]:
        assert set(d["effects"]) == {key}, d
        assert d["targets"] == ([key] if d["effects"][key] != "none" else []), d
        if d.get("decides") is not False:  # a loader that does not read the file: a note
            by_checkpoint.setdefault(d["checkpoint"], []).append(d)
        else:
            assert d["severity"] == "info" and "read_by" in d, d
    judged = set()
    for entry in doc["checkpoints"]:
        status = entry["targets"][key]["status"]
        effects = {d["effects"][key] for d in by_checkpoint.get(entry["name"], [])}
        want = {"fails": "fails", "degraded": "degraded"}.get(status)
        if want is None:
            assert not effects & {"fails", "degraded"}, (entry["name"], effects)
        else:
            judged.add(entry["name"])
            assert want in effects and (want == "fails" or "fails" not in effects), entry
    assert judged, f"no example file fails or degrades {key}: the test would prove nothing"


@pytest.mark.parametrize("key", RELEASE_KEYS)
def test_one_report_json_and_sarif_use_the_target_key(key: str) -> None:
    from quantcheck.render import sarif

    seen = False
    for path in FILES:
        report = check_paths([path], target=key)
        found = [d for d in report.to_json()["diagnostics"] if d["targets"]]
        assert all(d["targets"] == [key] for d in found)
        results = json.loads(sarif.render(report))["runs"][0]["results"]
        assert all(r["properties"]["targets"] in ([], [key]) for r in results)
        if report.status(key) != "ok":
            seen = True
            assert found and sum(bool(r["properties"]["targets"]) for r in results) == len(found)
    assert seen


def test_default_targets_keep_runtime_names() -> None:
    """Without a release, keys are runtime names: `effects` names each default runtime."""
    report = check_paths([str(EXAMPLES / "broken_seeds.safetensors")])
    for d in report.to_json()["diagnostics"]:
        assert list(d["effects"]) == list(report.targets)
