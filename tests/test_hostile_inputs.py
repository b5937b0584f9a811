"""Hostile inputs (files, paths, strings): every command exits 0/1/2 with findings or one clear
line, never a traceback or a hang. Each test reproduces one defect of a class from issue 12."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hostile import marker_bytes, tensors, write
from quantcheck.cli.main import main

L = "blocks.0.attn.to_q"
ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def codes(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, list[dict[str, Any]]]:
    rc, out, _ = run(capsys, "check", "--format", "json", *paths)
    return rc, json.loads(out)["diagnostics"]


def fp8_file(path: Path, marker: Any = None, metadata: dict[str, str] | None = None) -> Path:
    m = marker_bytes(marker if marker is not None else {"format": "float8_e4m3fn"})
    return write(
        path,
        tensors(
            [
                (f"{L}.weight", "F8_E4M3", [4, 4]),
                (f"{L}.weight_scale", "F32", [], b"\x00\x00\x80\x3f"),
                (f"{L}.comfy_quant", "U8", [len(m)], m),
            ],
            metadata,
        ),
    )


# -- 5: deeply nested JSON values -------------------------------------------------------------


def _nested(depth: int) -> Any:
    v: Any = []
    for _ in range(depth - 1):
        v = [v]
    return v


@pytest.mark.parametrize("depth", [65, 450, 900])
@pytest.mark.parametrize("command", ["check", "inspect"])
def test_deep_value_in_header_and_tensor_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int, command: str
) -> None:
    """The same deep value in `_quantization_metadata` and the tensor marker: compared, printed
    and hashed without RecursionError; refused with a finding (markers are flat)."""
    marker = {"format": "float8_e4m3fn", "x": _nested(depth)}
    meta = {"_quantization_metadata": json.dumps({"layers": {L: marker}})}
    f = fp8_file(tmp_path / "deep.safetensors", marker, meta)
    rc, out, err = run(capsys, command, str(f))
    assert "Traceback" not in err and "RecursionError" not in out + err
    assert rc in (0, 1)
    if command == "check":
        rc, diags = codes(capsys, str(f))
        msgs = [d["message"] for d in diags if d["code"] in ("QC201", "QC208")]
        assert any("nested more than 64 levels" in m for m in msgs), msgs


def test_shallow_nested_marker_value_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Below the bound nothing changes: equal header and tensor markers agree silently."""
    marker = {"format": "float8_e4m3fn", "x": _nested(60)}
    meta = {"_quantization_metadata": json.dumps({"layers": {L: marker}})}
    f = fp8_file(tmp_path / "ok.safetensors", marker, meta)
    _rc, diags = codes(capsys, str(f))
    assert not [d for d in diags if d["code"] in ("QC201", "QC208", "QC210", "QC211")]


def test_strict_equal_is_iterative() -> None:
    from quantcheck.model.markers import _strict_equal

    assert _strict_equal(_nested(5000), _nested(5000))
    assert not _strict_equal(_nested(5000), _nested(4999))
    assert not _strict_equal({"a": [1, True]}, {"a": [1, 1]})
    assert not _strict_equal(16, 16.0)


def test_deep_index_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fp8_file(tmp_path / "a.safetensors")
    doc = {"metadata": {"x": _nested(500)}, "weight_map": {f"{L}.weight": "a.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(doc))
    _rc, out, err = run(capsys, "check", "--format", "json", str(tmp_path))
    assert "Traceback" not in err
    assert any(d["code"] == "QC503" for d in json.loads(out)["diagnostics"])


# -- 7: index names that are not file names ---------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a\u0000.safetensors", "\ud800.safetensors", "", "x" * 5000 + ".safetensors"]
)
def test_index_names_impossible_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    fp8_file(tmp_path / "a.safetensors")
    doc = {"weight_map": {f"{L}.weight": "a.safetensors", "other.weight": name}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(doc))
    rc, out, err = run(capsys, "check", "--format", "json", str(tmp_path))
    assert rc == 1, err
    assert any(d["code"] == "QC504" for d in json.loads(out)["diagnostics"])


# -- 9: FIFOs, sockets and other non-regular files --------------------------------------------

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


@needs_fifo
@pytest.mark.parametrize("command", ["check", "inspect"])
@pytest.mark.parametrize("how", ["direct", "folder"])
def test_fifo_input_is_refused_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, how: str
) -> None:
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    rc, _out, err = run(capsys, command, str(fifo if how == "direct" else tmp_path))
    assert rc == 2
    assert "FIFO" in err and "not a regular file" in err and "Traceback" not in err


