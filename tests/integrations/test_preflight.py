"""The pre-load check both plug-ins share, and the version -> release mapping they use."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

import quantcheck
from quantcheck.integrations import preflight as pre
from quantcheck.runtimes.versions import release_for_version, version_tuple

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flux"
BROKEN = str(EXAMPLES / "flux_broken.safetensors")
CLEAN = str(EXAMPLES / "flux_fp8.safetensors")


@pytest.mark.parametrize(
    ("runtime", "version", "target", "how"),
    [
        ("comfyui", "0.33.0", "comfyui@v0.31", "release v0.31"),  # upstream 783545f6
        ("comfyui-cpu", "0.27.3", "comfyui-cpu@v0.27", "release v0.27"),
        ("comfyui", "0.26.0", "comfyui@v0.18", "release v0.18"),  # no int8_tensorwise yet
        ("comfyui", "0.7.0", "comfyui@v0.8", "older than every modelled release"),
        ("comfyui", "0.40.1", "comfyui", "newer than the newest release quantcheck has read"),
        ("sglang", "0.5.23", "sglang", "release 0.5.23"),
        ("sglang", "0.5.20.post1", "sglang@0.5.20", "release 0.5.20"),
        ("sglang", "unknown", "sglang", "unreadable"),
    ],
)
def test_release_for_version(runtime: str, version: str, target: str, how: str) -> None:
    got, note = release_for_version(runtime, version)
    assert got == target and how in note


def test_version_tuple() -> None:
    assert version_tuple("v0.31") == (0, 31)
    assert version_tuple("0.33.0+cu130") == (0, 33, 0)
    assert version_tuple("0.5.20rc1") == (0, 5, 20)
    assert version_tuple("main") is None


def test_blocking_and_warnings_are_sorted_by_effect() -> None:
    pf = pre.preflight([BROKEN], "comfyui-cpu@v0.31")
    assert [d.code for d in pf.blocking] == ["QC301"]
    assert [d.code for d in pf.warnings] == ["QC304"]
    assert not pf.passed and pf.status == "fails"
    text = pre.blocking_error(pf, "ComfyUI 0.33.0")
    assert text.splitlines()[1].startswith("  QC301 companion-missing (single_blocks.0.linear2)")
    assert "QC304" not in text  # it loads (degraded): a warning, not the error
    assert any("QC304" in line for line in pre.warning_lines(pf))
    assert pre.preflight([CLEAN], "comfyui-cpu@v0.31").passed


def test_every_problem_is_in_the_one_error() -> None:
    # a Flux file: sglang reads it with --transformer-weights-path, which refuses its
    # undeclared FP8 (QC631) before any marker is read; that decides check's verdict
    pf = pre.preflight([BROKEN], "sglang")
    assert sorted({d.code for d in pf.blocking}) == ["QC631"]
    assert pf.status == "fails" and not pf.passed
    # the loader that is reading (the marker inspector's caller: the plugin's hook) sees its
    # own problems, three layers' at once (no --comfyui-mode spec finding: its Flux spec
    # loads the file unquantized, QC635, a warning; the MiniMax-H3 spec is not Flux's)
    reading = pre.preflight([BROKEN], "sglang", loader="minimax-h3")
    codes = sorted({d.code for d in reading.blocking})
    assert codes == ["QC301", "QC305", "QC602"]
    text = pre.blocking_error(reading, "sglang 0.5.23")
    for code in codes:
        assert f"  {code} " in text
    assert "      fix: cast F16 -> F32" in text


def test_repeats_over_layers_are_one_entry_naming_the_layers() -> None:
    path = str(EXAMPLES / "flux_nvfp4.safetensors")
    pf = pre.preflight([path], "sglang@0.5.19", loader="minimax-h3")  # 0.5.19's inspector
    lines = pre.blocking_error(pf, "sglang 0.5.19").splitlines()
    entries = [line for line in lines if line.startswith("  QC")]
    assert len(entries) < len(pf.blocking)  # ten layers, one entry
    assert any("and 7 more" in line for line in entries)
    # --transformer-weights-path, which decides, infers NVFP4 and reads no marker
    assert pre.preflight([path], "sglang@0.5.19").passed


def test_a_keyword_the_check_does_not_take_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    real = quantcheck.check

    def check(path: list[str], target: str = "default", deep: bool = False) -> object:
        return real(path, target=target)

    monkeypatch.setattr(quantcheck, "check", check)
    pf = pre.preflight([CLEAN], "comfyui", gpu="sm_89", lora="x.safetensors")
    assert any("gpu 'sm_89' not checked" in n for n in pf.notes)
    assert pre.warning_lines(pf)[-1].startswith("lora 'x.safetensors' not checked")


def test_the_gpu_reaches_the_report() -> None:
    pf = pre.preflight([str(EXAMPLES / "flux_nvfp4.safetensors")], "comfyui", gpu="sm_89")
    assert not any(n.startswith("gpu ") for n in pf.notes)
    (entries,) = pf.report.gpu.values()  # the one target's {G: entry}
    assert entries["sm_89"]["formats"] == {"nvfp4": "emulated"}


def test_gpu_and_lora_are_passed_when_the_check_takes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, object] = {}
    real = quantcheck.check

    def check(
        path: list[str], target: str = "default", deep: bool = False, gpu: str = "", lora: str = ""
    ) -> object:
        seen.update(gpu=gpu, lora=lora)
        return real(path, target=target)

    monkeypatch.setattr(quantcheck, "check", check)
    pf = pre.preflight([CLEAN], "comfyui", gpu="sm_120", lora="l.safetensors")
    assert seen == {"gpu": "sm_120", "lora": "l.safetensors"} and pf.notes == []


def test_untrusted_names_are_escaped(tmp_path: Path) -> None:
    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

    p = "blocks.0\x1b[31m.attn"
    path = tmp_path / "evil.safetensors"
    write_safetensors(
        path,
        [
            RawTensor(f"{p}.weight", "F8_E4M3", (16, 16), bytes(256)),
            marker_tensor(p, {"format": "float8_e4m3fn"}),
        ],
    )
    text = pre.blocking_error(pre.preflight([str(path)], "comfyui"), "ComfyUI")
    assert "QC301" in text and "\x1b" not in text


def test_emulated_formats_are_counted_from_the_markers() -> None:
    nvfp4 = str(EXAMPLES / "flux_nvfp4.safetensors")
    why = {"nvfp4": "supports_nvfp4_compute() is false on cpu", "mxfp8": "x"}
    pf = pre.preflight([nvfp4], "comfyui-cpu", emulated=why)
    assert pf.passed and pf.emulated == {"nvfp4": (10, why["nvfp4"])}
    assert pf.summary() == "flux_nvfp4.safetensors on comfyui-cpu: ok (10 layers emulated: nvfp4)"
    assert pre.warning_lines(pf) == [
        "10 layers in nvfp4 run emulated (supports_nvfp4_compute() is false on cpu): dequantized "
        "on every forward, so no speed-up over 16-bit weights (they stay small in memory)"
    ]
    assert pre.report_text(pf).endswith(pre.warning_lines(pf)[0])
    assert pre.preflight([nvfp4], "comfyui-cpu", emulated={"mxfp8": "x"}).emulated == {}


def test_the_commands_in_the_error_quote_the_path(tmp_path: Path) -> None:
    odd = tmp_path / "my model's copy.safetensors"
    shutil.copyfile(BROKEN, odd)
    text = pre.blocking_error(pre.preflight([str(odd)], "comfyui"), "ComfyUI")
    line = next(x for x in text.splitlines() if x.startswith("full report: "))
    assert shlex.split(line.removeprefix("full report: "))[2] == str(odd)


def test_layers_with_a_finding_are_not_counted_as_emulated() -> None:
    pf = pre.preflight([BROKEN], "comfyui-cpu@v0.31", emulated={"float8_e4m3fn": "no FP8"})
    # of the ten quantized layers the INT8 one is not FP8; the stale marker (QC304: BF16 compute)
    # and the layer without its scale (QC301) do not run as FP8 either
    assert pf.emulated == {"float8_e4m3fn": (7, "no FP8")}
