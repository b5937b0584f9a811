"""quantcheck's sglang plugin loaded by sglang 0.5.23's own plugin code (`make diff-sglang`).

The pinned wheel's `runtime/platforms/plugins.py` (load_plugins, apply_plugin_hooks),
`srt/plugins/hook_registry.py` (HookRegistry, HookType, the BEFORE wrapper), `srt/environ.py`
(SGLANG_PLUGINS) and the marker inspector run unmodified; the platform package is a CPU host
with no platform plugin (`get_selected_platform_dist()` is None). quantcheck's entry point is
found by `importlib.metadata` from a dist-info folder written from pyproject.toml's
declaration, beside the wheel's own sglang dist-info (the version the hook reads).
Skipped unless QUANTCHECK_DIFF_SGLANG=1.
"""

from __future__ import annotations

import os
import sys
import tomllib
import types
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import loader
from .wheels import MEMBERS, wheel

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_SGLANG") != "1",
    reason="set QUANTCHECK_DIFF_SGLANG=1 (make diff-sglang)",
)
ROOT = Path(__file__).resolve().parents[4]
BROKEN = str(ROOT / "examples" / "flux" / "flux_broken.safetensors")
CLEAN = str(ROOT / "examples" / "flux" / "flux_fp8.safetensors")
VERSION = "0.5.23"
PLUGIN_MODULES = (
    "sglang.multimodal_gen.runtime.platforms.plugins",
    "sglang.srt.plugins",
    "sglang.srt.plugins.hook_registry",
    "sglang.srt.environ",
)
PLUGIN_FILES = (
    "sglang/multimodal_gen/runtime/platforms/plugins.py",
    "sglang/srt/plugins/",
    "sglang/srt/environ.py",
    f"sglang-{VERSION}.dist-info/METADATA",
)


def _extract(into: Path) -> Path:
    whl = wheel(VERSION)
    if whl is None:
        pytest.skip(f"sglang {VERSION} wheel not available")
    with zipfile.ZipFile(whl) as z:
        for member in z.namelist():
            if member.startswith(MEMBERS + PLUGIN_FILES) and (
                member.endswith(".py") or member.endswith("METADATA")
            ):
                z.extract(member, into)
    return into


def _dist_info(site: Path) -> None:
    """quantcheck's entry point as pip would install it from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    info = site / "quantcheck-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: quantcheck\nVersion: 0.0.0\n")
    lines = [
        f"[{group}]" + "".join(f"\n{k} = {v}" for k, v in eps.items())
        for group, eps in project["entry-points"].items()
    ]
    (info / "entry_points.txt").write_text("\n\n".join(lines) + "\n")


@pytest.fixture
def sglang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    root = _extract(tmp_path / "wheel")
    _dist_info(root)
    monkeypatch.syspath_prepend(str(root))  # dist-info folders: quantcheck's and sglang's
    monkeypatch.setattr(loader, "REAL", loader.REAL + PLUGIN_MODULES)
    qu = loader.load_release(root)
    platforms = types.ModuleType("sglang.multimodal_gen.runtime.platforms")
    platforms.__path__ = []  # type: ignore[attr-defined]
    platforms.PLATFORM_PLUGINS_GROUP = "sglang.multimodal_gen.platforms"  # type: ignore[attr-defined]
    platforms.get_selected_platform_dist = lambda: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, platforms.__name__, platforms)
    import importlib

    plugins = importlib.import_module("sglang.multimodal_gen.runtime.platforms.plugins")
    yield {"qu": qu, "plugins": plugins, "original": qu.inspect_comfy_quant_markers}
    plugins._reset_lifecycle_for_tests()
    plugins.HookRegistry.reset()
    for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
        del sys.modules[name]


def _activate(s: dict[str, Any]) -> Any:
    s["plugins"].load_plugins()
    s["plugins"].apply_plugin_hooks()
    return s["qu"].inspect_comfy_quant_markers


def test_sglang_loads_the_plugin_and_a_broken_file_raises_every_problem(
    sglang: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_PLUGINS", "quantcheck")
    inspect = _activate(sglang)
    assert inspect is not sglang["original"] and inspect.__wrapped__ is sglang["original"]
    with pytest.raises(ValueError) as err:
        inspect([BROKEN])
    text = str(err.value)
    assert text.startswith(f"quantcheck: flux_broken.safetensors will not load in sglang {VERSION}")
    for code in ("QC301", "QC305", "QC602"):
        assert f"  {code} " in text
    # sglang's own inspector stops at one problem (or none) on the same file
    try:
        sglang["original"]([BROKEN])
        own = ""
    except Exception as exc:
        own = str(exc)
    assert "QC" not in own


def test_a_clean_file_passes_unchanged(
    sglang: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)  # unset: every plugin may run
    inspect = _activate(sglang)
    assert inspect is not sglang["original"]
    assert inspect([CLEAN]) == sglang["original"]([CLEAN])
    assert inspect([CLEAN])  # the markers of the FP8 layers


def test_not_allowed_by_sglang_plugins_nothing_changes(
    sglang: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_PLUGINS", "some_other_plugin")
    inspect = _activate(sglang)
    assert inspect is sglang["original"]
    try:
        inspect([BROKEN])
        own = ""
    except Exception as exc:
        own = str(exc)
    assert not own.startswith("quantcheck")
