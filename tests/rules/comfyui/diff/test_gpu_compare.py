"""The GPU differential's own logic, without ComfyUI (runs always): from an oracle path to a
mode, the comparison with a `check --gpu` entry, and the device facts built from that entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .gpu_cases import files, specs
from .gpu_compare import Verdict, compare, format_summary, oracle_mode
from .gpu_stack import CARDS, Stack, amd_capability, stack_from_entry

EAGER = {
    "int8_linear": (True, "eager int8_linear: torch._int_mm"),
    "convrot_w4a4_linear": (False, "eager convrot: floats"),
}


@dataclass
class _Call:
    op: str
    backend: str | None
    why: str = ""


@dataclass
class _Path:
    quantized: bool = True
    full_precision_mm: bool = False
    calls: list[Any] = field(default_factory=list)
    error: str = ""


def _mode(
    path: _Path, fmt: str = "int8_tensorwise", n: int = 64, k: int = 64, dev: str = "cuda"
) -> str:
    return oracle_mode(path, fmt, n, k, eager_native=EAGER, awq_limit=256, device_type=dev).mode


def _via(op: str, backend: str | None) -> _Path:
    """A quantized forward that dispatched `op`, comfy-kitchen picking `backend`."""
    return _Path(calls=[_Call(op, backend, "" if backend else "no backend")])


I8, W4A4, AWQ, FP8 = "int8_tensorwise", "convrot_w4a4", "awq_w4a16", "float8_e4m3fn"


@pytest.mark.parametrize(
    ("path", "fmt", "n", "k", "dev", "mode"),
    [
        (_Path(error="load: KeyError: 'w6a8_int8'"), "w6a8_int8", 64, 64, "cuda", "refused"),
        (_Path(quantized=False, full_precision_mm=True), "nvfp4", 64, 64, "cuda", "emulated"),
        (_via("int8_linear", None), I8, 64, 64, "cuda", "refused"),
        (_via("int8_linear", "cuda"), I8, 64, 64, "cuda", "native"),
        (_via("int8_linear", "eager"), I8, 64, 64, "cuda", "native"),
        (_via("int8_linear", "eager"), I8, 64, 64, "mps", "emulated"),
        (_via("convrot_w4a4_linear", "eager"), W4A4, 64, 256, "cuda", "emulated"),
        (_via("gemv_awq_w4a16", "cuda"), AWQ, 32, 128, "cuda", "depends"),
        (_via("gemv_awq_w4a16", "hip"), AWQ, 32, 128, "cuda", "native"),
        (_Path(), FP8, 64, 128, "cuda", "native"),
        (_Path(), FP8, 40, 128, "cuda", "emulated"),
        (_Path(), FP8, 64, 72, "cuda", "emulated"),
    ],
)
def test_oracle_mode(path: _Path, fmt: str, n: int, k: int, dev: str, mode: str) -> None:
    assert _mode(path, fmt, n, k, dev) == mode


def test_read_only_steps_are_marked() -> None:
    ran = oracle_mode(
        _Path(calls=[_Call("int8_linear", "cuda")]),
        "int8_tensorwise",
        64,
        64,
        eager_native=EAGER,
        awq_limit=256,
        device_type="cuda",
    )
    read = oracle_mode(
        _Path(), "float8_e4m3fn", 64, 64, eager_native=EAGER, awq_limit=256, device_type="cuda"
    )
    assert not ran.read and read.read and read.reason.startswith("[READ]")


def test_format_summary() -> None:
    got = format_summary({"a": ["native", "native"], "b": ["native", "emulated"], "c": []})
    assert got == {"a": "native", "b": "mixed"}


def _entry(**modes: str) -> dict[str, Any]:
    return {
        "execution": {layer: {"mode": m, "reason": "theirs"} for layer, m in modes.items()},
        "formats": {"int8_tensorwise": "native"},
    }


def test_compare_counts_agreements_allowed_and_disagreements() -> None:
    oracle = {
        "l1": ("int8_tensorwise", Verdict("native", "ran")),
        "l2": ("int8_tensorwise", Verdict("native", "[READ] r", True)),
    }
    same = compare(oracle, _entry(l1="native", l2="native"), {}, label="f g")
    assert (same.agree, same.allowed, same.disagree) == (3, [], [])
    assert same.read_only == ["f g l2: [READ] r"]
    other = compare(oracle, _entry(l1="native", l2="emulated"), {}, label="f g")
    assert other.agree == 2  # l1 and the format summary (the entry says native)
    assert other.disagree == [
        "f g l2 (int8_tensorwise): ComfyUI native ([READ] r); quantcheck emulated (theirs)"
    ]
    allowed = compare(
        oracle,
        _entry(l1="native", l2="emulated"),
        {("int8_tensorwise", "native", "emulated"): "why"},
        label="f g",
    )
    assert allowed.disagree == [] and allowed.allowed[0].endswith("-- allowed: why")
    missing = compare(oracle, _entry(l1="native"), {}, label="f g")
    assert missing.disagree == ["f g l2: quantcheck has no execution entry"]


def test_stack_from_entry() -> None:
    nvidia = {"vendor": "nvidia", "compute_capability": "8.9", "torch": "2.15", "cuda": "12.8"}
    assert stack_from_entry(nvidia) == Stack("nvidia", (8, 9), torch="2.15", cuda="12.8")
    amd = {"vendor": "amd", "compute_capability": None, "arch": "gfx942", "rocm": "7.1"}
    got = stack_from_entry(amd)
    assert (got.vendor, got.capability, got.arch, got.cuda, got.hip) == (
        "amd",
        (9, 4),
        "gfx942",
        None,
        "7.1",
    )
    assert stack_from_entry({"vendor": "microsoft"}).device_type == "privateuseone"


@pytest.mark.parametrize(
    ("arch", "cc"),
    [("gfx1100", (11, 0)), ("gfx942", (9, 4)), ("gfx90a", (9, 0)), ("gfx1201", (12, 0))],
)
def test_amd_capability(arch: str, cc: tuple[int, int]) -> None:
    assert amd_capability(arch) == cc


def test_the_class_table_has_the_published_capabilities() -> None:
    """quantcheck's GPU table against NVIDIA's and AMD's published facts for the cards both
    name (the oracle takes the capability from quantcheck's entry, so a wrong one there would
    make both sides judge the wrong device)."""
    from quantcheck.gpus.classes import card

    checked = 0
    for name, stack in CARDS.items():
        hit = card(name)
        if hit is None:
            continue
        cls = hit[0]
        if stack.vendor == "nvidia":
            assert cls.cc == stack.capability, name
        elif stack.vendor == "amd":
            assert cls.arch == stack.arch, name
        checked += 1
    assert checked >= 12


def test_every_table_class_is_judged() -> None:
    from quantcheck.gpus.classes import CLASSES

    assert {c.key for c in CLASSES} <= set(specs())


def test_examples_are_all_judged(tmp_path: Path) -> None:
    judged = files(tmp_path)
    examples = Path(__file__).resolve().parents[4] / "examples"
    assert {p.name for p in examples.glob("*.safetensors")} <= set(judged)