@needs_fifo
def test_fifo_index_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "model.safetensors.index.json")
    rc, _out, err = run(capsys, "check", str(tmp_path / "model.safetensors.index.json"))
    assert rc == 2 and "FIFO" in err


@needs_fifo
def test_index_naming_a_fifo_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fp8_file(tmp_path / "a.safetensors")
    os.mkfifo(tmp_path / "b.safetensors")
    doc = {"weight_map": {f"{L}.weight": "a.safetensors", "other.weight": "b.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(doc))
    _rc, out, _err = run(capsys, "check", "--format", "json", str(tmp_path))
    msgs = [d["message"] for d in json.loads(out)["diagnostics"] if d["code"] == "QC504"]
    assert msgs and "FIFO" in msgs[0] and "does not exist" not in msgs[0]


def test_character_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    rc, _out, err = run(capsys, "check", "/dev/zero")
    assert rc == 2 and "character device" in err


@needs_fifo
@pytest.mark.parametrize(
    "case",
    ["baseline-fifo", "baseline-device", "baseline-folder", "compare-fifo", "compare-device"],
)
def test_no_file_read_by_path_blocks_or_reads_a_device(case: str, tmp_path: Path) -> None:
    """Issue 21 W: `--baseline FIFO` blocked for ever (a plain open()). Every file read by path
    (baselines, --compare originals, indexes) is opened the way checkpoints are: O_NONBLOCK,
    regular files only. Run in a child so that a hang fails by its timeout, not the suite."""
    import subprocess
    import sys

    what, kind = case.split("-")
    node = tmp_path / "node"
    if kind == "fifo":
        os.mkfifo(node)
    elif kind == "folder":
        node.mkdir()
    else:
        node = Path("/dev/zero")
        if not node.exists():
            pytest.skip("no /dev/zero")
    seeds = str(ROOT / "examples" / "broken_seeds.safetensors")
    argv = (
        ["check", seeds, "--baseline", str(node)]
        if what == "baseline"
        else ["report", seeds, "--compare", str(node), "-o", str(tmp_path / "r.html")]
    )
    proc = subprocess.run(
        [sys.executable, "-m", "quantcheck", *argv],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("quantcheck: error: "), proc.stderr
    expected = {"fifo": "FIFO", "device": "character device", "folder": "folder"}[kind]
    assert expected in lines[0]
    assert not (tmp_path / "r.html").exists()


#: every open by path that does not go through `quantcheck.io.source.open_regular`, and why
#: (file, the call as `ast.unparse` spells it)
OPEN_SITES = {
    ("io/source.py", "os.open(path, _OPEN_FLAGS)"): "open_regular itself",
    ("io/outpath.py", "os.open(folder or '.', os.O_RDONLY)"): "fsync_dir flushes a folder",
    ("io/atomic.py", "os.open(path, flags, 438)"): "writes the temp file it made",
    (
        "io/writer.py",
        "os.open(path, os.O_WRONLY | os.O_TRUNC | getattr(os, 'O_BINARY', 0))",
    ): "writes a temp file or staged shard of its own",
    ("io/writer.py", "os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 438)"): "creates one",
    ("io/build.py", "open(path, 'wb')"): "write_safetensors: a builder for tests and examples",
    ("cli/main.py", "os.open(os.devnull, os.O_WRONLY)"): "stdout to devnull after a closed pipe",
}


def test_every_file_read_by_path_goes_through_open_regular() -> None:
    """Issue 21 W: one helper opens every file read by path; the scan lists any other open."""
    import ast

    src = ROOT / "src" / "quantcheck"
    seen = set()
    stray = []
    for path in sorted(src.rglob("*.py")):
        rel = str(path.relative_to(src))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            owner = getattr(getattr(f, "value", None), "id", "")
            if (
                (name == "open" and owner in ("", "os", "io"))
                or (name in ("read_text", "read_bytes") and not node.args)
                or name in ("fdopen", "FileIO")
            ):
                site = (rel, ast.unparse(node))
                seen.add(site)
                if site not in OPEN_SITES:
                    stray.append(f"{rel}:{node.lineno}: {site[1][:80]}")
    assert stray == []
    assert seen == set(OPEN_SITES)  # no stale allowance


# -- 15: one file under two spellings ---------------------------------------------------------


def test_same_file_two_spellings_is_read_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = fp8_file(tmp_path / "a.safetensors")
    (tmp_path / "link.safetensors").symlink_to(f)
    monkeypatch.chdir(tmp_path)
    for paths in (
        ["a.safetensors", "./a.safetensors"],
        ["a.safetensors", "link.safetensors"],
        ["a.safetensors", str(f)],
    ):
        _rc, diags = codes(capsys, *paths)
        assert not [d for d in diags if d["code"] == "QC501"], paths
        _rc, out, _ = run(capsys, "check", "--format", "json", *paths)
        assert len(json.loads(out)["inputs"]) == 1


# -- 8: quantize options out of range ---------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-16", "3", "12", "24", "x", "99999999999"])
def test_quantize_group_size_out_of_range_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    src = write(tmp_path / "in.safetensors", tensors([("l.weight", "F32", [16, 64])]))
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "quantize",
                str(src),
                "-o",
                str(tmp_path / "out.safetensors"),
                "--format",
                "asym_w4a8_int8",
                f"--group-size={value}",
            ]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--group-size" in err and "Traceback" not in err
    assert not (tmp_path / "out.safetensors").exists()


@pytest.mark.parametrize("value", ["4", "8", "16", "32"])
def test_quantize_group_size_in_range_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    src = write(tmp_path / "in.safetensors", tensors([("l.weight", "F32", [16, 256])]))
    rc, _, err = run(
        capsys,
        "quantize",
        str(src),
        "-o",
        str(tmp_path / "out.safetensors"),
        "--format",
        "asym_w4a8_int8",
        "--group-size",
        value,
        # a DiT of no detected family: sglang's --transformer-weights-path reads no W4A8
        "--target",
        "comfyui",
    )
    assert rc == 0, err


# -- 6: marker values and tensors the rules report never reach the numeric code --------------

N, K = 32, 64
FUZZ_VALUES: list[Any] = [None, [], "16", -16, 0, 2**70, 16.5, {"a": 1}, True, 3]
#: marker keys each format's numeric code reads
FUZZ_KEYS = {
    "float8_e4m3fn": ["orig_shape"],
    "nvfp4": ["orig_shape"],
    "mxfp8": ["orig_shape"],
    "int8_tensorwise": ["convrot", "convrot_groupsize"],
    "asym_w4a8_int8": ["group_size", "convrot_groupsize"],
    "convrot_w4a4": ["convrot_groupsize"],
    "awq_w4a16": ["group_size"],
}
STRUCTURAL = [
    "weight_as_fp8",
    "weight_fp8_nk",
    "weight_i8_nk",
    "weight_1d",
    "weight_3d",
    "scale_f16",
    "scale_shape",
    "scale_gone",
]


def _valid_layer(fmt: str) -> tuple[dict[str, tuple[str, Any]], dict[str, Any]]:
    """(suffix -> (safetensors dtype, array), marker) of a small valid layer of `fmt`."""
    import numpy as np

    from quantcheck.numeric import quantize

    w = np.random.default_rng(0).standard_normal((N, K)).astype(np.float32)
    if fmt == "awq_w4a16":
        g = 32
        return (
            {
                "weight": ("I8", np.full((N, K // 2), 0x21, np.int8)),
                "weight_scale": ("F16", np.full((K // g, N), 0.01, np.float16)),
                "weight_zeros": ("F16", np.full((K // g, N), 8.0, np.float16)),
            },
            {"format": fmt, "group_size": g},
        )
    opts: dict[str, Any] = {}
    if fmt == "int8_tensorwise":
        opts = {"per_row": True, "convrot": True, "convrot_groupsize": 16}
    elif fmt == "asym_w4a8_int8":
        opts = {"group_size": 16, "convrot_groupsize": 16}
    elif fmt == "convrot_w4a4":
        opts = {"convrot_groupsize": 16}
    q = quantize(w, fmt, **opts)
    marker = dict(q.marker)
    if fmt == "asym_w4a8_int8":
        marker["convrot"] = True
    return dict(q.tensors.items()), marker


def _fuzz_cases() -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for fmt, keys in FUZZ_KEYS.items():
        out += [(fmt, f"marker:{k}", v) for k in keys for v in FUZZ_VALUES]
        out += [(fmt, s, None) for s in STRUCTURAL]
    return out


def _write_case(folder: Path, fmt: str, what: str, value: Any) -> tuple[Path, Path]:
    """The quantized file for one case and the float original beside it."""
    import numpy as np

    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

    tensors_, marker = _valid_layer(fmt)
    arrays = {s: (dt, np.ascontiguousarray(a)) for s, (dt, a) in tensors_.items()}
    if what.startswith("marker:"):
        marker[what.split(":", 1)[1]] = value
    elif what == "weight_as_fp8":
        dt, a = arrays["weight"]
        arrays["weight"] = (
            "F8_E4M3",
            a.view(np.uint8) if a.dtype.itemsize == 1 else a.view(np.uint8).reshape(a.shape[0], -1),
        )
    elif what in ("weight_fp8_nk", "weight_i8_nk"):  # an fp8 / int8 [N, K] under any marker
        fp8 = what == "weight_fp8_nk"
        arrays["weight"] = (
            "F8_E4M3" if fp8 else "I8",
            np.full((N, K), 0x38, np.uint8 if fp8 else np.int8),
        )
    elif what == "weight_1d":
        dt, a = arrays["weight"]
        arrays["weight"] = (dt, a.reshape(-1))
    elif what == "weight_3d":
        dt, a = arrays["weight"]
        arrays["weight"] = (dt, a.reshape(1, *a.shape))
    elif what in ("scale_f16", "scale_shape", "scale_gone"):
        scale = next(s for s in ("weight_scale", "weight_s_rel") if s in arrays)
        dt, a = arrays[scale]
        if what == "scale_gone":
            del arrays[scale]
        elif what == "scale_f16":
            arrays[scale] = (
                "F16",
                a.view(np.uint8).astype(np.float16)
                if a.dtype.itemsize == 1
                else a.astype(np.float16),
            )
        else:
            arrays[scale] = (dt, np.concatenate([a.reshape(-1), a.reshape(-1)[:1]]))
    from quantcheck.numeric.arrays import dtype_name

    def st(dt: str, a: Any) -> RawTensor:
        name = (
            dt
            if dt.isupper()
            else {
                "float32": "F32",
                "float16": "F16",
                "int8": "I8",
                "uint8": "U8",
                "bfloat16": "BF16",
                "float8_e4m3fn": "F8_E4M3",
                "float8_e5m2": "F8_E5M2",
            }[dtype_name(a)]
        )
        return RawTensor("", name, tuple(int(s) for s in a.shape), a.tobytes())

    out = []
    for s, (dt, a) in arrays.items():
        t = st(dt, a)
        out.append(t._replace(name=f"{L}.{s}"))
    out.append(marker_tensor(L, marker))
    q = folder / "q.safetensors"
    write_safetensors(q, out)
    orig = folder / "orig.safetensors"
    w = np.random.default_rng(0).standard_normal((N, K)).astype(np.float32)
    write_safetensors(orig, [RawTensor(f"{L}.weight", "F32", (N, K), w.tobytes())])
    return q, orig


@pytest.mark.parametrize(
    ("fmt", "what", "value"),
    _fuzz_cases(),
    ids=lambda v: json.dumps(v) if not isinstance(v, str) else v,
)
def test_numeric_paths_take_only_layers_the_rules_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, what: str, value: Any
) -> None:
    """dequantize, compare, check --deep and fix --unsafe-fixes on hostile marker values and
    tensors: no traceback, exit 0/1/2, and a layer left alone is named with a reason."""
    q, orig = _write_case(tmp_path, fmt, what, value)
    rc, out, err = run(capsys, "dequantize", str(q), "-o", str(tmp_path / "d.safetensors"))
    assert rc in (0, 1, 2), err
    if rc == 1:
        assert f"left quantized {L}: " in out
    rc, out, err = run(capsys, "compare", str(q), str(orig))
    assert rc in (0, 1, 2), err
    if L not in out.split("\n", 1)[-1] and rc != 2:
        pytest.fail(f"compare neither compared nor named {L}:\n{out}")
    for argv in (
        ["check", "--deep", "--read-weights", str(q)],
        ["fix", "--unsafe-fixes", str(q), "-o", str(tmp_path / "f.safetensors")],
    ):
        rc, out, err = run(capsys, *argv)
        assert rc in (0, 1, 2), (argv, err)


@pytest.mark.parametrize("key", ["group_size", "convrot_groupsize"])
@pytest.mark.parametrize("value", [None, [], "16", 0, -16, True, 2**70])
def test_numeric_api_refuses_bad_marker_options(key: str, value: Any) -> None:
    """The public `dequantize` checks the marker options it reads: NumericError, not a
    TypeError/ZeroDivisionError deep inside a kernel."""
    from quantcheck.numeric import NumericError, dequantize

    tensors_, marker = _valid_layer("asym_w4a8_int8")
    with pytest.raises(NumericError, match=key):
        dequantize("asym_w4a8_int8", tensors_, marker={**marker, key: value})


@pytest.mark.parametrize("shape", [[1], "16", {"a": 1}, [32, "x"], [0, 64], [True, 64]])
def test_numeric_api_refuses_bad_orig_shape(shape: Any) -> None:
    from quantcheck.numeric import NumericError, dequantize

    tensors_, marker = _valid_layer("nvfp4")
    with pytest.raises(NumericError, match="shape"):
        dequantize("nvfp4", tensors_, marker={**marker, "orig_shape": shape})
