"""Hostile strings in every human-readable output (issue 12, items 10 and 12).

A checkpoint's tensor names, metadata and marker values, and a pasted runtime message, are
untrusted: no output may carry a raw ESC, BEL, newline, C1 control, line separator or bidi
override from them (a terminal retitle, a screen clear, a forged `0 errors` line, a forged
`::error` workflow command). Machine outputs (JSON, SARIF) keep the exact value, escaped.
"""

from __future__ import annotations

import json
import os
import re
import re._constants as sre_constants  # the parser `re` itself uses (sre_* are deprecated)
import re._parser as sre_parse
from pathlib import Path
from typing import Any

import pytest

from hostile import marker_bytes, tensors
from quantcheck.cli.main import main
from quantcheck.textsafe import UNSAFE, clean, json_safe

#: what a hostile name carries: OSC retitle + BEL, clear screen, a forged summary line and
#: workflow command, an 8-bit CSI, a right-to-left override, a line separator, DEL.
EVIL = (
    "\x1b]0;pwned\x07\x1b[2J\n0 errors, 0 warnings\n::error file=x::forged"
    "\r\x9b31m\u202eevil\u2028x\x7f\t"
)
LAYER = "blocks.0" + EVIL + ".attn"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _lines_ok(out: str) -> None:
    """No unsafe raw character, and no line a hostile newline could have started."""
    assert not RAW.search(out), repr(RAW.search(out))
    for line in out.splitlines():
        assert not line.startswith(("0 errors", "::error file=x")), line


@pytest.fixture
def evil_file(tmp_path: Path) -> Path:
    marker = marker_bytes({"format": "float8_e4m3fn" + EVIL})
    data = tensors(
        [
            (f"{LAYER}.weight", "F8_E4M3", [4, 4]),
            (f"{LAYER}.weight_scale", "F16", []),
            (f"{LAYER}.comfy_quant", "U8", [len(marker)], marker),
            ("other" + EVIL, "F32", [2]),
        ],
        metadata={"title" + EVIL: "v" + EVIL},
    )
    path = tmp_path / "evil.safetensors"
    path.write_bytes(data)
    return path


def test_clean_escapes_every_unsafe_character() -> None:
    assert clean(EVIL) == (
        "\\x1b]0;pwned\\x07\\x1b[2J\\n0 errors, 0 warnings\\n::error "
        "file=x::forged\\r\\x9b31m\\u202eevil\\u2028x\\x7f\\t"
    )
    assert clean("plain ascii, ünïcödé and C:\\path") == "plain ascii, ünïcödé and C:\\path"
    for cp in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0x202E, 0x2066, 0x061C]:
        assert UNSAFE.fullmatch(chr(cp)) and "\\" in clean(chr(cp))


def test_json_safe_is_the_same_json_value() -> None:
    doc = {"k" + EVIL: ["v" + EVIL, "\ud800"]}
    text = json_safe(json.dumps(doc, indent=2, ensure_ascii=False))
    assert json.loads(text) == doc
    assert not re.search("[\x7f-\x9f\u2028\u202e]", text)


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_check_human_outputs_escape_names(
    evil_file: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["check", "--no-color", "--format", fmt, str(evil_file)]
        if fmt == "text"
        else ["check", "--format", fmt, str(evil_file)]
    )
    out, err = capsys.readouterr()
    assert rc == 1
    _lines_ok(out)
    _lines_ok(err)
    assert "\\x1b]0;pwned\\x07" in out  # the name is still there, readable
    if fmt == "github":
        assert all(line.startswith("::") for line in out.splitlines())


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_machine_outputs_keep_the_exact_name(
    evil_file: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--format", fmt, str(evil_file)]) == 1
    out = capsys.readouterr().out
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u202e]", out.replace("\n", ""))
    assert any(LAYER in s for s in _strings(json.loads(out)))  # exact, once decoded


def _strings(doc: Any) -> set[str]:
    if isinstance(doc, dict):
        return {s for k, v in doc.items() for s in {k} | _strings(v)}
    if isinstance(doc, list):
        return {s for v in doc for s in _strings(v)}
    return {doc} if isinstance(doc, str) else set()


