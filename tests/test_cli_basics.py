"""`quantcheck check` and `quantcheck inspect` basics: exit codes, JSON keys, filters."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from example_files import BROKEN_EXAMPLE, CLEAN_EXAMPLES
from hostile import marker_bytes, raw, tensors
from quantcheck._version import __version__
from quantcheck.cli.main import main

L = "blocks.0.attn.to_q"
DIAG_KEYS = {
    "code",
    "name",
    "severity",
    "message",
    "file",
    "tensor",
    "layer",
    "pointer",
    "targets",
    "fix",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def check_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    rc, out, _ = run(capsys, "check", "--format", "json", *argv)
    return rc, json.loads(out)


def fp8(marker: bytes, dtype: str = "U8") -> list[tuple[Any, ...]]:
    return [
        (f"{L}.weight", "F8_E4M3", [4, 4]),
        (f"{L}.weight_scale", "F32", []),
        (f"{L}.comfy_quant", dtype, [len(marker)], marker),
    ]


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """One error (QC203, all-zero marker) and one warning (QC205, I8 marker) in one file."""
    specs = fp8(marker_bytes({"format": "float8_e4m3fn"}), "I8")
    # b's weight is BF16 so that no layer rule reacts to b having no readable marker
    specs += [("b.weight", "BF16", [4, 4]), ("b.comfy_quant", "U8", [16], bytes(16))]
    path = tmp_path / "mixed.safetensors"
    path.write_bytes(tensors(specs))
    return path


@pytest.fixture
def warning_only(tmp_path: Path) -> Path:
    path = tmp_path / "warn.safetensors"
    path.write_bytes(tensors(fp8(marker_bytes({"format": "float8_e4m3fn"}), "I8")))
    return path


@pytest.fixture
def info_only(tmp_path: Path) -> Path:
    """A valid file whose header is not padded to 8 bytes (QC122, info)."""
    path = tmp_path / "info.safetensors"
    path.write_bytes(tensors(fp8(marker_bytes({"format": "float8_e4m3fn"})), pad=False))
    return path


# --------------------------------------------------------------------------- exit codes


#: Clean examples a runtime cannot load by design: awq_w4a16 is ComfyUI-only (QC601 for sglang);
#: mxfp8 stops sglang 0.5.23 at weight load (QC615; only 0.5.22 loads it).
COMFYUI_ONLY = {"awq_w4a16.safetensors", "mxfp8.safetensors"}


@pytest.mark.parametrize("name", CLEAN_EXAMPLES)
def test_clean_examples_exit_0(
    capsys: pytest.CaptureFixture[str], examples_dir: Path, name: str
) -> None:
    # sglang: the examples are clean through its marker path; its loaders that never read
    # markers (--transformer-weights-path, --comfyui-mode) name why they refuse them. A DiT of
    # no detected family is read with --transformer-weights-path: it infers NVFP4 from the
    # tensors (exit 0, --comfyui-mode's findings are notes) and refuses the other marker-only
    # files (QC631, exit 1)
    target = ("--target", "comfyui") if name in COMFYUI_ONLY else ()
    rc, doc = check_json(capsys, *target, str(examples_dir / name))
    assert [d for d in doc["diagnostics"] if "loaders" not in d] == []
    errors = {d["code"] for d in doc["diagnostics"] if d["severity"] == "error"}
    assert errors <= {"QC631"} and rc == (1 if errors else 0)
    assert all(d["decides"] is False for d in doc["diagnostics"] if d["code"] != "QC631")
    if not target:
        loaders = doc["checkpoints"][0]["targets"]["sglang"]["loaders"]
        assert loaders["text-encoder"]["status"] == "ok"
        assert doc["targets"]["comfyui"]["status"] == "ok"
        return
    assert doc["summary"]["errors"] == 0 and doc["summary"]["layers"] == 14
    assert all(s["status"] == "ok" for s in doc["targets"].values())


def test_comfyui_only_example_fails_sglang(
    capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    rc, doc = check_json(capsys, str(examples_dir / "awq_w4a16.safetensors"))
    assert rc == 1 and {d["code"] for d in doc["diagnostics"]} == {
        "QC601",  # the marker path's resolver has no AWQ
        "QC631",  # --transformer-weights-path: no header declaration
        "QC636",  # --comfyui-mode: packed weights built unquantized
        "QC637",  # --comfyui-mode MiniMax-H3 spec: INT8 ConvRot only
    }
    assert doc["targets"]["sglang"]["status"] == "fails"
    assert doc["targets"]["comfyui"]["status"] == "ok"


def test_broken_example_exits_1(capsys: pytest.CaptureFixture[str], examples_dir: Path) -> None:
    rc, doc = check_json(capsys, str(examples_dir / BROKEN_EXAMPLE))
    assert rc == 1 and doc["summary"]["errors"] >= 2
    layers = {d["layer"] for d in doc["diagnostics"]}
    assert "model.diffusion_model.transformer_blocks.1.attn.to_q" in layers  # F16 int8 scale
    assert "model.diffusion_model.transformer_blocks.0.attn.to_k" in layers  # BF16 channel


def test_broken_file_exits_1(capsys: pytest.CaptureFixture[str], mixed: Path) -> None:
    rc, out, _ = run(capsys, "check", "--no-color", str(mixed))
    assert rc == 1
    assert "QC203" in out and "QC205" in out


def test_truncated_example_exits_1(
    capsys: pytest.CaptureFixture[str], examples_dir: Path, tmp_path: Path
) -> None:
    data = (examples_dir / "nvfp4.safetensors").read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: len(data) // 2])
    rc, doc = check_json(capsys, str(cut))
    assert rc == 1
    # one finding, no follow-ons about the markers past the end (issue 22 item 6)
    [d] = doc["diagnostics"]
    size = len(data)
    assert d["code"] == "QC117"
    assert d["message"].startswith(
        f"truncated: expected {size:,} bytes, found {size // 2:,} — re-download the file"
    )
    assert doc["targets"]["sglang"]["status"] == "fails"


def test_missing_path_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out, err = run(capsys, "check", str(tmp_path / "nope.safetensors"))
    assert rc == 2 and out == ""
    assert err.startswith("quantcheck: error:") and "nope.safetensors" in err


def test_folder_without_safetensors_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "model.bin").write_bytes(b"\0" * 16)
    for cmd in ("check", "inspect"):
        rc, _, err = run(capsys, cmd, str(tmp_path))
        assert rc == 2 and "folder holds no .safetensors files" in err


def test_no_command_and_bad_usage_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(
            capsys,
        )[0]
        == 2
    )
    with pytest.raises(SystemExit) as exc:
        main(["check"])  # PATH is required
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["check", "--fail-on", "never", "x"])
    assert exc.value.code == 2
    capsys.readouterr()


# --------------------------------------------------------------------------- JSON report


def test_check_json_keys(capsys: pytest.CaptureFixture[str], mixed: Path) -> None:
    rc, doc = check_json(capsys, str(mixed))
    assert rc == 1
    assert {"schema_version", "checkpoints", "inputs", "targets", "diagnostics", "summary"} <= set(
        doc
    )
    assert doc["schema_version"] == 3
    assert [c["name"] for c in doc["checkpoints"]] == [str(mixed)]
    assert [Path(i["path"]).name for i in doc["inputs"]] == ["mixed.safetensors"]
    assert doc["inputs"][0]["size"] == mixed.stat().st_size
    assert set(doc["targets"]) == {"sglang", "comfyui"}
    # besides QC203 / QC205, sglang's loaders that never read markers say why they refuse it
    # (--transformer-weights-path: QC631; --comfyui-mode's MiniMax-H3 spec: QC637; its other
    # specs load the F8 weights dequantized: QC635); --comfyui-mode does not read this file
    # (sglang reads a DiT of no detected family with --transformer-weights-path): its two
    # findings are notes
    by_code = {d["code"]: d for d in doc["diagnostics"]}
    assert set(by_code) == {"QC203", "QC205", "QC631", "QC635", "QC637"}
    assert doc["summary"]["errors"] == 2 and doc["summary"]["warnings"] == 1
    assert doc["summary"]["infos"] == 2
    assert by_code["QC637"]["decides"] is False and by_code["QC635"]["read_by"] == ["comfyui-mode"]
    for d in doc["diagnostics"]:
        assert set(d) >= DIAG_KEYS
        assert Path(d["file"]).name == "mixed.safetensors"
    zero = by_code["QC203"]
    assert (zero["name"], zero["severity"], zero["layer"], zero["tensor"]) == (
        "marker-all-zero",
        "error",
        "b",
        "b.comfy_quant",
    )
    assert "all 16 marker bytes are zero" in zero["message"]
    assert [t for t in zero["targets"] if t in ("sglang", "comfyui")] == ["sglang", "comfyui"]
    i8 = by_code["QC205"]
    assert (i8["severity"], i8["pointer"]) == ("warning", f"/{L}.comfy_quant/dtype")
    assert not {"sglang", "comfyui"} & set(i8["targets"])


def test_check_target_filter(capsys: pytest.CaptureFixture[str], mixed: Path) -> None:
    rc, doc = check_json(capsys, "--target", "sglang", str(mixed))
    assert set(doc["targets"]) == {"sglang"} and rc == 1


# --------------------------------------------------------------------------- select / ignore


@pytest.mark.parametrize(
    ("args", "expect_codes", "expect_rc"),
    [
        ((), {"QC203", "QC205"}, 1),
        (("--select", "QC205"), {"QC205"}, 0),
        (("--select", "QC2"), {"QC203", "QC205"}, 1),
        (("--select", "QC20*"), {"QC203", "QC205"}, 1),
        (("--select", "QC1"), set(), 0),
        (("--select", "marker-all-zero"), {"QC203"}, 1),
        (("--select", "QC101,QC203"), {"QC203"}, 1),
        (("--select", "QC101", "--select", "QC205"), {"QC205"}, 0),
        (("--ignore", "QC203"), {"QC205"}, 0),
        (("--ignore", "QC203,QC205"), set(), 0),
        (("--ignore", "marker-dtype-not-u8"), {"QC203"}, 1),
        (("--select", "QC2", "--ignore", "QC203"), {"QC205"}, 0),
        (("--ignore", "QC203", "--fail-on", "warning"), {"QC205"}, 1),
    ],
)
def test_select_ignore(
    capsys: pytest.CaptureFixture[str],
    mixed: Path,
    args: tuple[str, ...],
    expect_codes: set[str],
    expect_rc: int,
) -> None:
    # comfyui: the file's own findings (sglang's loaders add theirs: test_check_json_keys)
    rc, doc = check_json(capsys, "--target", "comfyui", *args, str(mixed))
    assert {d["code"] for d in doc["diagnostics"]} == expect_codes
    assert rc == expect_rc


@pytest.mark.parametrize(
    ("option", "value", "nearest"),
    [
        ("--select", "QC3O5", "QC305"),
        ("--select", "companion_dtype", "companion-dtype"),
        ("--ignore", "QC9999", None),
        ("--ignore", "QC203,QC2O5", "QC205"),
        ("--select", "marker_all_zero", "marker-all-zero"),
    ],
)
def test_a_selector_matching_no_rule_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], mixed: Path, option: str, value: str, nearest: str | None
) -> None:
    """A typo in --select/--ignore used to select nothing: a broken file said ok, exit 0."""
    rc, out, err = run(capsys, "check", option, value, str(mixed))
    assert rc == 2 and not out
    (line,) = err.strip().splitlines()
    assert "matches no rule code or name" in line and repr(value.split(",")[-1]) in line
    if nearest is not None:
        assert line.endswith(f"did you mean {nearest}?")


def test_selector_check_in_the_library(mixed: Path) -> None:
    from quantcheck.checking import check_paths, check_selectors

    check_selectors(["QC3", "QC30*", "qc301", " companion-dtype ", ""])
    with pytest.raises(ValueError, match="did you mean QC305"):
        check_paths([str(mixed)], select=["QC3O5"])


def test_fail_on_warning(capsys: pytest.CaptureFixture[str], warning_only: Path) -> None:
    # comfyui: sglang's --transformer-weights-path refuses any marker-only file (QC631, error)
    on = ("check", "--target", "comfyui")
    assert run(capsys, *on, str(warning_only))[0] == 0
    assert run(capsys, *on, "--fail-on", "warning", str(warning_only))[0] == 1
    assert run(capsys, *on, "--fail-on", "error", str(warning_only))[0] == 0


def test_info_does_not_fail_unless_asked(
    capsys: pytest.CaptureFixture[str], info_only: Path
) -> None:
    # comfyui: sglang's loaders that never read markers refuse the file (QC631, QC637)
    rc, doc = check_json(capsys, "--target", "comfyui", str(info_only))
    assert [d["code"] for d in doc["diagnostics"]] == ["QC122"] and rc == 0
    assert doc["summary"]["infos"] == 1
    on = ("check", "--target", "comfyui")
    assert run(capsys, *on, "--fail-on", "warning", str(info_only))[0] == 0
    assert run(capsys, *on, "--fail-on", "info", str(info_only))[0] == 1


def test_hostile_header_through_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "h.safetensors"
    path.write_bytes(raw(b"{}", length=2**63))
    rc, doc = check_json(capsys, str(path))
    assert rc == 1 and [d["code"] for d in doc["diagnostics"]] == ["QC102"]
    assert "9,223,372,036,854,775,808" in doc["diagnostics"][0]["message"]


# --------------------------------------------------------------------------- inspect

# format, bits per weight of weight + scales (bias and marker not counted), for 128x128 layers
EXPECTED = {
    "fp8_e4m3fn.safetensors": ("float8_e4m3fn", 8.002),  # (16384 + 4) B
    "int8_convrot.safetensors": ("int8_tensorwise", 8.25),  # 16384 + F32 [128,1]
    "nvfp4.safetensors": ("nvfp4", 4.502),  # 8192 + F8 [128,8] + F32 []
    "mxfp8.safetensors": ("mxfp8", 8.25),  # 16384 + U8 [128,4]
    "w4a8_codebook.safetensors": ("asym_w4a8_int8", 4.781),  # 8192 + 1024 + 512 + 64
    "w4a4_convrot.safetensors": ("convrot_w4a4", 4.25),  # 8192 + F32 [128]
    "awq_w4a16.safetensors": ("awq_w4a16", 4.5),  # 8192 + 2 x BF16 [2,128]
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_inspect_json_on_examples(
    capsys: pytest.CaptureFixture[str], examples_dir: Path, name: str
) -> None:
    fmt, bpw = EXPECTED[name]
    rc, out, _ = run(capsys, "inspect", "--format", "json", str(examples_dir / name))
    assert rc == 0
    doc = json.loads(out)
    assert doc["schema_version"] == 1 and doc["kind"] == "inspect"
    [f] = doc["files"]
    assert Path(f["path"]).name == name and f["metadata"]["format"] == "pt"
    assert f["size"] == (examples_dir / name).stat().st_size
    quant = [r for r in doc["layers"] if r["format"] is not None]
    plain = [r for r in doc["layers"] if r["format"] is None]
    assert len(quant) == 12 and len(plain) == 2  # 6 linears + 1 norm, in 2 blocks
    for r in quant:
        assert r["format"] == fmt and r["marker"]["format"] == fmt
        assert r["logical_shape"] == [128, 128] and r["params"] == 128 * 128
        assert r["bits_per_weight"] == bpw
        assert r["bytes"] == round(bpw * 128 * 128 / 8) or abs(r["bytes"] * 8 / 16384 - bpw) < 0.001
        assert set(r["tensors"]) >= {"weight", "bias", "comfy_quant"}
    assert doc["totals"][fmt]["layers"] == 12 and doc["totals"][fmt]["bits_per_weight"] == bpw
    assert doc["totals"]["unquantized BF16"] == {
        "layers": 2,
        "bytes": 512,
        "params": 256,
        "bits_per_weight": 16.0,
    }
    assert doc["other_tensors"] == [] and doc["diagnostics"] == 0


def test_inspect_int8_scale_is_825_bits(
    capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    rc, out, _ = run(
        capsys, "inspect", "--format", "json", str(examples_dir / "int8_convrot.safetensors")
    )
    assert rc == 0
    layer = json.loads(out)["layers"][1]
    assert layer["weight"] == {"dtype": "I8", "shape": [128, 128]}
    assert layer["tensors"]["weight_scale"]["dtype"] == "F32"
    assert layer["tensors"]["weight_scale"]["shape"] == [128, 1]
    assert layer["bytes"] == 128 * 128 + 128 * 4 and layer["bits_per_weight"] == 8.25
    assert layer["logical_shape_exact"] is True


def test_inspect_packed_logical_shapes(
    capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    rc, out, _ = run(
        capsys, "inspect", "--format", "json", str(examples_dir / "w4a8_codebook.safetensors")
    )
    assert rc == 0
    layer = json.loads(out)["layers"][1]
    assert layer["weight"] == {"dtype": "I8", "shape": [128, 64]}
    assert layer["logical_shape"] == [128, 128] and layer["code_bits"] == 4


def test_inspect_text_and_layer_filter(
    capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    path = str(examples_dir / "int8_convrot.safetensors")
    rc, out, _ = run(capsys, "inspect", path)
    assert rc == 0 and "int8_tensorwise" in out and "8.25" in out and "I8[128,128]" in out
    rc, out, _ = run(capsys, "inspect", "--format", "json", "--layers", "*.1.attn.*", path)
    prefixes = [r["prefix"] for r in json.loads(out)["layers"]]
    assert len(prefixes) == 4 and all(".1.attn." in p for p in prefixes)


def test_inspect_broken_example_exits_0(
    capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    rc, out, _ = run(capsys, "inspect", "--format", "json", str(examples_dir / BROKEN_EXAMPLE))
    assert rc == 0
    pre = "model.diffusion_model.transformer_blocks"
    layers = {r["prefix"]: r for r in json.loads(out)["layers"]}
    assert layers[f"{pre}.0.attn.to_q"]["format"] == "asym_w4a8_int8"
    assert layers[f"{pre}.1.attn.to_q"]["tensors"]["weight_scale"]["dtype"] == "F16"
    k = layers[f"{pre}.1.attn.to_k"]
    assert k["format"] == "int8_tensorwise" and k["weight"]["dtype"] == "BF16"


# --------------------------------------------------------------------------- test helpers


def test_require_program_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from system_programs import require_program

    assert Path(require_program("sh")).name == "sh"
    missing = "quantcheck-no-such-program-xyz"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{missing}.*not installed"):
        require_program(missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_program(missing)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        require_program(missing)


def test_require_program_fixture(require_program: Any) -> None:
    assert Path(require_program("sh")).name == "sh"


# --------------------------------------------------------------------------- odd text


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "quantcheck", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_lone_surrogate_in_header_is_a_diagnostic_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "s.safetensors"
    path.write_bytes(
        raw('{"\\ud800.weight":{"dtype":"FP8","shape":[1],"data_offsets":[0,1]}}', b"\0", pad=True)
    )
    proc = _cli("check", "--format", "json", str(path))
    assert proc.returncode == 1, proc.stderr
    assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["QC105"]


def test_lone_surrogate_in_marker_does_not_crash_inspect(tmp_path: Path) -> None:
    m = b'{"format": "nvfp4\\ud800"}'
    path = tmp_path / "m.safetensors"
    path.write_bytes(tensors([("a.weight", "U8", [4, 2]), ("a.comfy_quant", "U8", [len(m)], m)]))
    for argv in (("inspect", "--format", "json"), ("inspect",)):
        proc = _cli(*argv, str(path))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_docs_rules_md_is_generated_from_the_registry(capsys: pytest.CaptureFixture) -> None:
    from quantcheck.cli.main import main

    assert main(["rules", "--format", "markdown"]) == 0
    generated = capsys.readouterr().out
    on_disk = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text()
    assert generated == on_disk, "docs/rules.md is stale: quantcheck rules --format markdown"


# --------------------------------------------------------------------------- one CLI contract

REPO = Path(__file__).resolve().parents[1]


def _json_outputs(examples_dir: Path) -> dict[str, list[str]]:
    """Every command line that prints JSON (SARIF follows its own standard and is left out)."""
    ex = str(examples_dir / "nvfp4.safetensors")
    return {
        "check": ["check", "--output-format", "json", str(examples_dir / BROKEN_EXAMPLE)],
        "inspect": ["inspect", "--output-format", "json", ex],
        "rules": ["rules", "--output-format", "json"],
        "explain-code": ["explain", "--output-format", "json", "QC305"],
        "explain-message": [
            "explain",
            "--output-format",
            "json",
            "Comfy INT8 layer 'x' needs I8 weights and F32 scales, got I8 and F16",
        ],
        "explain-unknown": ["explain", "--output-format", "json", "the GPU caught fire"],
        "compare": ["compare", "--output-format", "json", ex, ex],
        "fix": ["fix", "--output-format", "json", "--dry-run", "--profile", "portable", ex],
        "lora": ["lora", "--output-format", "json", "--headers-only", ex, ex],
    }


JSON_OUTPUTS = list(_json_outputs(Path()))


@pytest.mark.parametrize("name", JSON_OUTPUTS)
def test_every_json_output_has_schema_version_and_tool(
    capsys: pytest.CaptureFixture[str], examples_dir: Path, name: str
) -> None:
    if name == "compare":
        pytest.importorskip("numpy")
    argv = _json_outputs(examples_dir)[name]
    rc, out, _ = run(capsys, *argv)
    assert rc in (0, 1, 2)
    doc = json.loads(out)
    assert isinstance(doc, dict)
    assert list(doc)[:4] == ["schema_version", "tool", "tool_version", "kind"]
    # check: 2 lists checkpoints, 3 since issue 24; lora: 2 since its lora_path became objects
    version = {"check": 3, "lora": 2}.get(argv[0], 1)
    assert (doc["schema_version"], doc["tool"], doc["kind"]) == (version, "quantcheck", argv[0])
    assert doc["tool_version"] == __version__  # the one version, as --version shows it


def test_json_outputs_cover_every_report_command() -> None:
    """A new command with --output-format json must be added to JSON_OUTPUTS above."""
    with_json = set()
    for command, sub in _parsers().items():
        for action in sub._actions:
            if "--output-format" in action.option_strings and "json" in (action.choices or ()):
                with_json.add(command)
    assert with_json == {n.split("-")[0] for n in JSON_OUTPUTS}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from quantcheck.cli.commands import EXTRA_COMMANDS
    from quantcheck.cli.main import build_parser

    out = {}
    for command in ["check", "inspect", "rules", "explain", *EXTRA_COMMANDS]:
        sub = build_parser(command)._subparsers
        assert sub is not None
        out[command] = sub._group_actions[0].choices[command]  # type: ignore[index]
    return out


def test_dest_names_are_consistent() -> None:
    """`output_format` is always the report format, `output` always a path (-o/--output)."""
    for command, parser in _parsers().items():
        for action in parser._actions:
            if action.dest == "output":
                assert action.option_strings == ["-o", "--output"], command
            if "--output-format" in action.option_strings or (
                "--format" in action.option_strings and command != "quantize"
            ):
                assert action.dest == "output_format", (command, action.option_strings)


@pytest.mark.parametrize("command", ["check", "inspect", "rules", "explain", "compare"])
def test_format_is_a_hidden_alias_of_output_format(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _parsers()[command]
    assert "--output-format" in parser.format_help()
    assert "--format" not in parser.format_help().replace("--output-format", "")
    rest = {
        "check": ["x"],
        "inspect": ["x"],
        "rules": [],
        "explain": ["QC305"],
        "compare": ["a", "b"],
    }[command]
    new = parser.parse_args(["--output-format", "json", *rest])
    old = parser.parse_args(["--format", "json", *rest])
    assert new.output_format == old.output_format == "json"
    assert parser.parse_args(rest).output_format == "text"


def test_format_alias_prints_the_same_report(
    capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    path = str(examples_dir / BROKEN_EXAMPLE)
    for command in ("check", "inspect"):
        new = run(capsys, command, "--output-format", "json", path)
        old = run(capsys, command, "--format", "json", path)
        assert new == old and old[2] == ""


def test_quantize_to_and_deprecated_format(
    capsys: pytest.CaptureFixture[str], examples_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("numpy")
    src, out = str(examples_dir / "nvfp4.safetensors"), str(tmp_path / "q.safetensors")
    # comfyui: sglang 0.5.23 cannot load MXFP8 (QC615), so the default targets refuse it
    cui = ("--target", "comfyui")
    rc, text, err = run(capsys, "quantize", src, "-o", out, "--to", "mxfp8", *cui, "--dry-run")
    assert rc == 0 and "-> mxfp8" in text and err == ""
    rc, old_text, err = run(
        capsys, "quantize", src, "-o", out, "--format", "mxfp8", *cui, "--dry-run"
    )
    assert rc == 0 and old_text == text
    assert err == (
        "quantcheck: warning: quantize --format is deprecated and will be removed; use --to mxfp8\n"
    )
    for argv in ([], ["--to", "mxfp8", "--format", "nvfp4"]):
        with pytest.raises(SystemExit) as exc:
            main(["quantize", src, "-o", out, "--dry-run", *argv])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--to" in err and "Traceback" not in err


def _many_layers(path: Path, n: int = 12000) -> Path:
    path.write_bytes(tensors([(f"blocks.{i}.linear.weight", "BF16", [2, 2]) for i in range(n)]))
    return path


def test_stdout_closed_early_exits_quietly(tmp_path: Path) -> None:
    """`quantcheck inspect BIG | head -1`: a real pipe whose reader leaves after one line."""
    big = _many_layers(tmp_path / "big.safetensors")
    env = {**os.environ, "PYTHONPATH": str(Path(__import__("quantcheck").__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "quantcheck", "inspect", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # output is far larger than a pipe's buffer: the next write fails
    err = proc.stderr.read()
    rc = proc.wait(timeout=60)
    assert first.strip()
    assert err == b"", err.decode()
    assert rc == 141


def test_stdout_closed_early_through_the_shell(tmp_path: Path) -> None:
    """The same through `sh -c '... | head -1'`: nothing on stderr, only head's one line."""
    big = _many_layers(tmp_path / "big.safetensors")
    env = {**os.environ, "PYTHONPATH": str(Path(__import__("quantcheck").__file__).parents[1])}
    cmd = f'"{sys.executable}" -m quantcheck inspect "{big}" | head -1'
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    assert len(proc.stdout.splitlines()) == 1


# --------------------------------------------------------------------------- one version


def test_one_version_string(capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib

    from quantcheck import __version__
    from quantcheck._version import __version__ as leaf
    from quantcheck.io.http import USER_AGENT

    assert __version__ is leaf
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "quantcheck._version.__version__"
    }
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"quantcheck {leaf}\n"
    assert USER_AGENT.startswith(f"quantcheck/{leaf} ")


def test_io_http_does_not_import_the_package_root() -> None:
    import ast

    import quantcheck.io.http as http

    tree = ast.parse(Path(http.__file__).read_text())
    froms = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "quantcheck" not in froms and "quantcheck._version" in froms
