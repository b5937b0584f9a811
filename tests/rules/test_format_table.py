"""Formats are data: every table entry has a codec, a CLI choice, docs and rule coverage, and a
new format is one table entry plus one codec module (proved with a fake one)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import quantcheck.numeric.api  # noqa: F401  (imports every codec module: they register)
from quantcheck.checking import check_paths
from quantcheck.cli.main import build_parser, main
from quantcheck.formats import codecs
from quantcheck.formats.table import F32, FORMATS, Companion, FormatSpec, Option, option
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.numeric import dequantize, quantize
from quantcheck.rules.docs import rules_markdown

from .sglang.loader_helpers import core_codes
from .test_rule_table import CASES

ROOT = Path(__file__).resolve().parents[2]
REAL = [n for n, f in FORMATS.items() if not f.third_party]


def _quantize_choices() -> list[str]:
    parser = build_parser("quantize")
    sub = next(a for a in parser._actions if a.dest == "command")
    action = next(a for a in sub.choices["quantize"]._actions if a.dest == "fmt")
    return list(action.choices)


def test_every_format_has_a_codec() -> None:
    registered = codecs.registered()
    for name in REAL:
        spec = FORMATS[name]
        assert spec.codec, f"{name}: no codec module in the table"
        c = registered.get(name)
        assert c is not None, f"{name}: {spec.codec} registered no codec"
        assert c.module == spec.codec
        assert (c.quantize is not None) == spec.quantizable


def test_cli_choices_follow_the_table() -> None:
    # `auto` (with --gpu): the first format that runs natively on the GPU, not a format
    assert _quantize_choices() == [*(n for n in REAL if FORMATS[n].quantizable), "auto"]


def test_every_format_is_documented() -> None:
    on_disk = (ROOT / "docs" / "rules.md").read_text()
    for name in FORMATS:
        assert f"\n### {name}\n" in on_disk, f"docs/rules.md has no section for {name}"


@pytest.fixture(scope="module")
def case_formats(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    seen: set[str] = set()
    for build in [b for case in CASES for b in (case.build, case.twin) if b is not None]:
        tmp = tmp_path_factory.mktemp("case")
        try:
            with load_checkpoint([str(p) for p in build(tmp)]) as ck:
                seen.update(la.format for la in ck.layers.values() if isinstance(la.format, str))
        except (OSError, ValueError):
            continue  # container cases that do not open
    return seen


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_has_rule_cases(name: str, case_formats: set[str]) -> None:
    assert name in case_formats, f"no case in tests/rules/cases*.py has a {name} layer"


def test_double_registration_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        codecs.register_codec("nvfp4", dequantize=lambda *a: None, quantize=lambda *a: None)
    with pytest.raises(ValueError, match="not in the format table"):
        codecs.register_codec("int3_magic", dequantize=lambda *a: None)


# ----------------------------------------------------------------------------- a new format


def _written(n: int, k: int, o: dict, in_dtype: str) -> tuple[dict, dict]:
    return {"weight": ("I8", (n, k)), "weight_scale": ("F32", (n,))}, {}


FAKE_CODEC = f"{__package__}.fake_codec"  # imported by the registry on first use, not here
NEW = FormatSpec(
    "int8_rowwise_test",
    "INT8, one F32 scale per row (test format)",
    frozenset({"I8"}),
    "none",
    companions=(Companion("weight_scale", F32, F32, lambda d: [(d.N,)], required_comfyui=True),),
    sglang="unsupported",
    codec=FAKE_CODEC,
    written=_written,
)


@pytest.fixture
def new_format() -> Iterator[FormatSpec]:
    """One table entry; its codec module registers itself on first use."""
    FORMATS[NEW.name] = NEW
    try:
        yield NEW
    finally:
        del FORMATS[NEW.name]
        codecs._CODECS.pop(NEW.name, None)
        sys.modules.pop(FAKE_CODEC, None)


def test_a_new_format_is_one_entry_and_one_codec(new_format: FormatSpec, tmp_path: Path) -> None:
    w = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
    layer = quantize(w, new_format.name)  # the codec module is imported and registers now
    assert layer.marker == {"format": new_format.name}
    back = dequantize(None, layer.arrays(), layer.marker)
    assert np.abs(back - w).max() <= np.abs(w).max() / 127
    assert new_format.name in _quantize_choices()
    assert f"\n### {new_format.name}\n" in rules_markdown()

    import safetensors.numpy

    src = tmp_path / "plain.safetensors"
    safetensors.numpy.save_file({"blocks.0.fc.weight": w.astype(np.float32)}, str(src))
    out = tmp_path / "q.safetensors"
    assert (
        main(
            [
                "quantize",
                str(src),
                "-o",
                str(out),
                "--format",
                new_format.name,
                "--target",
                "comfyui",
            ]
        )
        == 0
    )
    report = check_paths([str(out)], target="comfyui")
    assert report.diagnostics == [], [d.message for d in report.diagnostics]
    sg = check_paths([str(out)], target="sglang")
    assert core_codes(sg.diagnostics) == {"QC601"}  # the table says sglang lacks it
    with load_checkpoint(str(out)) as ck:
        assert np.array_equal(ck.layer("blocks.0.fc").dequantize(), back)


def test_options_and_defaults_come_from_the_table() -> None:
    int8 = FORMATS["int8_tensorwise"]
    assert int8.with_defaults({})["convrot_groupsize"] == int8.key("convrot_groupsize").default
    assert option(int8.key("convrot")) == Option("convrot", False, None, int8.key("convrot").doc)
    with pytest.raises(ValueError, match="unknown option"):
        int8.with_defaults({"bits": 4})
    w4a8 = FORMATS["asym_w4a8_int8"]
    assert w4a8.options_from_marker({"format": "asym_w4a8_int8", "params": {"group_size": 32}}) == {
        "group_size": 32,
        "convrot_groupsize": 256,
    }


# ----------------------------------------------------------------------------- marker inference

INFERRED = {"float8_e4m3fn", "float8_e5m2", "nvfp4", "mxfp8"}


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if f.quantizable])
@pytest.mark.parametrize("options", [{}, {"per_row": True, "convrot": True}], ids=str)
def test_inference_agrees_with_the_written_layout(name: str, options: dict) -> None:
    """What `quantize` writes (the table's layout) is inferred back as that format, or not at
    all (rotation groups and W4A8 sizes are not in the tensors); never as another format."""
    from quantcheck.io.header import TensorInfo
    from quantcheck.model.layers import Layer
    from quantcheck.rules.markers.infer import infer_marker

    spec = FORMATS[name]
    opts = {k: v for k, v in options.items() if k in {o.name for o in spec.options}}
    layout, fields = spec.written(256, 512, spec.with_defaults(opts), "BF16")
    layer = Layer(
        "blocks.0.fc",
        {s: TensorInfo(f"blocks.0.fc.{s}", d, sh, 0, 0, "f") for s, (d, sh) in layout.items()},
    )
    got, why = infer_marker(layer)
    scalar_int8 = name == "int8_tensorwise" and not options  # the table's default: scalar
    if name in INFERRED or scalar_int8:
        assert got == {"format": name, **fields}, why
    else:
        assert got is None and why