def test_inspect_text_escapes_names_and_metadata(
    evil_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(evil_file)]) == 0
    out, _err = capsys.readouterr()
    _lines_ok(out)
    assert "metadata title\\x1b]0;pwned" in out and "blocks.0\\x1b]0;pwned" in out


def test_inspect_json_keeps_exact_names_escaped(
    evil_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "--format", "json", str(evil_file)]) == 0
    out = capsys.readouterr().out
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u202e]", out.replace("\n", ""))
    assert any(LAYER in s for s in _strings(json.loads(out)))


def test_fix_plan_escapes_names(evil_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["fix", "--dry-run", str(evil_file)])
    out, err = capsys.readouterr()
    _lines_ok(out)
    _lines_ok(err)
    assert "blocks.0\\x1b]0;pwned" in out


def test_fix_diff_escapes_names_metadata_and_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = marker_bytes({"format": "int8_tensorwise", "note": EVIL})
    path = tmp_path / "evil.safetensors"
    path.write_bytes(
        tensors(
            [
                (f"{LAYER}.weight", "I8", [4, 4]),
                (f"{LAYER}.weight_scale", "F16", [4, 1]),
                (f"{LAYER}.comfy_quant", "U8", [len(marker)], marker),
            ],
            metadata={"title" + EVIL: "v" + EVIL},
        )
    )
    main(["fix", "--target", "sglang", "--diff", str(path)])
    out, err = capsys.readouterr()
    _lines_ok(out)
    _lines_ok(err)
    assert "+input" not in out and "@@" in out and "weight_scale F32" in out


def test_html_report_escapes_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layer = "blocks.0.<script>alert(1)</script>" + EVIL
    marker = marker_bytes({"format": "float8_e4m3fn"})
    path = tmp_path / "evil.safetensors"
    path.write_bytes(
        tensors(
            [
                (f"{layer}.weight", "F8_E4M3", [4, 4]),
                (f"{layer}.weight_scale", "F16", []),
                (f"{layer}.comfy_quant", "U8", [len(marker)], marker),
            ],
            metadata={"<b>k</b>": "<img src=x onerror=alert(1)>"},
        )
    )
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    html = out.read_text()
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>k" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    _lines_ok(capsys.readouterr().err)


def test_error_line_escapes_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / ("missing" + EVIL.replace("/", "") + ".safetensors")
    assert main(["check", str(bad)]) == 2
    _out, err = capsys.readouterr()
    _lines_ok(err)
    assert err.startswith("quantcheck: error:") and err.count("\n") == 1


def test_progress_bar_escapes_item_names() -> None:
    import io

    from quantcheck.progress import Progress

    stream = io.StringIO()
    with Progress(2, "lab" + EVIL, stream=stream, enabled=True) as bar:
        bar.advance("layer" + EVIL)
    text = stream.getvalue().replace("\r", "").replace("\n", "")
    assert not RAW.search(text)


def test_explain_escapes_pasted_values(capsys: pytest.CaptureFixture[str]) -> None:
    msg = (
        "ValueError: Comfy INT8 layer 'a' needs I8 weights and F32 scales, got BF16 and "
        "F32\x1b]0;pwned\x07"
    )
    assert main(["explain", msg]) == 0
    out = capsys.readouterr().out
    _lines_ok(out)
    assert "scale_dtype: F32\\x1b]0;pwned\\x07" in out
    assert main(["explain", "nothing known \x1b[2J\n0 errors"]) == 2
    _lines_ok(capsys.readouterr().out)


# --- item 10: explain's matching is linear --------------------------------------------------

UNBOUNDED = {
    sre_constants.MAX_REPEAT,
    sre_constants.MIN_REPEAT,
    getattr(sre_constants, "POSSESSIVE_REPEAT", sre_constants.MAX_REPEAT),
}


