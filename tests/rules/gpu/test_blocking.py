"""Load-blocking file-level findings (a runtime's `GpuRules.blocking`, its own data): a failing
finding that names no layer refuses the layers of the formats its runtime declares for it, and
only where its effect on the release is `fails`; other file-level findings refuse nothing."""

from __future__ import annotations

from pathlib import Path

from quantcheck.checking import check_paths
from quantcheck.gpus import expand_specs
from quantcheck.runtimes.sglang_gpu import LOAD_BLOCKING

from .._build import P, file, fp8, mxfp8, nvfp4
from ..sglang.loader_helpers import as_text_encoder
from .test_comfyui_gpu import entries, modes

Q = "blocks.1.attn.qkv"


def test_sglang_declares_the_codes_that_stop_its_load() -> None:
    assert set(LOAD_BLOCKING) == {"QC615", "QC631", "QC632", "QC634", "QC636", "QC637", "QC638"}
    assert all(formats == {"*"} for formats in LOAD_BLOCKING.values())


def test_qc615_refuses_the_layers_where_it_decides(tmp_path: Path) -> None:
    # a text encoder: sglang's text-encoder loader reads the markers, so QC615 decides there
    got = entries(tmp_path, as_text_encoder(mxfp8), "b200", target="sglang@0.5.23")["b200"]
    record = got["execution"][P]
    assert record["mode"] == "refused"
    assert record["reason"].startswith("QC615 fails on sglang@0.5.23")
    assert "file-level, stops the whole load" in record["reason"]
    assert got["formats"] == {"mxfp8": "refused"}


def test_qc615_refuses_nothing_where_the_release_loads_mxfp8(tmp_path: Path) -> None:
    got = modes(tmp_path, as_text_encoder(mxfp8), "b200", target="sglang@0.5.22")
    assert got == {"b200": "native"}


def test_a_load_that_stops_refuses_every_quantized_layer(tmp_path: Path) -> None:
    def make() -> list:
        return [*mxfp8(), *fp8(Q)]

    got = entries(tmp_path, as_text_encoder(make), "b200", target="sglang@0.5.23")["b200"]
    assert got["execution"][P]["mode"] == "refused"
    assert got["execution"][Q]["mode"] == "refused"
    assert "stops the whole load" in got["execution"][Q]["reason"]


def test_the_deciding_loaders_refusal_refuses_the_layers(tmp_path: Path) -> None:
    # no family detected: --transformer-weights-path decides and raises before any weight
    # (QC631), so no GPU runs the MXFP8 layer, and the needs line says why
    key = "sglang@0.5.23"
    paths = [str(p) for p in file(mxfp8)(tmp_path)]
    report = check_paths(paths, target=key, gpus=expand_specs(["b200"]))
    status = report.target_status(key)
    assert status["status"] == "fails"
    record = status["gpu"]["b200"]["execution"][P]
    assert record["mode"] == "refused" and record["reason"].startswith("QC631 fails on")
    assert "QC615" not in record["reason"]  # a note of loaders that do not read this file


def test_one_loader_paths_findings_refuse_nothing(tmp_path: Path) -> None:
    # QC636/QC637 fail one of sglang's loader paths each: the layers stay as the device says
    paths = [str(p) for p in file(nvfp4)(tmp_path)]
    key = "sglang@0.5.23"
    report = check_paths(paths, target=key, gpus=expand_specs(["b200"]))
    failing = {
        d.code for d in report.diagnostics if d.layer is None and d.effect_at(key).value == "fails"
    }
    assert failing & {"QC636", "QC637"}
    assert report.target_status(key)["gpu"]["b200"]["execution"][P]["mode"] == "native"
