"""The public API holds up as users call it: the README's Python examples run twice in one
process after every submodule is imported, `quantcheck.check` stays a function, and the
entry points map over a process pool (functions pickled by name)."""

from __future__ import annotations

import importlib
import pkgutil
import re
import shutil
import types
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

import quantcheck
from rules.sglang.loader_helpers import marker_path

REPO = Path(__file__).resolve().parents[1]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _import_every_submodule() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(quantcheck.__path__, "quantcheck."):
        importlib.import_module(info.name)
        names.append(info.name)
    return names


def test_no_public_name_is_both_a_function_and_a_module() -> None:
    modules = set(_import_every_submodule())
    for name in modules | {"quantcheck"}:
        package = importlib.import_module(name)
        for attr in getattr(package, "__all__", []):
            value = getattr(package, attr)
            assert not isinstance(value, types.ModuleType) or f"{name}.{attr}" in modules, attr
            if callable(value) and not isinstance(value, type):
                assert f"{name}.{attr}" not in modules, f"{name}.{attr} is a function and a module"
    assert isinstance(quantcheck.check, types.FunctionType)
    assert isinstance(quantcheck.load, types.FunctionType)


@pytest.fixture
def workspace(tmp_path: Path, examples_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(examples_dir / "nvfp4.safetensors", tmp_path / "model.safetensors")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_python_examples_run_twice(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = PYTHON_BLOCK.findall((REPO / "README.md").read_text())
    assert len(blocks) >= 3
    _import_every_submodule()
    for _ in range(2):
        for block in blocks:
            namespace: dict[str, object] = {"paths": [str(workspace / "model.safetensors")] * 2}
            if "__main__" not in block:
                namespace["__name__"] = "readme_example"
            exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert out.count("ok") >= 2, out


def test_package_level_calls_twice_and_through_a_pool(workspace: Path) -> None:
    path = str(workspace / "model.safetensors")
    first = quantcheck.check(path)
    second = quantcheck.check(path)
    assert first.target_status("sglang") == second.target_status("sglang")
    assert quantcheck.load(path).layers
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        reports = list(pool.map(quantcheck.check, [path, path]))
    assert [marker_path(r) for r in reports] == ["ok", "ok"]