def _walk(
    items: Any, inside_repeat: bool, inside_atomic: bool, found: list[str], tail: bool
) -> None:
    """Record nested unbounded repeats, and broad repeats that could backtrack."""
    seq = list(items)
    for i, (op, av) in enumerate(seq):
        last = tail and i == len(seq) - 1
        if op in UNBOUNDED:
            _lo, hi, sub = av
            unbounded = hi == sre_constants.MAXREPEAT
            if unbounded and inside_repeat:
                found.append("nested unbounded repeat")
            broad = any(
                o in (sre_constants.ANY, sre_constants.NOT_LITERAL)
                or (
                    o == sre_constants.IN
                    and av2
                    and av2[0][0] == sre_constants.NEGATE
                    and len(av2) <= 2
                )
                for o, av2 in sub
            )
            if unbounded and broad and not (inside_atomic or last):
                found.append("broad repeat outside an atomic group, not at the end")
            _walk(sub, inside_repeat or unbounded, inside_atomic, found, False)
        elif op == sre_constants.SUBPATTERN:
            _walk(av[-1], inside_repeat, inside_atomic, found, last)
        elif op == getattr(sre_constants, "ATOMIC_GROUP", None):
            _walk(av, inside_repeat, True, found, last)
        elif op == sre_constants.BRANCH:
            for alt in av[1]:
                _walk(alt, inside_repeat, inside_atomic, found, last)


def _hazards(pattern: str) -> list[str]:
    found: list[str] = []
    _walk(sre_parse.parse(pattern), False, False, found, True)
    return found


def test_hazard_finder_finds_the_old_shape() -> None:
    assert _hazards(r"a (?P<x>.+?) and (?P<y>.+?)$")
    assert _hazards(r"(a+)+b")
    assert not _hazards(r"a (?>(?P<x>[^\n]+?) and )(?P<y>[^\n]+)")


def test_message_patterns_cannot_backtrack() -> None:
    from quantcheck.explain.messages import PATTERNS

    for p in PATTERNS:
        assert not _hazards(p.regex.pattern), (p.template, _hazards(p.regex.pattern))
        first = sre_parse.parse(p.regex.pattern)[0]
        assert first[0] == sre_constants.LITERAL, f"{p.template}: not anchored on a literal"


class _Spy:
    """A compiled pattern that records the length of every text it is asked to search."""

    def __init__(self, regex: re.Pattern[str], seen: list[int]) -> None:
        self.regex, self.seen = regex, seen

    def search(self, text: str, *args: Any) -> Any:
        self.seen.append(len(text))
        return self.regex.search(text, *args)

    def match(self, text: str, *args: Any) -> Any:
        self.seen.append(len(text))
        return self.regex.match(text, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.regex, name)


def test_matcher_only_sees_bounded_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from quantcheck.explain import messages

    seen: list[int] = []
    for p in messages.PATTERNS:
        monkeypatch.setattr(p, "regex", _Spy(p.regex, seen))
    junk = "Comfy W4A8 layer 'x' has incompatible weight/scale shapes: (8, 1), " * 3000
    log = (
        "INFO loading\n" * 2000
        + junk
        + "\n"
        + "x" * 300_000
        + "\nValueError: Comfy INT8 layer 'blocks.0' needs I8 weights and F32 scales, got "
        "BF16 and F32\n" + "trailing line\n" * 1000
    )
    match = messages.match_message(log)
    assert match is not None and match.code == "QC304"
    assert match.values == {"prefix": "blocks.0", "weight_dtype": "BF16", "scale_dtype": "F32"}
    assert seen and max(seen) <= 2 * messages.MAX_LINE


def test_message_at_the_end_of_a_long_log_line_is_found() -> None:
    from quantcheck.explain.messages import MAX_LINE, match_message

    text = (
        "x" * (3 * MAX_LINE + 17) + " ValueError: Comfy W4A8 layer 'b' has incompatible "
        "weight/scale shapes: (8, 16), (8, 2), and (8,)"
    )
    match = match_message(text)
    assert match is not None and match.values == {
        "prefix": "b",
        "weight_shape": "(8, 16)",
        "s_rel_shape": "(8, 2)",
        "s_channel_shape": "(8,)",
    }


