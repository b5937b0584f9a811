"""The differential tests refuse ComfyUI code that is not the pinned code (runs always: it
needs no ComfyUI source, only stand-in files that are not it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .source import PINS, function_source, sha256, verify


def _tree(tmp_path: Path, ops: str) -> Path:
    (tmp_path / "comfy").mkdir()
    (tmp_path / "comfy/quant_ops.py").write_text("QUANT_ALGOS = {}\n", encoding="utf-8")
    (tmp_path / "comfy/ops.py").write_text(ops, encoding="utf-8")
    return tmp_path


def test_other_code_is_refused(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        "def _load_quantized_module(*a):\n    pass\n\n"
        "def get_disabled_quant_formats(device=None):\n    return set()\n",
    )
    with pytest.raises(RuntimeError, match="not the pinned") as info:
        verify(root)
    assert all(key in str(info.value) for key in PINS)


def test_a_missing_function_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path, "x = 1\n")
    with pytest.raises(KeyError, match="_load_quantized_module"):
        verify(root)


def test_function_source_is_the_definition_only(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("A = 1\n\ndef f(x):\n    return x\n\nB = 2\n", encoding="utf-8")
    assert function_source(path, "f") == "def f(x):\n    return x"
    assert sha256("def f(x):\n    return x") == sha256(function_source(path, "f"))
