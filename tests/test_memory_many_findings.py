"""Issue 12 item 11: many findings stay compact and every output is streamed.

A header where every tensor draws a finding must not cost ~100x the header: diagnostics are
slotted and share what they can, and the text, JSON, SARIF and GitHub outputs are written piece
by piece, byte-identical to the whole-string renderers.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import tracemalloc
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.diagnostics import Diagnostic, Fix, Safety
from quantcheck.many import check_spec
from quantcheck.render import many
from quantcheck.render.json_out import Stream, iter_dumps, write_chunks
from quantcheck.results import Report
from quantcheck.rules import codes as R
from quantcheck.textsafe import json_safe
from rules.sglang.loader_helpers import core

HOSTILE = '\u202e\x85\u2028\x7f"\\é'


def many_findings_file(path: Path, n: int) -> Path:
    """A sparse checkpoint of `n` unmarked FP8 weights: one QC314 (with a fix) per tensor."""
    hdr = {}
    for i in range(n):
        name = f"blocks.{i}{HOSTILE if i % 7 == 0 else ''}.attn.qkv.weight"
        hdr[name] = {
            "dtype": "F8_E4M3",
            "shape": [64, 64],
            "data_offsets": [4096 * i, 4096 * (i + 1)],
        }
    text = json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + 4096 * n)
    return path


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_findings_file(tmp_path_factory.mktemp("mem") / "big.safetensors", 3000)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_streamed_output_equals_whole_string_renderers(big: Path, fmt: str) -> None:
    code, streamed = run_cli("check", "--no-color", "--output-format", fmt, str(big))
    assert code == 1
    result = check_spec(str(big))
    # 3000 layer findings and sglang's --transformer-weights-path refusal of the file (QC631)
    assert len(core(result.report.diagnostics)) == 3000  # type: ignore[union-attr]
    if fmt == "text":
        whole = many.render_text([result], color=False)
    elif fmt == "json":  # the pre-streaming renderer: one json.dumps of the whole document
        doc = many.check_document([result], result.report.targets)  # type: ignore[union-attr]
        whole = json_safe(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        whole = many.render_located([result], fmt)
    assert streamed == whole + "\n"
    if fmt in ("json", "sarif"):  # valid JSON, laid out and escaped exactly as json.dumps does
        doc = json.loads(streamed)
        assert streamed == json_safe(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"
        assert "\u202e" not in streamed and "\\u202e" in streamed


DOCS = [
    {},
    [],
    "s",
    3,
    None,
    1.5,
    {"a": []},
    {
        "a": {},
        "b": [1, {"x": [], "y": {"z": HOSTILE}}],
        "c": None,
        "d": 1.5,
        "e": (1, 2),
        HOSTILE: "v",
    },
    [[], [[]], {"q": [{}]}],
]


@pytest.mark.parametrize("doc", DOCS)
def test_iter_dumps_is_json_dumps(doc: object) -> None:
    assert "".join(iter_dumps(doc)) == json_safe(json.dumps(doc, indent=2, ensure_ascii=False))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_streamed_arrays_are_laid_out_like_lists(n: int) -> None:
    items = [{"a": [1, {"b": HOSTILE}], "c": {}}, {"d": []}, [HOSTILE]][:n]
    whole = {"x": 1, "diagnostics": items, "deep": {"in": [{"w": items}]}}
    streamed = {
        "x": 1,
        "diagnostics": Stream(iter(items)),
        "deep": {"in": [{"w": Stream(list(items))}]},
    }
    assert "".join(iter_dumps(streamed)) == json_safe(
        json.dumps(whole, indent=2, ensure_ascii=False)
    )


class Sink(io.StringIO):
    """Counts what is written and keeps none of it."""

    size = 0

    def write(self, s: str) -> int:
        self.size += len(s)
        return len(s)


def many_diagnostics(n: int) -> list[Diagnostic]:
    fix = Fix("add the marker", Safety.SAFE)
    return [
        Diagnostic(
            R.QC314,
            f"weight {i} is F8_E4M3 but unmarked",
            file="a.safetensors",
            tensor=f"blocks.{i}.weight",
            layer=f"blocks.{i}",
            fix=fix,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_rendering_holds_a_bounded_part_of_the_output(fmt: str) -> None:
    """Streaming N findings allocates far less at its peak than the output it writes: a
    whole-string renderer holds at least the whole output (and JSON all its dicts)."""
    from quantcheck.many import CHECKED, CheckpointResult, as_spec

    diags = many_diagnostics(20000)
    report = Report(inputs=[], diagnostics=diags)
    result = CheckpointResult(spec=as_spec("a.safetensors"), kind=CHECKED, report=report)
    small = CheckpointResult(
        spec=as_spec("a.safetensors"),
        kind=CHECKED,
        report=Report(inputs=[], diagnostics=diags[:10]),
    )

    def write(r: CheckpointResult, sink: Sink) -> None:
        if fmt == "text":
            from quantcheck.render.json_out import join_lines

            lines = many.iter_text_lines([r], color=False, show_all=True)  # every finding
            write_chunks(sink, join_lines(lines))
        elif fmt == "json":
            write_chunks(sink, many.iter_json([r]))
        else:
            write_chunks(sink, many.iter_located([r], fmt))

    write(small, Sink())  # imports and shared caches (effects, rules) outside the measurement
    sink = Sink()
    tracemalloc.start()
    try:
        write(result, sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sink.size > 2_000_000
    assert peak < sink.size / 10, (peak, sink.size)


def test_diagnostics_are_compact_and_share_what_they_can() -> None:
    a, b = many_diagnostics(2)
    assert not hasattr(a, "__dict__")  # slotted: no per-instance dict
    assert a.data == {} and a.data is b.data  # one shared empty mapping
    assert a.effective_effects is b.effective_effects  # one resolved dict per (code, effects)
    assert a.targets == b.targets


def test_layer_copies_share_message_fix_and_header_names(big: Path) -> None:
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.rules.engine import run_all_rules

    with load_checkpoint([str(big)]) as ck:
        found = [d for d in run_all_rules(ck) if d.code == "QC314"]
        assert len(found) == 3000
        first = found[0]
        assert all(d.fix is first.fix for d in found)
        names = {id(k) for k in ck.tensors}
        assert all(id(d.tensor) in names for d in found[1:])  # no new string per copy
