"""The sglang plugin outside sglang: its entry point, what it registers, what the hook does."""

from __future__ import annotations

import enum
import pkgutil
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

from quantcheck.integrations import sglang_plugin as plugin

ROOT = Path(__file__).resolve().parents[2]
BROKEN = str(ROOT / "examples" / "flux" / "flux_broken.safetensors")
CLEAN = str(ROOT / "examples" / "flux" / "flux_fp8.safetensors")


def test_the_entry_point_is_declared_and_resolves() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    group = project["entry-points"]["sglang.multimodal_gen.plugins"]
    assert group == {"quantcheck": "quantcheck.integrations.sglang_plugin:register"}
    assert pkgutil.resolve_name(group["quantcheck"]) is plugin.register
    assert (plugin.GROUP, plugin.ENTRY_POINT) == ("sglang.multimodal_gen.plugins", "quantcheck")
    assert any(r.startswith("sglang>=0.5.23") for r in project["optional-dependencies"]["sglang"])


def test_register_puts_a_before_hook_on_the_marker_inspector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered: list[tuple[str, Any, Any]] = []
    HookType = enum.Enum("HookType", "BEFORE AFTER AROUND REPLACE")

    def plugin_hook(target: str, type: Any = HookType.AFTER) -> Any:
        def deco(fn: Any) -> Any:
            registered.append((target, type, fn))
            return fn

        return deco

    mod = types.ModuleType("sglang.multimodal_gen.runtime.platforms.plugins")
    mod.HookType, mod.plugin_hook = HookType, plugin_hook  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    plugin.register()
    assert registered == [
        (
            "sglang.multimodal_gen.runtime.utils.quantization_utils.inspect_comfy_quant_markers",
            HookType.BEFORE,
            plugin.check_before_inspection,
        )
    ]


def test_the_hook_raises_one_error_with_every_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "installed_sglang", lambda: "0.5.23")
    with pytest.raises(ValueError) as err:
        plugin.check_before_inspection([BROKEN], None)
    text = str(err.value)
    assert text.startswith("quantcheck: flux_broken.safetensors will not load in sglang 0.5.23")
    for code in ("QC301", "QC305", "QC602"):
        assert f"  {code} " in text


def test_the_hook_passes_a_clean_file_on_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "installed_sglang", lambda: "0.5.23")
    assert plugin.check_before_inspection([CLEAN]) is None
    assert plugin.check_before_inspection(safetensors_list=[CLEAN]) is None
    assert plugin.check_before_inspection([]) is None


def test_the_hook_checks_the_installed_release(monkeypatch: pytest.MonkeyPatch) -> None:
    nvfp4 = str(ROOT / "examples" / "flux" / "flux_nvfp4.safetensors")
    monkeypatch.setattr(plugin, "installed_sglang", lambda: "0.5.23")
    assert plugin.check_before_inspection([nvfp4]) is None
    monkeypatch.setattr(plugin, "installed_sglang", lambda: "0.5.19")  # no NVFP4 markers yet
    with pytest.raises(ValueError, match=r"target sglang@0\.5\.19"):
        plugin.check_before_inspection([nvfp4])


def test_an_unreadable_file_is_left_to_sglang(tmp_path: Path) -> None:
    assert plugin.check_before_inspection([str(tmp_path / "missing.safetensors")]) is None