def test_message_wrapped_over_two_lines_is_found() -> None:
    from quantcheck.explain.messages import match_message

    match = match_message(
        "ValueError: Comfy INT8 layer 'blocks.0' needs I8 weights and\n"
        "    F32 scales, got BF16 and F32\nnext line"
    )
    assert match is not None and match.values["scale_dtype"] == "F32"


def test_every_escaped_character_is_unprintable() -> None:
    """`clean` skips the regex for printable text: sound only if no escaped character is
    printable (checked over every code point)."""
    assert not [c for c in map(chr, range(0x110000)) if UNSAFE.match(c) and c.isprintable()]


# --- issue 21 C: every command, stdout and stderr, on a hostile-named file -------------------

#: a name a repository (or a hub listing) can carry: a forged workflow command and a retitle
FORGED = "x\n::error file=README.md,line=1::forged\n\x1b]0;T\x07"


def _forged_ok(text: str) -> None:
    """No raw control character, and no line a hostile name could have started."""
    assert not RAW.search(text), repr(RAW.search(text))
    for line in text.splitlines():
        assert not line.startswith("::error file=README.md"), line
        assert not line.startswith("\x1b"), line


def _bf16_file(path: Path, scale: float = 1.0) -> None:
    import numpy as np

    from quantcheck.io.build import RawTensor, build_safetensors

    w = (np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7 - 3) * scale
    bf16 = (w.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    path.write_bytes(build_safetensors([RawTensor("blk.lin.weight", "BF16", (64, 64), bf16)]))


@pytest.fixture
def forged(tmp_path: Path) -> dict[str, Path]:
    """A folder with a dangling link and a valid quantized file under hostile names, and a
    BF16 original under a hostile name."""
    import shutil

    folder = tmp_path / ("models" + FORGED)
    folder.mkdir()
    (folder / f"{FORGED}dangling.safetensors").symlink_to(tmp_path / "gone.safetensors")
    ex = Path(__file__).resolve().parents[1] / "examples" / "fp8_e4m3fn.safetensors"
    quant = folder / f"{FORGED}fp8.safetensors"
    shutil.copy(ex, quant)
    orig = tmp_path / f"{FORGED}bf16.safetensors"
    _bf16_file(orig)
    return {"folder": folder, "quant": quant, "orig": orig, "out": tmp_path / f"out{FORGED}"}


def _commands(f: dict[str, Path]) -> list[list[str]]:
    folder, quant, orig, out = (str(f[k]) for k in ("folder", "quant", "orig", "out"))
    dangling = str(f["folder"] / f"{FORGED}dangling.safetensors")
    lines = [
        ["check", "--no-color", "--format", fmt, path]
        for fmt in ("text", "json", "github", "sarif")
        for path in (folder, dangling)
    ]
    lines += [["check", "--statistics", "--no-color", folder], ["check", "-q", folder]]
    lines += [["inspect", folder], ["inspect", "--format", "json", folder], ["inspect", quant]]
    lines += [["inspect", dangling]]
    lines += [["fix", "--dry-run", quant], ["fix", "--diff", quant], ["fix", quant, "-o", out]]
    lines += [["fix", "--output-format", "json", "--dry-run", quant]]
    lines += [["fix", "--dry-run", dangling]]
    lines += [["quantize", orig, "--to", "float8_e4m3fn", "-o", out + "q.safetensors"]]
    lines += [["quantize", dangling, "--to", "float8_e4m3fn", "-o", out + "q2.safetensors"]]
    lines += [["dequantize", quant, "-o", out + "d.safetensors"]]
    lines += [["dequantize", dangling, "-o", out + "d2"]]
    lines += [["compare", quant, orig], ["compare", "--format", "json", quant, orig]]
    lines += [["compare", dangling, orig]]
    lines += [["report", folder, "-o", out + "r"], ["report", quant, "-o", out + "r.html"]]
    lines += [["report", dangling, "-o", out + "r2.html"], ["explain", FORGED]]
    lines += [["check", "--baseline", dangling, quant], ["check", "--target", FORGED, quant]]
    return lines


def test_every_command_escapes_a_hostile_file_name(
    forged: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """stdout and stderr of every command, on a file name that carries a forged `::error`
    line and a terminal escape (a dangling link in a folder, a valid file, a missing one)."""
    seen = 0
    for argv in _commands(forged):
        try:
            main(argv)
        except SystemExit:  # argparse refusing a value: its message is checked all the same
            pass
        out, err = capfd.readouterr()
        _forged_ok(out)
        _forged_ok(err)
        seen += "\\x1b]0;T\\x07" in out + err
    assert seen >= 20  # the names were shown, escaped, not dropped


def test_text_reaches_a_terminal_only_through_textsafe() -> None:
    """Every line printed goes through `textsafe.say*` (or a renderer's escaped chunks): no
    `print(...)` and no `sys.stdout/stderr.write(...)` of anything but a constant elsewhere in
    src/, so no message can skip the escaping."""
    import ast

    src = Path(__file__).resolve().parents[1] / "src" / "quantcheck"
    bad = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "textsafe.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id == "print":
                bad.append(f"{path.name}:{node.lineno} print")
            std = (
                isinstance(f, ast.Attribute)
                and f.attr == "write"
                and isinstance(f.value, ast.Attribute)
                and f.value.attr in ("stdout", "stderr")
            )
            if std and not all(isinstance(a, ast.Constant) for a in node.args):
                bad.append(f"{path.name}:{node.lineno} sys.{f.value.attr}.write")  # type: ignore[union-attr]
    assert not bad, bad


def test_a_python_warning_during_a_command_is_escaped(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library warning naming a hostile layer goes through the same escaping."""
    import warnings

    from quantcheck.cli import main as cli_main

    def warn(_args: object) -> int:
        warnings.warn("layer" + FORGED, UserWarning, stacklevel=1)
        return 0

    monkeypatch.setitem(cli_main.COMMANDS, "rules", warn)
    assert main(["rules"]) == 0
    _out, err = capfd.readouterr()
    _forged_ok(err)
    assert "quantcheck: warning: UserWarning: layerx\\n::error" in err


# -- issue 21 X: SARIF locations are URI references -------------------------------------------

SEEDS = Path(__file__).resolve().parents[1] / "examples" / "broken_seeds.safetensors"


@pytest.mark.parametrize(
    ("name", "uri"),
    [
        ("my model #1 100%.safetensors", "my%20model%20%231%20100%25.safetensors"),
        ("sub dir/a?b.safetensors", "sub%20dir/a%3Fb.safetensors"),
        ("m\udcff.safetensors", "m%FF.safetensors"),  # the raw byte of a non-UTF-8 name
        ("écrit.safetensors", "%C3%A9crit.safetensors"),
    ],
)
def test_sarif_artifact_uri_is_percent_encoded(
    name: str,
    uri: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`artifactLocation.uri` was the raw path (`my model #1 100%.safetensors`): a URI
    reference needs it percent-encoded, byte by byte."""
    from urllib.parse import unquote_to_bytes

    monkeypatch.chdir(tmp_path)
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_bytes(SEEDS.read_bytes())
    main(["check", name, "--output-format", "sarif"])
    doc = json.loads(capsys.readouterr().out)
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
        for loc in r["locations"]
        if "physicalLocation" in loc
    }
    assert uris == {uri}
    assert unquote_to_bytes(uri) == os.fsencode(name)


def test_sarif_uri_of_an_address_keeps_its_escapes() -> None:
    from quantcheck.render.sarif import artifact_uri

    url = "https://host/org/my%20model/a b.safetensors?…"
    assert artifact_uri(url) == "https://host/org/my%20model/a%20b.safetensors?%E2%80%A6"


def test_clean_block_keeps_line_breaks_and_colour_only() -> None:
    from quantcheck.textsafe import clean_block

    assert clean_block("\x1b[1;31mred\x1b[0m\n\x1b]0;T\x07\tx\r") == (
        "\x1b[1;31mred\x1b[0m\n\\x1b]0;T\\x07\\tx\\r"
    )
    assert clean_block("plain\nlines\n") == "plain\nlines\n"
    assert clean_block("é · ≥\n\u202e") == "é · ≥\n\\u202e"
