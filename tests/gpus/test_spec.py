"""`--gpu SPEC`: the names users type, compute capabilities, backends, the stack and `all`."""

from __future__ import annotations

import pytest

from quantcheck.gpus import CLASSES, SpecError, class_of, expand_specs, parse_spec


@pytest.mark.parametrize(
    ("value", "where", "vendor", "label"),
    [
        ("rtx4090", "sm_89", "nvidia", "rtx4090 (sm_89)"),
        ("RTX 3090", "sm_86", "nvidia", "rtx3090 (sm_86)"),
        ("rtx5090", "sm_120", "nvidia", "rtx5090 (sm_120)"),
        ("a100", "sm_80", "nvidia", "a100 (sm_80)"),
        ("l40s", "sm_89", "nvidia", "l40s (sm_89)"),
        ("h100", "sm_90", "nvidia", "h100 (sm_90)"),
        ("h200", "sm_90", "nvidia", "h200 (sm_90)"),
        ("b200", "sm_100", "nvidia", "b200 (sm_100)"),
        ("gb200", "sm_100", "nvidia", "gb200 (sm_100)"),
        ("sm_89", "sm_89", "nvidia", "sm_89"),
        ("sm89", "sm_89", "nvidia", "sm_89"),
        ("sm_100", "sm_100", "nvidia", "sm_100"),
        ("8.9", "sm_89", "nvidia", "8.9 (sm_89)"),
        ("12.0", "sm_120", "nvidia", "12.0 (sm_120)"),
        ("rx7900xtx", "gfx1100", "amd", "rx7900xtx (gfx1100)"),
        ("mi300x", "gfx942", "amd", "mi300x (gfx942)"),
        ("gfx1201", "gfx1201", "amd", "gfx1201"),
        ("arc-a770", "xpu", "intel", "arc-a770 (xpu)"),
        ("xpu", "xpu", "intel", "xpu"),
        ("directml", "directml", "microsoft", "directml"),
        ("mps", "mps", "apple", "mps"),
        ("cpu", "cpu", "cpu", "cpu"),
    ],
)
def test_device_names(value: str, where: str, vendor: str, label: str) -> None:
    spec = parse_spec(value)
    assert (spec.where, spec.vendor, spec.label(), spec.given) == (where, vendor, label, value)


def test_defaults_are_the_newest_stack() -> None:
    s = parse_spec("rtx4090")
    assert (s.torch, s.cuda, s.rocm, s.os) == ((2, 15), (13, 0), None, "linux")
    assert parse_spec("mi300x").rocm == (7, 1) and parse_spec("mi300x").cuda is None
    assert parse_spec("mps").cuda is None
    # CUDA 13 dropped Pascal and Volta: their default is the CUDA 12.6 build
    assert parse_spec("gtx1080").cuda == (12, 6) and parse_spec("v100").cuda == (12, 6)


def test_stack_parts() -> None:
    s = parse_spec("sm_89,cuda=12.8,torch=2.9")
    assert (s.cc, s.cuda, s.torch, s.given) == (
        (8, 9),
        (12, 8),
        (2, 9),
        "sm_89,cuda=12.8,torch=2.9",
    )
    assert parse_spec("sm_120,torch=2.9.1+cu128").cuda == (12, 8)
    assert parse_spec("mps,torch=2.15").torch == (2, 15)
    assert parse_spec("rtx4090,os=windows").os == "windows"
    assert parse_spec("gfx1201,rocm=6.3").rocm == (6, 3)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("rtx4909", "did you mean rtx4090"),
        ("", "no device"),
        ("sm_89,cuda=x", "give a version"),
        ("mps,cuda=12.8", "NVIDIA GPUs only"),
        ("sm_89,rocm=6.4", "AMD GPUs only"),
        ("sm_89,foo=1", "KEY=VALUE"),
        ("sm_89,torch=2.9,torch=2.8", "given twice"),
        ("sm_89,os=beos", "linux or windows"),
        ("sm_19", "no NVIDIA GPU"),
    ],
)
def test_bad_specs_say_why(value: str, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        parse_spec(value)


def test_all_is_every_class_with_the_stack() -> None:
    specs = expand_specs(["all"])
    assert [s.given for s in specs] == [c.key for c in CLASSES]
    stacked = expand_specs(["all,cuda=12.8"])
    nv = [s for s in stacked if s.vendor == "nvidia"]
    assert nv and all(s.cuda == (12, 8) and s.given.endswith(",cuda=12.8") for s in nv)
    # cuda= does not apply to AMD, Intel, Apple or the CPU: left out there, not an error
    assert all(s.given == s.cls.key for s in stacked if s.vendor != "nvidia")


def test_duplicates_count_once() -> None:
    assert [s.given for s in expand_specs(["rtx4090", "rtx4090", "sm_89"])] == ["rtx4090", "sm_89"]


def test_unknown_capability_takes_the_class_below() -> None:
    assert class_of((8, 7)).key == "sm_86"
    assert parse_spec("sm_87").cls.key == "sm_86" and parse_spec("sm_87").where == "sm_87"
