"""All reference cases of sglang 0.5.23 (`tests/data/sglang-cases`), run as its README says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quantcheck.compat.sglang import (
    check_config_constructor,
    inspect_comfy_quant_markers,
    resolve_comfy_checkpoint_quantization,
    simulate_load,
)

from ._sglang_helpers import cases_dir, qwen_image21_split, strip_comfyui_prefix, typed


def _case_names() -> list[str]:
    try:
        folder = cases_dir()
    except OSError:  # the test of this placeholder name then fails, naming the missing file
        return ["<cases folder missing>"]
    return [case["name"] for case in json.loads((folder / "cases.json").read_text())["cases"]]


def _load(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = cases_dir()
    cases = {c["name"]: c for c in json.loads((folder / "cases.json").read_text())["cases"]}
    expected = json.loads((folder / "expected.json").read_text())
    assert expected["sglang_version"] == "0.5.23"
    return cases[name], expected["cases"][name]


def _error(exc: BaseException) -> tuple[str, str]:
    return type(exc).__name__, str(exc)


@pytest.mark.parametrize("name", _case_names())
def test_reference_case(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case, expected = _load(name)
    monkeypatch.chdir(cases_dir())
    mapper = strip_comfyui_prefix if case["mapper"] == "strip_comfyui_prefix" else None
    assert case["mapper"] in ("none", "strip_comfyui_prefix", "qwen_image21")

    try:
        markers = inspect_comfy_quant_markers(list(case["files"]), mapper)
    except Exception as exc:
        assert not expected["ok"], f"unexpected {_error(exc)}"
        error_type, message = _error(exc)
        assert error_type == expected["error_type"]
        assert message in expected.get("message_one_of", [expected["message"]])
        assert message == expected["message"]  # our deterministic choice: smallest prefix
        return
    assert expected["ok"], f"expected {expected.get('error_type')}: {expected.get('message')}"
    if case["mapper"] == "qwen_image21":
        markers = qwen_image21_split(markers)
    assert typed(markers) == typed(expected["markers"])

    resolver = expected["resolver"]
    try:
        config_class = resolve_comfy_checkpoint_quantization(markers)
    except Exception as exc:
        assert not resolver["ok"]
        assert _error(exc) == (resolver["error_type"], resolver["message"])
        return
    assert resolver["ok"] and config_class == resolver["config_class"]
    if config_class is None:
        assert "constructor" not in expected
        return

    constructor = expected["constructor"]
    try:
        check_config_constructor(config_class, markers)
    except ValueError as exc:
        assert not constructor["ok"]
        assert _error(exc) == (constructor["error_type"], constructor["message"])
    else:
        assert constructor["ok"], constructor


@pytest.mark.parametrize("name", _case_names())
def test_reference_case_simulate_load(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case, expected = _load(name)
    monkeypatch.chdir(cases_dir())
    outcome = simulate_load(
        case["files"],
        strip_comfyui_prefix if case["mapper"] == "strip_comfyui_prefix" else None,
        transform_markers=qwen_image21_split if case["mapper"] == "qwen_image21" else None,
    )
    if not expected["ok"]:
        assert (outcome.ok, outcome.stage) == (False, "inspector")
        assert outcome.error_type == expected["error_type"]
        assert outcome.message == expected["message"]
        assert outcome.markers is None
        return
    assert typed(outcome.markers) == typed(expected["markers"])
    resolver = expected["resolver"]
    if not resolver["ok"]:
        assert (outcome.ok, outcome.stage) == (False, "resolver")
        assert outcome.message == resolver["message"]
        return
    assert outcome.config_class == resolver["config_class"]
    if outcome.config_class is None:
        assert (outcome.ok, outcome.stage) == (True, "resolver")
        return
    constructor = expected["constructor"]
    assert outcome.stage == "constructor"
    assert outcome.ok == constructor["ok"]
    assert outcome.message == constructor.get("message")
